"""Hypothesis properties of EMIT ON WINDOW CLOSE (seed 001, Definitions 1-5; SEMANTICS.md §1-§3).

Every property runs for the three boundary conventions and for four queries: a TUMBLE, a HOP
and a CUMULATE window aggregation, and the EOWC sort (a plain SELECT ... EMIT ON WINDOW CLOSE).

1. Bounded disorder: if no row is late, the final output (``close=True``) is a function of the
   *set* of rows, not of their arrival order or of the epoch boundaries.
2. Append-only: the output after epoch ``e`` is a prefix of the output after ``e + 1``, and no
   row is emitted more often than ``Q(INPUT)`` holds it.
3. Eventual consistency (Definition 3): after ``close`` the output is ``Q(INPUT)``; before it,
   ``Q(INPUT)`` restricted to the results whose window is closed (time is complete).
4. Emission order: window aggregates emit in non-decreasing ``window_end``; the sort emits in
   non-decreasing ``ts`` (ties by the whole row).
5. Late rows (Definition 1) never change the output and are all reported through ``late``.
6. At the boundary (rows at ``W``, ``W +- 1 us``, ``W +- 1 ms``) exactly the rows that the
   convention's rule calls late are reported (SEMANTICS.md §3).

The oracles below (watermark, late, closed) are written from SEMANTICS.md §1 and §3, not taken
from :mod:`eowc.semantics.rules.triggers`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import Emission, LateRow, run_eowc, run_update, snapshots
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import MICROS_PER_MILLI, MICROS_PER_SECOND, row_sort_key
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.rules.triggers import Convention
from tests.disorder import (
    TS,
    boundary_injections,
    bounded_disorder,
    epoch_cuts,
    events_of,
    in_order_rows,
    inversions,
    late_injections,
    max_lag,
    watermarks_after,
)
from tests.strategies import arrival_logs, script

DELAY = 5  # seconds: WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
SECOND = MICROS_PER_SECOND


@dataclass(frozen=True)
class Case:
    """A query with what the oracles need to know about its output rows.

    ``bound`` is the output position of ``window_end`` (window aggregates) or ``ts`` (sort);
    ``count`` the position of ``count(*)``; ``window`` the TVF's windows (None for the sort).
    """

    sql: str
    bound: int
    count: int | None
    window: WindowSpec | None

    @property
    def query(self) -> Query:
        return script(self.sql, DELAY).query


CASES = {
    "tumble": Case(
        "SELECT window_start, window_end, count(*) AS n, sum(price) AS s, max(price) AS hi, "
        "first_value(price) AS f, last_value(price) AS l "
        "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end "
        "EMIT ON WINDOW CLOSE",
        bound=1, count=2, window=WindowSpec(WindowKind.TUMBLE, 10 * SECOND)),
    "hop": Case(
        "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
        "FROM HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) "
        "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
        bound=2, count=3, window=WindowSpec(WindowKind.HOP, 15 * SECOND, 5 * SECOND)),
    "cumulate": Case(
        "SELECT window_start, window_end, count(*) AS n, min(price) AS lo FROM "
        "TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '4' SECOND, INTERVAL '12' SECOND)) "
        "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
        bound=1, count=2, window=WindowSpec(WindowKind.CUMULATE, 12 * SECOND, 4 * SECOND)),
    "sort": Case("SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE",
                 bound=2, count=None, window=None),
    # A sort over a window TVF: no aggregate, so the late check is on the row (window=None).
    "tvf_sort": Case("SELECT auction, price, ts, window_end FROM "
                     "TUMBLE(bids, ts, INTERVAL '10' SECOND) EMIT ON WINDOW CLOSE",
                     bound=2, count=None, window=None),
}

NAMES = sorted(CASES)
CONVENTIONS = list(Convention)

FAST = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# ---------------------------------------------------------------- oracles (SEMANTICS.md §3)

def window_closed(end: int, watermark: float, convention: Convention) -> bool:
    """``[s, e)`` is closed: ``e <= W`` (RisingWave, Spark), ``W >= e - 1 ms`` (Flink)."""
    if convention is Convention.FLINK:
        return watermark >= end - MICROS_PER_MILLI
    return end <= watermark


def time_complete(t: int, watermark: float, convention: Convention) -> bool:
    """RisingWave keeps rows equal to W (complete below it); Spark and Flink drop them."""
    return t < watermark if convention is Convention.RISINGWAVE else t <= watermark


def result_closed(case: Case, row: Row, watermark: float, convention: Convention) -> bool:
    """The result row's trigger holds at ``watermark``."""
    if case.window is None:
        return time_complete(row[case.bound], watermark, convention)
    return window_closed(row[case.bound], watermark, convention)


def late_oracle(case: Case, convention: Convention) -> Callable[[int, float], bool]:
    """A source row of time ``t`` is late under ``W``: RisingWave judges the row (``t < W``);
    Spark and Flink judge a windowed row per window (late iff all its windows are closed)."""
    def is_late(t: int, watermark: float) -> bool:
        if convention is Convention.RISINGWAVE or case.window is None:
            return time_complete(t, watermark, convention)
        return all(window_closed(w.end, watermark, convention) for w in case.window.windows_of(t))
    return is_late


def marks(log: ArrivalLog, convention: Convention) -> list[float]:
    return watermarks_after(log, DELAY, truncate_to_ms=convention is Convention.SPARK)


def largest_lag(convention: Convention) -> int:
    """The tight disorder bound of the convention (tests.disorder.max_lag): with it, a row can
    arrive exactly at the watermark, which RisingWave keeps."""
    return max_lag(DELAY, keeps_rows_equal_to_watermark=convention is Convention.RISINGWAVE)


def rows_of(emissions: list[Emission]) -> Counter[Row]:
    return Counter(e.row for e in emissions)


def q_of_input(query: Query, log: ArrivalLog, convention: Convention) -> Counter[Row]:
    """``Q(INPUT)`` after the last epoch, from the emit-on-update changelog."""
    changes = list(run_update(query, log, convention))
    return Counter(snapshots(changes, len(log.epochs))[-1]) if log.epochs else Counter()


def expected_count_total(case: Case, row_list: list[Row]) -> int:
    """``sum(count(*))`` over all windows when every row is in INPUT: each row once per
    window holding it."""
    assert case.window is not None
    return sum(len(case.window.windows_of(r[TS])) for r in row_list)


# ---------------------------------------------------------------- 1. bounded disorder

@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.value)
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_final_output_does_not_depend_on_bounded_disorder_or_epochs(name: str, convention: Convention,
                                                                    data: st.DataObject) -> None:
    """No row late => the closed output is the same for every arrival order and epoch cut."""
    case = CASES[name]
    query = case.query
    row_list = data.draw(in_order_rows(), label="in-order rows")
    events = events_of(row_list)
    base = data.draw(epoch_cuts(events), label="in-order log")
    late: list[LateRow] = []
    expected = rows_of(list(run_eowc(query, base, convention, close=True, late=late.append)))
    assert late == []
    # Not vacuous: every row is in INPUT and reaches the output.
    if case.window is None:
        assert sum(expected.values()) == len(row_list)
    else:
        assert case.count is not None
        assert sum(r[case.count] * n for r, n in expected.items()) == \
            expected_count_total(case, row_list)
    for i in range(2):
        variant = data.draw(bounded_disorder(events, largest_lag(convention)), label=f"variant {i}")
        late = []
        got = rows_of(list(run_eowc(query, variant, convention, close=True, late=late.append)))
        assert late == [], "the variant's disorder stays within the delay, so no row may be late"
        assert got == expected


def test_bounded_disorder_strategy_really_reorders() -> None:
    """The variants of test 1 do reorder rows (the property is not vacuous): over a fixed
    (derandomized) sample, a good share of variants has rows out of event-time order."""
    lag = largest_lag(Convention.SPARK)
    strategy = in_order_rows().flatmap(lambda rs: bounded_disorder(events_of(rs), lag))
    seen: list[tuple[int, int]] = []

    @settings(max_examples=100, derandomize=True, database=None, phases=[Phase.generate],
              deadline=None)
    @given(strategy)
    def sample(log: ArrivalLog) -> None:
        seen.append((inversions(log), sum(map(bool, log.epochs))))

    sample()
    disordered = [n for n, epochs in seen if n > 0 and epochs >= 2]
    assert len(disordered) >= len(seen) // 5, f"only {len(disordered)} of {len(seen)} reordered"


# ---------------------------------------------------------------- 2. append-only

@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.value)
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(log=arrival_logs())
def test_output_is_append_only(name: str, convention: Convention, log: ArrivalLog) -> None:
    """Running on the first ``e + 1`` epochs emits a prefix of the run on ``e + 2`` epochs."""
    query = CASES[name].query
    full = list(run_eowc(query, log, convention))
    epochs = [e.epoch for e in full]
    assert epochs == sorted(epochs)
    previous: list[Emission] = []
    for e in range(len(log.epochs)):
        prefix = list(run_eowc(query, ArrivalLog(log.epochs[:e + 1]), convention))
        assert prefix[:len(previous)] == previous, "output after an epoch was revised"
        assert prefix == [x for x in full if x.epoch <= e]
        previous = prefix
    spec = eowc_after_each_epoch(query, log, convention, close=True)
    for before, after in pairwise(spec):
        assert not before - after, "Q'(INPUT, W) lost a row when W advanced"
    closed = rows_of(list(run_eowc(query, log, convention, close=True)))
    assert not closed - q_of_input(query, log, convention), \
        "a row was emitted more often than Q(INPUT) holds it"


# ---------------------------------------------------------------- 3. eventual consistency

@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.value)
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(log=arrival_logs())
def test_output_is_q_of_input_restricted_to_closed_results(name: str, convention: Convention,
                                                           log: ArrivalLog) -> None:
    """close=True: exactly Q(INPUT); without it: Q(INPUT) restricted to closed windows."""
    case = CASES[name]
    query = case.query
    q_input = q_of_input(query, log, convention)
    assert q_input == update_after_each_epoch(query, log, convention)[-1]
    assert rows_of(list(run_eowc(query, log, convention, close=True))) == q_input
    final_watermark = marks(log, convention)[-1]
    restricted = Counter({r: n for r, n in q_input.items()
                          if result_closed(case, r, final_watermark, convention)})
    assert rows_of(list(run_eowc(query, log, convention))) == restricted


# ---------------------------------------------------------------- 4. emission order

@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.value)
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(log=arrival_logs())
def test_emission_order(name: str, convention: Convention, log: ArrivalLog) -> None:
    """Aggregates: non-decreasing window_end within every epoch (and, since a window that
    closed refuses later rows, over the whole run). Sort: non-decreasing (ts, row) overall."""
    case = CASES[name]
    emissions = list(run_eowc(case.query, log, convention, close=True))
    if case.window is None:
        keys = [(e.row[case.bound], row_sort_key(e.row)) for e in emissions]
        assert keys == sorted(keys)
        return
    for epoch in {e.epoch for e in emissions}:
        ends = [e.row[case.bound] for e in emissions if e.epoch == epoch]
        assert ends == sorted(ends), f"epoch {epoch} emitted windows out of window_end order"
    ends = [e.row[case.bound] for e in emissions]
    assert ends == sorted(ends)


# ---------------------------------------------------------------- 5. late rows

@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.value)
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(log=arrival_logs(), data=st.data())
def test_late_rows_never_change_the_output_and_are_reported(name: str, convention: Convention,
                                                            log: ArrivalLog,
                                                            data: st.DataObject) -> None:
    """Rows inserted below the watermark (by the oracle) change no emission and no changelog
    entry, and each is reported once, with its epoch and the watermark in force; and exactly
    the rows the oracle calls late are reported."""
    case = CASES[name]
    query = case.query
    base_late: list[LateRow] = []
    base = list(run_eowc(query, log, convention, close=True, late=base_late.append))
    with_late, injected = data.draw(late_injections(
        log, DELAY, convention is Convention.SPARK, late_oracle(case, convention)))
    assume(injected)
    late: list[LateRow] = []
    assert list(run_eowc(query, with_late, convention, close=True, late=late.append)) == base
    assert list(run_update(query, with_late, convention)) == list(run_update(query, log, convention))
    reported: Counter[tuple[int, Event]] = Counter((x.epoch, x.event) for x in late
                                                   if x.event.line < 0)
    assert reported == Counter(injected), "every injected late row is reported exactly once"
    assert Counter((x.epoch, x.event) for x in late if x.event.line >= 0) == \
        Counter((x.epoch, x.event) for x in base_late)
    watermark = marks(with_late, convention)
    for x in late:
        assert x.watermark_before == watermark[x.epoch - 1]
    # Definition 1 for every row of the log (not only the injected ones): a row is reported
    # late iff the oracle calls it late under the watermark in force before its epoch.
    is_late = late_oracle(case, convention)
    expected = Counter((k, event) for k in range(1, len(with_late.epochs))
                       for event in with_late.epochs[k] if is_late(event.row[TS], watermark[k - 1]))
    assert Counter((x.epoch, x.event) for x in late) == expected


# ---------------------------------------------------------------- 6. the late check at the boundary

@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.value)
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(log=arrival_logs(), data=st.data())
def test_rows_next_to_the_watermark_are_late_exactly_as_the_convention_says(
        name: str, convention: Convention, log: ArrivalLog, data: st.DataObject) -> None:
    """Rows at ``W``, ``W +- 1 us`` and ``W +- 1 ms`` (SEMANTICS.md §3): exactly the rows the
    oracle calls late are reported, each with its epoch, and the closed output is Q(INPUT)."""
    case = CASES[name]
    query = case.query
    with_rows, injected = data.draw(boundary_injections(log, DELAY, convention is Convention.SPARK))
    assume(injected)
    watermark = marks(with_rows, convention)
    is_late = late_oracle(case, convention)
    late: list[LateRow] = []
    closed = rows_of(list(run_eowc(query, with_rows, convention, close=True, late=late.append)))
    expected = Counter((k, event) for k in range(1, len(with_rows.epochs))
                       for event in with_rows.epochs[k] if is_late(event.row[TS], watermark[k - 1]))
    assert Counter((x.epoch, x.event) for x in late) == expected
    assert closed == q_of_input(query, with_rows, convention)
