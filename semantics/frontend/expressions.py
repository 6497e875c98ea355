"""Scalar SQL expressions: a sqlglot expression to a plan :class:`~eowc.semantics.ir.expr.Expr`
(:func:`translate`), with the literals it reads (``INTERVAL`` lengths, type names). Both the
query planner (:mod:`eowc.semantics.frontend.sql`) and ``MATCH_RECOGNIZE``
(:mod:`eowc.semantics.frontend.match_sql`) translate expressions with it.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

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
from eowc.semantics.ir.values import TYPE_NAMES, SqlType, interval_text_micros

#: The dialect sqlglot parses and prints the queries in.
DIALECT = "risingwave"



def interval_micros(node: exp.Expression) -> int:
    """An ``INTERVAL '...' [UNIT]`` literal in microseconds (fixed-length units only), its
    text read as PostgreSQL reads an interval (:func:`interval_text_micros`)."""
    if not isinstance(node, exp.Interval):
        raise SqlError("expected an INTERVAL literal", node.sql(dialect=DIALECT))
    amount, unit = node.this, node.args.get("unit")
    text = amount.name if isinstance(amount, exp.Literal) else amount.sql()
    if isinstance(unit, exp.IntervalSpan):  # DAY TO SECOND: its first unit counts a number
        unit = unit.this
    try:
        return interval_text_micros(text, unit.name if unit is not None else None)
    except ValueError as error:
        raise SqlError(str(error), node.sql(dialect=DIALECT)) from None


def sql_type(node: exp.DataType, fragment: str) -> SqlType:
    """The SQL type a column or CAST names (``fragment``: where, for the error)."""
    name = node.this.name if hasattr(node.this, "name") else str(node.this)
    if name not in TYPE_NAMES:
        raise SqlError(f"unsupported column type {node.sql()}", fragment)
    return TYPE_NAMES[name]


def decimal_shape(node: exp.DataType) -> tuple[int | None, int | None]:
    """``(precision, scale)`` of ``DECIMAL(p, s)`` (``(None, None)`` when not given)."""
    params = [int(e.this.name) if isinstance(e, exp.DataTypeParam) else int(e.name)
              for e in node.expressions]
    return (params[0] if params else None), (params[1] if len(params) > 1 else
                                             (0 if params else None))


_BINARY = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.DPipe: "||",
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
    exp.And: "AND", exp.Or: "OR",
}
_SIMPLE_FUNCTIONS = {
    exp.Abs: "abs", exp.Floor: "floor", exp.Ceil: "ceil",
    exp.Lower: "lower", exp.Upper: "upper", exp.Length: "length", exp.Sqrt: "sqrt",
}
_TRIMS = {"LEADING": "ltrim", "TRAILING": "rtrim", "BOTH": "btrim"}
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
        if any(ch in text for ch in "eE"):  # 1e3: an approximate number
            return Literal(float(text), SqlType.DOUBLE)
        if "." in text:  # 1.10: an exact DECIMAL with scale 2 (PostgreSQL, Flink, Spark)
            return Literal(Decimal(text), SqlType.DECIMAL)
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
        target = sql_type(node.to, node.sql())
        if target is SqlType.DECIMAL:
            precision, scale = decimal_shape(node.to)
            return Cast(sub(node.this), target, precision, scale)
        return Cast(sub(node.this), target)
    if isinstance(node, exp.Floor | exp.Ceil) and node.args.get("to") is not None:
        if isinstance(node, exp.Ceil):  # Flink's CEIL(ts TO unit): the next boundary
            raise SqlError("CEIL(... TO unit) is not supported (FLOOR(... TO unit) is)", node.sql())
        unit = node.args["to"].name.lower()  # Flink's FLOOR(ts TO unit) is date_trunc(unit, ts)
        return Func("date_trunc", (Literal(unit, SqlType.VARCHAR), sub(node.this)))
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
    if isinstance(node, exp.Round):
        decimals = node.args.get("decimals")
        return Func("round", (sub(node.this),) + ((sub(decimals),) if decimals is not None else ()))
    called = _string_call(node, sub)
    if called is not None:
        return called
    if isinstance(node, exp.Pow):
        return Func("power", (sub(node.this), sub(node.expression)))
    if isinstance(node, exp.UnixToTime):
        return Func("to_timestamp", (sub(node.this),))
    array = _array_call(node, sub)
    if array is not None:
        return array
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


#: The message for ``unnest`` anywhere but as a whole item of a SELECT list.
UNNEST_PLACE = ("unnest(array) is supported only as a whole item of the SELECT list (SELECT a, "
                "unnest(arr) AS x FROM t), not inside an expression")


def _array_call(node: exp.Expression, sub: Callable[[exp.Expression], Expr]) -> Expr | None:
    """``ARRAY[a, b]``, ``arr[i]`` (from 1), ``array_length(arr)``; ``unnest`` here (inside
    an expression) is refused; None for another node."""
    if isinstance(node, exp.Array):
        return Func("array", tuple(sub(e) for e in node.expressions))
    if isinstance(node, exp.Bracket):
        if len(node.expressions) != 1:
            raise SqlError("an array subscript takes one index (slices arr[a:b] are not "
                           "supported)", node.sql(dialect=DIALECT))
        index = node.expressions[0]
        written = sub(index)
        constant = index.this if isinstance(index, exp.Neg) else index
        if isinstance(constant, exp.Literal) and not constant.is_string:
            value = int(constant.name) * (-1 if isinstance(index, exp.Neg) else 1)
            written = Literal(value + 1, SqlType.BIGINT)  # sqlglot counts a constant from 0
        return Func("array_element", (sub(node.this), written))
    if isinstance(node, exp.ArraySize):
        dimension = node.args.get("expression")
        if dimension is not None and dimension.sql() != "1":
            raise SqlError("array_length(arr, dimension) takes dimension 1 only (eowc's arrays "
                           "have one)", node.sql(dialect=DIALECT))
        return Func("array_length", (sub(node.this),))
    if isinstance(node, exp.Explode | exp.Unnest) or \
            (isinstance(node, exp.Anonymous) and node.name.lower() == "unnest"):
        raise SqlError(UNNEST_PLACE, node.sql(dialect=DIALECT))
    if isinstance(node, exp.ExplodingGenerateSeries):
        raise SqlError("generate_series(a, b) is supported only as a whole item of the SELECT "
                       "list (SELECT a, generate_series(1, n) AS k FROM t), not inside an "
                       "expression", node.sql(dialect=DIALECT))
    if isinstance(node, exp.GenerateSeries):  # the series as an array, to unnest
        step = node.args.get("step")
        return Func("generate_series", (sub(node.args["start"]), sub(node.args["end"]),
                                        sub(step) if step is not None else Literal(1, SqlType.BIGINT)))
    return None


def _string_call(node: exp.Expression, sub: Callable[[exp.Expression], Expr]) -> Expr | None:
    """``substring``, ``concat``, ``replace``, ``trim``, ``LIKE`` and ``ILIKE`` (negated by
    ``NOT``), or None for another node."""
    if isinstance(node, exp.Substring):
        length = node.args.get("length")
        return Func("substring", (sub(node.this), sub(node.args["start"]))
                    + ((sub(length),) if length is not None else ()))
    if isinstance(node, exp.Concat):
        return Func("concat", tuple(sub(e) for e in node.expressions))
    if isinstance(node, exp.Replace):
        return Func("replace", (sub(node.this), sub(node.expression), sub(node.args["replacement"])))
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "BOTH").upper()
        characters = node.args.get("expression")
        return Func(_TRIMS[position], (sub(node.this),)
                    + ((sub(characters),) if characters is not None else ()))
    if isinstance(node, exp.Like | exp.ILike):
        if node.args.get("escape") is not None:
            raise SqlError("LIKE ... ESCAPE is not supported", node.sql(dialect=DIALECT))
        like = Func("ilike" if isinstance(node, exp.ILike) else "like",
                    (sub(node.this), sub(node.expression)))
        return Unary("NOT", like) if node.args.get("negate") else like
    if isinstance(node, exp.Escape):
        raise SqlError("LIKE ... ESCAPE is not supported", node.sql(dialect=DIALECT))
    return None
