"""SQL value types and their representation inside the reference interpreter.

Time (TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_LTZ) is an integer number of microseconds since
1970-01-01 00:00:00 UTC; a DATE is the microseconds of its midnight (UTC); an interval is an
integer number of microseconds; a DECIMAL is a :class:`decimal.Decimal` that carries its own
scale (``Decimal("3.30")``). Every other value is the plain Python value (int, float, str,
bool) and SQL NULL is ``None``. How an engine computes with values (integer overflow, decimal
precision) is a :class:`ValueRules`, one per convention (``docs/sql/types.md``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Literal

MICROS_PER_MILLI = 1_000
MICROS_PER_SECOND = 1_000_000

#: The fixed-length units of an interval, by every name PostgreSQL (and so RisingWave) and
#: Flink accept for them, in microseconds. Months and years have no fixed length.
INTERVAL_UNITS: dict[str, int] = {
    **dict.fromkeys(["microsecond", "microseconds", "us", "usec", "usecs"], 1),
    **dict.fromkeys(["millisecond", "milliseconds", "ms", "msec", "msecs"], 1_000),
    **dict.fromkeys(["second", "seconds", "s", "sec", "secs"], MICROS_PER_SECOND),
    **dict.fromkeys(["minute", "minutes", "m", "min", "mins"], 60 * MICROS_PER_SECOND),
    **dict.fromkeys(["hour", "hours", "h", "hr", "hrs"], 3600 * MICROS_PER_SECOND),
    **dict.fromkeys(["day", "days", "d"], 86_400 * MICROS_PER_SECOND),
    **dict.fromkeys(["week", "weeks", "w"], 7 * 86_400 * MICROS_PER_SECOND),
}
_VARIABLE_UNITS = {"mon", "mons", "month", "months", "y", "yr", "yrs", "year", "years",
                   "decade", "decades", "century", "centuries", "millennium", "millennia"}
_INTERVAL_CLOCK = re.compile(r"^([+-]?)(\d+):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6}))?)?$")
_INTERVAL_AMOUNT = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))([a-z]*)$")

_EPOCH = dt.datetime(1970, 1, 1)
_TIMESTAMP_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
                           r"(?:\s*(Z|[+-]\d{2}(?::?\d{2})?))?$")
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
_INTERVAL_RE = re.compile(r"^(-?)(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")


class SqlType(Enum):
    """The column types of the SQL subset."""

    BIGINT = "BIGINT"
    DOUBLE = "DOUBLE"
    VARCHAR = "VARCHAR"
    BOOLEAN = "BOOLEAN"
    TIMESTAMP = "TIMESTAMP"
    INTERVAL = "INTERVAL"
    NULL = "NULL"
    #: An exact number (Python ``Decimal``, its scale its own: ``1.10`` has scale 2).
    DECIMAL = "DECIMAL"
    #: A calendar day, stored as the microseconds of its midnight; printed ``YYYY-MM-DD``.
    DATE = "DATE"
    #: PostgreSQL's / RisingWave's ``TIMESTAMP WITH TIME ZONE``: an instant (UTC microseconds),
    #: printed in UTC with its offset, ``2024-01-01 00:00:00+00:00``.
    TIMESTAMPTZ = "TIMESTAMPTZ"
    #: Flink's ``TIMESTAMP_LTZ`` (``TIMESTAMP WITH LOCAL TIME ZONE``): an instant (UTC
    #: microseconds), printed in the session time zone (UTC) without an offset.
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"

    @property
    def is_numeric(self) -> bool:
        return self in (SqlType.BIGINT, SqlType.DOUBLE, SqlType.DECIMAL, SqlType.NULL)

    @property
    def is_time(self) -> bool:
        """A point in time in microseconds: a window TVF, a watermark or an interval
        arithmetic may use it as it uses a TIMESTAMP."""
        return self in TIME_TYPES


@dataclass(frozen=True)
class ArrayType:
    """``element[]`` (RisingWave, PostgreSQL) / ``ARRAY<element>`` (Flink): a list of values of
    one :class:`SqlType`, each possibly NULL; its value is a Python tuple. It stands where a
    :class:`SqlType` stands (a column's or an expression's type); one instance per element
    type (:func:`array_of`), so types compare with ``is`` as the enum members do."""

    element: SqlType

    def __reduce__(self) -> tuple[Any, ...]:
        return array_of, (self.element,)  # one instance per element type, unpickled too

    @property
    def value(self) -> str:
        return f"{self.element.value}[]"

    @property
    def name(self) -> str:
        return "ARRAY"

    @property
    def is_numeric(self) -> bool:
        return False

    @property
    def is_time(self) -> bool:
        return False


_ARRAYS: dict[SqlType, ArrayType] = {}


def array_of(element: SqlType | ArrayType) -> ArrayType:
    """The type ``element[]``; ValueError for an array of arrays (eowc has no nested arrays)."""
    if isinstance(element, ArrayType):
        raise ValueError(f"arrays of arrays ({element.value}[]) are not supported")
    return _ARRAYS.setdefault(element, ArrayType(element))


#: A column's or an expression's type: a scalar :class:`SqlType` or an :class:`ArrayType`.
ValueType = SqlType | ArrayType


#: The types whose values are points in time (microseconds since the epoch, UTC).
TIME_TYPES = frozenset({SqlType.TIMESTAMP, SqlType.TIMESTAMPTZ, SqlType.TIMESTAMP_LTZ})


#: SQL type names accepted in DDL and CAST, mapped to the type they denote.
TYPE_NAMES: dict[str, SqlType] = {
    **dict.fromkeys(["BIGINT", "INT", "INTEGER", "SMALLINT", "TINYINT", "INT8", "INT4"],
                    SqlType.BIGINT),
    **dict.fromkeys(["DOUBLE", "FLOAT", "REAL", "DOUBLE PRECISION"], SqlType.DOUBLE),
    **dict.fromkeys(["DECIMAL", "NUMERIC", "DEC"], SqlType.DECIMAL),
    "DATE": SqlType.DATE,
    **dict.fromkeys(["VARCHAR", "TEXT", "STRING", "CHAR"], SqlType.VARCHAR),
    **dict.fromkeys(["BOOLEAN", "BOOL"], SqlType.BOOLEAN),
    **dict.fromkeys(["TIMESTAMP", "DATETIME"], SqlType.TIMESTAMP),
    **dict.fromkeys(["TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"], SqlType.TIMESTAMPTZ),
    **dict.fromkeys(["TIMESTAMPLTZ", "TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE"],
                    SqlType.TIMESTAMP_LTZ),
    "INTERVAL": SqlType.INTERVAL,
}


# ---------------------------------------------------------------------------------------------
# How an engine computes with values


@dataclass(frozen=True)
class ValueRules:
    """How one engine computes with values where engines differ (``docs/sql/types.md``); each
    :class:`~eowc.semantics.rules.triggers.Convention` holds one. Expressions are compiled
    under the rules in force (:func:`computing_under`), the way Python's own ``decimal``
    arithmetic follows its context."""

    #: A BIGINT result outside [-2**63, 2**63): ``"error"`` (RisingWave's "numeric out of
    #: range", Spark's ANSI mode ARITHMETIC_OVERFLOW) or ``"wrap"`` (Flink: Java's two's
    #: complement 64-bit arithmetic).
    integer_overflow: Literal["error", "wrap"]
    #: The most significant digits a DECIMAL holds: 28 in RisingWave (rust_decimal), 38 in
    #: Spark and Flink (``DECIMAL(38, s)``).
    decimal_max_precision: int
    #: A DECIMAL result whose integer part does not fit ``decimal_max_precision``:
    #: ``"error"`` (RisingWave, Spark ANSI) or ``"null"`` (Flink).
    decimal_overflow: Literal["error", "null"]
    #: The scale of a DECIMAL quotient ``a / b``: ``None`` where the quotient keeps
    #: ``decimal_max_precision`` significant digits (RisingWave); else the least scale of
    #: SQL Server's rule ``max(min_scale, s1 + p2 + 1)`` (Spark and Flink: 6).
    decimal_division_min_scale: int | None
    #: The precision a BIGINT operand has as a DECIMAL (``p2`` of the division rule): 19 in
    #: Flink (``DECIMAL(19, 0)``), 20 in Spark (``DecimalType(20, 0)``); an integer literal
    #: that fits 32 bits is an INT, ``DECIMAL(10, 0)``, in both.
    bigint_decimal_precision: int
    #: ``concat(a, b, ...)`` skips NULL arguments (PostgreSQL, RisingWave) instead of being
    #: NULL when one is (Flink, Spark). ``a || b`` is NULL if either is, everywhere.
    concat_skips_null: bool
    #: A column declared ``DECIMAL(p, s)`` holds its values at scale ``s`` (rounded half away
    #: from zero when a row arrives; more than ``p - s`` integer digits is out of range: the
    #: ``decimal_overflow`` rule), and ``(p, s)`` is its type (Spark, Flink). False: the
    #: engine's decimal has no declared shape (RisingWave's NUMERIC, which refuses
    #: ``NUMERIC(p, s)``): a declared one is read as plain NUMERIC.
    declared_decimal: bool
    #: The digits ``sum`` of a ``DECIMAL(p, s)`` adds to ``p`` (capped at
    #: ``decimal_max_precision``): Spark's ``DECIMAL(p + 10, s)``; Flink's sum is
    #: ``DECIMAL(38, s)`` (38 here), RisingWave's unconstrained (28).
    decimal_sum_added_digits: int
    #: The scale of ``avg`` of a ``DECIMAL(p, s)``: ``max(minimum, s + added)`` as
    #: ``(added, minimum)``: Spark ``DECIMAL(p + 4, s + 4)`` is (4, 0), Flink ``DECIMAL(38,
    #: max(6, s))`` is (0, 6); None: the quotient ``sum / count`` of decimals (RisingWave).
    decimal_avg_scale: tuple[int, int] | None
    #: An integer literal in DECIMAL arithmetic has the digits it is written with (Spark's
    #: ``literalPickMinimumPrecision``: ``3`` is ``DECIMAL(1, 0)``), not INT's 10 (Flink).
    integer_literal_digits: bool
    #: ``sqrt`` of a negative number: ``"error"`` (RisingWave, PostgreSQL's "cannot take
    #: square root of a negative number") or ``"nan"`` (Spark's and Flink's
    #: ``java.lang.Math.sqrt``).
    negative_sqrt: Literal["error", "nan"]
    #: ``avg`` of integers: a DOUBLE (Spark, RisingWave here; RisingWave's own is a NUMERIC)
    #: or an integer of the argument's type, the sum divided by the count as Java divides
    #: longs, toward zero (Flink: ``AVG(10, 20, 40)`` is 23).
    integer_avg: Literal["double", "integer"] = "double"
    #: Where ORDER BY puts NULLs: ``"high"``, above every value (PostgreSQL, RisingWave: last
    #: ascending, first descending) or ``"low"``, below every value (Flink, Calcite's
    #: default: first ascending, last descending).
    nulls_sort: Literal["high", "low"] = "high"
    #: ``CAST`` of a DOUBLE or DECIMAL to BIGINT: ``"round"``, half away from zero
    #: (PostgreSQL, RisingWave), or ``"truncate"`` toward zero (Flink: ``CAST(-97.66 AS
    #: BIGINT)`` is -97, as Java's ``(long)``).
    integer_cast: Literal["round", "truncate"] = "round"
    #: The type of ``floor`` and ``ceil`` of a DOUBLE: ``"bigint"`` (eowc's reading of
    #: RisingWave and of the queries ``spark-native`` runs) or ``"double"`` (Flink, Calcite:
    #: the argument's type).
    floor_of_double: Literal["bigint", "double"] = "bigint"


RISINGWAVE_VALUES = ValueRules(integer_overflow="error", decimal_max_precision=28,
                               decimal_overflow="error", decimal_division_min_scale=None,
                               bigint_decimal_precision=19, concat_skips_null=True,
                               declared_decimal=False, decimal_sum_added_digits=28,
                               decimal_avg_scale=None, integer_literal_digits=False,
                               negative_sqrt="error")
SPARK_VALUES = ValueRules(integer_overflow="error", decimal_max_precision=38,
                          decimal_overflow="error", decimal_division_min_scale=6,
                          bigint_decimal_precision=20, concat_skips_null=False,
                          declared_decimal=True, decimal_sum_added_digits=10,
                          decimal_avg_scale=(4, 0), integer_literal_digits=True,
                          negative_sqrt="nan")
FLINK_VALUES = ValueRules(integer_overflow="wrap", decimal_max_precision=38,
                          decimal_overflow="null", decimal_division_min_scale=6,
                          bigint_decimal_precision=19, concat_skips_null=False,
                          declared_decimal=True, decimal_sum_added_digits=38,
                          decimal_avg_scale=(0, 6), integer_literal_digits=False,
                          negative_sqrt="nan", integer_avg="integer", nulls_sort="low",
                          integer_cast="truncate", floor_of_double="double")

_RULES: ContextVar[ValueRules] = ContextVar("eowc_value_rules", default=RISINGWAVE_VALUES)


def value_rules() -> ValueRules:
    """The rules expressions are compiled under now (RisingWave's unless
    :func:`computing_under` says otherwise)."""
    return _RULES.get()


@contextmanager
def computing_under(rules: ValueRules) -> Iterator[None]:
    """Compile expressions under ``rules`` inside the ``with`` block; an evaluator keeps the
    rules it was compiled under."""
    token = _RULES.set(rules)
    try:
        yield
    finally:
        _RULES.reset(token)


class ValueOutOfRange(ValueError):
    """A value an engine cannot hold (BIGINT overflow, a DECIMAL beyond its precision, a
    timestamp beyond year 9999): the query fails, as on the engine. ``located``: the message
    already names the expression and the row."""

    def __init__(self, message: str, located: bool = False) -> None:
        super().__init__(message)
        self.located = located


#: Exact decimal arithmetic: enough digits that +, - and * never round (results are then
#: fitted to the engine's precision by :func:`fit_decimal`).
EXACT = decimal.Context(prec=400, Emax=10**6, Emin=-10**6,
                        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow])

BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


def nulls_first(descending: bool) -> bool:
    """Whether ORDER BY ... [DESC] puts NULLs first under the rules in force (``nulls_sort``)."""
    return descending if value_rules().nulls_sort == "high" else not descending


def integer_average(total: int, count: int) -> int:
    """``total / count`` as Java divides longs: toward zero."""
    quotient = abs(total) // count
    return quotient if total >= 0 else -quotient


def decimal_digits(value: Decimal) -> tuple[int, int]:
    """``(precision, scale)`` of a decimal value as SQL counts them: ``1.10`` is (3, 2),
    ``0.05`` is (2, 2), ``120`` is (3, 0)."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    return max(len(value.as_tuple().digits) + max(0, exponent), scale, 1), scale


def fit_decimal(value: Decimal, rules: ValueRules) -> Decimal | None:
    """``value`` as the engine holds it: rounded (half away from zero) to keep at most
    ``decimal_max_precision`` digits; an integer part that does not fit is out of range
    (an error, or NULL under Flink)."""
    precision, scale = decimal_digits(value)
    limit = rules.decimal_max_precision
    if precision <= limit:
        return value
    integer_digits = precision - scale
    if integer_digits > limit:
        if rules.decimal_overflow == "null":
            return None
        raise ValueOutOfRange(f"numeric out of range: {value} has more than {limit} digits")
    return value.quantize(Decimal(1).scaleb(-(limit - integer_digits)), decimal.ROUND_HALF_UP,
                          context=EXACT)


#: The type of a DECIMAL expression where it is known: ``(precision, scale)``.
DecimalShape = tuple[int, int]


def fit_decimal_shape(value: Decimal, shape: DecimalShape, rules: ValueRules) -> Decimal | None:
    """``value`` as a ``DECIMAL(p, s)`` holds it: rounded half away from zero to scale ``s``
    (Spark's and Flink's ``HALF_UP``); more than ``p - s`` integer digits is out of range
    (Spark ANSI: an error; Flink: NULL, as its ``DecimalData.fromBigDecimal`` gives)."""
    precision, scale = shape
    rounded = rounded_to_scale(value, scale)
    if decimal_digits(rounded)[0] <= precision:
        return rounded
    if rules.decimal_overflow == "null":
        return None
    raise ValueOutOfRange(f"numeric out of range: {decimal_text(value)} does not fit "
                          f"DECIMAL({precision}, {scale}) (at most {precision - scale} digits "
                          f"before the point)")


def rounded_to_scale(value: Decimal, scale: int) -> Decimal:
    """``value`` rounded half away from zero to ``scale`` places; a zero has no sign (Java's
    ``BigDecimal`` has no -0.00)."""
    rounded = value.quantize(Decimal(1).scaleb(-scale), decimal.ROUND_HALF_UP, context=EXACT)
    return rounded.copy_abs() if rounded.is_zero() else rounded


def declared_decimal_value(value: Decimal | None, shape: DecimalShape | None,
                           rules: ValueRules) -> Decimal | None:
    """A DECIMAL column's value as a row arriving with it holds it under ``rules``: fitted to
    the column's declared ``DECIMAL(p, s)`` (:func:`fit_decimal_shape`) where the engine
    keeps declared shapes, else to the engine's precision (:func:`fit_decimal`)."""
    if value is None:
        return None
    if shape is not None and rules.declared_decimal:
        return fit_decimal_shape(value, shape, rules)
    return fit_decimal(value, rules)


def bounded_shape(precision: int, scale: int, rules: ValueRules) -> DecimalShape:
    """``DECIMAL(precision, scale)`` where it exceeds the engine's precision: Spark's and
    Flink's ``adjustPrecisionScale`` (precision capped, the scale lowered to keep the
    integer digits, but not below ``min(scale, 6)``)."""
    limit = rules.decimal_max_precision
    if precision <= limit:
        return precision, scale
    integer_digits = precision - scale
    return limit, max(limit - integer_digits, min(scale, 6))


def decimal_sum_shape(shape: DecimalShape, rules: ValueRules) -> DecimalShape:
    """The type of ``sum`` over a ``DECIMAL(p, s)``: ``DECIMAL(p + added, s)``, capped."""
    precision, scale = shape
    return min(rules.decimal_max_precision, precision + rules.decimal_sum_added_digits), scale


def decimal_average(total: Decimal, count: int, rules: ValueRules) -> Decimal | None:
    """``avg`` of decimals whose (exact) sum is ``total`` over ``count`` values; the scale of
    ``total`` is the argument's scale ``s``. Spark and Flink: the quotient rounded half away
    from zero to the scale :attr:`ValueRules.decimal_avg_scale` gives (Spark 3.4+'s
    ``DecimalDivideWithOverflowCheck``, Flink's ``DecimalDataUtils.divide``); RisingWave:
    ``sum / count``, a decimal quotient of ``decimal_max_precision`` significant digits."""
    if rules.decimal_avg_scale is None:
        context = decimal.Context(prec=rules.decimal_max_precision, rounding=decimal.ROUND_HALF_UP)
        return fit_decimal(context.divide(total, Decimal(count)), rules)
    added, minimum = rules.decimal_avg_scale
    scale = min(rules.decimal_max_precision, max(minimum, decimal_digits(total)[1] + added))
    return rounded_to_scale(EXACT.divide(total, Decimal(count)), scale)


def fit_bigint(value: int, rules: ValueRules) -> int:
    """A BIGINT result as the engine holds it: wrapped to 64 bits (Flink) or an error."""
    if BIGINT_MIN <= value <= BIGINT_MAX:
        return value
    if rules.integer_overflow == "wrap":
        return (value - BIGINT_MIN) % 2**64 + BIGINT_MIN
    raise ValueOutOfRange(f"bigint out of range: {value} does not fit a 64-bit BIGINT")


def decimal_from_text(text: str) -> Decimal:
    """A decimal written as digits (``1.10``, ``-3``, ``1e3``), exactly; ValueError if not."""
    try:
        value = Decimal(text.strip())
    except decimal.InvalidOperation:
        raise ValueError(f"expected a DECIMAL number, got {text!r}") from None
    if not value.is_finite():
        raise ValueError(f"a DECIMAL is a finite number, got {text!r}")
    return value


def decimal_text(value: Decimal) -> str:
    """A decimal's digits without exponent, its scale kept: ``Decimal("3.30")`` is
    ``3.30``, ``Decimal("1E+3")`` is ``1000``."""
    return format(value, "f")


# ---------------------------------------------------------------------------------------------
# Times


def _offset_micros(zone: str | None) -> int:
    if zone is None or zone == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    return sign * (hours * 60 + minutes) * 60 * MICROS_PER_SECOND


def parse_timestamp(text: str, zoned: bool = True) -> int:
    """``YYYY-MM-DD HH:MM:SS[.ffffff][offset]`` to UTC microseconds (no offset: UTC; the
    offset ``Z``, ``+08``, ``+08:00`` or ``-0530`` is subtracted); ValueError if malformed,
    or if it has an offset and not ``zoned`` (a TIMESTAMP column's value). Digits of the
    fraction past the microsecond are dropped."""
    m = _TIMESTAMP_RE.match(text.strip())
    if not m:
        shape = "YYYY-MM-DD HH:MM:SS[.ffffff]" + ("[+HH:MM]" if zoned else "")
        raise ValueError(f"expected a timestamp {shape}, got {text!r}")
    if m.group(8) is not None and not zoned:
        raise ValueError(f"expected a timestamp without time zone YYYY-MM-DD HH:MM:SS[.ffffff], "
                         f"got {text!r} (declare the column TIMESTAMPTZ or TIMESTAMP_LTZ for "
                         f"times with an offset)")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = (m.group(7) or "")[:6].ljust(6, "0")
    try:
        moment = dt.datetime(year, month, day, hour, minute, second, int(fraction))
    except ValueError as error:  # the pattern matched but the moment does not exist
        raise ValueError(f"{text!r} is not a valid timestamp ({error}); expected "
                         "YYYY-MM-DD HH:MM:SS[.ffffff]") from None
    return (moment - _EPOCH) // dt.timedelta(microseconds=1) - _offset_micros(m.group(8))


def parse_date(text: str) -> int:
    """``YYYY-MM-DD`` to the microseconds of its midnight (UTC); ValueError if malformed."""
    m = _DATE_RE.match(text.strip())
    if not m:
        raise ValueError(f"expected a date YYYY-MM-DD, got {text!r}")
    try:
        day = dt.date(*(int(g) for g in m.groups()))
    except ValueError as error:
        raise ValueError(f"{text!r} is not a valid date ({error})") from None
    return (day - _EPOCH.date()).days * _MICROS_PER_DAY


#: The microseconds of 0001-01-01 00:00:00 and of 9999-12-31 23:59:59.999999: the times
#: eowc can print (the engines' range too).
MIN_TIME = (dt.datetime(1, 1, 1) - _EPOCH) // dt.timedelta(microseconds=1)
MAX_TIME = (dt.datetime(9999, 12, 31, 23, 59, 59, 999999) - _EPOCH) // dt.timedelta(microseconds=1)


def check_time(micros: int, what: str) -> int:
    """``micros`` if it is a time between years 1 and 9999, else :class:`ValueOutOfRange`."""
    if MIN_TIME <= micros <= MAX_TIME:
        return micros
    raise ValueOutOfRange(f"timestamp out of range: {what} lies outside 0001-01-01 00:00:00 .. "
                          f"9999-12-31 23:59:59.999999 (the years 1 to 9999)")


_COMPUTED_TIME = ("a time the query computed (a window's or a session's end, a time plus an "
                  "interval)")


def format_timestamp(micros: int) -> str:
    """Microseconds to ``YYYY-MM-DD HH:MM:SS[.ffffff]``; the fraction only when non-zero."""
    moment = _EPOCH + dt.timedelta(microseconds=check_time(micros, _COMPUTED_TIME))
    text = moment.isoformat(sep=" ", timespec="seconds")  # strftime drops the zeros of year 1
    return f"{text}.{moment.microsecond:06d}" if moment.microsecond else text


def format_date(micros: int) -> str:
    """The day of ``micros`` as ``YYYY-MM-DD``."""
    return format_timestamp(micros - micros % _MICROS_PER_DAY)[:10]


def format_interval(micros: int) -> str:
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), MICROS_PER_SECOND)
    hours, rest = divmod(seconds, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{fraction:06d}" if fraction else text


# ---------------------------------------------------------------------------------------------
# Values in JSON

#: How a DOUBLE that is not a finite number is written in JSON (which has no such numbers):
#: as these strings, the spelling of PostgreSQL, RisingWave and Flink's ``CAST(x AS STRING)``.
NON_FINITE_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _double_external(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


_PRINTERS = {
    SqlType.TIMESTAMP: format_timestamp,
    SqlType.TIMESTAMP_LTZ: format_timestamp,
    SqlType.TIMESTAMPTZ: lambda micros: f"{format_timestamp(micros)}+00:00",
    SqlType.DATE: format_date,
    SqlType.INTERVAL: format_interval,
}


def to_external(value: Any, sql_type: ValueType) -> Any:
    """An internal value as it appears in output: JSON-compatible, with :func:`json_text`
    writing a DECIMAL as an exact JSON number and NaN and infinities as the strings
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; an ARRAY as a list of its elements so
    written."""
    if value is None:
        return None
    if isinstance(sql_type, ArrayType):
        return [to_external(v, sql_type.element) for v in value]
    printer = _PRINTERS.get(sql_type)
    if printer is not None:
        return printer(value)
    if isinstance(value, float):
        return _double_external(value)
    return value


def _exact_decimal(value: Any, sql_type: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str | float):
        raise ValueError(f"expected a {sql_type} number or numeric string, got {value!r}")
    if isinstance(value, float):  # read without parse_float=Decimal: its shortest digits
        value = repr(value)
    return decimal_from_text(value) if isinstance(value, str) else Decimal(value)


def from_external(value: Any, sql_type: ValueType) -> Any:
    """A JSON value of an event to its internal form; ValueError says what was expected.

    A time column takes a string (a TIMESTAMPTZ or TIMESTAMP_LTZ one may carry an offset) or
    a JSON integer, read as milliseconds since the epoch (UTC). A DECIMAL takes a JSON number
    (exact when the JSON was read with ``parse_float=Decimal``, as :func:`parse_json` does) or
    a numeric string. An ARRAY takes a JSON array of its element's values (each may be null)
    and becomes a tuple; ValueError names the position (from 1) of a wrong element."""
    if value is None:
        return None
    if isinstance(sql_type, ArrayType):
        return _array_from_external(value, sql_type)
    if sql_type in TIME_TYPES:
        if isinstance(value, int) and not isinstance(value, bool):
            return check_time(value * MICROS_PER_MILLI, f"{value} ms since the epoch")
        if not isinstance(value, str):
            raise ValueError(f"expected a {sql_type.value} string or epoch milliseconds, "
                             f"got {_shown(value)}")
        return parse_timestamp(value, zoned=sql_type is not SqlType.TIMESTAMP)
    if sql_type is SqlType.DATE:
        if not isinstance(value, str):
            raise ValueError(f"expected a DATE string YYYY-MM-DD, got {_shown(value)}")
        return parse_date(value)
    if sql_type is SqlType.BIGINT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a BIGINT, got {_shown(value)}")
        if not BIGINT_MIN <= value <= BIGINT_MAX:
            raise ValueError(f"expected a BIGINT (64 bits), got {value} (out of range)")
        return value
    if sql_type is SqlType.DECIMAL:
        return _exact_decimal(value, "DECIMAL")
    if sql_type is SqlType.DOUBLE:
        if isinstance(value, str) and value in NON_FINITE_TEXT:
            return NON_FINITE_TEXT[value]
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise ValueError(f"expected a DOUBLE, got {_shown(value)}")
        return float(value)
    if sql_type is SqlType.VARCHAR:
        if not isinstance(value, str):
            raise ValueError(f"expected a VARCHAR string, got {_shown(value)}")
        return value
    if sql_type is SqlType.BOOLEAN:
        if not isinstance(value, bool):
            raise ValueError(f"expected a BOOLEAN, got {_shown(value)}")
        return value
    raise ValueError(f"columns of type {sql_type.value} cannot be read from events")


def _array_from_external(value: Any, sql_type: ArrayType) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise ValueError(f"expected a JSON array of {sql_type.element.value} (a {sql_type.value}), "
                         f"got {_shown(value)}")
    elements = []
    for position, element in enumerate(value, start=1):
        try:
            elements.append(from_external(element, sql_type.element))
        except ValueError as error:
            raise ValueError(f"element {position} of the {sql_type.value} array: {error}") from None
    return tuple(elements)


def _shown(value: Any) -> str:
    """A JSON value as the user wrote it (a number read as ``Decimal`` shows its digits)."""
    return decimal_text(value) if isinstance(value, Decimal) else repr(value)


def from_output_external(value: Any, sql_type: ValueType) -> Any:
    """An output value as :func:`to_external` writes it, back to its internal form: also the
    types only a query's output has (INTERVAL as ``[-]HH:MM:SS[.ffffff]``, and NULL);
    ValueError says what was expected."""
    if value is None:
        return None
    if isinstance(sql_type, ArrayType) and isinstance(value, list):
        return tuple(from_output_external(v, sql_type.element) for v in value)
    if sql_type is SqlType.INTERVAL:
        match = _INTERVAL_RE.match(value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f"expected an INTERVAL [-]HH:MM:SS[.ffffff], got {value!r}")
        sign, hours, minutes, seconds, fraction = match.groups()
        micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * MICROS_PER_SECOND \
            + int((fraction or "").ljust(6, "0"))
        return -micros if sign else micros
    if sql_type is SqlType.NULL:
        raise ValueError(f"expected null (the column is always NULL), got {value!r}")
    return from_external(value, sql_type)


def parse_json(text: str) -> Any:
    """A JSON document with its non-integer numbers read exactly, as ``Decimal``."""
    return json.loads(text, parse_float=Decimal)


def json_text(document: Any, indent: int | None = None, ensure_ascii: bool = True) -> str:
    """``document`` as JSON, the way every writer of eowc writes values (``docs/sql/types.md``):
    a ``Decimal`` as a JSON number with exactly its digits (``3.30``), a float NaN or
    infinity as the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``. The output is
    always valid JSON, and :func:`parse_json` reads a decimal back with its scale."""
    decimals: list[str] = []
    marker = f"\x00{secrets.token_hex(4)}:"

    def prepare(value: Any) -> Any:
        if isinstance(value, Decimal):
            decimals.append(decimal_text(value) if value.is_finite() else f'"{value}"')
            return f"{marker}{len(decimals) - 1}"
        if isinstance(value, float):
            return _double_external(value)
        if isinstance(value, dict):
            return {k: prepare(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [prepare(v) for v in value]
        return value

    text = json.dumps(prepare(document), indent=indent, ensure_ascii=ensure_ascii,
                      allow_nan=False)
    if not decimals:
        return text
    quoted = json.dumps(marker, ensure_ascii=ensure_ascii)[:-1]  # '"' and the escaped marker
    return re.sub(re.escape(quoted) + r'(\d+)"', lambda m: decimals[int(m.group(1))], text)


def sort_key(value: Any) -> tuple[int, Any]:
    """A total order over SQL values of one column: NULL first, then by value (an ARRAY
    element by element, as PostgreSQL orders arrays, a NULL element first)."""
    if value is None:
        return (0, 0)
    return (1, tuple(map(sort_key, value))) if type(value) is tuple else (1, value)


def row_sort_key(row: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """The deterministic total order on whole rows used to break ties (SEMANTICS.md §2)."""
    return tuple((0, 0) if v is None else (1, v) if type(v) is not tuple else sort_key(v)
                 for v in row)  # sort_key, inlined: per row


def interval_text_micros(text: str, unit: str | None = None) -> int:
    """An interval written as PostgreSQL (and so RisingWave) reads it, in microseconds:
    quantities with units (``'5 minutes'``, ``'1 minute 30 seconds'``, ``'1.5h'``, ``'500 ms'``),
    a clock ``[-]H:MM[:SS[.ffffff]]`` (``'00:00:10'``), or both (``'1 day 02:00:00'``, Flink's
    ``'1 02:03:04' DAY TO SECOND``); a bare number counts ``unit`` (Flink's ``INTERVAL '5'
    MINUTE``; seconds without one). ValueError names the part that is not one of these, or
    the unit that has no fixed length (months, years)."""
    words = text.strip().lower().split()
    if not words:
        raise ValueError("the interval is empty")
    total = Decimal(0)
    for i, word in enumerate(words):
        clock = _INTERVAL_CLOCK.match(word)
        if clock is not None:
            sign, hours, minutes, seconds, fraction = clock.groups()
            micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds or 0)) \
                * MICROS_PER_SECOND + int((fraction or "").ljust(6, "0"))
            total += -micros if sign == "-" else micros
            continue
        amount = _INTERVAL_AMOUNT.match(word)
        if amount is None:
            if (word in INTERVAL_UNITS or word in _VARIABLE_UNITS) and i > 0 \
                    and _INTERVAL_AMOUNT.match(words[i - 1]):
                continue  # the unit of the number before it
            raise ValueError(f"cannot read {word!r} in the interval {text!r}: write quantities "
                             f"with units ('1 minute 30 seconds') or a clock ('00:01:30')")
        number, glued = amount.groups()
        named = glued or (words[i + 1] if i + 1 < len(words) and not
                          _INTERVAL_AMOUNT.match(words[i + 1]) and ":" not in words[i + 1]
                          else (unit or "second").lower())
        if named in _VARIABLE_UNITS:
            raise ValueError(f"interval unit {named} has no fixed length: use microseconds to "
                             f"weeks")
        if named not in INTERVAL_UNITS:
            raise ValueError(f"unknown interval unit {named!r} in {text!r} (microseconds to "
                             f"weeks: e.g. '5 seconds', '2 minutes', '1 hour')")
        total += Decimal(number) * INTERVAL_UNITS[named]
    return int(total.to_integral_value(rounding=decimal.ROUND_HALF_UP))
