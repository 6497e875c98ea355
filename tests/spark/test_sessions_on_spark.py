"""Sessions read row by row on real Spark (``eowc run --engine spark``), in both modes:

* RisingWave's session frames, ``OVER (PARTITION BY bar ORDER BY tm SESSION WITH GAP '10
  minutes')`` (EowcOverWindow, OverWindowChangelog): the worked example of
  docs/operators/over-window.md (RisingWave's ``eowc_over_window.slt``, mv4, with a late-coming
  row that merges two sessions), stopped after two epochs and restarted on its checkpoint, its
  rows the page's hand-computed ones; on update against the reference; under Spark's
  convention (a session closes once ``last + gap - 1 us <= W``) over the log below, by hand;
* Flink's SESSION TVF read without a GROUP BY (EowcSession, SessionChangelog): a hand-made log
  of two users with a row that merges two sessions, a late row, and a session that closes
  exactly on the watermark under Flink's ``last + gap - 1 ms <= W``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from eowc.executors.spark.runner import collect_run, start_query
from eowc.semantics.engines.interpreter import LateRow, run_eowc, run_update
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.rules.triggers import Convention

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
FRAMES_SQL, FRAMES_EVENTS = EXAMPLES / "session_frame.sql", EXAMPLES / "session_frame.jsonl"


def log_of(query: Path, events: Path) -> ArrivalLog:
    return load_arrival_log(str(events), parse_script(query.read_text(encoding="utf-8")).sources).log


def expected_eowc(query: Path, log: ArrivalLog, convention: Convention) -> tuple[list, list]:
    late: list[LateRow] = []
    out = list(run_eowc(parse_script(query.read_text(encoding="utf-8")).query, log, convention,
                        close=True, late=late.append))
    return out, [r.event.row for r in late]


def at(clock: str) -> int:
    return parse_timestamp(f"2023-05-06 {clock}:00")


def frame_row(tm: str, foo: int, bar: int, start: str, end: str, total: int) -> tuple:
    return (at(tm), foo, bar, at(start), at(end), total)


#: docs/operators/over-window.md's worked example, by hand: epoch 0 (W = 17:56) closes bar
#: 100's {16:51, 16:56} (sum 9) and {17:35}, bar 200's {17:30}; epoch 2's 18:07 joins 17:59
#: to 18:10 (sum 13); the close (epoch 3) releases the rest.
FRAMES_BY_HAND = {
    0: {frame_row("16:51", 1, 100, "16:51", "16:56", 9), frame_row("16:56", 8, 100, "16:51", "16:56", 9),
        frame_row("17:30", 3, 200, "17:30", "17:30", 3), frame_row("17:35", 5, 100, "17:35", "17:35", 5)},
    3: {frame_row("17:59", 4, 100, "17:59", "18:10", 13), frame_row("18:07", 2, 100, "17:59", "18:10", 13),
        frame_row("18:10", 7, 100, "17:59", "18:10", 13), frame_row("18:01", 6, 200, "18:01", "18:01", 6),
        frame_row("18:11", 9, 200, "18:11", "18:11", 9)},
}


def test_session_frames_on_spark_stopped_and_restarted(spark, tmp_path: Path) -> None:
    """RisingWave: stopped after epoch 1 (17:59's session still open), restarted: the page's
    rows, in the reference's epochs and order."""
    log = log_of(FRAMES_SQL, FRAMES_EVENTS)
    expected, late = expected_eowc(FRAMES_SQL, log, RW)
    assert {e: {x.row for x in expected if x.epoch == e} for e in FRAMES_BY_HAND} == FRAMES_BY_HAND
    assert len(expected) == 9 and late == []
    start_query(spark, str(FRAMES_SQL), str(FRAMES_EVENTS), RW, tmp_path / "run", max_epochs=2)
    first = collect_run(log, tmp_path / "run")
    assert first.emissions == [e for e in expected if e.epoch < 2] != []
    start_query(spark, str(FRAMES_SQL), str(FRAMES_EVENTS), RW, tmp_path / "run", close=True)
    assert collect_run(log, tmp_path / "run").emissions == expected


def test_session_frames_on_update_on_spark(spark, tmp_path: Path) -> None:
    """Without EMIT ON WINDOW CLOSE: the reference's changelog; epoch 2's 18:07 merges bar
    100's {17:59} and {18:10}, retracting both rows with their old sessions."""
    query = tmp_path / "frames.sql"
    query.write_text(FRAMES_SQL.read_text(encoding="utf-8").replace("emit on window close", ""),
                     encoding="utf-8")
    log = log_of(query, FRAMES_EVENTS)
    expected = list(run_update(parse_script(query.read_text(encoding="utf-8")).query, log, RW))
    merged = {c.row[0] for c in expected if c.op == "-" and c.epoch == 2}
    assert merged == {at("17:59"), at("18:10")}
    start_query(spark, str(query), str(FRAMES_EVENTS), RW, tmp_path / "run")
    run = collect_run(log, tmp_path / "run")
    assert run.changes == expected and run.emissions == []


CLICKS = ("CREATE TABLE clicks (uid BIGINT, ts TIMESTAMP, v BIGINT, "
          "WATERMARK FOR ts AS ts - INTERVAL '3' MINUTE);\n")
SESSION_ROWS = ("SELECT uid, ts, v, window_start, window_end FROM TABLE(SESSION(TABLE clicks "
                "PARTITION BY uid, DESCRIPTOR(ts), INTERVAL '5' MINUTE))")
#: (uid, clock after 10:00 as "MM:SS[.fff]", v) per epoch; W after each epoch (delay 3
#: minutes): 10:00, 10:06, 10:10, 10:17:59.999, 10:17:59.999.
CLICK_EPOCHS = [[(1, "00:00", 1), (1, "03:00", 2), (2, "01:00", 3)],
                [(1, "09:00", 4), (2, "05:00", 5)],
                [(1, "06:30", 6),        # not late (W = 10:06): joins {10:00, 10:03} and {10:09}
                 (2, "02:00", 7),        # late: 10:02 <= 10:06
                 (2, "13:00", 8)],       # 8 minutes after 10:05: a new session
                [(1, "20:59.999", 9)],
                []]


def click(mm_ss: str) -> int:
    return parse_timestamp(f"2024-01-01 10:{mm_ss}")


#: Flink (a session emitted once last + gap - 1 ms <= W), by hand: epoch 2 (W = 10:10)
#: closes user 2's [10:01, 10:10); epoch 3 (W = 10:17:59.999) closes user 1's merged
#: [10:00, 10:14) and, exactly on W, user 2's [10:13, 10:18); the close (epoch 5) the rest.
SESSION_ROWS_BY_HAND = {
    2: {(2, "01:00", 3, "01:00", "10:00"), (2, "05:00", 5, "01:00", "10:00")},
    3: {(1, "00:00", 1, "00:00", "14:00"), (1, "03:00", 2, "00:00", "14:00"),
        (1, "06:30", 6, "00:00", "14:00"), (1, "09:00", 4, "00:00", "14:00"),
        (2, "13:00", 8, "13:00", "18:00")},
    5: {(1, "20:59.999", 9, "20:59.999", "25:59.999")},
}


def write_clicks(directory: Path, sql: str) -> tuple[Path, Path]:
    query, events = directory / "clicks.sql", directory / "clicks.jsonl"
    query.write_text(CLICKS + sql, encoding="utf-8")
    lines = []
    for epoch in CLICK_EPOCHS:
        for uid, mm_ss, v in epoch:
            lines.append(json.dumps({"table": "clicks", "row": {
                "uid": uid, "ts": f"2024-01-01 10:{mm_ss}", "v": v}}))
        lines.append('{"barrier": true}')
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return query, events


def by_hand(rows: dict[int, set[tuple]], epochs: int) -> dict[int, set[tuple]]:
    """Per epoch, the rows with their "MM:SS" clocks read as times."""
    return {epoch: {tuple(click(c) if isinstance(c, str) else c for c in row)
                    for row in rows.get(epoch, set())} for epoch in range(epochs)}


def per_epoch(emissions: list, epochs: int) -> dict[int, set[tuple]]:
    return {epoch: {e.row for e in emissions if e.epoch == epoch} for epoch in range(epochs)}


CLICK_FRAMES = ("SELECT uid, ts, v, first_value(ts) OVER w AS s_start, last_value(ts) OVER w AS "
                "s_end, sum(v) OVER w AS total FROM clicks WINDOW w AS (PARTITION BY uid ORDER BY "
                "ts SESSION WITH GAP INTERVAL '5' MINUTE) EMIT ON WINDOW CLOSE;")
#: Spark's convention (a session closed once last + gap - 1 us <= W), by hand: epoch 2
#: (W = 10:10) closes user 2's {10:01, 10:05}; epoch 3 (W = 10:17:59.999) user 1's merged
#: {10:00, 10:03, 10:06:30, 10:09} (sum 13, spanning more than a gap), but not user 2's
#: {10:13}: 10:17:59.999999 is not complete at 10:17:59.999 (Flink's whole-millisecond rule
#: closes it there); the close (epoch 5) the rest.
CLICK_FRAMES_BY_HAND = {
    2: {(2, "01:00", 3, "01:00", "05:00", 8), (2, "05:00", 5, "01:00", "05:00", 8)},
    3: {(1, "00:00", 1, "00:00", "09:00", 13), (1, "03:00", 2, "00:00", "09:00", 13),
        (1, "06:30", 6, "00:00", "09:00", 13), (1, "09:00", 4, "00:00", "09:00", 13)},
    5: {(2, "13:00", 8, "13:00", "13:00", 8), (1, "20:59.999", 9, "20:59.999", "20:59.999", 9)},
}


def test_session_frames_under_sparks_convention_on_spark(spark, tmp_path: Path) -> None:
    """The hand-computed rows, in the reference's epochs and order, and the late row."""
    query, events = write_clicks(tmp_path, CLICK_FRAMES)
    log = log_of(query, events)
    expected, late = expected_eowc(query, log, SPARK)
    assert per_epoch(expected, 6) == by_hand(CLICK_FRAMES_BY_HAND, 6)
    start_query(spark, str(query), str(events), SPARK, tmp_path / "run", close=True)
    run = collect_run(log, tmp_path / "run")
    assert run.emissions == expected
    assert [r.event.row for r in run.late] == late == [(2, click("02:00"), 7)]


@pytest.mark.parametrize("emit_on_window_close", [True, False], ids=["eowc", "update"])
def test_session_tvf_rows_on_spark(spark, tmp_path: Path, emit_on_window_close: bool) -> None:
    """Flink's convention. EOWC: the hand-computed rows in the reference's epochs and order;
    on update: the reference's changelog (the merge retracts user 1's three rows with their
    old windows). Both: the late row."""
    # without EMIT, Flink's dialect runs a SESSION TVF final, as Flink does: update mode is
    # RisingWave's dialect's reading of the same text
    query, events = write_clicks(tmp_path, SESSION_ROWS + (" EMIT ON WINDOW CLOSE;"
                                                           if emit_on_window_close else
                                                           ";\n-- eowc: dialect=risingwave\n"))
    log = log_of(query, events)
    start_query(spark, str(query), str(events), FLINK, tmp_path / "run", close=emit_on_window_close)
    run = collect_run(log, tmp_path / "run")
    late: list[LateRow] = []
    plan = parse_script(query.read_text(encoding="utf-8")).query
    if emit_on_window_close:
        expected = list(run_eowc(plan, log, FLINK, close=True, late=late.append))
        assert per_epoch(expected, 6) == by_hand(SESSION_ROWS_BY_HAND, 6)
        assert run.emissions == expected
    else:
        changes = list(run_update(plan, log, FLINK, late=late.append))
        assert Counter(c.row[1] for c in changes if c.op == "-" and c.epoch == 2) == Counter(
            {click("00:00"): 1, click("03:00"): 1, click("09:00"): 1})
        assert run.changes == changes and run.emissions == []
    assert [r.event.row for r in run.late] == [r.event.row for r in late] == [(2, click("02:00"), 7)]
