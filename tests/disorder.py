"""Hypothesis strategies for arrival logs whose disorder is controlled (used by test_properties).

Disorder is encoded as a *change to an in-order log*, so that Hypothesis shrinks toward
in-order input:

* an in-order log is a list of rows sorted by event time, cut into epochs;
* a bounded-disorder variant gives every row an arrival *lag* ``0 <= lag <= L`` and arrives
  the rows in order of ``ts + lag``; all lags ``0`` is the in-order log. Its epochs are cut
  afresh.

A row ``r`` arrives after exactly the rows ``q`` with ``ts_q + lag_q <= ts_r + lag_r`` (ties by
position), so every row of an earlier epoch has ``ts_q <= ts_r + L`` and the watermark in force
for ``r`` is ``W <= max(ts_q) - d <= ts_r + L - d`` (Spark's truncation to the millisecond only
lowers it). The largest lag that keeps every row out of the late set is tight per convention
(:func:`max_lag`, SEMANTICS.md §3):

* RisingWave, ``L = d``: ``ts_r >= W`` and rows equal to ``W`` are kept; every window holding
  ``ts_r`` ends above it, so ``e > W``: none is closed.
* Spark, ``L = d - 1 ms``: ``ts_r >= W + 1 ms > W`` (Spark drops ``ts <= W``); windows end above
  ``ts_r``, so none has ``e <= W``.
* Flink, ``L = d - 1 ms``: a window holding ``ts_r`` has ``e >= ts_r + 1 us``, so
  ``e - 1 ms >= ts_r - 999 us > W``: its timer has not fired; and ``ts_r > W``.

Late rows are inserted on purpose by :func:`late_injections`: at ``W - lateness`` when the
test's oracle calls that late (so rows right at the boundary occur), else at :func:`late_time`,
a whole window span lower, which is late under every convention and every query here.
:func:`boundary_injections` inserts rows at ``W``, ``W +- 1 us`` and ``W +- 1 ms``, late or not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.values import MICROS_PER_MILLI, MICROS_PER_SECOND
from eowc.semantics.rules.triggers import Convention
from eowc.verify import generators
from tests.strategies import cut_into_epochs, rows

#: The largest window size of the queries in test_properties (HOP size 15 s), plus a margin.
MAX_WINDOW_SPAN = 16 * MICROS_PER_SECOND

TS = 2  # position of ``ts`` in the rows of tests.strategies: (auction, price, ts)




@st.composite
def epoch_cuts(draw: st.DrawFn, events: Sequence[Event]) -> ArrivalLog:
    """``events`` (in this order) cut into epochs at random, with up to two empty epochs."""
    cuts = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    empty_at = draw(st.lists(st.integers(0, len(events) + 1), max_size=2))
    return cut_into_epochs(events, cuts, empty_at)


@st.composite
def in_order_rows(draw: st.DrawFn, max_rows: int = 20, max_seconds: int = 20) -> list[Row]:
    """At least three rows of tests.strategies.rows within ``max_seconds``, sorted by event
    time (stable: ties keep draw order). The span is short so that a lag of up to the delay
    often reorders rows."""
    drawn = draw(st.lists(rows(max_seconds), min_size=3, max_size=max_rows))
    return sorted(drawn, key=lambda r: r[TS])


def events_of(row_list: Sequence[Row], first_line: int = 1) -> list[Event]:
    """Events of table ``bids``, numbered by their position in the in-order log."""
    return [Event("bids", r, first_line + i) for i, r in enumerate(row_list)]


def max_lag(delay_seconds: int, keeps_rows_equal_to_watermark: bool) -> int:
    """The largest arrival lag (microseconds) under which no row can be late: the delay ``d``
    when rows equal to the watermark are kept (RisingWave), else ``d - 1 ms`` (Spark, Flink);
    see :func:`eowc.verify.generators.max_lag`."""
    keeping = Convention.RISINGWAVE if keeps_rows_equal_to_watermark else Convention.SPARK
    return generators.max_lag(delay_seconds * MICROS_PER_SECOND, keeping)


@st.composite
def bounded_disorder(draw: st.DrawFn, in_order: Sequence[Event], largest_lag: int) -> ArrivalLog:
    """A re-arrival of ``in_order`` in which no row is late when ``largest_lag`` is
    :func:`max_lag` of the convention (see the module docstring): each row is lagged by
    ``0 <= lag <= largest_lag`` and the epochs are re-cut.

    Lags are tenths of the largest lag (drawn uniformly; ``st.integers`` favours 0 so much
    that most variants would be in order); they shrink toward 0, i.e. toward in-order."""
    lag = st.sampled_from([k * largest_lag // 10 for k in range(11)])
    lags = draw(st.lists(lag, min_size=len(in_order), max_size=len(in_order)))
    order = sorted(range(len(in_order)), key=lambda i: (in_order[i].row[TS] + lags[i], i))
    return draw(epoch_cuts([in_order[i] for i in order]))


def watermarks_after(log: ArrivalLog, delay_seconds: int, truncate_to_ms: bool) -> list[float]:
    """Test oracle, written from SEMANTICS.md §1 and §4: the source watermark after each epoch,
    ``max(ts seen so far) - d`` (``-inf`` before any row); Spark truncates ``max`` to the ms."""
    result: list[float] = []
    highest = -math.inf
    for epoch in log.epochs:
        for event in epoch:
            highest = max(highest, event.row[TS])
        if math.isinf(highest):
            result.append(highest)
            continue
        top = highest // MICROS_PER_MILLI * MICROS_PER_MILLI if truncate_to_ms else highest
        result.append(max([top - delay_seconds * MICROS_PER_SECOND] + result[-1:]))
    return result


def late_time(watermark: int, lateness: int) -> int:
    """An event time below ``watermark`` by ``lateness`` plus one whole window span: every
    window holding it ends at least 1 s below the watermark, so it is late everywhere."""
    return watermark - lateness - MAX_WINDOW_SPAN


Injected = tuple[ArrivalLog, list[tuple[int, Event]]]

#: Offsets from the watermark that straddle every convention's boundary (1 us and 1 ms apart).
BOUNDARY_OFFSETS = (-MICROS_PER_MILLI - 1, -MICROS_PER_MILLI, -MICROS_PER_MILLI + 1, -1, 0, 1,
                    MICROS_PER_MILLI - 1, MICROS_PER_MILLI, MICROS_PER_MILLI + 1)


def _inject(draw: st.DrawFn, log: ArrivalLog, delay_seconds: int, truncate_to_ms: bool,
            time_at: Callable[[int], int], max_rows: int) -> Injected:
    """Insert 1..``max_rows`` rows into epochs whose watermark before is finite, the time of
    each being ``time_at(W)`` for that watermark ``W``; their ``line`` is ``-1, -2, ...``."""
    marks = watermarks_after(log, delay_seconds, truncate_to_ms)
    eligible = [k for k in range(1, len(log.epochs)) if not math.isinf(marks[k - 1])]
    epochs = [list(e) for e in log.epochs]
    injected: list[tuple[int, Event]] = []
    if not eligible:
        return log, injected
    for n in range(draw(st.integers(1, max_rows))):
        k = draw(st.sampled_from(eligible))
        auction, price, _ = draw(rows())
        event = Event("bids", (auction, price, time_at(int(marks[k - 1]))), -1 - n)
        epochs[k].insert(draw(st.integers(0, len(epochs[k]))), event)
        injected.append((k, event))
    return ArrivalLog(tuple(tuple(e) for e in epochs)), injected


@st.composite
def late_injections(draw: st.DrawFn, log: ArrivalLog, delay_seconds: int, truncate_to_ms: bool,
                    is_late: Callable[[int, float], bool] | None = None,
                    max_rows: int = 4) -> Injected:
    """``log`` with up to ``max_rows`` late rows inserted into epochs whose watermark before
    is finite; returns the new log and the ``(epoch, event)`` of every inserted row (their
    ``line`` is ``-1, -2, ...`` so they can be told apart).

    A row's time is ``W - lateness`` when the oracle ``is_late(t, W)`` calls that late (so
    rows right at the boundary occur), else :func:`late_time` (late under every rule)."""
    def time_at(watermark: int) -> int:
        lateness = draw(st.one_of(st.sampled_from([0, 1, MICROS_PER_MILLI - 1, MICROS_PER_MILLI]),
                                  st.integers(0, 20 * MICROS_PER_SECOND)))
        t = watermark - lateness
        return t if is_late is not None and is_late(t, watermark) else late_time(watermark, lateness)
    return _inject(draw, log, delay_seconds, truncate_to_ms, time_at, max_rows)


@st.composite
def boundary_injections(draw: st.DrawFn, log: ArrivalLog, delay_seconds: int,
                        truncate_to_ms: bool, max_rows: int = 4) -> Injected:
    """``log`` with up to ``max_rows`` rows inserted at ``W + offset``, ``offset`` one of
    :data:`BOUNDARY_OFFSETS`: some late and some not, depending on the convention."""
    return _inject(draw, log, delay_seconds, truncate_to_ms,
                   lambda watermark: watermark + draw(st.sampled_from(BOUNDARY_OFFSETS)), max_rows)


def inversions(log: ArrivalLog) -> int:
    """How many pairs of rows arrive out of event-time order (a measure of disorder)."""
    times = [e.row[TS] for e in log.events]
    return sum(1 for i in range(len(times)) for j in range(i + 1, len(times)) if times[i] > times[j])
