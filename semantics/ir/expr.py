"""Scalar expressions of the plan: an immutable tree, its types, and its evaluation.

Evaluation follows SQL: NULL propagates through arithmetic and comparison, AND/OR are
three-valued, integer division truncates toward zero, division by zero is NULL.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.values import (
    MICROS_PER_SECOND,
    SqlType,
    format_interval,
    format_timestamp,
    parse_timestamp,
)


@dataclass(frozen=True)
class Column:
    """A named, typed column of a relation."""

    name: str
    type: SqlType


Schema = tuple[Column, ...]
Row = tuple[Any, ...]
Evaluator = Callable[[Row], Any]


class Expr:
    """Base of scalar expressions."""


@dataclass(frozen=True)
class ColumnRef(Expr):
    name: str


@dataclass(frozen=True)
class Literal(Expr):
    value: Any
    type: SqlType


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-" or "NOT"
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # + - * / % || = <> < <= > >= AND OR
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    operand: Expr
    negated: bool = False


@dataclass(frozen=True)
class InList(Expr):
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True)
class Case(Expr):
    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None = None


@dataclass(frozen=True)
class Cast(Expr):
    operand: Expr
    type: SqlType


@dataclass(frozen=True)
class Func(Expr):
    """A scalar function call; ``name`` is lower case (see :data:`FUNCTIONS`)."""

    name: str
    args: tuple[Expr, ...]


def column_index(schema: Schema, name: str) -> int:
    for i, column in enumerate(schema):
        if column.name == name:
            return i
    names = ", ".join(c.name for c in schema)
    raise PlanError(f"unknown column {name!r}; the input has columns: {names}")


# ---------------------------------------------------------------------------------------------
# Typing and evaluation


@dataclass(frozen=True)
class Compiled:
    """An expression bound to a schema: its type and a function from a row to its value."""

    type: SqlType
    evaluate: Evaluator


def _null_safe(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        return None if a is None or b is None else fn(a, b)

    return apply


def _int_div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _int_mod(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = _int_div(a, b)
    assert q is not None
    return a - b * q


def _float_div(a: float, b: float) -> float | None:
    return None if b == 0 else a / b


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def _arithmetic_type(op: str, left: SqlType, right: SqlType) -> SqlType:
    if SqlType.TIMESTAMP in (left, right):
        if op == "+" and {left, right} <= {SqlType.TIMESTAMP, SqlType.INTERVAL}:
            return SqlType.TIMESTAMP
        if op == "-" and left is SqlType.TIMESTAMP and right is SqlType.INTERVAL:
            return SqlType.TIMESTAMP
        if op == "-" and left is right is SqlType.TIMESTAMP:
            return SqlType.INTERVAL
    elif SqlType.INTERVAL in (left, right):
        if op in "+-" and left is right:
            return SqlType.INTERVAL
        if op in "*/" and right in (SqlType.BIGINT, SqlType.DOUBLE):
            return SqlType.INTERVAL
    elif left.is_numeric and right.is_numeric:
        if SqlType.DOUBLE in (left, right):
            return SqlType.DOUBLE
        return SqlType.BIGINT
    raise PlanError(f"operator {op} is not defined for {left.value} and {right.value}")


def _compile_binary(expr: Binary, schema: Schema) -> Compiled:
    left, right = compile_expr(expr.left, schema), compile_expr(expr.right, schema)
    lf, rf = left.evaluate, right.evaluate
    op = expr.op
    if op in ("AND", "OR"):
        for side in (left, right):
            if side.type not in (SqlType.BOOLEAN, SqlType.NULL):
                raise PlanError(f"{op} needs BOOLEAN operands, got {side.type.value}")
        if op == "AND":
            def logical(row: Row) -> Any:
                a = lf(row)
                if a is False:
                    return False
                b = rf(row)
                if b is False:
                    return False
                return None if a is None or b is None else True
        else:
            def logical(row: Row) -> Any:
                a = lf(row)
                if a is True:
                    return True
                b = rf(row)
                if b is True:
                    return True
                return None if a is None or b is None else False
        return Compiled(SqlType.BOOLEAN, logical)
    if op in _COMPARISONS:
        _check_comparable(left.type, right.type, op)
        fn = _null_safe(_COMPARISONS[op])
        return Compiled(SqlType.BOOLEAN, lambda row: fn(lf(row), rf(row)))
    if op == "||":
        def concat(row: Row) -> Any:
            a, b = lf(row), rf(row)
            return None if a is None or b is None else f"{_text(a)}{_text(b)}"
        return Compiled(SqlType.VARCHAR, concat)
    result_type = _arithmetic_type(op, left.type, right.type)
    if op == "/":
        integral = result_type is SqlType.BIGINT or (
            result_type is SqlType.INTERVAL and right.type is SqlType.BIGINT)
        fn = _null_safe(_int_div if integral else _float_div)
    elif op == "%":
        fn = _null_safe(_int_mod if result_type is SqlType.BIGINT else math.fmod)
    elif op == "*" and result_type is SqlType.INTERVAL:
        fn = _null_safe(lambda a, b: int(a * b))
    else:
        fn = _null_safe({"+": operator.add, "-": operator.sub, "*": operator.mul}[op])
    return Compiled(result_type, lambda row: fn(lf(row), rf(row)))


def _check_comparable(left: SqlType, right: SqlType, what: str) -> None:
    if SqlType.NULL in (left, right) or left is right or (left.is_numeric and right.is_numeric):
        return
    raise PlanError(f"cannot compare {left.value} with {right.value} ({what})")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _cast(value: Any, source: SqlType, target: SqlType) -> Any:
    if value is None or source is target:
        return value
    try:
        if target is SqlType.BIGINT:
            if isinstance(value, str):
                return int(value.strip())
            if isinstance(value, float):
                return int(round(value))
            return int(value)
        if target is SqlType.DOUBLE:
            return float(value)
        if target is SqlType.VARCHAR:
            if source is SqlType.TIMESTAMP:
                return format_timestamp(value)
            return _text(value)
        if target is SqlType.BOOLEAN:
            if isinstance(value, str):
                return {"true": True, "t": True, "false": False, "f": False}[value.strip().lower()]
            return bool(value)
        if target is SqlType.TIMESTAMP and isinstance(value, str):
            return parse_timestamp(value)
    except (ValueError, KeyError) as error:
        raise ValueError(f"cannot cast {value!r} to {target.value}") from error
    raise PlanError(f"CAST from {source.value} to {target.value} is not supported")


_TRUNC_UNITS = {
    "microsecond": 1, "millisecond": 1_000, "second": MICROS_PER_SECOND,
    "minute": 60 * MICROS_PER_SECOND, "hour": 3600 * MICROS_PER_SECOND,
    "day": 86400 * MICROS_PER_SECOND,
}
_EPOCH = dt.datetime(1970, 1, 1)


def date_trunc(unit: str, micros: int) -> int:
    """``date_trunc(unit, ts)`` for fixed-length units (microsecond to day) and week."""
    if unit == "week":
        day = _TRUNC_UNITS["day"]
        days = micros // day
        return (days - (days + 3) % 7) * day  # 1970-01-01 was a Thursday; weeks start Monday
    if unit in _TRUNC_UNITS:
        return micros - micros % _TRUNC_UNITS[unit]
    moment = _EPOCH + dt.timedelta(microseconds=micros)
    if unit == "month":
        moment = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "year":
        moment = moment.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    else:
        raise PlanError(f"date_trunc does not know the unit {unit!r}")
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def extract(field: str, micros: int) -> Any:
    """``EXTRACT(field FROM ts)``: calendar fields as BIGINT, ``epoch`` as seconds."""
    if field == "epoch":
        return micros / MICROS_PER_SECOND
    moment = _EPOCH + dt.timedelta(microseconds=micros)
    fields = {
        "year": moment.year, "month": moment.month, "day": moment.day,
        "hour": moment.hour, "minute": moment.minute, "second": moment.second,
        "millisecond": moment.second * 1000 + moment.microsecond // 1000,
        "microsecond": moment.second * MICROS_PER_SECOND + moment.microsecond,
        "dow": moment.isoweekday() % 7, "doy": moment.timetuple().tm_yday,
    }
    if field not in fields:
        raise PlanError(f"EXTRACT does not know the field {field!r}")
    return fields[field]


def _literal_text(expr: Expr, function: str) -> str:
    if not (isinstance(expr, Literal) and isinstance(expr.value, str)):
        raise PlanError(f"{function} takes a constant string as its first argument")
    return expr.value.lower()


def _compile_func(expr: Func, schema: Schema) -> Compiled:
    name, args = expr.name, expr.args
    if name == "date_trunc":
        unit = _literal_text(args[0], name)
        date_trunc(unit, 0)  # reject unknown units at plan time
        ts = _expect(compile_expr(args[1], schema), SqlType.TIMESTAMP, name)
        f = ts.evaluate
        return Compiled(SqlType.TIMESTAMP, lambda row: _apply1(lambda v: date_trunc(unit, v), f(row)))
    if name == "extract":
        field = _literal_text(args[0], name)
        ts = _expect(compile_expr(args[1], schema), SqlType.TIMESTAMP, name)
        extract(field, 0)
        f = ts.evaluate
        result_type = SqlType.DOUBLE if field == "epoch" else SqlType.BIGINT
        return Compiled(result_type, lambda row: _apply1(lambda v: extract(field, v), f(row)))
    if name == "to_timestamp":
        seconds = compile_expr(args[0], schema)
        f = seconds.evaluate
        return Compiled(SqlType.TIMESTAMP,
                        lambda row: _apply1(lambda v: int(round(v * MICROS_PER_SECOND)), f(row)))
    if name == "tumble_start":
        ts = _expect(compile_expr(args[0], schema), SqlType.TIMESTAMP, name)
        size = _interval_constant(args[1], name)
        f = ts.evaluate
        return Compiled(SqlType.TIMESTAMP, lambda row: _apply1(lambda v: v - v % size, f(row)))
    compiled = [compile_expr(a, schema) for a in args]
    fs = [c.evaluate for c in compiled]
    if name == "coalesce":
        types = {c.type for c in compiled} - {SqlType.NULL}
        result_type = _common_type(types, name)

        def coalesce(row: Row) -> Any:
            for f in fs:
                v = f(row)
                if v is not None:
                    return v
            return None
        return Compiled(result_type, coalesce)
    unary: dict[str, tuple[Callable[[Any], Any], SqlType | None]] = {
        "abs": (abs, None), "floor": (math.floor, SqlType.BIGINT), "ceil": (math.ceil, SqlType.BIGINT),
        "round": (round, SqlType.BIGINT), "lower": (str.lower, SqlType.VARCHAR),
        "upper": (str.upper, SqlType.VARCHAR), "length": (len, SqlType.BIGINT),
        "sqrt": (math.sqrt, SqlType.DOUBLE),
    }
    if name in unary and len(fs) == 1:
        fn, result = unary[name]
        f = fs[0]
        return Compiled(result or compiled[0].type, lambda row: _apply1(fn, f(row)))
    raise PlanError(f"unsupported function {name}({', '.join('...' for _ in args)})")


def _apply1(fn: Callable[[Any], Any], value: Any) -> Any:
    return None if value is None else fn(value)


def _expect(compiled: Compiled, sql_type: SqlType, where: str) -> Compiled:
    if compiled.type not in (sql_type, SqlType.NULL):
        raise PlanError(f"{where} expects {sql_type.value}, got {compiled.type.value}")
    return compiled


def _interval_constant(expr: Expr, where: str) -> int:
    if isinstance(expr, Literal) and expr.type is SqlType.INTERVAL:
        return int(expr.value)
    raise PlanError(f"{where} expects a constant INTERVAL")


def _common_type(types: set[SqlType], where: str) -> SqlType:
    if not types:
        return SqlType.NULL
    if len(types) == 1:
        return next(iter(types))
    if types <= {SqlType.BIGINT, SqlType.DOUBLE}:
        return SqlType.DOUBLE
    raise PlanError(f"{where} mixes types {', '.join(sorted(t.value for t in types))}")


def compile_expr(expr: Expr, schema: Schema) -> Compiled:
    """Bind ``expr`` to ``schema``: check its types and build its evaluator."""
    if isinstance(expr, ColumnRef):
        index = column_index(schema, expr.name)
        return Compiled(schema[index].type, operator.itemgetter(index))
    if isinstance(expr, Literal):
        value = expr.value
        return Compiled(expr.type, lambda row: value)
    if isinstance(expr, Unary):
        inner = compile_expr(expr.operand, schema)
        f = inner.evaluate
        if expr.op == "NOT":
            _expect(inner, SqlType.BOOLEAN, "NOT")
            return Compiled(SqlType.BOOLEAN, lambda row: _apply1(operator.not_, f(row)))
        if not (inner.type.is_numeric or inner.type is SqlType.INTERVAL):
            raise PlanError(f"unary minus is not defined for {inner.type.value}")
        return Compiled(inner.type, lambda row: _apply1(operator.neg, f(row)))
    if isinstance(expr, Binary):
        return _compile_binary(expr, schema)
    if isinstance(expr, IsNull):
        f = compile_expr(expr.operand, schema).evaluate
        negated = expr.negated
        return Compiled(SqlType.BOOLEAN, lambda row: (f(row) is None) != negated)
    if isinstance(expr, InList):
        operand = compile_expr(expr.operand, schema)
        items = [compile_expr(i, schema) for i in expr.items]
        for item in items:
            _check_comparable(operand.type, item.type, "IN")
        f, fs, negated = operand.evaluate, [i.evaluate for i in items], expr.negated

        def in_list(row: Row) -> Any:
            v = f(row)
            if v is None:
                return None
            values = [g(row) for g in fs]
            if v in values:
                return not negated
            return None if None in values else negated
        return Compiled(SqlType.BOOLEAN, in_list)
    if isinstance(expr, Case):
        conditions = [_expect(compile_expr(c, schema), SqlType.BOOLEAN, "CASE WHEN")
                      for c, _ in expr.whens]
        results = [compile_expr(r, schema) for _, r in expr.whens]
        default = compile_expr(expr.default, schema) if expr.default else None
        result_type = _common_type(
            {r.type for r in results + ([default] if default else [])} - {SqlType.NULL}, "CASE")
        branches = [(c.evaluate, r.evaluate) for c, r in zip(conditions, results, strict=True)]
        otherwise = default.evaluate if default else (lambda row: None)

        def case(row: Row) -> Any:
            for condition, result in branches:
                if condition(row) is True:
                    return result(row)
            return otherwise(row)
        return Compiled(result_type, case)
    if isinstance(expr, Cast):
        inner = compile_expr(expr.operand, schema)
        f, source, target = inner.evaluate, inner.type, expr.type
        _cast(None, source, target)
        if source not in (target, SqlType.NULL, SqlType.VARCHAR) and target not in (
                SqlType.VARCHAR, SqlType.DOUBLE, SqlType.BIGINT, SqlType.BOOLEAN):
            raise PlanError(f"CAST from {source.value} to {target.value} is not supported")
        return Compiled(target, lambda row: _cast(f(row), source, target))
    if isinstance(expr, Func):
        return _compile_func(expr, schema)
    raise PlanError(f"unsupported expression {expr!r}")


def referenced_columns(expr: Expr) -> set[str]:
    """Names of the columns an expression reads."""
    if isinstance(expr, ColumnRef):
        return {expr.name}
    names: set[str] = set()
    for value in vars(expr).values():
        children = value if isinstance(value, tuple) else (value,)
        for child in children:
            if isinstance(child, Expr):
                names |= referenced_columns(child)
            elif isinstance(child, tuple):
                for grandchild in child:
                    if isinstance(grandchild, Expr):
                        names |= referenced_columns(grandchild)
    return names


def sql_of(expr: Expr) -> str:
    """The expression as SQL text (for plans and messages; not meant to be parsed back)."""
    if isinstance(expr, ColumnRef):
        return expr.name
    if isinstance(expr, Literal):
        if expr.type is SqlType.INTERVAL:
            return f"INTERVAL '{format_interval(int(expr.value))}'"
        if expr.type is SqlType.NULL:
            return "NULL"
        return f"'{expr.value}'" if isinstance(expr.value, str) else str(expr.value)
    if isinstance(expr, Unary):
        return f"{expr.op} {sql_of(expr.operand)}" if expr.op == "NOT" else f"-{sql_of(expr.operand)}"
    if isinstance(expr, Binary):
        return f"({sql_of(expr.left)} {expr.op} {sql_of(expr.right)})"
    if isinstance(expr, IsNull):
        return f"{sql_of(expr.operand)} IS {'NOT ' if expr.negated else ''}NULL"
    if isinstance(expr, InList):
        items = ", ".join(sql_of(i) for i in expr.items)
        return f"{sql_of(expr.operand)} {'NOT ' if expr.negated else ''}IN ({items})"
    if isinstance(expr, Case):
        whens = " ".join(f"WHEN {sql_of(c)} THEN {sql_of(v)}" for c, v in expr.whens)
        default = f" ELSE {sql_of(expr.default)}" if expr.default is not None else ""
        return f"CASE {whens}{default} END"
    if isinstance(expr, Cast):
        return f"CAST({sql_of(expr.operand)} AS {expr.type.value})"
    if isinstance(expr, Func):
        return f"{expr.name}({', '.join(sql_of(a) for a in expr.args)})"
    return repr(expr)
