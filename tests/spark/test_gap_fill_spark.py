"""RisingWave's GAP_FILL on real Spark (``eowc run --engine spark``): the executors of
executors/gap_fill.py (EowcGapFill, GapFillChangelog) inside ``transformWithStateInPandas``,
a shard per PARTITION_BY key, their rows and timers in Spark's RocksDB state store.

One hand-made log of two devices, INTERPOLATE of an integer reading (floor division), LOCF of
a label, a gap that is not a multiple of the interval, rows out of order within the 3-minute
delay, a row on the watermark, a late row and an empty epoch. Under EMIT ON WINDOW CLOSE the
query is stopped after two epochs and restarted on its checkpoint: the rows are the
hand-computed ones, in the reference's epochs and order. On update: the reference's
changelog, retractions included (a row landing in a gap replaces its filled rows).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from eowc.executors.spark.runner import collect_run, start_query
from eowc.semantics.engines.interpreter import LateRow, run_eowc, run_update
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.rules.triggers import Convention

RW = Convention.RISINGWAVE
SOURCE = ("CREATE SOURCE sensors (device BIGINT, ts TIMESTAMP, reading BIGINT, label VARCHAR, "
          "WATERMARK FOR ts AS ts - INTERVAL '3' MINUTE);\n")
GAP_FILL = ("SELECT device, ts, reading, label FROM GAP_FILL(sensors, ts, INTERVAL '1' MINUTE, "
            "INTERPOLATE(reading), LOCF(label), PARTITION_BY(device))")
#: (device, clock after 10:00 as "MM:SS", reading, label) per epoch; W after each epoch
#: (delay 3 minutes): 10:03, 10:06, 10:09, 10:09.
EPOCHS = [[(1, "00:00", 0, "a"), (1, "03:00", 30, "b"), (2, "01:00", 100, "x"),
           (1, "06:00", 0, "d")],
          [(1, "02:00", 20, "c"),                         # late: 10:02 < W = 10:03
           (2, "04:00", 70, "y"), (1, "09:00", 90, "e")],
          [(1, "08:00", 8, "f"),                          # not late (W = 10:06): in a gap
           (2, "06:30", 40, "z"), (1, "12:00", 120, "g")],
          []]


def clock(mm_ss: str) -> int:
    return parse_timestamp(f"2024-05-21 10:{mm_ss}")


#: EOWC by hand (RisingWave: a row and the gap before it leave once ts < W; 10:03 is on the
#: watermark after epoch 0 and waits). Epoch 1: device 1's 10:03 brings 10:01, 10:02 (0 -> 30
#: in 3 steps of 10, label a carried); device 2's 10:04 brings 10:02, 10:03 (100 -> 70:
#: floor(-30 / 3) = -10). Epoch 2: device 1's 10:06 after 10:04, 10:05 (30 -> 0: 20, 10) and
#: 10:08 after 10:07 (0 -> 8 in 2 steps of 4); device 2's 10:06:30 after 10:05, 10:06 (70 ->
#: 40: 60, 50; the last step is 30 s). Epoch 4 (the close): 10:09, then 10:10, 10:11 (90 ->
#: 120: 100, 110) and 10:12.
EXPECTED_EOWC = {
    0: {(1, "00:00", 0, "a"), (2, "01:00", 100, "x")},
    1: {(1, "01:00", 10, "a"), (1, "02:00", 20, "a"), (1, "03:00", 30, "b"),
        (2, "02:00", 90, "x"), (2, "03:00", 80, "x"), (2, "04:00", 70, "y")},
    2: {(1, "04:00", 20, "b"), (1, "05:00", 10, "b"), (1, "06:00", 0, "d"),
        (1, "07:00", 4, "d"), (1, "08:00", 8, "f"),
        (2, "05:00", 60, "y"), (2, "06:00", 50, "y"), (2, "06:30", 40, "z")},
    4: {(1, "09:00", 90, "e"), (1, "10:00", 100, "e"), (1, "11:00", 110, "e"),
        (1, "12:00", 120, "g")},
}


def write_case(directory: Path, emit_on_window_close: bool) -> tuple[str, str]:
    query = directory / "gap_fill.sql"
    query.write_text(SOURCE + GAP_FILL + (" EMIT ON WINDOW CLOSE;" if emit_on_window_close else ";"),
                     encoding="utf-8")
    events = directory / "sensors.jsonl"
    lines = []
    for epoch in EPOCHS:
        for device, mm_ss, reading, label in epoch:
            lines.append(json.dumps({"table": "sensors", "row": {
                "device": device, "ts": f"2024-05-21 10:{mm_ss}", "reading": reading,
                "label": label}}))
        lines.append('{"barrier": true}')
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(query), str(events)


def log_of(query: str, events: str) -> ArrivalLog:
    return load_arrival_log(events, parse_script(Path(query).read_text(encoding="utf-8")).sources).log


def test_eowc_gap_fill_on_spark_stopped_and_restarted(spark, tmp_path: Path) -> None:
    """Stopped after epoch 1, restarted on the checkpoint: the hand-computed rows, in the
    reference's epochs and order; the late row reported once."""
    query, events = write_case(tmp_path, emit_on_window_close=True)
    log = log_of(query, events)
    late: list[LateRow] = []
    expected = list(run_eowc(parse_script(Path(query).read_text()).query, log, RW, close=True,
                             late=late.append))
    by_hand = {epoch: {(d, clock(t), r, label) for d, t, r, label in rows}
               for epoch, rows in EXPECTED_EOWC.items()}
    assert {e: {x.row for x in expected if x.epoch == e} for e in by_hand} == by_hand
    assert len(expected) == sum(map(len, by_hand.values()))
    start_query(spark, query, events, RW, tmp_path / "run", max_epochs=2)
    first = collect_run(log, tmp_path / "run")
    assert first.emissions == [e for e in expected if e.epoch < 2]
    start_query(spark, query, events, RW, tmp_path / "run", close=True)
    run = collect_run(log, tmp_path / "run")
    assert run.emissions == expected
    assert [r.event.row for r in run.late] == [r.event.row for r in late] == [
        (1, clock("02:00"), 20, "c")]


def test_emit_on_update_gap_fill_on_spark(spark, tmp_path: Path) -> None:
    """Without EMIT ON WINDOW CLOSE: the reference's changelog, epoch by epoch. Epoch 2's
    10:08 lands in device 1's gap 10:06..10:09 of epoch 1, which retracts the filled 10:07
    and 10:08 (interpolated 0 -> 90: 30, 60) and inserts 10:07 (4) and the real 10:08 (8)."""
    query, events = write_case(tmp_path, emit_on_window_close=False)
    log = log_of(query, events)
    late: list[LateRow] = []
    expected = list(run_update(parse_script(Path(query).read_text()).query, log, RW,
                               late=late.append))
    retracted = {(c.row[1], c.row[2]) for c in expected if c.op == "-" and c.row[0] == 1}
    assert {(clock("07:00"), 30), (clock("08:00"), 60)} <= retracted
    start_query(spark, query, events, RW, tmp_path / "run")
    run = collect_run(log, tmp_path / "run")
    assert run.changes == expected and run.emissions == []
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    assert len(late) == 1


BIDS = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
COUNTS = ("CREATE VIEW counts AS SELECT window_end AS ts, count(*) AS n FROM TUMBLE(bids, ts, "
          "INTERVAL '10' SECOND) GROUP BY window_end;\n"
          "SELECT * FROM GAP_FILL(counts, ts, INTERVAL '10' SECOND, LOCF(n)) EMIT ON WINDOW CLOSE;")


def test_gap_fill_over_a_window_aggregate_on_spark(spark, tmp_path: Path) -> None:
    """The composed executor (the aggregate and the GAP_FILL each a stage, in map states of
    one shard) on Spark. Bids at 1 s, 2 s (epoch 0), 41 s (epoch 1), 75 s (epoch 2): windows
    ending at 10 s (2 bids), 50 s (1) and 80 s (1), filled every 10 s with the last count
    (hand-computed in tests/test_gap_fill.py): 10:2, 20:2, 30:2, 40:2, 50:1, 60:1, 70:1,
    80:1, in the reference's epochs."""
    query, events = tmp_path / "counts.sql", tmp_path / "bids.jsonl"
    query.write_text(BIDS + COUNTS, encoding="utf-8")
    events.write_text("".join(json.dumps({"table": "bids", "row": {
        "auction": 1, "price": 1, "ts": f"2024-01-01 00:{second // 60:02d}:{second % 60:02d}"}}) + "\n"
        + ('{"barrier": true}\n' if barrier else "")
        for second, barrier in [(1, False), (2, True), (41, True), (75, True)]), encoding="utf-8")
    log = log_of(str(query), str(events))
    expected = list(run_eowc(parse_script(query.read_text()).query, log, RW, close=True))
    base = parse_timestamp("2024-01-01 00:00:00")
    assert [((r.row[0] - base) // 1_000_000, r.row[1]) for r in expected] == [
        (10, 2), (20, 2), (30, 2), (40, 2), (50, 1), (60, 1), (70, 1), (80, 1)]
    start_query(spark, str(query), str(events), RW, tmp_path / "run", close=True)
    assert collect_run(log, tmp_path / "run").emissions == expected
