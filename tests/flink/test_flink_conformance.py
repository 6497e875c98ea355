"""Scalar and aggregate conformance on Flink (verify/conformance.py): every Flink SQL expression
and aggregate call of the FLINK catalog, computed by Flink SQL in batch mode
(executors/flink/batch.py, in the Flink environment) on generated rows, equals what eowc
computes reading the same text in its flink dialect under the flink convention, value and
type, on every row and group. What differs is listed with the row, both values and types."""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

from eowc.semantics.ir.expr import Compiled
from eowc.semantics.ir.values import SqlType, format_timestamp, from_external
from eowc.semantics.rules.triggers import Convention
from eowc.verify.conformance import (
    FLINK,
    Difference,
    compiled_scalars,
    generated_rows,
    reference_aggregates,
    reference_values,
)

ROWS = generated_rows(seed=38, count=200)
#: Where Flink fails the job and eowc gives a value: integer division and MOD by zero (eowc's
#: NULL on division by zero; docs/engines.md, finding F6). Pinned in Flink's words; the
#: expression is then checked on the rows whose divisor is not zero.
FLINK_FAILS = {"i / j": "java.lang.ArithmeticException: / by zero",
               "MOD(i, j)": "java.lang.ArithmeticException: / by zero"}
COLUMN_TYPES = ["BIGINT", "BIGINT", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(10, 2)", "STRING",
                "TIMESTAMP(3)", "BOOLEAN"]


def _request_value(value: Any, flink_type: str) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if flink_type.startswith("TIMESTAMP"):
        return format_timestamp(value)
    return repr(value) if isinstance(value, float) else str(value)


def _flink(env: Path, expressions: tuple[str, ...], group_by: str | None = None,
           rows: list | None = None) -> list[dict]:
    schema = compiled_scalars(Convention.FLINK, FLINK)[0][2]
    request = {"columns": [[c.name, t] for c, t in zip(schema, COLUMN_TYPES, strict=True)],
               "rows": [[_request_value(v, t) for v, t in zip(row, COLUMN_TYPES, strict=True)]
                        for row in (ROWS if rows is None else rows)],
               "expressions": list(expressions), "group_by": group_by}
    done = subprocess.run([str(env / "bin" / "python"), "-m", "eowc.executors.flink.batch"],
                          input=json.dumps(request), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _java_div(a: int, b: int) -> int:
    """Java's long division, toward zero."""
    return -(-a // b) if (a < 0) != (b < 0) else a // b


def _flink_2_3_extract(unit: str, micros: int) -> int:
    """What Flink 2.3's EXTRACT gives for a TIMESTAMP before 1970 (finding F8): the epoch
    milliseconds divided and taken modulo as Java does, toward zero, so the day is one later and
    the hour, minute and second negative (1969-08-18 11:11:29 has hour -12)."""
    millis = micros // 1000
    day = _java_div(millis, 86_400_000)
    date = dt.date(1970, 1, 1) + dt.timedelta(days=day)
    fields = {"YEAR": date.year, "MONTH": date.month, "DAY": date.day,
              "HOUR": _java_div(millis - 86_400_000 * day, 3_600_000),
              "MINUTE": _java_div(millis - 3_600_000 * _java_div(millis, 3_600_000), 60_000),
              "SECOND": _java_div(millis - 60_000 * _java_div(millis, 60_000), 1000)}
    return fields[unit]


def _flink_division(numerator: Any, divisor: Any) -> Any:
    """Flink's DOUBLE quotient (finding F6): IEEE 754, so a zero divisor gives NaN or an
    infinity where eowc gives NULL."""
    if numerator is None or divisor is None:
        return None
    if divisor == 0:
        return math.nan if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / divisor


#: Where Flink gives another value than eowc on some rows, and what it gives there: the
#: expression, the rows concerned, Flink's value on such a row (docs/engines.md).
FLINK_VALUES = {
    "d / d": (lambda row: row[2] == 0, lambda row: _flink_division(row[2], row[2])),
    "i / d": (lambda row: row[2] == 0, lambda row: _flink_division(row[0], row[2])),
    **{f"EXTRACT({unit} FROM ts)": (lambda row: row[6] < 0,
                                    lambda row, u=unit: _flink_2_3_extract(u, row[6]))
       for unit in ("YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND")},
}


def _family(flink_type: str) -> str:
    """A Flink type as eowc's type system sees it (integers of every width are BIGINT)."""
    bare = flink_type.replace(" NOT NULL", "")
    if bare in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return "BIGINT"
    if bare.startswith(("VARCHAR", "CHAR", "STRING")):
        return "VARCHAR"
    if bare.startswith("TIMESTAMP"):
        return "TIMESTAMP"
    return bare.replace(", ", ",")


def _eowc_family(compiled: Compiled) -> str:
    if compiled.type is SqlType.DECIMAL and compiled.shape is not None:
        return f"DECIMAL({compiled.shape[0]},{compiled.shape[1]})"
    return compiled.type.value


def _internal(value: Any, sql_type: SqlType) -> Any:
    if value is None:
        return None
    if sql_type is SqlType.DECIMAL:
        return Decimal(value)
    if sql_type is SqlType.DOUBLE:
        return float(value)
    return from_external(value, sql_type) if sql_type.is_time else value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b) or abs(a - b) <= 1e-12 * max(1.0, abs(a))
    return a == b and (a is None) == (b is None)


def test_every_scalar_expression_computes_as_flink_computes_it(flink_env: Path) -> None:
    expected = reference_values(ROWS, Convention.FLINK, FLINK)
    # The expressions Flink fails on go apart: a failing query makes Flink run each
    # expression of it as a job of its own, to say which one fails.
    others = tuple(t for t in FLINK.scalars if t not in FLINK_FAILS)
    by_text = {**dict(zip(others, _flink(flink_env, others), strict=True)),
               **dict(zip(FLINK_FAILS, _flink(flink_env, tuple(FLINK_FAILS)), strict=True))}
    answers = [by_text[text] for text in FLINK.scalars]
    nonzero = [row for row in ROWS if row[1] != 0]  # j, the divisor
    on_nonzero = dict(zip(FLINK_FAILS, _flink(flink_env, tuple(FLINK_FAILS), rows=nonzero),
                          strict=True))
    differences, refused = [], []
    for text, answer in zip(FLINK.scalars, answers, strict=True):
        compiled, ours = expected[text]
        if text in FLINK_FAILS:
            assert answer.get("error", "").endswith(FLINK_FAILS[text]), (text, answer)
            ours = [v for v, row in zip(ours, ROWS, strict=True) if row[1] != 0]
            answer = on_nonzero[text]
            rows = nonzero
        else:
            rows = ROWS
        if "error" in answer:
            refused.append(f"{text}: {answer['error']}")
            continue
        theirs = [_internal(v, compiled.type) for v in answer["values"]]
        if _family(answer["type"]) != _eowc_family(compiled):
            differences.append(Difference(text, ROWS[0], ours[0], theirs[0], _eowc_family(compiled),
                                          answer["type"]))
            continue
        concerned, flinks_value = FLINK_VALUES.get(text, (lambda row: False, None))
        for row, mine, flinks in zip(rows, ours, theirs, strict=True):
            if concerned(row):
                assert flinks_value is not None
                mine = flinks_value(row)  # pinned: Flink's value, not eowc's
            if not _same(mine, flinks):
                differences.append(Difference(text, row, mine, flinks, _eowc_family(compiled),
                                              answer["type"]))
                break
    assert not refused, "\n".join(refused)
    assert not differences, "\n".join(map(str, differences))


def test_every_aggregate_computes_as_flink_computes_it(flink_env: Path) -> None:
    expected = reference_aggregates(ROWS, Convention.FLINK, FLINK)
    answers = _flink(flink_env, FLINK.aggregates, FLINK.group_key)
    differences = []
    for k, (text, answer) in enumerate(zip(FLINK.aggregates, answers, strict=True)):
        assert "error" not in answer, (text, answer)
        got = {g: v for g, v in answer["groups"]}
        assert set(got) == set(expected), text
        for group, values in expected.items():
            mine = values[k]
            theirs = got[group]
            if isinstance(mine, Decimal):
                theirs = Decimal(theirs)
            elif isinstance(mine, float) and theirs is not None:
                theirs = float(theirs)
            elif isinstance(mine, int) and isinstance(theirs, str):  # a time, as text
                theirs = from_external(theirs, SqlType.TIMESTAMP)
            if not _same(mine, theirs):
                differences.append(Difference(text, (group,), mine, theirs, "", answer["type"]))
    assert not differences, "\n".join(map(str, differences))
