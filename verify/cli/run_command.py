"""``eowc run`` and ``eowc demo``: what a query must emit over an arrival log, by the
reference interpreter (the default), an executor (in process, on Spark, Spark's own
operators) or a second oracle (DuckDB, Spark SQL), as JSON lines, a table or CSV; late and
rejected rows counted on stderr and written out on request."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from importlib import resources
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from eowc.executors.driver import run_in_process
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.spark import NATIVE_CONVENTION
from eowc.executors.spark.native import check_native, dropped_message, run_native
from eowc.executors.spark.oracle import spark_oracle_eowc
from eowc.executors.spark.session import require_pyspark
from eowc.semantics.engines.interpreter import (
    Change,
    Emission,
    LateRow,
    run_eowc,
    run_update,
    run_update_policy,
    snapshots,
)
from eowc.semantics.errors import EowcError, RunError
from eowc.semantics.frontend.sql import Script, parse_interval_text, parse_script
from eowc.semantics.ir.arrival import (
    ArrivalLog,
    LoadedLog,
    RejectedRow,
    check_window_range,
    load_arrival_log,
    parse_arrival_log,
)
from eowc.semantics.ir.expr import Row, Schema
from eowc.semantics.ir.values import computing_under, json_text, row_sort_key, to_external
from eowc.semantics.operators.update_policy import UpdatePolicy
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import Case
from eowc.verify.cli.main import fail
from eowc.verify.cli.output_paths import OutputFile
from eowc.verify.cli.script_options import (
    CONVENTION_DEFAULT_HELP,
    default_convention,
    dialect_option,
    options_given,
    sort_partitions_option,
    ties_option,
    view_option,
)
from eowc.verify.flink import FlinkNativeExecutor

CONVENTIONS = [c.value for c in Convention]


def _external(row: Row, schema: Schema) -> dict[str, Any]:
    return {c.name: to_external(v, c.type) for c, v in zip(schema, row, strict=True)}


def _late_record(late: LateRow, script: Script) -> dict[str, Any]:
    source = script.sources[late.event.table]
    return {"table": late.event.table, "row": _external(late.event.row, source.columns),
            "epoch": late.epoch, "line": late.event.line,
            "watermark": to_external(late.watermark_before, source.columns[
                source.event_time_index or 0].type) if abs(late.watermark_before) != float("inf")
            else None,
            "reason": "late: event time already complete under the watermark in force"}


def _rejected_record(rejected: RejectedRow) -> dict[str, Any]:
    return {"table": rejected.table, "row": rejected.row, "line": rejected.line,
            "reason": rejected.reason}


def _write(records: list[dict[str, Any]], columns: list[str], fmt: str, title: str) -> None:
    if fmt == "jsonl":
        for record in records:
            click.echo(json_text(record))
        return
    records = [{c: json_text(v) if isinstance(v, list) else v for c, v in record.items()}
               for record in records]  # an ARRAY as its JSON array in a cell
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
        click.echo(buffer.getvalue(), nl=False)
    else:
        table = Table(title=title)
        for name in columns:
            table.add_column(name)
        for record in records:
            table.add_row(*("NULL" if record[c] is None else str(record[c]) for c in columns))
        Console(width=max(100, 16 * len(columns))).print(table)


#: An engine: (script, log, convention, close, late rows to fill) -> emissions in order.
Engine = Callable[[Script, LoadedLog, Convention, bool, list[LateRow]], Iterable[Emission]]
#: Emit on update: (script, log, convention, late rows to fill) -> the changelog.
Changelog = Callable[[Script, LoadedLog, Convention, list[LateRow]], list[Change]]


def reference_engine(script: Script, loaded: LoadedLog, convention: Convention, close: bool,
                     late: list[LateRow], ties: str | None = None) -> Iterable[Emission]:
    """The reference interpreter (eowc.semantics.engines.interpreter); ``ties`` as --ties."""
    return run_eowc(script.query, loaded.log, convention, close, late.append, ties)


def _run(script: Script, loaded: LoadedLog, convention: Convention, mode: str, close: bool,
         fmt: str, with_epoch: bool, snapshot: bool, late_out: str | None,
         rejects_out: str | None, title: str, emissions: Engine = reference_engine,
         changelog: Changelog | None = None) -> None:
    query, log = script.query, loaded.log
    schema = query.schema
    late_rows: list[LateRow] = []
    records: list[dict[str, Any]] = []
    names = [c.name for c in schema]
    if mode == "eowc":
        for emission in emissions(script, loaded, convention, close, late_rows):
            record = _external(emission.row, schema)
            if with_epoch:
                record["_epoch"] = emission.epoch
            records.append(record)
        columns = names + (["_epoch"] if with_epoch else [])
    else:
        changes = changelog(script, loaded, convention, late_rows) if changelog else \
            list(run_update(query, log, convention, late_rows.append))
        if snapshot:
            for epoch, rows in enumerate(snapshots(changes, len(log.epochs))):
                records.extend({**_external(r, schema), "_epoch": epoch}
                               for r in query.in_order(rows))
            columns = names + ["_epoch"]
        else:
            for change in changes:
                record = {**_external(change.row, schema), "_op": change.op}
                if with_epoch:
                    record["_epoch"] = change.epoch
                records.append(record)
            columns = names + ["_op"] + (["_epoch"] if with_epoch else [])
    _write(records, columns, fmt, title)
    if late_out:
        with open(late_out, "w", encoding="utf-8") as handle:
            for late in late_rows:
                handle.write(json_text(_late_record(late, script)) + "\n")
    if rejects_out:
        with open(rejects_out, "w", encoding="utf-8") as handle:
            for rejected in loaded.rejected:
                handle.write(json_text(_rejected_record(rejected)) + "\n")
    late_counts = Counter(late.event.table for late in late_rows)
    if late_counts:
        summary = ", ".join(f"{t}={n}" for t, n in sorted(late_counts.items()))
        where = f" (written to {late_out})" if late_out else " (write them out with --late-out)"
        click.echo(f"late rows excluded from INPUT: {summary}{where}", err=True)
    if loaded.rejected:
        where = f" (written to {rejects_out})" if rejects_out else ""
        click.echo(f"rejected input lines: {len(loaded.rejected)}{where}", err=True)


def _run_policy(script: Script, loaded: LoadedLog, convention: Convention,
                early_every: int | None, allowed_lateness: str | None, close: bool, fmt: str,
                with_epoch: bool, late_out: str | None, title: str, ties: str | None = None
                ) -> None:
    """``eowc run --early-every K --allowed-lateness L``: the window aggregate's changelog
    under that update policy (:mod:`eowc.semantics.operators.update_policy`), each change with its ``_op``
    and ``_firing`` (early, on_time, late); rows later than the lateness are reported."""
    lateness = parse_interval_text(allowed_lateness) if allowed_lateness is not None else 0
    policy = UpdatePolicy(early_every, lateness)
    schema = script.query.schema
    dropped: list[LateRow] = []
    records = []
    for firing in run_update_policy(script.query, loaded.log, policy, convention, close,
                                    dropped.append, ties):
        record = {**_external(firing.row, schema), "_op": firing.op, "_firing": firing.kind}
        if with_epoch:
            record["_epoch"] = firing.epoch
        records.append(record)
    columns = [c.name for c in schema] + ["_op", "_firing"] + (["_epoch"] if with_epoch else [])
    _write(records, columns, fmt, title)
    if late_out:
        with open(late_out, "w", encoding="utf-8") as handle:
            for late in dropped:
                record = _late_record(late, script)
                record["reason"] = "later than the allowed lateness: every window of the row " \
                                   "had closed that long ago"
                handle.write(json_text(record) + "\n")
    counts = Counter(late.event.table for late in dropped)
    if counts:
        summary = ", ".join(f"{t}={n}" for t, n in sorted(counts.items()))
        where = f" (written to {late_out})" if late_out else " (write them out with --late-out)"
        click.echo(f"rows dropped, later than the allowed lateness: {summary}{where}", err=True)


@click.command()
@click.argument("query_file", required=False, type=click.Path(dir_okay=False))
@click.argument("events_file", required=False, type=click.Path(dir_okay=False))
@click.option("--convention", type=click.Choice(CONVENTIONS), default=None,
              help="Whose boundary rule decides late rows and closed windows "
                   f"{CONVENTION_DEFAULT_HELP}.")
@click.option("--mode", type=click.Choice(["eowc", "update"]), default=None,
              help="eowc: Q'(INPUT, W), append-only; update: Q(INPUT) as a changelog. "
                   "Default: eowc if the query ends with EMIT ON WINDOW CLOSE.")
@click.option("--close", is_flag=True, help="Advance the watermark to +infinity after the "
              "last epoch (end of a bounded input); those rows get epoch = number of epochs.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "table", "csv"]), default="jsonl",
              show_default=True)
@click.option("--with-epoch", is_flag=True, help="Add _epoch: the epoch of first emission.")
@click.option("--snapshot", is_flag=True, help="update mode: print Q(INPUT) after every epoch (in the "
              "query's ORDER BY order).")
@click.option("--late-out", type=OutputFile(), help="Write late rows here (JSONL).")
@click.option("--keep-going", is_flag=True, help="Reject bad input lines (counted, see "
              "--rejects-out) instead of stopping at the first one.")
@click.option("--rejects-out", type=OutputFile(),
              help="With --keep-going: write rejected lines here (JSONL) with their reason.")
@click.option("--engine", type=click.Choice(["reference", "in-process", "spark", "spark-native",
                                           "flink-native"]),
              default="reference", show_default=True,
              help="reference: the interpreter; in-process: the EOWC executors on the in-process "
                   "micro-batch driver; spark: the executors on Apache Spark; spark-native: "
                   "Spark's own operators (judges Spark itself); flink-native: Flink's own "
                   "operators, on a query in Flink SQL (PyFlink here, or the newest Flink "
                   "environment of `eowc engine env flink RELEASE`).")
@click.option("--oracle", type=click.Choice(["duckdb", "spark"]), default=None,
              help="Answer with a second oracle instead (seed 001, Definition 5): a batch "
                   "SELECT on INPUT with the final watermark substituted, run by DuckDB, or "
                   "by Spark (on --master) for large logs. It gives the output after the last "
                   "epoch (or the end, with --close), without emission epochs.")
@click.option("--early-every", type=click.IntRange(min=1), default=None,
              help="Update policy (seed 003): fire each open window's result every K epochs "
                   "(_firing early, speculative). Prints a changelog (_op, _firing).")
@click.option("--allowed-lateness", default=None, metavar="INTERVAL",
              help="Update policy (seed 003): keep a closed window for this much more watermark "
                   "(e.g. '5 seconds') and re-fire it for rows that arrive in it (_firing "
                   "late); only later rows are dropped. Prints a changelog (_op, _firing).")
@click.option("--master", default="local[2]", show_default=True,
              help="--engine spark/spark-native: the Spark master URL.")
@click.option("--workdir", type=click.Path(file_okay=False),
              help="--engine spark/spark-native: where the checkpoint and the sink's files go "
                   "(default: a new temporary directory).")
@view_option
@ties_option
@dialect_option
@sort_partitions_option
def run(query_file: str | None, events_file: str | None, convention: str | None, mode: str | None,
        close: bool, fmt: str, with_epoch: bool, snapshot: bool, late_out: str | None,
        keep_going: bool, rejects_out: str | None, engine: str, oracle: str | None,
        early_every: int | None, allowed_lateness: str | None, master: str,
        workdir: str | None, view: str | None, dialect: str, ties: str | None = None,
        sort_partitions: int | None = None) -> None:
    """Emitted rows of QUERY_FILE over the arrival log EVENTS_FILE, in emission order.

    With no arguments, runs the built-in example (same as `eowc demo`).
    """
    if query_file is None and events_file is None:
        _demo(convention or "risingwave", fmt if fmt != "jsonl" else "table")
        return
    if query_file is None or events_file is None:
        fail(click.UsageError("give both QUERY_FILE and EVENTS_FILE, or neither for the demo"))
    if sort_partitions is not None and engine not in ("in-process", "spark"):
        fail(click.UsageError(f"--sort-partitions partitions the executors' EOWC sort: it takes "
                              f"--engine in-process or spark, not {engine}"))
    if view is not None and engine in ("spark", "spark-native", "flink-native"):
        fail(click.UsageError(f"--engine {engine} runs the script's last statement (the "
                              f"engine reads the query file itself): --view takes --engine "
                              f"reference or in-process"))
    try:
        with open(query_file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        fail(EowcError(f"{query_file}: cannot read the file: {error.strerror}"))
    except UnicodeDecodeError as error:
        line = error.object.count(b"\n", 0, error.start) + 1
        column = error.start - (error.object.rfind(b"\n", 0, error.start) + 1) + 1
        fail(EowcError(f"{query_file}: not UTF-8 text (byte {error.object[error.start]:#04x} "
                       f"at line {line}, column {column})"))
    convention = convention or default_convention(text, dialect)
    try:
        script = parse_script(text, view, dialect)
        with computing_under(Convention(convention).values):  # computed columns by its value rules
            loaded = load_arrival_log(events_file, script.sources, keep_going)
        check_window_range(script.query.plan, loaded.log, events_file)
        if not loaded.log.events and not loaded.rejected:
            click.echo(f"eowc: warning: the events file {events_file} has no events: the query "
                       f"runs over no input", err=True)
        chosen = mode or ("eowc" if script.query.emit_on_window_close else "update")
        if early_every is not None or allowed_lateness is not None:
            if mode is not None or snapshot or engine != "reference" or oracle:
                fail(click.UsageError("--early-every and --allowed-lateness choose an update "
                                      "policy: they take no --mode, --snapshot, --engine or "
                                      "--oracle"))
            _run_policy(script, loaded, Convention(convention), early_every,
                        allowed_lateness, close, fmt, with_epoch, late_out, query_file, ties)
            return
        if snapshot and chosen != "update":
            fail(click.UsageError("--snapshot shows Q(INPUT) after every epoch: it needs "
                                  "--mode update"))
        if close and chosen != "eowc":
            fail(click.UsageError("--close advances the watermark, which only EOWC output "
                                  "depends on: it needs --mode eowc"))
        if ties == "row-id" and (oracle == "spark" or engine not in ("reference", "in-process")):
            fail(click.UsageError(f"--ties row-id is supported by --engine reference and "
                                  f"in-process and by --oracle duckdb: "
                                  f"{'--oracle spark' if oracle == 'spark' else '--engine ' + engine}"
                                  f" breaks ties in the deterministic order only (it is not given "
                                  f"the rows' arrival positions)"))
        if oracle and (chosen != "eowc" or with_epoch or engine != "reference"):
            fail(click.UsageError(f"--oracle {oracle} answers Q'(INPUT, W) for the final "
                                  "watermark: it needs --mode eowc, and has no --with-epoch or "
                                  "--engine"))
        _run(script, loaded, Convention(convention), chosen, close, fmt, with_epoch, snapshot,
             late_out, rejects_out, query_file,
             partial(_oracle_engine, oracle, master, ties) if oracle else
             _engine(engine, query_file, events_file, master, workdir, ties,
                     options_given(sort_partitions), text),
             _changelog(engine, query_file, events_file, master, workdir, ties)
             if chosen == "update" else None)
    except RunError as error:  # names what it is about (Java, the work directory)
        fail(error)
    except EowcError as error:
        fail(EowcError(f"{query_file}: {error}") if not str(error).startswith(events_file)
             else error)
    except ValueError as error:  # a value that fails at evaluation time (e.g. a bad CAST)
        fail(EowcError(f"{error} (the query {query_file} over {events_file})"))
    except OverflowError as error:  # a time beyond the years 1-9999 that no check foresaw
        fail(EowcError(f"{query_file}: a time outside 0001-01-01 00:00:00 .. 9999-12-31 "
                       f"23:59:59.999999 (the TIMESTAMP range) arose in the query over "
                       f"{events_file} ({error})"))


def _engine(name: str, query_file: str, events_file: str, master: str,
            workdir: str | None, ties: str | None = None,
            options: ExecutorOptions = DEFAULT_OPTIONS, text: str = "") -> Engine:
    """The engine called ``name`` (``text``: the query file's SQL); the executors are imported
    only when asked for."""
    if name == "reference":
        return partial(reference_engine, ties=ties)
    if name == "spark-native":
        return _native_engine(query_file, events_file, master, workdir)
    if name == "flink-native":
        return partial(_flink_native_engine, text)
    run = _executor_run(name, query_file, events_file, master, workdir, ties, options)

    def executor(script: Script, loaded: LoadedLog, convention: Convention, close: bool,
                 late: list[LateRow]) -> Iterable[Emission]:
        done = run(script, loaded, convention, close)
        late.extend(done.late)
        return done.emissions
    return executor


def _changelog(name: str, query_file: str, events_file: str, master: str,
               workdir: str | None, ties: str | None = None) -> Changelog:
    """Emit on update by the engine called ``name``: the reference's ``run_update``, or the
    executors' changelog (seed 002's general OverWindow)."""
    if name == "reference":
        return lambda script, loaded, convention, late: list(
            run_update(script.query, loaded.log, convention, late.append, ties))
    if name in ("spark-native", "flink-native"):
        raise click.UsageError(f"--engine {name} runs EOWC queries only")
    run = _executor_run(name, query_file, events_file, master, workdir, ties)

    def executor(script: Script, loaded: LoadedLog, convention: Convention,
                 late: list[LateRow]) -> list[Change]:
        if script.query.emit_on_window_close:
            raise click.UsageError(f"--engine {name} runs emit on update for a query without "
                                   "EMIT ON WINDOW CLOSE (the executor follows the query's "
                                   "EMIT clause); remove it, or leave out --mode update")
        done = run(script, loaded, convention, False)
        late.extend(done.late)
        return done.changes
    return executor


def _executor_run(name: str, query_file: str, events_file: str, master: str,
                  workdir: str | None, ties: str | None = None,
                  options: ExecutorOptions = DEFAULT_OPTIONS
                  ) -> Callable[[Script, LoadedLog, Convention, bool], Any]:
    """A run of the executors with ``options``, in process or on Spark (a DriverRun)."""
    if name == "in-process":
        return lambda script, loaded, convention, close: run_in_process(
            script.query, loaded.log, convention, close, ties=ties, options=options,
            log_path=events_file)
    from eowc.executors.spark.runner import run_on_spark

    return lambda script, loaded, convention, close: run_on_spark(
        query_file, events_file, loaded.log, convention, close, master, workdir, options)


def _oracle_engine(oracle: str, master: str, ties: str | None, script: Script, loaded: LoadedLog,
                   convention: Convention, close: bool, late: list[LateRow]) -> Iterable[Emission]:
    """The second oracle (eowc.semantics.oracles.duckdb_oracle on DuckDB, eowc.executors.spark.oracle on
       Spark): the
    final output, sorted, as one batch."""
    log = loaded.log
    if oracle == "spark":
        result = spark_oracle_eowc(script.query, log, convention, close, late, master)
    else:
        result = oracle_eowc(script.query, log, convention, close, late, ties)
    epoch = len(log.epochs) if close else len(log.epochs) - 1
    return [Emission(epoch, row) for row in sorted(result.elements(), key=row_sort_key)]


def _native_engine(query_file: str, events_file: str, master: str, workdir: str | None
                   ) -> Engine:
    """Spark's own operators (eowc.executors.spark.native). Spark names no late row, so ``late``
    stays empty and the count Spark reports is printed on stderr instead."""
    require_pyspark()  # the spark extra, named before any note if it is missing

    def native(script: Script, loaded: LoadedLog, convention: Convention, close: bool,
               late: list[LateRow]) -> Iterable[Emission]:
        check_native(script.query)  # refuse before any note
        if convention is not NATIVE_CONVENTION:
            click.echo(f"note: Spark's native operators follow the {NATIVE_CONVENTION.value} "
                       f"convention, not {convention.value}", err=True)
        done = run_native(query_file, events_file, close, master, workdir)
        click.echo(dropped_message(done), err=True)
        return done.emissions
    return native


def _flink_native_engine(text: str, script: Script, loaded: LoadedLog, convention: Convention,
                         close: bool, late: list[LateRow]) -> Iterable[Emission]:
    """Flink's own operators (:class:`~eowc.verify.flink.FlinkNativeExecutor`) on the SQL as
    the user wrote it, each epoch fed as Flink's sources' next rows; an output row is
    attributed to the epoch after which Flink emitted it. Flink names no late row, so ``late``
    stays empty."""
    if close:
        raise click.UsageError("--engine flink-native feeds Flink's sources as unbounded "
                               "streams, whose watermark never reaches the end: run it "
                               "without --close")
    executor = FlinkNativeExecutor()
    if convention is not executor.convention:
        click.echo(f"note: Flink's own operators follow the {executor.convention.value} "
                   f"convention, not {convention.value}", err=True)
    return executor.emissions(Case(text, executor.convention, loaded.log))


def _demo(convention: str, fmt: str) -> None:
    examples = resources.files("eowc.semantics") / "examples"
    script = parse_script((examples / "bids.sql").read_text(encoding="utf-8"))
    lines = (examples / "bids.jsonl").read_text(encoding="utf-8").splitlines()
    loaded = parse_arrival_log(lines, script.sources, "bids.jsonl")
    click.echo((examples / "bids.sql").read_text(encoding="utf-8"))
    _describe_log(loaded.log)
    _run(script, loaded, Convention(convention), "eowc", False, fmt, True, False, None, None,
         f"EOWC output under the {convention} convention (_epoch: epoch of first emission)")


def _describe_log(log: ArrivalLog) -> None:
    click.echo(f"-- arrival log: {len(log.epochs)} epochs, {len(log.events)} rows "
               f"(built-in example semantics/examples/bids.jsonl)\n")


@click.command()
@click.option("--convention", type=click.Choice(CONVENTIONS), default="risingwave",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "table", "csv"]), default="table",
              show_default=True)
def demo(convention: str = "risingwave", fmt: str = "table") -> None:
    """Run the built-in example of seed 004 (Flink's Bid table) and print the result."""
    _demo(convention, fmt)

