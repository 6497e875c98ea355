"""``--ties row-id`` everywhere: rows with equal ORDER BY values in arrival order (RisingWave's
hidden ``_row_id``) in the reference, the in-process executors (the composed executor over
joins and unions too), the DuckDB oracle (the arrival position a column of its input, its own
SQL), update policies, ``eowc run`` and ``eowc verify``.

Hand-computed examples (equal times arriving in a known order, across a join, a LEFT and a
RIGHT JOIN's padded rows, a union, a TopN over a window aggregate), in every engine and
DuckDB; hypothesis properties on logs with many equal ORDER BY values: the reference equals
DuckDB over one source and over every kind of join and a union, the composed executor equals
the reference; the ``ties-by-value`` mutant (an executor that ranks equal values by value)
fails ``verify`` under row-id and passes under the deterministic order; an oracle that orders
a join's ties right then left, or ranks a padded side first, is caught.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from eowc.executors import composed as composed_module
from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc, run_update_policy
from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.operators.update_policy import UpdatePolicy
from eowc.semantics.oracles import duckdb_oracle
from eowc.semantics.oracles.duckdb_oracle import OracleUnsupported, oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import Case
from eowc.verify.cli.main import main
from eowc.verify.executors import InProcessExecutor
from eowc.verify.mutants import MUTANTS, MutantExecutor, mutant_named, mutants_for
from eowc.verify.pytest_plugin import verify_query
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, run_suite
from eowc.verify.transcripts import dump_transcript, parse_transcript, replay, transcript_of
from tests.strategies import BASE, cut_into_epochs, judged_at_sources
from tests.test_aggregates_more import same_rows
from tests.test_composed_executors import script_logs

RW = Convention.RISINGWAVE
S = MICROS_PER_SECOND

BIDS = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, item VARCHAR,
                    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""
TWO = """CREATE SOURCE a (ts TIMESTAMP, k BIGINT, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
CREATE SOURCE b (ts TIMESTAMP, k BIGINT, w BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""
JOIN = ("SELECT a.ts AS ats, b.ts AS bts, a.k, v, w FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN "
        "b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND")
OVER = ("SELECT ts, price, item, row_number() OVER (PARTITION BY auction ORDER BY ts) AS n, "
        "lag(item) OVER (PARTITION BY auction ORDER BY ts) AS l FROM bids EMIT ON WINDOW CLOSE")
TOP_OVER_COUNTS = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
                   "window_end ORDER BY n DESC) AS r FROM (SELECT window_start, window_end, "
                   "auction, count(*) AS n FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY "
                   "window_start, window_end, auction)) WHERE r <= 1 EMIT ON WINDOW CLOSE")
LAST_ROW = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
            "ORDER BY ts DESC) AS r FROM TUMBLE(bids, ts, INTERVAL '10' SECOND)) WHERE r <= 1 "
            "EMIT ON WINDOW CLOSE")


def bids(*rows: tuple[int, int | None, int, str]) -> ArrivalLog:
    """One epoch of bids (auction, price, second after BASE, item), in arrival order."""
    return ArrivalLog((tuple(Event("bids", (a, p, BASE + s * S, i)) for a, p, s, i in rows),))


def emitted(sql: str, log: ArrivalLog, ties: str | None) -> dict[str, list]:
    """The rows (in emission order) the reference and the in-process executors emit at the end
    of ``log``, and the DuckDB oracle's (sorted), each row without its first column."""
    query = parse_script(sql).query
    runs = {"reference": [e.row[1:] for e in run_eowc(query, log, RW, close=True, ties=ties)],
            "in-process": [e.row[1:] for e in run_in_process(query, log, RW, close=True,
                                                              ties=ties).emissions]}
    runs["duckdb"] = sorted(r[1:] for r in oracle_eowc(query, log, RW, True, ties=ties).elements())
    return runs


def agrees(engine: str, rows: list, expected: list) -> bool:
    """``rows`` are ``expected``: in that order, or as a bag for DuckDB (a batch query)."""
    return sorted(rows, key=repr) == sorted(expected, key=repr) if engine == "duckdb" \
        else rows == expected


def assert_tie_orders(sql: str, log: ArrivalLog, row_id: list, deterministic: list) -> None:
    """Every engine emits ``row_id`` under row-id and ``deterministic`` under the
    deterministic order."""
    for ties, expected in (("row-id", row_id), ("deterministic", deterministic)):
        for engine, rows in emitted(sql, log, ties).items():
            assert agrees(engine, rows, expected), (ties, engine)


# ------------------------------------------------------------------------------ by hand

def test_equal_times_come_in_arrival_order_under_row_id() -> None:
    """Auction 1 bids 5 (x), 3 (y), 4 (z), all at 1 s, in that order. Row-id: row_number and
    lag follow arrival, x y z; deterministic: the whole rows' order, by price: y z x."""
    log = bids((1, 5, 1, "x"), (1, 3, 1, "y"), (1, 4, 1, "z"))
    row_id = [(5, "x", 1, None), (3, "y", 2, "x"), (4, "z", 3, "y")]
    deterministic = [(3, "y", 1, None), (4, "z", 2, "y"), (5, "x", 3, "z")]
    for engine, rows in emitted(BIDS + OVER, log, "row-id").items():
        assert sorted(rows) == sorted(row_id), engine
    for engine, rows in emitted(BIDS + OVER, log, "deterministic").items():
        assert sorted(rows) == sorted(deterministic), engine


def test_a_join_orders_ties_by_its_left_row_then_its_right_row() -> None:
    """b1 (w 9), a1 (v 2), a2 (v 1), b2 (w 8) arrive in that order, all at 1 s with k 1: the
    join makes four rows with equal ``ats``. Their stream key is (left arrival, right
    arrival): (a1, b1) = (1, 0), (a1, b2) = (1, 3), (a2, b1) = (2, 0), (a2, b2) = (2, 3), so
    row_number gives (v, w) = (2, 9), (2, 8), (1, 9), (1, 8). The arrival of the joined row
    itself (the later of its two) would rank (1, 9) before (2, 8); the deterministic order
    ranks by value, (1, 8) first."""
    log = ArrivalLog(((Event("b", (BASE + S, 1, 9)), Event("a", (BASE + S, 1, 2)),
                       Event("a", (BASE + S, 1, 1)), Event("b", (BASE + S, 1, 8))),))
    sql = TWO + (f"SELECT ats, v, w, row_number() OVER (PARTITION BY k ORDER BY ats) AS n "
                 f"FROM ({JOIN}) EMIT ON WINDOW CLOSE")
    assert_tie_orders(sql, log, [(2, 9, 1), (2, 8, 2), (1, 9, 3), (1, 8, 4)],
                      [(1, 8, 1), (1, 9, 2), (2, 8, 3), (2, 9, 4)])


def test_an_unmatched_row_of_a_left_join_ranks_after_the_matched_ones() -> None:
    """a1 (v 1) matches b1, a2 (v 2) matches nothing: at equal ``ats`` and equal left arrival
    ... a1's joined row (1, 0) ranks before a2's NULL-padded one; a3 (v 0), arriving before
    both but unmatched, ranks first by its left arrival: the right side breaks ties only
    between rows of the same left row (NULLs last, RisingWave's ascending order)."""
    log = ArrivalLog(((Event("a", (BASE + S, 1, 0)), Event("b", (BASE + S, 1, 9)),
                       Event("a", (BASE + S, 1, 1)), Event("a", (BASE + S, 2, 2))),))
    sql = TWO + ("SELECT ats, v, w, row_number() OVER (ORDER BY ats) AS n FROM (SELECT a.ts AS "
                 "ats, a.k, v, w FROM a LEFT JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - "
                 "INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND) EMIT ON WINDOW CLOSE")
    for engine, rows in emitted(sql, log, "row-id").items():
        assert agrees(engine, rows, [(0, 9, 1), (1, 9, 2), (2, None, 3)]), engine


def test_a_top_n_over_a_window_aggregate_breaks_ties_by_the_group_key() -> None:
    """Auction 2's two bids arrive before auction 1's two: both count 2 in the window. An
    aggregate's row has no source row (its stream key is its group key), so under row-id as
    under the deterministic order the TopN keeps auction 1, not the auction that arrived
    first."""
    log = bids((2, 1, 1, "p"), (2, 1, 2, "q"), (1, 1, 3, "r"), (1, 1, 4, "s"))
    for ties in ("row-id", "deterministic"):
        for engine, rows in emitted(BIDS + TOP_OVER_COUNTS, log, ties).items():
            assert [r[1:] for r in rows] == [(1, 2, 1)], (ties, engine)


def test_a_union_ranks_each_row_by_its_own_arrival() -> None:
    """b's row arrives first, then a's: UNION ALL of both at equal ts, row_number in arrival
    order gives b's value 1."""
    log = ArrivalLog(((Event("b", (BASE + S, 1, 7)), Event("a", (BASE + S, 1, 3))),))
    sql = TWO + ("SELECT ts, v, row_number() OVER (ORDER BY ts) AS n FROM (SELECT ts, v FROM a "
                 "UNION ALL SELECT ts, w FROM b) EMIT ON WINDOW CLOSE")
    assert_tie_orders(sql, log, [(7, 1), (3, 2)], [(3, 1), (7, 2)])


def test_a_right_join_ranks_a_row_without_a_left_row_after_the_joined_ones() -> None:
    """b1 (k 2, w 8) arrives first and matches nothing; a1 (k 1, v 5), then b2 (k 1, w 9),
    which matches a1; all at 1 s. The RIGHT JOIN's rows at equal ``bts``: (a1, b2) with
    stream key (1, 2), and b1's with a NULL-padded left side, (none, 0): a padded side comes
    after every row (NULLS LAST), so row_number gives w 9 then w 8, though b1 arrived first.
    The deterministic order ranks the padded row first (its NULL ``ats``, NULLs first)."""
    log = ArrivalLog(((Event("b", (BASE + S, 2, 8)), Event("a", (BASE + S, 1, 5)),
                       Event("b", (BASE + S, 1, 9))),))
    sql = TWO + ("SELECT bts, w, row_number() OVER (ORDER BY bts) AS n FROM (SELECT a.ts AS "
                 "ats, b.ts AS bts, v, w FROM a RIGHT JOIN b ON a.k = b.k AND a.ts BETWEEN "
                 "b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND) EMIT ON WINDOW CLOSE")
    assert_tie_orders(sql, log, [(9, 1), (8, 2)], [(8, 1), (9, 2)])


def test_an_anti_join_ranks_its_rows_by_their_left_arrival() -> None:
    """a1 (v 3) then a2 (v 1), both k 1 at 1 s; b has no row of k 1: the ANTI JOIN keeps both,
    each ranked by its own (left) row's arrival: row_number gives v 3 first, lag(v) of v 1 is
    3. The deterministic order ranks v 1 first."""
    log = ArrivalLog(((Event("a", (BASE + S, 1, 3)), Event("a", (BASE + S, 1, 1)),
                       Event("b", (BASE + 30 * S, 2, 0))),))
    assert_tie_orders(TWO + JOINED_QUERIES["over_anti"], log, [(3, 1, None), (1, 2, 3)],
                      [(1, 1, None), (3, 2, 1)])


@pytest.mark.parametrize("convention, kept", [(Convention.FLINK, "z"), (RW, "x"),
                                              (Convention.SPARK, "x")])
def test_a_last_row_deduplication_keeps_the_last_tie_to_arrive_under_flink(
        convention: Convention, kept: str) -> None:
    """Bids x, y, z arrive in that order, x and z at the window's latest time (3 s), y at 1 s.
    Keeping the last row of the window (ORDER BY ts DESC, at most 1): Flink keeps z, the last
    of the tied rows to arrive (its window deduplication replaces the kept row by each later
    row whose time is not smaller: docs/divergences/window-dedup-last-row-ties-flink.yaml);
    RisingWave's ``_row_id`` ranks x, the first, and so does the spark convention. The
    deterministic order keeps the lesser row, x (price 1), under all three."""
    query = parse_script(BIDS + LAST_ROW).query
    log = bids((1, 1, 3, "x"), (1, 9, 1, "y"), (1, 5, 3, "z"))
    for ties, item in (("row-id", kept), ("deterministic", "x")):
        runs = {"reference": run_eowc(query, log, convention, close=True, ties=ties),
                "in-process": run_in_process(query, log, convention, close=True,
                                             ties=ties).emissions}
        items = {engine: [e.row[3] for e in rows] for engine, rows in runs.items()}
        items["duckdb"] = [r[3] for r in oracle_eowc(query, log, convention, True,
                                                     ties=ties).elements()]
        assert items == dict.fromkeys(items, [item]), (ties, items)


def test_the_oracle_refuses_row_id_over_a_join_of_a_keyed_source_by_name() -> None:
    keyed = TWO.replace("w BIGINT,", "w BIGINT, PRIMARY KEY (k),")
    query = parse_script(keyed + f"SELECT * FROM ({JOIN}) EMIT ON WINDOW CLOSE").query
    with pytest.raises(OracleUnsupported, match="--ties row-id.*sources without a primary key "
                                                "only, not of b"):
        oracle_eowc(query, ArrivalLog(()), RW, True, ties="row-id")


def test_an_update_policy_takes_row_id() -> None:
    """first_value(item) of a window whose two rows share ts 1 s: 'late' arrives before
    'early'. Row-id: 'late', the first to arrive; deterministic: 'early', the lesser row."""
    sql = BIDS + ("SELECT window_start, first_value(item) AS f FROM TUMBLE(bids, ts, INTERVAL "
                  "'10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE")
    query = parse_script(sql).query
    log = bids((1, 1, 1, "late"), (1, 1, 1, "early"))
    policy = UpdatePolicy(1, 0)
    for ties, first in (("row-id", "late"), ("deterministic", "early")):
        firings = list(run_update_policy(query, log, policy, RW, close=True, ties=ties))
        assert {f.row[1] for f in firings} == {first}, ties  # early, then on time


# ------------------------------------------------------------------------- properties

#: Single-source queries whose results depend on the order of ties.
ORACLE_QUERIES = {
    "over": "SELECT ts, price, item, row_number() OVER (PARTITION BY auction ORDER BY ts) AS n, "
            "lag(item) OVER (PARTITION BY auction ORDER BY ts) AS l, first_value(price) OVER "
            "(PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS f "
            "FROM bids EMIT ON WINDOW CLOSE",
    "top": "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
           "ORDER BY price DESC) AS r FROM TUMBLE(bids, ts, INTERVAL '10' SECOND)) WHERE r <= 2 "
           "EMIT ON WINDOW CLOSE",
    "dedup": "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY ts) AS r "
             "FROM bids) WHERE r = 1 EMIT ON WINDOW CLOSE",
    "first": "SELECT window_start, first_value(item) AS f, last_value(item) AS l FROM "
             "TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE",
    "sort": "SELECT ts, auction, item FROM bids EMIT ON WINDOW CLOSE",
    "top_over_counts": TOP_OVER_COUNTS,
    "last_row": LAST_ROW,
}


@st.composite
def tied_bids(draw: st.DrawFn) -> ArrivalLog:
    """Bids with many ties: times on a grid of whole seconds over 12 s (equal times, rows on
    window edges), two auctions, prices 0-2 or NULL, items a/b/c (whole rows repeat), out of
    order, cut into epochs at random."""
    rows = draw(st.lists(st.tuples(st.integers(1, 2), st.one_of(st.none(), st.integers(0, 2)),
                                   st.sampled_from([0, 1, 1, 1, 2, 9, 10, 10, 11]),
                                   st.sampled_from("abc")), min_size=2, max_size=16))
    events = [Event("bids", (a, p, BASE + s * S, i)) for a, p, s, i in rows]
    cuts = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    return cut_into_epochs(events, cuts)


def assert_reference_equals_duckdb(query: Query, log: ArrivalLog) -> None:
    """Under row-id, every convention whose rows are judged at their sources, before and at
    the end of the input."""
    for convention in judged_at_sources(query):
        for close in (False, True):
            reference = Counter(e.row for e in run_eowc(query, log, convention, close=close,
                                                        ties="row-id"))
            assert same_rows(reference, oracle_eowc(query, log, convention, close,
                                                     ties="row-id")), (convention, close)


@pytest.mark.parametrize("name", sorted(ORACLE_QUERIES))
@settings(max_examples=12, deadline=None)
@given(log=tied_bids())
def test_the_reference_equals_duckdb_under_row_id(name: str, log: ArrivalLog) -> None:
    """Every convention, before and at the end of the input: the reference's rows under
    row-id are DuckDB's, whose ORDER BY breaks ties by each row's first arrival position."""
    query = parse_script(BIDS + ORACLE_QUERIES[name]).query
    assert_reference_equals_duckdb(query, log)


ON = "ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND"


def _joined(kind: str) -> str:
    if kind in ("SEMI", "ANTI"):
        return f"SELECT a.ts AS ats, a.k, v FROM a LEFT {kind} JOIN b {ON}"
    return f"SELECT a.ts AS ats, b.ts AS bts, a.k, v, w FROM a {kind} JOIN b {ON}"


def _over(relation: str, t: str, value: str) -> str:
    return (f"SELECT {t}, {value}, row_number() OVER (PARTITION BY k ORDER BY {t}) AS n, "
            f"lag({value}) OVER (PARTITION BY k ORDER BY {t}) AS l FROM ({relation}) "
            f"EMIT ON WINDOW CLOSE")


def _top(relation: str, t: str) -> str:
    return (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
            f"ORDER BY k) AS r FROM TUMBLE(({relation}), {t}, INTERVAL '5' SECOND)) WHERE r <= 2 "
            f"EMIT ON WINDOW CLOSE")


UNION = "SELECT ts, k, v FROM a UNION ALL SELECT ts, k, w FROM b"
WINDOW_JOIN = ("SELECT l.window_start, l.window_end, l.k, v, w FROM (SELECT * FROM TUMBLE(a, ts, "
               "INTERVAL '5' SECOND)) l JOIN (SELECT * FROM TUMBLE(b, ts, INTERVAL '5' SECOND)) r "
               "ON l.window_start = r.window_start AND l.window_end = r.window_end AND l.k = r.k")

#: OVER windows and TopNs over every kind of join, a union and both nested: their results depend on
#: the order of ties (k and the times repeat: the ORDER BY values tie).
JOINED_QUERIES = {
    **{f"over_{kind.lower()}": _over(_joined(kind), "bts" if kind == "RIGHT" else "ats",
                                     "v" if kind in ("SEMI", "ANTI") else "w")
       for kind in ("INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI")},
    **{f"top_{kind.lower()}": _top(_joined(kind), "bts" if kind == "RIGHT" else "ats")
       for kind in ("INNER", "LEFT", "RIGHT", "FULL")},
    "top_window_join": f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
                       f"window_end ORDER BY k) AS r FROM ({WINDOW_JOIN})) WHERE r <= 2 "
                       f"EMIT ON WINDOW CLOSE",
    "over_union": _over(UNION, "ts", "v"),
    "top_union": _top(UNION, "ts"),
    # a union's row made of two source rows (the least of its inputs' keys), and a join whose
    # left row is a union's (its own source's position)
    "over_union_of_joins": _over(f"SELECT a.ts AS ats, a.k, v FROM a JOIN b {ON} UNION ALL "
                                 f"SELECT a.ts, a.k, w FROM a LEFT JOIN b {ON}", "ats", "v"),
    "over_join_of_union": _over(f"SELECT u.ts AS ats, u.k, u.v, w FROM ({UNION}) u JOIN b ON "
                                f"u.k = b.k AND u.ts BETWEEN b.ts - INTERVAL '2' SECOND AND "
                                f"b.ts + INTERVAL '4' SECOND", "ats", "w"),
}


@st.composite
def tied_pairs(draw: st.DrawFn) -> ArrivalLog:
    """Rows of a and b with many ties: times among 1, 2, 6 and 9 s, mostly 1 s (equal times,
    windows of 5 s), keys 1-2, values 0-3 or NULL (whole rows repeat), the two sources
    interleaved, cut into epochs at random."""
    rows = draw(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from([1, 1, 1, 2, 6, 9]),
                                   st.integers(1, 2), st.one_of(st.none(), st.integers(0, 3))),
                         min_size=3, max_size=12))
    events = [Event(table, (BASE + s * S, k, v)) for table, s, k, v in rows]
    cuts = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    return cut_into_epochs(events, cuts)


@pytest.mark.parametrize("name", sorted(JOINED_QUERIES))
@settings(max_examples=12, deadline=None)
@given(log=tied_pairs())
def test_the_reference_equals_duckdb_under_row_id_over_joins_and_unions(name: str,
                                                                        log: ArrivalLog) -> None:
    """Every convention, before and at the end of the input: the reference's rows under
    row-id are DuckDB's, whose ORDER BY breaks ties by the rows' stream keys, looked up in
    each source's arrival log (left before right, a padded side last; a union's row by its
    own)."""
    query = parse_script(TWO + JOINED_QUERIES[name]).query
    assert_reference_equals_duckdb(query, log)


#: Composed queries (joins, unions) whose results depend on the order of ties.
COMPOSED_QUERIES = {
    "join_dedup": f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ats) AS "
                  f"r FROM ({JOIN})) WHERE r = 1 EMIT ON WINDOW CLOSE",
    "join_over": f"SELECT ats, k, v, w, row_number() OVER (PARTITION BY k ORDER BY ats) AS n, "
                 f"lag(w) OVER (PARTITION BY k ORDER BY ats) AS l FROM ({JOIN}) "
                 f"EMIT ON WINDOW CLOSE",
    "join_first": f"SELECT window_start, first_value(w) AS f, last_value(v) AS l FROM "
                  f"TUMBLE(({JOIN}), ats, INTERVAL '5' SECOND) GROUP BY window_start "
                  f"EMIT ON WINDOW CLOSE",
    "union_over": "SELECT ts, v, row_number() OVER (ORDER BY ts) AS n, lag(v) OVER (ORDER BY ts) "
                  "AS l FROM (SELECT ts, v FROM a UNION ALL SELECT ts, w FROM b) "
                  "EMIT ON WINDOW CLOSE",
}


@pytest.mark.parametrize("name", sorted(COMPOSED_QUERIES))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_the_composed_executor_equals_the_reference_under_row_id(name: str,
                                                                 data: st.DataObject) -> None:
    """Same rows, epochs and order through restarts, under every convention."""
    script = parse_script(TWO + COMPOSED_QUERIES[name])
    log = data.draw(script_logs(script.sources, 1, 8, max_rows=16), label="log")
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    for convention in Convention:
        expected = list(run_eowc(script.query, log, convention, close=True, ties="row-id"))
        run = run_in_process(script.query, log, convention, close=True, restart_after=restarts,
                             ties="row-id")
        assert run.emissions == expected, convention


# ------------------------------------------------------------------------------ mutant

def test_ties_by_value_fails_verify_under_row_id_and_passes_under_the_deterministic_order() -> None:
    """The mutant ranks equal ORDER BY values by value: a bug under row-id (killed), the
    right executor under the deterministic order (every property holds)."""
    mutant = MutantExecutor(mutant_named("ties-by-value"))
    for name, sql in (("top", ORACLE_QUERIES["top"]), ("join_over", COMPOSED_QUERIES["join_over"])):
        target = Target(name, (BIDS if name == "top" else TWO) + sql + ";")
        args = ([target], mutant, [RW], 10, 0, False, GeneratorSettings(), None)
        assert not run_suite(*args, ties="row-id").ok, name
        assert run_suite(*args).ok, name
    assert mutant.mutant in mutants_for("row-id") and mutant.mutant not in MUTANTS
    assert mutant_named("ties-by-arrival-order") not in mutants_for("row-id")


def _caught(check: Callable[[], None]) -> bool:
    try:
        check()
    except AssertionError:
        return True
    return False


def test_a_composed_executor_that_forgets_the_arrival_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The composed executor's stages bound without the arrival order (a bug in its logic:
    ties by value over the join) fail the hand-computed join example."""
    real = composed_module.executor_plan
    monkeypatch.setattr(composed_module, "executor_plan",
                        lambda query, convention, arrival=None: real(query, convention))
    assert _caught(test_a_join_orders_ties_by_its_left_row_then_its_right_row)


def test_an_oracle_that_orders_ties_by_value_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """DuckDB's ORDER BY without the arrival column fails the property on a log whose equal
    times arrive out of value order (x, y, z at 1 s: row-id numbers them x y z)."""
    monkeypatch.setattr(duckdb_oracle._Compiler, "arrival_columns", lambda self, input: [])
    log = bids((1, 5, 1, "x"), (1, 3, 1, "y"), (1, 4, 1, "z"), (2, 1, 30, "w"))
    assert _caught(lambda: test_the_reference_equals_duckdb_under_row_id.hypothesis.inner_test(
        "over", log))


def test_an_oracle_that_orders_a_joins_ties_right_then_left_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The oracle's stream key with the right row's arrival first fails the hand-computed join
    (a2's rows would come between a1's) and the property on the same log."""
    real = duckdb_oracle._Compiler.stream_key_origins
    monkeypatch.setattr(duckdb_oracle._Compiler, "stream_key_origins",
                        lambda self, input: [way[::-1] for way in real(self, input)])
    assert _caught(test_a_join_orders_ties_by_its_left_row_then_its_right_row)
    log = ArrivalLog(((Event("b", (BASE + S, 1, 9)), Event("a", (BASE + S, 1, 2)),
                       Event("a", (BASE + S, 1, 1)), Event("b", (BASE + S, 1, 8))),))
    inner = test_the_reference_equals_duckdb_under_row_id_over_joins_and_unions.hypothesis.inner_test
    assert _caught(lambda: inner("over_inner", log))
    inner("over_union", log)  # a union's row has one source row: nothing to reverse


def test_an_oracle_that_ranks_a_padded_side_first_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """A NULL-padded side before every row (NULLS FIRST) fails the hand-computed RIGHT JOIN."""
    monkeypatch.setattr(duckdb_oracle, "NEVER_ARRIVED", -1)
    assert _caught(test_a_right_join_ranks_a_row_without_a_left_row_after_the_joined_ones)


# --------------------------------------------------------------------------------- CLI

def _files(tmp_path, sql: str, rows: list[dict]) -> tuple[str, str]:  # noqa: ANN001
    query, events = tmp_path / "q.sql", tmp_path / "e.jsonl"
    query.write_text(sql + ";\n", encoding="utf-8")
    events.write_text("".join(json.dumps({"table": "bids", "row": r}) + "\n" for r in rows),
                      encoding="utf-8")
    return str(query), str(events)


def test_eowc_run_oracle_duckdb_takes_row_id(tmp_path) -> None:  # noqa: ANN001
    """Equal prices at one time, 'second' arriving after 'first': the window TopN 1 keeps
    'first' under row-id, by the reference and by DuckDB; Spark is refused by name."""
    query, events = _files(tmp_path, BIDS + ORACLE_QUERIES["top"].replace("r <= 2", "r <= 1"), [
        {"auction": 2, "price": 7, "ts": "2024-01-01 00:00:01", "item": "first"},
        {"auction": 1, "price": 7, "ts": "2024-01-01 00:00:01", "item": "second"}])
    runner = CliRunner()
    for how in (["--oracle", "duckdb"], ["--engine", "reference"]):
        out = runner.invoke(main, ["run", query, events, "--close", "--ties", "row-id", *how])
        assert out.exit_code == 0, out.output
        assert [json.loads(line)["item"] for line in out.stdout.splitlines()] == ["first"], how
    plain = runner.invoke(main, ["run", query, events, "--close", "--oracle", "duckdb"])
    assert [json.loads(line)["item"] for line in plain.stdout.splitlines()] == ["second"]
    for how in (["--oracle", "spark"], ["--engine", "spark"]):
        refused = runner.invoke(main, ["run", query, events, "--close", "--ties", "row-id", *how])
        assert refused.exit_code == 2 and f"{' '.join(how)} breaks ties in the deterministic " \
            "order only" in refused.output, refused.output


def test_eowc_run_update_policy_takes_row_id(tmp_path) -> None:  # noqa: ANN001
    query, events = _files(tmp_path, BIDS + ORACLE_QUERIES["first"], [
        {"auction": 1, "price": 1, "ts": "2024-01-01 00:00:01", "item": "late"},
        {"auction": 1, "price": 1, "ts": "2024-01-01 00:00:01", "item": "early"}])
    runner = CliRunner()
    for ties, first in (("row-id", "late"), ("deterministic", "early")):
        out = runner.invoke(main, ["run", query, events, "--close", "--early-every", "1",
                                   "--ties", ties])
        assert out.exit_code == 0, out.output
        inserted = [r["f"] for r in map(json.loads, out.stdout.splitlines()) if r["_op"] == "+"]
        assert inserted[-1] == first, ties  # each line is an epoch: early firings, then final


def test_eowc_verify_takes_row_id_and_reports_it(tmp_path) -> None:  # noqa: ANN001
    query, _ = _files(tmp_path, BIDS + ORACLE_QUERIES["top"], [])
    report = tmp_path / "r.json"
    runner = CliRunner()
    done = runner.invoke(main, ["verify", query, "--ties", "row-id", "--cases", "4",
                                "--report", str(report)])
    assert done.exit_code == 0, done.output
    assert "every property held (4 cases, ties in arrival order (row-id))" in done.output
    assert json.loads(report.read_text(encoding="utf-8"))["ties"] == "row-id"
    refused = runner.invoke(main, ["verify", query, "--ties", "row-id", "--executor", "spark"])
    assert refused.exit_code == 2 and "--executor spark breaks ties in the deterministic order " \
        "only" in refused.output


def test_a_transcript_keeps_its_tie_order() -> None:
    """The join example as a transcript under row-id: dumped with ``ties: row-id``, read back
    with it, its expected rows the row-id ones, replayed clean by the in-process executors
    and failed by the ties-by-value mutant; an unknown order is refused by name."""
    log = ArrivalLog(((Event("b", (BASE + S, 1, 9)), Event("a", (BASE + S, 1, 2)),
                       Event("a", (BASE + S, 1, 1)), Event("b", (BASE + S, 1, 8))),
                      (Event("a", (BASE + 30 * S, 2, 0)), Event("b", (BASE + 30 * S, 3, 0)))))
    sql = TWO + COMPOSED_QUERIES["join_dedup"] + ";"
    text = dump_transcript(transcript_of(Case(sql, RW, log, ties="row-id"), "join-ties"))
    assert "\nties: row-id\n" in text
    transcript = parse_transcript(text)
    assert transcript.case.ties == "row-id"
    assert [r[3:5] for rows in (transcript.expect or {}).values() for r in rows] == [(2, 9)]
    assert replay(transcript, InProcessExecutor()) == []
    assert replay(transcript, MutantExecutor(mutant_named("ties-by-value")))
    with pytest.raises(InputError, match="unknown tie order 'arrival'"):
        parse_transcript(text.replace("ties: row-id", "ties: arrival"))


def test_eowc_replay_keeps_the_tie_order_and_spark_refuses_it(tmp_path) -> None:  # noqa: ANN001
    """Auction 1's first bid: 'y' and 'x' tie at 1 s, 'y' arriving first: pinned 'y' (row-id),
    replayed clean in process (the deterministic order would emit 'x')."""
    log = ArrivalLog(((Event("bids", (1, 7, BASE + S, "y")), Event("bids", (1, 7, BASE + S, "x"))),
                      (Event("bids", (2, 1, BASE + 30 * S, "z")),)))
    path = tmp_path / "t.yaml"
    path.write_text(dump_transcript(transcript_of(Case(BIDS + ORACLE_QUERIES["dedup"] + ";", RW,
                                                       log, ties="row-id"), "t")),
                    encoding="utf-8")
    assert "item: y" in path.read_text(encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(main, ["replay", str(path)])
    assert done.exit_code == 0 and "1 passed" in done.output, done.output
    refused = runner.invoke(main, ["replay", str(path), "--executor", "spark"])
    assert refused.exit_code == 2 and "--executor spark breaks ties in the deterministic order " \
        "only" in refused.output, refused.output


def test_the_pytest_plugin_takes_row_id(tmp_path) -> None:  # noqa: ANN001
    """verify_query(..., ties="row-id"): the in-process executors pass, the ties-by-value
    mutant fails with a counterexample."""
    settings.register_profile("ties-few", max_examples=5, deadline=None, derandomize=True,
                              phases=[Phase.explicit, Phase.generate])  # no shrinking
    query, _ = _files(tmp_path, BIDS + ORACLE_QUERIES["top"], [])
    verify_query(query, conventions=["risingwave"], ties="row-id", profile="ties-few",
                 out=tmp_path)
    with pytest.raises(AssertionError, match="counterexample"):
        verify_query(query, MutantExecutor(mutant_named("ties-by-value")), ["risingwave"],
                     ties="row-id", profile="ties-few", out=tmp_path)


# ------------------------------------------------------------------------------ at scale

def test_row_id_over_a_join_at_the_scale_users_run() -> None:
    """3,000 rows of two sources over ten hours in 600 epochs, times on a one-minute grid (so
    hundreds of ties), 5 keys, arriving up to two minutes out of order: the composed executor
    (row_number and lag per key over a two-minute interval join) equals the reference
    under row-id, and row-id changes the result."""
    rng = random.Random(7)
    events = []
    for i in range(3000):
        table = rng.choice("ab")
        t = BASE + (i * 600 // 3000 + rng.randrange(0, 3)) * 60 * S
        events.append(Event(table, (t, rng.randrange(5), rng.randrange(5))))
    log = ArrivalLog(tuple(tuple(events[i:i + 5]) for i in range(0, len(events), 5)))
    sql = TWO + ("SELECT ats, k, v, w, row_number() OVER (PARTITION BY k ORDER BY ats) AS n, "
                 "lag(w) OVER (PARTITION BY k ORDER BY ats) AS l FROM (SELECT a.ts AS ats, a.k, "
                 "v, w FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '2' "
                 "MINUTE) EMIT ON WINDOW CLOSE")
    query = parse_script(sql).query
    expected = list(run_eowc(query, log, RW, close=True, ties="row-id"))
    assert len(expected) > 1000 and len({e.epoch for e in expected}) > 100
    assert run_in_process(query, log, RW, close=True, ties="row-id").emissions == expected
    assert Counter(e.row for e in run_eowc(query, log, RW, close=True)) != Counter(
        e.row for e in expected)
