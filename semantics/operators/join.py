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
    """One input's rows in a join's state: by equality key (for matching) and in a heap by
    the value whose completeness ends their chance of a match (for cleaning)."""

    def __init__(self, key: Callable[[Row], Row], until: Callable[[Row], Any] | None,
                 other: Derivation | None, outer: bool, width: int) -> None:
        self.key, self.until, self.other, self.outer, self.width = key, until, other, outer, width
        self.by_key: dict[Row, list[list[Any]]] = {}
        self.heap: list[tuple[Any, int, list[Any]]] = []
        self.added = 0

    def add(self, row: Row) -> list[Any]:
        """Keep ``row``; its entry is ``[row, matched]``."""
        entry = [row, False]
        key = self.key(row)
        if None not in key:
            self.by_key.setdefault(key, []).append(entry)
        value = self.until(row) if self.until is not None else CLOSED_WATERMARK
        self.added += 1
        heapq.heappush(self.heap, (NO_WATERMARK if value is None else value, self.added, entry))
        return entry

    def candidates(self, key: Row) -> list[list[Any]]:
        return self.by_key.get(key, []) if None not in key else []

    def release(self, final: Callable[[Any], bool]) -> list[Row]:
        """Drop the rows no future row of the other side can match; return the unmatched ones
        of an outer side."""
        unmatched = []
        while self.heap and final(self.heap[0][0]):
            _, _, entry = heapq.heappop(self.heap)
            rows = self.by_key.get(self.key(entry[0]))
            if rows is not None:
                rows[:] = [e for e in rows if e is not entry]
                if not rows:
                    del self.by_key[self.key(entry[0])]
            if self.outer and not entry[1]:
                unmatched.append(entry[0])
        return unmatched

    @property
    def size(self) -> int:
        return len(self.heap)


@dataclass(frozen=True)
class CompiledJoin:
    """A join's condition bound to its sides: the equality key of each side, the whole
    condition over a joined row, and per side the value whose completeness ends a row's chance
    of a match (``until``: for ``l.t >= r.t + a`` a left row meets right rows with
    ``r.t <= l.t - a``) with the other side's column that decides it (``other``, a derivation
    from the source watermarks); None without a time bound in that direction."""

    kind: str
    condition: Callable[[Row], Any]
    left_key: Callable[[Row], Row]
    right_key: Callable[[Row], Row]
    left_until: Callable[[Row], Any] | None
    right_until: Callable[[Row], Any] | None
    left_other: Derivation | None
    right_other: Derivation | None
    left_width: int
    right_width: int

    @property
    def left_outer(self) -> bool:
        return self.kind in ("left", "full", "anti")

    @property
    def right_outer(self) -> bool:
        return self.kind in ("right", "full")


def compile_join(plan: Join) -> CompiledJoin:
    """Bind ``plan``'s condition (:class:`CompiledJoin`)."""
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
    lower = next((b for b in bounds if b.lower is not None), None)
    upper = next((b for b in bounds if b.upper is not None), None)
    left_until = right_until = None
    left_other = right_other = None
    if lower is not None:  # left >= right + lower: a left row meets right rows <= left - lower
        i, shift = left_names.index(lower.left), lower.lower

        def left_until(row: Row, i: int = i, shift: int = shift) -> Any:
            return None if row[i] is None else row[i] - shift
        left_other = right_derived[right_names.index(lower.right)]
    if upper is not None:  # left <= right + upper: a right row meets left rows <= right + upper
        j, shift_up = right_names.index(upper.right), upper.upper

        def right_until(row: Row, j: int = j, shift: int = shift_up) -> Any:
            return None if row[j] is None else row[j] + shift
        right_other = left_derived[left_names.index(upper.left)]
    return CompiledJoin(plan.kind, condition, _picker(left_keys), _picker(right_keys),
                        left_until, right_until, left_other, right_other, len(left_names),
                        len(right_names))


def other_side_watermark(other: Derivation | None, after: Mapping[str, Watermark],
                         convention: Convention) -> Watermark | None:
    """The watermark, in ``convention``'s reading, of the other side's column that decides
    whether a row can still match (None: no time bound, only the end of the input)."""
    return None if other is None else watermark_in_reading(other, after, convention)


def can_still_match(until: Any, other: Watermark | None, closed: bool,
                    convention: Convention) -> bool:
    """Whether a kept row (``until``: its bound value, None for a NULL time) can still meet a
    row of the other side: not :func:`unmatched_row_is_final`."""
    if closed:
        return False
    if other is None:
        return until is not None  # no time bound: only a NULL bound column is final
    return not unmatched_row_is_final(until, other, convention)


def final_bounds(other: Derivation | None, after: Mapping[str, Watermark], closed: bool,
                 convention: Convention) -> Callable[[Any], bool]:
    """Whether a kept row with bound value ``until`` (NO_WATERMARK for a NULL time) is final
    after an epoch: no row still to come on the other side (whose deciding column derives
    as ``other``) can match it (:func:`can_still_match`)."""
    if closed:
        return lambda until: True
    watermark = other_side_watermark(other, after, convention)
    return lambda until: not can_still_match(None if until == NO_WATERMARK else until,
                                             watermark, closed, convention)


def _picker(indexes: list[int]) -> Callable[[Row], Row]:
    return lambda row: tuple(row[i] for i in indexes)
