"""RisingWave's GAP_FILL (docs/operators/gap_fill.md) in both modes.

* RisingWave's own tests: the queries and expected rows of e2e_test/streaming/gap_fill.slt,
  gap_fill_eowc.slt and gap_fill_partition_by.slt, transcribed by hand from the slt files
  (inserts only: an append-only source has no UPDATE or DELETE);
* hand-computed examples for each strategy (integer floor steps, a gap that is not a multiple
  of the interval, NULLs at either end), partitioning, NULL times and the refusals;
* hypothesis properties of the rule on random logs (ties, late rows, any epochs);
* the reference against the DuckDB oracle and the in-process executor, with restarts; a
  mutant of the executor shown caught.
"""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.gap_fill import EowcGapFill, GapFillChangelog
from eowc.executors.interface import EowcProcessor
from eowc.executors.plan import executor_plan
from eowc.semantics.engines.interpreter import LateRow, run_eowc, run_update, snapshots
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import GapFill, Query, walk
from eowc.semantics.ir.values import SqlType, parse_timestamp, row_sort_key
from eowc.semantics.operators.gap_fill import interpolation_step
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from tests.strategies import BASE, MILLISECOND_FRACTIONS, arrival_logs, script

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
S = 1_000_000
MINUTE = 60 * S


def at(clock: str) -> int:
    """A time of 2024-05-21 (the slt files' day)."""
    return parse_timestamp(f"2024-05-21 {clock}")


def query_of(ddl: str, sql: str) -> Query:
    return parse_script(ddl + sql).query


def epochs_of(table: str, *epochs: list[Row]) -> ArrivalLog:
    return ArrivalLog(tuple(tuple(Event(table, row) for row in epoch) for epoch in epochs))


def eowc_rows(query: Query, log: ArrivalLog, convention: Convention = RW,
              close: bool = False) -> list[tuple[int, Row]]:
    return [(e.epoch, e.row) for e in run_eowc(query, log, convention, close)]


def update_snapshots(query: Query, log: ArrivalLog, convention: Convention = RW
                     ) -> list[list[Row]]:
    return snapshots(list(run_update(query, log, convention)), len(log.epochs))


def by_time(rows: list[Row], time_at: int = 0) -> list[Row]:
    """Rows as the slt's ORDER BY (partition columns, then ts) would list them, when the
    time is the column ``time_at`` and partition columns come before it."""
    return sorted(rows, key=lambda r: tuple(r[:time_at + 1]))


# ------------------------------------------------------------ gap_fill_eowc.slt (EOWC)

EOWC_TABLE = """CREATE TABLE gap_table (ts TIMESTAMP, value DOUBLE,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""


def _eowc_log() -> ArrivalLog:
    return epochs_of("gap_table", [(at("10:00:00"), 10.0), (at("10:02:00"), 12.0),
                                   (at("10:05:00"), 15.0)],
                     [(at("10:08:00"), 21.0)], [(at("10:10:00"), 25.0)])


def _eowc_query(fill: str) -> Query:
    return query_of(EOWC_TABLE, f"SELECT ts, value FROM GAP_FILL(gap_table, ts, INTERVAL '1' "
                                f"MINUTE{fill}) EMIT ON WINDOW CLOSE;")


def test_slt_eowc_null_fill_after_the_watermark_passes_10_07_55() -> None:
    """gap_fill_eowc.slt, first query: after 10:08 arrives (W = 10:07:55) the view holds
    10:00..10:05: the filled rows 10:06, 10:07 wait for 10:08, which is not complete."""
    out = [row for epoch, row in eowc_rows(_eowc_query(""), _eowc_log()) if epoch <= 1]
    assert by_time(out) == [(at("10:00:00"), 10.0), (at("10:01:00"), None),
                            (at("10:02:00"), 12.0), (at("10:03:00"), None),
                            (at("10:04:00"), None), (at("10:05:00"), 15.0)]


def test_slt_eowc_locf_and_interpolate_after_10_10() -> None:
    """gap_fill_eowc.slt: after 10:10 arrives (W = 10:09:55) the LOCF and INTERPOLATE views
    hold 10:00..10:08; 10:09 waits for 10:10."""
    locf = [row for _, row in eowc_rows(_eowc_query(", LOCF(value)"), _eowc_log())]
    assert by_time(locf) == [(at(t), v) for t, v in [
        ("10:00:00", 10.0), ("10:01:00", 10.0), ("10:02:00", 12.0), ("10:03:00", 12.0),
        ("10:04:00", 12.0), ("10:05:00", 15.0), ("10:06:00", 15.0), ("10:07:00", 15.0),
        ("10:08:00", 21.0)]]
    interpolated = [row for _, row in eowc_rows(_eowc_query(", INTERPOLATE(value)"), _eowc_log())]
    assert by_time(interpolated) == [(at(t), v) for t, v in [
        ("10:00:00", 10.0), ("10:01:00", 11.0), ("10:02:00", 12.0), ("10:03:00", 13.0),
        ("10:04:00", 14.0), ("10:05:00", 15.0), ("10:06:00", 17.0), ("10:07:00", 19.0),
        ("10:08:00", 21.0)]]


def test_slt_eowc_rows_are_released_with_the_row_that_ends_their_gap() -> None:
    """The epochs: W after epoch 0 is 10:04:55 (10:00, 10:02 and the fill 10:01 out), after
    epoch 1 10:07:55 (10:05 with 10:03, 10:04), after epoch 2 10:09:55 (10:08 with 10:06,
    10:07); at the close 10:10 with 10:09."""
    out = eowc_rows(_eowc_query(", LOCF(value)"), _eowc_log(), close=True)
    assert [(e, r[0]) for e, r in out] == [
        (0, at("10:00:00")), (0, at("10:01:00")), (0, at("10:02:00")),
        (1, at("10:03:00")), (1, at("10:04:00")), (1, at("10:05:00")),
        (2, at("10:06:00")), (2, at("10:07:00")), (2, at("10:08:00")),
        (3, at("10:09:00")), (3, at("10:10:00"))]


MIXED_TABLE = """CREATE TABLE gap_multi_column_table (ts TIMESTAMP, temperature DOUBLE,
    pressure DOUBLE, status VARCHAR{watermark});
"""
MIXED = ("SELECT ts, temperature, pressure, status FROM GAP_FILL(gap_multi_column_table, ts, "
         "INTERVAL '1' MINUTE, INTERPOLATE(temperature), LOCF(pressure), KEEPNULL(status))")
MIXED_EXPECTED = [(at("10:00:00"), 20.0, 100.0, "active"), (at("10:01:00"), 21.0, 100.0, None),
                  (at("10:02:00"), 22.0, 100.0, None), (at("10:03:00"), 23.0, 100.0, None),
                  (at("10:04:00"), 24.0, 120.0, "inactive")]


def test_slt_eowc_mixed_strategies() -> None:
    ddl = MIXED_TABLE.format(watermark=", WATERMARK FOR ts AS ts - INTERVAL '5' SECOND")
    log = epochs_of("gap_multi_column_table", [(at("10:00:00"), 20.0, 100.0, "active"),
                                               (at("10:04:00"), 24.0, 120.0, "inactive")],
                    [(at("10:10:00"), 30.0, 150.0, "active")])
    out = [row for _, row in eowc_rows(query_of(ddl, MIXED + " EMIT ON WINDOW CLOSE;"), log)]
    assert by_time(out) == MIXED_EXPECTED


PARTITIONED_TABLE = """CREATE TABLE gap_table_partitioned (device_id INT, ts TIMESTAMP,
    value DOUBLE{watermark});
"""


def test_slt_eowc_partition_by() -> None:
    """gap_fill_eowc.slt's PARTITION_BY case: filling is partition-local, filled rows keep
    the partition column, interleaved partitions keep their own previous row."""
    ddl = PARTITIONED_TABLE.format(watermark=", WATERMARK FOR ts AS ts - INTERVAL '5' SECOND")
    sql = ("SELECT device_id, ts, value FROM GAP_FILL(gap_table_partitioned, ts, INTERVAL '1' "
           "MINUTE, LOCF(value), PARTITION_BY(device_id)) EMIT ON WINDOW CLOSE;")
    log = epochs_of("gap_table_partitioned",
                    [(1, at("10:00:00"), 10.0), (1, at("10:03:00"), 40.0),
                     (2, at("10:00:00"), 100.0), (2, at("10:02:00"), 120.0)],
                    [(1, at("10:10:00"), 1000.0), (2, at("10:10:00"), 2000.0)])
    out = [row for _, row in eowc_rows(query_of(ddl, sql), log)]
    assert by_time(out, 1) == [
        (1, at("10:00:00"), 10.0), (1, at("10:01:00"), 10.0), (1, at("10:02:00"), 10.0),
        (1, at("10:03:00"), 40.0), (2, at("10:00:00"), 100.0), (2, at("10:01:00"), 100.0),
        (2, at("10:02:00"), 120.0)]


# ----------------------------------------------------- gap_fill.slt (emit on update)

NORMAL_TABLE = "CREATE TABLE gap_normal_table (ts TIMESTAMP, value DOUBLE);\n"


def _normal_log() -> ArrivalLog:
    """gap_fill.slt's inserts, one epoch each."""
    return epochs_of("gap_normal_table",
                     [(at("10:00:00"), 10.0), (at("10:02:00"), 12.0), (at("10:05:00"), 15.0)],
                     [(at("10:08:00"), 20.0)], [(at("10:01:00"), 11.0)],
                     [(at("10:04:00"), 14.0)], [(at("09:57:00"), 7.0)], [(at("09:56:00"), 6.0)],
                     [(at("10:06:00"), 16.0)], [(at("09:54:00"), 4.0)])


def _normal(fill: str) -> Query:
    return query_of(NORMAL_TABLE, f"SELECT ts, value FROM GAP_FILL(gap_normal_table, ts, "
                                  f"INTERVAL '1' MINUTE{fill});")


def _series(*pairs: tuple[str, float | None]) -> list[Row]:
    return [(at(t), v) for t, v in pairs]


def test_slt_update_null_fill_through_inserts_in_gaps_and_before_the_first_row() -> None:
    """gap_fill.slt: each snapshot after an insert (a filled row is replaced by a real one,
    a gap before the earliest row is filled, a one-minute gap gets no filled row)."""
    snaps = update_snapshots(_normal(""), _normal_log())
    assert snaps[1] == _series(("10:00:00", 10.0), ("10:01:00", None), ("10:02:00", 12.0),
                               ("10:03:00", None), ("10:04:00", None), ("10:05:00", 15.0),
                               ("10:06:00", None), ("10:07:00", None), ("10:08:00", 20.0))
    assert snaps[2][1] == (at("10:01:00"), 11.0)
    assert snaps[3][4] == (at("10:04:00"), 14.0) and snaps[3][3] == (at("10:03:00"), None)
    assert snaps[4] == _series(("09:57:00", 7.0), ("09:58:00", None), ("09:59:00", None),
                               ("10:00:00", 10.0), ("10:01:00", 11.0), ("10:02:00", 12.0),
                               ("10:03:00", None), ("10:04:00", 14.0), ("10:05:00", 15.0),
                               ("10:06:00", None), ("10:07:00", None), ("10:08:00", 20.0))
    assert snaps[5][:2] == _series(("09:56:00", 6.0), ("09:57:00", 7.0))
    assert len(snaps[5]) == 13


def test_slt_update_locf() -> None:
    """gap_fill.slt's LOCF view over the table after the first six inserts."""
    snaps = update_snapshots(_normal(", LOCF(value)"), _normal_log())
    assert snaps[5] == _series(
        ("09:56:00", 6.0), ("09:57:00", 7.0), ("09:58:00", 7.0), ("09:59:00", 7.0),
        ("10:00:00", 10.0), ("10:01:00", 11.0), ("10:02:00", 12.0), ("10:03:00", 12.0),
        ("10:04:00", 14.0), ("10:05:00", 15.0), ("10:06:00", 15.0), ("10:07:00", 15.0),
        ("10:08:00", 20.0))


def test_slt_update_interpolate_accumulates_double_steps() -> None:
    """gap_fill.slt's INTERPOLATE view: 15 -> 20 over three steps gives 16.666666666666668
    and 18.333333333333336 (15 + 5/3, then + 5/3 again: the additions' rounding, as the slt
    prints them); an insert at 10:06 recomputes 10:07 as 18; an insert at 09:54 fills
    09:55 = 5."""
    snaps = update_snapshots(_normal(", INTERPOLATE(value)"), _normal_log())
    assert snaps[5] == _series(
        ("09:56:00", 6.0), ("09:57:00", 7.0), ("09:58:00", 8.0), ("09:59:00", 9.0),
        ("10:00:00", 10.0), ("10:01:00", 11.0), ("10:02:00", 12.0), ("10:03:00", 13.0),
        ("10:04:00", 14.0), ("10:05:00", 15.0), ("10:06:00", 16.666666666666668),
        ("10:07:00", 18.333333333333336), ("10:08:00", 20.0))
    assert snaps[6][-3:] == _series(("10:06:00", 16.0), ("10:07:00", 18.0), ("10:08:00", 20.0))
    assert snaps[7][:3] == _series(("09:54:00", 4.0), ("09:55:00", 5.0), ("09:56:00", 6.0))
    assert len(snaps[7]) == 15


def test_slt_update_mixed_strategies_and_an_insert_between() -> None:
    log = epochs_of("gap_multi_column_table", [(at("10:00:00"), 20.0, 100.0, "active"),
                                               (at("10:04:00"), 24.0, 120.0, "inactive")],
                    [(at("10:02:00"), 22.0, 110.0, "warning")])
    snaps = update_snapshots(query_of(MIXED_TABLE.format(watermark=""), MIXED + ";"), log)
    assert snaps[0] == MIXED_EXPECTED
    assert snaps[1] == [(at("10:00:00"), 20.0, 100.0, "active"),
                        (at("10:01:00"), 21.0, 100.0, None),
                        (at("10:02:00"), 22.0, 110.0, "warning"),
                        (at("10:03:00"), 23.0, 110.0, None),
                        (at("10:04:00"), 24.0, 120.0, "inactive")]


# ------------------------------------------ gap_fill_partition_by.slt (emit on update)

SENSOR_TABLE = "CREATE TABLE sensor_data (device_id INT, ts TIMESTAMP, value DOUBLE);\n"


def test_slt_partition_by_locf_and_an_insert_into_one_partition() -> None:
    sql = ("SELECT device_id, ts, value FROM GAP_FILL(sensor_data, ts, INTERVAL '1' MINUTE, "
           "LOCF(value), PARTITION_BY(device_id));")
    log = epochs_of("sensor_data", [(1, at("10:00:00"), 10.0), (1, at("10:03:00"), 40.0),
                                    (2, at("10:00:00"), 100.0), (2, at("10:02:00"), 120.0)],
                    [(1, at("10:01:00"), 20.0)])
    snaps = update_snapshots(query_of(SENSOR_TABLE, sql), log)
    assert snaps[0] == [(1, at("10:00:00"), 10.0), (1, at("10:01:00"), 10.0),
                        (1, at("10:02:00"), 10.0), (1, at("10:03:00"), 40.0),
                        (2, at("10:00:00"), 100.0), (2, at("10:01:00"), 100.0),
                        (2, at("10:02:00"), 120.0)]
    assert snaps[1] == [(1, at("10:00:00"), 10.0), (1, at("10:01:00"), 20.0),
                        (1, at("10:02:00"), 20.0), (1, at("10:03:00"), 40.0),
                        (2, at("10:00:00"), 100.0), (2, at("10:01:00"), 100.0),
                        (2, at("10:02:00"), 120.0)]


def test_slt_partition_by_interpolate() -> None:
    ddl = "CREATE TABLE metrics (device_id INT, ts TIMESTAMP, temp DOUBLE);\n"
    sql = ("SELECT device_id, ts, temp FROM GAP_FILL(metrics, ts, INTERVAL '1' MINUTE, "
           "INTERPOLATE(temp), PARTITION_BY(device_id));")
    log = epochs_of("metrics", [(1, at("10:00:00"), 20.0), (1, at("10:04:00"), 24.0),
                                (2, at("10:00:00"), 100.0), (2, at("10:02:00"), 200.0)])
    assert update_snapshots(query_of(ddl, sql), log)[0] == [
        (1, at("10:00:00"), 20.0), (1, at("10:01:00"), 21.0), (1, at("10:02:00"), 22.0),
        (1, at("10:03:00"), 23.0), (1, at("10:04:00"), 24.0), (2, at("10:00:00"), 100.0),
        (2, at("10:01:00"), 150.0), (2, at("10:02:00"), 200.0)]


def test_slt_partition_by_several_columns() -> None:
    ddl = ("CREATE TABLE multi_partition (region VARCHAR, device_id INT, ts TIMESTAMP, "
           "value DOUBLE);\n")
    sql = ("SELECT region, device_id, ts, value FROM GAP_FILL(multi_partition, ts, INTERVAL "
           "'1' MINUTE, LOCF(value), PARTITION_BY(region, device_id));")
    log = epochs_of("multi_partition", [("us", 1, at("10:00:00"), 10.0),
                                        ("us", 1, at("10:02:00"), 30.0),
                                        ("eu", 1, at("10:00:00"), 100.0),
                                        ("eu", 1, at("10:02:00"), 300.0)])
    assert update_snapshots(query_of(ddl, sql), log)[0] == [
        ("eu", 1, at("10:00:00"), 100.0), ("eu", 1, at("10:01:00"), 100.0),
        ("eu", 1, at("10:02:00"), 300.0), ("us", 1, at("10:00:00"), 10.0),
        ("us", 1, at("10:01:00"), 10.0), ("us", 1, at("10:02:00"), 30.0)]


def test_slt_partition_by_null_time_passes_through() -> None:
    """gap_fill_partition_by.slt test 5: a row with a NULL time passes through and ends no
    gap; an INT column under LOCF."""
    ddl = "CREATE TABLE no_pk_null_time (device_id INT, ts TIMESTAMP, value INT);\n"
    sql = ("SELECT device_id, ts, value FROM GAP_FILL(no_pk_null_time, ts, INTERVAL '1' "
           "MINUTE, LOCF(value), PARTITION_BY(device_id));")
    log = epochs_of("no_pk_null_time", [(1, at("10:00:00"), 10), (1, None, 999),
                                        (1, at("10:02:00"), 20), (2, at("10:00:00"), 30),
                                        (2, at("10:02:00"), 40)])
    assert update_snapshots(query_of(ddl, sql), log)[0] == [
        (1, None, 999), (1, at("10:00:00"), 10), (1, at("10:01:00"), 10),
        (1, at("10:02:00"), 20), (2, at("10:00:00"), 30), (2, at("10:01:00"), 30),
        (2, at("10:02:00"), 40)]


# ------------------------------------------------------------ hand-computed examples

READINGS = """CREATE SOURCE readings (k BIGINT, n BIGINT, x DOUBLE, s VARCHAR, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""


def _filled(fills: str, *rows: Row, close: bool = True, convention: Convention = RW
            ) -> list[Row]:
    sql = f"SELECT * FROM GAP_FILL(readings, ts, INTERVAL '1' MINUTE{fills}) EMIT ON WINDOW CLOSE;"
    log = epochs_of("readings", list(rows))
    return [row for _, row in eowc_rows(query_of(READINGS, sql), log, convention, close)]


T0 = at("10:00:00")


def test_integer_interpolation_steps_by_floor_division() -> None:
    """n: 0 -> 10 over 3 steps: step 10 // 3 = 3, so 3, 6 (not 3.33, 6.67); 10 -> 0: step
    -10 // 3 = -4 (floor, not truncation), so 6, 2. RisingWave's div_floor."""
    up = _filled(", INTERPOLATE(n)", (1, 0, 0.0, "a", T0), (1, 10, 0.0, "b", T0 + 3 * MINUTE))
    assert [r[1] for r in up] == [0, 3, 6, 10]
    down = _filled(", INTERPOLATE(n)", (1, 10, 0.0, "a", T0), (1, 0, 0.0, "b", T0 + 3 * MINUTE))
    assert [r[1] for r in down] == [10, 6, 2, 0]


def test_a_gap_that_is_not_a_multiple_of_the_interval() -> None:
    """10:00:00 -> 10:02:30 at one minute: filled at 10:01 and 10:02 (prev + k * interval,
    anchored at the previous row, not aligned), and the interpolation has 3 steps of
    (4.5 - 0) / 3 = 1.5 whatever their lengths."""
    out = _filled(", INTERPOLATE(x)", (1, 0, 0.0, "a", T0), (1, 0, 4.5, "b", T0 + 150 * S))
    assert [(r[4] - T0, r[2]) for r in out] == [(0, 0.0), (MINUTE, 1.5), (2 * MINUTE, 3.0),
                                                (150 * S, 4.5)]


def test_locf_carries_the_previous_row_not_the_last_non_null_value() -> None:
    """LOCF(x) after a row whose x is NULL fills NULL; INTERPOLATE with a NULL end fills
    NULL; KEEPNULL(s) and the unlisted k... are NULL (k here is not a partition column)."""
    out = _filled(", LOCF(x), INTERPOLATE(n), KEEPNULL(s)",
                  (1, 5, 1.0, "a", T0), (1, None, None, "b", T0 + 2 * MINUTE),
                  (1, 9, 3.0, "c", T0 + 4 * MINUTE))
    assert out == [(1, 5, 1.0, "a", T0), (None, None, 1.0, None, T0 + MINUTE),
                   (1, None, None, "b", T0 + 2 * MINUTE), (None, None, None, None, T0 + 3 * MINUTE),
                   (1, 9, 3.0, "c", T0 + 4 * MINUTE)]


def test_partitions_fill_independently_and_keep_their_key() -> None:
    out = _filled(", LOCF(x), PARTITION_BY(k)", (1, 0, 1.0, "a", T0), (2, 0, 7.0, "b", T0),
                  (2, 0, 8.0, "c", T0 + 2 * MINUTE), (1, 0, 2.0, "d", T0 + 3 * MINUTE))
    assert sorted((r[0], r[4] - T0, r[2]) for r in out) == [
        (1, 0, 1.0), (1, MINUTE, 1.0), (1, 2 * MINUTE, 1.0), (1, 3 * MINUTE, 2.0),
        (2, 0, 7.0), (2, MINUTE, 7.0), (2, 2 * MINUTE, 8.0)]


def test_equal_times_fill_nothing_between_them_and_ties_are_ordered_by_the_row() -> None:
    """Two rows at 10:00 (x 5.0 and 1.0): the later in the tie order (the whole row:
    (1, 0, 5.0, ...) after (1, 0, 1.0, ...)) is the previous row of the next gap."""
    out = _filled(", LOCF(x)", (1, 0, 5.0, "a", T0), (1, 0, 1.0, "a", T0),
                  (1, 0, 9.0, "a", T0 + 2 * MINUTE))
    assert [(r[4] - T0, r[2]) for r in out] == [(0, 1.0), (0, 5.0), (MINUTE, 5.0),
                                                (2 * MINUTE, 9.0)]


def test_nothing_is_filled_after_the_last_row_even_at_the_close() -> None:
    out = _filled(", LOCF(x)", (1, 0, 5.0, "a", T0))
    assert out == [(1, 0, 5.0, "a", T0)]


@pytest.mark.parametrize(("convention", "released"), [(RW, 1), (SPARK, 2), (FLINK, 2)])
def test_the_boundary_is_the_conventions(convention: Convention, released: int) -> None:
    """Rows at 10:00 and 10:02; then 10:02:05 moves W to 10:02:00 exactly. Under RisingWave
    10:02 is not complete at W = 10:02 (c < W), so only 10:00 is out; under Spark and Flink
    (c <= W) 10:02 is out with its filled row 10:01."""
    sql = ("SELECT * FROM GAP_FILL(readings, ts, INTERVAL '1' MINUTE, LOCF(x)) "
           "EMIT ON WINDOW CLOSE;")
    log = epochs_of("readings", [(1, 0, 1.0, "a", T0), (1, 0, 2.0, "b", T0 + 2 * MINUTE)],
                    [(1, 0, 3.0, "c", T0 + 2 * MINUTE + 5 * S)])
    out = eowc_rows(query_of(READINGS, sql), log, convention)
    anchors = [row for _, row in out if row[3] is not None]
    assert len(anchors) == released
    assert len(out) == (1 if released == 1 else 3)


def test_interpolation_step_in_each_arithmetic() -> None:
    assert interpolation_step(15.0, 20.0, 3, SqlType.DOUBLE) == 5 / 3
    assert interpolation_step(-7, 0, 2, SqlType.BIGINT) == 3  # 7 // 2
    assert interpolation_step(0, -7, 2, SqlType.BIGINT) == -4  # floor(-3.5)
    assert interpolation_step(Decimal("1.10"), Decimal("2.20"), 2, SqlType.DOUBLE) == Decimal("0.55")
    assert interpolation_step(None, 1.0, 2, SqlType.DOUBLE) is None


@pytest.mark.parametrize(("sql", "message"), [
    ("GAP_FILL(readings, ts, INTERVAL '1' MINUTE, LOCF(ts))",
     "Cannot apply a fill strategy to the time column"),
    ("GAP_FILL(readings, ts, INTERVAL '1' MINUTE, INTERPOLATE(s))",
     "INTERPOLATE only supports numeric types"),
    ("GAP_FILL(readings, ts, INTERVAL '1' MINUTE, LOCF(k), PARTITION_BY(k))",
     "Cannot apply a fill strategy to a PARTITION_BY column"),
    ("GAP_FILL(readings, ts, INTERVAL '1' MINUTE, PARTITION_BY(ts))",
     "PARTITION_BY cannot include the time column"),
    ("GAP_FILL(readings, ts, INTERVAL '1' MINUTE, NEXTVAL(x))", "Unsupported fill strategy"),
    ("GAP_FILL(readings, ts)", "GAP_FILL"),
    ("GAP_FILL(readings, k, INTERVAL '1' MINUTE)", "should be a column of type timestamp"),
])
def test_bad_gap_fill_is_refused_by_name(sql: str, message: str) -> None:
    with pytest.raises(EowcError, match=message):
        query_of(READINGS, f"SELECT * FROM {sql};")


def test_eowc_needs_the_watermark_on_the_time_column() -> None:
    ddl = ("CREATE SOURCE r2 (a TIMESTAMP, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL "
           "'5' SECOND);\n")
    query = query_of(ddl, "SELECT * FROM GAP_FILL(r2, a, INTERVAL '1' MINUTE) EMIT ON WINDOW CLOSE;")
    with pytest.raises(EowcError, match="requires a watermark on the time column"):
        list(run_eowc(query, epochs_of("r2", [(T0, T0)])))


# --------------------------------------------------------------- properties (reference)

GAP_QUERIES = [
    "SELECT * FROM GAP_FILL(bids, ts, INTERVAL '7' SECOND, INTERPOLATE(price), "
    "PARTITION_BY(auction)) EMIT ON WINDOW CLOSE",
    "SELECT * FROM GAP_FILL(bids, ts, INTERVAL '4' SECOND, LOCF(price)) EMIT ON WINDOW CLOSE",
    "SELECT ts, price FROM GAP_FILL(bids, ts, INTERVAL '3' SECOND, KEEPNULL(price), "
    "PARTITION_BY(auction)) WHERE price IS NULL OR price > 2 EMIT ON WINDOW CLOSE",
]


def _gap_node(query: Query) -> GapFill:
    return next(n for n in walk(query.plan) if isinstance(n, GapFill))


@settings(max_examples=60, deadline=None)
@given(logs=arrival_logs(), which=st.integers(0, 1))
def test_filled_output_keeps_the_input_and_steps_by_the_interval(logs: ArrivalLog,
                                                                 which: int) -> None:
    """The final result restricted to the input's times (per partition) is the input
    (INPUT: the rows not late); between two consecutive times of a partition every step is
    exactly the interval, except the last one of a gap, which is at most the interval; under
    LOCF a filled row is the last real row's value (the last in the tie order) and NULL
    elsewhere."""
    query = script(GAP_QUERIES[which] + ";").query
    node = _gap_node(query)
    final = [row for _, row in eowc_rows(query, logs, close=True)]
    event(f"filled rows: {'some' if len(final) > len(_input_rows(logs)) else 'none'}")
    real_key = (lambda r: (r[0], r[2])) if node.partition_by else (lambda r: r[2])
    real_times = {real_key(r) for r in _input_rows(logs)}
    assert Counter(r for r in final if real_key(r) in real_times) == Counter(_input_rows(logs))
    partitions: dict[object, list[int]] = {}
    for row in final:
        partitions.setdefault(row[0] if node.partition_by else (), []).append(row[2])
    for key, times in partitions.items():
        times.sort()
        for before, after in zip(times, times[1:], strict=False):
            step = after - before
            is_real = ((key, after) if node.partition_by else after) in real_times
            assert step == node.interval or (is_real and 0 <= step <= node.interval)
    if node.fills == (("price", "locf"),):  # a filled row carries the last row's price
        last: Row | None = None
        for row in sorted(final, key=lambda r: (r[2], row_sort_key(r))):
            if real_key(row) in real_times:
                last = row
            else:
                assert last is not None and row == (None, last[1], row[2])


def _input_rows(log: ArrivalLog, delay: int = 5, convention: Convention = RW) -> list[Row]:
    """INPUT of the bids source (the rows not late when they arrived), by the update run of
    a plain SELECT."""
    query = script("SELECT * FROM bids;", delay).query
    return [c.row for c in run_update(query, log, convention) if c.op == "+"]


@settings(max_examples=60, deadline=None)
@given(logs=arrival_logs(), which=st.integers(0, len(GAP_QUERIES) - 1),
       convention=st.sampled_from([RW, SPARK, FLINK]))
def test_eowc_is_append_only_and_ends_as_the_update_result(logs: ArrivalLog, which: int,
                                                           convention: Convention) -> None:
    """EOWC emits each row once, in non-decreasing epochs; after the close its rows are the
    emit-on-update result after the last epoch; at every epoch the EOWC output so far is
    contained in the update result then (a released row is final)."""
    query = script(GAP_QUERIES[which] + ";").query
    update = script(GAP_QUERIES[which].replace(" EMIT ON WINDOW CLOSE", "") + ";").query
    out = eowc_rows(query, logs, convention, close=True)
    assert [e for e, _ in out] == sorted(e for e, _ in out)
    snaps = update_snapshots(update, logs, convention)
    final = Counter(snaps[-1]) if snaps else Counter()
    assert Counter(r for _, r in out) == final
    for epoch, snap in enumerate(snaps):
        assert Counter(r for e, r in out if e <= epoch) <= Counter(snap)


# ------------------------------------------------------------------ the DuckDB oracle


def test_the_oracle_gives_the_slt_rows() -> None:
    """The DuckDB translation (lead over each partition, a recursive CTE adding the interval
    and the step one row at a time) gives gap_fill.slt's INTERPOLATE rows, the accumulated
    16.666666666666668 and 18.333333333333336 included, and gap_fill_eowc.slt's EOWC rows."""
    prefix = ArrivalLog(_normal_log().epochs[:6])
    assert sorted(oracle_eowc(_normal(", INTERPOLATE(value)"), prefix, close=True).elements()) \
        == _series(("09:56:00", 6.0), ("09:57:00", 7.0), ("09:58:00", 8.0), ("09:59:00", 9.0),
                   ("10:00:00", 10.0), ("10:01:00", 11.0), ("10:02:00", 12.0),
                   ("10:03:00", 13.0), ("10:04:00", 14.0), ("10:05:00", 15.0),
                   ("10:06:00", 16.666666666666668), ("10:07:00", 18.333333333333336),
                   ("10:08:00", 20.0))
    assert sorted(oracle_eowc(_eowc_query(", LOCF(value)"), _eowc_log()).elements()) == \
        _series(("10:00:00", 10.0), ("10:01:00", 10.0), ("10:02:00", 12.0),
                ("10:03:00", 12.0), ("10:04:00", 12.0), ("10:05:00", 15.0),
                ("10:06:00", 15.0), ("10:07:00", 15.0), ("10:08:00", 21.0))


def test_the_oracle_floors_integer_steps() -> None:
    sql = "SELECT * FROM GAP_FILL(readings, ts, INTERVAL '1' MINUTE, INTERPOLATE(n)) EMIT ON WINDOW CLOSE;"
    log = epochs_of("readings", [(1, 10, 0.0, "a", T0), (1, 0, 0.0, "b", T0 + 3 * MINUTE)])
    out = oracle_eowc(query_of(READINGS, sql), log, close=True)
    assert sorted(r[1] for r in out.elements() if r[1] is not None) == [0, 2, 6, 10]


@settings(max_examples=40, deadline=None)
@given(logs=arrival_logs(), which=st.integers(0, len(GAP_QUERIES) - 1),
       convention=st.sampled_from([RW, SPARK, FLINK]))
def test_the_reference_equals_the_duckdb_oracle(logs: ArrivalLog, which: int,
                                               convention: Convention) -> None:
    """On random logs (ties, late rows, negative prices interpolated by floor division),
    the reference's EOWC output after the last epoch, and at the close, is DuckDB's."""
    query = script(GAP_QUERIES[which] + ";").query
    for close in (False, True):
        reference = Counter(row for _, row in eowc_rows(query, logs, convention, close))
        assert reference == oracle_eowc(query, logs, convention, close)


# ------------------------------------------------------------- the in-process executor

def test_each_mode_has_its_gap_fill_executor() -> None:
    eowc = _eowc_query(", LOCF(value)")
    update = query_of(EOWC_TABLE, "SELECT ts, value FROM GAP_FILL(gap_table, ts, INTERVAL '1' "
                                  "MINUTE, LOCF(value));")
    assert type(processor_for(eowc, RW)) is EowcGapFill
    assert type(processor_for(update, RW)) is GapFillChangelog


def _executor_rows(query: Query, log: ArrivalLog, close: bool = True,
                   processor: EowcProcessor | None = None) -> list[tuple[int, Row]]:
    run = run_in_process(query, log, RW, close=close, restart_after=set(range(len(log.epochs))),
                         processor=processor)
    return [(e.epoch, e.row) for e in run.emissions]


def _slt_epochs(rows: list[tuple[int, Row]]) -> list[tuple[int, int]]:
    return [(e, r[0]) for e, r in rows]


SLT_EOWC_EPOCHS = [(0, at("10:00:00")), (0, at("10:01:00")), (0, at("10:02:00")),
                   (1, at("10:03:00")), (1, at("10:04:00")), (1, at("10:05:00")),
                   (2, at("10:06:00")), (2, at("10:07:00")), (2, at("10:08:00")),
                   (3, at("10:09:00")), (3, at("10:10:00"))]


def test_the_executor_gives_the_slt_rows_in_their_epochs_through_restarts() -> None:
    """gap_fill_eowc.slt's INTERPOLATE view on the executor, restarted after every epoch:
    the slt's rows (10:06 = 17, 10:07 = 19), each in the epoch the hand computation of
    test_slt_eowc_rows_are_released_with_the_row_that_ends_their_gap gives."""
    out = _executor_rows(_eowc_query(", INTERPOLATE(value)"), _eowc_log())
    assert _slt_epochs(out) == SLT_EOWC_EPOCHS
    assert [r[1] for _, r in out][:9] == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 17.0, 19.0, 21.0]


def test_the_changelog_executor_gives_the_slt_snapshots() -> None:
    """gap_fill.slt's INTERPOLATE view on the emit-on-update executor (a watermark far
    behind, so that no insert is late): the snapshots after the sixth, seventh and eighth
    inserts."""
    ddl = ("CREATE TABLE gap_normal_table (ts TIMESTAMP, value DOUBLE, WATERMARK FOR ts AS "
           "ts - INTERVAL '1' HOUR);\n")
    query = query_of(ddl, "SELECT ts, value FROM GAP_FILL(gap_normal_table, ts, INTERVAL '1' "
                          "MINUTE, INTERPOLATE(value));")
    run = run_in_process(query, _normal_log(), RW, restart_after={2, 5})
    snaps = snapshots(run.changes, len(_normal_log().epochs))
    assert snaps[5][-3:] == _series(("10:06:00", 16.666666666666668),
                                    ("10:07:00", 18.333333333333336), ("10:08:00", 20.0))
    assert snaps[6][-3:] == _series(("10:06:00", 16.0), ("10:07:00", 18.0), ("10:08:00", 20.0))
    assert snaps[7][:3] == _series(("09:54:00", 4.0), ("09:55:00", 5.0), ("09:56:00", 6.0))
    assert len(snaps[7]) == 15


@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS), which=st.integers(0, len(GAP_QUERIES) - 1),
       convention=st.sampled_from([RW, SPARK, FLINK]), data=st.data())
def test_the_executor_equals_the_reference_through_restarts(
        log: ArrivalLog, which: int, convention: Convention, data: st.DataObject) -> None:
    """EOWC: the same rows in the same epochs and order, the same late rows, with restarts
    anywhere; emit on update: the same changelog."""
    query = script(GAP_QUERIES[which] + ";").query
    late: list[LateRow] = []
    expected = list(run_eowc(query, log, convention, close=True, late=late.append))
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    run = run_in_process(query, log, convention, close=True, restart_after=restarts)
    assert [(e.epoch, e.row) for e in run.emissions] == [(e.epoch, e.row) for e in expected]
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    update = script(GAP_QUERIES[which].replace(" EMIT ON WINDOW CLOSE", "") + ";").query
    changes = run_in_process(update, log, convention, restart_after=restarts).changes
    assert changes == list(run_update(update, log, convention))


class _GapReleasedByItsFirstFilledRow(EowcGapFill):
    """A mutant: a gap (and the row ending it) is released once its *first filled row's*
    time is complete, not the row that ends it, as if the filled rows, whose LOCF values are
    known, could go before the row after them is final."""

    def anchor_time(self, last: Row | None, row: Row) -> int:
        time = self.filler.time
        if last is None or row[time] - last[time] <= self.filler.interval:
            return row[time]
        return last[time] + self.filler.interval


def test_a_gap_released_before_the_row_ending_it_is_caught() -> None:
    """The mutant releases 10:03, 10:04 and 10:05 in epoch 0 (10:03 is complete at
    W = 10:04:55, 10:05 is not): the hand-computed epochs catch it."""
    query = _eowc_query(", INTERPOLATE(value)")
    plan = executor_plan(query, RW)
    out = _executor_rows(query, _eowc_log(), processor=_GapReleasedByItsFirstFilledRow(plan))
    assert _slt_epochs(out) != SLT_EOWC_EPOCHS
    assert (0, at("10:05:00")) in _slt_epochs(out)
    assert _slt_epochs(_executor_rows(query, _eowc_log(), processor=EowcGapFill(plan))) == \
        SLT_EOWC_EPOCHS


# ---------------------------------------------------------------------------------- scale

def _sensor_log(epochs: int, devices: int, seed: int) -> ArrivalLog:
    """``epochs`` epochs of 10 s of readings from ``devices`` devices, each reporting every
    1 to 9 minutes (its gaps are filled minute by minute), with one reading in 20 delayed by
    up to 2 minutes (late at a 30 s delay when it arrives after its time is complete)."""
    rng = random.Random(seed)
    start = at("00:00:00")
    next_report = {d: start + rng.randrange(9) * MINUTE + rng.randrange(60) * S
                   for d in range(devices)}
    delayed: list[tuple[int, Row]] = []
    log = []
    for epoch in range(epochs):
        now = start + (epoch + 1) * 10 * S
        rows = []
        for device, due in next_report.items():
            if due <= now:
                row = (device, rng.randrange(-50, 50), due)
                if rng.randrange(20) == 0:
                    delayed.append((now + rng.randrange(1, 13) * 10 * S, row))
                else:
                    rows.append(row)
                next_report[device] = due + rng.randrange(1, 10) * MINUTE + rng.randrange(60) * S
        rows += [row for when, row in delayed if when <= now]
        delayed = [(when, row) for when, row in delayed if when > now]
        log.append(tuple(Event("sensors", row) for row in rows))
    return ArrivalLog(tuple(log))


SENSORS = ("CREATE SOURCE sensors (device BIGINT, reading BIGINT, ts TIMESTAMP, WATERMARK FOR ts "
           "AS ts - INTERVAL '30' SECOND);\n")


def test_at_scale_the_executor_and_the_oracle_equal_the_reference() -> None:
    """2,000 epochs (5.5 hours of 10 s epochs), 200 devices, one-minute gaps interpolated
    per device, late readings, a restart every 97 epochs (12,014 readings, 428 late, 70,717
    output rows): the executor emits the reference's rows in the same epochs and order,
    DuckDB gives the same final set, the emit-on-update executor's changelog is the
    reference's, both executors' state stays bounded (about 25 kB on update, 7 kB under EOWC,
    the same at epoch 1,000 and 2,000), and the mutant that releases a gap early differs."""
    log = _sensor_log(2_000, 200, seed=18)
    sql = ("SELECT * FROM GAP_FILL(sensors, ts, INTERVAL '1' MINUTE, INTERPOLATE(reading), "
           "PARTITION_BY(device))")
    query = query_of(SENSORS, sql + " EMIT ON WINDOW CLOSE;")
    late: list[LateRow] = []
    expected = list(run_eowc(query, log, RW, close=True, late=late.append))
    restarts = set(range(0, 2_000, 97))
    run = run_in_process(query, log, RW, close=True, restart_after=restarts)
    assert [(e.epoch, e.row) for e in run.emissions] == [(e.epoch, e.row) for e in expected]
    assert len(late) > 50 and len(run.late) == len(late)
    rows = sum(len(e) for e in log.epochs)
    assert len(expected) > 3 * rows  # most output rows are filled ones
    assert Counter(e.row for e in expected) == oracle_eowc(query, log, RW, close=True)
    update = query_of(SENSORS, sql + ";")
    changelog = run_in_process(update, log, RW, restart_after=restarts, measure_bytes=True)
    assert changelog.changes == list(run_update(update, log, RW))
    for state in (changelog.state_bytes, run_in_process(query, log, RW, measure_bytes=True).state_bytes):
        assert state[1_999] < 1.2 * state[999]  # bounded: it does not grow with the log
    mutant = _GapReleasedByItsFirstFilledRow(executor_plan(query, RW))
    caught = run_in_process(query, log, RW, close=True, processor=mutant).emissions
    assert [(e.epoch, e.row) for e in caught] != [(e.epoch, e.row) for e in expected]


# ----------------------------------------------------------- over another operator's output

COUNTS = ("CREATE VIEW counts AS SELECT window_end AS ts, count(*) AS n FROM TUMBLE(bids, ts, "
          "INTERVAL '10' SECOND) GROUP BY window_end;\n"
          "SELECT * FROM GAP_FILL(counts, ts, INTERVAL '10' SECOND, LOCF(n)) EMIT ON WINDOW CLOSE;")


def test_gap_fill_over_a_window_aggregate_on_both_engines() -> None:
    """Bids at 1 s, 2 s (epoch 0), 41 s (epoch 1), 75 s (epoch 2): windows ending at 10 s
    (2 bids), 50 s (1) and 80 s (1); filled every 10 s with the last count: 10:2, 20:2,
    30:2, 40:2, 50:1, 60:1, 70:1, 80:1 (seconds after BASE). The composed executor, restarted
    after every epoch, emits the reference's rows in the same epochs."""
    query = script(COUNTS).query
    log = ArrivalLog(((Event("bids", (1, 1, BASE + S)), Event("bids", (1, 1, BASE + 2 * S))),
                      (Event("bids", (1, 1, BASE + 41 * S)),), (Event("bids", (1, 1, BASE + 75 * S)),)))
    out = eowc_rows(query, log, close=True)
    assert sorted(((r[0] - BASE) // S, r[1]) for _, r in out) == [
        (10, 2), (20, 2), (30, 2), (40, 2), (50, 1), (60, 1), (70, 1), (80, 1)]
    run = run_in_process(query, log, RW, close=True, restart_after={0, 1, 2})
    assert [(e.epoch, e.row) for e in run.emissions] == out


@settings(max_examples=30, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS), convention=st.sampled_from([RW, SPARK, FLINK]),
       data=st.data())
def test_gap_fill_over_an_aggregate_equals_the_reference(log: ArrivalLog, convention: Convention,
                                                         data: st.DataObject) -> None:
    query = script(COUNTS).query
    expected = [(e.epoch, e.row) for e in run_eowc(query, log, convention, close=True)]
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    run = run_in_process(query, log, convention, close=True, restart_after=restarts)
    assert [(e.epoch, e.row) for e in run.emissions] == expected
    assert Counter(r for _, r in expected) == oracle_eowc(query, log, convention, close=True)
