"""The Spark executors behind verify's Executor protocol (verify/spark.py): the eowc executors
on Spark and Spark's own operators pass check_all on generated logs with late rows, across
shuffle partition counts, restarts and a real SIGKILL; and the crash points reachable_crashes
claims are the ones a run reaches.

Each Spark run of these logs takes 10-30 s on two busy cores and a crash run 60-110 s, so the
cases are few: a GroupAgg (TUMBLE) case with restarts, a Sort case with a mid-batch crash and
a restart after it, a crash where nothing happens (the settle batch of a trailing empty epoch)
after a restart, and native Spark with a restart. The queries and the source are those of
tests/test_properties_checks.py.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import eowc.verify.spark as verify_spark
from eowc.executors.plan import ExecutorOptions
from eowc.executors.spark import crash as crash_module
from eowc.executors.spark import runner
from eowc.executors.spark.adapter import eowc_stream
from eowc.executors.spark.sink import committed_batches, offset_log, read_batches
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, parse_arrival_log
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import QueryRefused
from eowc.verify.cli.main import main
from eowc.verify.crashes import reachable_crashes
from eowc.verify.executors import Case, Crash
from eowc.verify.generators import BASE_TIME, random_same_input_variant
from eowc.verify.properties import check_all, partition_of
from eowc.verify.spark import (
    NotSparkConvention,
    SparkExecutor,
    SparkNativeExecutor,
)

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
QUERIES = {
    "sort": "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE",
    "tumble": ("SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
               "FROM TUMBLE(bids, ts, INTERVAL '5' SECOND) "
               "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE"),
}
#: (query, convention, log): 12-row logs with a late row, emissions in three epochs and
#: trailing empty epochs (epoch sizes 3 2 4 3 0 0 and 2 2 5 3 0), made by the seeded generator
#: before it took its time scale from the query (seeds 6 and 5); the tests below depend on
#: their exact epochs and crash points.
LOGS = {
'tumble': """\
{"table": "bids", "row": {"auction": 2, "price": 1, "ts": "2023-11-14 22:13:20"}}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:23"}}
{"table": "bids", "row": {"auction": 1, "price": null, "ts": "2023-11-14 22:13:26"}}
{"barrier": true}
{"table": "bids", "row": {"auction": 3, "price": 2, "ts": "2023-11-14 22:13:26.999000"}}
{"table": "bids", "row": {"auction": 1, "price": 2, "ts": "2023-11-14 22:13:28.999000"}}
{"barrier": true}
{"table": "bids", "row": {"auction": 2, "price": 1, "ts": "2023-11-14 22:13:28"}}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:44"}}
{"table": "bids", "row": {"auction": 2, "price": 1, "ts": "2023-11-14 22:13:45.500000"}}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:46.999000"}}
{"barrier": true}
{"table": "bids", "row": {"auction": null, "price": null, "ts": "2023-11-14 22:13:48"}}
{"table": "bids", "row": {"auction": 3, "price": 1, "ts": "2023-11-14 22:13:49"}}
{"table": "bids", "row": {"auction": 2, "price": 1, "ts": "2023-11-14 22:13:37.999000"}}
{"barrier": true}
{"barrier": true}
{"barrier": true}
""",
'sort': """\
{"table": "bids", "row": {"auction": null, "price": 1, "ts": "2023-11-14 22:13:26"}}
{"table": "bids", "row": {"auction": null, "price": 3, "ts": "2023-11-14 22:13:28"}}
{"barrier": true}
{"table": "bids", "row": {"auction": 3, "price": 3, "ts": "2023-11-14 22:13:32"}}
{"table": "bids", "row": {"auction": 2, "price": 1, "ts": "2023-11-14 22:13:24"}}
{"barrier": true}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:37"}}
{"table": "bids", "row": {"auction": null, "price": 3, "ts": "2023-11-14 22:13:40"}}
{"table": "bids", "row": {"auction": null, "price": 1, "ts": "2023-11-14 22:13:42"}}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:41"}}
{"table": "bids", "row": {"auction": 2, "price": 1, "ts": "2023-11-14 22:13:42"}}
{"barrier": true}
{"table": "bids", "row": {"auction": 2, "price": 3, "ts": "2023-11-14 22:13:43.999000"}}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:49.500000"}}
{"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-11-14 22:13:50"}}
{"barrier": true}
{"barrier": true}
""",
}
CASES = {"tumble": ("tumble", Convention.SPARK), "sort": ("sort", Convention.RISINGWAVE)}


def make_case(name: str, **disruptions: Any) -> Case:
    query, convention = CASES[name]
    script = SOURCE + QUERIES[query]
    sources = parse_script(script).sources
    log = parse_arrival_log(LOGS[name].splitlines(), sources).log
    case = Case(script, convention, log, **disruptions)
    late: list = []
    assert list(run_eowc(case.query, log, convention, late=late.append)), "it would prove nothing"
    assert late, "no late row: the late check would not be exercised"
    return case


def same_input_log(case: Case, seed: int) -> ArrivalLog:
    return random_same_input_variant(case.log, case.query.source, case.convention, seed)


@pytest.fixture
def kept_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, Path]]:
    """Keep every case's work directory (in ``tmp_path``): ``(executor name, directory)`` in
    the order the runs start."""
    runs: list[tuple[str, Path]] = []

    @contextlib.contextmanager
    def kept(executor: str, case: Case) -> Iterator[Path]:
        directory = Path(tempfile.mkdtemp(prefix="case-", dir=tmp_path))
        runs.append((executor, directory))
        yield directory

    monkeypatch.setattr(verify_spark, "_case_directory", kept)
    return runs


def _calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[tuple[tuple, dict]]:
    """Record the calls of ``module.name`` (still calling it); a call of
    :func:`~eowc.executors.spark.runner.start_query` also records the last batch committed when
    it returned, under ``"committed"``."""
    calls: list[tuple[tuple, dict]] = []
    original = getattr(module, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if name == "start_query":
            kwargs = {**kwargs, "committed": max(committed_batches(args[4] / "checkpoint"))}
        calls.append((args, kwargs))
        return result

    monkeypatch.setattr(module, name, recording)
    return calls


def _shuffle_partitions(workdir: Path) -> set[str]:
    return {entry.conf["spark.sql.shuffle.partitions"]
            for entry in offset_log(workdir / "run" / "checkpoint")}


# ---------------------------------------------------------------------------------------------
# check_all: the uninterrupted run, then the variant on a same-INPUT log, disrupted as the case


def test_group_agg_passes_check_all_across_partitions_and_restarts(
        spark, kept_runs: list[tuple[str, Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    starts = _calls(monkeypatch, runner, "start_query")
    case = make_case("tumble", restart_after=(1, 3))
    same_input = same_input_log(case, 3)
    assert len(same_input.epochs) > len(case.log.epochs)  # re-batched, not only reordered
    assert check_all(SparkExecutor(), case, same_input) == []
    # The uninterrupted run on 2 shuffle partitions, the challenger on 5 (and 3 source
    # partitions), stopped after epochs 1 and 3 with their settle batches (3, 7) committed.
    assert [name for name, _ in kept_runs] == ["spark", "spark[shuffle=5,partitions=3]"]
    assert [_shuffle_partitions(directory) for _, directory in kept_runs] == [{"2"}, {"5"}]
    last, last_variant = 2 * len(case.log.epochs) - 1, 2 * len(same_input.epochs) - 1
    assert [(kw["max_epochs"], kw["partitions"], kw["committed"]) for _, kw in starts] == [
        (None, None, last), (2, 3, 3), (4, 3, 7), (None, 3, last_variant)]
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # restored after the variant


def test_sort_passes_check_all_with_a_real_mid_batch_crash_and_a_restart_after_it(
        spark, kept_runs: list[tuple[str, Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The challenger is killed with SIGKILL while timers fire in epoch 2's settle batch,
    recovers, is stopped after epoch 3 (the crash run was given the log up to epoch 3) and
    started again in this session to the end; the crashed run ran on 5 shuffle partitions."""
    crash = Crash(2, "mid_batch", settle=True)
    case = make_case("sort", restart_after=(3,), crash=crash)
    same_input = same_input_log(case, 1)
    assert crash in reachable_crashes(case) and crash in reachable_crashes(case.with_log(same_input))
    crashes = _calls(monkeypatch, crash_module, "run_with_crash")
    assert check_all(SparkExecutor(), case, same_input) == []
    [(args, _)] = crashes
    assert args[4] == crash_module.CrashSchedule(crash_module.CrashPoint.MID_BATCH, 5)
    assert Path(args[1]).name == "events-to-epoch-3.jsonl"
    assert [_shuffle_partitions(directory) for _, directory in kept_runs] == [{"2"}, {"5"}]


# ---------------------------------------------------------------------------------------------
# Reachable crash points


@pytest.mark.parametrize("name", list(CASES))
def test_reachable_crash_points_are_the_batches_that_reach_them(spark, tmp_path: Path,
                                                                name: str) -> None:
    """Against an uninterrupted run: every batch has an offset file (its latestOffset, where
    before_batch is, planned it) and a sink file (after_sink follows the write); a settle batch
    is claimed for mid_batch exactly when a timer fired in it (Spark counts a fired timer as a
    deleted one; the executors delete no timer themselves in a settle batch); a data batch
    exactly when rows of the table arrived (no WHERE: each reaches the executor)."""
    case = make_case(name)
    query, events = verify_spark._write_case(case, tmp_path)
    frame = runner.arrival_frame(spark, query, events, "bids")
    outputs = eowc_stream(frame, case.script, case.convention).select("_kind", "_out")
    running = runner.start_epoch_sink(outputs, tmp_path / "run")
    running.awaitTermination()
    progress = {p.batchId: p for p in running.recentProgress}
    batches = list(range(2 * len(case.log.epochs)))
    assert [e.batch_id for e in offset_log(tmp_path / "run" / "checkpoint")] == batches
    assert [b.batch_id for b in read_batches(tmp_path / "run" / "output")] == batches
    assert sorted(progress) == batches

    def reached(batch: int) -> bool:
        if batch % 2:
            return progress[batch].stateOperators[0].customMetrics["numDeletedTimers"] > 0
        return progress[batch].numInputRows > 0

    claimed = reachable_crashes(case)
    for point in ("before_batch", "after_sink"):
        assert sorted(c.epoch * 2 + c.settle for c in claimed if c.point == point) == batches
    assert [c.epoch * 2 + c.settle for c in claimed if c.point == "mid_batch"] == [
        b for b in batches if reached(b)]
    assert any(b % 2 and reached(b) for b in batches) and any(b % 2 and not reached(b) for b in batches)


def test_a_crash_after_the_sink_of_an_empty_settle_batch_is_reached(
        spark, kept_runs: list[tuple[str, Path]]) -> None:
    """The last epoch is empty: its settle batch has no row and fires no timer, and still
    reaches after_sink (the sink writes an empty file). The variant, restarted after epoch 1
    in this session, is killed there and recovers: the output is the reference's."""
    case = make_case("tumble")
    last = len(case.log.epochs) - 1
    assert not case.log.epochs[last]
    crash = Crash(last, "after_sink", settle=True)
    assert crash in reachable_crashes(case)
    assert Crash(last, "mid_batch", settle=True) not in reachable_crashes(case)
    crashed = Case(case.script, case.convention, case.log, restart_after=(1,), crash=crash)
    reference = list(run_eowc(case.query, case.log, case.convention))
    assert SparkExecutor().variant().emissions(crashed) == reference
    assert [_shuffle_partitions(directory) for _, directory in kept_runs] == [{"5"}]


def test_mid_batch_of_a_data_batch_whose_rows_are_all_filtered_out_is_not_reached(spark) -> None:
    """Epoch 1's one row fails the WHERE clause, so no key reaches the executor and the run
    never reaches mid_batch of that data batch: the crash run fails, and the work directory,
    with the children's logs, is kept and named."""
    script = SOURCE + "SELECT auction, price, ts FROM bids WHERE price > 0 EMIT ON WINDOW CLOSE"
    rows = [(1, 5, BASE_TIME), (2, 0, BASE_TIME + 1_000_000), (3, 7, BASE_TIME + 5_000_000)]
    log = ArrivalLog(tuple((Event("bids", row, i + 1),) for i, row in enumerate(rows)))
    case = Case(script, Convention.RISINGWAVE, log)
    mids = [(c.epoch, c.settle) for c in reachable_crashes(case) if c.point == "mid_batch"]
    assert mids == [(0, False), (2, False), (2, True)]
    with pytest.raises(verify_spark.SparkCaseError) as failed:
        SparkExecutor().emissions(Case(script, Convention.RISINGWAVE, log, crash=Crash(1)))
    workdir = failed.value.workdir
    try:
        assert str(workdir) in str(failed.value)
        assert "exited with code 0 before mid_batch of batch 2" in str(failed.value)
        assert (workdir / "query.sql").read_text(encoding="utf-8") == script
        assert (workdir / "run" / "crash-child-1.log").is_file()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Spark's own operators


def test_native_spark_passes_check_all_on_a_group_agg_with_a_restart(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    case = make_case("tumble", restart_after=(2,))
    assert SparkNativeExecutor().variant().name == "spark-native[shuffle=5]"
    assert check_all(SparkNativeExecutor(), case, same_input_log(case, 3)) == []
    assert not list(tmp_path.glob("eowc-verify-*"))  # the work directories of passed runs are gone


def test_native_spark_refuses_another_convention_and_a_query_it_has_no_operator_for() -> None:
    tumble = make_case("tumble")
    other = Case(tumble.script, Convention.RISINGWAVE, tumble.log)
    with pytest.raises(NotSparkConvention, match="risingwave convention") as refused:
        SparkNativeExecutor().emissions(other)
    assert isinstance(refused.value, ValueError)
    sort = make_case("sort")
    with pytest.raises(QueryRefused, match="EOWC sort"):  # verify reports it not run, goes on
        SparkNativeExecutor().emissions(Case(sort.script, Convention.SPARK, sort.log))
    with pytest.raises(ValueError, match="cannot be crashed"):
        SparkNativeExecutor().emissions(Case(tumble.script, Convention.SPARK, tumble.log,
                                             crash=Crash(1)))


# ---------------------------------------------------------------------------------------------
# --sort-partitions


def test_the_sort_runs_on_the_partitions_verify_asks_for_restarts_and_crash_included(
        spark, monkeypatch: pytest.MonkeyPatch) -> None:
    """``eowc verify --executor spark --sort-partitions 1``: the emissions of a run with a
    restart name one partition, the default's several (bids has no primary key: a row's
    partition is a bucket of the whole row), and a crash run's children are started with it."""
    case = make_case("sort", restart_after=(1,))
    one = SparkExecutor()
    one.options = ExecutorOptions(sort_partitions=1)
    partitions = {partition_of(e) for e in one.emissions(case)}
    assert partitions == {0}
    assert len({partition_of(e) for e in SparkExecutor().emissions(case)}) > 1
    assert one.variant().options == one.options
    command = crash_module._child_command("q.sql", "e.jsonl", Convention.SPARK, Path("w"), False,
                                          "local[2]", None, one.options)
    assert command[command.index("--sort-partitions") + 1] == "1"


def test_the_command_line_takes_sort_partitions_for_the_spark_executor(tmp_path: Path) -> None:
    query = tmp_path / "sort.sql"
    query.write_text(SOURCE + QUERIES["sort"] + ";\n", encoding="utf-8")
    # One case without restarts or crashes (the test above runs those with the option): the
    # verification is incomplete (exit 4), but every property it checked held.
    result = CliRunner().invoke(main, ["verify", str(query), "--executor", "spark",
                                       "--sort-partitions", "1", "--cases", "1",
                                       "--no-disruptions", "--out", str(tmp_path / "out")])
    assert result.exit_code == 4, result.output
    assert "every property held (1 case" in result.output
    refused = CliRunner().invoke(main, ["verify", str(query), "--executor", "spark-native",
                                        "--sort-partitions", "1", "--cases", "1"])
    assert refused.exit_code == 2 and "--sort-partitions partitions the EOWC sort" in refused.output
