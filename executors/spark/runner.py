"""Run an EOWC query's executor on Spark over an arrival log, deterministically: the
``eowc_arrival_log`` source with ``pacing=settle`` (one data batch and one settle batch per
epoch), ``Trigger.AvailableNow``, a checkpoint directory, and the exactly-once
:class:`~executors.spark.sink.EpochSink`. The result has the shape of the in-process driver's,
so the two and the reference interpreter can be compared epoch by epoch.
"""

from __future__ import annotations

import base64
import pickle
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from semantics.arrival import ArrivalLog
from semantics.errors import EowcError
from semantics.sql import parse_script
from semantics.triggers import Convention
from semantics.values import MICROS_PER_MILLI

from ..driver import DriverRun, record_outputs
from .adapter import eowc_stream
from .arrival_source import SOURCE_NAME, register
from .session import SparkSetupError, spark_session
from .sink import EpochSink, batch_watermarks, epoch_of_batches, read_batches


def start_query(spark: SparkSession, query_path: str, events_path: str, convention: Convention,
                workdir: Path, max_epochs: int | None = None, close: bool = False) -> None:
    """Run the query until the log (or its first ``max_epochs`` epochs) is processed; with
    ``close``, then move the watermark past every window (the source's ``close`` epoch)."""
    register(spark)
    sql = Path(query_path).read_text(encoding="utf-8")
    source = parse_script(sql).query.source
    reader = (spark.readStream.format(SOURCE_NAME).option("events", events_path)
              .option("query", query_path).option("table", source.name).option("pacing", "settle"))
    if max_epochs is not None:
        reader = reader.option("max_epochs", str(max_epochs))
    if close:
        reader = reader.option("close", "true")
    outputs = eowc_stream(reader.load(), sql, convention).select(
        "_kind", F.base64("_out").alias("_out"))
    query = (outputs.writeStream.foreachBatch(EpochSink(workdir / "output"))
             .option("checkpointLocation", str(workdir / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()


def collect_run(log: ArrivalLog, workdir: Path) -> DriverRun:
    """The emissions (tagged with their epoch, in the reference's order within an epoch) and
    the late rows of a finished run over ``log``, read back from the sink and the checkpoint."""
    events = dict(enumerate(log.events))
    epoch_of = epoch_of_batches(workdir / "checkpoint")
    watermark_of = batch_watermarks(workdir / "checkpoint")
    run = DriverRun()
    for batch_id, rows in read_batches(workdir / "output"):
        outputs = [pickle.loads(base64.b64decode(record["_out"])) for record in rows]
        record_outputs(run, epoch_of[batch_id], outputs, events,
                       watermark_of[batch_id] * MICROS_PER_MILLI)
    return run


def run_on_spark(query_path: str, events_path: str, log: ArrivalLog, convention: Convention,
                 close: bool = False, master: str = "local[2]", workdir: str | None = None
                 ) -> DriverRun:
    """Run the executor of ``query_path`` on Spark (``master``) over ``events_path`` (whose
    parsed form is ``log``) and read back what it emitted. A new temporary work directory
    unless ``workdir`` is given (a directory holding the checkpoint of an earlier run of the
    same query resumes it)."""
    try:
        spark = spark_session(master)
    except SparkSetupError as error:
        raise EowcError(f"cannot start Spark: {error}") from None
    directory = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="eowc-spark-"))
    start_query(spark, query_path, events_path, convention, directory, close=close)
    return collect_run(log, directory)
