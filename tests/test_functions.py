"""Scalar functions (``docs/sql/functions.md``): substring, concat and ``||``, LIKE / NOT LIKE
/ ILIKE, replace, trim / ltrim / rtrim, power, round(x, n) and TO_TIMESTAMP_LTZ: hand-computed
examples, and the reference against the DuckDB oracle, which translates each function to
DuckDB SQL on its own."""

from __future__ import annotations

import json
import math
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.expressions import translate
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Column, Schema, compile_expr, like_pattern, substring
from eowc.semantics.ir.values import SqlType, ValueOutOfRange, computing_under, parse_timestamp
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention

SCHEMA: Schema = (Column("s", SqlType.VARCHAR), Column("t", SqlType.VARCHAR),
                  Column("n", SqlType.BIGINT))


def value(sql: str, row: tuple[Any, ...] = ("hello", None, 2),
          convention: Convention = Convention.RISINGWAVE) -> Any:
    node = sqlglot.parse_one(f"SELECT {sql}", read="risingwave").expressions[0]
    with computing_under(convention.values):
        return compile_expr(translate(node), SCHEMA).evaluate(row)


def test_substring_in_both_spellings() -> None:
    assert value("substring(s, 2, 3)") == "ell"
    assert value("substring(s FROM 2 FOR 3)") == "ell"
    assert value("substring(s FROM 3)") == "llo"
    assert value("substring(s, 0, 2)") == "h"  # positions 0 and 1: only 1 holds a character
    assert value("substring(s, -1, 3)") == "h"  # positions -1, 0, 1
    assert value("substring(s, 4, 100)") == "lo"
    assert value("substring(s, 9, 2)") == ""
    assert value("substring(t, 1, 2)") is None
    with pytest.raises(ValueError, match="negative substring length"):
        value("substring(s, 1, -1)")


def test_concat_skips_nulls_in_risingwave_and_is_null_in_flink_and_spark() -> None:
    assert value("concat(s, t, '!', n)") == "hello!2"
    assert value("concat(s, t)", convention=Convention.FLINK) is None
    assert value("concat(s, t)", convention=Convention.SPARK) is None
    assert value("concat(s, '!', n)", convention=Convention.FLINK) == "hello!2"
    assert value("s || t") is None  # || is NULL with a NULL operand everywhere
    assert value("s || '-' || n") == "hello-2"
    assert value("concat(1.50, true)") == "1.50true"


def test_like_not_like_and_ilike() -> None:
    assert value("s LIKE 'h%'") is True
    assert value("s LIKE 'h_llo'") is True
    assert value("s LIKE 'h_lo'") is False
    assert value("s LIKE 'ell'") is False  # the whole string must match
    assert value("s NOT LIKE '%x%'") is True
    assert value("s ILIKE 'HE%'") is True
    assert value("s LIKE 'HE%'") is False
    assert value("t LIKE '%'") is None
    assert value("'50%' LIKE '50\\%'") is True  # backslash escapes % (PostgreSQL's default)
    assert value("'500' LIKE '50\\%'") is False
    assert value("'a.c' LIKE 'a.c'") is True and value("'abc' LIKE 'a.c'") is False
    with pytest.raises(SqlError, match="ESCAPE is not supported"):
        translate(sqlglot.parse_one("SELECT s LIKE 'a!%' ESCAPE '!'", read="risingwave").expressions[0])


def test_replace_and_trim() -> None:
    assert value("replace(s, 'l', 'L')") == "heLLo"
    assert value("replace(s, '', 'x')") == "hello"  # an empty search string changes nothing
    assert value("replace(s, 'l', t)") is None
    padded = ("  hi  ", "xxhixx", 0)
    assert value("trim(s)", padded) == "hi"
    assert value("ltrim(s)", padded) == "hi  "
    assert value("rtrim(s)", padded) == "  hi"
    assert value("trim(BOTH 'x' FROM t)", padded) == "hi"
    assert value("trim(LEADING 'x' FROM t)", padded) == "hixx"
    assert value("trim(TRAILING 'x' FROM t)", padded) == "xxhi"
    assert value("trim(' \t x ')") == "\t x"  # only spaces, as in PostgreSQL


def test_power() -> None:
    assert value("power(2, 10)") == 1024.0
    assert value("power(n, 0.5)", ("", None, 16)) == 4.0
    assert value("power(2, -1)") == 0.5
    with pytest.raises(ValueOutOfRange, match="overflows a DOUBLE"):
        value("power(10, 400)")
    with pytest.raises(ValueError, match="undefined"):
        value("power(-8, 0.5)")


SQUARE_ROOTS = """CREATE SOURCE words (n BIGINT, x DECIMAL(4, 1), ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT sqrt(n) AS r, sqrt(x) AS q, ts FROM words EMIT ON WINDOW CLOSE;"""


def test_sqrt_of_a_negative_number_is_nan_in_spark_and_flink_and_an_error_in_risingwave() -> None:
    assert value("sqrt(n)", ("", None, 16)) == 4.0
    for convention in (Convention.SPARK, Convention.FLINK):  # java.lang.Math.sqrt
        assert math.isnan(value("sqrt(n)", ("", None, -4), convention))
    with pytest.raises(ValueOutOfRange, match="cannot take square root of a negative number"):
        value("sqrt(n)", ("", None, -4))  # RisingWave, as PostgreSQL
    # the DuckDB oracle, its own CASE: sqrt(9) = 3, sqrt(-2.5) NaN (as JSON, "NaN")
    reference, oracle = run_both(SQUARE_ROOTS, [(9, Decimal("-2.5"))], Convention.SPARK)
    (row,) = oracle
    assert row[0] == 3.0 and math.isnan(row[1])
    assert [r[0] for r in reference] == [3.0] and math.isnan(next(iter(reference))[1])
    with pytest.raises(Exception, match="cannot take square root of a negative number"):
        run_both(SQUARE_ROOTS, [(9, Decimal("-2.5"))], Convention.RISINGWAVE)


def test_power_of_text_is_refused() -> None:
    with pytest.raises(Exception, match="power expects numbers"):
        value("power(s, 2)")


def test_to_timestamp_ltz() -> None:
    assert value("TO_TIMESTAMP_LTZ(1704067200000, 3)") == parse_timestamp("2024-01-01 00:00:00")
    assert value("TO_TIMESTAMP_LTZ(1704067200, 0)") == parse_timestamp("2024-01-01 00:00:00")
    with pytest.raises(Exception, match="precision"):
        value("TO_TIMESTAMP_LTZ(1704067200, 6)")
    with pytest.raises(ValueOutOfRange):
        value("TO_TIMESTAMP_LTZ(900000000000000, 0)")


def test_the_pure_rules_by_hand() -> None:
    assert substring("abcdef", 2) == "bcdef"
    assert like_pattern("a%b_").fullmatch("axxbz") and not like_pattern("a%b_").fullmatch("ab")
    assert like_pattern("A%", case_insensitive=True).fullmatch("abc")


# ------------------------------------------------------------------------------ against DuckDB

FUNCTIONS = """CREATE SOURCE words (s VARCHAR, t VARCHAR, n BIGINT, d DECIMAL, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT substring(s, n, 3) AS cut, substring(s FROM 2) AS tail,
       concat(s, t, n) AS joined, s || t AS piped,
       s LIKE 'a%' AS starts_a, s NOT LIKE '%b_' AS not_b, s ILIKE '%A%' AS has_a,
       replace(s, 'ab', 'X') AS replaced, trim(BOTH 'a' FROM s) AS trimmed,
       ltrim(t) AS left_trimmed, rtrim(t) AS right_trimmed,
       power(n, 2) AS squared, round(d, 1) AS d1, round(d) AS d0, round(n, -1) AS n10,
       d + 1.25 AS d_plus, d * 2.5 AS d_times, n * 3 - 7 AS n_arith, ts
FROM words EMIT ON WINDOW CLOSE;
"""

letters = st.text(alphabet="abAB %_", max_size=6)
decimals = st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False)
rows = st.lists(st.tuples(letters, st.one_of(st.none(), letters), st.integers(-3, 8),
                          st.one_of(st.none(), decimals)), min_size=1, max_size=12)


def run_both(sql: str, values: list[tuple[Any, ...]], convention: Convention
             ) -> tuple[Counter, Counter]:
    script = parse_script(sql)
    start = parse_timestamp("2024-01-01 00:00:00")
    log = ArrivalLog.one_event_per_epoch(
        Event("words", (*v, start + i * 1_000_000)) for i, v in enumerate(values))
    reference = Counter(e.row for e in run_eowc(script.query, log, convention, close=True))
    return reference, oracle_eowc(script.query, log, convention, close=True)


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=rows)
def test_duckdb_agrees_on_the_functions(convention: Convention, values: list[tuple[Any, ...]]
                                        ) -> None:
    reference, oracle = run_both(FUNCTIONS, values, convention)
    assert reference == oracle
    assert sum(reference.values()) == len(values)  # every row came out: the check saw them


def test_duckdb_agrees_on_a_hand_picked_row() -> None:
    values = [("abcab", None, 2, Decimal("-2.55"))]
    reference, oracle = run_both(FUNCTIONS, values, Convention.RISINGWAVE)
    assert reference == oracle
    (row,) = reference
    # substring('abcab', 2, 3) = 'bca'; concat skips the NULL; 'abcab' || NULL is NULL;
    # trim 'a' both ends: 'bcab'; round(-2.55, 1) = -2.6 (half away); round(2, -1) = 0
    assert row[:4] == ("bca", "bcab", "abcab2", None)
    assert row[8] == "bcab" and row[12] == Decimal("-2.6") and row[13] == Decimal("-3")
    assert row[14] == 0 and row[15] == Decimal("-1.30") and row[17] == -1


OVERFLOW = """CREATE SOURCE words (n BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT n * 4 AS m, ts FROM words EMIT ON WINDOW CLOSE;
"""


def test_duckdb_agrees_on_bigint_overflow_per_convention() -> None:
    big = [(2**62 + 5,)]
    reference, oracle = run_both_overflow(big, Convention.FLINK)
    # (2^62 + 5) * 4 = 2^64 + 20, which wraps to 20
    assert [r[0] for r in reference] == [20] and reference == oracle
    with pytest.raises(ValueOutOfRange):
        run_both_overflow(big, Convention.RISINGWAVE)
    with pytest.raises(Exception, match="(?i)overflow|out of range"):
        script = parse_script(OVERFLOW)
        log = ArrivalLog.one_event_per_epoch([Event("words", (2**62 + 5, 0))])
        oracle_eowc(script.query, log, Convention.RISINGWAVE, close=True)


def run_both_overflow(values: list[tuple[Any, ...]], convention: Convention) -> tuple[Counter, Counter]:
    script = parse_script(OVERFLOW)
    log = ArrivalLog.one_event_per_epoch(Event("words", (*v, i)) for i, v in enumerate(values))
    reference = Counter(e.row for e in run_eowc(script.query, log, convention, close=True))
    return reference, oracle_eowc(script.query, log, convention, close=True)


def test_a_function_output_is_valid_json_through_the_cli(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from eowc.verify.cli.main import main
    (tmp_path / "q.sql").write_text(FUNCTIONS, encoding="utf-8")
    event = {"table": "words", "row": {"s": "abcab", "t": " x ", "n": 2, "d": "-2.55",
                                       "ts": "2024-01-01 00:00:00"}}
    (tmp_path / "e.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"),
                                       "--close"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["joined"] == "abcab x 2" and record["piped"] == "abcab x "
    assert record["left_trimmed"] == "x " and record["squared"] == 4.0
    assert '"d_plus": -1.30' in result.output  # -2.55 + 1.25, exactly
