"""TopN in the reference interpreter: seed 004's window TopN (a window's top rows when it
closes) and deduplication (the first rows per key in event-time order, each once its event
time is complete), by hand under each convention, their emit-on-update changelogs, and what
is refused."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings

from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.errors import PlanError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import Convention
from tests.strategies import arrival_logs, script

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


def example(name: str, events: str = "bids"):  # noqa: ANN201
    parsed = parse_script((EXAMPLES / f"{name}.sql").read_text(encoding="utf-8"))
    return parsed.query, load_arrival_log(str(EXAMPLES / f"{events}.jsonl"), parsed.sources).log


def hhmm(micros: int) -> str:
    return format_timestamp(micros)[11:16]


@pytest.mark.parametrize("convention", list(Convention))
def test_window_top_n_over_the_bids(convention: Convention) -> None:
    """The three highest bids per 10-minute window of bids.jsonl (delay 1 min). [08:00, 08:10)
    closes after epoch 1 (W = 08:10) with D 5, C 4, A 2 (B 3 arrives at 08:11 and belongs to
    the next window; the bid at 08:08 of epoch 3 is late); [08:10, 08:20) closes after epoch 4
    (W = 08:20) with F 6, B 3, E 1; [08:20, 08:30) only at the end."""
    query, log = example("window_top_n")
    got = [(e.epoch, hhmm(e.row[0]), e.row[2], e.row[3], e.row[4])
           for e in run_eowc(query, log, convention, close=True)]
    assert got == [(1, "08:00", "D", 5.0, 1), (1, "08:00", "C", 4.0, 2), (1, "08:00", "A", 2.0, 3),
                   (4, "08:10", "F", 6.0, 1), (4, "08:10", "B", 3.0, 2), (4, "08:10", "E", 1.0, 3),
                   (5, "08:20", "G", 7.0, 1)]


def test_deduplication_keeps_the_first_bid_of_each_item() -> None:
    """Every item of bids.jsonl bids once, so each bid is its item's first; each comes out in
    the first epoch after which its bidtime is complete (RisingWave: bidtime < W)."""
    query, log = example("dedup")
    got = [(e.epoch, hhmm(e.row[0]), e.row[2]) for e in run_eowc(query, log, close=True)]
    assert got == [(0, "08:05", "C"), (1, "08:07", "A"), (1, "08:09", "D"), (2, "08:11", "B"),
                   (3, "08:13", "E"), (4, "08:17", "F"), (5, "08:21", "G")]


def test_deduplication_by_hand_with_repeats() -> None:
    """Key a at 10:00:05 and again at 10:00:03 (in the next epoch, not late under W = 10:00:01):
    the earlier one wins, though it arrived later; key b's later duplicate is never emitted."""
    parsed = parse_script(
        "CREATE SOURCE s (ts TIMESTAMP, k VARCHAR, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL "
        "'5' SECOND);\nSELECT ts, k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER "
        "BY ts) AS rn FROM s) WHERE rn = 1 EMIT ON WINDOW CLOSE;")
    rows = [[("10:00:05", "a", 1), ("10:00:06", "b", 2)], [("10:00:03", "a", 3)],
            [("10:00:20", "b", 4)], [("10:00:30", "c", 5)]]
    lines = []
    for epoch in rows:
        lines += [f'{{"table": "s", "row": {{"ts": "2024-01-01 {t}", "k": "{k}", "v": {v}}}}}'
                  for t, k, v in epoch] + ['{"barrier": true}']
    from eowc.semantics.ir.arrival import parse_arrival_log
    log = parse_arrival_log(lines, parsed.sources).log
    got = [(e.epoch, e.row[1], e.row[2]) for e in run_eowc(parsed.query, log, close=True)]
    # W after each epoch: 10:00:01, 10:00:01, 10:00:15, 10:00:25.
    assert got == [(2, "a", 3), (2, "b", 2), (4, "c", 5)]
    changes = [(c.epoch, c.op, c.row[1], c.row[2])
               for c in run_update(parse_script(
                   "CREATE SOURCE s (ts TIMESTAMP, k VARCHAR, v BIGINT, WATERMARK FOR ts AS ts - "
                   "INTERVAL '5' SECOND);\nSELECT ts, k, v FROM (SELECT *, ROW_NUMBER() OVER "
                   "(PARTITION BY k ORDER BY ts) AS rn FROM s) WHERE rn = 1;").query, log)]
    assert changes == [(0, "+", "a", 1), (0, "+", "b", 2), (1, "-", "a", 1), (1, "+", "a", 3),
                       (3, "+", "c", 5)]


def test_a_top_n_that_is_neither_windowed_nor_a_deduplication_is_refused() -> None:
    query = parse_script(
        "CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR, WATERMARK FOR bidtime "
        "AS bidtime - INTERVAL '1' MINUTE);\nSELECT * FROM (SELECT *, ROW_NUMBER() OVER "
        "(PARTITION BY item ORDER BY price DESC) AS rn FROM bid) WHERE rn <= 2 EMIT ON WINDOW "
        "CLOSE;").query
    with pytest.raises(PlanError, match="a TopN must PARTITION BY window_start, window_end"):
        run_eowc(query, ArrivalLog(()))
    assert list(run_update(query, ArrivalLog(()))) == []  # fine without EOWC


TOP = ("SELECT window_start, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
       "window_start, window_end ORDER BY price DESC) AS rn FROM HOP(bids, ts, INTERVAL '5' "
       "SECOND, INTERVAL '10' SECOND)) WHERE rn <= 2 EMIT ON WINDOW CLOSE")


@settings(max_examples=60, deadline=None)
@given(log=arrival_logs())
def test_eowc_top_rows_are_final_and_all_come_out_at_the_close(log: ArrivalLog) -> None:
    """At the end of the input the EOWC output is exactly Q over INPUT: no emitted rank
    changed later."""
    for name, sql in (("window", TOP), ("dedup", "SELECT ts, auction, rn FROM (SELECT *, "
                                                  "ROW_NUMBER() OVER (PARTITION BY auction ORDER "
                                                  "BY ts) AS rn FROM bids) WHERE rn <= 2 EMIT ON "
                                                  "WINDOW CLOSE")):
        for convention in Convention:
            emitted = Counter(e.row for e in run_eowc(script(sql).query, log, convention,
                                                      close=True))
            final: Counter = Counter()
            for change in run_update(script(sql.replace(" EMIT ON WINDOW CLOSE", "")).query, log,
                                     convention):
                final[change.row] += 1 if change.op == "+" else -1
            assert emitted == +final, (name, convention)
