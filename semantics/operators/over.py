"""OVER windows (seed 002): the window functions of one partition, and which order value a
row's results wait for.

A partition's rows are ordered by the ORDER BY keys, ties broken by :func:`eowc.semantics.ir.plan.
tie_break` (so the order is total and the same in every run). For the row at position ``i``:

* ``row_number`` is ``i + 1``; ``rank`` is one more than the number of rows ordered strictly
  before it; ``dense_rank`` counts the distinct ORDER BY keys up to its own.
* ``lag(x, k, d)`` / ``lead(x, k, d)``: ``x`` of the row ``k`` positions before / after it,
  ``d`` (evaluated on the current row, default NULL) when there is none.
* ``first_value``, ``last_value`` and every aggregate read the rows of the frame
  (:class:`eowc.semantics.ir.plan.Frame`): ``ROWS`` counts positions; ``RANGE`` compares the ORDER BY
  value, and ``CURRENT ROW`` includes the row's peers; ``EXCLUDE`` then takes the row, its
  peers, or both out of it (:func:`frame_members`).

Under EMIT ON WINDOW CLOSE a row's results are final once every row they read is complete:
its own order value, and the last row of its frame (``needed_value``):
``ROWS k FOLLOWING`` and ``LEAD(x, k)`` wait for the k-th following row to exist and be
complete, ``RANGE y FOLLOWING`` for ``v + y``, ``UNBOUNDED FOLLOWING`` (and a following row
that has not arrived) for the end of the input. The trigger is
:func:`eowc.semantics.rules.triggers.frame_is_complete`.

RisingWave's ``SESSION WITH GAP g`` frame is the row's session: the rows around it whose
consecutive ORDER BY values are less than ``g`` apart (:func:`session_positions`). A row that
arrives between two sessions merges them, so under EMIT ON WINDOW CLOSE a row waits for its
session to close (:func:`eowc.semantics.rules.triggers.session_is_closed`: every time before
its last row's ``+ g`` is complete), and on update its rows change as sessions grow and
merge.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, total_ordering
from typing import Any

from eowc.semantics.ir.expr import Expr, Row, Schema, compile_expr
from eowc.semantics.ir.plan import Frame, OverWindow, aggregate_call
from eowc.semantics.ir.values import value_rules
from eowc.semantics.operators.aggregates import AggregateFunction, aggregate_value, compile_aggregate
from eowc.semantics.rules.triggers import (
    Convention,
    Watermark,
    frame_is_complete,
    session_last_open_time,
)


@total_ordering
class _Descending:
    """A value that sorts in reverse (an ORDER BY ... DESC key)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.value == other.value

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.value < self.value)

    def __hash__(self) -> int:
        return hash(self.value)


#: Rows, and distinct ORDER BY keys, dropped in front of a partition's kept rows.
Dropped = tuple[int, int]


@dataclass(frozen=True)
class CompiledOver:
    """An OVER window bound to its input schema: the partition key, the ORDER BY key (NULLS
    LAST ascending, FIRST descending, as PostgreSQL), the first ORDER BY value (for RANGE
    frames and the trigger), and one evaluator per call."""

    over: OverWindow
    partition: Callable[[Row], Row]
    order: Callable[[Row], tuple[Any, ...]]
    order_value: Callable[[Row], Any]
    descending: bool
    tie: Callable[[Row], Any]
    calls: tuple[Callable[[Sequence[Row], list[tuple[Any, ...]], int, Dropped], Any], ...]
    needs: tuple[Callable[[Sequence[Row], int], Any], ...]

    def sort_key(self, row: Row) -> tuple[Any, Any]:
        return (self.order(row), self.tie(row))

    def results(self, rows: Sequence[Row], keys: list[tuple[Any, ...]], i: int,
                before: Dropped = (0, 0)) -> Row:
        """The results of every call for the row at position ``i`` of the sorted ``rows``
        (``keys`` are their ORDER BY keys). ``before``: how many rows, and distinct keys, of
        the partition were dropped in front of ``rows`` (all ordered strictly before it)."""
        return tuple(call(rows, keys, i, before) for call in self.calls)

    @cached_property
    def reach(self) -> int | None:
        """How many rows before the first pending one the calls can still read by position
        (None: any number, as UNBOUNDED PRECEDING may). A RANGE frame reads by value
        (:attr:`value_reach`)."""
        reach = 0
        for call in self.over.calls:
            if call.function in ("row_number", "rank", "dense_rank"):
                continue
            if call.function in ("lag", "lead"):
                k = call.args[1].value if len(call.args) > 1 else 1
                reach = max(reach, k if call.function == "lag" else 0)
            elif call.frame.start is None:
                return None
            elif call.frame.kind == "rows":
                reach = max(reach, -call.frame.start)
        return reach

    @cached_property
    def value_reach(self) -> int | None:
        """How far below the first pending row's ORDER BY value a RANGE frame can start (the
        largest ``y`` of ``RANGE y PRECEDING``; None: no RANGE frame reads before it)."""
        starts = [-call.frame.start for call in self.over.calls
                  if call.function not in ("row_number", "rank", "dense_rank", "lag", "lead")
                  and call.frame.kind == "range" and call.frame.start is not None]
        return max(starts) if starts else None

    @cached_property
    def influence(self) -> tuple[tuple[str, int | None, int | None], ...]:
        """Which rows' results a row at position ``p`` (ORDER BY value ``v``) enters, one
        entry per call: ``("rows", lo, hi)``: the rows at ``p - hi .. p - lo``; ``("range",
        lo, hi)``: the rows whose value is in ``v - hi .. v - lo``; None: without bound. The
        ranking functions read every row before them (``("rows", None, 0)``: the rows from
        ``p`` on); ``lag(k)`` the rows ``p .. p + k``; ``lead(k)`` ``p - k .. p``."""
        out: list[tuple[str, int | None, int | None]] = []
        for call in self.over.calls:
            if call.function in ("row_number", "rank", "dense_rank"):
                out.append(("rows", None, 0))
            elif call.function in ("lag", "lead"):
                k = call.args[1].value if len(call.args) > 1 else 1
                out.append(("rows", -k, 0) if call.function == "lag" else ("rows", 0, k))
            else:
                frame = call.frame
                out.append((frame.kind, frame.start, frame.end))
        return tuple(out)

    def needed_value(self, rows: Sequence[Row], i: int) -> Any:
        """The order value that must be complete for the row at ``i`` to be final; ``None``
        when it waits for a row that has not arrived or for UNBOUNDED FOLLOWING."""
        needed = self.order_value(rows[i])
        if needed is None:
            return None
        for need in self.needs:
            value = need(rows, i)
            if value is None:
                return None
            needed = max(needed, value)
        return needed


def compile_over(over: OverWindow, tie: Callable[[Row], Any]) -> CompiledOver:
    """Bind ``over`` to its input schema; ``tie`` orders rows with equal ORDER BY keys."""
    schema = over.input.schema
    partition = [compile_expr(e, schema).evaluate for e in over.partition_by]
    order_key = order_key_function(over.order_by, schema)
    first = compile_expr(over.order_by[0][0], schema).evaluate
    descending = over.order_by[0][1]
    calls, needs = [], []
    for call in over.calls:
        calls.append(_call(call, over, first, descending, tie))
        need = _needed(call, first, descending)
        if need is not None:
            needs.append(need)
    return CompiledOver(over, lambda row: tuple(f(row) for f in partition), order_key, first,
                        descending, tie, tuple(calls), tuple(needs))


def order_key_function(order_by: Sequence[tuple[Expr, bool]], schema: Schema
                       ) -> Callable[[Row], tuple[Any, ...]]:
    """The sort key of ORDER BY ``order_by``: NULLS LAST ascending and FIRST descending (as
    PostgreSQL), or the other way round where the engine sorts NULLs low (Flink)."""
    order = [(compile_expr(e, schema).evaluate, descending) for e, descending in order_by]
    high = value_rules().nulls_sort == "high"

    def order_key(row: Row) -> tuple[Any, ...]:
        key = []
        for f, descending in order:
            v = f(row)
            null = v is None
            plain = (null == high, v if not null else 0)
            key.append(_Descending(plain) if descending else plain)
        return tuple(key)
    return order_key


def _call(call: Any, over: OverWindow, value_of: Callable[[Row], Any], descending: bool,
          tie: Callable[[Row], Any]
          ) -> Callable[[Sequence[Row], list[tuple[Any, ...]], int, Dropped], Any]:
    schema = over.input.schema
    function = call.function
    if function == "row_number":
        return lambda rows, keys, i, before: before[0] + i + 1
    if function == "rank":
        return lambda rows, keys, i, before: before[0] + bisect.bisect_left(keys, keys[i]) + 1
    if function == "dense_rank":
        return lambda rows, keys, i, before: before[1] + len(set(keys[:i + 1]))
    if function in ("lag", "lead"):
        value = compile_expr(call.args[0], schema).evaluate
        k = call.args[1].value if len(call.args) > 1 else 1
        default = compile_expr(call.args[2], schema).evaluate if len(call.args) > 2 else None
        step = -k if function == "lag" else k

        def shifted(rows: Sequence[Row], keys: list[tuple[Any, ...]], i: int, before: Dropped) -> Any:
            j = i + step
            if 0 <= j < len(rows):
                return value(rows[j])
            return default(rows[i]) if default else None
        return shifted
    frame = call.frame
    if function in ("first_value", "last_value"):
        value = compile_expr(call.args[0], schema).evaluate
        pick_first = function == "first_value"

        def edge(rows: Sequence[Row], keys: list[tuple[Any, ...]], i: int, before: Dropped) -> Any:
            members = frame_members(frame, rows, keys, i, value_of, descending)
            if not members:
                return None
            return value(members[0 if pick_first else -1])
        return edge
    function_of: AggregateFunction = compile_aggregate(aggregate_call(call), schema, None, tie)

    def aggregate(rows: Sequence[Row], keys: list[tuple[Any, ...]], i: int, before: Dropped) -> Any:
        return aggregate_value(function_of, frame_members(frame, rows, keys, i, value_of, descending))
    return aggregate


def frame_members(frame: Frame, rows: Sequence[Row], keys: list[tuple[Any, ...]], i: int,
                  value_of: Callable[[Row], Any], descending: bool) -> list[Row]:
    """The rows of the frame of row ``i``, in order, without those its EXCLUDE clause takes
    out (the row itself, its peers, or both)."""
    lo, hi = frame_rows(frame, rows, keys, i, value_of, descending)
    if frame.exclude == "no others":
        return list(rows[lo:hi + 1])

    def excluded(j: int) -> bool:
        if frame.exclude == "current row":
            return j == i
        peer = keys[j] == keys[i]
        return peer if frame.exclude == "group" else peer and j != i
    return [rows[j] for j in range(lo, hi + 1) if not excluded(j)]


def frame_rows(frame: Frame, rows: Sequence[Row], keys: list[tuple[Any, ...]], i: int,
               value_of: Callable[[Row], Any], descending: bool) -> tuple[int, int]:
    """The positions ``lo..hi`` (inclusive; empty when ``lo > hi``) of the frame of row
    ``i`` among the sorted ``rows``."""
    n = len(rows)
    if frame.kind == "rows":
        lo = 0 if frame.start is None else max(0, i + frame.start)
        hi = n - 1 if frame.end is None else min(n - 1, i + frame.end)
        return lo, hi
    if frame.kind == "session":
        return session_positions(frame, rows, i, value_of)
    v = value_of(rows[i])
    peers_lo, peers_hi = bisect.bisect_left(keys, keys[i]), bisect.bisect_right(keys, keys[i]) - 1

    def position(offset: int | None, is_start: bool) -> int:
        if offset is None:
            return 0 if is_start else n - 1
        if offset == 0 or v is None:
            return peers_lo if is_start else peers_hi
        bound = v - offset if descending else v + offset
        values = [value_of(r) for r in rows]
        if is_start:  # the first row at or after the bound, in sort order
            return next((j for j in range(n) if values[j] is not None and
                         (values[j] <= bound if descending else values[j] >= bound)), n)
        return max((j for j in range(n) if values[j] is not None and
                    (values[j] >= bound if descending else values[j] <= bound)), default=-1)
    return position(frame.start, True), position(frame.end, False)


def session_positions(frame: Frame, rows: Sequence[Row], i: int, value_of: Callable[[Row], Any]
                 ) -> tuple[int, int]:
    """The positions ``lo..hi`` of the session of row ``i`` (ascending ORDER BY): the rows
    reached from it, backwards and forwards, by steps between consecutive rows of less than
    the gap; rows with a NULL value (sorted last) form one session."""
    assert frame.gap is not None
    gap, n = frame.gap, len(rows)

    def joined(a: Row, b: Row) -> bool:
        """``b``, the row after ``a``, is in ``a``'s session."""
        x, y = value_of(a), value_of(b)
        if x is None or y is None:
            return x is None and y is None
        return y - x < gap
    lo = i
    while lo > 0 and joined(rows[lo - 1], rows[lo]):
        lo -= 1
    hi = i
    while hi + 1 < n and joined(rows[hi], rows[hi + 1]):
        hi += 1
    return lo, hi


def _needed(call: Any, value_of: Callable[[Row], Any], descending: bool
            ) -> Callable[[Sequence[Row], int], Any] | None:
    """What a call waits for beyond the row's own order value (None: nothing more)."""
    if call.function in ("lag", "row_number", "rank", "dense_rank"):
        return None
    if call.function == "lead":
        k = call.args[1].value if len(call.args) > 1 else 1
        return _following_row(k, value_of) if k > 0 else None
    frame: Frame = call.frame
    if frame.kind == "session":
        return _session_closes(frame, value_of)
    if frame.end is None:
        return lambda rows, i: None
    if frame.end <= 0:
        return None
    if frame.kind == "rows":
        return _following_row(frame.end, value_of)
    end = frame.end
    return lambda rows, i: value_of(rows[i]) + end


def _session_closes(frame: Frame, value_of: Callable[[Row], Any]
                    ) -> Callable[[Sequence[Row], int], Any]:
    """A SESSION frame waits for its session to close (:func:`session_is_closed`): the
    latest time a row would still join it (:func:`session_last_open_time` of its last row)
    must be complete; None (the end of the input) for the session of NULL values."""
    assert frame.gap is not None
    gap = frame.gap

    def needed(rows: Sequence[Row], i: int) -> Any:
        last = value_of(rows[session_positions(frame, rows, i, value_of)[1]])
        return None if last is None else session_last_open_time(last, gap)
    return needed


def _following_row(k: int, value_of: Callable[[Row], Any]) -> Callable[[Sequence[Row], int], Any]:
    def needed(rows: Sequence[Row], i: int) -> Any:
        return value_of(rows[i + k]) if i + k < len(rows) else None
    return needed


def partition_results(compiled: CompiledOver, rows: Sequence[Row]
                      ) -> list[tuple[Row, Any]]:
    """One partition's rows (any order), sorted, each with its results appended and the
    order value it waits for (:meth:`CompiledOver.needed_value`)."""
    ordered = sorted(rows, key=compiled.sort_key)
    keys = [compiled.order(r) for r in ordered]
    return [(row + compiled.results(ordered, keys, i), compiled.needed_value(ordered, i))
            for i, row in enumerate(ordered)]


def over_results(compiled: CompiledOver, rows: Sequence[Row]) -> list[tuple[Row, Any]]:
    """Every row of the batch ``rows`` with its window-function results (Q over INPUT), by
    partition, each with the order value it waits for."""
    partitions: dict[Row, list[Row]] = {}
    for row in rows:
        partitions.setdefault(compiled.partition(row), []).append(row)
    return [result for members in partitions.values()
            for result in partition_results(compiled, members)]


class OverPartition:
    """One partition of an OVER window: its kept rows sorted (with their sort and ORDER BY
    keys), how many of them were emitted (a prefix), and how many rows (and distinct ORDER BY
    keys) were dropped in front: emitted rows no future frame reads
    (:attr:`CompiledOver.reach`), all ordered strictly before every kept row."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.sort_keys: list[Any] = []
        self.keys: list[Any] = []
        self.emitted = 0
        self.dropped = 0
        self.dropped_keys = 0

    @property
    def pending(self) -> bool:
        return self.emitted < len(self.rows)

    def add(self, over: CompiledOver, row: Row) -> int:
        """Insert ``row`` in order; its position."""
        key = over.sort_key(row)
        at = bisect.bisect_right(self.sort_keys, key)
        self.sort_keys.insert(at, key)
        self.keys.insert(at, key[0])
        self.rows.insert(at, row)
        return at

    def pop_final(self, over: CompiledOver, watermark: Watermark, convention: Convention
                  ) -> list[tuple[Any, Any, Row]]:
        """The pending rows now final, each ``(sort key, partition, row with results)``."""
        done = []
        while self.pending and frame_is_complete(over.needed_value(self.rows, self.emitted),
                                                 watermark, convention):
            i = self.emitted
            row = self.rows[i] + over.results(self.rows, self.keys, i,
                                              (self.dropped, self.dropped_keys))
            done.append((self.sort_keys[i], over.partition(self.rows[i]), row))
            self.emitted += 1
        self.emitted -= self.prune_before(over, self.emitted, watermark)
        return done

    def prune_before(self, over: CompiledOver, first_open: int, watermark: Watermark) -> int:
        """Drop rows that no result still to be computed reads: the results of the rows from
        ``first_open`` on (pending, or still changing) and of rows still to come, which are
        not late at ``watermark`` (so their ORDER BY value is at least ``watermark``). Keep
        the ``reach`` rows before ``first_open`` and, of those before, the rows whose ORDER
        BY value is at most ``value_reach`` below the least of those values; never drop a
        peer of a kept row (ranks count peers). Returns how many rows were dropped."""
        reach = over.reach
        if reach is None or not self.rows:
            return 0
        cut = max(0, first_open - reach)
        if over.value_reach is not None:
            least = watermark if first_open >= len(self.rows) else \
                min(watermark, over.order_value(self.rows[first_open]))
            lowest = least - over.value_reach
            cut = bisect.bisect_left([over.order_value(r) for r in self.rows[:cut]], lowest)
        while cut > 0 and cut < len(self.keys) and self.keys[cut - 1] == self.keys[cut]:
            cut -= 1
        if cut == 0:
            return 0
        self.dropped += cut
        self.dropped_keys += len(set(self.keys[:cut]))
        if cut < len(self.keys) and self.keys[cut] == self.keys[cut - 1]:  # pragma: no cover
            raise AssertionError("a peer of a kept row was dropped")
        del self.rows[:cut], self.sort_keys[:cut], self.keys[:cut]
        return cut
