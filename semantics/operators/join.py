"""The join of Definition 4 (seed 001): an equality-keyed join with the time bounds of its
condition (interval joins, window joins). A joined row is emitted as soon as the later of its
two rows is in INPUT; a kept row leaves the state, NULL-padded into the output if it is an
outer side's and never matched, once no row that can still arrive on the other side can
match it (:func:`eowc.semantics.rules.triggers.unmatched_row_is_final`)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eowc.semantics.analysis.watermark_derivation import (
    Derivation,
    as_join_reads,
    conjuncts,
    derive,
    join_time_bounds,
    watermark_in_reading,
)
from eowc.semantics.ir.expr import Binary, ColumnRef, Row, compile_expr
from eowc.semantics.ir.plan import Join
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    unmatched_row_is_final,
)


class JoinSide:
    """One input's rows in a join's state: by equality key (for matching) and, for each time
    bound of the condition in their direction, in a heap by the value whose completeness ends
    their chance of a match (for cleaning). A match needs every conjunct, so a row is final
    as soon as one bound says no row still to come can meet it: it leaves the state when it
    first reaches the top of a heap whose bound is final (an entry that left through another
    heap is skipped)."""

    def __init__(self, key: Callable[[Row], Row], untils: tuple[Callable[[Row], Any], ...],
                 others: tuple[Derivation | None, ...], outer: bool, width: int) -> None:
        self.key, self.untils, self.others = key, untils, others
        self.outer, self.width = outer, width
        self.by_key: dict[Row, list[list[Any]]] = {}
        #: One heap per bound; without a bound one heap that only the end of the input empties.
        self.heaps: list[list[tuple[Any, int, list[Any]]]] = [[] for _ in untils] or [[]]
        self.added = self.kept = 0

    def add(self, row: Row) -> list[Any]:
        """Keep ``row``; its entry is ``[row, matched, left the state]``."""
        entry = [row, False, False]
        key = self.key(row)
        if None not in key:
            self.by_key.setdefault(key, []).append(entry)
        self.added += 1
        self.kept += 1
        if not self.untils:
            heapq.heappush(self.heaps[0], (CLOSED_WATERMARK, self.added, entry))
        for heap, until in zip(self.heaps, self.untils, strict=True):
            value = until(row)
            heapq.heappush(heap, (NO_WATERMARK if value is None else value, self.added, entry))
        return entry

    def candidates(self, key: Row) -> list[list[Any]]:
        return self.by_key.get(key, []) if None not in key else []

    def release(self, finals: tuple[Callable[[Any], bool], ...]) -> list[Row]:
        """Drop the rows no future row of the other side can match (``finals``: one test per
        heap, :func:`final_bounds`); return the unmatched ones of an outer side."""
        unmatched = []
        for heap, final in zip(self.heaps, finals, strict=True):
            while heap and final(heap[0][0]):
                _, _, entry = heapq.heappop(heap)
                if entry[2]:
                    continue
                entry[2] = True
                self.kept -= 1
                rows = self.by_key.get(self.key(entry[0]))
                if rows is not None:
                    rows[:] = [e for e in rows if e is not entry]
                    if not rows:
                        del self.by_key[self.key(entry[0])]
                if self.outer and not entry[1]:
                    unmatched.append(entry[0])
        if len(self.heaps) > 1:  # drop the entries that left through another heap
            for heap in self.heaps:
                if len(heap) > 2 * self.kept + 64:
                    heap[:] = [item for item in heap if not item[2][2]]
                    heapq.heapify(heap)
        return unmatched

    @property
    def size(self) -> int:
        return self.kept


@dataclass(frozen=True)
class CompiledJoin:
    """A join's condition bound to its sides: the equality key of each side, the whole
    condition over a joined row, and per side, for each time bound in its direction, the
    value whose completeness ends a row's chance of a match (``until``: for ``l.t >= r.t +
    a`` a left row meets right rows with ``r.t <= l.t - a``) with the other side's column
    that decides it (``other``, a derivation from the source watermarks); empty without a
    time bound in that direction."""

    kind: str
    condition: Callable[[Row], Any]
    left_key: Callable[[Row], Row]
    right_key: Callable[[Row], Row]
    left_until: tuple[Callable[[Row], Any], ...]
    right_until: tuple[Callable[[Row], Any], ...]
    left_other: tuple[Derivation | None, ...]
    right_other: tuple[Derivation | None, ...]
    left_width: int
    right_width: int

    @property
    def left_outer(self) -> bool:
        return self.kind in ("left", "full", "anti")

    @property
    def right_outer(self) -> bool:
        return self.kind in ("right", "full")


def compile_join(plan: Join, convention: Convention) -> CompiledJoin:
    """Bind ``plan``'s condition (:class:`CompiledJoin`): its ``a = b`` conjuncts of a left
    and a right column are the equality key; every time bound (:func:`join_time_bounds`)
    gives an ``until`` of the side it bounds."""
    left_names, right_names = plan.sides
    condition = compile_expr(plan.condition, plan.joined_schema).evaluate
    left_keys, right_keys = [], []
    for conjunct in conjuncts(plan.condition):
        if isinstance(conjunct, Binary) and conjunct.op == "=" and \
                isinstance(conjunct.left, ColumnRef) and isinstance(conjunct.right, ColumnRef):
            a, b = conjunct.left.name, conjunct.right.name
            if a in right_names and b in left_names:
                a, b = b, a
            if a in left_names and b in right_names:
                left_keys.append(left_names.index(a))
                right_keys.append(right_names.index(b))
    bounds = join_time_bounds(plan)
    left_derived, right_derived = derive(plan.left).columns, derive(plan.right).columns
    # left >= right + lower: a left row meets right rows <= left - lower
    lowers = [b for b in bounds if b.lower is not None]
    # left <= right + upper: a right row meets left rows <= right + upper
    uppers = [b for b in bounds if b.upper is not None]
    left_until = tuple(_shifted(left_names.index(b.left), -b.lower) for b in lowers)
    right_until = tuple(_shifted(right_names.index(b.right), b.upper) for b in uppers)
    left_other = tuple(as_join_reads(right_derived[right_names.index(b.right)], b,
                                     left_derived[left_names.index(b.left)], convention)
                       for b in lowers)
    right_other = tuple(as_join_reads(left_derived[left_names.index(b.left)], b,
                                      right_derived[right_names.index(b.right)], convention)
                        for b in uppers)
    return CompiledJoin(plan.kind, condition, _picker(left_keys), _picker(right_keys),
                        left_until, right_until, left_other, right_other, len(left_names), len(right_names))


def _shifted(at: int, shift: int) -> Callable[[Row], Any]:
    """The bound value ``row[at] + shift`` (None for a NULL time)."""
    return lambda row: None if row[at] is None else row[at] + shift


def other_side_watermark(other: Derivation | None, after: Mapping[str, Watermark],
                         convention: Convention, join_margin: int | None = None
                         ) -> Watermark | None:
    """The watermark, in ``convention``'s reading, of the other side's column that decides
    whether a row can still match (None: no time bound, only the end of the input);
    ``join_margin`` as :func:`watermark_in_reading`'s."""
    return None if other is None else watermark_in_reading(other, after, convention, join_margin)


def can_still_match(until: Any, other: Watermark | None, closed: bool,
                    convention: Convention) -> bool:
    """Whether a kept row (``until``: its bound value, None for a NULL time) can still meet a
    row of the other side by one bound: not :func:`unmatched_row_is_final`."""
    if closed:
        return False
    if other is None:
        return until is not None  # no time bound: only a NULL bound column is final
    return not unmatched_row_is_final(until, other, convention)


def final_bounds(others: tuple[Derivation | None, ...], after: Mapping[str, Watermark], closed: bool,
                 convention: Convention, join_margin: int | None = None
                 ) -> tuple[Callable[[Any], bool], ...]:
    """Per bound of a side (per heap of its :class:`JoinSide`; one test without a bound),
    whether a kept row with bound value ``until`` (NO_WATERMARK for a NULL time) is final
    after an epoch: no row still to come on the other side (whose deciding column derives
    as ``other``) can meet it by that bound (:func:`can_still_match`); ``join_margin`` as
    :func:`watermark_in_reading`'s."""
    if closed:
        return tuple(lambda until: True for _ in others or (None,))
    tests = []
    for watermark in [other_side_watermark(o, after, convention, join_margin)
                      for o in others] or [None]:
        tests.append(lambda until, w=watermark: not can_still_match(
            None if until == NO_WATERMARK else until, w, closed, convention))
    return tuple(tests)


def _picker(indexes: list[int]) -> Callable[[Row], Row]:
    return lambda row: tuple(row[i] for i in indexes)
