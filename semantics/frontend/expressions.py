"""Scalar SQL expressions: a sqlglot expression to a plan :class:`~eowc.semantics.ir.expr.Expr`
(:func:`translate`), with the literals it reads (``INTERVAL`` lengths, type names). Both the
query planner (:mod:`eowc.semantics.frontend.sql`) and ``MATCH_RECOGNIZE``
(:mod:`eowc.semantics.frontend.match_sql`) translate expressions with it.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from eowc.semantics.errors import SqlError
from eowc.semantics.ir.expr import (
    Binary,
    Case,
    Cast,
    ColumnRef,
    Expr,
    Func,
    InList,
    IsNull,
    Literal,
    Unary,
)
from eowc.semantics.ir.values import MICROS_PER_SECOND, TYPE_NAMES, SqlType

#: The dialect sqlglot parses and prints the queries in.
DIALECT = "risingwave"

_UNIT_MICROS = {
    "microsecond": 1, "millisecond": 1_000, "second": MICROS_PER_SECOND,
    "minute": 60 * MICROS_PER_SECOND, "hour": 3600 * MICROS_PER_SECOND,
    "day": 86400 * MICROS_PER_SECOND, "week": 7 * 86400 * MICROS_PER_SECOND,
}


def interval_micros(node: exp.Expression) -> int:
    """An ``INTERVAL 'n' UNIT`` literal in microseconds (fixed-length units only)."""
    if not isinstance(node, exp.Interval):
        raise SqlError("expected an INTERVAL literal", node.sql(dialect=DIALECT))
    amount, unit = node.this, node.args.get("unit")
    text = amount.name if isinstance(amount, exp.Literal) else amount.sql()
    unit_name = unit.name if unit is not None else ""
    if not unit_name and " " in text.strip():
        text, unit_name = text.strip().split(None, 1)
    unit_name = unit_name.lower().rstrip("s") if unit_name.lower() != "s" else "second"
    if unit_name not in _UNIT_MICROS:
        raise SqlError(f"interval unit {unit_name or '(none)'} has no fixed length; use "
                       f"microseconds to weeks", node.sql(dialect=DIALECT))
    try:
        return round(float(text) * _UNIT_MICROS[unit_name])
    except ValueError:
        raise SqlError("expected a number in the INTERVAL", node.sql(dialect=DIALECT)) from None


def sql_type(node: exp.DataType, fragment: str) -> SqlType:
    """The SQL type a column or CAST names (``fragment``: where, for the error)."""
    name = node.this.name if hasattr(node.this, "name") else str(node.this)
    name = {"DOUBLE": "DOUBLE", "TIMESTAMPTZ": "TIMESTAMPTZ", "TEXT": "TEXT"}.get(name, name)
    if name not in TYPE_NAMES:
        raise SqlError(f"unsupported column type {node.sql()}", fragment)
    return TYPE_NAMES[name]


_BINARY = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.DPipe: "||",
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
    exp.And: "AND", exp.Or: "OR",
}
_SIMPLE_FUNCTIONS = {
    exp.Abs: "abs", exp.Floor: "floor", exp.Ceil: "ceil", exp.Round: "round",
    exp.Lower: "lower", exp.Upper: "upper", exp.Length: "length", exp.Sqrt: "sqrt",
}
Hook = Callable[[exp.Expression], Expr | None]


def translate(node: exp.Expression, hook: Hook | None = None) -> Expr:
    """A sqlglot scalar expression to a plan expression; ``hook`` may replace any subtree."""
    if hook is not None:
        replaced = hook(node)
        if replaced is not None:
            return replaced

    def sub(child: exp.Expression) -> Expr:
        return translate(child, hook)

    if isinstance(node, exp.Paren):
        return sub(node.this)
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise SqlError("t.* is only allowed as a whole SELECT item", node.sql())
        return ColumnRef(node.name)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal(node.name, SqlType.VARCHAR)
        text = node.name
        if any(ch in text for ch in ".eE"):
            return Literal(float(text), SqlType.DOUBLE)
        return Literal(int(text), SqlType.BIGINT)
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this), SqlType.BOOLEAN)
    if isinstance(node, exp.Null):
        return Literal(None, SqlType.NULL)
    if isinstance(node, exp.Interval):
        return Literal(interval_micros(node), SqlType.INTERVAL)
    for kind, op in _BINARY.items():
        if type(node) is kind:
            return Binary(op, sub(node.this), sub(node.expression))
    if isinstance(node, exp.Neg):
        return Unary("-", sub(node.this))
    if isinstance(node, exp.Not):
        if isinstance(node.this, exp.Is):
            inner = translate(node.this, hook)
            assert isinstance(inner, IsNull)
            return IsNull(inner.operand, negated=not inner.negated)
        return Unary("NOT", sub(node.this))
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise SqlError("only IS [NOT] NULL is supported", node.sql())
        return IsNull(sub(node.this))
    if isinstance(node, exp.Between):
        operand = sub(node.this)
        return Binary("AND", Binary(">=", operand, sub(node.args["low"])),
                      Binary("<=", operand, sub(node.args["high"])))
    if isinstance(node, exp.In):
        if node.args.get("query") is not None:
            raise SqlError("IN (subquery) is supported only as a condition of WHERE (a semi "
                           "join), not here", node.sql(dialect=DIALECT))
        return InList(sub(node.this), tuple(sub(e) for e in node.expressions))
    if isinstance(node, exp.Case):
        if node.this is not None:  # CASE x WHEN v THEN ...
            operand = node.this
            whens = tuple((Binary("=", sub(operand), sub(w.this)), sub(w.args["true"]))
                          for w in node.args["ifs"])
        else:
            whens = tuple((sub(w.this), sub(w.args["true"])) for w in node.args["ifs"])
        default = node.args.get("default")
        return Case(whens, sub(default) if default is not None else None)
    if isinstance(node, exp.Cast | exp.TryCast):
        return Cast(sub(node.this), sql_type(node.to, node.sql()))
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        unit = node.args.get("unit")
        return Func("date_trunc", (Literal(unit.name.lower(), SqlType.VARCHAR), sub(node.this)))
    if isinstance(node, exp.Extract):
        return Func("extract", (Literal(node.this.name.lower(), SqlType.VARCHAR),
                                sub(node.expression)))
    if isinstance(node, exp.Coalesce):
        return Func("coalesce", (sub(node.this), *(sub(e) for e in node.expressions)))
    for kind, name in _SIMPLE_FUNCTIONS.items():
        if type(node) is kind:
            if node.args.get("decimals") is not None:
                raise SqlError(f"{name} with a precision is not supported", node.sql())
            return Func(name, (sub(node.this),))
    if isinstance(node, exp.UnixToTime):
        return Func("to_timestamp", (sub(node.this),))
    if isinstance(node, exp.Anonymous):
        return Func(node.name.lower(), tuple(sub(e) for e in node.expressions))
    if isinstance(node, exp.AggFunc | exp.WithinGroup):
        raise SqlError("aggregate functions are only allowed in SELECT and HAVING of a "
                       "grouped query", node.sql(dialect=DIALECT))
    if isinstance(node, exp.Window):
        raise SqlError("OVER windows are not supported yet", node.sql(dialect=DIALECT))
    if isinstance(node, exp.Exists | exp.Subquery | exp.Select):
        raise SqlError(f"{'EXISTS (subquery)' if isinstance(node, exp.Exists) else 'a subquery'} "
                       f"is supported only as a condition of WHERE (IN or EXISTS: a semi join), "
                       f"not here", node.sql(dialect=DIALECT))
    raise SqlError(f"unsupported expression {type(node).__name__}", node.sql(dialect=DIALECT))
