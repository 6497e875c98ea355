"""DECIMAL(p, s) as each engine applies it (``docs/sql/types.md``): a declared column's values
rounded half up to its scale when a row arrives (Spark, Flink; overflow an error under Spark,
NULL under Flink; RisingWave has no declared shape), the result types of decimal division,
sum and avg, and the DuckDB oracle's exact translation of them.

Every expected value is computed by hand in the comments, never taken from eowc's output.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import parse_arrival_log
from eowc.semantics.ir.values import ValueOutOfRange, computing_under, decimal_text
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main

RISINGWAVE, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK

TABLE = """CREATE TABLE t (ts TIMESTAMP, p DECIMAL(10, 2), q DECIMAL(5, 1), w DECIMAL(12, 4),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
"""


def windowed(select: str) -> str:
    """A 10-second tumbling window query over ``t`` with ``select`` after window_start."""
    return TABLE + (f"SELECT window_start, {select} FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
                    f"INTERVAL '10' SECOND)) GROUP BY window_start EMIT ON WINDOW CLOSE;")


def event(second: int, **values: Any) -> str:
    row = {"ts": f"2024-01-01 00:00:{second:02d}", **values}
    return json.dumps({"table": "t", "row": row}, default=str).replace('"#', "").replace('#"', "")


def number(text: str) -> str:
    """A JSON number written exactly as ``text`` (``event`` unquotes it)."""
    return f"#{text}#"


def run(sql: str, events: list[str], convention: Convention) -> list[tuple[Any, ...]]:
    """The rows (without window_start) the reference emits at the end of the input."""
    script = parse_script(sql)
    with computing_under(convention.values):
        log = parse_arrival_log(events, script.sources).log
    return [e.row[1:] for e in run_eowc(script.query, log, convention, close=True)]


def texts(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with decimals as their printed digits: the scale counts."""
    return [tuple(decimal_text(v) if isinstance(v, Decimal) else v for v in row) for row in rows]


# ------------------------------------------------------------------ a declared scale, at arrival

@pytest.mark.parametrize("convention", [SPARK, FLINK])
def test_spark_and_flink_round_arriving_values_half_up_to_the_declared_scale(
        convention: Convention) -> None:
    """DECIMAL(10, 2): 1.125 -> 1.13 and -1.125 -> -1.13 (half away from zero, not to even:
    1.12); 2.675 -> 2.68 (the JSON number's own digits, not a double's 2.67499...); 0.005 ->
    0.01; "1.1" -> 1.10 (the scale filled). min and max show the stored values."""
    values = [number("1.125"), number("-1.125"), number("2.675"), number("0.005"), "1.1"]
    rows = run(windowed("min(p) AS lo, max(p) AS hi, sum(p) AS total"),
               [event(i, p=v) for i, v in enumerate(values)], convention)
    # 1.13 - 1.13 + 2.68 + 0.01 + 1.10 = 3.79
    assert texts(rows) == [("-1.13", "2.68", "3.79")]


def test_risingwave_keeps_the_digits_its_numeric_is_given() -> None:
    """RisingWave's NUMERIC has no precision or scale (it refuses NUMERIC(p, s) in DDL): eowc
    reads a declared one as plain NUMERIC, so 1.125 stays 1.125 (sum 1.125 + 1.1 = 2.225)."""
    rows = run(windowed("sum(p) AS total"), [event(1, p=number("1.125")), event(2, p="1.1")],
               RISINGWAVE)
    assert texts(rows) == [("2.225",)]


def test_an_integer_part_too_wide_for_the_declared_precision() -> None:
    """DECIMAL(10, 2) holds 8 digits before the point: 123456789.5 does not fit. Spark (ANSI)
    fails the input; Flink reads NULL (DecimalData.fromBigDecimal); RisingWave keeps it.
    Counting the rows shows the NULL: count(p) 1, count(*) 2."""
    events = [event(1, p="1"), event(2, p=number("123456789.5"))]
    sql = windowed("count(p) AS n_p, count(*) AS n, sum(p) AS total")
    with pytest.raises(InputError, match=r"column t\.p: numeric out of range: 123456789\.5 does "
                                         r"not fit DECIMAL\(10, 2\)"):
        run(sql, events, SPARK)
    assert texts(run(sql, events, FLINK)) == [(1, 2, "1.00")]
    assert texts(run(sql, events, RISINGWAVE)) == [(2, 2, "123456790.5")]  # 1 + 123456789.5


def test_a_value_that_rounds_up_past_the_precision_overflows() -> None:
    """99999999.995 rounds (half up) to 100000000.00, 9 integer digits: out of DECIMAL(10, 2);
    99999999.994 rounds down to 99999999.99, which fits."""
    sql = windowed("count(p) AS n_p")
    assert run(sql, [event(1, p=number("99999999.994"))], FLINK) == [(1,)]
    assert run(sql, [event(1, p=number("99999999.995"))], FLINK) == [(0,)]


def test_the_cli_names_the_events_file_the_line_and_the_column(tmp_path: Path) -> None:
    (tmp_path / "q.sql").write_text(windowed("sum(p) AS total"), encoding="utf-8")
    (tmp_path / "e.jsonl").write_text(event(1, p="1") + "\n" + event(2, p=number("1e9")) + "\n",
                                      encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"),
                                       "--convention", "spark"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"{tmp_path / 'e.jsonl'}:2: column t.p: numeric out of range: 1000000000 does not fit " \
           f"DECIMAL(10, 2)" in result.output


# ------------------------------------------------------------------ result types

def test_avg_of_decimals_takes_each_engines_scale() -> None:
    """avg(p) over 1.00, 2.00 (p DECIMAL(10, 2)) is 1.5: Spark DECIMAL(14, 6) (s + 4) 1.500000,
    Flink DECIMAL(38, max(6, s)) 1.500000. avg(w) over 1.0000, 2.0000, 2.0000 (w DECIMAL(12,
    4)) is 5/3: Spark scale 8: 1.66666667 (half up); Flink scale max(6, 4) = 6: 1.666667;
    RisingWave sum / count to 28 significant digits: 1.666666666666666666666666667."""
    events = [event(1, p="1", w="1"), event(2, p="2", w="2"), event(3, w="2")]
    sql = windowed("avg(p) AS ap, avg(w) AS aw")
    assert texts(run(sql, events, SPARK)) == [("1.500000", "1.66666667")]
    assert texts(run(sql, events, FLINK)) == [("1.500000", "1.666667")]
    assert run(sql, events, RISINGWAVE) == [(Decimal("1.5"), Decimal("1.666666666666666666666666667"))]


def test_avg_of_a_scale_zero_decimal_differs_between_spark_and_flink() -> None:
    """q DECIMAL(5, 1) over 1.0, 2.0: Spark scale 1 + 4 = 5 (1.50000), Flink max(6, 1) = 6
    (1.500000)."""
    events = [event(1, q="1"), event(2, q="2")]
    assert texts(run(windowed("avg(q) AS a"), events, SPARK)) == [("1.50000",)]
    assert texts(run(windowed("avg(q) AS a"), events, FLINK)) == [("1.500000",)]


def test_division_takes_the_declared_precision_of_the_divisor() -> None:
    """p / q, DECIMAL(10, 2) / DECIMAL(5, 1): scale max(6, s1 + p2 + 1) = 2 + 5 + 1 = 8 (the
    declared p2 = 5, not the 2 digits of 3.0). 1.00 / 3.0 = 0.33333333, 2.00 / 3.0 =
    0.66666667 (half up); their sum 1.00000000. RisingWave: 28 significant digits,
    0.3333333333333333333333333333 and 0.6666666666666666666666666667, adding up to 1."""
    events = [event(1, p="1", q="3"), event(2, p="2", q="3")]
    sql = windowed("min(p / q) AS lo, max(p / q) AS hi, sum(p / q) AS total")
    for convention in (SPARK, FLINK):
        assert texts(run(sql, events, convention)) == [("0.33333333", "0.66666667", "1.00000000")]
    (lo, hi, total), = texts(run(sql, events, RISINGWAVE))
    assert (lo, hi, Decimal(total)) == ("0.3333333333333333333333333333",
                                        "0.6666666666666666666666666667", 1)


BIG = """CREATE TABLE t (ts TIMESTAMP, d DECIMAL(38, 36), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT window_start, sum(d) AS total FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start EMIT ON WINDOW CLOSE;
"""


def test_a_sum_beyond_its_type() -> None:
    """sum of DECIMAL(38, 36) is DECIMAL(38, 36) in Spark (p + 10 capped at 38) and Flink: two
    digits before the point. 60 + 50 = 110 has three: Spark fails, Flink gives NULL;
    RisingWave's NUMERIC holds 110."""
    events = [event(1, d="60"), event(2, d="50")]
    with pytest.raises(ValueOutOfRange, match="does not fit DECIMAL\\(38, 36\\)"):
        run(BIG, events, SPARK)
    assert run(BIG, events, FLINK) == [(None,)]
    assert run(BIG, events, RISINGWAVE) == [(Decimal(110),)]


# ------------------------------------------------------------------ the DuckDB oracle

QUERIES = {
    RISINGWAVE: "sum(p) AS sp, min(q) AS lo, max(p) AS hi, sum(p * q) AS m, sum(p - q) AS diff, "
                "count(p) AS n",
    SPARK: "sum(p) AS sp, avg(p) AS ap, avg(q) AS aq, sum(p * q) AS m, sum(p / q) AS quot, "
           "max(p / q) AS top, min(q) AS lo",
}
QUERIES[FLINK] = QUERIES[SPARK]
#: Up to three places, so that arriving values round; within DECIMAL(10, 2) and, for the
#: divisor, DECIMAL(5, 1), at least 0.05 from zero (it rounds to 0.1 at least: never 0).
dividends = st.decimals(min_value=-99999, max_value=99999, places=3, allow_nan=False)
divisors = st.decimals(min_value=Decimal("0.05"), max_value=9999, places=3, allow_nan=False) \
    .flatmap(lambda d: st.sampled_from([d, -d]))


@settings(max_examples=15, deadline=None)
@given(convention=st.sampled_from([RISINGWAVE, SPARK, FLINK]),
       values=st.lists(st.tuples(st.integers(0, 29), dividends, divisors), min_size=1,
                       max_size=8))
def test_the_reference_and_the_duckdb_oracle_agree_on_declared_decimals(
        convention: Convention, values: list[tuple[int, Decimal, Decimal]]) -> None:
    """Random rows of DECIMAL(10, 2) and DECIMAL(5, 1) values with up to three places (so
    arriving values round), in three windows: the reference and DuckDB give the same rows;
    under Spark and Flink the same digits too (each column's scale is its declared one).
    Under RisingWave a value keeps its own scale, which DuckDB's columns cannot: equal
    values there. Divisors are at least 0.05, which rounds to 0.1, never 0."""
    script = parse_script(windowed(QUERIES[convention]))
    lines = [event(second, p=number(str(p)), q=number(str(q))) for second, p, q in values]
    with computing_under(convention.values):
        log = parse_arrival_log(lines, script.sources).log
    reference = [e.row for e in run_eowc(script.query, log, convention, close=True)]
    oracle = oracle_eowc(script.query, log, convention, close=True)
    assert reference and oracle == Counter(reference)
    if convention is not RISINGWAVE:
        assert Counter(texts(reference)) == Counter(texts(list(oracle.elements())))


def test_a_column_renamed_in_a_subquery_keeps_its_declared_type() -> None:
    """pp is p renamed: still DECIMAL(10, 2), so pp / q has scale 8 (1.00 / 3.0 = 0.33333333)
    and avg(pp) scale 6 under Spark, as over p itself."""
    sql = TABLE + ("SELECT window_start, max(pp / q) AS r, avg(pp) AS a FROM TABLE(TUMBLE(TABLE "
                   "(SELECT ts, p AS pp, q FROM t), DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
                   "GROUP BY window_start EMIT ON WINDOW CLOSE;")
    assert texts(run(sql, [event(1, p="1", q="3")], SPARK)) == [("0.33333333", "1.000000")]
