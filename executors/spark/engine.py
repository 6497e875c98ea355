"""``eowc engine spark``: a script run on Apache Spark's OWN streaming operators (the compiler of
:mod:`eowc.executors.spark.native`), epoch by epoch, behind the Python protocol of ``eowc verify
--executor python:...`` (``epoch(number, events)``, ``close()``; :mod:`eowc.verify.external`),
in any release from Spark 3.4 on, to judge that release.

The in-process ``spark-native`` replays a whole log through eowc's own streaming source (Spark
4's Python data sources). This session takes one epoch at a time and uses only what every
release has:

* each table the query reads is Spark's file source over ``state_dir/sources/<table>/`` (JSON
  Lines, at most one file a batch), its columns in eowc's internal form (times and intervals
  as microseconds, decimals as their digits), typed back in Spark; its watermark is Spark's
  ``withWatermark`` with the table's delay;
* the query runs from the session's start to its :meth:`close`, on its checkpoint
  (``state_dir/checkpoint``), with a processing-time trigger every :data:`TRIGGER_MS` ms;
* an epoch: one file per table that has rows in it, staged, then renamed into place together
  between two triggers (so that Spark lists all of them in one batch or none; every batch is
  checked for it afterwards), then ``processAllAvailable``: the data batch, judged against the
  watermark the earlier epochs made (Definition 1), and the no-data batch Spark runs once the
  watermark has moved, in which the windows the epoch closed are emitted. The batches since the
  previous epoch are the epoch's output; ``foreachBatch`` writes each to
  ``state_dir/out/b<batch id>.jsonl`` (a replayed batch rewrites its own file: exactly once);
* a restart is :meth:`close` (the query stopped) and a new session on the same ``state_dir``,
  which starts the query again on its checkpoint; a crash (a SIGKILL of the process group, or in
  process a session dropped without :meth:`close`, whose query the next session stops) is the
  same without the stop. ``state_dir/progress.json`` holds the last epoch acknowledged and the
  last batch of its output.

Spark drops late rows inside its operators without naming them, so no ``late`` message is
written.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eowc.executors.spark import NATIVE_CONVENTION
from eowc.executors.spark.native import SEQ, check_native, epoch_order, native_stream, spark_type_name
from eowc.executors.spark.session import SparkSetupError, spark_session
from eowc.executors.spark.sink import json_value
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import declared_name, row_from_json
from eowc.semantics.ir.plan import Source
from eowc.semantics.ir.values import (
    ArrayType,
    SqlType,
    computing_under,
    decimal_text,
    format_timestamp,
    json_text,
    parse_json,
    to_external,
)
from eowc.semantics.rules.emit_modes import not_final_in_spark

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame


#: The query's trigger interval (ms), and the part of it in which an epoch's files are put in
#: place (ms after a trigger fired: Spark lists the sources as it fires).
TRIGGER_MS = 100
PLACE_WINDOW_MS = (30, 80)

#: Queries this process runs, by the state_dir of their session (a dropped session's is stopped).
_RUNNING: dict[str, Any] = {}


class SparkRefused(EowcError):
    """Spark cannot run the script as ``eowc engine spark`` runs it; the message says why, in
    Spark's words where Spark gave them."""


@dataclass(frozen=True)
class _Progress:
    """What a session acknowledged last: the epoch, and the last batch id of its output."""

    epoch: int
    batch: int


class SparkNativeSession:
    """Spark's own operators on one ``state_dir`` (the Python protocol's session object)."""

    def __init__(self, script: str, convention: str, state_dir: str,
                 master: str = "local[2]") -> None:
        if convention != NATIVE_CONVENTION.value:
            raise SparkRefused(f"eowc engine spark runs Spark's own operators, which follow the "
                               f"{NATIVE_CONVENTION.value} convention only; this run asks for "
                               f"{convention}")
        with computing_under(NATIVE_CONVENTION.values):
            self.query = parse_script(script).query
            check_native(self.query)  # a query Spark has no operator for, before Spark starts
            at_once = not_final_in_spark(self.query.plan)
            if at_once is not None:
                raise SparkRefused(at_once)
        self.tables = {source.name: source for source in self.query.sources}
        for source in self.tables.values():
            _check_columns(source)
        self.state = Path(state_dir)
        self.sources, self.out = self.state / "sources", self.state / "out"
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.state / "progress.json"
        self.progress = _Progress(**json.loads(path.read_text())) if path.exists() \
            else _Progress(-1, -1)
        self.order = epoch_order(self.query)
        previous = _RUNNING.pop(str(self.state), None)
        if previous is not None:  # a session dropped without close(): its query is stopped
            previous.stop()
        frame = self._compiled(master)
        self.running = (frame.writeStream.foreachBatch(self._write_batch)
                        .option("checkpointLocation", str(self.state / "checkpoint"))
                        .trigger(processingTime=f"{TRIGGER_MS} milliseconds").start())
        _RUNNING[str(self.state)] = self.running

    def _compiled(self, master: str) -> DataFrame:
        try:
            spark = spark_session(master)
        except SparkSetupError as error:
            raise SparkRefused(f"cannot start Spark: {error}") from None
        frames = {}
        for name, source in self.tables.items():
            folder = self.sources / name
            folder.mkdir(parents=True, exist_ok=True)
            raw = (spark.readStream.schema(_raw_schema(source)).option("maxFilesPerTrigger", 1)
                   .json(str(folder)))
            frames[name] = raw.select(*(_typed(c.name, c.type) for c in source.columns), SEQ)
        with computing_under(NATIVE_CONVENTION.values):  # the decimal types Spark's rules give
            return native_stream(frames, self.query)

    # ------------------------------------------------------------------ the protocol

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Feeds epoch ``number`` and runs Spark until it has processed it; returns the rows
        Spark's batches emitted, in the reference's order within an epoch."""
        self._feed(number, events)
        try:
            self.running.processAllAvailable()
        except Exception as error:  # noqa: BLE001 - Spark's failure, in Spark's words
            raise SparkRefused(f"the Spark query failed in epoch {number}: "
                               f"{_first_line(str(error))}") from None
        self._check_one_batch(number)
        batches = sorted(int(f.stem[1:]) for f in self.out.glob("b*.jsonl"))
        new = [b for b in batches if b > self.progress.batch]
        ordered = []
        for batch in new:
            for line in (self.out / f"b{batch:08d}.jsonl").read_text().splitlines():
                item = self.order(parse_json(line))
                if item is not None:
                    ordered.append(item)
        ordered.sort(key=lambda item: item[0])
        self._acknowledged(_Progress(number, new[-1] if new else self.progress.batch))
        schema = self.query.schema
        return [{"row": {c.name: to_external(v, c.type) for c, v in zip(schema, row, strict=True)}}
                for _, row in ordered]

    def close(self) -> None:
        """Stops the query; its checkpoint and progress.json are the state a new session on
        this state_dir resumes from."""
        if _RUNNING.pop(str(self.state), None) is not None:
            self.running.stop()

    # ------------------------------------------------------------------ steps of an epoch

    def _feed(self, number: int, events: list[dict[str, Any]]) -> None:
        """Writes epoch ``number``'s rows, one file per table (staged, then renamed, so Spark
        never lists half a file); ``_seq`` is the epoch and position (never the close row's)."""
        lines: dict[str, list[str]] = {name: [] for name in self.tables}
        with computing_under(NATIVE_CONVENTION.values):
            for position, event in enumerate(events):
                name = declared_name(event["table"], self.tables)
                if name is None:
                    continue  # a table the query does not read
                row = row_from_json(self.tables[name], event["row"])
                record = {c.name: _raw_value(v, c.type)
                          for c, v in zip(self.tables[name].columns, row, strict=True)}
                record[SEQ] = number * 1_000_000_000 + position
                lines[name].append(json.dumps(record))
        staged = []
        for name, rows in lines.items():
            if rows:
                path = self.sources / name / f".e{number:08d}.json"
                path.write_text("".join(line + "\n" for line in rows))
                staged.append(path)
        _between_triggers()
        for path in staged:
            os.replace(path, path.with_name(path.name[1:]))

    def _check_one_batch(self, number: int) -> None:
        """That Spark read epoch ``number``'s files, one per table, in one batch (the file
        sources' logs in the checkpoint say which batch read which file)."""
        name = f"e{number:08d}.json"
        logs = [log for log in (self.state / "checkpoint" / "sources").glob("*/*")
                if not log.name.startswith(".")]  # Hadoop's .crc files beside them
        batches = {entry["batchId"] for log in logs for entry in _log_entries(log)
                   if entry["path"].endswith("/" + name)}
        if len(batches) > 1:
            raise SparkRefused(f"Spark read the files of epoch {number} in batches "
                               f"{sorted(batches)}, not in one: the epoch cannot be attributed")

    def _write_batch(self, frame: DataFrame, batch_id: int) -> None:
        """``foreachBatch``: the batch's rows, each a record of the output and hidden columns
        in the external form of :func:`.sink.json_value`, to ``out/b<batch id>.jsonl``."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import TimestampNTZType, TimestampType

        times = {f.name for f in frame.schema.fields
                 if isinstance(f.dataType, TimestampType | TimestampNTZType)}
        micros = frame.select(*(F.expr(f"unix_micros(`{n}`)").alias(n) if n in times
                                else F.col(f"`{n}`") for n in frame.columns))
        records = []
        for row in micros.collect():
            values = row.asDict()
            records.append({name: (format_timestamp(value) if name in times and value is not None
                                   else json_value(value)) for name, value in values.items()})
        staged = self.out / f".b{batch_id:08d}.jsonl"
        staged.write_text("".join(json_text(record) + "\n" for record in records))
        os.replace(staged, self.out / f"b{batch_id:08d}.jsonl")

    def _acknowledged(self, progress: _Progress) -> None:
        self.progress = progress
        staged = self.state / ".progress.json"
        staged.write_text(json.dumps(progress.__dict__))
        os.replace(staged, self.state / "progress.json")


# ---------------------------------------------------------------------- the files Spark reads

def _between_triggers() -> None:
    """Waits until the clock is inside :data:`PLACE_WINDOW_MS` of a trigger interval (Spark's
    processing-time triggers fire at multiples of the interval since the Unix epoch)."""
    low, high = PLACE_WINDOW_MS
    while not low <= (phase := time.time_ns() // 1_000_000 % TRIGGER_MS) < high:
        time.sleep(((low - phase) % TRIGGER_MS) / 1000)


def _log_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of a file source's log file (``v1``, then one JSON object a line)."""
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [json.loads(line) for line in lines if line.strip()]


def _check_columns(source: Source) -> None:
    for column in source.columns:
        if isinstance(column.type, ArrayType):
            raise SparkRefused(f"column {source.name}.{column.name} is an ARRAY, which eowc "
                               f"engine spark does not yet feed to Spark")


def _raw_type(sql_type: SqlType) -> str:
    """The type of a column in the files: times and intervals as microseconds, a decimal as
    its digits."""
    if sql_type.is_time or sql_type is SqlType.INTERVAL:
        return "bigint"
    if sql_type is SqlType.DECIMAL:
        return "string"
    return spark_type_name(sql_type)


def _raw_schema(source: Source) -> str:
    return ", ".join([*(f"`{c.name}` {_raw_type(c.type)}" for c in source.columns),
                      f"{SEQ} bigint"])


def _raw_value(value: Any, sql_type: SqlType) -> Any:
    if value is None:
        return None
    if sql_type is SqlType.DECIMAL:
        return decimal_text(value)
    return value


def _typed(name: str, sql_type: SqlType) -> SparkColumn:
    """A file's column as the plan types it (a DECIMAL stays text: ``native`` casts it to the
    declared type)."""
    from pyspark.sql import functions as F

    column = f"`{name}`"
    if sql_type.is_time:
        return F.expr(f"timestamp_micros({column})").alias(name)
    if sql_type is SqlType.INTERVAL:
        return F.expr(f"make_dt_interval(0, 0, 0, CAST({column} AS DECIMAL(20, 0)) / 1000000)"
                      ).alias(name)
    return F.col(column)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no reason given"


__all__ = ["SparkNativeSession", "SparkRefused"]
