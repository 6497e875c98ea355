"""Spark plumbing for the Spark-based EOWC executors.

* :mod:`eowc.executors.spark.session`: one shared, quiet, local :class:`~pyspark.sql.SparkSession`
  configured for ``transformWithStateInPandas`` (RocksDB state store, UTC session time zone), and
  a Java check that fails with a clear message.
* :mod:`eowc.executors.spark.arrival_source`: the ``eowc_arrival_log`` Python streaming data source,
  which replays an arrival log one epoch per micro-batch.
* :mod:`eowc.executors.spark.sink`: an exactly-once ``foreachBatch`` writer of JSON Lines files, each
  starting with the batch's record (its watermark and offsets, so its epoch), and readers of
  them and of Spark's offset and commit logs.

Importing this package does not import PySpark.
"""

from __future__ import annotations

from eowc.semantics.rules.triggers import Convention

#: The boundary rules Spark's own streaming operators follow (``SEMANTICS.md`` §3): what
#: ``--engine spark-native`` and ``--executor spark-native`` are judged under.
NATIVE_CONVENTION = Convention.SPARK

#: ``_seq`` of a row that is not an event of the log but only moves the watermark (the
#: ``eowc_arrival_log`` source's ``close`` row).
CLOSE_SEQ = -1
