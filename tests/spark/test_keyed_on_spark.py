"""The keyed executors on real Spark with 8 shuffle partitions (a dedicated query and
checkpoint): a group aggregate of 100 auctions in one window, and an EOWC sort of 100 rows,
spread their stateful work over most of the 8 tasks (``spark_partition_id()`` of the stateful
stage's output rows), give the reference's rows, and the sort's output, in the order each task
emitted it, is ordered within each of its partitions; with one sort partition it is one task
and one total order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eowc.executors.driver import DriverRun, record_outputs
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.processors import Emit
from eowc.executors.spark.adapter import eowc_streams, executor_output
from eowc.executors.spark.runner import arrival_frame
from eowc.executors.spark.session import session_setting
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import parse_arrival_log
from eowc.semantics.rules.triggers import Convention
from eowc.verify.properties import OrderedExtent, ordered

RW = Convention.RISINGWAVE
TASKS = 8
SOURCE = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
          "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n")
GROUP_AGG = SOURCE + ("SELECT auction, window_start, count(*) AS n, sum(price) AS s FROM "
                      "TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY auction, window_start, "
                      "window_end EMIT ON WINDOW CLOSE")
SORT = SOURCE + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE"


def _lines() -> list[str]:
    """100 auctions, 3 rows each, in the window [0, 10 s) over three epochs (times out of
    order within an epoch, none late: epoch e's in [3e s, 3e + 3 s), the delay 1 s), then a
    row at 30 s that closes the window."""
    lines = []
    for epoch in range(3):
        for auction in range(100):
            second = 3 * epoch + auction * 7 % 3
            lines.append(json.dumps({"table": "bids", "row": {
                "auction": auction, "price": auction % 13 + epoch,
                "ts": f"2024-01-01 00:00:0{second}.{auction:03d}"}}))
        lines.append('{"barrier": true}')
    lines += [json.dumps({"table": "bids", "row": {"auction": 0, "price": 0,
                                                   "ts": "2024-01-01 00:00:30"}}),
              '{"barrier": true}']
    return lines


def _run(spark: Any, tmp_path: Path, sql: str, options: ExecutorOptions = DEFAULT_OPTIONS
         ) -> tuple[DriverRun, list[int], Any]:
    """Run ``sql`` over :func:`_lines` with 8 shuffle partitions: what the executor emitted
    (each batch's rows in the order Spark returns them: task by task, each task's in the
    order it emitted), the task of each emitted row, and the parsed log."""
    from pyspark.sql import functions as F

    query_path, events_path = tmp_path / "q.sql", tmp_path / "events.jsonl"
    query_path.write_text(sql, encoding="utf-8")
    events_path.write_text("\n".join(_lines()) + "\n", encoding="utf-8")
    parsed = parse_script(sql)
    log = parse_arrival_log(_lines(), parsed.sources).log
    batches: list[tuple[int, list[Any]]] = []

    def keep(frame: Any, batch_id: int) -> None:
        batches.append((batch_id, frame.collect()))

    with session_setting(spark, "spark.sql.shuffle.partitions", TASKS):
        frame = arrival_frame(spark, str(query_path), str(events_path), "bids", convention=RW)
        outputs = eowc_streams({"bids": frame}, sql, RW, options).select(
            "_kind", "_out", F.spark_partition_id().alias("_task"))
        (outputs.writeStream.foreachBatch(keep)
         .option("checkpointLocation", str(tmp_path / "checkpoint"))
         .trigger(availableNow=True).start().awaitTermination())
    run, tasks, events = DriverRun(), [], dict(enumerate(log.events))
    for batch_id, rows in sorted(batches, key=lambda b: b[0]):  # a batch as an epoch
        outputs_ = [executor_output(r["_kind"], r["_out"]) for r in rows]
        tasks += [r["_task"] for r, o in zip(rows, outputs_, strict=True) if isinstance(o, Emit)]
        record_outputs(run, batch_id, outputs_, events, 0)
    assert not run.late
    return run, tasks, log


def _busiest_share(tasks: list[int]) -> float:
    return max(Counter(tasks).values()) / len(tasks)


def test_a_group_aggregate_of_100_groups_runs_on_most_tasks(spark, tmp_path: Path) -> None:
    run, tasks, log = _run(spark, tmp_path, GROUP_AGG)
    want = list(run_eowc(parse_script(GROUP_AGG).query, log, RW))
    assert Counter(e.row for e in run.emissions) == Counter(e.row for e in want)
    assert len(run.emissions) == 100 and {e.row[2] for e in run.emissions} == {3}
    # one window: before issue 19 one key, one task; now its groups' buckets spread
    assert len(set(tasks)) >= 6, Counter(tasks)
    assert _busiest_share(tasks) <= 0.3, Counter(tasks)


@pytest.mark.parametrize("partitions", [16, 1])
def test_a_sort_is_ordered_within_each_partition_on_spark(spark, tmp_path: Path,
                                                          partitions: int) -> None:
    run, tasks, log = _run(spark, tmp_path, SORT, ExecutorOptions(sort_partitions=partitions))
    query = parse_script(SORT).query
    want = list(run_eowc(query, log, RW))
    assert Counter(e.row for e in run.emissions) == Counter(e.row for e in want)
    assert len(run.emissions) == 300  # the row at 30 s waits (W = 29 s)
    extent = OrderedExtent()
    assert ordered(query, RW, run.emissions, extent) is None
    assert len(extent.partitions) == partitions and extent.rows == 300
    if partitions == 1:
        assert len(set(tasks)) == 1
        times = [e.row[2] for e in run.emissions]
        assert times == sorted(times)  # one total order
    else:
        assert len(set(tasks)) >= 6, Counter(tasks)
