"""Exact value types (``docs/sql/types.md``): DECIMAL with each engine's precision, BIGINT
overflow per convention, ``round`` half away from zero, NaN and infinities in JSON, DATE,
TIMESTAMPTZ / TIMESTAMP_LTZ and epoch-millisecond event times.

Expected values are computed by hand (in the comments) or by an independent definition
(``fractions.Fraction`` arithmetic), never taken from eowc's own output.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.expressions import translate
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, output_row_from_json, parse_arrival_log
from eowc.semantics.ir.expr import Column, Schema, compile_expr, round_half_away
from eowc.semantics.ir.values import (
    SqlType,
    ValueOutOfRange,
    computing_under,
    from_external,
    from_output_external,
    json_text,
    parse_json,
    parse_timestamp,
    to_external,
)
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main

SCHEMA: Schema = (Column("n", SqlType.BIGINT), Column("d", SqlType.DECIMAL),
                  Column("x", SqlType.DOUBLE), Column("s", SqlType.VARCHAR),
                  Column("ts", SqlType.TIMESTAMP))
INT64 = st.integers(-(2**63), 2**63 - 1)


def evaluate(sql: str, convention: Convention = Convention.RISINGWAVE,
             row: tuple[Any, ...] = (None,) * 5) -> tuple[Any, SqlType]:
    """The value and type of the scalar expression ``sql`` over ``row`` (of SCHEMA)."""
    node = sqlglot.parse_one(f"SELECT {sql}", read="risingwave").expressions[0]
    with computing_under(convention.values):
        compiled = compile_expr(translate(node), SCHEMA)
    return compiled.evaluate(row), compiled.type


def printed(sql: str, convention: Convention = Convention.RISINGWAVE) -> str:
    """The expression's value as eowc writes it in JSON."""
    value, sql_type = evaluate(sql, convention)
    return json_text(to_external(value, sql_type))


# ------------------------------------------------------------------------------ DECIMAL

def test_a_decimal_literal_is_exact_and_keeps_its_scale() -> None:
    assert evaluate("1.10 + 2.20") == (Decimal("3.30"), SqlType.DECIMAL)
    assert printed("1.10 + 2.20") == "3.30"  # not 3.3000000000000003
    assert printed("1.10 * 2.20") == "2.4200"  # scales add: 2 + 2
    assert printed("0.1 + 0.2 - 0.3") == "0.0"
    assert evaluate("1e3")[1] is SqlType.DOUBLE  # an exponent makes an approximate number


def test_decimal_division_follows_each_engine() -> None:
    # RisingWave: 28 significant digits (rust_decimal): 1.1 / 3 = 0.3666...6667
    assert printed("1.10 / 3") == "0." + "3" + "6" * 26 + "7"
    # Spark and Flink: scale max(6, s1 + p2 + 1). Flink: 3 is an INT, p2 = 10: scale 13.
    # Spark types an integer literal by its digits (literalPickMinimumPrecision): DECIMAL(1,
    # 0), scale max(6, 2 + 1 + 1) = 6; Spark 4.x itself prints decimal(7,6) 0.366667.
    assert printed("1.10 / 3", Convention.FLINK) == "0.3666666666667"
    assert printed("1.10 / 3", Convention.SPARK) == "0.366667"
    # a BIGINT column is DECIMAL(19, 0) in Flink, (20, 0) in Spark: scales 22 and 23
    row = (3, None, None, None, None)
    assert str(evaluate("1.10 / n", Convention.FLINK, row)[0]) == "0." + "3" + "6" * 20 + "7"
    assert str(evaluate("1.10 / n", Convention.SPARK, row)[0]) == "0." + "3" + "6" * 21 + "7"
    assert evaluate("1.10 / 0")[0] is None


def test_a_decimal_beyond_the_precision_is_rounded_or_out_of_range() -> None:
    # 10^27 + 0.5 has 28 integer digits and one more: RisingWave keeps 28, rounding half up
    exact = Decimal("1" + "0" * 27 + ".5")  # written out: Python's own context has 28 digits
    row = (None, exact, None, None, None)
    assert evaluate("d + 0", Convention.RISINGWAVE, row)[0] == 10**27 + 1
    assert evaluate("d + 0", Convention.FLINK, row)[0] == exact
    big = (None, Decimal(10**27), None, None, None)
    with pytest.raises(ValueOutOfRange, match=r"numeric out of range.*\(d \* 100\)"):
        evaluate("d * 100", Convention.RISINGWAVE, big)  # 30 digits
    huge = (None, Decimal(10**37), None, None, None)
    assert evaluate("d * 100", Convention.FLINK, huge)[0] is None  # Flink: NULL on overflow
    with pytest.raises(ValueOutOfRange):
        evaluate("d * 100", Convention.SPARK, huge)


small_decimals = st.decimals(min_value=-10**9, max_value=10**9, places=4, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(small_decimals, small_decimals, small_decimals)
def test_decimal_addition_is_exact_and_associative(a: Decimal, b: Decimal, c: Decimal) -> None:
    schema = (Column("a", SqlType.DECIMAL), Column("b", SqlType.DECIMAL), Column("c", SqlType.DECIMAL))

    def value(sql: str) -> Decimal:
        node = sqlglot.parse_one(f"SELECT {sql}", read="risingwave").expressions[0]
        return compile_expr(translate(node), schema).evaluate((a, b, c))
    left, right = value("(a + b) + c"), value("a + (b + c)")
    assert left == right and Fraction(left) == Fraction(a) + Fraction(b) + Fraction(c)
    assert Fraction(value("a * b")) == Fraction(a) * Fraction(b)


def test_decimal_columns_read_json_numbers_and_strings_exactly() -> None:
    assert from_external(Decimal("0.10"), SqlType.DECIMAL) == Decimal("0.10")
    assert str(from_external("123.4500", SqlType.DECIMAL)) == "123.4500"
    assert from_external(7, SqlType.DECIMAL) == 7
    with pytest.raises(ValueError, match="DECIMAL"):
        from_external("seven", SqlType.DECIMAL)
    script = parse_script("CREATE SOURCE t (p DECIMAL(10, 2), ts TIMESTAMP, "
                          "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
                          "SELECT p FROM t EMIT ON WINDOW CLOSE;")
    log = parse_arrival_log(['{"table": "t", "row": {"p": 0.10, "ts": "2024-01-01 00:00:00"}}',
                             '{"table": "t", "row": {"p": "0.20", "ts": "2024-01-01 00:00:01"}}'],
                            script.sources).log
    assert [str(e.row[0]) for e in log.events] == ["0.10", "0.20"]


def test_sum_and_avg_of_decimals_are_exact() -> None:
    script = parse_script("CREATE SOURCE t (p DECIMAL, ts TIMESTAMP, "
                          "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
                          "SELECT sum(p) AS s, avg(p) AS a FROM t GROUP BY ts EMIT ON WINDOW CLOSE;")
    rows = ['{"table": "t", "row": {"p": ' + p + ', "ts": "2024-01-01 00:00:00"}}'
            for p in ("0.10", "0.20", "0.30")]
    log = parse_arrival_log(rows, script.sources).log
    out = [e.row for e in run_eowc(script.query, log, Convention.RISINGWAVE, close=True)]
    assert out == [(Decimal("0.60"), Decimal("0.20"))]  # 0.6 / 3, exactly
    assert script.query.schema[1].type is SqlType.DECIMAL


def test_case_and_coalesce_give_values_of_their_common_type() -> None:
    row = (3, Decimal("1.5"), 2.0, None, None)
    assert evaluate("coalesce(d, x) + x", Convention.RISINGWAVE, row) == (3.5, SqlType.DOUBLE)
    value, sql_type = evaluate("CASE WHEN n > 0 THEN n ELSE d END", Convention.RISINGWAVE, row)
    assert sql_type is SqlType.DECIMAL and isinstance(value, Decimal) and value == 3
    value, sql_type = evaluate("coalesce(n, x)", Convention.RISINGWAVE, row)
    assert sql_type is SqlType.DOUBLE and isinstance(value, float) and value == 3.0


# ------------------------------------------------------------------------------ BIGINT

def test_bigint_overflow_is_an_error_under_risingwave_and_spark_and_wraps_under_flink() -> None:
    row = (9223372036854775000, None, None, None, None)
    for convention in (Convention.RISINGWAVE, Convention.SPARK):
        with pytest.raises(ValueOutOfRange, match=r"bigint out of range.*\(n \+ 1000\).*"
                                                  r"n=9223372036854775000"):
            evaluate("n + 1000", convention, row)
    # 9223372036854776000 - 2^64 = -9223372036854775616
    assert evaluate("n + 1000", Convention.FLINK, row)[0] == -9223372036854775616
    minimum = (-(2**63), None, None, None, None)
    assert evaluate("-n", Convention.FLINK, minimum)[0] == -(2**63)  # -MIN wraps to MIN
    with pytest.raises(ValueOutOfRange):
        evaluate("-n", Convention.RISINGWAVE, minimum)
    with pytest.raises(ValueOutOfRange):
        evaluate("n / -1", Convention.RISINGWAVE, minimum)


@settings(max_examples=300, deadline=None)
@given(INT64, INT64, st.sampled_from(["+", "-", "*"]))
def test_flink_wraps_iff_the_exact_result_leaves_int64(a: int, b: int, op: str) -> None:
    schema = (Column("a", SqlType.BIGINT), Column("b", SqlType.BIGINT))
    expr = translate(sqlglot.parse_one(f"SELECT a {op} b", read="risingwave").expressions[0])
    exact = {"+": a + b, "-": a - b, "*": a * b}[op]
    fits = -(2**63) <= exact < 2**63
    with computing_under(Convention.FLINK.values):
        wrapped = compile_expr(expr, schema).evaluate((a, b))
    assert -(2**63) <= wrapped < 2**63 and (wrapped - exact) % 2**64 == 0
    assert (wrapped == exact) == fits
    with computing_under(Convention.RISINGWAVE.values):
        checked = compile_expr(expr, schema).evaluate
    if fits:
        assert checked((a, b)) == exact
    else:
        with pytest.raises(ValueOutOfRange):
            checked((a, b))


def test_a_bigint_event_value_outside_64_bits_is_refused() -> None:
    with pytest.raises(ValueError, match="out of range"):
        from_external(2**63, SqlType.BIGINT)


# ------------------------------------------------------------------------------ round

def test_round_is_half_away_from_zero_and_keeps_the_type() -> None:
    assert evaluate("round(2.5)") == (Decimal(3), SqlType.DECIMAL)
    assert evaluate("round(12.5)")[0] == 13
    assert evaluate("round(-2.5)")[0] == -3
    assert evaluate("round(CAST(2.5 AS DOUBLE))") == (3.0, SqlType.DOUBLE)
    assert evaluate("round(CAST(-0.5 AS DOUBLE))")[0] == -1.0
    assert evaluate("round(1250, -2)") == (1300, SqlType.BIGINT)
    assert evaluate("round(-1250, -2)")[0] == -1300
    assert evaluate("round(1249, -2)")[0] == 1200
    assert printed("round(1.255, 2)") == "1.26"
    assert printed("round(2.5)") == "3"  # scale 0
    assert printed("round(1234.5, -2)") == "1200"
    # a DOUBLE is rounded as its shortest decimal form 2.675 (Flink, Spark): 2.68
    assert evaluate("round(CAST(2.675 AS DOUBLE), 2)")[0] == 2.68


def half_away(value: Fraction, digits: int) -> Fraction:
    """The definition: |v| scaled, plus one half, floored, signed back."""
    scale = Fraction(10) ** digits
    magnitude = math.floor(abs(value) * scale + Fraction(1, 2))
    return (magnitude if value >= 0 else -magnitude) / scale


@settings(max_examples=300, deadline=None)
@given(st.decimals(min_value=-10**6, max_value=10**6, places=5, allow_nan=False),
       st.integers(-4, 4))
def test_round_of_a_decimal_matches_the_definition(value: Decimal, digits: int) -> None:
    assert Fraction(round_half_away(value, digits)) == half_away(Fraction(value), digits)


@settings(max_examples=300, deadline=None)
@given(st.integers(-10**12, 10**12), st.integers(-6, 0))
def test_round_of_a_bigint_matches_the_definition(value: int, digits: int) -> None:
    result = round_half_away(value, digits)
    assert isinstance(result, int) and result == half_away(Fraction(value), digits)


# ------------------------------------------------------------------------------ NaN, infinity

def test_nan_and_infinities_are_written_as_strings_and_read_back() -> None:
    for sql, text in (("CAST('NaN' AS DOUBLE)", '"NaN"'), ("CAST('Infinity' AS DOUBLE)", '"Infinity"'),
                      ("CAST('-Infinity' AS DOUBLE)", '"-Infinity"')):
        assert printed(sql) == text
    document = json_text({"x": float("nan"), "y": [float("inf")], "d": Decimal("1.50")})
    assert document == '{"x": "NaN", "y": ["Infinity"], "d": 1.50}'
    read = parse_json(document)
    assert math.isnan(from_output_external(read["x"], SqlType.DOUBLE))
    assert from_output_external(read["y"][0], SqlType.DOUBLE) == math.inf
    assert str(from_output_external(read["d"], SqlType.DECIMAL)) == "1.50"
    row = output_row_from_json((Column("x", SqlType.DOUBLE),), {"x": "-Infinity"})
    assert row == (-math.inf,)


# ------------------------------------------------------------------------------ DATE and times

def test_date_literals_casts_and_comparison_with_timestamps() -> None:
    assert printed("DATE '2024-02-29'") == '"2024-02-29"'
    assert evaluate("DATE '2024-01-01' < CAST('2024-01-01 00:00:01' AS TIMESTAMP)")[0] is True
    assert evaluate("DATE '2024-01-01' = CAST('2024-01-01 00:00:00' AS TIMESTAMP)")[0] is True
    assert printed("CAST(CAST('2024-03-05 23:59:59' AS TIMESTAMP) AS DATE)") == '"2024-03-05"'
    assert printed("DATE '2024-03-01' - DATE '2024-02-01'") == "29"  # days: 2024 is a leap year
    assert printed("DATE '2024-01-31' + 1") == '"2024-02-01"'
    with pytest.raises(ValueError, match="date"):
        from_external("2024-02-30", SqlType.DATE)


def test_timestamps_with_offsets_are_stored_as_utc() -> None:
    midnight = parse_timestamp("2024-01-01 00:00:00")
    assert parse_timestamp("2024-01-01 00:00:00+00") == midnight
    assert parse_timestamp("2024-01-01T00:00:00Z") == midnight
    assert parse_timestamp("2024-01-01T08:00:00+08:00") == midnight
    assert parse_timestamp("2023-12-31T19:00:00-0500") == midnight
    assert to_external(midnight, SqlType.TIMESTAMPTZ) == "2024-01-01 00:00:00+00:00"  # RisingWave
    assert to_external(midnight, SqlType.TIMESTAMP_LTZ) == "2024-01-01 00:00:00"  # Flink, UTC
    # epoch milliseconds: 1704067200000 ms = 2024-01-01 00:00:00 UTC
    for sql_type in (SqlType.TIMESTAMP, SqlType.TIMESTAMPTZ, SqlType.TIMESTAMP_LTZ):
        assert from_external(1704067200000, sql_type) == midnight
    assert printed("TO_TIMESTAMP_LTZ(1704067200123, 3)") == '"2024-01-01 00:00:00.123000"'
    assert printed("TO_TIMESTAMP_LTZ(1704067200, 0)") == '"2024-01-01 00:00:00"'


def test_an_interval_past_year_9999_is_a_clear_error() -> None:
    row = (None, None, None, None, parse_timestamp("2024-01-01 00:00:00"))
    with pytest.raises(ValueOutOfRange, match="timestamp out of range.*ts"):
        evaluate("ts + INTERVAL '3000000' DAY", Convention.RISINGWAVE, row)


TZ_TUMBLE = """CREATE TABLE bids (price DECIMAL, ts TIMESTAMPTZ,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) APPEND ONLY;
SELECT window_start, sum(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;
"""


def tz_events() -> list[str]:
    rows = [("1.10", "2024-01-01 08:00:01+08:00"), ("2.20", "2024-01-01T00:00:05Z"),
            ("0.05", 1704067212000)]  # epoch ms: 00:00:12 UTC
    return [json.dumps({"table": "bids", "row": {"price": p, "ts": t}}) for p, t in rows]


def test_a_window_over_a_timestamptz_column() -> None:
    text = TZ_TUMBLE.replace(" APPEND ONLY", "")
    script = parse_script(text)
    log = parse_arrival_log(tz_events(), script.sources).log
    out = [e.row for e in run_eowc(script.query, log, Convention.RISINGWAVE, close=True)]
    start = parse_timestamp("2024-01-01 00:00:00")
    assert out == [(start, Decimal("3.30")), (start + 10_000_000, Decimal("0.05"))]
    assert script.query.schema[0].type is SqlType.TIMESTAMPTZ


def test_the_duckdb_oracle_agrees_on_decimal_and_timestamptz_columns() -> None:
    script = parse_script(TZ_TUMBLE.replace(" APPEND ONLY", ""))
    log = parse_arrival_log(tz_events(), script.sources).log
    reference = [e.row for e in run_eowc(script.query, log, Convention.RISINGWAVE, close=True)]
    from collections import Counter
    assert oracle_eowc(script.query, log, Convention.RISINGWAVE, close=True) == Counter(reference)


DATES = """CREATE SOURCE t (day DATE, x DOUBLE, p DECIMAL, n BIGINT, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT day - DATE '2024-01-01' AS days, day + n AS later, n + day AS later_too,
       day < ts AS before, -x AS neg_x, -p AS neg_p, -n AS neg_n, ts
FROM t EMIT ON WINDOW CLOSE;
"""


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 800), st.floats(-1e6, 1e6), small_decimals,
                          st.integers(-400, 400)), min_size=1, max_size=6))
def test_the_duckdb_oracle_agrees_on_dates_and_negation(values: list[tuple[Any, ...]]) -> None:
    from collections import Counter

    from eowc.semantics.ir.arrival import Event
    script = parse_script(DATES)
    base, day = parse_timestamp("2024-01-01 00:00:00"), 86_400_000_000
    log = ArrivalLog.one_event_per_epoch(
        Event("t", (base + d * day, x, p, n, base + i * 1_000_000))
        for i, (d, x, p, n) in enumerate(values))
    reference = Counter(e.row for e in run_eowc(script.query, log, Convention.RISINGWAVE, close=True))
    assert oracle_eowc(script.query, log, Convention.RISINGWAVE, close=True) == reference
    d, x, p, n = values[0]
    first = next(r for r in reference if r[-1] == base)
    assert first[:3] == (d, base + (d + n) * day, base + (d + n) * day)  # days; n days later
    assert first[4:7] == (-x, -p, -n)


# ------------------------------------------------------------------------------ the command line

def run_cli(tmp_path: Path, sql: str, events: list[str], *options: str) -> Any:
    (tmp_path / "q.sql").write_text(sql, encoding="utf-8")
    (tmp_path / "e.jsonl").write_text("".join(e + "\n" for e in events), encoding="utf-8")
    return CliRunner().invoke(main, ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"),
                                     *options])


def test_eowc_run_writes_exact_decimals_and_valid_json_for_nan(tmp_path: Path) -> None:
    sql = TZ_TUMBLE.replace(" APPEND ONLY", "").replace(
        "sum(price) AS total", "sum(price) AS total, CAST('NaN' AS DOUBLE) AS nan_value")
    result = run_cli(tmp_path, sql, tz_events(), "--close")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == ('{"window_start": "2024-01-01 00:00:00+00:00", "total": 3.30, '
                        '"nan_value": "NaN"}')
    for line in lines:
        json.loads(line)  # valid JSON: no bare NaN


def test_eowc_run_reports_overflow_without_a_traceback(tmp_path: Path) -> None:
    sql = ("CREATE SOURCE t (n BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
           "SELECT n + 1000 AS m, ts + INTERVAL '1' DAY AS later, ts FROM t EMIT ON WINDOW CLOSE;\n")
    events = [json.dumps({"table": "t", "row": {"n": 9223372036854775000, "ts": "2024-01-01 00:00:00"}})]
    result = run_cli(tmp_path, sql, events, "--close")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "bigint out of range" in result.output and "(n + 1000)" in result.output
    flink = run_cli(tmp_path, sql, events, "--close", "--convention", "flink")
    assert flink.exit_code == 0
    assert json.loads(flink.output.splitlines()[0])["m"] == -9223372036854775616
    late = sql.replace("INTERVAL '1' DAY", "INTERVAL '3000000' DAY")
    result = run_cli(tmp_path, late, events, "--close", "--convention", "flink")
    assert result.exit_code == 2 and "timestamp out of range" in result.output
    assert "Traceback" not in result.output


def test_late_rows_with_decimals_and_nan_are_written_as_valid_json(tmp_path: Path) -> None:
    sql = ("CREATE SOURCE t (p DECIMAL, x DOUBLE, ts TIMESTAMP, "
           "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
           "SELECT p, x, ts FROM t EMIT ON WINDOW CLOSE;\n")
    events = [json.dumps({"table": "t", "row": {"p": "1.10", "x": 1.5, "ts": "2024-01-01 00:00:10"}}),
              '{"barrier": true}',
              json.dumps({"table": "t", "row": {"p": "2.50", "x": "NaN", "ts": "2024-01-01 00:00:00"}})]
    late_path = tmp_path / "late.jsonl"
    result = run_cli(tmp_path, sql, events, "--close", "--late-out", str(late_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[0]) == {"p": 1.1, "x": 1.5,
                                                          "ts": "2024-01-01 00:00:10"}
    assert '"p": 1.10' in result.output
    late = late_path.read_text(encoding="utf-8").splitlines()
    record = json.loads(late[0])
    assert record["row"] == {"p": 2.5, "x": "NaN", "ts": "2024-01-01 00:00:00"}
    assert '"p": 2.50' in late[0]


def test_an_arrival_log_round_trips_decimals_and_times() -> None:
    script = parse_script(TZ_TUMBLE.replace(" APPEND ONLY", ""))
    log = parse_arrival_log(tz_events(), script.sources).log
    from eowc.semantics.ir.arrival import log_lines
    again = parse_arrival_log(log_lines(log, script.sources), script.sources).log
    assert [e.row for e in again.events] == [e.row for e in log.events]
    assert [str(e.row[0]) for e in again.events] == ["1.10", "2.20", "0.05"]
    assert isinstance(again, ArrivalLog)


def test_eowc_verify_generates_decimal_date_and_timestamptz_columns(tmp_path: Path) -> None:
    sql = ("CREATE SOURCE bids (price DECIMAL, d DATE, ts TIMESTAMPTZ, "
           "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
           "SELECT window_start, sum(price) AS total, count(*) AS n, max(d) AS last_day\n"
           "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;\n")
    (tmp_path / "v.sql").write_text(sql, encoding="utf-8")
    report = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["verify", str(tmp_path / "v.sql"), "--cases", "4",
                                       "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "every property held (4 cases)" in result.output
    json.loads(report.read_text(encoding="utf-8"))
