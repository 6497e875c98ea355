"""The parts of a composed query the composed executor (:mod:`eowc.executors.composed`) runs
between its stages: the input of a stage as a tree of nodes stepped once per batch (sources,
filters, projections, window TVFs, unions, joins, and the stages below), and each join's
condition bound to its sides.

Written for the executors, independently of the reference interpreter's engines. Shared with
the reference: the plan, the watermark derivation and a join's time bounds
(``eowc.semantics.analysis``) and the trigger of an unmatched row
(:func:`eowc.semantics.rules.triggers.unmatched_row_is_final`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Generic, TypeVar

from eowc.executors.plan import Stateless, stateless_part
from eowc.semantics.analysis.operator_inputs import is_emitting
from eowc.semantics.analysis.watermark_derivation import (
    Derivation,
    as_join_reads,
    conjuncts,
    derive,
    join_time_bounds,
    watermark_in_reading,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Binary, ColumnRef, Row, compile_expr
from eowc.semantics.ir.plan import (
    Filter,
    Join,
    Plan,
    Project,
    ProjectSet,
    Scan,
    Source,
    Union,
    WindowTVF,
    walk,
)
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    unmatched_row_is_final,
)

#: Source watermarks by source column (``table.column``), as derivations read them.
Marks = dict[str, Watermark]
T = TypeVar("T")


class LastMarks(Generic[T]):
    """A value computed from watermarks (or from what they are computed from, a mapping),
    kept for the last two asked (a batch's before and after): every shard of a batch asks
    with the same watermarks, so it is computed once per batch rather than once per shard."""

    def __init__(self, compute: Callable[[Mapping[str, Any]], T]) -> None:
        self.compute = compute
        self.known: dict[tuple[tuple[str, Any], ...], T] = {}

    def __call__(self, marks: Mapping[str, Any]) -> T:
        asked = tuple(marks.items())
        value = self.known.get(asked)
        if value is None:
            value = self.known[asked] = self.compute(marks)
            if len(self.known) > 2:
                del self.known[next(iter(self.known))]
        return value


def sources_of(plan: Plan) -> list[Source]:
    """The sources ``plan`` reads, each once, in plan order."""
    return list(dict.fromkeys(n.source for n in walk(plan) if isinstance(n, Scan)))


# ------------------------------------------------------------------------ a stage's input

class LowerNode:
    """A node of a stage's input: per batch, from each source's admitted rows and the source
    watermarks after the batch, its new output rows."""

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        raise NotImplementedError


@dataclass
class SourceRows(LowerNode):
    source: Source

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        return rows.get(self.source.name, [])


@dataclass
class RowByRow(LowerNode):
    """Filters, projections and window TVFs over the node below."""

    input: LowerNode
    part: Stateless

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        part = self.part
        return [out for row in self.input.step(rows, after) for out in part(row)]


@dataclass
class ShardRows(LowerNode):
    """A side of a join keyed by its equality key, in its shard: the rows that reached the
    shard for it under ``name`` (made by the side's stateless steps on their way there, and
    admitted by the late check)."""

    name: str

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        return rows.get(self.name, [])


def source_under_steps(node: LowerNode) -> Source | None:
    """The source ``node`` reads when ``node`` is only stateless steps (filters,
    projections, window TVFs) over it, row by row; else None."""
    while isinstance(node, RowByRow):
        node = node.input
    return node.source if isinstance(node, SourceRows) else None


@dataclass
class UnionAll(LowerNode):
    inputs: list[LowerNode]

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        return [row for node in self.inputs for row in node.step(rows, after)]


def lower_nodes(plan: Plan, stage: Callable[[Plan], LowerNode],
                join: Callable[[Join, LowerNode, LowerNode], LowerNode]) -> LowerNode:
    """The node tree of ``plan``, the input of a stage: ``stage`` makes the node of a
    stateful operator (:func:`~eowc.semantics.analysis.operator_inputs.is_emitting`), ``join``
    that of a join over its two inputs' nodes."""
    def below(p: Plan) -> LowerNode:
        return lower_nodes(p, stage, join)
    if isinstance(plan, Scan):
        return SourceRows(plan.source)
    if is_emitting(plan):
        return stage(plan)
    if isinstance(plan, Union):
        return UnionAll([below(p) for p in plan.inputs])
    if isinstance(plan, Join):
        return join(plan, below(plan.left), below(plan.right))
    if isinstance(plan, Filter | Project | ProjectSet | WindowTVF):
        return RowByRow(below(plan.input), stateless_part([plan]))
    raise PlanError(f"{type(plan).__name__} is not executed over a join, a union or another "
                    f"operator")


# ---------------------------------------------------------------------------- a join

@dataclass(frozen=True)
class JoinSides:
    """A join's condition bound to its two sides: each side's equality key, the whole
    condition over a joined row, the widths of the sides, and per side ``until``, the value
    whose completeness ends a row's chance of a match (for ``l.t >= r.t + a`` a left row
    meets right rows with ``r.t <= l.t - a``), decided by the other side's column that
    derives as ``other`` (None: no time bound in that direction). Per side ``reach``: every
    row of the other side that a row with ``until`` u can meet has its own ``until`` at most
    ``u + reach`` (None: no such bound, when the two bounds are on different columns).
    ``key_width`` is the number of columns of the equality key (0: none, as in a cross join,
    when every row of one side may meet every row of the other)."""

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
    left_reach: int | None = None
    right_reach: int | None = None
    key_width: int = 0

    @property
    def left_outer(self) -> bool:
        return self.kind in ("left", "full", "anti")

    @property
    def right_outer(self) -> bool:
        return self.kind in ("right", "full")


def _columns(positions: list[int]) -> Callable[[Row], Row]:
    """The row's values at ``positions``, as a row."""
    if len(positions) == 1:
        (at,) = positions
        return lambda row: (row[at],)
    return itemgetter(*positions) if positions else lambda row: ()


def _shifted(at: int, shift: int) -> Callable[[Row], Any]:
    return lambda row: None if row[at] is None else row[at] + shift


def join_sides(plan: Join, convention: Convention) -> JoinSides:
    """Bind ``plan``'s condition: its ``a = b`` conjuncts of a left and a right column are
    the equality key; its time bounds (:func:`join_time_bounds`) the ``until`` of each side,
    a bound on window ends first (every window bound of a window join decides when a window
    is complete on the other side, but a bound on CUMULATE windows' shared start only at the
    end of their cycle)."""
    left_names, right_names = plan.sides
    left_keys, right_keys = [], []
    for conjunct in conjuncts(plan.condition):
        if not (isinstance(conjunct, Binary) and conjunct.op == "=" and
                isinstance(conjunct.left, ColumnRef) and isinstance(conjunct.right, ColumnRef)):
            continue
        a, b = conjunct.left.name, conjunct.right.name
        if a in right_names and b in left_names:
            a, b = b, a
        if a in left_names and b in right_names:
            left_keys.append(left_names.index(a))
            right_keys.append(right_names.index(b))
    left_roles = [d.role if d is not None else None for d in derive(plan.left).columns]
    bounds = sorted(join_time_bounds(plan),
                    key=lambda b: left_roles[left_names.index(b.left)] != "window_end")
    lower = next((b for b in bounds if b.lower is not None), None)
    upper = next((b for b in bounds if b.upper is not None), None)
    left_until = right_until = None
    left_other = right_other = None
    if lower is not None:  # left >= right + lower: a left row meets right rows <= left - lower
        left_until = _shifted(left_names.index(lower.left), -lower.lower)
        left_other = as_join_reads(derive(plan.right).columns[right_names.index(lower.right)],
                                   lower, derive(plan.left).columns[left_names.index(lower.left)],
                                   convention)
    if upper is not None:  # left <= right + upper: a right row meets left rows <= right + upper
        right_until = _shifted(right_names.index(upper.right), upper.upper)
        right_other = as_join_reads(derive(plan.left).columns[left_names.index(upper.left)],
                                    upper, derive(plan.right).columns[right_names.index(upper.right)],
                                    convention)
    left_reach = right_reach = None
    if lower is not None and upper is not None:
        # a left row meets right rows with r.t <= its until; theirs is r.t + upper on the same column
        left_reach = upper.upper if lower.right == upper.right else None
        # a right row meets left rows with l.t <= its until; theirs is l.t - lower on the same column
        right_reach = -lower.lower if lower.left == upper.left else None
    return JoinSides(plan.kind, compile_expr(plan.condition, plan.joined_schema).evaluate,
                     _columns(left_keys), _columns(right_keys), left_until, right_until,
                     left_other, right_other, len(left_names), len(right_names), left_reach,
                     right_reach, len(left_keys))


def no_match_can_come(other: Derivation | None, after: Mapping[str, Watermark], closed: bool,
                      convention: Convention, join_margin: int | None = None
                      ) -> Callable[[Any], bool]:
    """Whether a kept row whose ``until`` value is given (NO_WATERMARK for a NULL time) can
    meet no row still to come on the other side (whose deciding column derives as
    ``other``): every row at the end of the input; without a time bound only a row with a
    NULL bound; else :func:`unmatched_row_is_final` at the other column's watermark
    (``join_margin`` as :func:`watermark_in_reading`'s)."""
    if closed:
        return lambda until: True
    if other is None:
        return lambda until: until == NO_WATERMARK
    watermark = watermark_in_reading(other, after, convention, join_margin)
    return lambda until: unmatched_row_is_final(None if until == NO_WATERMARK else until,
                                                watermark, convention)


def is_closed(after: Marks) -> bool:
    """Every source watermark is at +infinity: the end of the input."""
    return all(w == CLOSED_WATERMARK for w in after.values())
