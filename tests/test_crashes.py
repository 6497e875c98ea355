"""The crash points a Spark run reaches (verify/crashes.py), computed without Spark: every
batch's before_batch and after_sink; mid_batch of a data batch only when a row reaches the
executor, of a settle batch only when a timer fires. (tests/spark/test_verify_spark.py checks
the same rule against Spark's own progress reports.)"""

from __future__ import annotations

from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.rules.triggers import Convention
from eowc.verify.crashes import common_crashes, reachable_crashes
from eowc.verify.executors import Case, Crash
from eowc.verify.generators import BASE_TIME, LogShape, random_arrival_log, random_same_input_variant
from eowc.verify.suite import builtin_targets, generate_case

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
SORT = SOURCE + "SELECT auction, price, ts FROM bids WHERE price > 0 EMIT ON WINDOW CLOSE"
TUMBLE = SOURCE + ("SELECT auction, window_start, count(*) AS n FROM TUMBLE(bids, ts, "
                   "INTERVAL '5' SECOND) GROUP BY auction, window_start EMIT ON WINDOW CLOSE")
SECOND = 1_000_000


def one_row_per_epoch(*rows: tuple[int, int, int]) -> ArrivalLog:
    return ArrivalLog(tuple((Event("bids", row, i + 1),) if row else ()
                            for i, row in enumerate(rows)))


def mids(case: Case) -> list[tuple[int, bool]]:
    return [(c.epoch, c.settle) for c in reachable_crashes(case) if c.point == "mid_batch"]


def test_every_batch_has_a_before_and_an_after_point_in_run_order() -> None:
    log = one_row_per_epoch((1, 5, BASE_TIME), (), (2, 3, BASE_TIME + 9 * SECOND))
    crashes = reachable_crashes(Case(SORT, Convention.SPARK, log))
    assert [c for c in crashes if c.point != "mid_batch"] == [
        Crash(e, point, settle) for e in range(3) for settle in (False, True)
        for point in ("before_batch", "after_sink")]
    order = [(c.epoch, c.settle, ("before_batch", "mid_batch", "after_sink").index(c.point))
             for c in crashes]
    assert order == sorted(order)


def test_a_data_batch_whose_rows_are_filtered_out_has_no_middle() -> None:
    """Epoch 1's row fails ``price > 0``: no key reaches the executor. Epoch 2 moves the
    watermark past the rows of epoch 0 (a timer fires in its settle batch)."""
    log = one_row_per_epoch((1, 5, BASE_TIME), (2, 0, BASE_TIME + SECOND),
                            (3, 7, BASE_TIME + 5 * SECOND))
    assert mids(Case(SORT, Convention.RISINGWAVE, log)) == [(0, False), (2, False), (2, True)]


def test_a_settle_batch_has_a_middle_exactly_when_a_window_closes() -> None:
    """Windows of 5 s, delay 2 s: the row at 8 s closes [0, 5) (watermark 6 s); the row at
    9 s closes nothing new; the row at 13 s closes [5, 10)."""
    log = one_row_per_epoch((1, 1, BASE_TIME), (1, 1, BASE_TIME + 8 * SECOND),
                            (1, 1, BASE_TIME + 9 * SECOND), (1, 1, BASE_TIME + 13 * SECOND))
    settles = [e for e, settle in mids(Case(TUMBLE, Convention.SPARK, log)) if settle]
    assert settles == [1, 3]


def test_a_late_row_still_reaches_the_executor() -> None:
    log = one_row_per_epoch((1, 1, BASE_TIME + 9 * SECOND), (2, 1, BASE_TIME))
    assert (1, False) in mids(Case(TUMBLE, Convention.SPARK, log))


def test_common_crashes_are_reached_on_every_log() -> None:
    source = Case(TUMBLE, Convention.FLINK, ArrivalLog(())).query.source
    for seed in range(20):
        log = random_arrival_log(source, Convention.FLINK, seed)
        case = Case(TUMBLE, Convention.FLINK, log)
        same_input = random_same_input_variant(log, source, Convention.FLINK, seed)
        common = common_crashes(case, [same_input])
        assert set(common) == set(reachable_crashes(case)) & set(
            reachable_crashes(case.with_log(same_input)))
        assert any(c.point == "mid_batch" for c in common)


def test_every_built_in_crash_case_crashes_where_both_logs_reach() -> None:
    """``eowc verify --crash``: each case's crash is reached by the run of its log and by the
    challenger's run on the same-INPUT log (else the Spark crash run cannot be played)."""
    for target in builtin_targets():
        for seed in range(12):
            convention = list(Convention)[seed % 3]
            case, same_input = generate_case(target, convention, seed, LogShape(), crash=True)
            assert case.crash is not None and not case.restart_after
            assert case.crash in reachable_crashes(case)
            assert case.crash in reachable_crashes(case.with_log(same_input))
