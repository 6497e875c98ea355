"""Exact below a millisecond, or refused, on real Spark (issue 19; tests/test_sub_millisecond.py
has the hand-computed examples and the in-process property).

* with the check left out, the executors on Spark give other rows than the reference for the
  hand examples (a sub-millisecond largest event time under risingwave; a 500-microsecond delay,
  which Spark truncates to 0 ms, under spark): the divergence the check prevents;
* with it, ``run_on_spark`` refuses them before Spark runs, and runs the spark convention's
  sub-millisecond log exactly;
* the Python API sets a sub-millisecond row aside, with its reason, and keeps it out of Spark's
  watermark: the results are the reference's over the log without it;
* before 1970 (tests/test_before_1970.py): Spark's watermark starts at 0 ms, so without the
  check the executors on Spark find a log of 1969 late; with it the run is refused, and the
  Python API sets such a row aside with its reason; the join, which keeps each source's
  watermark itself, runs a log of 1969 exactly on Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import eowc.executors.spark.runner as runner
from eowc.executors import eowc_sort
from eowc.executors.spark.runner import run_on_spark
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import InputError, PlanError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.rules.triggers import Convention
from tests.test_before_1970 import IN_1969, JOIN, JOIN_LOG
from tests.test_sub_millisecond import (
    BARRIER,
    MAX_SUB_MS,
    SUB_MS_DELAY,
    bid,
    sort_script,
    write_files,
)

from .test_api import run, user_stream

RW, SPARK = Convention.RISINGWAVE, Convention.SPARK


def _prices(query: str, events: str, convention: Convention, on_spark: bool) -> list[int]:
    script = parse_script(Path(query).read_text(encoding="utf-8"))
    log = load_arrival_log(events, script.sources).log
    if on_spark:
        emitted = run_on_spark(query, events, log, convention, close=True).emissions
    else:
        emitted = list(run_eowc(script.query, log, convention, close=True))
    return [row[0] for _, row in emitted]


#: (delay, log, convention, the reference's prices, Spark's without the check): by hand in
#: tests/test_sub_millisecond.py. Spark's: risingwave, Spark's watermark truncates
#: 12:00:01.000500 - 1 s to 12:00:00.000, below both epoch-1 rows (11 at 12:00:00, 10 at
#: 12:00:00.000200: neither is below it), so all three come out in ts order; spark, the delay
#: is truncated to 0 ms, so the watermark after epoch 0 is 12:00:00.001 and both epoch-1 rows
#: are at or below it: late.
DIVERGING = [("1", MAX_SUB_MS, RW, [0], [11, 10, 0]),
             ("0.0005", SUB_MS_DELAY, SPARK, [11, 0], [0])]


@pytest.mark.parametrize(("delay", "lines", "convention", "expected", "unchecked"), DIVERGING,
                         ids=["max_sub_ms-risingwave", "sub_ms_delay-spark"])
def test_without_the_check_spark_diverges_and_with_it_the_run_is_refused(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: str,
        lines: list[dict[str, Any]], convention: Convention, expected: list[int],
        unchecked: list[int]) -> None:
    query, events = write_files(tmp_path, sort_script(delay), lines)
    assert _prices(query, events, convention, on_spark=False) == expected
    with pytest.raises((InputError, PlanError)):
        _prices(query, events, convention, on_spark=True)
    monkeypatch.setattr(runner, "check_millisecond_watermarks", lambda *args: None)
    assert _prices(query, events, convention, on_spark=True) == unchecked


def test_the_spark_convention_runs_sub_millisecond_event_times_exactly(spark: SparkSession,
                                                                       tmp_path: Path) -> None:
    """Spark truncates max(c) to the millisecond, as the spark convention does: prices 10, 0."""
    query, events = write_files(tmp_path, sort_script("1"), MAX_SUB_MS)
    assert _prices(query, events, SPARK, on_spark=True) == [10, 0]


#: Delay 0. Epoch 0: price 1 at 12:00:00.001 and price 0 at 12:00:00.002500 (set aside; had
#: it counted, Spark's watermark would be 12:00:00.002). Epoch 1: 2 at 0.002, 5 at 0.001.
#: Epoch 2: 3 at 0.003. The reference without price 0 (risingwave, c < W): W = 0.001 after
#: epoch 0 (nothing below it); epoch 1: 5 is not late (0.001 < 0.001 is false), W = 0.002, and
#: 1 and 5 (both 0.001) are complete; epoch 2: W = 0.003, 2 is complete.
API_LOG = [bid(1, "2026-01-01 12:00:00.001"), bid(0, "2026-01-01 12:00:00.002500"), BARRIER,
           bid(2, "2026-01-01 12:00:00.002"), bid(5, "2026-01-01 12:00:00.001"), BARRIER,
           bid(3, "2026-01-01 12:00:00.003"), BARRIER]


def test_the_api_sets_sub_millisecond_rows_aside_and_out_of_the_watermark(
        spark: SparkSession, tmp_path: Path) -> None:
    query, events = write_files(tmp_path, sort_script("0"), API_LOG)
    frame = eowc_sort(user_stream(spark, query, events), event_time="ts", watermark="0 seconds",
                      columns=["price", "ts"], convention="risingwave")
    out, side = run(frame, tmp_path)
    assert {e: sorted(r["price"] for r in rows) for e, rows in out.items()} == {1: [1, 5], 2: [2]}
    (epoch, (row,)), = side.items()
    assert epoch == 0 and json.loads(row["_side_row"])["price"] == 0
    assert row["_side"].startswith("event time 2026-01-01 12:00:00.002500 is not a whole "
                                   "millisecond: under the risingwave convention")
    (tmp_path / "clean").mkdir()
    _, clean = write_files(tmp_path / "clean", sort_script("0"),
                      [x for x in API_LOG if x is BARRIER or x["row"]["price"] != 0])
    script = parse_script(sort_script("0"))
    emitted = run_eowc(script.query, load_arrival_log(clean, script.sources).log, RW)
    assert sorted((e.epoch, e.row[0]) for e in emitted) == [(1, 1), (1, 5), (2, 2)]


def test_the_api_refuses_a_sub_millisecond_delay(spark: SparkSession, tmp_path: Path) -> None:
    query, events = write_files(tmp_path, sort_script("0"), API_LOG)
    with pytest.raises(PlanError, match="not a whole number of milliseconds"):
        eowc_sort(user_stream(spark, query, events), event_time="ts", watermark="500 microseconds")


def test_without_the_check_spark_finds_1969_late_and_with_it_the_run_is_refused(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's prices 10, 20 (by hand in tests/test_before_1970.py); Spark's watermark
    is 0 ms from the start, both rows are below it: nothing."""
    query, events = write_files(tmp_path, sort_script("5"), IN_1969)
    assert _prices(query, events, RW, on_spark=False) == [10, 20]
    with pytest.raises(InputError, match="at or before 1970-01-01 00:00:00"):
        _prices(query, events, RW, on_spark=True)
    monkeypatch.setattr(runner, "check_millisecond_watermarks", lambda *args: None)
    assert _prices(query, events, RW, on_spark=True) == []


def test_the_api_sets_rows_of_1969_aside_with_their_reason(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    """Delay 0. Epoch 0: price 1 at 1969-12-31 23:59:59 (set aside), price 2 at 1970-01-01
    00:00:01; epoch 1: price 3 at 00:00:02 (W = 00:00:01 after epoch 0: 2 is complete in
    epoch 1, risingwave); epoch 2: price 4 at 00:00:03 (W = 00:00:02: 3 complete)."""
    lines = [bid(1, "1969-12-31 23:59:59"), bid(2, "1970-01-01 00:00:01"), BARRIER,
             bid(3, "1970-01-01 00:00:02"), BARRIER, bid(4, "1970-01-01 00:00:03"), BARRIER]
    query, events = write_files(tmp_path, sort_script("0"), lines)
    frame = eowc_sort(user_stream(spark, query, events), event_time="ts", watermark="0 seconds",
                      columns=["price", "ts"], convention="risingwave")
    out, side = run(frame, tmp_path)
    assert {e: sorted(r["price"] for r in rows) for e, rows in out.items()} == {1: [2], 2: [3]}
    (epoch, (row,)), = side.items()
    assert epoch == 0 and json.loads(row["_side_row"])["price"] == 1
    assert row["_side"].startswith("event time 1969-12-31 23:59:59 is at or before 1970-01-01 "
                                   "00:00:00, where Spark's watermark starts")


def test_the_join_runs_a_log_of_1969_exactly_on_spark(spark: SparkSession, tmp_path: Path) -> None:
    """Rows by hand in tests/test_before_1970.py: a(1) matched, a(2) NULL-padded."""
    query, events = write_files(tmp_path, JOIN, JOIN_LOG)
    log = load_arrival_log(events, parse_script(JOIN).sources).log
    emitted = run_on_spark(query, events, log, RW, close=True).emissions
    reference = run_eowc(parse_script(JOIN).query, log, RW, close=True)
    assert sorted(row for _, row in emitted) == sorted(row for _, row in reference)
    assert [row[0] for _, row in sorted(emitted, key=lambda e: e[1][0])] == [1, 2]
