"""The SQL forms that semantics/frontend/rewrites.py reads (issue 18): comma joins with the
condition in WHERE (interval and window joins, three tables), WITH, named windows, Flink's
legacy GROUP BY TUMBLE/HOP/SESSION, ORDER BY ... LIMIT and the written forms of a TopN's rank
condition; unnest in FROM without a table refused. Each form is checked two ways: its plan is
the plan of the form the planner already read (written by hand next to it), and its output
through the reference interpreter, in both emit modes, is computed by hand in the docstring."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.rewrites import RULES, rewrite
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import Plan, TopN, WindowTVF, walk
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from tests.strategies import judged_at_sources_params, script_once
from tests.test_joins import two_source_logs

S = MICROS_PER_SECOND
MS = S // 1000
BASE = 1_700_000_000 * S  # 2023-11-14 22:13:20, a multiple of 5 and 10 seconds
SOURCES = """
CREATE SOURCE a (ts TIMESTAMP, k BIGINT, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
CREATE SOURCE b (ts TIMESTAMP, k BIGINT, w BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE c (ts TIMESTAMP, k BIGINT, u BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
"""
EOWC = " EMIT ON WINDOW CLOSE"


def at(seconds: float) -> int:
    return BASE + int(seconds * S)


def plan(sql: str) -> Plan:
    return script_once(SOURCES + sql + ";").query.plan


def eowc(sql: str, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
         close: bool = False) -> list[tuple[int, tuple]]:
    query = parse_script(SOURCES + sql + EOWC + ";").query
    return [(e.epoch, e.row) for e in run_eowc(query, log, convention, close=close)]


def update(sql: str, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE
           ) -> list[tuple[int, str, tuple]]:
    query = parse_script(SOURCES + sql + ";").query
    return [(c.epoch, c.op, c.row) for c in run_update(query, log, convention)]


def rejected(sql: str) -> str:
    with pytest.raises(SqlError) as info:
        parse_script(SOURCES + sql + ";")
    return str(info.value)


def log(*epochs: list[tuple[str, float, int | None, int]]) -> ArrivalLog:
    """Epochs of (table, seconds after BASE, k, value) rows."""
    return ArrivalLog(tuple(tuple(Event(t, (at(s), k, x)) for t, s, k, x in epoch)
                            for epoch in epochs))


# ------------------------------------------------------------------------------ comma joins

INTERVAL = "a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts"
JOINED = "SELECT a.ts AS ats, b.ts AS bts, a.k, v, w"
TUMBLED = ("(SELECT * FROM TABLE(TUMBLE(TABLE {0}, DESCRIPTOR(ts), INTERVAL '5' SECOND))) {1}")
WINDOWED = ("SELECT l.window_start, l.window_end, l.k, v, w FROM " + TUMBLED.format("a", "l")
            + ", " + TUMBLED.format("b", "r"))
WINDOW_ON = ("SELECT l.window_start, l.window_end, l.k, v, w FROM " + TUMBLED.format("a", "l")
             + " JOIN " + TUMBLED.format("b", "r"))
WINDOW_CONDITION = "l.window_start = r.window_start AND l.window_end = r.window_end AND l.k = r.k"
THREE = ("a.k = b.k AND {0}", "b.k = c.k AND c.ts BETWEEN a.ts AND a.ts + INTERVAL '1' SECOND")

SAME_AS_ON = {
    "flink interval join": (f"{JOINED} FROM a, b WHERE a.k = b.k AND {INTERVAL}",
                            f"{JOINED} FROM a JOIN b ON a.k = b.k AND {INTERVAL}"),
    "aliases": (f"SELECT x.ts, y.ts AS yts, v FROM a x, b y WHERE x.k = y.k AND "
                f"{INTERVAL.replace('a.', 'x.').replace('b.', 'y.')}",
                f"SELECT x.ts, y.ts AS yts, v FROM a x JOIN b y ON x.k = y.k AND "
                f"{INTERVAL.replace('a.', 'x.').replace('b.', 'y.')}"),
    "one-sided conjuncts stay in WHERE": (
        f"{JOINED} FROM a, b WHERE v > 0 AND a.k = b.k AND b.w < 9 AND {INTERVAL}",
        f"{JOINED} FROM a JOIN b ON a.k = b.k AND {INTERVAL} WHERE v > 0 AND b.w < 9"),
    "window join": (f"{WINDOWED} WHERE {WINDOW_CONDITION}", f"{WINDOW_ON} ON {WINDOW_CONDITION}"),
    "three tables": (
        f"SELECT a.ts AS ats, v, w, u FROM a, b, c WHERE {THREE[0].format(INTERVAL)} AND "
        f"{THREE[1]}",
        f"SELECT a.ts AS ats, v, w, u FROM a JOIN b ON {THREE[0].format(INTERVAL)} "
        f"JOIN c ON {THREE[1]}"),
    "a comma after an explicit join": (
        f"SELECT a.ts AS ats, v, w, u FROM a JOIN b ON {THREE[0].format(INTERVAL)}, c "
        f"WHERE {THREE[1]}",
        f"SELECT a.ts AS ats, v, w, u FROM a JOIN b ON {THREE[0].format(INTERVAL)} "
        f"JOIN c ON {THREE[1]}"),
}


@pytest.mark.parametrize("name", SAME_AS_ON)
def test_a_comma_join_is_the_plan_of_its_join_on(name: str) -> None:
    where, on = SAME_AS_ON[name]
    assert plan(where + EOWC) == plan(on + EOWC)


def test_flink_interval_join_in_where_by_hand() -> None:
    """a at 10 s meets b at 11 s (10 is in [9, 11]), not b at 13 s ([11, 13]); a at 30 s has
    no b of key 1. The output is ordered by ats, complete under min(W_a, W_b - 2 s): after
    epoch 0, min(7, 8 - 2) = 6; after epoch 1, min(27, 25 - 2) = 23 > 10, so it comes out in
    epoch 1. Emit on update gives the row as soon as both rows are in (epoch 0)."""
    sql = f"{JOINED} FROM a, b WHERE a.k = b.k AND {INTERVAL}"
    events = log([("a", 10, 1, 7), ("b", 11, 1, 8), ("b", 13, 1, 9)],
                 [("a", 30, 1, 0), ("b", 30, 2, 0)])
    row = (at(10), at(11), 1, 7, 8)
    for convention in Convention:
        assert eowc(sql, events, convention) == [(1, row)], convention
    assert update(sql, events) == [(0, "+", row)]


def test_three_tables_in_where_by_hand() -> None:
    """a ⋈ b as above (a 10 s with b 11 s); c of key 1 at 10.5 s is in [10, 11], c at 12 s is
    not. With --close every complete row comes out: exactly one (10, 7, 8, 5)."""
    sql = (f"SELECT a.ts AS ats, v, w, u FROM a, b, c WHERE {THREE[0].format(INTERVAL)} AND "
           f"{THREE[1]}")
    events = ArrivalLog(((Event("a", (at(10), 1, 7)), Event("b", (at(11), 1, 8)),
                          Event("c", (at(10.5), 1, 5)), Event("c", (at(12), 1, 6))),))
    assert [row for _, row in eowc(sql, events, close=True)] == [(at(10), 7, 8, 5)]
    assert [(e, op, row) for e, op, row in update(sql, events)] == [(0, "+", (at(10), 7, 8, 5))]


def test_a_window_join_in_where_by_hand() -> None:
    """[0, 5 s) of key 1 has a 1 s (v 10) and b 2 s (w 20): one joined row once the window
    closes on both sides: W_a = 9 s after epoch 1, W_b = 6 s after epoch 2."""
    sql = f"{WINDOWED} WHERE {WINDOW_CONDITION}"
    events = log([("a", 1, 1, 10), ("b", 2, 1, 20), ("a", 3, 2, 30)], [("a", 12, 1, 0)],
                 [("b", 11, 1, 0)])
    assert eowc(sql, events) == [(2, (at(0), at(5), 1, 10, 20))]


def test_a_comma_join_without_a_relating_condition_is_refused() -> None:
    message = rejected("SELECT a.ts FROM a, b WHERE a.v > 0")
    assert "b is joined by a comma, but no condition in WHERE relates it to a" in message
    assert "cross join is not supported" in message
    assert "qualify its columns" in rejected("SELECT a.ts FROM a, b WHERE v = w")
    assert "c is joined by a comma" in rejected(
        f"SELECT a.ts FROM a, b, c WHERE a.k = b.k AND {INTERVAL}")


CONJUNCTS = ["a.k = b.k", "a.ts >= b.ts - INTERVAL '2' SECOND", "a.ts <= b.ts",
             "v > 0", "b.w < 9", "a.v <> 3"]


@settings(max_examples=60, deadline=None)
@given(st.permutations(CONJUNCTS))
def test_any_order_of_where_gives_the_join_on_of_the_two_sided_conjuncts(order: list[str]) -> None:
    """Whatever the order of WHERE's conjuncts, the two-sided ones (in their order) are the
    ON condition and the one-sided ones (in theirs) stay in WHERE."""
    two_sided = [c for c in order if "a." in c and "b." in c]
    one_sided = [c for c in order if c not in two_sided]
    written = f"{JOINED} FROM a, b WHERE {' AND '.join(order)}{EOWC}"
    expected = (f"{JOINED} FROM a JOIN b ON {' AND '.join(two_sided)} "
                f"WHERE {' AND '.join(one_sided)}{EOWC}")
    assert plan(written) == plan(expected)


# ------------------------------------------------------------------------------ WITH

CTES = ("WITH pos AS (SELECT ts, k, v FROM a WHERE v > 0), "
        "tumbled AS (SELECT * FROM TUMBLE(pos, ts, INTERVAL '5' SECOND)) "
        "SELECT window_start, k, count(*) AS n FROM tumbled GROUP BY window_start, k")
CTES_INLINE = ("SELECT window_start, k, count(*) AS n FROM (SELECT * FROM TUMBLE((SELECT ts, k, "
               "v FROM a WHERE v > 0), ts, INTERVAL '5' SECOND)) tumbled GROUP BY window_start, k")


def test_ctes_are_their_queries_written_in_place() -> None:
    assert plan(CTES + EOWC) == plan(CTES_INLINE + EOWC)
    join = (f"WITH big AS (SELECT * FROM a WHERE v > 0) SELECT big.ts, w FROM big JOIN b "
            f"ON big.k = b.k AND {INTERVAL.replace('a.', 'big.')}")
    assert plan(join + EOWC) == plan(
        f"SELECT big.ts, w FROM (SELECT * FROM a WHERE v > 0) big JOIN b ON big.k = b.k AND "
        f"{INTERVAL.replace('a.', 'big.')}" + EOWC)
    nested = "SELECT ts FROM (WITH x AS (SELECT ts FROM a) SELECT * FROM x) y"
    assert plan(nested) == plan("SELECT ts FROM (SELECT * FROM (SELECT ts FROM a) x) y")


def test_a_cte_in_a_flink_session_window_is_the_view_of_the_same_query() -> None:
    session = ("SELECT window_start, k, count(*) AS n FROM TABLE(SESSION(TABLE pos PARTITION BY "
               "k, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end, k")
    as_cte = plan(f"WITH pos AS (SELECT ts, k FROM a WHERE v > 0) {session}{EOWC}")
    as_view = parse_script(SOURCES + "CREATE VIEW pos AS SELECT ts, k FROM a WHERE v > 0;\n"
                           + session + EOWC + ";").query.plan
    assert as_cte == as_view


def test_ctes_by_hand() -> None:
    """Rows of a with v > 0 counted per 5-second window and key: [0, 5) has key 1 once (the
    row at 2 s has v 0) and key 2 once; [5, 10) key 1 once. W_a = 3 s after epoch 0 closes
    nothing; 17 s after epoch 1 closes both. On update every count comes out in its epoch."""
    events = log([("a", 1, 1, 5), ("a", 2, 1, 0), ("a", 3, 2, 4), ("a", 6, 1, 1)],
                 [("a", 20, 1, 1)])
    assert sorted(eowc(CTES, events)) == [(1, (at(0), 1, 1)), (1, (at(0), 2, 1)),
                                          (1, (at(5), 1, 1))]
    assert sorted(update(CTES, events)) == [(0, "+", (at(0), 1, 1)), (0, "+", (at(0), 2, 1)),
                                            (0, "+", (at(5), 1, 1)), (1, "+", (at(20), 1, 1))]


def test_unsupported_ctes_are_refused_by_name() -> None:
    assert "WITH RECURSIVE is not supported" in rejected(
        "WITH RECURSIVE x AS (SELECT ts FROM a) SELECT * FROM x")
    assert "a column list after the CTE name x is not supported" in rejected(
        "WITH x (t) AS (SELECT ts FROM a) SELECT * FROM x")


# ------------------------------------------------------------------------------ WINDOW w

OVER_INLINE = ("SELECT ts, k, sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING "
               "AND CURRENT ROW) AS s FROM a")
NAMED = {
    "OVER w": "SELECT ts, k, sum(v) OVER w AS s FROM a WINDOW w AS (PARTITION BY k ORDER BY ts "
              "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
    "OVER (w ROWS ...)": "SELECT ts, k, sum(v) OVER (w ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
                         "AS s FROM a WINDOW w AS (PARTITION BY k ORDER BY ts)",
    "OVER (w ORDER BY ... ROWS ...)": "SELECT ts, k, sum(v) OVER (w ORDER BY ts ROWS BETWEEN 1 "
                                      "PRECEDING AND CURRENT ROW) AS s FROM a WINDOW w AS "
                                      "(PARTITION BY k)",
    "WINDOW w2 AS (w1 ...)": "SELECT ts, k, sum(v) OVER w2 AS s FROM a WINDOW w1 AS (PARTITION "
                             "BY k), w2 AS (w1 ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT "
                             "ROW)",
}


@pytest.mark.parametrize("name", NAMED)
def test_a_named_window_is_its_definition_written_in(name: str) -> None:
    assert plan(NAMED[name] + EOWC) == plan(OVER_INLINE + EOWC)


def test_named_window_by_hand() -> None:
    """sum(v) over the row before and the current one, per key in ts order: key 1 has 5 (1 s),
    3 (2 s), 2 (4 s): sums 5, 8, 5; key 2 has 10 (3 s). W_a = 1 s after epoch 0 completes no
    row (1 s < 1 s is false under RisingWave); 17 s after epoch 1 completes the four, emitted
    in ts order. On update each row's sum is final when it is added (no row follows it)."""
    events = log([("a", 1, 1, 5), ("a", 2, 1, 3), ("a", 4, 1, 2), ("a", 3, 2, 10)],
                 [("a", 20, 1, 0)])
    sql = NAMED["OVER w"]
    assert eowc(sql, events) == [(1, (at(1), 1, 5)), (1, (at(2), 1, 8)), (1, (at(3), 2, 10)),
                                 (1, (at(4), 1, 5))]
    assert sorted(update(sql, events)) == [(0, "+", (at(1), 1, 5)), (0, "+", (at(2), 1, 8)),
                                           (0, "+", (at(3), 2, 10)), (0, "+", (at(4), 1, 5)),
                                           (1, "+", (at(20), 1, 2))]


def test_wrong_named_windows_are_refused_by_name() -> None:
    assert "window w2 is not defined (the WINDOW clause defines: w)" in rejected(
        "SELECT ts, sum(v) OVER w2 FROM a WINDOW w AS (PARTITION BY k ORDER BY ts)")
    assert "cannot add PARTITION BY" in rejected(
        "SELECT ts, sum(v) OVER (w PARTITION BY v) FROM a WINDOW w AS (ORDER BY ts)")
    assert "window w already has ORDER BY" in rejected(
        "SELECT ts, sum(v) OVER (w ORDER BY v) FROM a WINDOW w AS (ORDER BY ts)")
    assert "window w already has a frame" in rejected(
        "SELECT ts, sum(v) OVER (w ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM a "
        "WINDOW w AS (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)")


# ------------------------------------------------------------------------------ GROUP BY TUMBLE

LEGACY = {
    "TUMBLE": ("SELECT TUMBLE_START(ts, INTERVAL '5' SECOND) AS ws, TUMBLE_END(ts, INTERVAL '5' "
               "SECOND) AS we, k, count(*) AS n FROM a GROUP BY TUMBLE(ts, INTERVAL '5' SECOND), k",
               "SELECT window_start AS ws, window_end AS we, k, count(*) AS n FROM TABLE(TUMBLE("
               "TABLE a, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end, k",
               WindowSpec(WindowKind.TUMBLE, 5 * S, 0, 0)),
    "HOP": ("SELECT k, HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS ws, sum(v) AS "
            "s FROM a GROUP BY k, HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
            "SELECT k, window_start AS ws, sum(v) AS s FROM TABLE(HOP(TABLE a, DESCRIPTOR(ts), "
            "INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY window_start, window_end, k",
            WindowSpec(WindowKind.HOP, 10 * S, 5 * S, 0)),
    "SESSION": ("SELECT SESSION_START(ts, INTERVAL '5' SECOND) AS ws, SESSION_END(ts, INTERVAL "
                "'5' SECOND) AS we, k, count(*) AS n FROM a GROUP BY SESSION(ts, INTERVAL '5' "
                "SECOND), k",
                "SELECT window_start AS ws, window_end AS we, k, count(*) AS n FROM TABLE(SESSION("
                "TABLE a PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY "
                "window_start, window_end, k", None),
}


@pytest.mark.parametrize("name", LEGACY)
def test_a_legacy_group_window_is_the_window_table_function(name: str) -> None:
    """Flink's HOP(time, slide, size) is a hop of size 10 s every 5 s, as HOP(TABLE t,
    DESCRIPTOR(time), slide, size) is."""
    legacy, tvf, spec = LEGACY[name]
    got = plan(legacy + EOWC)
    assert got == plan(tvf + EOWC)
    if spec is not None:
        assert [n.spec for n in walk(got) if isinstance(n, WindowTVF)] == [spec]


def test_tumble_start_end_and_rowtime_by_hand() -> None:
    """Per 5-second window and key: [0, 5) key 1 twice, [5, 10) key 2 once. TUMBLE_ROWTIME is
    window_end - 1 ms. Under Flink a window closes when W reaches end - 1 ms: W_a = 3 s after
    epoch 0 closes none; W_a = 17 s after epoch 1 closes both ([20, 25) stays open). On update
    each count is emitted in its epoch."""
    sql = ("SELECT TUMBLE_START(ts, INTERVAL '5' SECOND) AS ws, TUMBLE_END(ts, INTERVAL '5' "
           "SECOND) AS we, TUMBLE_ROWTIME(ts, INTERVAL '5' SECOND) AS wt, k, count(*) AS n "
           "FROM a GROUP BY TUMBLE(ts, INTERVAL '5' SECOND), k")
    events = log([("a", 1, 1, 5), ("a", 2, 1, 3), ("a", 6, 2, 1)], [("a", 20, 1, 0)])
    first, second = (at(0), at(5), at(5) - MS, 1, 2), (at(5), at(10), at(10) - MS, 2, 1)
    assert eowc(sql, events, Convention.FLINK) == [(1, first), (1, second)]
    assert sorted(update(sql, events, Convention.FLINK)) == [
        (0, "+", first), (0, "+", second), (1, "+", (at(20), at(25), at(25) - MS, 1, 1))]


def test_legacy_sessions_are_per_group_by_hand() -> None:
    """A gap of 5 s, per key: key 1 at 1 s and 3 s is one session [1, 8), at 10 s another
    [10, 15); key 2 at 2 s is [2, 7) (one session over all keys would merge 1..15 s into
    one). W_a = 7 s after epoch 0 closes [2, 7) (RisingWave: end <= W); 37 s after epoch 1
    closes the others."""
    events = log([("a", 1, 1, 0), ("a", 3, 1, 0), ("a", 2, 2, 0), ("a", 10, 1, 0)],
                 [("a", 40, 1, 0)])
    got = eowc(LEGACY["SESSION"][0], events)
    assert sorted(got) == [(0, (at(2), at(7), 2, 1)), (1, (at(1), at(8), 1, 2)),
                           (1, (at(10), at(15), 1, 1))]


def test_wrong_legacy_group_windows_are_refused_by_name() -> None:
    assert "TUMBLE_START(...) must repeat the arguments of GROUP BY TUMBLE(...)" in rejected(
        "SELECT TUMBLE_START(ts, INTERVAL '10' SECOND), count(*) FROM a "
        "GROUP BY TUMBLE(ts, INTERVAL '5' SECOND)")
    assert "TUMBLE_PROCTIME is not supported: eowc has no processing time" in rejected(
        "SELECT TUMBLE_PROCTIME(ts, INTERVAL '5' SECOND), count(*) FROM a GROUP BY "
        "TUMBLE(ts, INTERVAL '5' SECOND)")
    assert "expected GROUP BY HOP(time_column, slide, size)" in rejected(
        "SELECT count(*) FROM a GROUP BY HOP(ts, INTERVAL '5' SECOND)")
    assert "GROUP BY TUMBLE(...) reads one table or subquery" in rejected(
        f"SELECT count(*) FROM a JOIN b ON a.k = b.k AND {INTERVAL} GROUP BY "
        f"TUMBLE(a.ts, INTERVAL '5' SECOND)")


# ------------------------------------------------------------------------------ TopN

def test_order_by_limit_by_hand() -> None:
    """The two earliest rows: after epoch 0 they are 2 s and 5 s; 3 s (epoch 1, not late under
    W = 2 s) displaces 5 s. EMIT ON WINDOW CLOSE emits a row once its time is complete and no
    earlier row can still come: nothing under W = 2 s, both 2 s and 3 s under W = 17 s
    (epoch 2); 5 s never. On update the TopN's changes come out as they happen."""
    sql = "SELECT ts, k, v FROM a ORDER BY ts LIMIT 2"
    events = log([("a", 5, 1, 1), ("a", 2, 1, 2)], [("a", 3, 1, 4)], [("a", 20, 1, 0)])
    assert eowc(sql, events, close=True) == [(2, (at(2), 1, 2)), (2, (at(3), 1, 4))]
    assert sorted(update(sql, events)) == [(0, "+", (at(2), 1, 2)), (0, "+", (at(5), 1, 1)),
                                           (1, "+", (at(3), 1, 4)), (1, "-", (at(5), 1, 1))]


def test_order_by_limit_over_a_union_all_by_hand() -> None:
    """The two earliest of a's and b's times: a 4 s, b 1 s, b 3 s, a 2 s give 1 s and 2 s.
    Under the least watermark min(W_a, W_b) = min(27 s, 25 s) after epoch 1 both are complete.
    A LIMIT on a UNION ALL applies to the whole union, not to its last SELECT."""
    sql = "SELECT ts, v FROM a UNION ALL SELECT ts, w FROM b ORDER BY ts LIMIT 2"
    events = log([("a", 4, 1, 1), ("b", 1, 1, 2), ("b", 3, 1, 3), ("a", 2, 1, 4)],
                 [("a", 30, 1, 0), ("b", 30, 1, 0)])
    assert eowc(sql, events) == [(1, (at(1), 2)), (1, (at(2), 4))]
    assert "LIMIT on a UNION ALL is not supported" in rejected(
        "SELECT ts FROM a UNION ALL SELECT ts FROM b LIMIT 2")


def test_order_by_limit_is_refused_where_it_cannot_be_read() -> None:
    assert "ORDER BY ... LIMIT orders by the query's output columns (ts, k), not v" in rejected(
        "SELECT ts, k FROM a ORDER BY v LIMIT 3")
    assert "LIMIT is not supported without ORDER BY" in rejected("SELECT ts FROM a LIMIT 3")
    assert "OFFSET is not supported yet" in rejected("SELECT ts FROM a ORDER BY ts LIMIT 3 OFFSET 1")


RANKED = ("SELECT ts, k, v FROM (SELECT ts, k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) "
          "AS rn FROM a) WHERE ")
FORMS = {"rn <= {n}": 0, "rn < {n} + 1": 0, "{n} >= rn": 0, "{n} + 1 > rn": 0,
         "rn < {n}": 1, "rn BETWEEN 1 AND {n}": 0}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 500), st.sampled_from(sorted(FORMS)))
def test_every_written_rank_condition_is_the_top_n_of_rn_le_n(n: int, form: str) -> None:
    """``rn < N`` keeps N - 1 rows; the other forms keep N; all are the plan of rn <= N."""
    limit = n - FORMS[form]
    got = plan(RANKED + form.format(n=n) + EOWC)
    if limit >= 1:
        assert got == plan(RANKED + f"rn <= {limit}" + EOWC)
        assert [t.limit for t in walk(got) if isinstance(t, TopN)] == [limit]


def test_the_rules_compose_a_cte_a_named_window_and_a_rank_form() -> None:
    """A TopN written with a CTE, a named window and ``rn < 2`` is the plain deduplication."""
    composed = ("WITH ranked AS (SELECT ts, k, v, ROW_NUMBER() OVER w AS rn FROM a WINDOW w AS "
                "(PARTITION BY k ORDER BY ts)) SELECT ts, k, v FROM ranked WHERE rn < 2")
    assert plan(composed + EOWC) == plan(RANKED.replace(") WHERE", ") ranked WHERE")
                                         + "rn <= 1" + EOWC)


def test_rn_equals_one_is_deduplication() -> None:
    assert plan(RANKED + "rn = 1" + EOWC) == plan(RANKED + "rn <= 1" + EOWC)
    assert plan(RANKED + "1 = rn" + EOWC) == plan(RANKED + "rn <= 1" + EOWC)


def test_other_conditions_filter_the_top_n_by_hand() -> None:
    """The first two rows per key, then v > 1: key 1's first two are 1 s (v 5) and 2 s (v 0),
    so only 1 s passes; 4 s (v 7) is third and out, although v > 1 (filtering before ranking
    would let it in); key 2's 3 s (v 2) passes. W_a = 17 s after epoch 1 completes them."""
    sql = RANKED + "rn < 3 AND v > 1"
    events = log([("a", 1, 1, 5), ("a", 2, 1, 0), ("a", 4, 1, 7), ("a", 3, 2, 2)],
                 [("a", 20, 3, 0)])
    assert eowc(sql, events) == [(1, (at(1), 1, 5)), (1, (at(3), 2, 2))]
    assert sorted(update(sql, events)) == [(0, "+", (at(1), 1, 5)), (0, "+", (at(3), 2, 2))]


# ------------------------------------------------------------------------------ unnest, rules

def test_unnest_in_from_without_a_table_is_refused_by_name() -> None:
    """unnest itself is tests/test_arrays.py's; here: the FROM forms the rule cannot read."""
    assert "unnest in FROM without a table is not supported" in rejected("SELECT * FROM unnest(a)")
    assert "unnest takes an ARRAY, got BIGINT" in rejected("SELECT unnest(v) FROM a")


def test_the_rules_and_the_dialects() -> None:
    assert [r.__name__ for r in RULES] == ["lateral_unnest", "inline_ctes", "named_windows",
                                           "comma_joins", "legacy_group_windows",
                                           "grouping_sets", "top_n_conditions", "subquery_joins"]
    tree = exp.select("ts").from_("a")
    assert rewrite(tree, "flink") == tree == rewrite(tree, "risingwave")
    with pytest.raises(ValueError, match="unknown dialect 'spark'"):
        rewrite(tree, "spark")


# ------------------------------------------------------------------------------ DuckDB oracle

ORACLE_QUERIES = {
    "comma interval join": f"{JOINED} FROM a, b WHERE a.k = b.k AND a.ts BETWEEN b.ts - "
                           f"INTERVAL '20' SECOND AND b.ts + INTERVAL '10' SECOND",
    "comma window join": f"{WINDOWED} WHERE {WINDOW_CONDITION}".replace("'5'", "'20'"),
    "ctes": CTES,
    "named window": NAMED["OVER (w ROWS ...)"],
    "legacy tumble": LEGACY["TUMBLE"][0].replace(" AS we,", " AS we, TUMBLE_ROWTIME(ts, INTERVAL "
                                                   "'5' SECOND) AS wt,"),
    "legacy hop": LEGACY["HOP"][0],
    "legacy session": LEGACY["SESSION"][0],
    "order by limit": "SELECT ts, k, v FROM a ORDER BY ts LIMIT 3",
    "top n with a condition": RANKED + "3 > rn AND v > 1",
}


@pytest.mark.parametrize(("name", "convention"), judged_at_sources_params(
    sorted(ORACLE_QUERIES), lambda name: script_once(SOURCES + ORACLE_QUERIES[name] + EOWC
                                                     + ";").query))
@settings(max_examples=30, deadline=None)
@given(events=two_source_logs(), close=st.booleans())
def test_duckdb_agrees_on_the_rewritten_forms(name: str, convention: Convention,
                                              events: ArrivalLog, close: bool) -> None:
    """The DuckDB oracle, which computes the output from INPUT and the final watermark with
    its own SQL, agrees with the reference on every rewritten form."""
    query = script_once(SOURCES + ORACLE_QUERIES[name] + EOWC + ";").query
    emitted = Counter(e.row for e in run_eowc(query, events, convention, close=close))
    event(f"{name}: {'some' if emitted else 'no'} rows")  # the rows of every form are by hand above
    assert oracle_eowc(query, events, convention, close=close) == emitted


def test_a_refused_form_is_placed_at_its_text() -> None:
    """A refusal names the line and column of the part it is about, in the script as written
    (the query is on line 5, after the three CREATE SOURCE lines)."""
    query = "SELECT a.ts FROM a, b WHERE a.v > 0"
    assert rejected(query).startswith(f"line 5, column {query.index(', b') + 3}: a join needs")
    message = rejected("SELECT ts,\n  sum(v) OVER w2 FROM a WINDOW w AS (ORDER BY ts)")
    assert message.startswith("line 6, column ") and "window w2 is not defined" in message
