"""Composed queries on Spark with a real crash: the composed executor (executors/composed.py:
every stateful operator a stage, one shard keyed ``()`` in ``progress_keys``) inside one
``transformWithStateInPandas``, killed with SIGKILL (driver Python, JVM and Python workers) in
the middle of the data batch where the stages emit, restarted on the same checkpoint, and
compared with the reference interpreter: the same rows in the same epochs, in the same order,
and the same late rows.

The cases: a cascade of window aggregates (docs/examples/composed/cascade.sql), a window TopN
over a window aggregate (top_n_over_aggregate.sql) and seed 004's job (two CUMULATE aggregates,
their LEFT window join and a window TopN: seed004_job_fixed.sql). Each crash run starts a JVM
in a child process (20-100 s on two busy cores); the query recovers in this session's Spark.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from eowc.executors.spark.crash import CrashPoint, CrashSchedule, run_with_crash
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.rules.triggers import Convention

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

#: (query, events, convention, the epoch whose data batch is killed mid-batch: one where the
#: upper stage emits, so the crash lands between the stages' state changes and the sink).
CASES = {
    # 1-minute delay; epoch 2 (08:11) closes [08:05, 08:10) and with it the 10-minute window
    # [08:00, 08:10) of the five-minute windows' window_time.
    "cascade": ("composed/cascade.sql", "composed/cascade.jsonl", Convention.SPARK, 2),
    # epoch 1 (08:08, 08:11: W 08:10) closes [08:00, 08:10): the TopN ranks its items.
    "top_n_over_aggregate": ("composed/top_n_over_aggregate.sql", "composed/item_bids.jsonl",
                             Convention.RISINGWAVE, 1),
    # epoch 1 (W 00:11:55) closes the CUMULATE window [00:00, 00:10) on both aggregates, the
    # window join pairs them and the TopN ranks them.
    "seed004_job": ("seed004_job_fixed.sql", "seed004_orders.jsonl", Convention.FLINK, 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_composed_query_killed_mid_batch_gives_the_reference_output(
        spark: SparkSession, tmp_path: Path, name: str) -> None:
    query_file, events_file, convention, epoch = CASES[name]
    query, events = str(EXAMPLES / query_file), str(EXAMPLES / events_file)
    script = parse_script(Path(query).read_text(encoding="utf-8"))
    log = load_arrival_log(events, script.sources).log
    late: list[LateRow] = []
    expected = list(run_eowc(script.query, log, convention, close=True, late=late.append))
    assert any(e.epoch == epoch for e in expected), "the crashed batch emits nothing"
    schedule = CrashSchedule.at_epoch(CrashPoint.MID_BATCH, epoch)
    crash = run_with_crash(query, events, convention, tmp_path / "run", schedule, close=True,
                           recover_in=spark)
    assert crash.marker["point"] == "mid_batch" and crash.marker["batch_id"] == schedule.batch_id
    assert crash.killed_returncode == -9 and "java" in {p.comm for p in crash.killed}
    assert schedule.batch_id not in crash.at_kill.sink  # killed before its output was written
    assert crash.run.emissions == expected
    assert Counter(r.event.row for r in crash.run.late) == Counter(r.event.row for r in late)
