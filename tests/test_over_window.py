"""OVER windows (seed 002) in the reference interpreter: hand-computed examples of the seed,
every window function and frame, the EOWC trigger (frame_is_complete) under each convention,
and the emit-on-update changelog of the rows whose results change."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings

from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, parse_arrival_log
from eowc.semantics.ir.plan import Frame
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention, frame_is_complete
from tests.strategies import arrival_logs, script

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK

THREE = """CREATE {kind} t (ts TIMESTAMP, pk BIGINT, p BIGINT, x BIGINT{watermark});
SELECT ts, pk, x,
       SUM(x) OVER (PARTITION BY p ORDER BY ts ROWS 1 PRECEDING) AS s1,
       SUM(x) OVER (PARTITION BY p ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS s2,
       LEAD(x, 1) OVER (PARTITION BY p ORDER BY ts) AS next_x
FROM t{emit};"""


def log_of(sources, epochs: list[list[dict]]) -> ArrivalLog:
    """Epochs of rows of the script's one table (each epoch ends with a barrier)."""
    (name,) = sources
    lines = [line for epoch in epochs for line in
             [json.dumps({"table": name, "row": row}) for row in epoch] + ['{"barrier": true}']]
    return parse_arrival_log(lines, sources).log


def at(hhmm: str) -> str:
    return f"2024-01-01 {hhmm}:00"


def row(hhmm: str, pk: int, x: int) -> dict:
    return {"ts": at(hhmm), "pk": pk, "p": 1, "x": x}


def shown(values: tuple) -> tuple:
    return (format_timestamp(values[0])[11:16], *values[1:])


# ------------------------------------------------------------------------------ seed 002

def test_the_seed_insert_at_10_06_changes_exactly_the_affected_range() -> None:
    """Seed 002, general version: rows 10:00 (100, 5), 10:02 (101, 3), 10:10 (103, 9),
    10:17 (104, 0), then 10:06 (102, 8) is inserted. Its windows reach from row 101 (whose
    1 FOLLOWING and LEAD are now 102) to row 103 (whose 1 PRECEDING is now 102): exactly
    those rows change, and 102 is new."""
    sql = THREE.format(kind="TABLE", watermark="", emit="")
    script_ = parse_script(sql)
    log = log_of(script_.sources, [[row("10:00", 100, 5), row("10:02", 101, 3),
                                    row("10:10", 103, 9), row("10:17", 104, 0)],
                                   [row("10:06", 102, 8)]])
    changes = [(c.epoch, c.op, shown(c.row)) for c in run_update(script_.query, log)]
    assert changes == [
        (0, "+", ("10:00", 100, 5, 5, 8, 3)),
        (0, "+", ("10:02", 101, 3, 8, 12, 9)),
        (0, "+", ("10:10", 103, 9, 12, 9, 0)),
        (0, "+", ("10:17", 104, 0, 9, 0, None)),
        (1, "-", ("10:02", 101, 3, 8, 12, 9)),
        (1, "-", ("10:10", 103, 9, 12, 9, 0)),
        (1, "+", ("10:02", 101, 3, 8, 11, 8)),
        (1, "+", ("10:06", 102, 8, 11, 17, 9)),
        (1, "+", ("10:10", 103, 9, 17, 9, 0)),
    ]
    with pytest.raises(PlanError, match="declares no watermark"):
        run_eowc(parse_script(THREE.format(kind="TABLE", watermark="",
                                           emit=" EMIT ON WINDOW CLOSE")).query, log)


@pytest.mark.parametrize("convention", list(Convention))
def test_the_seed_query_under_eowc(convention: Convention) -> None:
    """The same query with a 5-minute watermark delay. Epoch 0: 10:00, 10:02 (W = 09:57);
    epoch 1: 10:10 and 10:06 (not late under 09:57; W = 10:05); epoch 2: 10:17 (W = 10:12);
    epoch 3: 10:30 (W = 10:25). A row waits for its own time and for the next row's (its
    1 FOLLOWING frame and LEAD): 100 after epoch 1 (10:02 < 10:05), 101 and 102 after epoch 2
    (10:06, 10:10 < 10:12), 103 after epoch 3 (10:17 < 10:25), and 104, 105 only at the end of
    the input. Results are computed once, on final frames."""
    sql = THREE.format(kind="SOURCE", watermark=", WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE",
                       emit=" EMIT ON WINDOW CLOSE")
    script_ = parse_script(sql)
    log = log_of(script_.sources, [[row("10:00", 100, 5), row("10:02", 101, 3)],
                                   [row("10:10", 103, 9), row("10:06", 102, 8)],
                                   [row("10:17", 104, 0)], [row("10:30", 105, 1)]])
    emitted = [(e.epoch, shown(e.row)) for e in run_eowc(script_.query, log, convention,
                                                           close=True)]
    assert emitted == [
        (1, ("10:00", 100, 5, 5, 8, 3)),
        (2, ("10:02", 101, 3, 8, 11, 8)),
        (2, ("10:06", 102, 8, 11, 17, 9)),
        (3, ("10:10", 103, 9, 17, 9, 0)),
        (4, ("10:17", 104, 0, 9, 1, 1)),
        (4, ("10:30", 105, 1, 1, 1, None)),
    ]


def test_stock_price_difference_with_lag() -> None:
    """Seed 002, example 1: price - LAG(price) per stock, in event-time order."""
    sql = """CREATE SOURCE stock_prices (stock_id VARCHAR, event_time TIMESTAMP, price DOUBLE,
                 WATERMARK FOR event_time AS event_time - INTERVAL '1' MINUTE);
             SELECT stock_id, event_time,
                    price - LAG(price) OVER (PARTITION BY stock_id ORDER BY event_time) AS price_diff
             FROM stock_prices EMIT ON WINDOW CLOSE;"""
    script_ = parse_script(sql)
    rows = [("A", "10:00", 10.0), ("B", "10:00", 50.0), ("A", "10:01", 12.5), ("B", "10:03", 49.0),
            ("A", "10:02", 12.0), ("A", "10:05", 13.0)]
    log = log_of(script_.sources, [[{"stock_id": s, "event_time": at(t), "price": p}]
                                   for s, t, p in rows])
    emitted = [(e.epoch, e.row[0], format_timestamp(e.row[1])[11:16], e.row[2])
               for e in run_eowc(script_.query, log, RW, close=True)]
    # W after each epoch: 09:59, 09:59, 10:00, 10:02, 10:02, 10:04; RisingWave: t < W.
    assert emitted == [(3, "A", "10:00", None), (3, "B", "10:00", None), (3, "A", "10:01", 2.5),
                       (5, "A", "10:02", -0.5), (5, "B", "10:03", -1.0), (6, "A", "10:05", 1.0)]


def test_recent_orders_average_of_the_ten_before() -> None:
    """Seed 002, example 2: AVG(amount) over ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING: the
    n-th order of amounts 1, 2, ..., 12 averages the (up to ten) amounts before it: NULL,
    1, 1.5, 2, ..., 5.5 for the 11th, and (2 + ... + 11) / 10 = 6.5 for the 12th."""
    sql = """CREATE TABLE orders (user_id BIGINT, order_time TIMESTAMP, amount BIGINT);
             SELECT user_id, amount, AVG(amount) OVER (PARTITION BY user_id ORDER BY order_time
                 ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) AS recent_10_orders_avg_amount
             FROM orders;"""
    script_ = parse_script(sql)
    orders = [{"user_id": 7, "order_time": f"2024-01-01 10:{i:02d}:00", "amount": i}
              for i in range(1, 13)] + [{"user_id": 8, "order_time": at("10:05"), "amount": 100}]
    log = log_of(script_.sources, [orders])
    got = {(r.row[0], r.row[1]): r.row[2] for r in run_update(script_.query, log)}
    expected = {(7, n): (sum(range(max(1, n - 10), n)) / (n - max(1, n - 10)) if n > 1 else None)
                for n in range(1, 13)}
    assert got == expected | {(8, 100): None}
    assert got[(7, 12)] == 6.5 and got[(7, 11)] == 5.5


# ------------------------------------------------------------------------------ functions

def test_ranking_ties_and_range_frames() -> None:
    """Ranks over ties (peers share rank; dense_rank counts distinct times); a RANGE frame of
    2 minutes preceding to 1 minute following by event time; the default frame (the partition
    up to the row and its peers); first_value; lead with a default; DESC order."""
    sql = """CREATE TABLE t (ts TIMESTAMP, x BIGINT);
             SELECT ts, x,
                    ROW_NUMBER() OVER (ORDER BY ts) AS rn, RANK() OVER (ORDER BY ts) AS rk,
                    DENSE_RANK() OVER (ORDER BY ts) AS drk,
                    SUM(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '2' MINUTE PRECEDING
                                 AND INTERVAL '1' MINUTE FOLLOWING) AS near,
                    SUM(x) OVER (ORDER BY ts) AS running,
                    FIRST_VALUE(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS fv,
                    LEAD(x, 2, -1) OVER (ORDER BY ts) AS lead2
             FROM t;"""
    script_ = parse_script(sql)
    rows = [("10:00", 1), ("10:01", 2), ("10:01", 4), ("10:03", 8), ("10:07", 16)]
    log = log_of(script_.sources, [[{"ts": at(t), "x": x} for t, x in rows]])
    got = sorted(shown(c.row) for c in run_update(script_.query, log))
    # The two 10:01 rows tie; the tie-break orders them by the whole row (x 2 before 4).
    assert got == [
        ("10:00", 1, 1, 1, 1, 1 + 2 + 4, 1, 1, 4),
        ("10:01", 2, 2, 2, 2, 1 + 2 + 4, 7, 1, 8),
        ("10:01", 4, 3, 2, 2, 1 + 2 + 4, 7, 2, 16),
        ("10:03", 8, 4, 4, 3, 2 + 4 + 8, 15, 4, -1),
        ("10:07", 16, 5, 5, 4, 16, 31, 8, -1),
    ]
    descending = parse_script("CREATE TABLE t (ts TIMESTAMP, x BIGINT); SELECT x, SUM(x) OVER "
                              "(ORDER BY ts DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT "
                              "ROW) AS later FROM t;")
    got = sorted(c.row for c in run_update(descending.query, log))
    assert got == [(1, 31), (2, 26), (4, 30), (8, 24), (16, 16)]  # ties: 2 before 4


# ------------------------------------------------------------------------------ the trigger

@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
def test_a_range_frame_keeps_the_rows_a_row_not_yet_arrived_reads(convention: Convention) -> None:
    """RANGE 2 minutes PRECEDING, watermark ts - 5 min. Epoch 0: 10:52 and 10:58 (W = 10:53:
    10:52 complete and emitted). Epoch 1: 10:54 arrives, not late (10:54 > W); its frame
    [10:52, 10:54] still holds 10:52: x = 1 + 3. Pruning must keep what a row that can still
    arrive (at or above W) reads, not only what the last kept row reads (a bug found by
    tests/test_executors_in_process.py's hypothesis search, the OVER executor sharing the
    pruning)."""
    sql = ("CREATE SOURCE t (ts TIMESTAMP, pk BIGINT, p BIGINT, x BIGINT, WATERMARK FOR ts AS "
           "ts - INTERVAL '5' MINUTE); SELECT ts, pk, SUM(x) OVER (ORDER BY ts RANGE BETWEEN "
           "INTERVAL '2' MINUTE PRECEDING AND CURRENT ROW) AS s FROM t EMIT ON WINDOW CLOSE;")
    script_ = parse_script(sql)
    log = log_of(script_.sources, [[row("10:52", 1, 1), row("10:58", 2, 2)], [row("10:54", 3, 3)]])
    out = [(e.epoch, *shown(e.row)) for e in run_eowc(script_.query, log, convention, close=True)]
    assert out == [(0, "10:52", 1, 1), (2, "10:54", 3, 4), (2, "10:58", 2, 2)]


def test_frame_is_complete_by_convention() -> None:
    assert frame_is_complete(10, 11, RW) and not frame_is_complete(10, 10, RW)
    assert frame_is_complete(10, 10, SPARK) and frame_is_complete(10, 10, FLINK)
    assert not frame_is_complete(None, 10**18, RW)  # a following row that has not arrived
    assert frame_is_complete(None, CLOSED_WATERMARK, RW)


def test_an_eowc_over_window_must_order_by_the_watermark_column() -> None:
    for order in ("x", "ts DESC", "ts, x"):
        with pytest.raises(PlanError, match="must ORDER BY the watermark column"):
            run_eowc(parse_script(
                "CREATE SOURCE t (ts TIMESTAMP, x BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' "
                f"SECOND); SELECT ts, SUM(x) OVER (ORDER BY {order}) AS s FROM t EMIT ON "
                "WINDOW CLOSE;").query, ArrivalLog(()))


@pytest.mark.parametrize(("clause", "message"), [
    ("ROWS BETWEEN 1 FOLLOWING AND 1 PRECEDING", "frame starts after it ends"),
    ("ROWS INTERVAL '1' MINUTE PRECEDING", "a ROWS frame counts rows"),
    ("ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW", "UNBOUNDED PRECEDING"),
])
def test_bad_frames_are_refused(clause: str, message: str) -> None:
    with pytest.raises(SqlError, match=message):
        parse_script(f"CREATE TABLE t (ts TIMESTAMP, x BIGINT); SELECT SUM(x) OVER (ORDER BY "
                     f"ts {clause}) FROM t;")


def test_frames_are_plain_values() -> None:
    assert Frame("rows", -1, 0).sql() == "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
    assert Frame().sql() == "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"


# ------------------------------------------------------------------------------ properties

OVER = ("SELECT ts, auction, price, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS "
        "BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS s, lead(price) OVER (PARTITION BY auction "
        "ORDER BY ts) AS nxt, avg(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN "
        "CURRENT ROW AND INTERVAL '3' SECOND FOLLOWING) AS a FROM bids EMIT ON WINDOW CLOSE")


@settings(max_examples=60, deadline=None)
@given(log=arrival_logs())
def test_eowc_results_are_final_and_all_come_out_at_the_close(log: ArrivalLog) -> None:
    """Prefix-closed and sound: at the end of the input, the EOWC output is exactly Q over
    INPUT, so no emitted row's results changed after it was emitted."""
    query = script(OVER).query
    for convention in Convention:
        emitted = Counter(e.row for e in run_eowc(query, log, convention, close=True))
        final = Counter()
        for change in run_update(script(OVER.replace(" EMIT ON WINDOW CLOSE", "")).query, log,
                                 convention):
            final[change.row] += 1 if change.op == "+" else -1
        assert emitted == +final


def test_verify_runs_an_over_window_on_the_reference_and_the_executor() -> None:
    from pathlib import Path

    from click.testing import CliRunner

    from eowc.verify.cli.main import main

    query = str(Path(__file__).resolve().parent.parent / "docs" / "examples" / "over_window.sql")
    for executor in ("reference", "inprocess"):
        done = CliRunner().invoke(main, ["verify", query, "--executor", executor, "--cases", "5"])
        assert done.exit_code == 0, done.output
        assert "every property held (5 cases)" in done.output
