"""Generated logs over columns declared ``DECIMAL(p, s)`` (``eowc verify``): every value fits
the declared type (at most ``p - s`` digits before the point once rounded), some have more
places than ``s`` (so that Spark and Flink round them as the row arrives), and a generated
log holds what each engine holds: the events it would write, read back as an engine reads
them, are the same rows. The old generator (cents whatever the declared type, never fitted)
is the mutant: its logs change or fail when an engine reads them.

Expected values are worked by hand in the comments.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, log_lines, parse_arrival_log
from eowc.semantics.ir.expr import Column
from eowc.semantics.ir.values import SqlType, computing_under
from eowc.semantics.rules.triggers import Convention
from eowc.verify import generators
from eowc.verify.executors import InProcessExecutor
from eowc.verify.generators import LogShape, random_arrival_log
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, run_suite

RISINGWAVE, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK

TABLE = """CREATE TABLE t (ts TIMESTAMP, k BIGINT, p DECIMAL(4, 1), q DECIMAL(2, 1),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
"""
QUERY = TABLE + """SELECT window_start, k, sum(p) AS sp, avg(p) AS ap, max(q) AS mq, sum(p * q) AS m
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, k EMIT ON WINDOW CLOSE;"""
SCRIPT = parse_script(QUERY)
SOURCE = SCRIPT.query.source
P, Q = 2, 3  # positions of p and q in t's rows
#: 60 keys: the old generator's cents reach 15.00, beyond q's DECIMAL(2, 1) (at most 9.9).
SHAPE = LogShape(rows=300, keys=60)


def values(column: Column, keys: int) -> list[Decimal]:
    return generators._column_domain(column, keys)


def test_the_values_of_a_decimal_4_1_by_hand() -> None:
    """Quarters, every third negative: 0.25, 0.50, -0.75, which Spark and Flink hold as 0.3,
    0.5 and -0.8 (half away from zero); at scale 2 every other one is half a cent above its
    quarter: 0.255, 0.50, -0.755 (to 0.26, 0.50, -0.76). DECIMAL(2, 1) holds at most 9.9:
    the 40th quarter, 10.00, is taken modulo 9.9, 0.10."""
    assert values(Column("p", SqlType.DECIMAL, 4, 1), 3) == \
        [Decimal("0.25"), Decimal("0.50"), Decimal("-0.75")]
    assert values(Column("p", SqlType.DECIMAL, 10, 2), 3) == \
        [Decimal("0.255"), Decimal("0.50"), Decimal("-0.755")]
    assert values(Column("q", SqlType.DECIMAL, 2, 1), 40)[-1] == Decimal("0.10")
    # an undeclared DECIMAL keeps its cents
    assert values(Column("d", SqlType.DECIMAL), 3) == [Decimal("0.25"), Decimal("0.50"), Decimal("0.75")]


@settings(max_examples=200, deadline=None)
@given(precision=st.integers(1, 38), data=st.data(), keys=st.integers(1, 3000))
def test_declared_decimals_fit_their_type_and_the_first_rounds(precision: int, data: st.DataObject,
                                                                keys: int) -> None:
    """Rounded half away from zero to ``s`` places (Python's ROUND_HALF_UP), no value has more
    than ``p - s`` digits before the point; the first (0.25, or 0.25 and half a unit) has
    more places than ``s``, so it rounds as the row arrives."""
    scale = data.draw(st.integers(0, precision))
    drawn = values(Column("d", SqlType.DECIMAL, precision, scale), keys)
    unit = Decimal(1).scaleb(-scale)
    with localcontext(prec=100):
        for value in drawn:
            assert abs(value).quantize(unit, ROUND_HALF_UP) < Decimal(10) ** (precision - scale), value
    assert -drawn[0].as_tuple().exponent > scale


def read_back(log: ArrivalLog, convention: Convention) -> list[tuple[object, ...]]:
    """The rows an engine holds for the log's events, written as ``eowc verify`` writes them
    (a transcript's, an external executor's: :func:`log_lines`) and read as it reads them
    (``row_from_json``)."""
    with computing_under(convention.values):
        read = parse_arrival_log(log_lines(log, {"t": SOURCE}), {"t": SOURCE}).log
    return [e.row for e in read.events]


@pytest.mark.parametrize("convention", list(Convention))
def test_a_generated_log_holds_what_the_engine_holds(convention: Convention) -> None:
    """Read back as the engine reads its events, a generated log gives the same rows (and no
    error): under Spark and Flink every value is at the column's scale, rounded as it arrived;
    under RisingWave (no declared shape) values keep their two places."""
    log = random_arrival_log(SOURCE, convention, 3, SHAPE)
    assert read_back(log, convention) == [e.row for e in log.events]
    ps = {e.row[P] for e in log.events} - {None}
    qs = {e.row[Q] for e in log.events} - {None}
    assert len(ps) > 30 and max(qs) <= Decimal("9.9")
    exponents = {-v.as_tuple().exponent for v in ps | qs}
    assert exponents == ({2} if convention is RISINGWAVE else {1})
    if convention is not RISINGWAVE:
        assert Decimal("0.3") in ps and Decimal("-0.8") in ps  # 0.25 and -0.75, rounded


@pytest.fixture
def old_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutant: cents whatever the declared type, never fitted to it."""
    monkeypatch.setattr(generators, "_column_domain",
                        lambda column, keys: generators._domain(column.type, keys))
    monkeypatch.setattr(generators, "arrived", lambda source, drawn, convention: drawn)


def test_the_old_generators_logs_are_not_what_an_engine_holds(old_generator: None) -> None:
    """Its cents reach 15.00 in q DECIMAL(2, 1): Spark refuses the events (out of range),
    Flink reads NULL; 0.25 in p DECIMAL(4, 1) is read as 0.3."""
    with pytest.raises(InputError, match="does not fit DECIMAL"):
        read_back(random_arrival_log(SOURCE, SPARK, 3, SHAPE), SPARK)
    log = random_arrival_log(SOURCE, FLINK, 3, SHAPE)
    flink = read_back(log, FLINK)
    assert flink != [e.row for e in log.events]
    assert any(e.row[Q] is not None and row[Q] is None for e, row in zip(log.events, flink, strict=True))


def test_a_query_over_a_decimal_4_1_verifies_under_every_convention() -> None:
    """sum, avg and a product over DECIMAL(4, 1) and DECIMAL(2, 1) with 60 keys: the in-process
    executor passes every property under the three conventions, with output."""
    report = run_suite([Target("decimals", QUERY)], InProcessExecutor(), list(Convention), 9, 0, False,
                       GeneratorSettings(keys=60), None)
    assert report.ok and report.cases == 9
    assert report.coverage["decimals"].with_output == 9
    assert all(t.passed == 9 for t in report.tallies["decimals"].values() if t.tried)
