"""Joins and UNION ALL in the reference interpreter (eowc.semantics.engines.multi_input): interval, window
and outer joins and unions by hand under every convention; the one-pass interpreter against
the declarative specification and DuckDB on random two-source logs; order independence
within an epoch; bounded join state; what is refused."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.driver import run_in_process
from eowc.semantics.analysis.operator_inputs import has_join_judging_late_rows
from eowc.semantics.engines.dataflow import compile_dataflow
from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log
from eowc.semantics.ir.values import MICROS_PER_SECOND, format_timestamp
from eowc.semantics.operators.logical import StreamJoin
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.generators import LogShape, random_multi_source_log
from tests.strategies import judged_at_sources_params, script_once
from tests.test_interpreter_vs_spec import cumulative_by_epoch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
BASE = 1_700_000_000 * MICROS_PER_SECOND
SOURCES = """
CREATE SOURCE a (ts TIMESTAMP, k BIGINT, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
CREATE SOURCE b (ts TIMESTAMP, k BIGINT, w BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""
QUERIES = {
    **{f"interval_{kind}": f"SELECT a.ts AS ats, b.ts AS bts, a.k, v, w FROM a {kind} JOIN b "
                           f"ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND "
                           f"b.ts + INTERVAL '4' SECOND EMIT ON WINDOW CLOSE"
       for kind in ("INNER", "LEFT", "RIGHT", "FULL")},
    **{f"interval_{kind}": f"SELECT a.ts AS ats, a.k, v FROM a LEFT {kind} JOIN b "
                           f"ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND "
                           f"b.ts + INTERVAL '4' SECOND EMIT ON WINDOW CLOSE"
       for kind in ("SEMI", "ANTI")},
    "interval_right_first": "SELECT b.ts AS bts, a.ts AS ats, w, v FROM a RIGHT JOIN b "
                            "ON a.k = b.k AND a.ts > b.ts AND a.ts <= b.ts + INTERVAL '3' SECOND "
                            "EMIT ON WINDOW CLOSE",
    "window_full": "SELECT l.window_start, l.window_end, r.window_end AS rend, l.k, v, w FROM "
                   "(SELECT * FROM TUMBLE(a, ts, INTERVAL '5' SECOND)) l FULL JOIN "
                   "(SELECT * FROM TUMBLE(b, ts, INTERVAL '5' SECOND)) r "
                   "ON l.window_start = r.window_start AND l.window_end = r.window_end "
                   "AND l.k = r.k EMIT ON WINDOW CLOSE",
    "aggregates_left": "SELECT l.window_start, l.window_end, l.k, n, m FROM "
                       "(SELECT window_start, window_end, k, count(*) AS n FROM "
                       "TUMBLE(a, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end, k) l "
                       "LEFT JOIN (SELECT window_start, window_end, k, sum(w) AS m FROM "
                       "HOP(b, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) "
                       "GROUP BY window_start, window_end, k) r "
                       "ON l.window_start = r.window_start AND l.window_end = r.window_end "
                       "AND l.k = r.k EMIT ON WINDOW CLOSE",
    "union": "SELECT ts, v FROM a UNION ALL SELECT ts + INTERVAL '1' SECOND, w FROM b "
             "EMIT ON WINDOW CLOSE",
    "join_tumble": "SELECT window_start, window_end, count(*) AS n, sum(w) AS s FROM "
                   "TUMBLE((SELECT a.ts AS ts, w FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN "
                   "b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND), ts, "
                   "INTERVAL '5' SECOND) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
    "union_tumble": "SELECT window_start, window_end, count(*) AS n, sum(v) AS s FROM "
                    "TUMBLE((SELECT ts, v FROM a UNION ALL SELECT ts, w FROM b), ts, "
                    "INTERVAL '4' SECOND) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
}


def query(name: str):
    return script_once(SOURCES + QUERIES[name] + ";").query


def judged_by_a_join(name: str, convention: Convention) -> bool:
    """Whether a join of ``QUERIES[name]`` judges its own input rows under ``convention``
    (Flink's interval join): the specification and DuckDB judge rows at their sources and
    refuse it, and the order of an epoch's rows matters to it."""
    return has_join_judging_late_rows(query(name).plan, convention)


#: Every (query, convention) whose rows are judged late at their sources.
JUDGED_AT_SOURCES = judged_at_sources_params(sorted(QUERIES), query)
#: Every (query, convention) whose rows a join judges.
JUDGED_BY_A_JOIN = [pytest.param(name, convention, id=f"{name}-{convention.value}")
                    for name in sorted(QUERIES) for convention in Convention
                    if judged_by_a_join(name, convention)]


@st.composite
def two_source_logs(draw, max_rows: int = 24) -> ArrivalLog:
    """Rows of ``a`` and ``b`` with a few keys, times within a minute in arrival disorder,
    cut into epochs; whole milliseconds (Flink's unit)."""
    n = draw(st.integers(0, max_rows))
    events = []
    for _ in range(n):
        table = draw(st.sampled_from("ab"))
        second = draw(st.integers(0, 40))
        fraction = draw(st.sampled_from((0, 0, 500_000, 999_000)))
        k = draw(st.sampled_from((1, 2, None)))
        value = draw(st.integers(-5, 20))
        events.append(Event(table, (BASE + second * MICROS_PER_SECOND + fraction, k, value)))
    cuts = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    epochs, current = [], []
    for event, cut in zip(events, cuts, strict=True):
        current.append(event)
        if cut:
            epochs.append(tuple(current))
            current = []
    if current:
        epochs.append(tuple(current))
    return ArrivalLog(tuple(epochs))


def at(seconds: float) -> int:
    return BASE + int(seconds * MICROS_PER_SECOND)


def hms(micros: int | None) -> str | None:
    return None if micros is None else format_timestamp(micros)[17:19]


# ------------------------------------------------------------------------------ by hand

def test_interval_left_join_by_hand() -> None:
    """docs/operators/joins.md: clicks join the views of the same user from one minute before
    to ten seconds after. An unmatched click comes out once the views' watermark has passed
    its time plus one minute, in click-time order with the joined ones."""
    script = parse_script((EXAMPLES / "analysis" / "interval_join.sql").read_text())
    log = load_arrival_log(str(EXAMPLES / "interval_join.jsonl"), script.sources).log
    for convention in Convention:
        emitted = [(e.epoch, format_timestamp(e.row[0])[11:19], e.row[1] is not None, e.row[3])
                   for e in run_eowc(script.query, log, convention, close=True)]
        assert emitted == [(2, "10:00:20", False, "p1"), (2, "10:00:30", True, "p2"),
                           (2, "10:01:00", False, "p3"), (3, "10:02:40", True, "p4"),
                           (4, "10:04:00", True, "p5")], convention


def test_outer_row_waits_exactly_until_no_match_can_come() -> None:
    """a.ts BETWEEN b.ts - 2 s AND b.ts + 4 s: an a row at 10 s can still meet a b row up to
    12 s. Under risingwave b's watermark must pass 12 s (b at 17 s + 0.000001, delay 5 s);
    under flink reaching 12 s is enough (b at 17 s). Spark's join keeps its state a
    millisecond longer (its state watermark is W - bound - 1 ms for an inclusive range, seen on
    Spark 3.4.4, 3.5.3 and 4.3): b's watermark must reach 12.001 s (b at 17.001 s). So does
    Flink's interval join, by a timer at 12 s + 1 ms on the join's watermark (the least of
    both: a's is 17 s here)."""
    q = query("interval_LEFT")
    for convention, b_time, expected in ((Convention.RISINGWAVE, 17, None),
                                         (Convention.RISINGWAVE, 17.000001, 1),
                                         (Convention.SPARK, 17, None), (Convention.SPARK, 17.001, 1),
                                         (Convention.FLINK, 17, None), (Convention.FLINK, 17.001, 1)):
        log = ArrivalLog(((Event("a", (at(10), 1, 7)), Event("a", (at(20), 3, 0))),
                          (Event("b", (at(b_time), 2, 0)),)))
        out = [e for e in run_eowc(q, log, convention) if e.row[0] == at(10)]
        assert [e.epoch for e in out] == ([] if expected is None else [expected]), \
            (convention, b_time)
        assert all(e.row[1] is None for e in out)


def test_a_late_match_is_not_an_outer_row() -> None:
    """The b row that arrives before the a row's outer deadline joins it: no NULL row."""
    q = query("interval_FULL")
    log = ArrivalLog(((Event("a", (at(10), 1, 7)),), (Event("b", (at(7), 1, 8)),),
                      (Event("a", (at(30), 9, 0)), Event("b", (at(30), 9, 0)))))
    rows = [e.row for e in run_eowc(q, log, Convention.RISINGWAVE, close=True)]
    assert (at(10), at(7), 1, 7, 8) in rows
    assert not any(r[0] == at(10) and r[1] is None for r in rows)
    assert not any(r[1] == at(7) and r[0] is None for r in rows)


def test_semi_join_emits_a_row_once_and_anti_join_the_ones_that_can_no_longer_match() -> None:
    """a at 10 s meets b at 9 s and at 11 s: SEMI emits it once (in a.ts order, when 10 s is
    complete under min(W_a, W_b - 2 s)); a at 12 s never meets b: ANTI emits it once b's
    watermark passes 12 s + 2 s, under Spark's rules by a millisecond (W_b = 14 s after epoch
    2 is not enough: Spark's join keeps its state a millisecond longer; 15 s after epoch 3)."""
    log = ArrivalLog(((Event("a", (at(10), 1, 7)), Event("a", (at(12), 2, 8)),
                       Event("b", (at(9), 1, 0))),
                      (Event("b", (at(11), 1, 0)), Event("a", (at(30), 3, 9))),
                      (Event("b", (at(19), 5, 0)),),  # W_b = 14: no b can meet a at 12 s ...
                      (Event("b", (at(20), 5, 0)),)))  # ... but Spark waits for W_b > 14 s
    semi = [(e.epoch, e.row) for e in run_eowc(query("interval_SEMI"), log, Convention.SPARK)]
    anti = [(e.epoch, e.row) for e in run_eowc(query("interval_ANTI"), log, Convention.SPARK)]
    assert semi == [(2, (at(10), 1, 7))]  # min(W_a = 27, W_b - 2 s = 12) passes 10 s
    assert anti == [(3, (at(12), 2, 8))]
    with pytest.raises(SqlError, match="RIGHT SEMI JOIN is not supported"):
        parse_script(SOURCES + "SELECT a.ts FROM a RIGHT SEMI JOIN b ON a.k = b.k;")


def test_window_full_join_emits_when_the_window_closes_on_both_sides() -> None:
    q = query("window_full")
    log = ArrivalLog(((Event("a", (at(1), 1, 10)), Event("b", (at(2), 1, 20)),
                       Event("a", (at(3), 2, 30))),
                      (Event("a", (at(12), 1, 0)),),  # W_a = 9: only a has closed [0, 5)
                      (Event("b", (at(11), 1, 0)),)))  # W_b = 6: [0, 5) closed on both
    emitted = [(e.epoch, hms(e.row[0]), hms(e.row[2]), e.row[3], e.row[4], e.row[5])
               for e in run_eowc(q, log, Convention.RISINGWAVE)]
    # [BASE, BASE + 5 s) is [22:13:20, 22:13:25); the unmatched row first (NULLs sort first)
    assert emitted == [(2, "20", None, 2, 30, None), (2, "20", "25", 1, 10, 20)]


#: A row late for its table: kept under flink and spark while its window has not fired under the
#: join's watermark, left out under RisingWave (late by its time).
WINDOW_JOIN_LATE_ROW = ArrivalLog((
    (Event("a", (at(12), 1, 12)), Event("b", (at(8), 1, 8))),  # W_a = 9, W_b = 3
    (Event("a", (at(7), 1, 7)),),  # late for a (7 <= 9), but [5, 10) has not fired at 9
    (Event("a", (at(30), 2, 0)), Event("b", (at(30), 3, 0)))))  # W_a = 27, W_b = 25
#: A row late for its table whose window fired under the table's watermark, but not under
#: the join's (the least of both, 3): kept under flink (seen on Flink 2.3.0 with the built-in
#: suite's window join) and under spark (Spark's global watermark is that least), left out
#: under risingwave.
WINDOW_JOIN_FIRED_ROW = ArrivalLog((
    (Event("a", (at(12), 1, 12)), Event("b", (at(8), 1, 8))),
    (Event("a", (at(4), 1, 4)),),  # [0, 5) fired for a (4.999 <= 9)
    (Event("a", (at(30), 2, 0)), Event("b", (at(30), 3, 0)))))
A12_UNMATCHED = (2, "30", "35", None, 1, 12, None)


@pytest.mark.parametrize(("log", "flink_rows", "other_rows"), [
    (WINDOW_JOIN_LATE_ROW, [(2, "25", "30", "30", 1, 7, 8)], [(2, None, None, "30", None, None, 8)]),
    (WINDOW_JOIN_FIRED_ROW, [(2, "20", "25", None, 1, 4, None), (2, None, None, "30", None, None, 8)],
     [(2, None, None, "30", None, None, 8)]),
], ids=["window-open", "window-fired"])
@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
def test_a_window_join_judges_a_late_row_by_the_joins_watermark_under_flink_and_spark(
        convention: Convention, log: ArrivalLog, flink_rows: list, other_rows: list) -> None:
    """Flink's window join drops a row only once its window has fired under the join's own
    watermark (the least of both inputs'), Spark's once its window's end is at or below the
    query's one global watermark (the least of both sources', 3 s here); RisingWave judges
    it by its time, against its own table's watermark (9 s)."""
    q = query("window_full")
    rows = [*(other_rows if convention is Convention.RISINGWAVE else flink_rows), A12_UNMATCHED]
    for emissions in (run_eowc(q, log, convention), run_in_process(q, log, convention).emissions):
        got = [(e.epoch, hms(e.row[0]), hms(e.row[1]), hms(e.row[2]), *e.row[3:])
               for e in emissions]
        assert sorted(got, key=repr) == sorted(rows, key=repr)
    expected = Counter(tuple(r[1:]) for r in rows)
    for final in (eowc_after_each_epoch(q, log, convention)[-1], oracle_eowc(q, log, convention)):
        assert Counter({(hms(r[0]), hms(r[1]), hms(r[2]), *r[3:]): n
                        for r, n in final.items()}) == expected


# ---------------------------------------------------- an interval join that judges its rows

FLINK = Convention.FLINK
#: a at 30 s and b at 12 s: a's watermark 27 s, b's 7 s, the join's (the least) 7 s. Then a
#: at 3 s (it could meet b up to 5 s, at or below the join's 7 s), 11 s (meets b at 12 s) and
#: 12 s (could meet b up to 14 s); then b at 40 s lifts the join's watermark to 27 s.
INTERVAL_JOIN_LATE_ROWS = ArrivalLog((
    (Event("a", (at(30), 9, 0)), Event("b", (at(12), 1, 5))),
    (Event("a", (at(3), 3, 1)), Event("a", (at(11), 1, 2)), Event("a", (at(12), 2, 3))),
    (Event("b", (at(40), 9, 6)),)))


def in_seconds(emission) -> tuple:  # noqa: ANN001
    """An interval join's emission as (epoch, a's time, b's time or None), in seconds."""
    a, b = emission.row[:2]
    return (emission.epoch, round((a - BASE) / MICROS_PER_SECOND),
            None if b is None else round((b - BASE) / MICROS_PER_SECOND))


@pytest.mark.parametrize(("convention", "expected"), [
    # a's rows at 3, 11 and 12 s are late for a (at or below 27 s): left out.
    (Convention.RISINGWAVE, [(3, 30, None, 9)]),
    # One global watermark, 7 s: a at 3 s is late and left out; 11 s and 12 s are not.
    (Convention.SPARK, [(2, 11, 12, 1), (2, 12, None, 2), (3, 30, None, 9)]),
    # Flink's interval join drops no row. a at 3 s meets no b row (none is kept) and is not
    # kept itself (5 s <= 7 s): padded at once, and out of the sort at once (3 s <= 7 s). a at
    # 11 s meets b at 12 s; a at 12 s is kept and padded once the join's watermark (27 s after
    # epoch 2) passes 14 s + 1 ms; a at 30 s waits for 32.001 s, the close.
    (Convention.FLINK, [(1, 3, None, 3), (2, 11, 12, 1), (2, 12, None, 2), (3, 30, None, 9)]),
], ids=lambda c: c.value if isinstance(c, Convention) else "")
def test_an_interval_join_keeps_a_late_row_that_can_still_meet_under_flink(
        convention: Convention, expected: list) -> None:
    """Flink's interval join (``TimeIntervalJoin``) judges its input rows by the join's own
    watermark, the least of both inputs' (docs/divergences/interval-join-late-row-flink.yaml),
    not each row at its own table's watermark. The reference and the join executor."""
    q, log = query("interval_LEFT"), INTERVAL_JOIN_LATE_ROWS
    for emissions in (run_eowc(q, log, convention, close=True),
                      run_in_process(q, log, convention, close=True).emissions):
        assert [(*in_seconds(e), e.row[2]) for e in emissions] == expected


@pytest.mark.parametrize(("a_first", "expected"), [
    (True, [(1, 20, None)]),  # a at 20 s meets nothing, is not kept: padded at once
    (False, [(1, 20, 22)]),  # b at 22 s is kept (26 s > 25 s); a at 20 s meets it
])
def test_a_join_that_judges_late_rows_takes_them_in_arrival_order(a_first: bool,
                                                                  expected: list) -> None:
    """After a at 30 s and b at 30 s the join's watermark is 25 s. a at 20 s can meet b up to
    22 s, at or below it: not kept. b at 22 s can meet a up to 26 s: kept. Which comes first
    decides whether they meet (in the reference and in the join executor)."""
    epoch = [Event("a", (at(20), 1, 1)), Event("b", (at(22), 1, 2))]
    log = ArrivalLog(((Event("a", (at(30), 9, 0)), Event("b", (at(30), 8, 0))),
                      tuple(epoch if a_first else epoch[::-1])))
    q = query("interval_LEFT")
    for emissions in (run_eowc(q, log, FLINK), run_in_process(q, log, FLINK).emissions):
        assert [in_seconds(e) for e in emissions] == expected


def test_a_join_that_judges_late_rows_tells_equal_rows_apart_by_arrival() -> None:
    """As above, with a second a row equal in every column to the first, after b's: the first
    is padded at once, the second meets b at 22 s (each arrival its own position)."""
    twice = Event("a", (at(20), 1, 1))
    log = ArrivalLog(((Event("a", (at(30), 9, 0)), Event("b", (at(30), 8, 0))),
                      (twice, Event("b", (at(22), 1, 2)), twice)))
    q = query("interval_LEFT")
    for emissions in (run_eowc(q, log, FLINK), run_in_process(q, log, FLINK).emissions):
        assert sorted((in_seconds(e) for e in emissions), key=repr) == \
            sorted([(1, 20, None), (1, 20, 22)], key=repr)


def test_the_specification_and_duckdb_refuse_a_join_that_judges_late_rows() -> None:
    """The specification and DuckDB judge rows at their sources, over all of INPUT at once:
    they refuse Flink's interval join by name rather than give other rows."""
    q, log = query("interval_LEFT"), INTERVAL_JOIN_LATE_ROWS
    for backend, run in (("the specification", lambda: eowc_after_each_epoch(q, log, FLINK)),
                         ("the DuckDB oracle", lambda: oracle_eowc(q, log, FLINK))):
        with pytest.raises(PlanError, match=f"{backend} cannot run an interval join under the "
                                            "flink convention"):
            run()


def without_late_rows(log: ArrivalLog) -> ArrivalLog:
    """``log`` without a row at or below its table's watermark before its epoch (Flink's
    lateness; a's delay 3 s, b's 5 s)."""
    delays, highest, epochs = {"a": 3 * MICROS_PER_SECOND, "b": 5 * MICROS_PER_SECOND}, {}, []
    for epoch in log.epochs:
        epochs.append(tuple(e for e in epoch if e.table not in highest
                            or e.row[0] > highest[e.table] - delays[e.table]))
        for e in epoch:
            highest[e.table] = max(highest.get(e.table, e.row[0]), e.row[0])
    return ArrivalLog(tuple(epochs))


def batch(q, log: ArrivalLog) -> Counter:
    """The query over all of ``log`` at once (DuckDB: one epoch, so no row is late)."""
    return oracle_eowc(q, ArrivalLog((sum(log.epochs, ()),)), Convention.RISINGWAVE, close=True)


@pytest.mark.parametrize(("name", "convention"), JUDGED_BY_A_JOIN)
@settings(max_examples=40, deadline=None)
@given(log=two_source_logs().map(without_late_rows))
def test_a_join_that_judges_late_rows_is_exact_without_late_rows(name: str,
                                                                 convention: Convention,
                                                                 log: ArrivalLog) -> None:
    """With no row late for its own table, Flink's interval join loses no pair and pads no
    row that a pair was still to come for: at the close, the query's rows over the whole
    input (DuckDB)."""
    q = query(name)
    assert Counter(e.row for e in run_eowc(q, log, convention, close=True)) == batch(q, log)


#: Queries whose rows come from pairs: all of a SEMI join's, an outer join's with both times.
PAIRED = {"interval_SEMI": lambda row: True, **{
    name: (lambda row: None not in row[:2]) for name in
    ("interval_INNER", "interval_LEFT", "interval_RIGHT", "interval_FULL", "interval_right_first")}}


@pytest.mark.parametrize(("name", "convention"),
                         [p for p in JUDGED_BY_A_JOIN if p.values[0] in PAIRED])
@settings(max_examples=40, deadline=None)
@given(log=two_source_logs())
def test_a_join_that_judges_late_rows_never_makes_a_wrong_pair(name: str, convention: Convention,
                                                                log: ArrivalLog) -> None:
    """Late rows may miss a pair, never make one: every row from a pair is the query's over
    the whole input (DuckDB), as often at most."""
    q, paired = query(name), PAIRED[name]
    got = Counter(e.row for e in run_eowc(q, log, convention, close=True) if paired(e.row))
    assert got <= batch(q, log)


def test_union_emits_under_the_least_watermark() -> None:
    """docs/operators/joins.md: eu (delay 5 s) and us shifted by an hour (delay 1 min)."""
    script = parse_script((EXAMPLES / "analysis" / "union.sql").read_text())
    log = load_arrival_log(str(EXAMPLES / "union.jsonl"), script.sources).log
    emitted = [(e.epoch, format_timestamp(e.row[0])[11:19], e.row[1])
               for e in run_eowc(script.query, log, Convention.RISINGWAVE, close=True)]
    assert emitted == [(1, "10:00:00", 1), (1, "10:00:03", 2), (2, "10:00:20", 3),
                       (2, "10:01:30", 4)]


def test_update_mode_retracts_an_outer_row_when_its_match_arrives() -> None:
    q = query("interval_LEFT")
    log = ArrivalLog(((Event("a", (at(10), 1, 7)),), (Event("b", (at(9), 1, 8)),)))
    changes = [(c.epoch, c.op, c.row) for c in run_update(q, log, Convention.RISINGWAVE)]
    assert changes == [(0, "+", (at(10), None, 1, 7, None)),
                       (1, "-", (at(10), None, 1, 7, None)),
                       (1, "+", (at(10), at(9), 1, 7, 8))]


# ------------------------------------------------------------------------------ properties

@pytest.mark.parametrize(("name", "convention"), JUDGED_AT_SOURCES)
@settings(max_examples=40, deadline=None)
@given(log=two_source_logs())
def test_interpreter_equals_spec_after_every_epoch(name: str, convention: Convention,
                                                   log: ArrivalLog) -> None:
    q = query(name)
    epochs = len(log.epochs)
    expected = eowc_after_each_epoch(q, log, convention, close=True)
    emissions = list(run_eowc(q, log, convention, close=True))
    assert cumulative_by_epoch(emissions, epochs + 1) == expected
    assert all(before <= after for before, after in zip(expected, expected[1:], strict=False))
    got = snapshots(list(run_update(q, log, convention)), epochs)
    assert [Counter(s) for s in got] == update_after_each_epoch(q, log, convention)
    if epochs:
        final = update_after_each_epoch(q, log, convention)[-1]
        assert expected[-1] == final  # at the close Q' = Q


@pytest.mark.parametrize(("name", "convention"), JUDGED_AT_SOURCES)
@settings(max_examples=25, deadline=None)
@given(log=two_source_logs(), close=st.booleans())
def test_duckdb_agrees(name: str, convention: Convention, log: ArrivalLog, close: bool) -> None:
    q = query(name)
    emitted = Counter(e.row for e in run_eowc(q, log, convention, close=close))
    assert oracle_eowc(q, log, convention, close=close) == emitted


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=30, deadline=None)
@given(log=two_source_logs(), seed=st.integers(0, 2**16))
def test_order_within_an_epoch_does_not_matter(name: str, log: ArrivalLog, seed: int) -> None:
    """Where rows are judged at their sources; a join that judges them takes them in arrival
    order (test_a_join_that_judges_late_rows_takes_them_in_arrival_order)."""
    q = query(name)
    shuffled = []
    for epoch in log.epochs:
        events = list(epoch)
        random.Random(seed).shuffle(events)
        shuffled.append(tuple(events))
    for convention in (c for c in Convention if not judged_by_a_join(name, c)):
        def per_epoch(lg: ArrivalLog, convention: Convention = convention) -> list[Counter]:
            return cumulative_by_epoch(list(run_eowc(q, lg, convention, close=True)),
                                       len(lg.epochs) + 1)
        assert per_epoch(log) == per_epoch(ArrivalLog(tuple(shuffled)))


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=30, deadline=None)
@given(log=two_source_logs())
def test_batching_does_not_matter_within_the_delay(name: str, log: ArrivalLog) -> None:
    """Two consecutive epochs merged into one: when no row is late either way (every row is
    within the delay), the output at the end of the input is the same. (A join that judges
    its rows counts none late: test_a_join_that_judges_late_rows_is_exact_without_late_rows.)"""
    q = query(name)
    merged = ArrivalLog(tuple(sum(log.epochs[i:i + 2], ()) for i in range(0, len(log.epochs), 2)))
    for convention in (c for c in Convention if not judged_by_a_join(name, c)):
        outputs, lates = [], []
        for batching in (log, merged):
            late: list = []
            outputs.append(Counter(e.row for e in run_eowc(q, batching, convention, True,
                                                             late.append)))
            lates.append(late)
        if not any(lates):
            assert outputs[0] == outputs[1], convention


def test_join_state_stays_bounded() -> None:
    """A steady interval join: the state holds only the rows within the time bound plus the
    watermark delay, however long the input."""
    q = query("interval_FULL")
    events = [Event("a" if i % 2 else "b", (at(i / 4), i % 3, i)) for i in range(4000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, len(events), 20)))
    flow = compile_dataflow(q, Convention.RISINGWAVE, eowc=True)
    (join,) = [n.operator for n in flow.nodes if isinstance(n.operator, StreamJoin)]
    sizes = [join.state_rows for _ in flow.epochs(log, Convention.RISINGWAVE)]
    assert len(sizes) > 150  # the join emits in nearly every epoch of 200
    assert max(sizes[10:]) <= 60  # 4 rows/s; a 6 s bound plus 5 s delay: about 50 rows
    assert max(sizes[-10:]) <= max(sizes[10:20]) + 4
    assert list(run_eowc(q, log, Convention.RISINGWAVE, close=True))


# ------------------------------------------------------------------------------ refusals

def test_a_join_without_a_time_bound_is_refused_under_eowc() -> None:
    q = parse_script(SOURCES + "SELECT a.ts, b.ts AS bts FROM a JOIN b ON a.k = b.k "
                               "EMIT ON WINDOW CLOSE;").query
    with pytest.raises(PlanError, match="has no time bound between its two sides"):
        list(run_eowc(q, ArrivalLog(())))


def test_window_join_of_two_window_aggregates_by_hand() -> None:
    """Seed 004's window join of two window aggregates (docs/operators/joins.md): each side's
    window comes out of its aggregate when it closes on that side's watermark; the joined row
    when both have."""
    script = parse_script((EXAMPLES / "analysis" / "window_join.sql").read_text())
    log = load_arrival_log(str(EXAMPLES / "window_join.jsonl"), script.sources).log
    emitted = [(e.epoch, format_timestamp(e.row[0])[11:16], e.row[2:])
               for e in run_eowc(script.query, log, Convention.RISINGWAVE, close=True)]
    assert emitted == [(2, "10:00", (1, 2, 1)), (2, "10:00", (2, 1, 1)),
                       (3, "10:01", (1, 1, 1)), (4, "10:02", (3, 1, 1))]


def test_an_aggregate_over_a_join_below_another_join_runs() -> None:
    """Refused before the dataflow interpreter; now Q(INPUT) after each epoch, by hand:
    epoch 0: a(10s, k1) meets b(10.5s, k1) (10 in [9.5, 10.5]): count 1 at 10s; x(10s) meets
    a(10s): (10s, 1). Epoch 1: b(10.2s, k1) also matches (10 in [9.2, 10.2]): count 2, so
    (10s, 1) becomes (10s, 2). Epoch 2: a(10s, k2) has no b row but is a second a row at 10s
    for the outer join: (10s, 2) twice."""
    inner = ("(SELECT a.ts AS ts, count(*) AS n FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN "
             "b.ts - INTERVAL '1' SECOND AND b.ts GROUP BY a.ts)")
    q = parse_script(SOURCES + f"SELECT x.ts, n FROM {inner} x JOIN a ON x.ts = a.ts;").query
    s10, s = 10 * MICROS_PER_SECOND, MICROS_PER_SECOND
    log = ArrivalLog(((Event("a", (s10, 1, 1)), Event("b", (s10 + s // 2, 1, 7))),
                      (Event("b", (s10 + s // 5, 1, 8)),),
                      (Event("a", (s10, 2, 3)),)))
    assert [tuple(c) for c in run_update(q, log)] == [
        (0, "+", (s10, 1)), (1, "-", (s10, 1)), (1, "+", (s10, 2)), (2, "+", (s10, 2))]


@pytest.mark.parametrize("convention", [Convention.FLINK, Convention.SPARK], ids=lambda c: c.value)
def test_a_window_join_at_scale_agrees_across_backends(convention: Convention) -> None:
    """1,500 epochs, about 40,000 rows of 5,000 keys, one-minute windows over three hours,
    with rows moved past the watermark: under flink (a window join judges late rows by its
    own watermark) and spark (by the query's one global watermark) the reference, the
    composed executors and the DuckDB oracle give the same rows."""
    script = (SOURCES.replace("INTERVAL '3' SECOND", "INTERVAL '30' SECOND")
              .replace("INTERVAL '5' SECOND", "INTERVAL '1' MINUTE")
              + QUERIES["window_full"].replace("INTERVAL '5' SECOND", "INTERVAL '1' MINUTE")
              + ";")
    q = script_once(script).query
    minute = 60 * MICROS_PER_SECOND
    log = random_multi_source_log(sources_of(q.plan), convention, 3, LogShape(
        rows=20_000, epochs=1_500, span=180 * minute, keys=5_000, late=2_000, edges=500,
        lattices=((0, minute), (0, MICROS_PER_SECOND // 2))))
    late: list = []
    reference = Counter((e.epoch, e.row) for e in run_eowc(q, log, convention, False,
                                                           late.append))
    assert len(log.epochs) > 1_000 and len(late) > 0 and sum(reference.values()) > 30_000
    executors = run_in_process(q, log, convention)
    assert Counter((e.epoch, e.row) for e in executors.emissions) == reference
    final: Counter = Counter()
    for (_, row), n in reference.items():
        final[row] += n
    assert oracle_eowc(q, log, convention) == final


@pytest.mark.parametrize("seed", range(10))
def test_a_hopping_window_join_under_flink_agrees_across_backends(seed: int) -> None:
    """HOP windows on both sides: a row late for its table may still be taken into its open
    windows and not its fired ones (the composed join drops the pairs of a window it fired);
    the reference, the composed executors and the DuckDB oracle agree with late rows."""
    hop = "HOP({t}, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)"
    text = QUERIES["window_full"]
    for t in "ab":
        text = text.replace(f"TUMBLE({t}, ts, INTERVAL '5' SECOND)", hop.format(t=t))
    q = script_once(SOURCES + text + ";").query
    log = random_multi_source_log(sources_of(q.plan), Convention.FLINK, seed, LogShape(
        rows=200, epochs=60, span=120 * MICROS_PER_SECOND, keys=4, late=30, edges=10))
    reference = Counter((e.epoch, e.row) for e in run_eowc(q, log, Convention.FLINK))
    assert reference
    executors = run_in_process(q, log, Convention.FLINK)
    assert Counter((e.epoch, e.row) for e in executors.emissions) == reference
    final: Counter = Counter()
    for (_, row), n in reference.items():
        final[row] += n
    assert oracle_eowc(q, log, Convention.FLINK) == final
