"""OVER windows in the executors (seed 002): the window functions of a partition's rows, and
what a row's results wait for.

A partition's rows are kept in ORDER BY order (:mod:`eowc.executors.ordering`). For the row
at position ``i``:

* ``row_number`` is its position from 1, ``rank`` one more than the rows ordered strictly
  before it, ``dense_rank`` the number of distinct ORDER BY keys up to its own;
* ``lag(x, k, d)`` / ``lead(x, k, d)`` read ``x`` of the row ``k`` positions before / after
  it, else ``d`` (of the current row; NULL by default);
* ``first_value``, ``last_value`` and the aggregates read the row's *frame*: ``ROWS``
  frames count positions; ``RANGE`` frames compare the first ORDER BY value ``v``, so
  ``RANGE BETWEEN a PRECEDING AND b FOLLOWING`` holds the rows whose value lies in
  ``[v - a, v + b]``, both bounds included, and ``CURRENT ROW`` means the row's peers (equal
  ORDER BY keys); ``EXCLUDE CURRENT ROW`` / ``GROUP`` / ``TIES`` cut the row, the row and
  its peers, or its peers out of the frame. An empty frame gives NULL. A ``SESSION WITH GAP
  g`` frame (RisingWave) is the row's session: the run of rows around it with no step of
  ``g`` or more between neighbours (:func:`session_span`).

Under EMIT ON WINDOW CLOSE a row's results are final when the last value they read is
complete (:func:`eowc.semantics.rules.triggers.frame_is_complete`): the row's own value,
the k-th following row's (``ROWS k FOLLOWING``, ``LEAD``), ``v + b`` (``RANGE b
FOLLOWING``), or the end of the input (UNBOUNDED FOLLOWING; a following row that has not
arrived); with a SESSION frame, every time before the session's last value ``+ g``
(:func:`eowc.semantics.rules.triggers.session_is_closed`).

Written for the executors, independently of the reference interpreter's OVER operator: frames
are found by binary search over the partition's ORDER BY values, kept beside its rows. Shared
with the reference: the aggregate functions folded over a frame
(:mod:`eowc.semantics.operators.aggregates`, tested on their own).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from operator import neg
from typing import Any

from eowc.executors.ordering import order_by_key
from eowc.semantics.ir.expr import Row, compile_expr
from eowc.semantics.ir.plan import Frame, OverWindow, WindowCall, aggregate_call
from eowc.semantics.operators.aggregates import aggregate_value, compile_aggregate
from eowc.semantics.rules.triggers import (
    Convention,
    Watermark,
    frame_is_complete,
    session_last_open_time,
)

RANKING = ("row_number", "rank", "dense_rank")


@dataclass
class OverRows:
    """One partition's kept rows in ORDER BY order, with their sort keys, ORDER BY keys and
    first ORDER BY values; how many lead the partition's output (``emitted``, a prefix); and
    how many rows, and distinct ORDER BY keys, were dropped before them (rows no future
    result reads, all ordered strictly before every kept row)."""

    rows: list[Row] = field(default_factory=list)
    sort_keys: list[Any] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    emitted: int = 0
    dropped: int = 0
    dropped_keys: int = 0

    @property
    def pending(self) -> bool:
        return self.emitted < len(self.rows)

    def add(self, over: OverFunctions, row: Row) -> int:
        """Insert ``row`` in order; its position."""
        key = over.sort_key(row)
        at = bisect.bisect_right(self.sort_keys, key)
        self.sort_keys.insert(at, key)
        self.keys.insert(at, key[0])
        self.values.insert(at, over.order_value(row))
        self.rows.insert(at, row)
        return at

    def drop_front(self, count: int) -> None:
        """Forget the first ``count`` rows (none of them a peer of a kept row)."""
        if count <= 0:
            return
        self.dropped += count
        self.dropped_keys += 1 + sum(1 for j in range(1, count) if self.keys[j] != self.keys[j - 1])
        del self.rows[:count], self.sort_keys[:count], self.keys[:count], self.values[:count]
        self.emitted = max(0, self.emitted - count)


#: A window function of a partition's rows at a position.
WindowFunction = Callable[[OverRows, int], Any]


@dataclass(frozen=True)
class OverFunctions:
    """An OVER clause bound to its input schema: the partition key, the ORDER BY key and
    first value, the tie-break, and each call as a function of (partition rows, position)."""

    node: OverWindow
    partition: Callable[[Row], Row]
    order: Callable[[Row], tuple[Any, ...]]
    order_value: Callable[[Row], Any]
    descending: bool
    tie: Callable[[Row], Any]
    functions: tuple[WindowFunction, ...]

    def sort_key(self, row: Row) -> tuple[Any, Any]:
        return (self.order(row), self.tie(row))

    def results(self, part: OverRows, i: int) -> Row:
        """The row at ``i`` with its window functions appended."""
        return part.rows[i] + tuple(f(part, i) for f in self.functions)

    @cached_property
    def reads_ahead(self) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
        """What the calls read after a row: the rows so many positions ahead (``ROWS k
        FOLLOWING``, ``LEAD``), the values so far above its own (``RANGE y FOLLOWING``), and
        whether one reads to the end of the partition (UNBOUNDED FOLLOWING)."""
        rows, values, unbounded = [], [], False
        for call in self.node.calls:
            ahead = _rows_ahead(call)
            if ahead is not None:
                rows.append(ahead)
            elif call.function not in RANKING + ("lag", "lead") and call.frame.kind != "session":
                end = call.frame.end
                if end is None:
                    unbounded = True
                elif call.frame.kind == "range" and end > 0:
                    values.append(end)
        return tuple(rows), tuple(values), unbounded

    def waits_for(self, part: OverRows, i: int) -> Any:
        """The ORDER BY value whose completeness makes the results of the row at ``i``
        final; None when only the end of the input does."""
        rows_ahead, values_ahead, unbounded = self.reads_ahead
        if unbounded:
            return None
        needed = part.values[i]
        if self.session_gaps:
            if needed is None:
                return None
            for gap in self.session_gaps:  # the session closes (session_is_closed)
                last = part.values[session_span(gap, part.values, i)[1] - 1]
                needed = max(needed, session_last_open_time(last, gap))
        if values_ahead:
            needed = needed + max(values_ahead)
        if rows_ahead:
            last = i + max(rows_ahead)
            if last >= len(part.rows):
                return None
            needed = max(needed, part.values[last])
        return needed

    def pop_final(self, part: OverRows, watermark: Watermark, convention: Convention
                  ) -> list[tuple[Any, Row]]:
        """The partition's pending rows whose results became final, in order, each with its
        sort key; then the rows no future result reads are dropped."""
        done = []
        while part.pending and frame_is_complete(self.waits_for(part, part.emitted), watermark,
                                                 convention):
            done.append((part.sort_keys[part.emitted], self.results(part, part.emitted)))
            part.emitted += 1
        part.drop_front(self.unread_rows(part, part.emitted, watermark))
        return done

    @cached_property
    def session_gaps(self) -> tuple[int, ...]:
        """The gaps of the calls' SESSION frames."""
        return tuple(sorted({c.frame.gap for c in self.node.calls if c.frame.kind == "session"
                             and c.function not in RANKING + ("lag", "lead")
                             and c.frame.gap is not None}))

    @cached_property
    def rows_back(self) -> int | None:
        """How many rows before a row its functions read by position (None: without bound)."""
        back = 0
        for call in self.node.calls:
            if call.function in RANKING or call.function == "lead":
                continue
            if call.function == "lag":
                back = max(back, _offset(call))
            elif call.frame.kind == "session":
                continue  # read back to its session's start (unread_rows)
            elif call.frame.start is None:
                return None
            elif call.frame.kind == "rows":
                back = max(back, -call.frame.start)
        return back

    @cached_property
    def value_back(self) -> int | None:
        """How far below a row's ORDER BY value a RANGE frame starts (None: no RANGE frame
        with a bounded start reads before the row)."""
        spans = [-call.frame.start for call in self.node.calls
                 if call.function not in RANKING + ("lag", "lead") and call.frame.kind == "range"
                 and call.frame.start is not None]
        return max(spans, default=None)

    def unread_rows(self, part: OverRows, first_open: int, watermark: Watermark) -> int:
        """How many of the partition's first rows no result still to be computed reads: the
        results of the rows from ``first_open`` on and of rows still to arrive (ORDER BY value
        at least ``watermark``). Peers are kept together (a rank counts them)."""
        back = self.rows_back
        if back is None or not part.rows:
            return 0
        cut = max(0, first_open - back)
        if self.value_back is not None:
            lowest = watermark if first_open >= len(part.rows) else \
                min(watermark, part.values[first_open])
            cut = bisect.bisect_left(part.values, lowest - self.value_back, 0, cut)
        for gap in self.session_gaps:  # keep the session of the first open row (or the last)
            cut = min(cut, session_span(gap, part.values, min(first_open, len(part.rows) - 1))[0])
        while 0 < cut < len(part.keys) and part.keys[cut - 1] == part.keys[cut]:
            cut -= 1
        return cut

    @cached_property
    def influence(self) -> tuple[tuple[str, int | None, int | None], ...]:
        """Whose results a row at position ``p`` (ORDER BY value ``v``) enters, per call:
        ``("rows", lo, hi)``: the rows at ``p - hi .. p - lo``; ``("range", lo, hi)``: the
        rows with a value in ``v - hi .. v - lo``; None: without bound; ``("session", g,
        g)``: the rows of its session of gap ``g`` (:func:`session_span`)."""
        out: list[tuple[str, int | None, int | None]] = []
        for call in self.node.calls:
            if call.function in RANKING:
                out.append(("rows", None, 0))
            elif call.function == "lag":
                out.append(("rows", -_offset(call), 0))
            elif call.function == "lead":
                out.append(("rows", 0, _offset(call)))
            elif call.frame.kind == "session":
                out.append(("session", call.frame.gap, call.frame.gap))
            else:
                out.append((call.frame.kind, call.frame.start, call.frame.end))
        return tuple(out)


def _offset(call: WindowCall) -> int:
    return call.args[1].value if len(call.args) > 1 else 1  # type: ignore[attr-defined]


def _rows_ahead(call: WindowCall) -> int | None:
    """How many rows after the current one a call reads by position (None: it does not)."""
    if call.function == "lead":
        return _offset(call) or None
    if call.function in RANKING or call.function == "lag":
        return None
    frame = call.frame
    if frame.kind == "rows" and frame.end is not None and frame.end > 0:
        return frame.end
    return None


def session_span(gap: int, values: list[Any], i: int) -> tuple[int, int]:
    """The first and one-past-last positions of the session of the row at ``i`` of a
    partition whose ORDER BY values are ``values`` (ascending, NULLs last): the run of rows
    around it with no step of ``gap`` or more between neighbours; the rows with a NULL value
    are one session."""
    n = len(values)
    if values[i] is None:
        return bisect.bisect_left([v is None for v in values], True), n
    lo = i
    while lo > 0 and values[lo] - values[lo - 1] < gap:
        lo -= 1
    hi = i + 1
    while hi < n and values[hi] is not None and values[hi] - values[hi - 1] < gap:
        hi += 1
    return lo, hi


def frame_bounds(frame: Frame, part: OverRows, i: int, descending: bool) -> tuple[int, int]:
    """The first and one-past-last positions of the frame of the row at ``i``."""
    n = len(part.rows)
    if frame.kind == "session":
        assert frame.gap is not None
        return session_span(frame.gap, part.values, i)
    if frame.kind == "rows":
        lo = 0 if frame.start is None else max(0, i + frame.start)
        hi = n if frame.end is None else min(n, i + frame.end + 1)
        return lo, hi
    keys, values = part.keys, part.values
    v = values[i]

    def peers_start() -> int:
        return bisect.bisect_left(keys, keys[i])

    def peers_end() -> int:
        return bisect.bisect_right(keys, keys[i])

    # The rows with a value: the NULLs sort before them or after them (by the engine's rules).
    nulls = sum(1 for x in values if x is None) if None in values else 0
    valued_lo, valued_hi = (nulls, n) if nulls and values[0] is None else (0, n - nulls)
    key = neg if descending else None
    sign = -1 if descending else 1

    def bound(offset: int | None, is_start: bool) -> int:
        if offset is None:
            return 0 if is_start else n
        if offset == 0 or v is None:
            return peers_start() if is_start else peers_end()
        edge = sign * (v + sign * offset) if descending else v + offset
        if is_start:  # the first row at or past the edge, in the partition's order
            return bisect.bisect_left(values, edge, valued_lo, valued_hi, key=key)
        return bisect.bisect_right(values, edge, valued_lo, valued_hi, key=key)
    return bound(frame.start, True), bound(frame.end, False)


def _function(call: WindowCall, over: OverWindow, descending: bool, tie: Callable[[Row], Any]
              ) -> WindowFunction:
    schema = over.input.schema
    name = call.function
    if name == "row_number":
        return lambda part, i: part.dropped + i + 1
    if name == "rank":
        return lambda part, i: part.dropped + bisect.bisect_left(part.keys, part.keys[i]) + 1
    if name == "dense_rank":
        def dense_rank(part: OverRows, i: int) -> int:
            keys = part.keys
            return part.dropped_keys + 1 + sum(1 for j in range(1, i + 1) if keys[j] != keys[j - 1])
        return dense_rank
    if name in ("lag", "lead"):
        value = compile_expr(call.args[0], schema).evaluate
        default = compile_expr(call.args[2], schema).evaluate if len(call.args) > 2 else None
        step = _offset(call) if name == "lead" else -_offset(call)

        def shifted(part: OverRows, i: int) -> Any:
            j = i + step
            if 0 <= j < len(part.rows):
                return value(part.rows[j])
            return None if default is None else default(part.rows[i])
        return shifted
    frame = call.frame
    if name in ("first_value", "last_value"):
        value = compile_expr(call.args[0], schema).evaluate
        last = name == "last_value"

        def edge_value(part: OverRows, i: int) -> Any:
            rows = frame_rows(frame, part, i, descending)
            return value(rows[-1 if last else 0]) if rows else None
        return edge_value
    fold = compile_aggregate(aggregate_call(call), schema, None, tie)

    def over_frame(part: OverRows, i: int) -> Any:
        return aggregate_value(fold, frame_rows(frame, part, i, descending))
    return over_frame


def frame_rows(frame: Frame, part: OverRows, i: int, descending: bool) -> list[Row]:
    """The rows of the frame of the row at ``i``, in order, less its EXCLUDE clause's: the
    frame's slice with the row's peers cut out (``group``), or only the row (``current row``),
    or the peers put back around the row (``ties``)."""
    lo, hi = frame_bounds(frame, part, i, descending)
    if frame.exclude == "no others":
        return part.rows[lo:hi]
    if frame.exclude == "current row":
        cut_lo, cut_hi = i, i + 1
    else:
        cut_lo = bisect.bisect_left(part.keys, part.keys[i])
        cut_hi = bisect.bisect_right(part.keys, part.keys[i])
    kept = part.rows[lo:min(hi, max(lo, cut_lo))]
    if frame.exclude == "ties" and lo <= i < hi:
        kept.append(part.rows[i])
    return kept + part.rows[max(lo, cut_hi):hi]


def over_functions(node: OverWindow, tie: Callable[[Row], Any]) -> OverFunctions:
    """Bind ``node``; ``tie`` orders rows with equal ORDER BY keys."""
    schema = node.input.schema
    keys = [compile_expr(e, schema).evaluate for e in node.partition_by]
    descending = node.order_by[0][1]
    return OverFunctions(node, lambda row: tuple(k(row) for k in keys),
                         order_by_key(node.order_by, schema),
                         compile_expr(node.order_by[0][0], schema).evaluate, descending, tie,
                         tuple(_function(c, node, descending, tie) for c in node.calls))
