"""The busiest task's share and the task rows' file (executors/spark/task_metrics.py), by hand;
the rows themselves come from Spark in tests/spark/test_cluster.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from eowc.executors.spark.task_metrics import (
    TaskRows,
    busiest_share,
    read_task_rows,
    rows_by_executor,
    rows_by_partition,
    write_task_rows,
)

#: Two micro-batches (stages 4 and 6) of a stateful stage with three partitions.
TASKS = [TaskRows("q", 4, 0, "1", "h", 3, 300), TaskRows("q", 4, 1, "2", "h", 4, 100),
         TaskRows("q", 4, 2, "1", "h", 0, 0), TaskRows("q", 6, 0, "2", "h", 2, 500),
         TaskRows("q", 6, 1, "2", "h", 1, 100), TaskRows("q", 6, 2, "1", "h", 0, 0)]


def test_the_busiest_partition_is_summed_over_the_micro_batches() -> None:
    assert rows_by_partition(TASKS) == {0: 5, 1: 5, 2: 0}
    assert busiest_share(TASKS) == 5 / 10  # not 4/7, the busiest task of one batch
    assert rows_by_partition(TASKS, "bytes") == {0: 800, 1: 200, 2: 0}
    assert busiest_share(TASKS, "bytes") == 800 / 1000
    assert rows_by_executor(TASKS) == {"1": 3, "2": 7}
    assert busiest_share([TaskRows("q", 1, p, "1", "h", 1) for p in range(8)]) == 1 / 8


def test_no_rows_is_no_share() -> None:
    with pytest.raises(ValueError, match="no rows"):
        busiest_share([TaskRows("q", 4, 0, "1", "h", 0)])


def test_the_task_rows_file_round_trips(tmp_path: Path) -> None:
    write_task_rows(tmp_path / "rows.json", "app-1", TASKS)
    assert read_task_rows(tmp_path / "rows.json") == ("app-1", TASKS)
