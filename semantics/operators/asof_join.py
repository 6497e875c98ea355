"""RisingWave's ASOF join (:class:`~eowc.semantics.ir.plan.AsofJoin`): each left row joins the
one right row of equal keys whose ordered value is the closest that satisfies the join's
inequality, ties among equal ordered values going to the first right row in the tie order
(the primary key, then the whole row; RisingWave: the lowest stream key); ASOF LEFT JOIN pads
a left row without one with NULLs.

A left row's match depends only on the rows of its equality key, so the result is the union,
over the keys, of :func:`key_matches` of that key's rows: emitting on update, a key's old
rows go out and its new rows come in whenever its rows change (a closer right row revises the
match: the old joined row is retracted, the new one inserted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row, compile_expr
from eowc.semantics.ir.plan import ArrivalOrder, AsofJoin, Query, Scan, tie_break, walk


def refuse_asof_under_eowc(query: Query) -> None:
    """A PlanError if the EOWC ``query`` has an ASOF join (:attr:`AsofJoin.not_under_eowc`)."""
    asof = next((n for n in walk(query.plan) if isinstance(n, AsofJoin)), None)
    if asof is not None:
        raise PlanError(asof.not_under_eowc)


@dataclass(frozen=True)
class CompiledAsof:
    """An ASOF join bound to its sides: each side's equality key and ordered value of one of
    its rows, the inequality ``left OP right``, and the right rows' tie order."""

    kind: str
    op: str
    left_key: Callable[[Row], Row]
    right_key: Callable[[Row], Row]
    left_order: Callable[[Row], Any]
    right_order: Callable[[Row], Any]
    tie: Callable[[Row], Any]
    right_width: int

    @property
    def padding(self) -> Row:
        return (None,) * self.right_width


def compile_asof(plan: AsofJoin, arrival: ArrivalOrder | None = None) -> CompiledAsof:
    """Bind ``plan``'s keys and inequality to its sides' rows; ties in arrival order with
    ``arrival`` (``--ties row-id``) for a right side without a primary key."""
    schema = plan.joined_schema
    left_width, right_width = len(plan.left.schema), len(plan.right.schema)
    left_pad, right_pad = (None,) * right_width, (None,) * left_width

    def on_left(expr: Any) -> Callable[[Row], Any]:
        evaluate = compile_expr(expr, schema).evaluate
        return lambda row: evaluate(row + left_pad)

    def on_right(expr: Any) -> Callable[[Row], Any]:
        evaluate = compile_expr(expr, schema).evaluate
        return lambda row: evaluate(right_pad + row)

    left_keys = [on_left(k) for k in plan.left_keys]
    right_keys = [on_right(k) for k in plan.right_keys]
    source = next(n.source for n in walk(plan.right) if isinstance(n, Scan))
    return CompiledAsof(plan.kind, plan.op, lambda row: tuple(k(row) for k in left_keys),
                        lambda row: tuple(k(row) for k in right_keys), on_left(plan.left_order),
                        on_right(plan.right_order),
                        tie_break(plan.right.schema, source, arrival), right_width)


def satisfies(left: Any, op: str, right: Any) -> bool:
    """``left OP right`` is TRUE (a NULL satisfies nothing)."""
    if left is None or right is None:
        return False
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def best_match(asof: CompiledAsof, row: Row, candidates: list[Row]) -> Row | None:
    """The right row among ``candidates`` (of ``row``'s key) that ``row`` joins: the closest
    ordered value satisfying the inequality (the least for ``<``/``<=``, the greatest for
    ``>``/``>=``), then the first in the tie order; None if none satisfies it."""
    value = asof.left_order(row)
    allowed = [r for r in candidates if satisfies(value, asof.op, asof.right_order(r))]
    if not allowed:
        return None
    pick = min if asof.op in ("<", "<=") else max
    closest = pick(asof.right_order(r) for r in allowed)
    return min((r for r in allowed if asof.right_order(r) == closest), key=asof.tie)


def key_matches(asof: CompiledAsof, key: Row, left: list[Row], right: list[Row]) -> list[Row]:
    """The joined rows of one equality key's left and right rows (a key with a NULL matches
    nothing): each left row with its match, or NULL-padded (LEFT) without one."""
    out = []
    for row in left:
        match = None if None in key else best_match(asof, row, right)
        if match is not None:
            out.append(row + match)
        elif asof.kind == "left":
            out.append(row + asof.padding)
    return out
