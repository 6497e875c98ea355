"""Real crashes: a run on Spark is killed with SIGKILL (driver Python, JVM and Python workers)
at a chosen point of a chosen micro-batch, restarted on the same checkpoint, and must give
exactly the output of an uninterrupted run and of the reference interpreter: the same
emissions in the same epochs, the same late rows, every batch written once.

Each crash run starts a JVM in a child process (20-100 s on two busy cores), so there are five
of them: the three points on the GroupAgg query (data batch with rows and the settle batch
where the first window closes), a mid-batch crash while timers fire, and the Sort query killed
after its sink in a settle batch that emits. The recovery runs in this test session's Spark (a
driver that did not crash takes the query over from the checkpoint), except for one crash,
recovered in a second child as a restarted process would; the uninterrupted run of each query
runs in this session too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from eowc.executors.spark.adapter import executor_output
from eowc.executors.spark.crash import (
    ENV_VAR,
    BatchRef,
    CheckpointFiles,
    CrashPoint,
    CrashRun,
    CrashSchedule,
    batch_of_epoch,
    batch_ref_of_offset,
    batch_refs,
    checkpoint_reached,
    epoch_of_batch,
    planned_batch,
    run_with_crash,
)
from eowc.executors.spark.runner import collect_run, start_query
from eowc.executors.spark.session import session_setting
from eowc.executors.spark.sink import batch_file, committed_batches, offset_log, read_batches
from eowc.semantics.rules.triggers import Convention
from eowc.verify.spark import CONF_ENV_VAR
from tests.spark.test_executors_on_spark import expected, log_of, write_case

# ---------------------------------------------------------------------------------------------
# Without Spark: the hook, the schedule, batch ids


def test_the_hook_does_nothing_without_a_schedule(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    for point in CrashPoint:
        checkpoint_reached(point, 3)
        checkpoint_reached(point)  # outside a Spark task: not even the batch id is looked up
    # Armed for another point or batch: returns at once, writes no marker.
    marker = tmp_path / "marker"
    monkeypatch.setenv(ENV_VAR, CrashSchedule(CrashPoint.AFTER_SINK, 5).arm(marker))
    checkpoint_reached(CrashPoint.AFTER_SINK, 4)
    checkpoint_reached(CrashPoint.BEFORE_BATCH, 5)
    checkpoint_reached(CrashPoint.MID_BATCH, 5)
    assert not marker.exists()


def test_an_armed_hook_writes_the_marker_and_blocks(tmp_path: Path) -> None:
    """In a process of its own: the matching call writes the marker and never returns."""
    marker = tmp_path / "marker"
    env = dict(os.environ, **{ENV_VAR: CrashSchedule(CrashPoint.AFTER_SINK, 5).arm(marker)})
    code = ("from eowc.executors.spark.crash import CrashPoint, checkpoint_reached\n"
            "checkpoint_reached(CrashPoint.AFTER_SINK, 5)\nprint('returned')\n")
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                             cwd=Path(__file__).parents[2])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=5)
        record = json.loads(marker.read_text(encoding="utf-8"))
        assert record["point"] == "after_sink" and record["batch_id"] == 5
        assert record["pid"] == child.pid
    finally:
        child.kill()
    assert child.wait(timeout=30) == -9
    assert child.stdout is not None and child.stdout.read() == b""


def test_batch_ids_and_epochs() -> None:
    assert [batch_of_epoch(e, s) for e in range(3) for s in (False, True)] == list(range(6))
    assert all(epoch_of_batch(b).batch_id == b for b in range(20))
    assert epoch_of_batch(7) == BatchRef(3, settle=True)
    assert batch_ref_of_offset({"epoch": 2, "settled": False}) == BatchRef(1, settle=False)
    assert batch_ref_of_offset({"epoch": 2, "settled": True}) == BatchRef(1, settle=True)
    assert batch_ref_of_offset({"epoch": 0, "settled": True}) is None  # the initial offset
    # latestOffset(start): after a settle batch the next data batch, after a data batch its
    # settle batch, nothing beyond the available epochs.
    assert planned_batch({"epoch": 0, "settled": True}, 6) == 0
    assert planned_batch({"epoch": 1, "settled": False}, 6) == 1
    assert planned_batch({"epoch": 2, "settled": True}, 6) == 4
    assert planned_batch({"epoch": 6, "settled": True}, 6) is None
    assert planned_batch({"epoch": 2}, 6) == 2  # pacing=epoch
    assert CrashSchedule.parse("after_sink:3") == CrashSchedule(CrashPoint.AFTER_SINK, 3)
    assert CrashSchedule.parse("MID_BATCH:3s") == CrashSchedule(CrashPoint.MID_BATCH, 7)
    assert CrashSchedule.parse("before_batch:1d").batch_id == 2
    for bad in ("after_sink", "explode:3", "mid_batch:x", "mid_batch:-1"):
        with pytest.raises(ValueError):
            CrashSchedule.parse(bad)


# ---------------------------------------------------------------------------------------------
# On Spark


def _outputs_by_batch(workdir: Path) -> dict[int, Counter]:
    """The executor outputs (Emit and Refusal values) of each sink file."""
    return {batch.batch_id: Counter(executor_output(r["_kind"], r["_out"])
                                    for r in batch.rows)
            for batch in read_batches(workdir / "output")}


_UNINTERRUPTED: dict[tuple[str, Convention], Path] = {}


def _uninterrupted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, name: str,
                   convention: Convention) -> Path:
    """The work directory of an uninterrupted run in this session, once per case."""
    if (name, convention) not in _UNINTERRUPTED:
        directory = tmp_path_factory.mktemp(f"uninterrupted-{name}")
        query, events = write_case(directory, name)
        start_query(spark, query, events, convention, directory / "run", close=True)
        _UNINTERRUPTED[name, convention] = directory / "run"
    return _UNINTERRUPTED[name, convention]


MIN_BATCHES_TO_RETAIN = "spark.sql.streaming.minBatchesToRetain"


def _check_the_crash_happened(crash: CrashRun, schedule: CrashSchedule) -> None:
    assert crash.marker["point"] == schedule.point.value
    assert crash.marker["batch_id"] == schedule.batch_id
    assert crash.killed_returncode == -9  # the driver's Python process died of SIGKILL
    killed = {p.comm for p in crash.killed}
    assert "java" in killed, crash.killed
    assert crash.marker["pid"] in {p.pid for p in crash.killed}  # the process that blocked
    n, files = schedule.batch_id, crash.at_kill
    if schedule.point is CrashPoint.BEFORE_BATCH:
        # Planning batch n: its offsets are not logged; the batch before it is committed.
        assert max(files.offsets) == n - 1 and n - 1 in files.commits
    elif schedule.point is CrashPoint.MID_BATCH:
        # Running batch n: its offsets are logged; no sink file, no commit.
        assert max(files.offsets) == n and n not in files.sink and n not in files.commits
        assert n - 1 in files.commits
    else:
        # After the sink of batch n: its file is written, its commit is not.
        assert max(files.offsets) == n and n in files.sink and n not in files.commits


def _check_exactly_once(crash: CrashRun, workdir: Path, baseline: Path, query: str,
                        events: str, convention: Convention, purged: bool = False) -> None:
    out, late = expected(query, events, convention)
    assert out and late, "the case would prove nothing"
    run = crash.run
    uninterrupted = collect_run(log_of(query, events), baseline)
    # The same output as the reference and the uninterrupted run: rows, epochs, order, late.
    assert run.emissions == out == uninterrupted.emissions
    assert Counter(r.event.row for r in run.late) == late
    assert Counter(r.event.row for r in uninterrupted.late) == late
    # Every batch ran once, with the same offsets and watermark, and has exactly one complete
    # sink file holding what the uninterrupted run's file of that batch holds.
    checkpoint = workdir / "checkpoint"
    records = [batch.record for batch in read_batches(workdir / "output")]
    batches = [record.batch_id for record in records]
    assert batches == list(range(len(batches)))
    assert records == [batch.record for batch in read_batches(baseline / "output")]
    if not purged:  # Spark's own bookkeeping holds every batch
        assert [entry.batch_id for entry in offset_log(checkpoint)] == batches
        assert sorted(committed_batches(checkpoint)) == batches
        assert [e.offsets for e in offset_log(checkpoint)] == [r.offsets for r in records]
    assert batch_refs(workdir / "output") == {b: epoch_of_batch(b) for b in batches}
    names = sorted(p.name for p in (workdir / "output").iterdir())
    assert names == [batch_file(workdir / "output", b).name for b in batches]  # no temporary file
    assert _outputs_by_batch(workdir) == _outputs_by_batch(baseline)
    # A sink file written before the crash is kept, not rewritten (same inode).
    after = CheckpointFiles.of(workdir)
    for batch in crash.at_kill.sink:
        assert after.sink_inodes[batch] == crash.at_kill.sink_inodes[batch]


#: Where the query recovers after the kill: a second child process, or this session.
IN_A_CHILD, IN_THIS_SESSION = "child", "session"

CRASHES = [
    # GroupAgg: epoch 1's data batch (rows of two auctions), at each point ...
    ("group_agg", Convention.SPARK, CrashSchedule.at_epoch(CrashPoint.BEFORE_BATCH, 1),
     IN_A_CHILD),
    ("group_agg", Convention.SPARK, CrashSchedule.at_epoch(CrashPoint.MID_BATCH, 1),
     IN_THIS_SESSION),
    # ... its settle batch, where window [-5 s, 5 s) closes (W = 7 s): written, not committed;
    ("group_agg", Convention.SPARK,
     CrashSchedule.at_epoch(CrashPoint.AFTER_SINK, 1, settle=True), IN_THIS_SESSION),
    # (while timers fire, mid-batch of epoch 3's settle batch: the test after this one, whose
    # early offsets Spark has purged)
    # Sort: after the sink of epoch 3's settle batch, which emits the rows up to W = 13 s.
    ("sort", Convention.RISINGWAVE, CrashSchedule.at_epoch(CrashPoint.AFTER_SINK, 3, settle=True),
     IN_THIS_SESSION),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "convention", "schedule", "recovery"), CRASHES,
                         ids=[f"{n}-{s.point.value}-{s.batch_id}-{r}" for n, _, s, r in CRASHES])
def test_a_sigkill_and_restart_give_the_uninterrupted_output(
        spark: SparkSession, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        name: str, convention: Convention, schedule: CrashSchedule, recovery: str) -> None:
    query, events = write_case(tmp_path, name)
    workdir = tmp_path / "run"
    crash = run_with_crash(query, events, convention, workdir, schedule, close=True,
                           recover_in=spark if recovery == IN_THIS_SESSION else None)
    _check_the_crash_happened(crash, schedule)
    assert crash.logs[1].is_file() == (recovery == IN_A_CHILD)
    baseline = _uninterrupted(spark, tmp_path_factory, name, convention)
    _check_exactly_once(crash, workdir, baseline, query, events, convention)
    # The crash hit a batch that matters: a data batch with rows, a settle batch that emits.
    if schedule.ref.settle:
        assert _outputs_by_batch(baseline)[schedule.batch_id]
    else:
        assert log_of(query, events).epochs[schedule.ref.epoch]


@pytest.mark.slow
def test_a_crash_after_spark_purged_the_early_offsets(
        spark: SparkSession, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The crashed child and the recovering session keep only the last 3 offset and commit
    files (Spark's default is 100), so the crash and the recovery happen where the early
    batches' files are gone: the output and its epochs, read from the sink's records, are
    still the uninterrupted run's. The crash hits a group aggregate while its timers fire:
    epoch 3's settle batch (W = 13 s) closes [0 s, 10 s) for two auctions."""
    monkeypatch.setenv(CONF_ENV_VAR, f"{MIN_BATCHES_TO_RETAIN}=3")
    query, events = write_case(tmp_path, "group_agg")
    workdir = tmp_path / "run"
    schedule = CrashSchedule.at_epoch(CrashPoint.MID_BATCH, 3, settle=True)
    with session_setting(spark, MIN_BATCHES_TO_RETAIN, "3"):
        crash = run_with_crash(query, events, Convention.SPARK, workdir, schedule, close=True,
                               recover_in=spark)
    _check_the_crash_happened(crash, schedule)
    assert min(crash.at_kill.offsets) > 0 and min(crash.at_kill.commits) > 0  # purged
    # The recovering session purged too: the earliest offset file left is a later one.
    assert offset_log(workdir / "checkpoint")[0].batch_id > min(crash.at_kill.offsets)
    baseline = _uninterrupted(spark, tmp_path_factory, "group_agg", Convention.SPARK)
    _check_exactly_once(crash, workdir, baseline, query, events, Convention.SPARK, purged=True)
    assert _outputs_by_batch(baseline)[schedule.batch_id]  # the batch emits (its timers fire)
