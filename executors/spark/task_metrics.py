"""Where the stateful work of a streaming query ran, from Spark's own task metrics.

The stateful stage of an EOWC query on Spark is the stage that runs its
``transformWithStateInPandas`` (the plan node ``TransformWithStateInPySpark``): one task per
shuffle partition (``spark.sql.shuffle.partitions``), each the shard of the state store that
holds the keys hashed to it. A task's rows are the records it read from the shuffle: the
``(_key, _arrival)`` rows of the stateless step (one per executor key and input frame, see
:mod:`eowc.executors.spark.adapter`) and, for an executor that wants them, the sources'
progress rows. A query whose state is keyed by one value (e.g. the window alone) gives all its
rows to one task, whatever the cluster.

The figures come from the driver's live status store (``SparkContext.statusStore``, which the
UI and its REST API read from): it is kept whether or not the UI runs
(``spark.ui.enabled=false`` in :func:`eowc.executors.spark.session.spark_session`), for the
last ``spark.ui.retainedJobs`` jobs and ``spark.ui.retainedStages`` stages (1,000 each by
default; a streaming query runs one job per micro-batch). Only successful task attempts are
counted, so a task retried after a lost executor counts once.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

#: What a task's share is measured in: the rows it read from the shuffle, or their bytes.
Measure = Literal["rows", "bytes"]
#: The name of the stateful plan node in a stage's operation graph (Spark 4.x; older versions
#: called it ``TransformWithStateInPandas``).
STATEFUL_NODE = re.compile(r"TransformWithStateIn(PySpark|Pandas)")
#: The query id in a micro-batch job's description (``<name>\nid = ...\nrunId = ...\nbatch = n``).
_QUERY_ID = re.compile(r"^id = (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class TaskRows:
    """One successful task of a stateful stage: the streaming query it belongs to (its id,
    kept across restarts from the checkpoint), the stage, the partition (the state-store
    shard), the executor and host it ran on, and how many rows and bytes it read from the
    shuffle (the bytes grow with the arrivals the rows carry)."""

    query: str
    stage: int
    partition: int
    executor: str
    host: str
    rows: int
    bytes: int = 0


def stateful_task_rows(spark: SparkSession, query: StreamingQuery | str | None = None
                       ) -> list[TaskRows]:
    """The successful tasks of the stateful stages of ``query`` (a query or its id; every
    streaming query of the application when None) that the driver's status store still holds,
    in stage and partition order. Call it after the query's batches have finished (it waits
    for the driver's listener bus to deliver what it has)."""
    wanted = query if isinstance(query, str) or query is None else str(query.id)
    context = spark.sparkContext
    jvm_context = context._jsc.sc()  # type: ignore[union-attr]
    jvm_context.listenerBus().waitUntilEmpty()
    store = jvm_context.statusStore()
    scala = context._jvm.scala.jdk.javaapi.CollectionConverters  # type: ignore[union-attr]
    no_quantiles = context._gateway.new_array(context._jvm.double, 0)  # type: ignore[union-attr]
    result = []
    for job in scala.asJava(store.jobsList(None)):
        description = job.description()
        found = _QUERY_ID.search(description.get()) if description.isDefined() else None
        if found is None or (wanted is not None and found.group(1) != wanted):
            continue
        for stage in scala.asJava(job.stageIds()):
            if _is_stateful(store.operationGraphForStage(stage).rootCluster(), scala):
                result.extend(_successful_tasks(store, scala, no_quantiles, found.group(1), stage))
    return sorted(set(result), key=lambda task: (task.stage, task.partition))


def _is_stateful(cluster: Any, scala: Any) -> bool:
    """Whether an operation graph's cluster (a plan node's scope) or one inside it is the
    stateful node."""
    if STATEFUL_NODE.search(cluster.name() or ""):
        return True
    return any(_is_stateful(child, scala) for child in scala.asJava(cluster.childClusters()))


def _successful_tasks(store: Any, scala: Any, no_quantiles: Any, query: str, stage: int
                      ) -> Iterator[TaskRows]:
    for attempt in scala.asJava(store.stageData(stage, False, None, False, no_quantiles)):
        for task in scala.asJava(store.taskList(stage, attempt.attemptId(), 2**31 - 1)):
            metrics = task.taskMetrics()
            if task.status() != "SUCCESS" or not metrics.isDefined():
                continue
            read = metrics.get().shuffleReadMetrics()
            yield TaskRows(query, stage, task.partitionId(), task.executorId(), task.host(),
                           read.recordsRead(), read.localBytesRead() + read.remoteBytesRead())


def rows_by_partition(tasks: Iterable[TaskRows], measure: Measure = "rows") -> Counter[int]:
    """Rows (or bytes) per partition (state-store shard), summed over the stages
    (micro-batches)."""
    counts: Counter[int] = Counter()
    for task in tasks:
        counts[task.partition] += getattr(task, measure)
    return counts


def rows_by_executor(tasks: Iterable[TaskRows]) -> Counter[str]:
    """Rows per executor id, summed over the stages."""
    counts: Counter[str] = Counter()
    for task in tasks:
        counts[task.executor] += task.rows
    return counts


def busiest_share(tasks: Iterable[TaskRows], measure: Measure = "rows") -> float:
    """The share of the stateful stage's rows (or bytes) handled by its busiest task: those of
    the partition that read the most, summed over the micro-batches, over all of them (1/n when
    n partitions share the work evenly, 1.0 when one does it all). ValueError if there are
    none."""
    counts = rows_by_partition(tasks, measure)
    total = sum(counts.values())
    if total == 0:
        raise ValueError(f"the stateful stages read no {measure}: there is no share to measure")
    return max(counts.values()) / total


def write_task_rows(path: str | os.PathLike[str], application: str, tasks: Iterable[TaskRows]
                    ) -> None:
    """Write an application's id and task rows to ``path`` as JSON (a child process hands
    them to its parent so)."""
    Path(path).write_text(json.dumps({"application": application,
                                      "tasks": [asdict(task) for task in tasks]}), encoding="utf-8")


def read_task_rows(path: str | os.PathLike[str]) -> tuple[str, list[TaskRows]]:
    """The application id and task rows :func:`write_task_rows` wrote."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data["application"], [TaskRows(**item) for item in data["tasks"]]
