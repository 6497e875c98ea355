"""Hypothesis strategies for arrival logs over a small fixed schema (used by the tests)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pytest
from hypothesis import strategies as st

from eowc.semantics.analysis.operator_inputs import has_join_judging_late_rows
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.rules.triggers import Convention

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from eowc.semantics.ir.expr import Row
    from eowc.semantics.ir.plan import Query

SOURCE = """
CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '{delay}' SECOND);
"""

BASE = 1_700_000_000 * MICROS_PER_SECOND  # 2023-11-14 22:13:20, a multiple of 10 s


@functools.cache
def script_once(text: str) -> Script:
    """``parse_script(text)``, read once per test process: the property tests ask for the same
    few scripts in every example, and parsing was a third of their time. Tests only read a
    script, never change it. A test that patches the SQL front end (a mutant of a rewrite)
    calls ``parse_script`` itself: a script read here before the patch would hide it, and one
    read under the patch would reach later tests."""
    return parse_script(text)


def judged_at_sources(query: Query) -> list[Convention]:
    """The conventions under which every row of ``query`` is judged late at its source: all
    but flink for an interval join, which judges its own rows under flink
    (:func:`~eowc.semantics.analysis.operator_inputs.join_judges_late_rows`). Only these do
    the specification, the DuckDB oracle and the in-process executors run."""
    return [c for c in Convention if not has_join_judging_late_rows(query.plan, c)]


def judged_at_sources_params(names: Iterable[str], query_of: Callable[[str], Query]) -> list:
    """pytest parameters ``(name, convention)``: each of ``names`` under each convention of
    :func:`judged_at_sources` for its query."""
    return [pytest.param(name, convention, id=f"{name}-{convention.value}")
            for name in names for convention in judged_at_sources(query_of(name))]


def script(query: str, delay: int = 5) -> Script:
    return script_once(SOURCE.format(delay=delay) + query)


#: Sub-second parts of event times: on window edges, a millisecond and a microsecond before.
FRACTIONS = (0, 0, 0, 500_000, 999_000, 999_999)
#: The same without sub-millisecond parts (Spark keeps event-time statistics in milliseconds).
MILLISECOND_FRACTIONS = (0, 0, 0, 500_000, 999_000)


@st.composite
def rows(draw, max_seconds: int = 60, fractions: tuple[int, ...] = FRACTIONS):
    """(auction, price, ts) with event times on a coarse grid, so ties and window edges occur."""
    second = draw(st.integers(0, max_seconds))
    fraction = draw(st.sampled_from(fractions))
    auction = draw(st.integers(1, 3))
    price = draw(st.one_of(st.none(), st.integers(-5, 20))) if draw(st.booleans()) else \
        draw(st.integers(0, 20))
    return (auction, price, BASE + second * MICROS_PER_SECOND + fraction)


@st.composite
def arrival_logs(draw, max_rows: int = 25, fractions: tuple[int, ...] = FRACTIONS,
                 max_seconds: int = 60):
    """Any arrival order and any epoch boundaries (late rows included)."""
    events = [Event("bids", r) for r in draw(st.lists(rows(max_seconds, fractions),
                                                        max_size=max_rows))]
    cuts = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    empties = draw(st.lists(st.integers(0, sum(cuts) + 1), max_size=3))
    return cut_into_epochs(events, cuts, empties)


def cut_into_epochs(events: Sequence[Event], cuts: Sequence[bool],
                    empty_at: Sequence[int] = ()) -> ArrivalLog:
    """Cut ``events`` into epochs: an epoch ends after event ``i`` when ``cuts[i]``; then an
    empty epoch is inserted before each epoch index in ``empty_at`` (consecutive barriers)."""
    epochs: list[tuple[Event, ...]] = []
    current: list[Event] = []
    for event, cut in zip(events, cuts, strict=True):
        current.append(event)
        if cut:
            epochs.append(tuple(current))
            current = []
    epochs.append(tuple(current))
    for position in sorted(empty_at, reverse=True):
        epochs.insert(min(position, len(epochs)), ())
    return ArrivalLog(tuple(epochs))


@st.composite
def price_walk_logs(draw, max_rows: int = 30, fractions: tuple[int, ...] = FRACTIONS):
    """Logs for pattern recognition: two auctions whose prices move by small steps (so rises,
    falls and V-shapes are common), a few NULL prices, event times that mostly rise by 0-3 s
    (ties occur) and arrive with a lag of 0-8 s (so rows are out of order, and with the
    5-second delay of :func:`script` some are late), cut into epochs at random."""
    count = draw(st.integers(4, max_rows))
    rows: list[tuple[int, Row, int]] = []
    price = {1: 5, 2: 5}
    second = 0
    for _ in range(count):
        auction = draw(st.integers(1, 2))
        price[auction] += draw(st.integers(-2, 2))
        value = None if draw(st.integers(0, 15)) == 0 else price[auction]
        second += draw(st.integers(0, 3))
        t = BASE + second * MICROS_PER_SECOND + draw(st.sampled_from(fractions))
        rows.append((t + draw(st.integers(0, 8)) * MICROS_PER_SECOND, (auction, value, t),
                     len(rows)))
    events = [Event("bids", row) for _, row, _ in sorted(rows, key=lambda r: (r[0], r[2]))]
    cuts = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    empties = draw(st.lists(st.integers(0, sum(cuts) + 1), max_size=2))
    return cut_into_epochs(events, cuts, empties)
