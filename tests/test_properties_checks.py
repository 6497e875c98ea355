"""The property checks of verify/properties.py: the reference and the in-process executors
pass them on generated logs, and each deliberately broken executor (a mutant) is caught by the
property it breaks, with a message naming the epoch and the rows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import run_eowc, watermark_sequence
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import Query
from eowc.semantics.rules.triggers import Convention
from eowc.verify.executors import Case, InProcessExecutor, ReferenceExecutor, time_resolution
from eowc.verify.generators import (
    BASE_TIME,
    LogShape,
    arrival_logs,
    moved_past_watermark,
    same_input_variant,
)
from eowc.verify.properties import (
    append_only,
    check_all,
    deterministic,
    exact_and_timely,
    ordered,
)
from tests.mutants import (
    AssumesSortedEpochs,
    DropsEqualTimestamps,
    DuplicatesAfterRestart,
    EarlyByOneEpoch,
    Unordered,
)
from tests.strategies import script_once

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
QUERIES = {
    "sort": "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE",
    "tumble": ("SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
               "FROM TUMBLE(bids, ts, INTERVAL '5' SECOND) "
               "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE"),
}
S = 1_000_000


def query(name: str) -> Query:
    return script_once(SOURCE + QUERIES[name]).query


def case(name: str, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
         restart_after: tuple[int, ...] = ()) -> Case:
    return Case(SOURCE + QUERIES[name], convention, log, restart_after)


def bids(*epochs: list[tuple[int, int, int]]) -> ArrivalLog:
    """Epochs of (auction, price, seconds after BASE_TIME) rows."""
    return ArrivalLog(tuple(tuple(Event("bids", (a, p, BASE_TIME + t * S)) for a, p, t in epoch)
                            for epoch in epochs))


#: Rows at 1 s (twice), 3 s, then 9 s and 12 s: the watermark passes 3 s after epoch 1.
LOG = bids([(1, 10, 1), (2, 20, 1), (1, 5, 3)], [(1, 7, 9)], [(2, 1, 12)])


@pytest.mark.parametrize("executor", [ReferenceExecutor(), InProcessExecutor()],
                         ids=lambda e: e.name)
@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("convention", list(Convention))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_correct_executors_pass_every_property(executor, name: str, convention: Convention,
                                               data: st.DataObject) -> None:
    q = query(name)
    unit = time_resolution(executor)  # the in-process executors keep milliseconds
    log = data.draw(arrival_logs(q.source, convention, LogShape(rows=15, late=2, edges=2, unit=unit)))
    restart = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0)), max_size=2))
    variant = data.draw(same_input_variant(log, q.source, convention))
    assert check_all(executor, case(name, log, convention, tuple(sorted(restart))),
                     variant) == []


def test_emitting_one_epoch_early_is_caught_as_not_timely() -> None:
    violations = check_all(EarlyByOneEpoch, case("sort", LOG))
    assert [v.prop for v in violations] == ["exact and timely"]
    assert violations[0].epoch == 0
    assert "extra (emitted too soon or wrongly)" in violations[0].message


def test_dropping_rows_with_equal_timestamps_is_caught_as_missing() -> None:
    violations = check_all(DropsEqualTimestamps, case("sort", LOG))
    assert [v.prop for v in violations] == ["exact and timely"]
    assert "missing" in violations[0].message
    assert "(2, 20, '2023-11-14 22:13:21')" in violations[0].message  # external form


def test_duplicating_after_a_restart_is_caught_three_ways() -> None:
    q = query("sort")
    emissions = DuplicatesAfterRestart.emissions(case("sort", LOG, restart_after=(1,)))
    reference = list(run_eowc(q, LOG, Convention.RISINGWAVE))
    assert append_only(emissions, reference) is not None
    assert append_only(emissions, reference).prop == "append-only"
    violations = check_all(DuplicatesAfterRestart, case("sort", LOG, restart_after=(1,)))
    assert [v.prop for v in violations] == ["consistent after recovery"]
    assert violations[0].epoch == 2


def test_rows_out_of_order_are_caught() -> None:
    q = query("sort")
    emissions = Unordered.emissions(case("sort", LOG))
    violation = ordered(q, Convention.RISINGWAVE, emissions)
    assert violation is not None and violation.prop == "ordered"


def test_a_failure_names_the_watermark_in_force() -> None:
    q = query("tumble")
    reference = list(run_eowc(q, LOG, Convention.SPARK))
    watermarks = watermark_sequence(q, LOG, Convention.SPARK)
    violation = exact_and_timely(reference[1:], reference, watermarks)
    assert violation is not None
    assert violation.epoch == reference[0].epoch
    assert "watermark after the epoch 2023-11-14 22:13:27" in violation.message  # 9 s - 2 s


def test_an_executor_that_depends_on_arrival_order_within_an_epoch_is_caught() -> None:
    variant = ArrivalLog((tuple(reversed(LOG.epochs[0])),) + LOG.epochs[1:])
    assert check_all(AssumesSortedEpochs, case("sort", LOG)) == []  # right on sorted epochs
    violations = check_all(AssumesSortedEpochs, case("sort", LOG), variant)
    assert [v.prop for v in violations] == ["deterministic"]
    violation = violations[0]
    assert violation.epoch == 1  # the rows at 1 s come out when the watermark reaches 9 s - 2 s
    assert violation.message.startswith("a log with the same INPUT: exact and timely")
    assert violation.case is not None and violation.case.log == variant  # the counterexample


def test_a_row_moved_past_the_watermark_is_told_apart() -> None:
    """Determinism tested the other way: a log whose INPUT differs (a row moved past the
    watermark) must not pass for the same, and the check says where."""
    moved = moved_past_watermark(LOG, query("tumble").source, 0)  # (1, 10) at 1 s, to epoch 2
    assert moved is not None and moved.epochs[2][-1] == LOG.epochs[0][0]
    executor = InProcessExecutor()
    violation = deterministic(executor.emissions(case("tumble", LOG)),
                              executor.emissions(case("tumble", moved)), "the two logs")
    assert violation is not None and violation.epoch == 1  # window [0 s, 5 s) closes at 7 s
    assert check_all(executor, case("tumble", moved)) == []  # each is right about its own INPUT
