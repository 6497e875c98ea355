"""The join executor (executors/joins.py: joins and UNION ALL) on the in-process driver: the
same rows in the same epochs, in the same order, and the same late rows as the reference after
every epoch, under every convention, through restarts; what it refuses; state that stays
bounded; an idle side.

The logs are tests/test_joins.py's two-source logs (whole milliseconds: the driver models
Spark's millisecond watermark)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executors.driver import run_in_process
from executors.joins import EowcJoin
from executors.processors import processor_for
from semantics.arrival import ArrivalLog, Event
from semantics.errors import PlanError
from semantics.interpreter import LateRow, run_eowc
from semantics.triggers import Convention
from tests.test_joins import QUERIES, at, query, two_source_logs

RUN = sorted(name for name in QUERIES if name.startswith(("interval", "window")) or
             name == "union")
REFUSED = {"aggregates_left": "a join or union of a subquery",
           "union_tumble": "a join or union under an aggregate"}


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", RUN)
@settings(max_examples=40, deadline=None)
@given(log=two_source_logs(), data=st.data())
def test_the_join_executor_equals_the_reference_after_every_epoch(
        name: str, convention: Convention, log: ArrivalLog, data: st.DataObject) -> None:
    late: list[LateRow] = []
    expected = list(run_eowc(query(name), log, convention, close=True, late=late.append))
    run = run_in_process(query(name), log, convention, close=True)
    assert run.emissions == expected
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    assert run_in_process(query(name), log, convention, close=True,
                          restart_after=restarts).emissions == expected


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_join_executor_does_not_run_yet_is_refused_by_name(name: str) -> None:
    with pytest.raises(PlanError, match=REFUSED[name]):
        processor_for(query(name), Convention.SPARK)
    assert isinstance(processor_for(query("interval_FULL"), Convention.SPARK), EowcJoin)


def test_an_outer_row_of_an_idle_side_waits_for_the_other_sides_watermark() -> None:
    """LEFT join, a.ts BETWEEN b.ts - 2 s AND b.ts + 4 s. b falls silent after t=0: its
    watermark stays at -5 s, so a's unmatched row at t=10 can still meet a b row with
    b.ts in [6 s, 12 s] and is not emitted, however far a's own watermark moves; the
    semantics says so (an outer row is emitted only when no row can still match it). It
    comes out at the end of the input, or once b's watermark passes 12 s."""
    events = [(Event("b", (at(0), 1, 1)),), (Event("a", (at(10), 2, 5)),)] + \
        [(Event("a", (at(20 + i), 3, i)),) for i in range(5)]
    log = ArrivalLog(tuple(events))
    unmatched = (at(10), None, 2, 5, None)
    open_run = run_in_process(query("interval_LEFT"), log, Convention.RISINGWAVE)
    assert unmatched not in [e.row for e in open_run.emissions]
    closed = run_in_process(query("interval_LEFT"), log, Convention.RISINGWAVE, close=True)
    assert (len(log.epochs), unmatched) in [(e.epoch, e.row) for e in closed.emissions]
    moved = ArrivalLog((*log.epochs, (Event("b", (at(30), 9, 0)),)))
    assert (len(log.epochs), unmatched) in [
        (e.epoch, e.row) for e in run_in_process(query("interval_LEFT"), moved,
                                                 Convention.RISINGWAVE).emissions]


def test_join_state_stays_bounded() -> None:
    """3,000 rows, both sides in step, 3 keys: the kept rows and buffered output after 300
    and after 3,000 rows are the same size (bytes, within 10%)."""
    events = []
    for i in range(3_000):
        table = "ab"[i % 2]
        events.append(Event(table, (at(i / 10 - ((i * 7919) % 20) / 10), i % 3, i % 17)))
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    run = run_in_process(query("interval_FULL"), log, Convention.SPARK, measure_bytes=True)
    assert max(run.state_bytes[280:300]) <= max(run.state_bytes[20:40]) * 1.1
    assert len(run.emissions) > 1_000
