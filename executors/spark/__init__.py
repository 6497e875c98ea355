"""Spark plumbing for the Spark-based EOWC executors.

* :mod:`eowc.executors.spark.session`: one shared, quiet, local :class:`~pyspark.sql.SparkSession`
  configured for ``transformWithStateInPandas`` (RocksDB state store, UTC session time zone), and
  a Java check that fails with a clear message.
* :mod:`eowc.executors.spark.arrival_source`: the ``eowc_arrival_log`` Python streaming data source,
  which replays an arrival log one epoch per micro-batch.
* :mod:`eowc.executors.spark.shard_key`: an executor's key computed by Spark from the source's
  columns, where :func:`spark_shard` says it can be.
* :mod:`eowc.executors.spark.sink`: an exactly-once ``foreachBatch`` writer of JSON Lines files, each
  starting with the batch's record (its watermark and offsets, so its epoch), and readers of
  them and of Spark's offset and commit logs.

Importing this package does not import PySpark.
"""

from __future__ import annotations

from eowc.executors.interface import EowcProcessor
from eowc.executors.plan import SourceShard
from eowc.semantics.ir.values import TIME_TYPES, SqlType
from eowc.semantics.rules.triggers import Convention

#: The boundary rules Spark's own streaming operators follow (``SEMANTICS.md`` §3): what
#: ``--engine spark-native`` and ``--executor spark-native`` are judged under.
NATIVE_CONVENTION = Convention.SPARK


#: The column types whose canonical bytes (:mod:`eowc.executors.buckets`) Spark SQL writes
#: (:mod:`eowc.executors.spark.shard_key`).
SHARDABLE = frozenset({SqlType.BIGINT, SqlType.BOOLEAN, SqlType.VARCHAR, *TIME_TYPES})


def spark_shard(executor: EowcProcessor) -> SourceShard | None:
    """The executor's key as Spark computes it from the columns of its one source, its rows
    then reaching the executor before the stateless part (:mod:`eowc.executors.spark.adapter`):
    its :meth:`~eowc.executors.interface.EowcProcessor.source_shard` where every term is a
    column of a :data:`SHARDABLE` type or a window bound of a time column and the executor
    reads no other source's progress; else None."""
    shard = executor.source_shard()
    if shard is None or executor.progress_keys or len(executor.sources) != 1:
        return None
    columns = executor.sources[0].columns
    if all(columns[t if isinstance(t, int) else t.column].type in SHARDABLE for t in shard.terms):
        return shard
    return None
