"""SQL value types and their representation inside the reference interpreter.

Time is an integer number of microseconds since 1970-01-01 00:00:00 UTC; an interval is an
integer number of microseconds. Every other value is the plain Python value (int, float, str,
bool) and SQL NULL is ``None``.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import Enum
from typing import Any

MICROS_PER_MILLI = 1_000
MICROS_PER_SECOND = 1_000_000

_EPOCH = dt.datetime(1970, 1, 1)
_TIMESTAMP_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
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

    @property
    def is_numeric(self) -> bool:
        return self in (SqlType.BIGINT, SqlType.DOUBLE, SqlType.NULL)


#: SQL type names accepted in DDL and CAST, mapped to the type they denote.
TYPE_NAMES: dict[str, SqlType] = {
    **dict.fromkeys(["BIGINT", "INT", "INTEGER", "SMALLINT", "TINYINT", "INT8", "INT4"],
                    SqlType.BIGINT),
    **dict.fromkeys(["DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC", "DOUBLE PRECISION"],
                    SqlType.DOUBLE),
    **dict.fromkeys(["VARCHAR", "TEXT", "STRING", "CHAR"], SqlType.VARCHAR),
    **dict.fromkeys(["BOOLEAN", "BOOL"], SqlType.BOOLEAN),
    **dict.fromkeys(["TIMESTAMP", "TIMESTAMPTZ", "DATETIME"], SqlType.TIMESTAMP),
    "INTERVAL": SqlType.INTERVAL,
}


def parse_timestamp(text: str) -> int:
    """``YYYY-MM-DD HH:MM:SS[.ffffff]`` (UTC) to microseconds; ValueError if malformed."""
    m = _TIMESTAMP_RE.match(text.strip())
    if not m:
        raise ValueError(f"expected a timestamp YYYY-MM-DD HH:MM:SS[.ffffff], got {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = (m.group(7) or "").ljust(6, "0")
    try:
        moment = dt.datetime(year, month, day, hour, minute, second, int(fraction))
    except ValueError as error:  # the pattern matched but the moment does not exist
        raise ValueError(f"{text!r} is not a valid timestamp ({error}); expected "
                         "YYYY-MM-DD HH:MM:SS[.ffffff]") from None
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def format_timestamp(micros: int) -> str:
    """Microseconds to ``YYYY-MM-DD HH:MM:SS[.ffffff]``; the fraction only when non-zero."""
    moment = _EPOCH + dt.timedelta(microseconds=micros)
    text = moment.isoformat(sep=" ", timespec="seconds")  # strftime drops the zeros of year 1
    return f"{text}.{moment.microsecond:06d}" if moment.microsecond else text


def format_interval(micros: int) -> str:
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), MICROS_PER_SECOND)
    hours, rest = divmod(seconds, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{fraction:06d}" if fraction else text


def to_external(value: Any, sql_type: SqlType) -> Any:
    """An internal value as it appears in output (JSON-compatible)."""
    if value is None:
        return None
    if sql_type is SqlType.TIMESTAMP:
        return format_timestamp(value)
    if sql_type is SqlType.INTERVAL:
        return format_interval(value)
    return value


def from_external(value: Any, sql_type: SqlType) -> Any:
    """A JSON value of an event to its internal form; ValueError says what was expected."""
    if value is None:
        return None
    if sql_type is SqlType.TIMESTAMP:
        if not isinstance(value, str):
            raise ValueError(f"expected a TIMESTAMP string, got {value!r}")
        return parse_timestamp(value)
    if sql_type is SqlType.BIGINT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a BIGINT, got {value!r}")
        return value
    if sql_type is SqlType.DOUBLE:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a DOUBLE, got {value!r}")
        return float(value)
    if sql_type is SqlType.VARCHAR:
        if not isinstance(value, str):
            raise ValueError(f"expected a VARCHAR string, got {value!r}")
        return value
    if sql_type is SqlType.BOOLEAN:
        if not isinstance(value, bool):
            raise ValueError(f"expected a BOOLEAN, got {value!r}")
        return value
    raise ValueError(f"columns of type {sql_type.value} cannot be read from events")


def from_output_external(value: Any, sql_type: SqlType) -> Any:
    """An output value as :func:`to_external` writes it, back to its internal form: also the
    types only a query's output has (INTERVAL as ``[-]HH:MM:SS[.ffffff]``, and NULL);
    ValueError says what was expected."""
    if value is None:
        return None
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


def sort_key(value: Any) -> tuple[int, Any]:
    """A total order over SQL values of one column: NULL first, then by value."""
    return (0, 0) if value is None else (1, value)


def row_sort_key(row: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """The deterministic total order on whole rows used to break ties (SEMANTICS.md §2)."""
    return tuple((0, 0) if v is None else (1, v) for v in row)  # sort_key, inlined: per row
