"""Hand-computed results of the reference interpreter: SQL text + a JSON Lines arrival log in,
result rows and their emission epochs out (run_eowc / run_update).

Conventions of this file: the Bid table of Flink's window TVF documentation (seed 004) on
2020-04-15; ``at("08:05")`` is that day's 08:05:00 in microseconds. With no barrier line every
event is its own epoch; with barriers, each barrier ends an epoch. ``W`` after an epoch is
``max(bidtime) - delay`` (SEMANTICS.md §1). With ``close=True`` the windows still open are
emitted in the extra epoch numbered ``len(epochs)``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eowc.semantics.engines.interpreter import Change, LateRow, run_eowc, run_update, snapshots
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log, parse_arrival_log
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.rules.triggers import Convention

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
ALL = list(Convention)
S = 1_000_000
MS = 1_000
MIN = 60 * S
BARRIER = '{"barrier": true}'
DAY = "2020-04-15"


def clock(text: str) -> str:
    """``"08:05"`` -> ``"2020-04-15 08:05:00"``; seconds and fractions are kept if given."""
    return f"{DAY} {text}:00" if len(text) == 5 else f"{DAY} {text}"


def at(text: str) -> int:
    """The instant ``clock(text)`` in microseconds."""
    return parse_timestamp(clock(text))


def bid_source(delay: str = "1' MINUTE") -> str:
    return ("CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR, "
            f"WATERMARK FOR bidtime AS bidtime - INTERVAL '{delay});\n")


def bid(time: str, price: float, item: str) -> str:
    """One Bid event as a JSON line."""
    return json.dumps({"table": "bid", "row": {"bidtime": clock(time), "price": price, "item": item}})


#: Flink's Bid table, in event-time order.
BIDS = [("08:05", 4.0, "C"), ("08:07", 2.0, "A"), ("08:09", 5.0, "D"),
        ("08:11", 3.0, "B"), ("08:13", 1.0, "E"), ("08:17", 6.0, "F")]
BID_LINES = [bid(*b) for b in BIDS]

TUMBLE_SQL = ("SELECT window_start, window_end, SUM(price) AS total FROM TABLE(TUMBLE(TABLE bid, "
              "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end "
              "EMIT ON WINDOW CLOSE")
HOP_SQL = ("SELECT window_start, window_end, SUM(price) AS total FROM TABLE(HOP(TABLE bid, "
           "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) "
           "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")
CUMULATE_SQL = ("SELECT window_start, window_end, SUM(price) AS total FROM TABLE(CUMULATE(TABLE bid, "
                "DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES)) "
                "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")


def run(sql: str, lines: list[str], convention: Convention = RW, close: bool = False,
        ) -> tuple[list[tuple[int, tuple[Any, ...]]], list[LateRow]]:
    """run_eowc over ``lines``: ([(epoch, row)], late rows)."""
    script = parse_script(sql)
    log = parse_arrival_log(lines, script.sources).log
    late: list[LateRow] = []
    out = [(e.epoch, e.row) for e in run_eowc(script.query, log, convention, close, late.append)]
    return out, late


def changes(sql: str, lines: list[str], convention: Convention = RW,
            ) -> tuple[list[tuple[int, str, tuple[Any, ...]]], list[LateRow], int]:
    """run_update over ``lines``: ([(epoch, op, row)], late rows, number of epochs)."""
    script = parse_script(sql)
    log = parse_arrival_log(lines, script.sources).log
    late: list[LateRow] = []
    out = [(c.epoch, c.op, c.row) for c in run_update(script.query, log, convention, late.append)]
    return out, late, len(log.epochs)


def win(start: str, end: str, *values: Any) -> tuple[Any, ...]:
    """A (window_start, window_end, ...) result row."""
    return (at(start), at(end), *values)


# ---------------------------------------------------------------------------------------------
# Flink's Bid examples (seed 004): TUMBLE, HOP, CUMULATE


@pytest.mark.parametrize("convention", ALL)
def test_bid_tumble_10_minutes_with_close(convention: Convention) -> None:
    """Delay 1 min, one bid per epoch: W after epochs 0..5 = 08:04, 08:06, 08:08, 08:10,
    08:12, 08:16. [08:00, 08:10) = 4 + 2 + 5 = 11 closes at W = 08:10 (epoch 3; for Flink
    08:10 >= 08:09:59.999 also first holds there). [08:10, 08:20) = 3 + 1 + 6 = 10 never closes
    (W <= 08:16), so it comes with the close, epoch 6."""
    out, late = run(bid_source() + TUMBLE_SQL, BID_LINES, convention, close=True)
    assert out == [(3, win("08:00", "08:10", 11.0)), (6, win("08:10", "08:20", 10.0))]
    assert late == []


@pytest.mark.parametrize("convention", ALL)
def test_bid_tumble_without_close_shows_only_the_closed_window(convention: Convention) -> None:
    """Seed 001: only closed windows appear. The open [08:10, 08:20) (partial sum 10) must not,
    and the closed [08:00, 08:10) must (emitting a subset is not acceptable)."""
    out, _ = run(bid_source() + TUMBLE_SQL, BID_LINES, convention, close=False)
    assert out == [(3, win("08:00", "08:10", 11.0))]


@pytest.mark.parametrize("convention", ALL)
def test_bid_hop_5_minute_slide_10_minute_size(convention: Convention) -> None:
    """Flink docs: 08:00-08:10 11, 08:05-08:15 15 (4+2+5+3+1), 08:10-08:20 10 (3+1+6),
    08:15-08:25 6. No bid is in [07:55, 08:05) (08:05 is its open end).
    Delay 1 min: W = 08:04, 08:06, 08:08, 08:10, 08:12, 08:16. 08:10 closes at epoch 3,
    08:15 at epoch 5 (W = 08:16); 08:20 and 08:25 at the close (epoch 6), in end order."""
    out, _ = run(bid_source() + HOP_SQL, BID_LINES, convention, close=True)
    assert out == [(3, win("08:00", "08:10", 11.0)), (5, win("08:05", "08:15", 15.0)),
                   (6, win("08:10", "08:20", 10.0)), (6, win("08:15", "08:25", 6.0))]


@pytest.mark.parametrize("convention", ALL)
def test_bid_cumulate_2_minute_step_10_minute_size(convention: Convention) -> None:
    """Flink docs: 08:00-08:06 4, -08:08 6 (4+2), -08:10 11, 08:10-08:12 3, -08:14 4 (3+1),
    -08:16 4, -08:18 10 (4+6), -08:20 10. Delay 1 min: W = 08:04, 08:06, 08:08, 08:10, 08:12,
    08:16, so the ends close at epochs 1 (08:06), 2 (08:08), 3 (08:10), 4 (08:12),
    5 (08:14 and 08:16), and 08:18, 08:20 at the close (epoch 6)."""
    out, _ = run(bid_source() + CUMULATE_SQL, BID_LINES, convention, close=True)
    assert out == [
        (1, win("08:00", "08:06", 4.0)), (2, win("08:00", "08:08", 6.0)),
        (3, win("08:00", "08:10", 11.0)), (4, win("08:10", "08:12", 3.0)),
        (5, win("08:10", "08:14", 4.0)), (5, win("08:10", "08:16", 4.0)),
        (6, win("08:10", "08:18", 10.0)), (6, win("08:10", "08:20", 10.0)),
    ]


@pytest.mark.parametrize("convention", ALL)
def test_bid_windows_under_a_5_minute_delay(convention: Convention) -> None:
    """Delay 5 min: W = 08:00, 08:02, 08:04, 08:06, 08:08, 08:12 after epochs 0..5.
    TUMBLE: [08:00, 08:10) first closes at epoch 5. HOP: only 08:10 closes (epoch 5); 08:15,
    08:20, 08:25 wait for the close. CUMULATE: 08:06 at epoch 3, 08:08 at 4, 08:10 and
    08:10-08:12 at 5, the rest at the close (epoch 6)."""
    source = bid_source("5' MINUTES")
    tumble, _ = run(source + TUMBLE_SQL, BID_LINES, convention, close=True)
    assert tumble == [(5, win("08:00", "08:10", 11.0)), (6, win("08:10", "08:20", 10.0))]
    hop, _ = run(source + HOP_SQL, BID_LINES, convention, close=True)
    assert hop == [(5, win("08:00", "08:10", 11.0)), (6, win("08:05", "08:15", 15.0)),
                   (6, win("08:10", "08:20", 10.0)), (6, win("08:15", "08:25", 6.0))]
    cumulate, _ = run(source + CUMULATE_SQL, BID_LINES, convention, close=True)
    assert cumulate == [
        (3, win("08:00", "08:06", 4.0)), (4, win("08:00", "08:08", 6.0)),
        (5, win("08:00", "08:10", 11.0)), (5, win("08:10", "08:12", 3.0)),
        (6, win("08:10", "08:14", 4.0)), (6, win("08:10", "08:16", 4.0)),
        (6, win("08:10", "08:18", 10.0)), (6, win("08:10", "08:20", 10.0)),
    ]


def test_cumulative_output_after_every_epoch_is_exactly_the_closed_windows() -> None:
    """TUMBLE 2 min, delay 1 min, one bid per epoch. Windows and sums: [08:04, 08:06) 4,
    [08:06, 08:08) 2, [08:08, 08:10) 5, [08:10, 08:12) 3, [08:12, 08:14) 1, [08:16, 08:18) 6.
    W = 08:04, 08:06, 08:08, 08:10, 08:12, 08:16: after epoch e exactly the windows with
    end <= W are out, each once (append-only, no subset, no partial result)."""
    sql = bid_source() + TUMBLE_SQL.replace("'10' MINUTES", "'2' MINUTES")
    out, _ = run(sql, BID_LINES, RW, close=True)
    expected_after = [
        [],
        [win("08:04", "08:06", 4.0)],
        [win("08:04", "08:06", 4.0), win("08:06", "08:08", 2.0)],
        [win("08:04", "08:06", 4.0), win("08:06", "08:08", 2.0), win("08:08", "08:10", 5.0)],
        [win("08:04", "08:06", 4.0), win("08:06", "08:08", 2.0), win("08:08", "08:10", 5.0),
         win("08:10", "08:12", 3.0)],
        [win("08:04", "08:06", 4.0), win("08:06", "08:08", 2.0), win("08:08", "08:10", 5.0),
         win("08:10", "08:12", 3.0), win("08:12", "08:14", 1.0)],
    ]
    for epoch, expected in enumerate(expected_after):
        assert [row for e, row in out if e <= epoch] == expected, epoch
    assert [row for e, row in out if e == 6] == [win("08:16", "08:18", 6.0)]


def test_the_shipped_bids_example() -> None:
    """semantics/examples: epochs {08:05, 08:07} W=08:06, {08:11, 08:09} W=08:10, {08:13}
    W=08:12, {08:08 LATE, 08:17} W=08:16, {08:21} W=08:20. [08:00, 08:10): 4+2+5 = 11, 3 bids,
    closes at epoch 1; the 08:08 bid arrives under W = 08:12 and is late. [08:10, 08:20):
    3+1+6 = 10, 3 bids, closes at epoch 4 (W = 08:20). [08:20, 08:30): 7, 1 bid, at the close."""
    examples = Path(__file__).resolve().parent.parent / "semantics" / "examples"
    script = parse_script((examples / "bids.sql").read_text())
    log = load_arrival_log(str(examples / "bids.jsonl"), script.sources).log
    late: list[LateRow] = []
    out = [(e.epoch, e.row) for e in run_eowc(script.query, log, RW, True, late.append)]
    assert out == [(1, win("08:00", "08:10", 11.0, 3)), (4, win("08:10", "08:20", 10.0, 3)),
                   (5, win("08:20", "08:30", 7.0, 1))]
    assert [(r.epoch, r.event.row, r.watermark_before) for r in late] == [
        (3, (at("08:08"), 9.0, "LATE"), at("08:12"))]


# ---------------------------------------------------------------------------------------------
# Disorder, late rows, and rows exactly on the watermark


@pytest.mark.parametrize("convention", ALL)
def test_out_of_order_within_the_delay_gives_the_in_order_result(convention: Convention) -> None:
    """Delay 5 min, arrival 08:07, 08:05, 08:11, 08:09, 08:17, 08:13: each row is at or above
    the W before it (08:02, 08:02, 08:06, 08:06, 08:12), so none is late and the windows hold
    the same rows. W after epochs: 08:02, 08:02, 08:06, 08:06, 08:12, 08:12, so
    [08:00, 08:10) closes at epoch 4 (in order it closes at epoch 5: W = 08:08, then 08:12)."""
    shuffled = [BID_LINES[i] for i in (1, 0, 3, 2, 5, 4)]
    source = bid_source("5' MINUTE")
    out, late = run(source + TUMBLE_SQL, shuffled, convention, close=True)
    in_order, _ = run(source + TUMBLE_SQL, BID_LINES, convention, close=True)
    assert late == []
    assert out == [(4, win("08:00", "08:10", 11.0)), (6, win("08:10", "08:20", 10.0))]
    assert [row for _, row in out] == [row for _, row in in_order]


@pytest.mark.parametrize("convention", ALL)
def test_rows_later_than_the_delay_are_excluded_and_reported(convention: Convention) -> None:
    """Delay 1 min, arrival 08:05, 08:11 (W = 08:10), 08:07, 08:09, 08:13, 08:17. 08:07 and
    08:09 arrive under W = 08:10: late under every rule (RisingWave 08:07 < 08:10; Spark and
    Flink: their only window [08:00, 08:10) is closed at W = 08:10). [08:00, 08:10) = 4 at
    epoch 1; [08:10, 08:20) = 3 + 1 + 6 = 10 at the close."""
    lines = [BID_LINES[i] for i in (0, 3, 1, 2, 4, 5)]
    out, late = run(bid_source() + TUMBLE_SQL, lines, convention, close=True)
    assert out == [(1, win("08:00", "08:10", 4.0)), (6, win("08:10", "08:20", 10.0))]
    assert [(r.epoch, r.event.row[2], r.watermark_before) for r in late] == [
        (2, "A", at("08:10")), (3, "D", at("08:10"))]
    assert [r.event.line for r in late] == [3, 4]


SORT_SQL = "SELECT item, bidtime FROM bid EMIT ON WINDOW CLOSE"
#: 08:11 (W = 08:10), then X exactly on W = 08:10, then 08:12 (W = 08:11), then 08:13 (W = 08:12).
ON_WATERMARK = [bid("08:11", 1.0, "B"), bid("08:10", 1.0, "X"), bid("08:12", 1.0, "E"),
                bid("08:13", 1.0, "G")]


def test_row_on_the_watermark_is_kept_by_risingwave() -> None:
    """RisingWave: X (08:10) is not late under W = 08:10 (late only if c < W). The EOWC sort
    emits a row once c < W: X at epoch 2 (W = 08:11), B at epoch 3 (W = 08:12), E and G at
    the close (epoch 4)."""
    out, late = run(bid_source() + SORT_SQL, ON_WATERMARK, RW, close=True)
    assert late == []
    assert out == [(2, ("X", at("08:10"))), (3, ("B", at("08:11"))), (4, ("E", at("08:12"))),
                   (4, ("G", at("08:13")))]


def test_row_on_the_watermark_is_dropped_by_spark() -> None:
    """Spark: X (08:10) is late under W = 08:10 (c <= W). A row is complete once c <= W:
    B at epoch 2 (W = 08:11), E at epoch 3 (W = 08:12), G at the close."""
    out, late = run(bid_source() + SORT_SQL, ON_WATERMARK, SPARK, close=True)
    assert [(r.epoch, r.event.row[2]) for r in late] == [(1, "X")]
    assert out == [(2, ("B", at("08:11"))), (3, ("E", at("08:12"))), (4, ("G", at("08:13")))]


def test_row_on_the_watermark_is_dropped_by_flink() -> None:
    """Flink drops rows with ts <= W, like Spark, and emits on the same epochs."""
    out, late = run(bid_source() + SORT_SQL, ON_WATERMARK, FLINK, close=True)
    assert [(r.epoch, r.event.row[2]) for r in late] == [(1, "X")]
    assert out == [(2, ("B", at("08:11"))), (3, ("E", at("08:12"))), (4, ("G", at("08:13")))]


#: Epoch 0: A 08:05. Epoch 1: B 08:10:59.999, so W = 08:09:59.999 = end of [08:00, 08:10) - 1 ms.
#: Epoch 2: X exactly on W, Y 1 ms below W. Epoch 3: C 08:12, so W = 08:11.
WINDOW_EDGE = [bid("08:05", 1.0, "A"), BARRIER, bid("08:10:59.999", 10.0, "B"), BARRIER,
               bid("08:09:59.999", 100.0, "X"), bid("08:09:59.998", 1000.0, "Y"), BARRIER,
               bid("08:12", 10000.0, "C"), BARRIER]
SUM_SQL = TUMBLE_SQL.replace("SUM(price) AS total", "SUM(price) AS total, COUNT(*) AS n")


def test_window_edge_under_risingwave() -> None:
    """[08:00, 08:10) is open at W = 08:09:59.999 (10:00 <= 09:59.999 fails). X (c = W) is
    kept, Y (c < W) is late. The window closes at epoch 3 (W = 08:11): 1 + 100 = 101.
    [08:10, 08:20) = 10 + 10000 at the close (epoch 4)."""
    out, late = run(bid_source() + SUM_SQL, WINDOW_EDGE, RW, close=True)
    assert out == [(3, win("08:00", "08:10", 101.0, 2)), (4, win("08:10", "08:20", 10010.0, 2))]
    assert [r.event.row[2] for r in late] == ["Y"]


def test_window_edge_under_spark() -> None:
    """Spark judges lateness on window.end <= W: [08:00, 08:10) is still open at
    W = 08:09:59.999, so X and Y (both at or below W) still enter it: 1 + 100 + 1000 = 1101
    at epoch 3 (10:00 <= 11:00)."""
    out, late = run(bid_source() + SUM_SQL, WINDOW_EDGE, SPARK, close=True)
    assert out == [(3, win("08:00", "08:10", 1101.0, 3)), (4, win("08:10", "08:20", 10010.0, 2))]
    assert late == []


def test_window_edge_under_flink() -> None:
    """Flink's timer at window_end - 1 ms = 08:09:59.999 fires at W = 08:09:59.999: the window
    is emitted at epoch 1 with A alone, and X and Y arrive for a fired window: late."""
    out, late = run(bid_source() + SUM_SQL, WINDOW_EDGE, FLINK, close=True)
    assert out == [(1, win("08:00", "08:10", 1.0, 1)), (4, win("08:10", "08:20", 10010.0, 2))]
    assert [r.event.row[2] for r in late] == ["X", "Y"]


def test_spark_truncates_the_max_event_time_to_the_millisecond() -> None:
    """Delay 1 min. Epoch 0: A at 08:11:00.0007 gives W = 08:10:00.0007 (RisingWave, Flink) but
    W = 08:10:00.000 under Spark (max truncated to 08:11:00.000). Epoch 1: B at 08:10:00.0003
    is late for the first two (c < W, c <= W), not for Spark (c > 08:10:00.000). Neither row
    is complete before the close (epoch 2), which emits in time order."""
    lines = [bid("08:11:00.0007", 1.0, "A"), bid("08:10:00.0003", 1.0, "B")]
    a, b = ("A", at("08:11:00.0007")), ("B", at("08:10:00.0003"))
    for convention in (RW, FLINK):
        out, late = run(bid_source() + SORT_SQL, lines, convention, close=True)
        assert [r.event.row[2] for r in late] == ["B"], convention
        assert [r.watermark_before for r in late] == [at("08:10:00.0007")]
        assert out == [(2, a)], convention
    out, late = run(bid_source() + SORT_SQL, lines, SPARK, close=True)
    assert late == []
    assert out == [(2, b), (2, a)]


HOP_COUNT_SQL = ("SELECT window_start, window_end, COUNT(*) AS n, SUM(price) AS s "
                 "FROM HOP(bid, bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE) "
                 "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")
#: Delay 2 min. Epoch 0: 08:12 (W = 08:10). Epoch 1: 08:07 (windows [08:00, 08:10) closed,
#: [08:05, 08:15) open) and 08:04 (windows [07:55, 08:05) and [08:00, 08:10), both closed).
HOP_LATE = [bid("08:12", 1.0, "A"), bid("08:07", 10.0, "B"), bid("08:04", 100.0, "C")]


def test_hop_row_late_for_its_first_window_under_risingwave() -> None:
    """RisingWave judges the row: 08:07 < 08:10 and 08:04 < 08:10, both late. The close emits
    the windows of 08:12: [08:05, 08:15) and [08:10, 08:20), 1 bid each."""
    lines = [HOP_LATE[0], BARRIER, *HOP_LATE[1:], BARRIER]
    out, late = run(bid_source("2' MINUTE") + HOP_COUNT_SQL, lines, RW, close=True)
    assert out == [(2, win("08:05", "08:15", 1, 1.0)), (2, win("08:10", "08:20", 1, 1.0))]
    assert [r.event.row[2] for r in late] == ["B", "C"]


@pytest.mark.parametrize("convention", [SPARK, FLINK])
def test_hop_row_late_for_its_first_window_still_counts_in_a_later_one(
        convention: Convention) -> None:
    """Spark (window.end <= W) and Flink (W >= end - 1 ms) refuse 08:07 only for the closed
    [08:00, 08:10); it still enters [08:05, 08:15): 1 + 10 = 11 over 2 bids. [08:00, 08:10)
    never appears (it closed empty). 08:04 has no open window: late."""
    lines = [HOP_LATE[0], BARRIER, *HOP_LATE[1:], BARRIER]
    out, late = run(bid_source("2' MINUTE") + HOP_COUNT_SQL, lines, convention, close=True)
    assert out == [(2, win("08:05", "08:15", 2, 11.0)), (2, win("08:10", "08:20", 1, 1.0))]
    assert [(r.epoch, r.event.row[2]) for r in late] == [(1, "C")]


def test_hop_window_level_check_differs_between_spark_and_flink() -> None:
    """Delay 2 min. Epoch 0: 08:16:59.999 gives W = 08:14:59.999. Epoch 1: 08:09 belongs to
    [08:00, 08:10) (closed for both) and [08:05, 08:15): Spark keeps it there (08:15 > W),
    Flink's timer at 08:14:59.999 has fired, so the row is late."""
    lines = [bid("08:16:59.999", 1.0, "A"), bid("08:09", 10.0, "B")]
    spark, spark_late = run(bid_source("2' MINUTE") + HOP_COUNT_SQL, lines, SPARK, close=True)
    flink, flink_late = run(bid_source("2' MINUTE") + HOP_COUNT_SQL, lines, FLINK, close=True)
    assert spark_late == []
    assert spark == [(2, win("08:05", "08:15", 1, 10.0)), (2, win("08:10", "08:20", 1, 1.0)),
                     (2, win("08:15", "08:25", 1, 1.0))]
    assert [r.event.row[2] for r in flink_late] == ["B"]
    # Flink: [08:10, 08:20) and [08:15, 08:25) hold A; none closes before the close.
    assert flink == [(2, win("08:10", "08:20", 1, 1.0)), (2, win("08:15", "08:25", 1, 1.0))]


#: Delay 1 min. Epoch 0: A 08:05 (W = 08:04). Epoch 1: B 08:07 (W = 08:06): [08:00, 08:06) = 4
#: closes. Epoch 2: C 08:05:30 belongs to [08:00, 08:06) (closed), [08:00, 08:08), [08:00, 08:10).
CUMULATE_LATE = [bid("08:05", 4.0, "A"), bid("08:07", 2.0, "B"), bid("08:05:30", 100.0, "C")]


@pytest.mark.parametrize(("convention", "later_sum", "late_items"), [
    (RW, 6.0, ["C"]),        # 08:05:30 < W = 08:06: the row is late
    (SPARK, 106.0, []),      # refused only by the closed [08:00, 08:06): 4 + 2 + 100 in the others
    (FLINK, 106.0, []),      # Flink: the slice fired, but later windows of it have not
])
def test_cumulate_row_late_for_its_first_step(convention: Convention, later_sum: float,
                                              late_items: list[str]) -> None:
    """The already emitted [08:00, 08:06) = 4 is never revised; the later windows of the same
    cumulate window take C under the per-window conventions. The close (epoch 3) emits
    [08:00, 08:08) and [08:00, 08:10)."""
    out, late = run(bid_source() + CUMULATE_SQL, CUMULATE_LATE, convention, close=True)
    assert out == [(1, win("08:00", "08:06", 4.0)), (3, win("08:00", "08:08", later_sum)),
                   (3, win("08:00", "08:10", later_sum))]
    assert [r.event.row[2] for r in late] == late_items


# ---------------------------------------------------------------------------------------------
# Empty input, empty epochs, window_time


@pytest.mark.parametrize("convention", ALL)
def test_empty_input(convention: Convention) -> None:
    for close in (False, True):
        assert run(bid_source() + TUMBLE_SQL, [], convention, close) == ([], [])
        assert run(bid_source() + SORT_SQL, [], convention, close) == ([], [])
    assert changes(bid_source() + TUMBLE_SQL.replace(" EMIT ON WINDOW CLOSE", ""), [],
                   convention) == ([], [], 0)


def test_epochs_with_no_rows_keep_the_watermark_and_are_counted() -> None:
    """Epochs: {08:05} W=08:04, {} W=08:04, {08:11} W=08:10, {}: four epochs. [08:00, 08:10)
    = 4 closes at epoch 2; [08:10, 08:20) = 3 comes with the close, numbered 4."""
    lines = [BID_LINES[0], BARRIER, BARRIER, BID_LINES[3], BARRIER, BARRIER]
    out, _ = run(bid_source() + TUMBLE_SQL, lines, RW, close=True)
    assert out == [(2, win("08:00", "08:10", 4.0)), (4, win("08:10", "08:20", 3.0))]


def test_window_time_is_window_end_minus_one_millisecond() -> None:
    """GROUP BY window_time alone: [08:00, 08:10) has window_time 08:09:59.999 and closes at
    epoch 3 (W = 08:10) like a window_end key would."""
    sql = bid_source() + (
        "SELECT window_start, window_end, window_time, window_end - window_start AS width, "
        "COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) "
        "GROUP BY window_start, window_end, window_time EMIT ON WINDOW CLOSE")
    out, _ = run(sql, BID_LINES, FLINK)
    assert out == [(3, win("08:00", "08:10", at("08:09:59.999"), 10 * MIN, 3))]
    only_time = bid_source() + (
        "SELECT window_time, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), "
        "INTERVAL '10' MINUTES)) GROUP BY window_time EMIT ON WINDOW CLOSE")
    out, _ = run(only_time, BID_LINES, RW, close=True)
    assert out == [(3, (at("08:09:59.999"), 3)), (6, (at("08:19:59.999"), 3))]


def test_group_by_window_start_only_with_an_offset() -> None:
    """TUMBLE 10 min with offset 3 min: windows [07:53, 08:03), [08:03, 08:13), [08:13, 08:23).
    Bids: 08:05 08:07 08:09 08:11 -> [08:03, 08:13) max 5; 08:13 08:17 -> [08:13, 08:23) max 6.
    Keyed by window_start alone, the first closes when W >= 08:13 (the 08:17 bid, epoch 5:
    W = 08:16)."""
    sql = bid_source() + (
        "SELECT window_start, MAX(price) AS m FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE, "
        "INTERVAL '3' MINUTE) GROUP BY window_start EMIT ON WINDOW CLOSE")
    out, _ = run(sql, BID_LINES, RW, close=True)
    assert out == [(5, (at("08:03"), 5.0)), (6, (at("08:13"), 6.0))]


# ---------------------------------------------------------------------------------------------
# Aggregates

AGG_SOURCE = ("CREATE TABLE m (id BIGINT PRIMARY KEY, x BIGINT, tag VARCHAR, ts TIMESTAMP, "
              "WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);\n")


def m(id_: int, x: int | None, tag: str, second: float) -> str:
    time = f"{DAY} 00:00:{second:09.6f}" if second % 1 else f"{DAY} 00:00:{int(second):02d}"
    return json.dumps({"table": "m", "row": {"id": id_, "x": x, "tag": tag, "ts": time}})


#: One epoch, arrival order deliberately not the event-time/primary-key order. Times (s):
#: id 6 and id 1 tie at 1 s (first_value: id 1 wins), id 5 and id 4 tie at 5 s (last_value:
#: id 5 wins). x values 3, 1, NULL, 4, 1, 5.
AGG_ROWS = [m(6, 5, "f", 1), m(5, 1, "e", 5), m(3, None, "c", 3), m(1, 3, "a", 1), m(4, 4, "d", 5),
            m(2, 1, "b", 2), BARRIER]


def test_every_aggregate_over_one_window() -> None:
    """x (non-NULL) = 5, 1, 3, 4, 1 sorted [1, 1, 3, 4, 5]:
    count(*) 6; count(x) 5 (NULL ignored); count(DISTINCT x) 4 {1, 3, 4, 5}; sum 14;
    sum(DISTINCT) 13; min 1; max 5; avg 14 / 5 = 2.8; avg(DISTINCT) 13 / 4 = 3.25;
    median = middle of 5 = 3.0; percentile_cont(0.25): position 0.25 * 4 = 1 -> 1.0;
    percentile_cont(0.9): position 3.6 -> 4 + 0.6 * (5 - 4) = 4.6;
    first_value(tag): earliest ts = 1 s, ids 1 and 6 tie, primary key 1 -> 'a';
    last_value(tag): latest ts = 5 s, ids 4 and 5 tie, primary key 5 -> 'e'."""
    sql = AGG_SOURCE + (
        "SELECT window_start, count(*) AS n, count(x) AS nx, count(DISTINCT x) AS dx, "
        "sum(x) AS s, sum(DISTINCT x) AS sd, min(x) AS lo, max(x) AS hi, avg(x) AS a, "
        "avg(DISTINCT x) AS ad, median(x) AS med, "
        "percentile_cont(0.25) WITHIN GROUP (ORDER BY x) AS p25, "
        "percentile_cont(0.9) WITHIN GROUP (ORDER BY x) AS p90, "
        "first_value(tag) AS f, last_value(tag) AS l "
        "FROM TUMBLE(m, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE")
    out, _ = run(sql, AGG_ROWS, RW, close=True)
    assert len(out) == 1
    epoch, row = out[0]
    assert epoch == 1
    assert row[0] == parse_timestamp(f"{DAY} 00:00:00")
    assert row[1:11] == (6, 5, 4, 14, 13, 1, 5, 2.8, 3.25, 3.0)
    assert row[11] == pytest.approx(1.0)
    assert row[12] == pytest.approx(4.6)
    assert row[13:] == ("a", "e")


def test_median_distinct_takes_the_median_of_the_distinct_values() -> None:
    """x = 5, 1, 3, 4, 1: median(x) = 3.0 (middle of [1, 1, 3, 4, 5]); median(DISTINCT x) is
    the middle of [1, 3, 4, 5] = (3 + 4) / 2 = 3.5."""
    sql = AGG_SOURCE + ("SELECT median(x) AS med, median(DISTINCT x) AS dmed "
                        "FROM TUMBLE(m, ts, INTERVAL '10' SECOND) GROUP BY window_start "
                        "EMIT ON WINDOW CLOSE")
    out, _ = run(sql, AGG_ROWS, RW, close=True)
    assert out == [(1, (3.0, 3.5))]


def test_first_and_last_value_with_an_explicit_order_by() -> None:
    """first_value(tag ORDER BY x) over the non-NULL rows: smallest x = 1 (ids 2 and 5 tie on
    x; primary key 2 first) -> 'b'; last_value(tag ORDER BY x): largest x = 5 (id 6) -> 'f'."""
    sql = AGG_SOURCE + (
        "SELECT window_start, first_value(tag ORDER BY x) AS fx, last_value(tag ORDER BY x) AS lx "
        "FROM TUMBLE(m, ts, INTERVAL '10' SECOND) WHERE x IS NOT NULL GROUP BY window_start "
        "EMIT ON WINDOW CLOSE")
    out, _ = run(sql, AGG_ROWS, RW, close=True)
    assert out == [(1, (parse_timestamp(f"{DAY} 00:00:00"), "b", "f"))]


def test_first_and_last_value_ties_without_primary_key_use_the_whole_row() -> None:
    """No primary key: rows (ts, x, tag) tie on ts = 1 s; the whole row orders them:
    (1 s, 2, 'z') < (1 s, 7, 'b'), so first_value(tag) = 'z' and last_value(tag) = 'b',
    whatever the arrival order."""
    source = ("CREATE SOURCE n (ts TIMESTAMP, x BIGINT, tag VARCHAR, "
              "WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);\n")
    sql = source + ("SELECT window_start, first_value(tag) AS f, last_value(tag) AS l "
                    "FROM TUMBLE(n, ts, INTERVAL '10' SECOND) GROUP BY window_start "
                    "EMIT ON WINDOW CLOSE")

    def row(x: int, tag: str) -> str:
        return json.dumps({"table": "n", "row": {"ts": f"{DAY} 00:00:01", "x": x, "tag": tag}})
    for lines in ([row(7, "b"), row(2, "z"), BARRIER], [row(2, "z"), row(7, "b"), BARRIER]):
        out, _ = run(sql, lines, RW, close=True)
        assert out == [(1, (parse_timestamp(f"{DAY} 00:00:00"), "z", "b"))]


def test_first_and_last_value_ties_on_time_and_primary_key_use_the_whole_row() -> None:
    """Two rows share ts (1 s) and the primary key (id 1): the whole aggregate-input row
    (id, x, tag, ts, ...) decides: (1, 2, 'p', ...) < (1, 5, 'q', ...), so first_value = 'p'
    and last_value = 'q', in either arrival order."""
    sql = AGG_SOURCE + ("SELECT window_start, first_value(tag) AS f, last_value(tag) AS l "
                        "FROM TUMBLE(m, ts, INTERVAL '10' SECOND) GROUP BY window_start "
                        "EMIT ON WINDOW CLOSE")
    rows = [m(1, 5, "q", 1), m(1, 2, "p", 1)]
    for lines in (rows + [BARRIER], rows[::-1] + [BARRIER]):
        out, _ = run(sql, lines, RW, close=True)
        assert out == [(1, (parse_timestamp(f"{DAY} 00:00:00"), "p", "q"))]


def test_aggregates_over_only_nulls() -> None:
    """A window whose x values are all NULL: count(*) 2, count(x) 0, count(DISTINCT x) 0, and
    sum, min, max, avg, median, percentile_cont all NULL."""
    sql = AGG_SOURCE + (
        "SELECT window_start, count(*), count(x), count(DISTINCT x), sum(x), min(x), max(x), "
        "avg(x), median(x), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) "
        "FROM TUMBLE(m, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE")
    out, _ = run(sql, [m(1, None, "a", 1), m(2, None, "b", 2), BARRIER], RW, close=True)
    assert out == [(1, (parse_timestamp(f"{DAY} 00:00:00"), 2, 0, 0, None, None, None, None, None,
                        None))]


def test_having_filters_groups_after_aggregation() -> None:
    """Per window and item, HAVING sum(price) > 3: [08:00, 08:10) C 4, A 2, D 5 -> C, D;
    [08:10, 08:20) B 3, E 1, F 6 -> F. Rows failing HAVING are never emitted."""
    sql = bid_source() + (
        "SELECT window_start, item, SUM(price) AS s FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE) "
        "GROUP BY window_start, item HAVING SUM(price) > 3 EMIT ON WINDOW CLOSE")
    out, _ = run(sql, BID_LINES, RW, close=True)
    assert sorted(out) == [(3, (at("08:00"), "C", 4.0)), (3, (at("08:00"), "D", 5.0)),
                           (6, (at("08:10"), "F", 6.0))]


def test_where_filter_before_windowing() -> None:
    """WHERE price > 2 AND item <> 'D' keeps C 4 (08:05), B 3 (08:11), F 6 (08:17):
    [08:00, 08:10) = 4, [08:10, 08:20) = 3 + 6 = 9. A filtered row still moves the watermark
    (it is part of the source): [08:00, 08:10) closes at epoch 3 (W = 08:10)."""
    sql = TUMBLE_SQL.replace("GROUP BY", "WHERE price > 2 AND item <> 'D' GROUP BY")
    out, _ = run(bid_source() + sql, BID_LINES, RW, close=True)
    assert out == [(3, win("08:00", "08:10", 4.0)), (6, win("08:10", "08:20", 9.0))]


def test_projection_with_arithmetic_case_cast_date_trunc_extract_and_intervals() -> None:
    """EOWC sort with computed columns. Bid A (08:07, 2.25) is complete once Z (08:30) moves W
    to 08:29 (epoch 1); Z itself is not complete without the close.
    price * 2 + 1 = 5.5; CASE price >= 4 -> 'low'; CAST(2.25 AS BIGINT) = 2;
    date_trunc('hour') = 08:00; extract(minute) = 7; bidtime + 90 s = 08:08:30;
    bidtime - 1 h = 07:07; 7 / 2 = 3 and -7 / 2 = -3 (integer division truncates toward zero);
    7 % 3 = 1; 'x' || item = 'xA'."""
    sql = bid_source() + (
        "SELECT item, bidtime, price * 2 + 1 AS p, "
        "CASE WHEN price >= 4 THEN 'high' ELSE 'low' END AS lvl, CAST(price AS BIGINT) AS ip, "
        "date_trunc('hour', bidtime) AS h, extract(minute FROM bidtime) AS mi, "
        "bidtime + INTERVAL '90' SECOND AS later, bidtime - INTERVAL '1' HOUR AS earlier, "
        "7 / 2 AS q, -7 / 2 AS nq, 7 % 3 AS r, 'x' || item AS tagged FROM bid EMIT ON WINDOW CLOSE")
    out, _ = run(sql, [bid("08:07", 2.25, "A"), bid("08:30", 4.5, "Z")], RW, close=False)
    assert out == [(1, ("A", at("08:07"), 5.5, "low", 2, at("08:00"), 7, at("08:08:30"),
                        at("07:07"), 3, -3, 1, "xA"))]


def test_interval_arithmetic_on_window_columns() -> None:
    """window_end - window_start = 10 min as an interval (600 000 000 us); window_start +
    INTERVAL '5' MINUTE = the window's midpoint."""
    sql = bid_source() + (
        "SELECT window_end, window_end - window_start AS width, "
        "window_start + INTERVAL '5' MINUTE AS mid, COUNT(*) AS n "
        "FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE) GROUP BY window_start, window_end "
        "EMIT ON WINDOW CLOSE")
    out, _ = run(sql, BID_LINES, RW)
    assert out == [(3, (at("08:10"), 10 * MIN, at("08:05"), 3))]


# ---------------------------------------------------------------------------------------------
# EOWC sort and GROUP BY the watermark column


def test_eowc_sort_emits_in_event_time_order_once_complete() -> None:
    """Delay 1 min, barriers. Epoch 0: 08:09, 08:05, 08:07 (W = 08:08): 08:05 and 08:07 are
    complete (c < W) and come out in time order, 08:09 waits. Epoch 1: 08:11 (W = 08:10):
    08:09. Epoch 2: 08:10 arrives under W = 08:10 (kept: not c < W) and W stays 08:10, so
    nothing is complete. The close (epoch 3) emits 08:10 then 08:11."""
    lines = [bid("08:09", 1.0, "D"), bid("08:05", 1.0, "C"), bid("08:07", 1.0, "A"), BARRIER,
             bid("08:11", 1.0, "B"), BARRIER, bid("08:10", 1.0, "X"), BARRIER]
    out, late = run(bid_source() + SORT_SQL, lines, RW, close=True)
    assert late == []
    assert out == [(0, ("C", at("08:05"))), (0, ("A", at("08:07"))), (1, ("D", at("08:09"))),
                   (3, ("X", at("08:10"))), (3, ("B", at("08:11")))]


def test_eowc_sort_ties_without_primary_key_follow_the_whole_row() -> None:
    """Three bids at 08:05 in one epoch, arriving Z, A, M: emitted A, M, Z (whole-row order on
    (item, bidtime) after the time), under either arrival order."""
    rows = [bid("08:05", 1.0, "Z"), bid("08:05", 1.0, "A"), bid("08:05", 1.0, "M")]
    for lines in (rows + [BARRIER], rows[::-1] + [BARRIER]):
        out, _ = run(bid_source() + SORT_SQL, lines, RW, close=True)
        assert out == [(1, ("A", at("08:05"))), (1, ("M", at("08:05"))), (1, ("Z", at("08:05")))]


def test_eowc_sort_ties_follow_the_declared_primary_key() -> None:
    """SEMANTICS.md §2: ties on the ORDER BY column are broken by the declared primary key,
    else the whole row. Rows (id 2, 'a') and (id 1, 'b') share ts: id 1 comes first, even
    though the output row ('a', 2, ts) would sort before ('b', 1, ts)."""
    sql = ("CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR, ts TIMESTAMP, "
           "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n"
           "SELECT v, id, ts FROM t EMIT ON WINDOW CLOSE")
    lines = [json.dumps({"table": "t", "row": {"id": 2, "v": "a", "ts": f"{DAY} 00:00:01"}}),
             json.dumps({"table": "t", "row": {"id": 1, "v": "b", "ts": f"{DAY} 00:00:01"}}),
             BARRIER]
    out, _ = run(sql, lines, RW, close=True)
    ts = parse_timestamp(f"{DAY} 00:00:01")
    assert out == [(1, ("b", 1, ts)), (1, ("a", 2, ts))]


TVF_SORT_SQL = ("SELECT item, bidtime, window_start FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), "
                "INTERVAL '10' MINUTES)) EMIT ON WINDOW CLOSE")


@pytest.mark.parametrize("convention", [SPARK, FLINK])
def test_eowc_sort_over_a_window_tvf_checks_lateness_per_row(convention: Convention) -> None:
    """The window-level late check belongs to window *aggregation*. A plain SELECT over a TVF
    is an EOWC sort on bidtime. Epoch 0: 08:05, 08:10:45, 08:12 (W = 08:11) emits 08:05 and
    08:10:45. Epoch 1: 08:10:30 arrives. Its window [08:10, 08:20) is still open, but
    08:10:30 <= W, so it is late per row; admitting it would emit it after 08:10:45."""
    lines = [bid("08:05", 1.0, "C"), bid("08:10:45", 1.0, "D"), bid("08:12", 1.0, "B"), BARRIER,
             bid("08:10:30", 1.0, "L"), BARRIER]
    out, late = run(bid_source() + TVF_SORT_SQL, lines, convention, close=True)
    assert [r.event.row[2] for r in late] == ["L"]
    assert [(epoch, row[0]) for epoch, row in out] == [(0, "C"), (0, "D"), (2, "B")]


def test_eowc_sort_over_a_window_tvf_keeps_a_row_of_a_closed_flink_window() -> None:
    """No aggregate, so no window refuses a row. Flink, delay 1 min. Epoch 0: 08:10:59.9992
    (W = 08:09:59.9992). Epoch 1: 08:09:59.9995 is not late (> W), though Flink counts its
    window [08:00, 08:10) as closed (W >= 08:10 - 1 ms). It is kept: the close emits it, then
    08:10:59.9992, in time order."""
    lines = [bid("08:10:59.9992", 1.0, "B"), BARRIER, bid("08:09:59.9995", 1.0, "L"), BARRIER]
    out, late = run(bid_source() + TVF_SORT_SQL, lines, FLINK, close=True)
    assert late == []
    assert [(epoch, row[0]) for epoch, row in out] == [(2, "L"), (2, "B")]


GROUP_TS_SQL = "SELECT bidtime, COUNT(*) AS n, SUM(price) AS s FROM bid GROUP BY bidtime EMIT ON WINDOW CLOSE"
#: Delay 1 min. Epoch 0: two bids at 08:05 (W = 08:04). Epoch 1: 08:07 (W = 08:06).
#: Epoch 2: 08:08 (W = 08:07).
GROUP_TS_LINES = [bid("08:05", 1.0, "A"), bid("08:05", 2.0, "B"), BARRIER, bid("08:07", 4.0, "C"),
                  BARRIER, bid("08:08", 8.0, "D"), BARRIER]


@pytest.mark.parametrize(("convention", "expected"), [
    # RisingWave: group v is complete once v < W: 08:05 at epoch 1 (W = 08:06); 08:07 is not
    # complete at W = 08:07, so it waits for the close (epoch 3) with 08:08.
    (RW, [(1, (at("08:05"), 2, 3.0)), (3, (at("08:07"), 1, 4.0)), (3, (at("08:08"), 1, 8.0))]),
    # Spark and Flink: complete once v <= W: 08:07 is emitted at epoch 2 (W = 08:07).
    (SPARK, [(1, (at("08:05"), 2, 3.0)), (2, (at("08:07"), 1, 4.0)), (3, (at("08:08"), 1, 8.0))]),
    (FLINK, [(1, (at("08:05"), 2, 3.0)), (2, (at("08:07"), 1, 4.0)), (3, (at("08:08"), 1, 8.0))]),
])
def test_group_by_the_raw_watermark_column(convention: Convention, expected: list) -> None:
    out, _ = run(bid_source() + GROUP_TS_SQL, GROUP_TS_LINES, convention, close=True)
    assert out == expected


# ---------------------------------------------------------------------------------------------
# Emit on update: changelogs

UPDATE_SQL = ("SELECT window_start, SUM(price) AS s FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE) "
              "GROUP BY window_start")


def test_update_mode_changelog_per_epoch() -> None:
    """One bid per epoch, delay 1 min. Each epoch retracts the old sum of the touched window and
    inserts the new one: 4 | -4 +6 | -6 +11 | +3 (new window) | -3 +4 | -4 +10."""
    out, late, epochs = changes(bid_source() + UPDATE_SQL, BID_LINES)
    w0, w1 = at("08:00"), at("08:10")
    assert late == []
    assert out == [
        (0, "+", (w0, 4.0)),
        (1, "-", (w0, 4.0)), (1, "+", (w0, 6.0)),
        (2, "-", (w0, 6.0)), (2, "+", (w0, 11.0)),
        (3, "+", (w1, 3.0)),
        (4, "-", (w1, 3.0)), (4, "+", (w1, 4.0)),
        (5, "-", (w1, 4.0)), (5, "+", (w1, 10.0)),
    ]
    rebuilt = snapshots([Change(*c) for c in out], epochs)
    assert rebuilt[2] == [(w0, 11.0)]
    assert rebuilt[-1] == [(w0, 11.0), (w1, 10.0)]  # a closed window stays in Q(INPUT)


def test_update_mode_excludes_late_rows() -> None:
    """Arrival 08:05, 08:11 (W = 08:10), 08:07 (late), 08:13: the late bid changes nothing."""
    lines = [BID_LINES[i] for i in (0, 3, 1, 4)]
    out, late, _ = changes(bid_source() + UPDATE_SQL, lines)
    w0, w1 = at("08:00"), at("08:10")
    assert out == [(0, "+", (w0, 4.0)), (1, "+", (w1, 3.0)),
                   (3, "-", (w1, 3.0)), (3, "+", (w1, 4.0))]
    assert [(r.epoch, r.event.row[2]) for r in late] == [(2, "A")]


def test_update_mode_global_aggregate() -> None:
    """SELECT count(*), sum(price) FROM bid, no GROUP BY: the one result row exists from the
    first epoch, even an empty one (count 0, sum NULL), and is replaced as rows arrive."""
    sql = bid_source() + "SELECT COUNT(*) AS n, SUM(price) AS s FROM bid"
    lines = [BARRIER, BID_LINES[0], BARRIER, BID_LINES[1], BARRIER, BARRIER]
    out, _, epochs = changes(sql, lines)
    assert out == [(0, "+", (0, None)),
                   (1, "-", (0, None)), (1, "+", (1, 4.0)),
                   (2, "-", (1, 4.0)), (2, "+", (2, 6.0))]
    assert snapshots([Change(*c) for c in out], epochs) == [[(0, None)], [(1, 4.0)], [(2, 6.0)],
                                                          [(2, 6.0)]]


def test_update_mode_plain_select_inserts_each_admitted_row() -> None:
    """No aggregate: each non-late row is inserted in its epoch, never retracted."""
    sql = bid_source() + "SELECT item, price FROM bid WHERE price > 2"
    out, _, _ = changes(sql, BID_LINES)
    assert out == [(0, "+", ("C", 4.0)), (2, "+", ("D", 5.0)), (3, "+", ("B", 3.0)),
                   (5, "+", ("F", 6.0))]


def test_update_and_eowc_agree_once_everything_is_closed() -> None:
    """Definition 3: the EOWC output eventually equals Q(INPUT). After the close, the EOWC rows
    of the Bid HOP query equal the final update snapshot."""
    out, _ = run(bid_source() + HOP_SQL, BID_LINES, RW, close=True)
    update_sql = bid_source() + HOP_SQL.replace(" EMIT ON WINDOW CLOSE", "")
    log, _, epochs = changes(update_sql, BID_LINES)
    final = snapshots([Change(*c) for c in log], epochs)[-1]
    assert Counter(row for _, row in out) == Counter(final)
