"""Session windows (seed 004's SESSION TVF) in the reference interpreter: sessions merged by a
row between them, closed at ``last + gap``, by hand; the interpreter against the declarative
specification and DuckDB on random logs under every convention; what is refused.

Event times here are whole milliseconds: Flink's session rule (close at ``last + gap - 1 ms``)
is sound only for them (docs/proofs.md), as Flink's timestamps are."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.engines.spec import eowc_after_each_epoch
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log, parse_arrival_log
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import Case
from eowc.verify.executors import InProcessExecutor
from tests.strategies import BASE, MILLISECOND_FRACTIONS, SOURCE, arrival_logs, script
from tests.test_interpreter_vs_spec import cumulative_by_epoch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
SESSIONS = {
    "keyed": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s FROM "
             "TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' SECOND)) "
             "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
    "global": "SELECT window_start, window_end, max(price) AS m FROM SESSION(bids, ts, "
              "INTERVAL '2' SECOND) WHERE price IS NULL OR price > 2 GROUP BY window_start, "
              "window_end HAVING count(*) > 1 EMIT ON WINDOW CLOSE",
}


def hhmm(micros: int) -> str:
    return format_timestamp(micros)[11:16]


@pytest.mark.parametrize("convention", list(Convention))
def test_sessions_merge_and_close_by_hand(convention: Convention) -> None:
    """docs/examples/session.sql over bids.jsonl, gap 3 min. C 08:05 and A 08:07 open
    [08:05, 08:10); B 08:11 and D 08:09 (epoch 1) extend it to [08:05, 08:14); E 08:13 to
    [08:05, 08:16). H 08:08 (epoch 3) is late under W = 08:12; F 08:17 starts a session, and
    W = 08:16 closes the first: 5 bids, 15.0. W = 08:20 closes [08:17, 08:20) after epoch 4
    (flink already at 08:19:59.999, the same epoch here); G's only at the end."""
    parsed = parse_script((EXAMPLES / "session.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "bids.jsonl"), parsed.sources).log
    got = [(e.epoch, hhmm(e.row[0]), hhmm(e.row[1]), e.row[2], e.row[3])
           for e in run_eowc(parsed.query, log, convention, close=True)]
    assert got == [(3, "08:05", "08:16", 5, 15.0), (4, "08:17", "08:20", 1, 6.0),
                   (5, "08:21", "08:24", 1, 7.0)]


def test_a_row_between_two_sessions_merges_them() -> None:
    """Gap 5 s: 10:00:00 and 10:00:08 are two sessions until 10:00:04 arrives (not late: W is
    still 09:59:58); then one session [10:00:00, 10:00:13) of three rows. Emit on update shows
    the two old sessions retracted."""
    parsed = parse_script(
        "CREATE SOURCE s (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);"
        "\nSELECT window_start, window_end, count(*) AS n, sum(v) AS total FROM SESSION(s, ts, "
        "INTERVAL '5' SECOND) GROUP BY window_start, window_end;")
    lines = [json.dumps({"table": "s", "row": {"ts": f"2024-01-01 10:00:{sec:02d}", "v": v}})
             for sec, v in ((0, 1), (8, 2))] + ['{"barrier": true}'] + \
        [json.dumps({"table": "s", "row": {"ts": "2024-01-01 10:00:04", "v": 4}}),
         '{"barrier": true}']
    log = parse_arrival_log(lines, parsed.sources).log
    changes = [(c.epoch, c.op, format_timestamp(c.row[0])[11:], format_timestamp(c.row[1])[11:],
                c.row[2], c.row[3]) for c in run_update(parsed.query, log)]
    assert changes == [(0, "+", "10:00:00", "10:00:05", 1, 1), (0, "+", "10:00:08", "10:00:13", 1, 2),
                       (1, "-", "10:00:00", "10:00:05", 1, 1), (1, "-", "10:00:08", "10:00:13", 1, 2),
                       (1, "+", "10:00:00", "10:00:13", 3, 7)]


TOUCHING = SOURCE.format(delay=5) + SESSIONS["keyed"] + ";"


def _bids(*epochs: list[tuple[float, int, int]]) -> ArrivalLog:
    """Epochs of (second after 2024-01-01 00:00:00, auction, price)."""
    return ArrivalLog(tuple(tuple(Event("bids", (a, p, BASE + round(t * 1_000_000)))
                                  for t, a, p in epoch) for epoch in epochs))


def _sessions_by_epoch(log: ArrivalLog, convention: Convention) -> list[tuple]:
    """(epoch, auction, start s, end s, n, sum) from the reference, checked equal to the
    specification, DuckDB and the in-process executor first."""
    query = script(SESSIONS["keyed"]).query
    emissions = list(run_eowc(query, log, convention))
    assert cumulative_by_epoch(emissions, len(log.epochs)) == \
        eowc_after_each_epoch(query, log, convention)
    assert Counter(e.row for e in emissions) == oracle_eowc(query, log, convention, False)
    executor = [(e.epoch, e.row) for e in InProcessExecutor().emissions(
        Case(TOUCHING, convention, log))]
    assert executor == [(e.epoch, e.row) for e in emissions]
    return [(e.epoch, e.row[0], (e.row[1] - BASE) / 1e6, (e.row[2] - BASE) / 1e6, *e.row[3:])
            for e in emissions]


@pytest.mark.parametrize("convention, sessions", [
    (Convention.RISINGWAVE, [(1, 1, 10, 13, 1, 1), (1, 1, 13, 16, 1, 2)]),
    (Convention.SPARK, [(1, 1, 10, 16, 2, 3)]),
    (Convention.FLINK, [(1, 1, 10, 16, 2, 3)]),
])
def test_rows_exactly_one_gap_apart_by_convention(convention: Convention,
                                                  sessions: list[tuple]) -> None:
    """10 s and 13 s, gap 3 s, in one epoch: seed 004 and RisingWave split them ([10, 13) and
    [13, 16)), Spark and Flink merge windows that touch ([10, 16), both rows; seen on Spark
    4.3 and Flink 2.3: docs/divergences/session-touching-*.yaml). 30 s closes them (W = 25)."""
    log = _bids([(10, 1, 1), (13, 1, 2)], [(30, 2, 9)])
    assert _sessions_by_epoch(log, convention) == sessions


@pytest.mark.parametrize("convention, sessions", [
    (Convention.RISINGWAVE, [(2, 1, 10, 13, 1, 1), (2, 1, 13, 16, 1, 3),
                             (2, 2, 17.999, 20.999, 1, 2)]),
    (Convention.SPARK, [(2, 1, 10, 16, 2, 4), (2, 2, 17.999, 20.999, 1, 2)]),
    (Convention.FLINK, [(0, 1, 10, 13, 1, 1), (2, 1, 13, 16, 1, 3),
                        (2, 2, 17.999, 20.999, 1, 2)]),
])
def test_a_row_that_touches_a_fired_session_starts_its_own(convention: Convention,
                                                           sessions: list[tuple]) -> None:
    """Epoch 0: 10 s (auction 1), 17.999 s (auction 2): W = 12.999 s. Flink fires [10, 13)
    then (window_time 12.999 is complete); Spark closes it only at W = 13. Epoch 1: 13 s,
    not late, touches it: Spark merges ([10, 16), both rows, Spark 4.3), Flink starts a session
    of its own ([13, 16), Flink 1.19.0, 2.0.0, 2.3.0). Epoch 2: 40 s, W = 35, closes the rest."""
    log = _bids([(10, 1, 1), (17.999, 2, 2)], [(13, 1, 3)], [(40, 2, 4)])
    assert _sessions_by_epoch(log, convention) == sessions


@st.composite
def touching_logs(draw) -> tuple[ArrivalLog, int]:
    """A random log (rows in 12 s on a 1-second grid, and 0.5 and 0.999 s) with a touching row
    planted after it, and the session gap: a row at ``t - gap``, one at ``t + 1 s - 1 ms``
    that lifts the watermark (delay 1 s) to 1 ms below ``t``, then, an epoch later, a row at
    ``t``, each in a random auction, and more random epochs after them."""
    gap = draw(st.sampled_from([1, 2, 3]))
    before, after = draw(arrival_logs(max_rows=10, fractions=MILLISECOND_FRACTIONS,
                                      max_seconds=12)), \
        draw(arrival_logs(max_rows=5, fractions=MILLISECOND_FRACTIONS, max_seconds=12))
    t = draw(st.integers(gap, 12))
    auction = st.integers(1, 2)
    planted = _bids([(t - gap, draw(auction), 1), (t + 0.999, draw(auction), 2)],
                    [(t, draw(auction), 3)])
    return ArrivalLog(before.epochs + planted.epochs + after.epochs), gap


@settings(max_examples=100, deadline=None)
@given(planted=touching_logs())
def test_touching_sessions_agree_across_the_oracles(planted: tuple[ArrivalLog, int]) -> None:
    """On logs where rows exactly a gap apart meet a session that Flink has fired or not
    (:func:`touching_logs`), the reference, the specification and DuckDB agree under every
    convention."""
    log, gap = planted
    query = script(SESSIONS["keyed"].replace("INTERVAL '3' SECOND", f"INTERVAL '{gap}' SECOND"),
                   delay=1).query
    for convention in Convention:
        emissions = list(run_eowc(query, log, convention, close=True))
        assert cumulative_by_epoch(emissions, len(log.epochs) + 1) == \
            eowc_after_each_epoch(query, log, convention, close=True)
        assert Counter(e.row for e in emissions) == oracle_eowc(query, log, convention, True)


def test_what_is_refused() -> None:
    source = ("CREATE SOURCE s (ts TIMESTAMP, k BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' "
              "SECOND);\n")
    with pytest.raises(PlanError, match="GROUP BY window_start, window_end"):
        run_eowc(parse_script(source + "SELECT window_end, count(*) FROM SESSION(s, ts, "
                                       "INTERVAL '1' SECOND) GROUP BY window_end EMIT ON WINDOW "
                                       "CLOSE;").query, ArrivalLog(()))
    with pytest.raises(SqlError, match="gap must be positive"):
        parse_script(source + "SELECT * FROM SESSION(s, ts, INTERVAL '0' SECOND);")
    with pytest.raises(SqlError, match="expected TABLE\\(SESSION"):
        parse_script(source + "SELECT * FROM SESSION(s);")


@pytest.mark.parametrize("name", sorted(SESSIONS))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS))
def test_sessions_equal_the_specification_and_duckdb(name: str, log: ArrivalLog) -> None:
    query = script(SESSIONS[name]).query
    for convention in Convention:
        emissions = list(run_eowc(query, log, convention, close=True))
        expected = eowc_after_each_epoch(query, log, convention, close=True)
        assert cumulative_by_epoch(emissions, len(expected)) == expected
        for close in (False, True):
            got = Counter(e.row for e in emissions if close or e.epoch < len(log.epochs))
            assert got == oracle_eowc(query, log, convention, close), (convention, close)
