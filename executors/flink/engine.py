"""``flink-native``: a script run on Apache Flink's OWN operators, epoch by epoch, behind the
Python protocol of ``eowc verify --executor python:...`` (``epoch(number, events)``,
``close()``; :mod:`eowc.verify.external`), to judge Flink itself.

One :class:`FlinkSession` is one start of the engine on a ``state_dir``:

* the script is Flink SQL, run as written: each ``CREATE TABLE`` is executed by Flink, read back
  from Flink's catalog (its columns, computed columns and watermark as Flink resolved them) and
  replaced by the harness's raw table and data view (:mod:`eowc.executors.flink.harness`); views
  and the query are Flink's to plan. A query Flink would not run insert-only (it updates or
  retracts rows) is refused before it runs, with Flink's changelog mode;
* a local mini-cluster runs the job (``parallelism`` 1 by default), its watermark emitted after
  every row (``pipeline.auto-watermark-interval`` 0), moved only by the harness's watermark rows;
* an epoch: its rows are written as one file per table into the folders Flink monitors; once
  the sink has seen every table's end row of the epoch, a savepoint is taken; when it has
  completed, the rows the sink holds since the previous epoch are the epoch's output (they
  reached the sink before the savepoint's barrier, which follows everything the epoch caused).
  With more than one table, the epoch's data rows are a file of their own, fed and followed by
  a savepoint before the file of its watermark rows: every operator has taken every table's
  rows before any table's watermark moves;
* :meth:`close` (a restart, or the end) stops the job with a savepoint; a new session on the
  same ``state_dir`` restores the savepoint of the last epoch it acknowledged (after a stop,
  that of the stop), and a session dropped without :meth:`close` (a crash) leaves only that:
  a job it left running in this process is cancelled first, a killed process took its JVM
  with it.

Everything the job runs with is in ``state_dir``: ``sources/<table>/`` (the epochs' files),
``out.jsonl`` (the sink's file), ``savepoints/``, and ``progress.json`` (the last epoch
acknowledged, its savepoint and the length of the sink's file then).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eowc.executors.flink.harness import (
    MARK,
    FlinkColumn,
    FlinkTable,
    data_view_ddl,
    end_mark,
    epoch_files,
    marked_query,
    quoted,
    raw_table_ddl,
)
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.dialects import detect_dialect
from eowc.semantics.frontend.flink_sql import flink_script
from eowc.semantics.frontend.sql import parse_script, script_statements
from eowc.semantics.ir.values import parse_json
from eowc.semantics.rules.emit_modes import not_final_in_flink

#: The only convention Flink's own operators follow.
FLINK_CONVENTION = "flink"
#: How often Flink looks for an epoch's new file (ms), and how long an epoch may take (s).
MONITOR_INTERVAL_MS = 20
EPOCH_TIMEOUT_S = 120.0
#: How often the sink's file is read while an epoch's end rows are awaited (s).
POLL_S = 0.005


class FlinkRefused(EowcError):
    """Flink cannot run the script as ``flink-native`` runs it; the message says why, in
    Flink's words where Flink gave them."""


def _printed_in_flink_sql(script: str) -> str:
    """A RisingWave script as the Flink SQL of the same meaning
    (:func:`~eowc.semantics.frontend.flink_sql.flink_script`); FlinkRefused, in Flink's
    documentation's words, if Flink would not run it final (EOWC), as the query's EMIT ON
    WINDOW CLOSE asks."""
    try:
        printed = flink_script(script)
        query = parse_script(printed).query
    except EowcError as error:
        raise FlinkRefused(f"the script in RisingWave's dialect cannot be run as Flink SQL: "
                           f"{error}") from None
    if not query.emit_on_window_close:
        raise FlinkRefused(f"{not_final_in_flink(query.plan)}, so its rows are not EOWC rows")
    if query.at_once:
        raise FlinkRefused("Flink emits its interval join's rows at once (each match when its "
                           "second row comes), not once their time is complete as EMIT ON "
                           "WINDOW CLOSE asks; write the query as Flink SQL to verify Flink's "
                           "rows at once")
    return printed


def flink_release() -> str:
    """The release of the PyFlink installed here (FlinkRefused without one)."""
    try:
        from pyflink.version import __version__
    except ImportError:
        raise FlinkRefused("PyFlink is not installed in this environment (pip install "
                           "apache-flink==2.3.0, in a virtual environment of its own: it "
                           "pins older pandas, pyarrow and protobuf)") from None
    return __version__


@dataclass(frozen=True)
class _Progress:
    """What a session acknowledged last: epoch, its savepoint, the sink file's length then."""

    epoch: int
    savepoint: str
    offset: int


#: Jobs this process runs, by the state_dir of their session (a dropped session's is cancelled).
_RUNNING: dict[str, Any] = {}


class FlinkSession:
    """Flink's own operators on one ``state_dir`` (the Python protocol's session object)."""

    def __init__(self, script: str, convention: str, state_dir: str, parallelism: int = 1) -> None:
        if convention != FLINK_CONVENTION:
            raise FlinkRefused(f"flink-native runs Flink's own operators, which follow the flink "
                               f"convention only; this run asks for {convention}")
        if detect_dialect(script) != "flink":
            script = _printed_in_flink_sql(script)
        flink_release()
        self.state = Path(state_dir)
        self.sources, self.out = self.state / "sources", self.state / "out.jsonl"
        self.savepoints = self.state / "savepoints"
        previous = _RUNNING.pop(str(self.state), None)
        if previous is not None:  # a session dropped without close(): its job is cancelled
            _cancel(previous)
        self.progress = self._restored()
        self.offset = self.progress.offset if self.progress else 0
        self.tables: dict[str, FlinkTable] = {}
        self.output: tuple[FlinkColumn, ...] = ()
        self.fed = False
        self.client = self._submit(script, parallelism)
        _RUNNING[str(self.state)] = self.client

    # ------------------------------------------------------------------ the job

    def _restored(self) -> _Progress | None:
        """The last acknowledged epoch's progress; files written after it are removed."""
        path = self.state / "progress.json"
        progress = _Progress(**json.loads(path.read_text())) if path.exists() else None
        last = progress.epoch if progress else -1
        for folder in self.sources.glob("*") if self.sources.exists() else []:
            for file in folder.glob("e*.json"):  # e<epoch>-<part>.json
                if int(file.stem[1:].split("-")[0]) > last:
                    file.unlink()
        if progress is None:
            shutil.rmtree(self.savepoints, ignore_errors=True)
            self.out.unlink(missing_ok=True)
        else:
            with open(self.out, "r+b") as handle:
                handle.truncate(progress.offset)
        self.savepoints.mkdir(parents=True, exist_ok=True)
        self.out.touch()
        return progress

    def _submit(self, script: str, parallelism: int) -> Any:
        from pyflink.common import Configuration, Types
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.table import StreamTableEnvironment

        from eowc.executors.flink.sink import AppendToFile, nothing

        conf = Configuration()
        for key, value in _settings(parallelism, self.progress).items():
            conf.set_string(key, value)
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.set_parallelism(parallelism)
        tables = StreamTableEnvironment.create(env)
        tables.get_config().set("table.local-time-zone", "UTC")
        query = self._declare(tables, script)
        try:
            output = tables.sql_query(query)
            self.output = _columns(output._j_table.getResolvedSchema())
            marked = tables.sql_query(marked_query(query, self.output, self.tables))
            _check_insert_only(marked)
            stream = tables.to_changelog_stream(marked)
        except FlinkRefused:
            raise
        except Exception as error:  # noqa: BLE001 - Flink's planner refused the query
            raise FlinkRefused(f"Flink refused the query: {_root_cause(str(error))}") from None
        self.names = _output_names(script, self.output)
        stream.map(AppendToFile(str(self.out)), output_type=Types.BOOLEAN()) \
            .filter(nothing).print()
        return env.execute_async("eowc flink-native")

    def _declare(self, tables: Any, script: str) -> str:
        """Runs the script's statements but the last; each table becomes the harness's raw
        table and data view. The last statement, the query, is returned."""
        statements = [s.text for s in script_statements(script, "flink")]
        if not statements:
            raise FlinkRefused("the script has no statement")
        for text in statements[:-1]:
            head = " ".join(text.split()[:3]).upper()
            _executed(tables, text)
            if head.startswith(("CREATE TABLE", "CREATE TEMPORARY TABLE")):
                name = _created_name(text)
                table = _resolved_table(tables, name)
                folder = self.sources / name
                folder.mkdir(parents=True, exist_ok=True)
                _executed(tables, f"DROP TEMPORARY TABLE IF EXISTS {quoted(name)}")
                _executed(tables, f"DROP TABLE IF EXISTS {quoted(name)}")
                _executed(tables, raw_table_ddl(table, folder.as_uri(), MONITOR_INTERVAL_MS))
                _executed(tables, data_view_ddl(table))
                self.tables[name] = table
        if not self.tables:
            raise FlinkRefused("the script declares no table (CREATE TABLE ...)")
        return statements[-1]

    # ------------------------------------------------------------------ the protocol

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Feeds epoch ``number``; returns the rows Flink emitted for it, once a savepoint has
        completed after Flink read the whole epoch. With more than one table, the epoch's rows
        are fed first and a savepoint is taken once every table's are read, so that no table's
        watermark moves before every operator has taken the epoch's rows (Definition 1)."""
        by_table: dict[str, list[Mapping[str, Any]]] = {name: [] for name in self.tables}
        for event in events:
            by_table[self._table_of(event["table"])].append(event["row"])
        files = {name: epoch_files(self.tables[name], rows, number, split=len(self.tables) > 1)
                 for name, rows in by_table.items()}
        self.fed = True
        for part, (end, _) in enumerate(files[next(iter(self.tables))]):
            for name in self.tables:
                folder = self.sources / name
                staged = folder / f".e{number:08d}-{part}.json"  # hidden: Flink skips it
                staged.write_text("".join(line + "\n" for line in files[name][part][1]))
                staged.rename(folder / staged.name[1:])
            self._await_end_rows(end, number)
            savepoint = self._savepoint()
        lines, self.offset = _lines_from(self.out, self.offset)
        self._acknowledged(_Progress(number, savepoint, self.offset))
        return [self._message(line) for line in lines if line["mark"] is None]

    def close(self) -> None:
        """Stops the job with a savepoint (not drained: no watermark moves), the one a new
        session on this state_dir restores; a job fed no epoch is cancelled (its tasks may still
        be starting; the savepoint it restored is the state)."""
        client = _RUNNING.pop(str(self.state), None)
        if client is None:
            return
        if not self.fed:  # nothing since the restore: its savepoint is still the state
            _cancel(client)
            return
        from pyflink.java_gateway import get_gateway
        formats = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType
        path = client._j_job_client.stopWithSavepoint(False, self.savepoints.as_uri(),
                                                      formats.CANONICAL).get()
        if self.progress is not None:
            self._acknowledged(_Progress(self.progress.epoch, path, self.offset))

    # ------------------------------------------------------------------ steps of an epoch

    def _table_of(self, name: str) -> str:
        if name in self.tables:
            return name
        folded = [t for t in self.tables if t.lower() == name.lower()]
        if len(folded) != 1:
            raise FlinkRefused(f"an event of table {name!r}, which the script does not declare "
                               f"(declared: {', '.join(self.tables)})")
        return folded[0]

    def _await_end_rows(self, kind: str, number: int) -> None:
        """Waits until the sink has seen every table's end row of ``kind`` of epoch ``number``."""
        mark = end_mark(kind, number)
        deadline, seen, offset = time.monotonic() + EPOCH_TIMEOUT_S, 0, self.offset
        while seen < len(self.tables):
            lines, offset = _lines_from(self.out, offset)
            seen += sum(1 for line in lines if line["mark"] == mark)
            if seen >= len(self.tables):
                return
            if time.monotonic() > deadline:
                raise FlinkRefused(f"Flink did not read epoch {number} within "
                                   f"{EPOCH_TIMEOUT_S:.0f} s (job {self._status()})")
            status = self._status()
            if status in ("FAILED", "CANCELED", "FINISHED", "ENDED"):
                raise FlinkRefused(f"the Flink job stopped ({status}) in epoch {number}: "
                                   f"{self._failure()}")
            time.sleep(POLL_S)

    def _savepoint(self) -> str:
        from pyflink.java_gateway import get_gateway
        formats = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType
        try:
            return str(self.client._j_job_client.triggerSavepoint(self.savepoints.as_uri(),
                                                                  formats.CANONICAL).get())
        except Exception as error:  # noqa: BLE001 - the job failed: say why, in Flink's words
            raise FlinkRefused(f"Flink could not take the epoch's savepoint ({_root_cause(str(error))}); "
                               f"the job: {self._failure()}") from None

    def _acknowledged(self, progress: _Progress) -> None:
        self.progress = progress
        staged = self.state / ".progress.json"
        staged.write_text(json.dumps(progress.__dict__))
        os.replace(staged, self.state / "progress.json")

    def _message(self, line: Mapping[str, Any]) -> dict[str, Any]:
        if line["op"] != "+I":
            raise FlinkRefused(f"Flink emitted {line['op']} {line['row']}: the query is not "
                               f"insert-only in Flink")
        return {"row": dict(zip(self.names, line["row"], strict=True))}

    def _status(self) -> str:
        """The job's status; ENDED once its mini-cluster has shut down."""
        try:
            return str(self.client.get_job_status().result())
        except Exception:  # noqa: BLE001 - a mini-cluster that shut down has no job to ask about
            return "ENDED"

    def _failure(self) -> str:
        try:
            self.client.get_job_execution_result().result()
        except Exception as error:  # noqa: BLE001 - Flink's exception, shown as Flink wrote it
            return _root_cause(str(error))
        return "no failure reported"


# ---------------------------------------------------------------------- Flink, through PyFlink

def _settings(parallelism: int, progress: _Progress | None) -> dict[str, str]:
    settings = {
        "pipeline.auto-watermark-interval": "0",
        "restart-strategy.type": "none",  # a failing job fails, with its cause, not restarts
        "parallelism.default": str(parallelism),
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "python.fn-execution.bundle.size": "1",
        "python.fn-execution.bundle.time": "1",
    }
    if progress is not None:
        settings["execution.savepoint.path"] = progress.savepoint
        settings["execution.state-recovery.path"] = progress.savepoint
    return settings


def _executed(tables: Any, statement: str) -> None:
    try:
        tables.execute_sql(statement)
    except Exception as error:  # noqa: BLE001 - Flink's refusal, in Flink's words
        raise FlinkRefused(f"Flink refused {_first_line(statement)}: {_root_cause(str(error))}"
                           ) from None


def _created_name(statement: str) -> str:
    """The name of the table a CREATE TABLE statement creates (its last dotted part)."""
    words = statement.replace("(", " ( ").split()
    upper = [w.upper() for w in words]
    at = upper.index("TABLE") + 1
    if upper[at:at + 3] == ["IF", "NOT", "EXISTS"]:
        at += 3
    return words[at].strip("`").split(".")[-1].strip("`")


def _resolved_table(tables: Any, name: str) -> FlinkTable:
    """The table ``name`` as Flink resolved it: columns (a metadata column is carried, like a
    physical one), computed columns' expressions, its watermark."""
    schema = getattr(tables._j_tenv, "from")(quoted(name)).getResolvedSchema()
    columns = []
    for column in schema.getColumns():
        kind = column.getClass().getSimpleName()
        expression = column.getExpression().asSerializableString() if kind == "ComputedColumn" \
            else None
        columns.append(FlinkColumn(column.getName(), _bare_type(column.getDataType()), expression))
    specs = list(schema.getWatermarkSpecs())
    if not specs:
        return FlinkTable(name, tuple(columns))
    spec = specs[0]
    return FlinkTable(name, tuple(columns), spec.getRowtimeAttribute(),
                      spec.getWatermarkExpression().asSerializableString())


def _columns(schema: Any) -> tuple[FlinkColumn, ...]:
    return tuple(FlinkColumn(c.getName(), _bare_type(c.getDataType()),
                             time_attribute="*ROWTIME*" in str(c.getDataType().toString())
                             or "*PROCTIME*" in str(c.getDataType().toString()))
                 for c in schema.getColumns())


def _output_names(script: str, output: tuple[FlinkColumn, ...]) -> tuple[str, ...]:
    """The names of the output columns as ``eowc run`` prints them: Flink's (``EXPR$2`` for
    an unnamed expression) replaced, position by position, by eowc's (``sum``) where eowc
    reads the script and gives as many columns; else Flink's."""
    try:
        names = tuple(c.name for c in parse_script(script, dialect="flink").query.schema)
    except EowcError:
        names = ()
    return names if len(names) == len(output) else tuple(c.name for c in output)


def _bare_type(data_type: Any) -> str:
    return str(data_type.getLogicalType().asSerializableString())


def _check_insert_only(table: Any) -> None:
    """Refuses a query whose result Flink would update or retract (its changelog mode)."""
    from pyflink.table.explain_detail import ExplainDetail
    plan = table.explain(ExplainDetail.CHANGELOG_MODE)
    physical = plan.split("== Optimized Physical Plan ==", 1)[-1].strip().splitlines()
    root = physical[0] if physical else ""
    if "changelogMode=[I]" not in root:
        at = root.find("changelogMode=")
        mode = root[at:root.index("]", at) + 1] if at >= 0 else "changelogMode unknown"
        raise FlinkRefused(f"Flink runs this query with updates ({mode}: I insert, UB/UA "
                           f"update, D delete), not insert-only: it emits no final rows to verify")


def _cancel(client: Any) -> None:
    with contextlib.suppress(Exception):  # a job that already ended has nothing to cancel
        client.cancel().result()


def _lines_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The whole lines of ``path`` after byte ``offset``, and the offset after them."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n") + 1
    return [parse_json(line) for line in data[:end].decode("utf-8").splitlines() if line], offset + end


def _first_line(statement: str) -> str:
    first = statement.strip().splitlines()[0]
    return first if len(first) <= 80 else first[:77] + "..."


def _root_cause(text: str) -> str:
    """The last 'Caused by' of a Java exception's text (Flink's own reason), else its first
    line after py4j's "An error occurred while calling ..."."""
    causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [text]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):  # py4j's
        lines = lines[1:]
    reason = causes[-1].removeprefix("Caused by:").strip() if causes else \
        lines[0].removeprefix(":").strip()
    for prefix in ("org.apache.flink.table.api.ValidationException: ",
                   "org.apache.flink.table.api.TableException: ",
                   "org.apache.calcite.sql.validate.SqlValidatorException: "):
        reason = reason.removeprefix(prefix)
    return reason


__all__ = ["FLINK_CONVENTION", "FlinkRefused", "FlinkSession", "MARK", "flink_release"]
