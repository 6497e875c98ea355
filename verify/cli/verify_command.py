"""``eowc verify``: prove with evidence that an executor is append-only, exact and timely,
ordered, deterministic and consistent after recovery on EOWC queries, or hand back the
smallest case that shows it is not (a transcript ``eowc replay`` runs again).

Exit codes: 0 every property held and every target was exercised; 1 a property failed; 2 bad
usage or input (an unreadable or invalid query, a query the executor cannot run, Spark that
cannot start, an engine of your own that cannot be loaded or breaks the protocol of
:mod:`eowc.verify.external`); 3 a vacuous verification (a target whose cases mostly expect no
output: an executor that emits nothing would pass it); 4 incomplete (every property checked
held, but a built-in target the executor cannot run was left out, or a property was not
checked: ``--no-disruptions``, recovery). With ``--mutants`` (:mod:`eowc.verify.mutation`): 0 every
applicable mutant killed; 1 one survived (or the correct executor failed a killing case).
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from eowc.executors.choice import processor_for
from eowc.executors.spark.native import check_native
from eowc.semantics.engines.interpreter import check_runs_under_eowc
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.dialects import dialect_comment
from eowc.semantics.frontend.sql import parse_interval_text, parse_script
from eowc.semantics.ir.values import json_text
from eowc.semantics.rules.emit_modes import not_final_in_spark
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import QueryRefused, bound_convention
from eowc.verify.cli.output_paths import OutputFile
from eowc.verify.cli.script_options import (
    dialect_option,
    options_given,
    sort_partitions_option,
    ties_option,
    view_option,
)
from eowc.verify.executors import EXECUTORS, PYTHON_PREFIX, Executor, InProcessExecutor, chosen_executor
from eowc.verify.external import ExecutorFailed, ExternalExecutor
from eowc.verify.generators import CannotGenerate, check_generable
from eowc.verify.mutation import mutation_command
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.spark import SparkExecutor
from eowc.verify.suite import PROPERTIES, Found, Report, Target, builtin_targets, load_target, run_suite
from eowc.verify.transcripts import transcript_of, write_transcript

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h`` in seconds; a click error otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise click.BadParameter(f"expected a duration such as 90s, 5m or 1h, got {text!r}")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


#: ``--executor``'s help, shared by ``eowc verify`` and ``eowc replay``.
EXECUTOR_HELP = ("What runs the queries: inprocess (the EOWC executors in-process), spark, "
                 "spark-native (Spark's own operators), flink-native (Flink's own operators: in "
                 "process where PyFlink is installed, else the environment of eowc engine env "
                 "flink), reference (the interpreter itself), or "
                 "python:MODULE:ATTR, your own engine in Python (docs/verification.md, \"Verify "
                 "your own executor\").  [default: inprocess]")
EXECUTOR_CMD_HELP = ("Your own engine as a program in any language, speaking eowc's line "
                     "protocol on stdin and stdout (docs/verification.md); run by /bin/sh.")


def executor_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--executor``, ``--executor-cmd`` and ``--epoch-timeout``, as ``eowc verify`` and
    ``eowc replay`` take them (:func:`load_executor` makes the executor of them)."""
    options = [
        click.option("--executor", "executor_name", metavar="NAME", default=None,
                     callback=executor_name, help=EXECUTOR_HELP),
        click.option("--executor-cmd", "executor_cmd", metavar="COMMAND", default=None,
                     help=EXECUTOR_CMD_HELP),
        click.option("--epoch-timeout", metavar="DURATION", default=None, help="--executor-cmd: how long the "
                     "program may take over one epoch (90s, 5m) [default: 60s]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def executor_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check ``--executor``: a known executor or ``python:MODULE:ATTR``."""
    if value is None or value in EXECUTORS or value.startswith(PYTHON_PREFIX):
        return value
    raise click.BadParameter(f"{value!r} is not an executor: expected one of "
                             f"{', '.join(EXECUTORS)}, or python:MODULE:ATTR for your own engine in "
                             "Python (for a program in another language: --executor-cmd 'COMMAND')")


def load_executor(name: str | None, command: str | None, master: str,
                  epoch_timeout: str | None, command_name: str) -> Executor:
    """The executor of the options, or exit 2 with ``command_name`` and what is wrong (two
    executors named, a Python module or attribute that cannot be loaded)."""
    timeout = parse_duration(epoch_timeout) if epoch_timeout else None
    if timeout is not None and command is None:
        raise click.UsageError("--epoch-timeout applies to --executor-cmd only")
    try:
        return chosen_executor(name, command, master, timeout)
    except (ImportError, EowcError, ValueError) as error:
        named = name if command is None else f"--executor-cmd {command!r}"
        click.echo(f"eowc {command_name}: error: cannot load the executor {named}: {error}",
                   err=True)
        sys.exit(2)


def _usage_error(message: str) -> None:
    click.echo(f"eowc verify: error: {message}", err=True)
    sys.exit(2)


def _viewed(target: Target, view: str) -> Target:
    """``target`` running its view ``view`` under EMIT ON WINDOW CLOSE: its script with a last
    statement that reads the view (a script runs its last statement), so that every executor
    and transcript gets the view as the script's query."""
    try:
        parse_script(target.script, view)
    except EowcError as error:
        _usage_error(f"{target.path}: {error}")
    script = f"{target.script.rstrip().removesuffix(';')};\n-- eowc verify --view {view}\n" \
             f"CREATE VIEW eowc_verified_view AS SELECT * FROM {view} EMIT ON WINDOW CLOSE;\n"
    return replace(target, name=f"{target.name}.{view}", script=script)


def _read_in(target: Target, dialect: str) -> Target:
    """``target`` read in ``dialect`` (--dialect; a usage error unless its script reads in
    it): its script ends with the comment that names its dialect, which every executor and
    check reading it then follows."""
    try:
        parse_script(target.script, dialect=dialect)
    except EowcError as error:
        _usage_error(f"{target.path}: {error}")
    return replace(target, script=f"{target.script.rstrip()}\n{dialect_comment(dialect)}\n")


def _runnable(targets: list[Target], executor: Executor, named: bool
              ) -> tuple[list[Target], dict[str, str]]:
    """The targets ``executor`` can run, and why each other one is left out. A query the
    user named that it cannot run is a usage error."""
    kept, skipped = [], {}
    for target in targets:
        query = parse_script(target.script).query
        try:
            for source in query.sources:
                check_generable(source)
            if executor.name == "reference" or isinstance(executor, ExternalExecutor):
                # it runs whatever the interpreter runs (or is checked against it)
                check_runs_under_eowc(query, Convention.SPARK)
            else:
                processor_for(query, Convention.SPARK)
            if executor.name == "spark-native":
                check_native(query)
                if (at_once := not_final_in_spark(query.plan)) is not None:
                    raise QueryRefused(at_once)
        except CannotGenerate as error:
            if named:
                _usage_error(f"{target.path}: {error}")
            skipped[target.name] = str(error)
            continue
        except EowcError as error:
            if named:
                _usage_error(f"{target.path}: {executor.name} cannot run this query: {error}")
            skipped[target.name] = str(error)
            continue
        kept.append(target)
    return kept, skipped


def _counterexample_writer(out: Path, executor: Executor, seed: int):  # noqa: ANN202
    """Write each shrunk counterexample as a transcript in ``out``; return their paths."""
    def write(found: Found) -> list[str]:
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for violation in found.shrunk:
            case = violation.case
            assert case is not None
            slug = violation.prop.replace(" ", "-")
            name = f"{found.target.name}-{case.convention.value}-{slug}-seed{seed}"
            path = out / f"{name}.yaml"
            ran_by = violation.executor or executor.name
            option = executor.name if executor.name.startswith("--executor-cmd") \
                else f"--executor {executor.name}"
            description = (f"Found by `eowc verify {option} --seed {seed}` "
                           f"on {found.target.path or found.target.name}, shrunk from "
                           f"{len(found.case.log.events)} to {len(case.log.events)} events; "
                           f"the run of {ran_by}, {case.disruption()}: {violation}")
            write_transcript(str(path), transcript_of(case, name, description))
            paths.append(str(path))
        return paths
    return write


def _table(report: Report) -> Table:
    table = Table(title=f"eowc verify: {report.executor}, seed {report.seed}, "
                        f"{report.cases} cases in {report.seconds:.1f} s{_ties_words(report)}"
                        + (" (time budget reached)" if report.out_of_time else ""))
    for column in ("query", "property", "tried", "passed", "failed", "counterexample"):
        table.add_column(column, justify="right" if column in ("tried", "passed", "failed")
                         else "left")
    for target, tallies in report.tallies.items():
        for prop in PROPERTIES:
            tally = tallies[prop]
            if not tally.tried:
                continue
            checked = [f"checked {report.ordered[target]}"] \
                if prop == "ordered" and target in report.ordered else []
            table.add_row(target, prop, str(tally.tried), str(tally.passed),
                          f"[red]{tally.failed}[/red]" if tally.failed else "0",
                          "\n".join([*tally.counterexamples, *checked]))
        for prop, why in report.not_checked.items():
            table.add_row(target, prop, "", "", "", f"[yellow]not checked[/yellow]: {why}")
    for target, why in report.skipped.items():
        table.add_row(target, "(skipped)", "", "", "", why)
    return table


def _coverage_table(report: Report) -> Table:
    """What the cases of each target exercised; a vacuous target in red."""
    table = Table(title="what the cases exercised")
    columns = ("query", "cases", "with output", "expected rows", "at a boundary", "late rows",
               "ties", "restarts", "crashes")
    for column in columns:
        table.add_column(column, justify="left" if column == "query" else "right")
    for target, c in report.coverage.items():
        if not c.cases:
            continue
        with_output = f"{c.with_output} ({c.with_output / c.cases:.0%})"
        table.add_row(target, str(c.cases), f"[red]{with_output} VACUOUS[/red]" if c.vacuous
                      else with_output, str(c.expected_rows), str(c.at_boundary), str(c.late_rows),
                      str(c.ties), str(c.restarts), str(c.crashes))
    return table


def report_json(report: Report) -> dict:
    """The report as JSON: per query and property, the counts and counterexamples."""
    return {"executor": report.executor, "seed": report.seed,
            "conventions": report.conventions, "ties": report.ties, "cases": report.cases,
            "seconds": round(report.seconds, 3), "out_of_time": report.out_of_time,
            "ok": report.ok, "exit_code": report.exit_code, "vacuous": report.vacuous,
            "skipped": report.skipped, "not_checked": report.not_checked,
            "exercised": report.exercised,
            "ordered": {target: {"rows": e.rows, "partitions": len(e.partitions),
                                 "compared": e.compared}
                        for target, e in report.ordered.items()},
            "coverage": {target: c.as_dict() for target, c in report.coverage.items()},
            "results": [{"query": target, "property": prop, "tried": t.tried,
                         "passed": t.passed, "failed": t.failed,
                         "first_failure": t.first_failure,
                         "counterexamples": t.counterexamples}
                        for target, tallies in report.tallies.items()
                        for prop, t in tallies.items() if t.tried]}


def report_junit(report: Report) -> ET.ElementTree:
    """The report as JUnit XML: a test suite per query, a test case per property."""
    suites = ET.Element("testsuites", name="eowc verify", time=f"{report.seconds:.3f}",
                        ties=report.ties)
    for target, tallies in report.tallies.items():
        tried = {p: t for p, t in tallies.items() if t.tried}
        coverage = report.coverage.get(target)
        vacuous = coverage is not None and coverage.vacuous
        suite = ET.SubElement(suites, "testsuite", name=target, tests=str(len(tried) + 1),
                              failures=str(sum(1 for t in tried.values() if t.failed) + vacuous))
        if coverage is not None:
            properties = ET.SubElement(suite, "properties")
            for key, value in coverage.as_dict().items():
                ET.SubElement(properties, "property", name=key, value=str(value))
            exercised = ET.SubElement(suite, "testcase", classname=f"eowc.{target}",
                                      name="cases expect output")
            ET.SubElement(exercised, "system-out").text = (
                f"{coverage.with_output} of {coverage.cases} cases expect output")
            if vacuous:
                ET.SubElement(exercised, "failure", message="vacuous verification").text = \
                    coverage.advice(target)
        for prop, tally in tried.items():
            case = ET.SubElement(suite, "testcase", classname=f"eowc.{target}", name=prop)
            ET.SubElement(case, "system-out").text = (
                f"{tally.tried} cases, {tally.passed} passed, {tally.failed} failed")
            if tally.failed:
                failure = ET.SubElement(case, "failure", message=tally.first_failure or "")
                failure.text = "counterexamples: " + ", ".join(tally.counterexamples)
        for prop, why in report.not_checked.items():
            ET.SubElement(ET.SubElement(suite, "testcase", classname=f"eowc.{target}", name=prop),
                          "skipped", message=f"not checked: {why}")
    for target, why in report.skipped.items():
        suite = ET.SubElement(suites, "testsuite", name=target, tests="1", skipped="1")
        ET.SubElement(ET.SubElement(suite, "testcase", classname=f"eowc.{target}",
                                    name="all properties"), "skipped", message=why)
    return ET.ElementTree(suites)


@click.command()
@click.argument("queries", nargs=-1, type=click.Path(dir_okay=False))
@executor_options
@click.option("--no-disruptions", is_flag=True, help="No case restarts or crashes (an engine "
              "that cannot recover): the report says recovery was not checked (exit 4, incomplete).")
@click.option("--convention", type=click.Choice([*(c.value for c in Convention), "all"]),
              default="all", show_default=True,
              help="Boundary rule of the cases (all: they take turns; spark-native: spark).")
@click.option("--cases", type=click.IntRange(min=1), default=None,
              help="Cases per query [default: 60 in-process, 1 on Spark].")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Case i uses seed S + i: the same seed gives the same cases.")
@click.option("--rows", type=click.IntRange(min=1), default=None,
              help="Rows per generated arrival log [default: from the query, at least 20].")
@click.option("--span", default=None, metavar="DURATION",
              help="Event time a log spans, e.g. '40 minutes' [default: 4 times the query's "
                   "longest window, gap or bound, plus its watermark delay].")
@click.option("--keys", type=click.IntRange(min=1), default=None,
              help="Distinct values of each non-time column [default: 3].")
@click.option("--null-rate", type=click.FloatRange(0, 1), default=None,
              help="Chance of NULL in a column other than the event time [default: 0.1].")
@click.option("--late", type=click.IntRange(min=0), default=None,
              help="At most this many rows moved past the watermark, and as many on it "
                   "[default: 2].")
@click.option("--epochs", type=click.IntRange(min=1), default=None,
              help="Epochs per log [default: a barrier after about every third row].")
@click.option("--sub-millisecond", is_flag=True, help="Nudge rows a microsecond off boundaries "
              "even for an executor that keeps milliseconds (the in-process and Spark "
              "executors keep Spark's millisecond watermark).")
@click.option("--crash", is_flag=True, help="Every case crashes once (on Spark a real "
              "SIGKILL at a point of a batch) instead of restarting once.")
@click.option("--time-budget", type=str, default=None,
              help="Stop starting cases after this long (90s, 5m, 1h).")
@click.option("--report", "report_path", type=OutputFile(),
              help="Write the results as JSON here.")
@click.option("--junit", "junit_path", type=OutputFile(),
              help="Write the results as JUnit XML here.")
@click.option("--out", type=click.Path(file_okay=False), default="eowc-counterexamples",
              show_default=True, help="Where counterexample transcripts are written.")
@click.option("--master", default="local[2]", show_default=True,
              help="--executor spark/spark-native: the Spark master URL.")
@click.option("--mutants", is_flag=True, help="Score the checks instead: run the same cases "
              "against every mutant of the in-process executors (eowc.verify.mutants) and report "
              "which were killed, by which property, after how many cases.")
@view_option
@ties_option
@dialect_option
@sort_partitions_option
def verify(queries: tuple[str, ...], executor_name: str | None, executor_cmd: str | None,
           epoch_timeout: str | None, no_disruptions: bool, convention: str, cases: int | None,
           seed: int, rows: int | None, span: str | None, keys: int | None,
           null_rate: float | None, late: int | None, epochs: int | None,
           sub_millisecond: bool, crash: bool, time_budget: str | None,
           report_path: str | None, junit_path: str | None, out: str, master: str,
           mutants: bool, view: str | None, dialect: str, ties: str | None = None,
           sort_partitions: int | None = None) -> None:
    """Verify an EOWC executor on QUERIES (SQL files), or on the built-in suite (one query
    per operator) when none is given."""
    budget = parse_duration(time_budget) if time_budget else None
    try:
        targets = [load_target(path) for path in queries] or builtin_targets()
    except EowcError as error:
        _usage_error(str(error))
        return
    if dialect != "auto":
        targets = [_read_in(target, dialect) for target in targets]
    if view is not None:
        if len(queries) != 1:
            _usage_error("--view names a view of one query file: give exactly one QUERIES file")
        targets = [_viewed(targets[0], view)]
    if no_disruptions and crash:
        _usage_error("--crash and --no-disruptions contradict each other: give one")
    settings = GeneratorSettings(rows=rows, span=_span(span), keys=keys, null_rate=null_rate,
                                 late=late, epochs=epochs, unit=1 if sub_millisecond else None)
    if mutants:
        if executor_name not in (None, "inprocess") or executor_cmd is not None:
            _usage_error("--mutants breaks the in-process executors: leave out --executor")
        targets, skipped = _runnable(targets, InProcessExecutor(), named=bool(queries))
        chosen = list(Convention) if convention == "all" else [Convention(convention)]
        sys.exit(mutation_command(targets, skipped, chosen, cases or 60, seed, crash, settings,
                                  budget, report_path, junit_path, disrupt=not no_disruptions,
                                  ties=ties))
    executor = load_executor(executor_name, executor_cmd, master, epoch_timeout, "verify")
    if sort_partitions is not None:
        if not isinstance(executor, InProcessExecutor | SparkExecutor):
            _usage_error(f"--sort-partitions partitions the EOWC sort of the executors (in process "
                         f"or on Spark): leave it out for --executor {executor.name}")
        executor.options = options_given(sort_partitions)
    executor_name = executor.name
    ties = ties or getattr(executor, "ties", None)  # an engine's own order of ties (flink-native)
    targets, skipped = _runnable(targets, executor, named=bool(queries))
    on_spark = executor_name.startswith("spark")
    if on_spark and ties == "row-id":
        _usage_error(f"--executor {executor_name} breaks ties in the deterministic order only "
                     f"(its operators are not given the rows' arrival positions): --ties row-id "
                     f"verifies --executor inprocess, reference, or your own engine")
    bound = bound_convention(executor)
    chosen = ([bound] if bound else list(Convention)) if convention == "all" else [Convention(convention)]
    if bound is not None and chosen != [bound]:
        _usage_error(f"{executor_name} runs an engine's own operators, which follow the {bound.value} "
                     f"convention only: use --convention {bound.value}")
    if executor_name == "spark-native" and crash:
        _usage_error("spark-native cannot be crashed (the crash runner runs the eowc executors): "
                     "leave out --crash (its cases restart instead), or use --executor spark")
    count = cases or (1 if on_spark else 60)
    console = Console(stderr=True)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=True)
    with progress:
        task = progress.add_task("verifying", total=count * len(targets))

        current = {"case": ""}

        def on_case(target: Target, i: int) -> None:
            current["case"] = f"{target.name}, case {i + 1} (seed {seed + i})"
            progress.update(task, description=f"{target.name} case {i + 1}/{count}")
            progress.advance(task)

        try:
            report = run_suite(targets, executor, chosen, count, seed, crash, settings, budget, on_case,
                               _counterexample_writer(Path(out), executor, seed),
                               shrink_budget_s=300.0 if on_spark else 30.0,
                               disrupt=not no_disruptions, ties=ties)
        except ExecutorFailed as error:  # your engine broke the protocol: it could not be verified
            _usage_error(f"{current['case']}: {error}")
            return
        except EowcError as error:  # Spark cannot start, a checkpoint is unusable
            _usage_error(str(error))
            return
    report.skipped.update(skipped)
    if isinstance(executor, ExternalExecutor):
        report.exercised = {"restarts": executor.exercised["restart"],
                            "crashes": executor.exercised["crash"]}
    Console(width=140).print(_table(report))
    Console(width=140).print(_coverage_table(report))
    if report_path:
        Path(report_path).write_text(json_text(report_json(report), indent=2) + "\n",
                                     encoding="utf-8")
    if junit_path:
        report_junit(report).write(junit_path, encoding="unicode", xml_declaration=True)
    click.echo(_verdict(report), err=True)
    sys.exit(report.exit_code)


def _verdict(report: Report) -> str:
    """The last line: what failed, else what was vacuous or left out, else that all held."""
    failed = [f"{t}: {p}" for t, tallies in report.tallies.items()
              for p, tally in tallies.items() if tally.failed]
    exercised = (f"; the engine restarted {report.exercised['restarts']} times and crashed "
                 f"{report.exercised['crashes']} times" if report.exercised else "")
    exercised += _ties_words(report)
    if failed:
        return f"FAILED: {'; '.join(failed)} ({report.cases} cases{exercised})"
    lines = [f"VACUOUS: {report.coverage[t].advice(t)}" for t in report.vacuous]
    lines += [f"NOT RUN: {t}: {why}" for t, why in report.skipped.items()]
    lines += [f"NOT CHECKED: {prop}: {why}" for prop, why in report.not_checked.items()]
    held = f"every property held ({report.cases} cases{exercised})"
    return "\n".join([*lines, held + (", but the verification is not complete" if lines else "")])


def _ties_words(report: Report) -> str:
    """The tie order checked, in words, where it is not the deterministic one."""
    if report.ties == "deterministic":
        return ""
    return f", ties in arrival order ({report.ties})"


def _span(text: str | None) -> int | None:
    """``--span`` in microseconds (a click error for what is not a duration)."""
    if text is None:
        return None
    try:
        span = parse_interval_text(text)
    except EowcError as error:
        raise click.BadParameter(str(error), param_hint="--span") from None
    if span <= 0:
        raise click.BadParameter(f"expected a positive duration, got {text!r}", param_hint="--span")
    return span
