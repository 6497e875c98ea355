"""Scalar expressions of the plan: an immutable tree, its types, and its evaluation.

Evaluation follows SQL: NULL propagates through arithmetic and comparison, AND/OR are
three-valued, integer division truncates toward zero, division by zero is NULL. DECIMAL
arithmetic is exact; a result an engine cannot hold (BIGINT overflow, too many DECIMAL digits,
a time past year 9999) follows the :class:`~eowc.semantics.ir.values.ValueRules` in force when
the expression was compiled (``docs/sql/types.md``, ``docs/sql/functions.md``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.values import (
    BIGINT_MAX,
    BIGINT_MIN,
    EXACT,
    MICROS_PER_MILLI,
    MICROS_PER_SECOND,
    TIME_TYPES,
    ArrayType,
    DecimalShape,
    SqlType,
    ValueOutOfRange,
    ValueRules,
    ValueType,
    array_of,
    bounded_shape,
    check_time,
    decimal_digits,
    decimal_from_text,
    decimal_text,
    fit_bigint,
    fit_decimal,
    fit_decimal_shape,
    format_interval,
    parse_date,
    parse_timestamp,
    to_external,
    value_rules,
)


@dataclass(frozen=True)
class Column:
    """A named, typed column of a relation."""

    name: str
    type: ValueType
    #: ``DECIMAL(precision, scale)`` as the column declares it (None: not declared).
    precision: int | None = None
    scale: int | None = None

    @property
    def decimal_shape(self) -> DecimalShape | None:
        """The declared ``(precision, scale)`` of a DECIMAL column, else None."""
        return None if self.precision is None else (self.precision, self.scale or 0)


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
    """``CAST(operand AS type)``; ``scale`` (and ``precision``) for ``DECIMAL(p, s)``."""

    operand: Expr
    type: SqlType
    precision: int | None = None
    scale: int | None = None


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
    """An expression bound to a schema: its type and a function from a row to its value;
    ``shape``, a DECIMAL's ``(precision, scale)`` where the engine's rules give one
    (:func:`decimal_result_shape`)."""

    type: ValueType
    evaluate: Evaluator
    shape: DecimalShape | None = None


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


def _as_decimal(value: int | Decimal) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(value)


def decimal_quotient(a: Decimal, b: Decimal, divisor_precision: int, rules: ValueRules
                     ) -> Decimal | None:
    """``a / b`` of DECIMALs under ``rules`` (NULL when ``b`` is 0): RisingWave keeps
    ``decimal_max_precision`` significant digits; Spark and Flink give the scale
    ``max(6, s1 + p2 + 1)`` (``p2``: ``divisor_precision``), rounded half away from zero,
    the scale lowered (not below 6) when the digits exceed the precision."""
    if b == 0:
        return None
    if rules.decimal_division_min_scale is None:
        context = decimal.Context(prec=rules.decimal_max_precision, rounding=decimal.ROUND_HALF_UP)
        return context.divide(a, b)
    s1 = decimal_digits(a)[1]
    scale = max(rules.decimal_division_min_scale, s1 + divisor_precision + 1)
    exact = EXACT.divide(a, b)
    integer_digits = max(1, exact.adjusted() + 1)
    scale = min(scale, max(rules.decimal_max_precision - integer_digits,
                           rules.decimal_division_min_scale))
    return exact.quantize(Decimal(1).scaleb(-scale), decimal.ROUND_HALF_UP, context=EXACT)


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def _arithmetic_type(op: str, left: SqlType, right: SqlType) -> SqlType:
    if left.is_time or right.is_time:
        if op == "+" and {left, right} <= TIME_TYPES | {SqlType.INTERVAL} and \
                SqlType.INTERVAL in (left, right):
            return left if left.is_time else right
        if op == "-" and left.is_time and right is SqlType.INTERVAL:
            return left
        if op == "-" and left.is_time and (right.is_time or right is SqlType.DATE):
            return SqlType.INTERVAL
    elif SqlType.DATE in (left, right):
        if op in "+-" and {left, right} == {SqlType.DATE, SqlType.INTERVAL} and \
                (op == "+" or left is SqlType.DATE):
            return SqlType.TIMESTAMP  # PostgreSQL: date + interval is a timestamp
        if op in "+-" and {left, right} == {SqlType.DATE, SqlType.BIGINT} and \
                (op == "+" or left is SqlType.DATE):
            return SqlType.DATE
        if op == "-" and left is right:
            return SqlType.BIGINT  # days between
    elif SqlType.INTERVAL in (left, right):
        if op in "+-" and left is right:
            return SqlType.INTERVAL
        if op in "*/" and right in (SqlType.BIGINT, SqlType.DOUBLE, SqlType.DECIMAL):
            return SqlType.INTERVAL
    elif left.is_numeric and right.is_numeric:
        for wider in (SqlType.DOUBLE, SqlType.DECIMAL):
            if wider in (left, right):
                return wider
        return SqlType.BIGINT
    raise PlanError(f"operator {op} is not defined for {left.value} and {right.value}")


_MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND


def _arithmetic(op: str, left: Compiled, right: Compiled, right_expr: Expr, rules: ValueRules,
                result_type: SqlType, shape: DecimalShape | None = None
                ) -> Callable[[Any, Any], Any]:
    """The function of two non-NULL operands for ``left op right`` (types already checked);
    a DECIMAL result of a known ``shape`` is fitted to it (:func:`fit_decimal_shape`)."""
    types = (left.type, right.type)
    if result_type is SqlType.BIGINT and SqlType.DATE in types:  # date - date: days
        return lambda a, b: (a - b) // _MICROS_PER_DAY
    if result_type is SqlType.DATE:  # date +/- days, days + date
        sign = -1 if op == "-" else 1
        if left.type is SqlType.DATE:
            return lambda a, b: check_time(a + sign * b * _MICROS_PER_DAY, "the date")
        return lambda a, b: check_time(b + a * _MICROS_PER_DAY, "the date")
    if result_type.is_time:
        add = {"+": operator.add, "-": operator.sub}[op]
        return lambda a, b: check_time(add(a, b), "the result")
    if result_type is SqlType.INTERVAL:
        if op in "+-":
            return {"+": operator.add, "-": operator.sub}[op]
        if op == "*":
            return lambda a, b: int(a * b)
        if right.type is SqlType.BIGINT:
            return _int_div
        return lambda a, b: None if b == 0 else int(a / b)
    if result_type is SqlType.DOUBLE:
        if op == "/":
            return lambda a, b: _float_div(float(a), float(b))
        if op == "%":
            return lambda a, b: math.fmod(a, b) if b != 0 else None
        plain = {"+": operator.add, "-": operator.sub, "*": operator.mul}[op]
        if SqlType.DECIMAL not in types:  # int and float mix in Python; Decimal and float do not
            return plain
        return lambda a, b: plain(float(a), float(b))
    if result_type is SqlType.DECIMAL and shape is not None and op in "+-*/":
        exact = {"+": EXACT.add, "-": EXACT.subtract, "*": EXACT.multiply, "/": EXACT.divide}[op]
        return lambda a, b: None if op == "/" and b == 0 else \
            fit_decimal_shape(exact(_as_decimal(a), _as_decimal(b)), shape, rules)
    if result_type is SqlType.DECIMAL:
        if op == "/":
            precision = _operand_precision(right, right_expr, rules)
            return lambda a, b: _fitted(decimal_quotient(_as_decimal(a), _as_decimal(b),
                                                         precision(b), rules), rules)
        if op == "%":
            return lambda a, b: None if b == 0 else EXACT.remainder(_as_decimal(a), _as_decimal(b))
        exact = {"+": EXACT.add, "-": EXACT.subtract, "*": EXACT.multiply}[op]
        return lambda a, b: fit_decimal(exact(_as_decimal(a), _as_decimal(b)), rules)
    if op == "/":
        return lambda a, b: None if b == 0 else fit_bigint(_int_div(a, b), rules)  # type: ignore
    if op == "%":
        return _int_mod
    low, high = BIGINT_MIN, BIGINT_MAX  # the check inline: this runs for every row
    if op == "+":
        return lambda a, b: r if low <= (r := a + b) <= high else fit_bigint(r, rules)
    if op == "-":
        return lambda a, b: r if low <= (r := a - b) <= high else fit_bigint(r, rules)
    return lambda a, b: r if low <= (r := a * b) <= high else fit_bigint(r, rules)


def operand_shape(operand: Compiled, expr: Expr, rules: ValueRules) -> DecimalShape | None:
    """The ``(precision, scale)`` an operand of DECIMAL arithmetic has: a DECIMAL's shape, an
    integer's ``(digits, 0)``: an integer literal that fits 32 bits is an INT, 10 digits (or
    its own digits: :attr:`~eowc.semantics.ir.values.ValueRules.integer_literal_digits`),
    another integer a BIGINT, ``rules.bigint_decimal_precision``."""
    if operand.type is SqlType.BIGINT:
        if isinstance(expr, Literal) and rules.integer_literal_digits:
            return len(str(abs(int(expr.value)))), 0
        small = isinstance(expr, Literal) and -(2**31) <= int(expr.value) < 2**31
        return (10 if small else rules.bigint_decimal_precision), 0
    return operand.shape if operand.type is SqlType.DECIMAL else None


def decimal_result_shape(op: str, left: DecimalShape | None, right: DecimalShape | None,
                         rules: ValueRules) -> DecimalShape | None:
    """The type of ``left op right`` of DECIMALs by Spark's and Flink's rules (both follow SQL
    Server's; :func:`~eowc.semantics.ir.values.bounded_shape` past 38 digits): ``+``/``-``
    scale ``max(s1, s2)``, precision ``max(p1 - s1, p2 - s2) + scale + 1``; ``*``
    ``(p1 + p2 + 1, s1 + s2)``; ``/`` scale ``max(6, s1 + p2 + 1)``, precision
    ``p1 - s1 + s2 + scale``. None where an operand's shape is unknown, for ``%``, and where
    the engine keeps no declared shapes (RisingWave)."""
    if left is None or right is None or not rules.declared_decimal or \
            rules.decimal_division_min_scale is None:
        return None
    (p1, s1), (p2, s2) = left, right
    if op in "+-":
        scale = max(s1, s2)
        return bounded_shape(max(p1 - s1, p2 - s2) + scale + 1, scale, rules)
    if op == "*":
        return bounded_shape(p1 + p2 + 1, s1 + s2, rules)
    if op == "/":
        scale = max(rules.decimal_division_min_scale, s1 + p2 + 1)
        return bounded_shape(p1 - s1 + s2 + scale, scale, rules)
    return None


def _fitted(value: Decimal | None, rules: ValueRules) -> Decimal | None:
    return None if value is None else fit_decimal(value, rules)


def _operand_precision(operand: Compiled, expr: Expr, rules: ValueRules
                       ) -> Callable[[Any], int]:
    """The precision a divisor has as a DECIMAL type (``p2`` of Spark's and Flink's division
    rule): an integer's (:func:`operand_shape`), a decimal the digits of its value."""
    integer = operand_shape(operand, expr, rules) if operand.type is SqlType.BIGINT else None
    if integer is not None:
        return lambda value: integer[0]
    return lambda value: decimal_digits(_as_decimal(value))[0]


def describe_row(schema: Schema, row: Row) -> str:
    """A row as ``name=value, ...`` for messages."""
    return ", ".join(f"{c.name}={to_external(v, c.type)!r}" for c, v in zip(schema, row, strict=False))


def _located(error: ValueOutOfRange, expr: Expr, schema: Schema, row: Row) -> ValueOutOfRange:
    """``error`` naming the expression and the row (once: the innermost expression)."""
    if error.located:
        return error
    return ValueOutOfRange(f"{error}, in {sql_of(expr)} at the row ({describe_row(schema, row)})",
                           located=True)


def _checked(fn: Callable[[Row], Any], expr: Expr, schema: Schema) -> Callable[[Row], Any]:
    """``fn``, whose out-of-range error names the expression and the row."""
    def evaluate(row: Row) -> Any:
        try:
            return fn(row)
        except ValueOutOfRange as error:
            raise _located(error, expr, schema, row) from None
    return evaluate


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
        lt, rt = left.type, right.type
        if isinstance(lt, ArrayType) or isinstance(rt, ArrayType):
            raise PlanError("|| on arrays (array concatenation) is not supported")

        def concat(row: Row) -> Any:
            a, b = lf(row), rf(row)
            return None if a is None or b is None else f"{_text(a, lt)}{_text(b, rt)}"
        return Compiled(SqlType.VARCHAR, concat)
    result_type = _arithmetic_type(op, left.type, right.type)
    rules = value_rules()
    shape = decimal_result_shape(op, operand_shape(left, expr.left, rules),
                                 operand_shape(right, expr.right, rules), rules) \
        if result_type is SqlType.DECIMAL else None
    fn = _arithmetic(op, left, right, expr.right, rules, result_type, shape)

    def arithmetic(row: Row) -> Any:
        a, b = lf(row), rf(row)
        if a is None or b is None:
            return None
        try:
            return fn(a, b)
        except ValueOutOfRange as error:
            raise _located(error, expr, schema, row) from None
    return Compiled(result_type, arithmetic, shape)


def _check_comparable(left: ValueType, right: ValueType, what: str) -> None:
    if isinstance(left, ArrayType) or isinstance(right, ArrayType):
        if what in ("=", "<>", "IN") and (left is right or SqlType.NULL in (left, right)):
            return  # equal arrays: equal lengths, equal elements (a NULL equal to a NULL)
        raise PlanError(f"cannot compare {left.value} with {right.value} ({what}): arrays are "
                        f"compared by = and <> only, with arrays of the same element type")
    if SqlType.NULL in (left, right) or left is right or (left.is_numeric and right.is_numeric):
        return
    moments = TIME_TYPES | {SqlType.DATE}
    if left in moments and right in moments:  # a date is its midnight (UTC)
        return
    raise PlanError(f"cannot compare {left.value} with {right.value} ({what})")


def _text(value: Any, sql_type: SqlType | None = None) -> str:
    """A value as text, as ``CAST(value AS VARCHAR)`` and concatenation write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return decimal_text(value)
    if sql_type is not None and sql_type not in (SqlType.BIGINT, SqlType.DOUBLE, SqlType.VARCHAR):
        return str(to_external(value, sql_type))
    if isinstance(value, float):
        return str(to_external(value, SqlType.DOUBLE))
    return str(value)


def round_half_away(value: Any, digits: int = 0) -> Any:
    """``round(value, digits)``: to ``digits`` places after the point (before it when negative),
    halves away from zero, as RisingWave, Flink and Spark round; the result keeps the
    argument's type (a DECIMAL gets scale ``max(digits, 0)``). A DOUBLE is rounded as its
    shortest decimal form (``2.675`` to ``2.68``, as Flink and Spark do)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return value
        exact = Decimal(repr(value))
    else:
        exact = Decimal(value)
    rounded = exact.quantize(Decimal(1).scaleb(-digits), decimal.ROUND_HALF_UP, context=EXACT)
    if isinstance(value, float):
        return float(rounded)
    if isinstance(value, int):
        return int(rounded)
    return rounded.quantize(Decimal(1), context=EXACT) if digits < 0 else rounded


def _cast(value: Any, source: SqlType, target: SqlType, scale: int | None = None,
          precision: int | None = None, truncate: bool = False) -> Any:
    if value is None:
        return value
    if source is target and (target is not SqlType.DECIMAL or scale is None):
        return value
    try:
        if target is SqlType.BIGINT:
            if isinstance(value, str):
                return int(value.strip())
            if isinstance(value, float | Decimal):  # the value rules' integer_cast
                return int(value) if truncate else int(round_half_away(value))
            return int(value)
        if target is SqlType.DOUBLE:
            return float(value)
        if target is SqlType.DECIMAL:
            return _to_decimal(value, scale, precision)
        if target is SqlType.VARCHAR:
            return _text(value, source)
        if target is SqlType.BOOLEAN:
            if isinstance(value, str):
                return {"true": True, "t": True, "false": False, "f": False}[value.strip().lower()]
            return bool(value)
        if target is SqlType.DATE:
            if isinstance(value, str):
                return parse_date(value) if len(value.strip()) == 10 else \
                    _day_of(parse_timestamp(value))
            if source.is_time:
                return _day_of(value)
        if target.is_time:
            if isinstance(value, str):
                return parse_timestamp(value, zoned=target is not SqlType.TIMESTAMP)
            if source.is_time or source is SqlType.DATE:
                return value
    except (ValueError, KeyError, decimal.InvalidOperation, OverflowError) as error:
        if isinstance(error, ValueOutOfRange):
            raise
        raise ValueError(f"cannot cast {value!r} to {target.value}") from error
    raise PlanError(f"CAST from {source.value} to {target.value} is not supported")


_NUMBERS = {SqlType.BIGINT, SqlType.DOUBLE, SqlType.DECIMAL}
_MOMENTS = TIME_TYPES | {SqlType.DATE}


def _castable(source: ValueType, target: ValueType) -> bool:
    """CAST from ``source`` to ``target`` is defined: anything from text and NULL and to text,
    between numbers, numbers to BOOLEAN, between times and dates; an ARRAY only to itself."""
    if isinstance(source, ArrayType) or isinstance(target, ArrayType):
        return source is target
    if source in (target, SqlType.NULL, SqlType.VARCHAR) or target is SqlType.VARCHAR:
        return True
    if target in _NUMBERS or target is SqlType.BOOLEAN:
        return source in _NUMBERS or source is SqlType.BOOLEAN or (
            target is SqlType.BIGINT and source in (TIME_TYPES | {SqlType.INTERVAL}))
    return source in _MOMENTS and target in _MOMENTS


def _day_of(micros: int) -> int:
    return micros - micros % _MICROS_PER_DAY


def _to_decimal(value: Any, scale: int | None, precision: int | None) -> Decimal:
    """``CAST(value AS DECIMAL[(precision, scale)])``: exact, rounded half away from zero to
    ``scale``; an integer part wider than ``precision - scale`` digits is out of range."""
    if isinstance(value, str):
        exact = decimal_from_text(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a DECIMAL")
        exact = Decimal(repr(value))
    else:
        exact = Decimal(value)
    if scale is not None:
        exact = exact.quantize(Decimal(1).scaleb(-scale), decimal.ROUND_HALF_UP, context=EXACT)
    if precision is not None and decimal_digits(exact)[0] - decimal_digits(exact)[1] > \
            precision - (scale or 0):
        raise ValueOutOfRange(f"numeric field overflow: {exact} does not fit "
                              f"DECIMAL({precision}, {scale or 0})")
    return exact


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


def like_pattern(pattern: str, case_insensitive: bool = False) -> re.Pattern[str]:
    """A SQL ``LIKE`` pattern as a regular expression matching the whole string: ``%`` any
    characters, ``_`` one character, ``\\`` escapes the next character (PostgreSQL's default
    escape)."""
    parts, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(parts), re.DOTALL | (re.IGNORECASE if case_insensitive else 0))


def substring(text: str, start: int, length: int | None = None) -> str:
    """SQL ``substring(text FROM start [FOR length])``: the characters at positions ``start``
    to ``start + length - 1`` (from 1; positions before 1 hold nothing), as PostgreSQL and
    RisingWave define it; a negative length is an error."""
    if length is not None and length < 0:
        raise ValueError("negative substring length not allowed")
    end = None if length is None else max(start + length - 1, 0)
    return text[max(start, 1) - 1:end]


def square_root(negative: str, value: Any) -> float:
    """``sqrt(value)`` as a DOUBLE; of a negative number NaN (``negative`` is ``"nan"``) or an
    error (``"error"``), :attr:`ValueRules.negative_sqrt`."""
    number = float(value)
    if number >= 0 or math.isnan(number):
        return math.sqrt(number)
    if negative == "nan":
        return math.nan
    raise ValueOutOfRange(f"cannot take square root of a negative number: sqrt({value})")


def _power(base: Any, exponent: Any) -> float:
    try:
        result = math.pow(float(base), float(exponent))
    except OverflowError:
        raise ValueOutOfRange(f"value out of range: power({base}, {exponent}) overflows a "
                              f"DOUBLE") from None
    except ValueError:
        raise ValueError(f"power({base}, {exponent}) is undefined (a negative number to a "
                         f"fractional power, or zero to a negative one)") from None
    return result


def _to_timestamp_ltz(amount: Any, precision: int) -> int:
    micros = int(amount) * (MICROS_PER_MILLI if precision == 3 else MICROS_PER_SECOND)
    return check_time(micros, f"TO_TIMESTAMP_LTZ({amount}, {precision})")


def _expect_time(compiled: Compiled, where: str) -> Compiled:
    if not (compiled.type.is_time or compiled.type in (SqlType.DATE, SqlType.NULL)):
        raise PlanError(f"{where} expects a TIMESTAMP, got {compiled.type.value}")
    return compiled


def _string_functions(name: str, compiled: list[Compiled], args: tuple[Expr, ...]
                      ) -> Compiled | None:
    """The string functions: substring, concat, replace, trim, ltrim, rtrim, like, ilike."""
    fs = [c.evaluate for c in compiled]
    types = [c.type for c in compiled]
    if name == "substring" and len(fs) in (2, 3):
        for c in compiled[1:]:
            _expect(c, SqlType.BIGINT, "substring's position and length")

        def cut(row: Row) -> Any:
            values = [f(row) for f in fs]
            return None if None in values else substring(values[0], *values[1:])
        return Compiled(SqlType.VARCHAR, cut)
    if name == "concat":
        skips_null = value_rules().concat_skips_null

        def concat(row: Row) -> Any:
            values = [f(row) for f in fs]
            if None in values and not skips_null:
                return None
            return "".join(_text(v, t) for v, t in zip(values, types, strict=True) if v is not None)
        return Compiled(SqlType.VARCHAR, concat)
    if name == "replace" and len(fs) == 3:
        def replace(row: Row) -> Any:
            text, old, new = (f(row) for f in fs)
            if None in (text, old, new):
                return None
            return text.replace(old, new) if old else text
        return Compiled(SqlType.VARCHAR, replace)
    if name in ("btrim", "ltrim", "rtrim") and len(fs) in (1, 2):
        strip = {"btrim": str.strip, "ltrim": str.lstrip, "rtrim": str.rstrip}[name]

        def trim(row: Row) -> Any:
            values = [f(row) for f in fs]
            if None in values:
                return None
            return strip(values[0], values[1] if len(values) == 2 else " ")
        return Compiled(SqlType.VARCHAR, trim)
    if name in ("like", "ilike") and len(fs) == 2:
        for c in compiled:
            _expect(c, SqlType.VARCHAR, name.upper())
        pattern_expr = args[1]
        constant = like_pattern(pattern_expr.value, name == "ilike") \
            if isinstance(pattern_expr, Literal) and isinstance(pattern_expr.value, str) else None
        text_f, pattern_f = fs

        def like(row: Row) -> Any:
            text = text_f(row)
            if text is None:
                return None
            if constant is not None:
                return constant.fullmatch(text) is not None
            pattern = pattern_f(row)
            return None if pattern is None else \
                like_pattern(pattern, name == "ilike").fullmatch(text) is not None
        return Compiled(SqlType.BOOLEAN, like)
    return None


def array_element(array: tuple[Any, ...], index: int) -> Any:
    """``array[index]``: the element at ``index`` counted from 1; NULL for an index outside
    1 .. its length (RisingWave, PostgreSQL)."""
    return array[index - 1] if 1 <= index <= len(array) else None


def integer_series(start: int, stop: int, step: int) -> tuple[int, ...]:
    """``generate_series(start, stop, step)``: ``start``, ``start + step``, ... up to ``stop``
    (down to it for a negative step), inclusive; a zero step is an error (PostgreSQL)."""
    if step == 0:
        raise ValueError("generate_series: step size cannot equal zero")
    return tuple(range(start, stop + (1 if step > 0 else -1), step))


def _array_functions(name: str, compiled: list[Compiled]) -> Compiled | None:
    """``ARRAY[a, b, ...]`` (``array``), ``arr[i]`` (``array_element``), ``cardinality(arr)``
    and ``array_length(arr)`` (its number of elements, NULL elements counted), the values of
    ``generate_series(a, b, step)`` as an array (:func:`integer_series`, to unnest), or None
    for another function."""
    fs = [c.evaluate for c in compiled]
    if name == "array":
        element = _common_type({c.type for c in compiled} - {SqlType.NULL}, "ARRAY[...]")
        if element is SqlType.NULL:
            raise PlanError("ARRAY[...] needs an element that is not NULL to know its type "
                            "(write CAST(NULL AS INT) for a NULL element)")
        try:
            array_type = array_of(element)
        except ValueError as error:
            raise PlanError(str(error)) from None
        elements = [_widened(c, element) for c in compiled]
        return Compiled(array_type, lambda row: tuple(f(row) for f in elements))
    if name == "generate_series":
        for c in compiled:
            _expect(c, SqlType.BIGINT, "generate_series")
        start_f, stop_f, step_f = fs

        def series(row: Row) -> Any:
            start, stop, step = start_f(row), stop_f(row), step_f(row)
            return None if None in (start, stop, step) else integer_series(start, stop, step)
        return Compiled(array_of(SqlType.BIGINT), series)
    if name not in ("array_element", "cardinality", "array_length"):
        return None
    array = compiled[0] if compiled else None
    if array is None or not isinstance(array.type, ArrayType) or \
            len(fs) != (2 if name == "array_element" else 1):
        shape = "arr[i]" if name == "array_element" else f"{name}(arr)"
        got = array.type.value if array is not None else "nothing"
        raise PlanError(f"{shape} takes an ARRAY, got {got}")
    if name == "array_element":
        _expect(compiled[1], SqlType.BIGINT, "an array subscript")
        array_f, index_f = fs

        def element_at(row: Row) -> Any:
            values, index = array_f(row), index_f(row)
            return None if values is None or index is None else array_element(values, index)
        return Compiled(array.type.element, element_at)
    f = fs[0]
    return Compiled(SqlType.BIGINT, lambda row: _apply1(len, f(row)))


def _compile_func(expr: Func, schema: Schema) -> Compiled:
    name, args = expr.name, expr.args
    if name == "date_trunc":
        unit = _literal_text(args[0], name)
        date_trunc(unit, 0)  # reject unknown units at plan time
        ts = _expect_time(compile_expr(args[1], schema), name)
        f = ts.evaluate
        return Compiled(ts.type if ts.type.is_time else SqlType.TIMESTAMP,
                        lambda row: _apply1(lambda v: date_trunc(unit, v), f(row)))
    if name == "extract":
        field = _literal_text(args[0], name)
        ts = _expect_time(compile_expr(args[1], schema), name)
        extract(field, 0)
        f = ts.evaluate
        result_type = SqlType.DOUBLE if field == "epoch" else SqlType.BIGINT
        return Compiled(result_type, lambda row: _apply1(lambda v: extract(field, v), f(row)))
    if name == "to_timestamp":
        seconds = compile_expr(args[0], schema)
        f = seconds.evaluate
        return Compiled(SqlType.TIMESTAMP, _checked(
            lambda row: _apply1(lambda v: check_time(int(round_half_away(v * MICROS_PER_SECOND)),
                                                     "the time"), f(row)), expr, schema))
    if name == "to_timestamp_ltz":
        amount = _expect(compile_expr(args[0], schema), SqlType.BIGINT, name)
        precision = int(args[1].value) if len(args) == 2 and isinstance(args[1], Literal) else None
        if len(args) != 2 or precision not in (0, 3):
            raise PlanError("TO_TIMESTAMP_LTZ(numeric, precision) takes a constant precision, "
                            "0 (seconds) or 3 (milliseconds)")
        f = amount.evaluate
        return Compiled(SqlType.TIMESTAMP_LTZ, _checked(
            lambda row: _apply1(lambda v: _to_timestamp_ltz(v, precision), f(row)), expr, schema))
    if name == "tumble_start":
        ts = _expect_time(compile_expr(args[0], schema), name)
        size = _interval_constant(args[1], name)
        f = ts.evaluate
        return Compiled(ts.type, lambda row: _apply1(lambda v: v - v % size, f(row)))
    compiled = [compile_expr(a, schema) for a in args]
    fs = [c.evaluate for c in compiled]
    arrays = _array_functions(name, compiled)
    if arrays is not None:
        return arrays
    if name == "coalesce":
        types = {c.type for c in compiled} - {SqlType.NULL}
        result_type = _common_type(types, name)
        fs = [_widened(c, result_type) for c in compiled]

        def coalesce(row: Row) -> Any:
            for f in fs:
                v = f(row)
                if v is not None:
                    return v
            return None
        return Compiled(result_type, coalesce)
    strings = _string_functions(name, compiled, args)
    if strings is not None:
        return strings
    if name == "round" and len(fs) in (1, 2):
        if not compiled[0].type.is_numeric:
            raise PlanError(f"round expects a number, got {compiled[0].type.value}")
        if len(fs) == 2:
            _expect(compiled[1], SqlType.BIGINT, "round's number of digits")
        value_f, digits_f = fs[0], (fs[1] if len(fs) == 2 else (lambda row: 0))

        def rounded(row: Row) -> Any:
            value, digits = value_f(row), digits_f(row)
            return None if value is None or digits is None else round_half_away(value, digits)
        shape = compiled[0].shape
        digits = args[1].value if len(args) == 2 and isinstance(args[1], Literal) else 0
        if shape is not None and isinstance(digits, int) and 0 <= digits <= shape[1]:
            # DECIMAL(p, s) rounded to r places is DECIMAL(p - s + r + 1, r) (Flink and Spark)
            shape = (min(shape[0] - shape[1] + digits + 1, value_rules().decimal_max_precision),
                     digits)
        else:
            shape = None
        return Compiled(compiled[0].type, _checked(rounded, expr, schema), shape)
    if name in ("power", "pow") and len(fs) == 2:
        for c in compiled:
            if not c.type.is_numeric:
                raise PlanError(f"power expects numbers, got {c.type.value}")
        base_f, exponent_f = fs
        return Compiled(SqlType.DOUBLE, _checked(
            lambda row: _null_safe(_power)(base_f(row), exponent_f(row)), expr, schema))
    rules = value_rules()
    unary: dict[str, tuple[Callable[[Any], Any], SqlType | None]] = {
        "abs": (lambda v: fit_bigint(abs(v), rules) if isinstance(v, int) else abs(v), None),
        "floor": (math.floor, SqlType.BIGINT), "ceil": (math.ceil, SqlType.BIGINT),
        "lower": (str.lower, SqlType.VARCHAR),
        "upper": (str.upper, SqlType.VARCHAR), "length": (len, SqlType.BIGINT),
        "sqrt": (partial(square_root, rules.negative_sqrt), SqlType.DOUBLE),
    }
    if name in unary and len(fs) == 1:
        fn, result = unary[name]
        f = fs[0]
        if name in ("floor", "ceil") and compiled[0].type is SqlType.DECIMAL:
            fn, result = (lambda v, r=("ROUND_FLOOR" if name == "floor" else "ROUND_CEILING"):
                          v.to_integral_value(rounding=r)), SqlType.DECIMAL
        elif name in ("floor", "ceil") and compiled[0].type is SqlType.DOUBLE \
                and rules.floor_of_double == "double":
            whole = math.floor if name == "floor" else math.ceil
            fn, result = (lambda v: float(whole(v)) if math.isfinite(v) else v), SqlType.DOUBLE
        return Compiled(result or compiled[0].type,
                        _checked(lambda row: _apply1(fn, f(row)), expr, schema),
                        compiled[0].shape if result is None else None)  # abs keeps a DECIMAL's
    raise PlanError(f"unsupported function {name}({', '.join('...' for _ in args)})")


def _apply1(fn: Callable[[Any], Any], value: Any) -> Any:
    return None if value is None else fn(value)


def _expect(compiled: Compiled, sql_type: ValueType, where: str) -> Compiled:
    if compiled.type not in (sql_type, SqlType.NULL):
        raise PlanError(f"{where} expects {sql_type.value}, got {compiled.type.value}")
    return compiled


def _interval_constant(expr: Expr, where: str) -> int:
    if isinstance(expr, Literal) and expr.type is SqlType.INTERVAL:
        return int(expr.value)
    raise PlanError(f"{where} expects a constant INTERVAL")


def _widened(compiled: Compiled, result_type: ValueType) -> Evaluator:
    """``compiled``'s evaluator giving values of ``result_type`` (a number of a narrower numeric
    type converted: a BIGINT or DECIMAL to DOUBLE, a BIGINT to DECIMAL)."""
    f = compiled.evaluate
    if compiled.type is result_type or not compiled.type.is_numeric or \
            compiled.type is SqlType.NULL:
        return f
    convert = float if result_type is SqlType.DOUBLE else Decimal
    return lambda row: _apply1(convert, f(row))


def _common_type(types: set[ValueType], where: str) -> ValueType:
    if not types:
        return SqlType.NULL
    if len(types) == 1:
        return next(iter(types))
    if types <= {SqlType.BIGINT, SqlType.DOUBLE, SqlType.DECIMAL}:
        return SqlType.DOUBLE if SqlType.DOUBLE in types else SqlType.DECIMAL
    raise PlanError(f"{where} mixes types {', '.join(sorted(t.value for t in types))}")


def compile_expr(expr: Expr, schema: Schema) -> Compiled:
    """Bind ``expr`` to ``schema``: check its types and build its evaluator."""
    if isinstance(expr, ColumnRef):
        index = column_index(schema, expr.name)
        column = schema[index]
        declared = column.decimal_shape if value_rules().declared_decimal else None
        return Compiled(column.type, operator.itemgetter(index), declared)
    if isinstance(expr, Literal):
        value = expr.value
        digits = decimal_digits(value) if isinstance(value, Decimal) else None
        return Compiled(expr.type, lambda row: value, digits)
    if isinstance(expr, Unary):
        inner = compile_expr(expr.operand, schema)
        f = inner.evaluate
        if expr.op == "NOT":
            _expect(inner, SqlType.BOOLEAN, "NOT")
            return Compiled(SqlType.BOOLEAN, lambda row: _apply1(operator.not_, f(row)))
        if not (inner.type.is_numeric or inner.type is SqlType.INTERVAL):
            raise PlanError(f"unary minus is not defined for {inner.type.value}")
        rules = value_rules()
        negate = (lambda v: fit_bigint(-v, rules)) if inner.type is SqlType.BIGINT else operator.neg
        return Compiled(inner.type, _checked(lambda row: _apply1(negate, f(row)), expr, schema),
                        inner.shape)
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
        branches = [(c.evaluate, _widened(r, result_type))
                    for c, r in zip(conditions, results, strict=True)]
        otherwise = _widened(default, result_type) if default else (lambda row: None)

        def case(row: Row) -> Any:
            for condition, result in branches:
                if condition(row) is True:
                    return result(row)
            return otherwise(row)
        shapes = {r.shape for r in results + ([default] if default else [])
                  if r.type is not SqlType.NULL}
        # the branches' one decimal type is the CASE's (Flink, Spark); mixed ones: not modelled
        return Compiled(result_type, case, shapes.pop() if len(shapes) == 1 else None)
    if isinstance(expr, Cast):
        inner = compile_expr(expr.operand, schema)
        f, source, target = inner.evaluate, inner.type, expr.type
        scale, precision = expr.scale, expr.precision
        if not _castable(source, target):
            raise PlanError(f"CAST from {source.value} to {target.value} is not supported")
        cast_shape = (precision, scale or 0) if target is SqlType.DECIMAL and precision is not None \
            else None
        truncate = value_rules().integer_cast == "truncate"
        return Compiled(target, _checked(lambda row: _cast(f(row), source, target, scale, precision,
                                                           truncate), expr, schema), cast_shape)
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
        if expr.type is SqlType.DATE:
            return f"DATE '{to_external(expr.value, SqlType.DATE)}'"
        if isinstance(expr.value, Decimal):
            return decimal_text(expr.value)
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
        shape = f"({expr.precision}, {expr.scale or 0})" if expr.precision is not None else ""
        return f"CAST({sql_of(expr.operand)} AS {expr.type.value}{shape})"
    if isinstance(expr, Func):
        if expr.name == "array":
            return f"ARRAY[{', '.join(sql_of(a) for a in expr.args)}]"
        if expr.name == "array_element":
            return f"{sql_of(expr.args[0])}[{sql_of(expr.args[1])}]"
        return f"{expr.name}({', '.join(sql_of(a) for a in expr.args)})"
    return repr(expr)
