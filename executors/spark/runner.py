"""Run an EOWC query's executor on Spark over an arrival log, deterministically: the
``eowc_arrival_log`` source with ``pacing=settle`` (one data batch and one settle batch per
epoch), ``Trigger.AvailableNow``, a checkpoint directory, and the exactly-once
:class:`~eowc.executors.spark.sink.EpochSink`. The result has the shape of the in-process driver's,
so the two and the reference interpreter can be compared epoch by epoch.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from eowc.executors.choice import processor_for
from eowc.executors.driver import DriverRun, record_outputs
from eowc.executors.millisecond_watermark import check_millisecond_watermarks
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.spark.adapter import eowc_streams, executor_output
from eowc.executors.spark.arrival_source import SOURCE_NAME, register
from eowc.executors.spark.session import SparkSetupError, spark_session
from eowc.executors.spark.sink import EpochSink, SinkFileError, read_batches
from eowc.executors.spark.typed_state import StateFormatError
from eowc.executors.spark.workdir import checkpoint_failures, claim_workdir, damaged_output
from eowc.semantics.errors import RunError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import MICROS_PER_MILLI, ValueOutOfRange, computing_under
from eowc.semantics.rules.triggers import Convention


def arrival_frame(spark: SparkSession, query_path: str, events_path: str, table: str,
                  max_epochs: int | None = None, close: bool = False,
                  partitions: int | None = None,
                  convention: Convention = Convention.RISINGWAVE) -> DataFrame:
    """The ``eowc_arrival_log`` source over ``events_path`` for ``table`` with
    ``pacing=settle`` (one data batch and one settle batch per epoch); ``max_epochs`` stops
    after that many epochs, ``close`` adds the source's ``close`` epoch, ``partitions`` splits
    each batch's rows into at most that many input partitions (the source's default, 2, when
    None), ``convention`` computes the table's computed columns."""
    register(spark)
    reader = (spark.readStream.format(SOURCE_NAME).option("events", events_path)
              .option("query", query_path).option("table", table).option("pacing", "settle")
              .option("convention", convention.value))
    if max_epochs is not None:
        reader = reader.option("max_epochs", str(max_epochs))
    if partitions is not None:
        reader = reader.option("partitions", str(partitions))
    if close:
        reader = reader.option("close", "true")
    return reader.load()


def start_epoch_sink(frame: DataFrame, workdir: Path) -> StreamingQuery:
    """Start writing ``frame`` to the exactly-once :class:`EpochSink` in ``workdir/output``
    with the checkpoint in ``workdir/checkpoint`` and ``Trigger.AvailableNow``."""
    checkpoint = workdir / "checkpoint"
    return (frame.writeStream.foreachBatch(EpochSink(workdir / "output", checkpoint))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


def start_query(spark: SparkSession, query_path: str, events_path: str, convention: Convention,
                workdir: Path, max_epochs: int | None = None, close: bool = False,
                partitions: int | None = None, options: ExecutorOptions = DEFAULT_OPTIONS,
                log: ArrivalLog | None = None) -> None:
    """Run the query until the log (or its first ``max_epochs`` epochs) is processed; with
    ``close``, then move the watermark past every window (the source's ``close`` epoch).
    ``partitions``: the source's input partitions per batch (see :func:`arrival_frame`). A
    log whose watermark would fall between two milliseconds is refused before Spark runs
    (:func:`~eowc.executors.millisecond_watermark.check_millisecond_watermarks`); ``log`` is
    the parsed ``events_path``, read here when not given."""
    sql = Path(query_path).read_text(encoding="utf-8")
    refuse_inexact_watermarks(query_path, events_path, convention, log)
    frames = {source.name: arrival_frame(spark, query_path, events_path, source.name,
                                         max_epochs, close, partitions, convention)
              for source in processor_for(parse_script(sql).query, convention).sources}
    outputs = eowc_streams(frames, sql, convention, options).select(
        "_kind", "_out")
    with checkpoint_failures(workdir / "checkpoint"), value_failures():
        start_epoch_sink(outputs, workdir).awaitTermination()


def refuse_inexact_watermarks(query_path: str, events_path: str, convention: Convention,
                              log: ArrivalLog | None = None) -> None:
    """Refuse, before Spark runs, a query and log whose watermark would fall between two
    milliseconds (:func:`~eowc.executors.millisecond_watermark.check_millisecond_watermarks`):
    Spark keeps it in whole milliseconds. ``log`` is the parsed ``events_path``, read here when
    not given."""
    script = parse_script(Path(query_path).read_text(encoding="utf-8"))
    if log is None:
        with computing_under(convention.values):
            log = load_arrival_log(events_path, script.sources).log
    check_millisecond_watermarks(processor_for(script.query, convention), log, convention,
                                 events_path)


#: A value error raised by the executors inside a Spark worker, as its traceback names it.
_VALUE_FAILURE = re.compile(r"(?:ValueOutOfRange|ValueError): (.+)")
#: Spark's own arithmetic overflow under its ANSI mode (``spark.sql.ansi.enabled``).
_SPARK_OVERFLOW = re.compile(r"\[(ARITHMETIC_OVERFLOW|NUMERIC_VALUE_OUT_OF_RANGE[.A-Z_]*)\] "
                             r"([^.]+)")


@contextmanager
def value_failures() -> Iterator[None]:
    """Around a streaming query: a value that cannot be computed (a BIGINT overflow, a bad
    CAST: ``docs/sql/types.md``), in the executors in a Spark worker or in Spark's own ANSI
    arithmetic, fails the run with one line, as a :class:`ValueOutOfRange` (the command line
    prints it), not Spark's traceback."""
    from pyspark.errors import PySparkException

    try:
        yield
    except PySparkException as error:
        text = str(error)
        found = _VALUE_FAILURE.search(text)
        if found is not None:
            raise ValueOutOfRange(found.group(1).strip(), located=True) from None
        spark = _SPARK_OVERFLOW.search(text)
        if spark is None:
            raise
        raise ValueOutOfRange(f"{spark.group(2).strip()} in Spark's ANSI mode ([{spark.group(1)}])",
                              located=True) from None


def collect_run(log: ArrivalLog, workdir: Path) -> DriverRun:
    """The emissions (tagged with their epoch, ordered as :func:`record_outputs` orders them) and
    the late rows of a finished run over ``log``, read back from the sink alone: each batch
    file's record gives the batch's epoch and watermark (Spark's offset log, which it purges,
    is not read). :class:`~eowc.executors.spark.sink.SinkFileError` for a damaged batch file
    (an output that is not the executors' text among them)."""
    events = dict(enumerate(log.events))
    run = DriverRun()
    for batch in read_batches(workdir / "output"):
        try:
            outputs = [executor_output(row["_kind"], row["_out"]) for row in batch.rows]
        except (StateFormatError, KeyError, TypeError) as error:
            raise SinkFileError(f"{batch.path}: an output row that eowc did not write "
                                f"({error})") from None
        record_outputs(run, batch.epoch, outputs, events,
                       batch.record.watermark_ms * MICROS_PER_MILLI)
    return run


def open_spark(master: str) -> SparkSession:
    """The shared Spark session on ``master``; a :class:`RunError` if Spark cannot start."""
    try:
        return spark_session(master)
    except SparkSetupError as error:
        raise RunError(f"cannot start Spark: {error}") from None


def run_on_spark(query_path: str, events_path: str, log: ArrivalLog, convention: Convention,
                 close: bool = False, master: str = "local[2]", workdir: str | None = None,
                 options: ExecutorOptions = DEFAULT_OPTIONS) -> DriverRun:
    """Run the executor of ``query_path`` on Spark (``master``) over ``events_path`` (whose
    parsed form is ``log``) and read back what it emitted. A new temporary work directory
    unless ``workdir`` is given (a directory holding the checkpoint of an earlier run of the
    same query resumes it; a directory holding another run is refused before Spark starts, see
    :func:`~eowc.executors.spark.workdir.claim_workdir`); a log whose watermark would fall
    between two milliseconds is refused first (:func:`refuse_inexact_watermarks`). A damaged
    checkpoint of a resumed run, or a damaged batch file of its sink, is a
    :class:`~eowc.semantics.errors.RunError` naming it; the length of the run does not matter (the
    epochs come from the sink's records)."""
    refuse_inexact_watermarks(query_path, events_path, convention, log)
    directory = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="eowc-spark-"))
    claim_workdir(directory, query_path, events_path, convention)
    spark = open_spark(master)
    start_query(spark, query_path, events_path, convention, directory, close=close,
                options=options, log=log)
    try:
        return collect_run(log, directory)
    except SinkFileError as error:
        raise damaged_output(directory / "output", error) from error
