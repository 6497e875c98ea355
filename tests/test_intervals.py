"""Interval literals as PostgreSQL (RisingWave) and Flink write them: quantities with units, a
clock, both, and a bare number counting the literal's unit; hand-computed and by definition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.sql import parse_interval_text, parse_script
from eowc.semantics.ir.values import interval_text_micros

SECOND = 1_000_000


@pytest.mark.parametrize(("text", "unit", "micros"), [
    ("5 minutes", None, 300 * SECOND),
    ("1 minute 30 seconds", None, 90 * SECOND),
    ("00:00:10", None, 10 * SECOND),
    ("01:02:03.5", None, 3723 * SECOND + 500_000),
    ("-00:00:05", None, -5 * SECOND),
    ("1 day 02:00:00", None, 26 * 3600 * SECOND),
    ("1 02:03:04", "DAY", (86_400 + 7384) * SECOND),   # Flink: '1 02:03:04' DAY TO SECOND
    ("5", "MINUTE", 300 * SECOND),                     # Flink: INTERVAL '5' MINUTE
    ("10", "MINUTES", 600 * SECOND),
    ("1.5", "HOUR", 5400 * SECOND),
    ("5", None, 5 * SECOND),                           # PostgreSQL: '5'::interval is 5 seconds
    ("500 ms", None, 500_000),
    ("1h 30m", None, 5400 * SECOND),
    ("2 weeks 1 day", None, 15 * 86_400 * SECOND),
    ("0.000001 seconds", None, 1),
])
def test_an_interval_is_read_as_postgresql_reads_it(text: str, unit: str | None, micros: int
                                                    ) -> None:
    assert interval_text_micros(text, unit) == micros


@pytest.mark.parametrize(("text", "words"), [
    ("1 month", "no fixed length"),
    ("2 years", "no fixed length"),
    ("3 fortnights", "unknown interval unit 'fortnights'"),
    ("minute", "cannot read 'minute'"),
    ("", "empty"),
])
def test_an_interval_that_is_not_one_is_named(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        interval_text_micros(text)


UNITS = {"microseconds": 1, "milliseconds": 1_000, "seconds": SECOND, "minutes": 60 * SECOND,
         "hours": 3600 * SECOND, "days": 86_400 * SECOND, "weeks": 604_800 * SECOND}


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(UNITS))),
                min_size=1, max_size=5))
def test_quantities_add_up(parts: list[tuple[int, str]]) -> None:
    """An interval of several quantities is the sum of each one's length."""
    text = " ".join(f"{n} {unit}" for n, unit in parts)
    assert interval_text_micros(text) == sum(n * UNITS[unit] for n, unit in parts)


@given(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999_999))
def test_a_clock_is_hours_minutes_seconds(h: int, m: int, s: int, f: int) -> None:
    text = f"{h:02d}:{m:02d}:{s:02d}.{f:06d}"
    assert interval_text_micros(text) == ((h * 60 + m) * 60 + s) * SECOND + f


def test_risingwave_interval_strings_run_in_a_query() -> None:
    """The watermark delay and the window size of a RisingWave script, written with
    PostgreSQL's interval strings, give the plan of the plain forms."""
    table = ("CREATE TABLE bid (auction BIGINT, price DOUBLE, ts TIMESTAMP, "
             "WATERMARK FOR ts AS ts - INTERVAL '{delay}') APPEND ONLY;\n")
    query = ("SELECT window_start, count(*) AS n FROM TUMBLE(bid, ts, INTERVAL '{size}') "
             "GROUP BY window_start EMIT ON WINDOW CLOSE;")
    written = parse_script(table.format(delay="00:00:10") + query.format(size="1 minute 30 seconds"))
    plain = parse_script(table.format(delay="10 seconds") + query.format(size="90 seconds"))
    assert written.query == plain.query
    assert written.sources["bid"].watermark.delay == 10 * SECOND


def test_a_command_line_interval_reads_the_same_way() -> None:
    assert parse_interval_text("1 minute 30 seconds") == 90 * SECOND
    with pytest.raises(SqlError, match="no fixed length"):
        parse_interval_text("1 month")
