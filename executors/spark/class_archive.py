"""The class archive of the Spark driver JVM: class-data sharing for Spark's classes and the
classes the executors' streaming queries load, so that each new JVM maps them from one file
instead of reading, verifying and linking them from Spark's jars.

:func:`spark_session` uses the archive at :func:`~eowc.executors.spark.session.class_archive_path`
when it is there (``EOWC_SPARK_CDS=0`` turns it off). :func:`build_class_archive` makes it: a
child process runs :func:`workload` with ``-XX:ArchiveClassesAtExit``, and the JVM writes the
classes it loaded when it exits: ``python -m eowc.executors.spark.class_archive``, once per
machine, Java and PySpark version (figures: ``docs/executors.md``, *Run it*).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from pyspark.sql import functions as F

from eowc.executors.spark.arrival_source import arrival_stream
from eowc.executors.spark.runner import start_query
from eowc.executors.spark.session import (
    CDS_DUMP_ENV_VAR,
    SparkSetupError,
    archive_usable,
    class_archive_path,
    java_executable,
    spark_session,
    stop_spark,
)
from eowc.executors.spark.sink import EpochSink
from eowc.semantics.rules.triggers import Convention


def build_class_archive(force: bool = False) -> Path:
    """Make the class archive that :func:`~eowc.executors.spark.session.spark_session` uses
    when present (about a minute; once per machine, Java and PySpark version): a child process
    runs :func:`workload`. Returns the archive's path; :class:`SparkSetupError` if it fails."""
    target = class_archive_path()
    if target.is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    env = dict(os.environ, **{CDS_DUMP_ENV_VAR: str(temporary)})
    try:
        result = subprocess.run(
            [sys.executable, "-m", "eowc.executors.spark.class_archive", "--workload"], env=env,
            capture_output=True, text=True, timeout=900, check=False)
        if result.returncode != 0 or not temporary.is_file():
            raise SparkSetupError(f"building the class archive failed:\n{result.stderr[-3000:]}")
        if not archive_usable(java_executable(os.environ), temporary):
            raise SparkSetupError(f"the class archive {temporary} does not load")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    for stale in target.parent.glob("spark-classes-*.jsa"):
        if stale != target:
            stale.unlink(missing_ok=True)
    return target


def workload() -> None:
    """A small run through the code paths of the executors: Spark's own window aggregation
    (the ``spark-native`` executor), then the executors' group aggregate on
    ``transformWithStateInPandas`` and the RocksDB state store, stopped after two epochs and
    restarted from its checkpoint to the end, as a recovery after a crash does."""
    spark = spark_session()
    spark.range(10).selectExpr("id % 3 AS k").groupBy("k").count().collect()
    examples = resources.files("eowc.semantics") / "examples"
    events, query = str(examples / "bids.jsonl"), str(examples / "bids.sql")
    with tempfile.TemporaryDirectory() as work:
        frame = arrival_stream(spark, events, query)
        counts = (frame.withWatermark("bidtime", "1 minute")
                  .groupBy(F.window("bidtime", "10 minutes")).agg(F.sum("price")))
        native = (counts.writeStream.outputMode("append")
                  .foreachBatch(EpochSink(os.path.join(work, "out"),
                                          os.path.join(work, "checkpoint")))
                  .option("checkpointLocation", os.path.join(work, "checkpoint"))
                  .trigger(availableNow=True).start())
        native.awaitTermination()
        run = Path(work) / "eowc"
        start_query(spark, query, events, Convention.RISINGWAVE, run, max_epochs=2)
        start_query(spark, query, events, Convention.RISINGWAVE, run, close=True)
    stop_spark()


if __name__ == "__main__":
    if sys.argv[1:] == ["--workload"]:
        workload()
    elif sys.argv[1:] == []:
        print(build_class_archive(force=True))
    else:
        sys.exit("usage: python -m eowc.executors.spark.class_archive")
