"""The order of ORDER BY in the executors' operators (OVER, TopN, MATCH_RECOGNIZE): NULLs last
ascending and first descending (PostgreSQL's default), ties broken by the project's total
order (:func:`eowc.semantics.ir.plan.tie_break`), never by arrival."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import total_ordering
from typing import Any

from eowc.semantics.ir.expr import Expr, Row, Schema, compile_expr
from eowc.semantics.ir.values import value_rules


@total_ordering
class Reversed:
    """A sort key that orders in reverse: the key of a DESC column."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: Reversed) -> bool:
        return bool(other.key < self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reversed) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"DESC {self.key!r}"


def order_by_key(order_by: Sequence[tuple[Expr, bool]], schema: Schema
                 ) -> Callable[[Row], tuple[Any, ...]]:
    """The key of a row under ORDER BY ``order_by`` (expression, descending): per expression
    ``(is NULL, value)``, so NULLs sort last, reversed for DESC, so they sort first there (the
    other way round where the engine sorts NULLs low: ``nulls_sort``)."""
    columns = [(compile_expr(e, schema).evaluate, descending) for e, descending in order_by]
    high = value_rules().nulls_sort == "high"

    def key(row: Row) -> tuple[Any, ...]:
        out = []
        for value_of, descending in columns:
            value = value_of(row)
            plain = (high, 0) if value is None else (not high, value)
            out.append(Reversed(plain) if descending else plain)
        return tuple(out)
    return key
