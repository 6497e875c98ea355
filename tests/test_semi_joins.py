"""Semi and anti joins written as subqueries (Flink's window semi/anti joins: ``IN``,
``EXISTS``, ``NOT IN``, ``NOT EXISTS`` over the same window table function, correlated on
window_start and window_end), and RisingWave's ASOF joins, once run as plain joins (a wrong
answer), now read as ASOF joins (tests/test_asof_join.py)."""

from __future__ import annotations

import inspect
import random
import sys
import textwrap
from collections import Counter
from typing import Any

import duckdb
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from eowc.executors.driver import run_in_process
from eowc.executors.interval_join import IntervalJoin
from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend import rewrites
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import AsofJoin, Join, Query, walk
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from tests.test_joins import SOURCES, at, two_source_logs

STOCKS = """
CREATE TABLE stock_prices (stock_name VARCHAR, stock_time TIMESTAMP, price INT);
CREATE TABLE market_data (stock_name VARCHAR, market_time TIMESTAMP, sentiment DOUBLE PRECISION);
"""


@pytest.mark.parametrize("join", ["ASOF JOIN", "ASOF LEFT JOIN"])
def test_an_asof_join_is_never_run_as_a_plain_join(join: str) -> None:
    """Once a plain join (12 rows where RisingWave's docs print 6), then refused, now an
    AsofJoin (tests/test_asof_join.py)."""
    query = parse_script(STOCKS + f"SELECT sp.stock_name, md.sentiment FROM stock_prices sp "
                         f"{join} market_data md ON sp.stock_name = md.stock_name "
                         "AND md.market_time <= sp.stock_time;").query
    assert [n.name for n in walk(query.plan) if isinstance(n, AsofJoin)] == [join]


# ------------------------------------------------------------------------------ window semi/anti joins

LEFT = "(SELECT * FROM TUMBLE(a, ts, INTERVAL '5' SECOND)) l"
RIGHT = "(SELECT * FROM TUMBLE(b, ts, INTERVAL '5' SECOND)) r"
SAME_WINDOW = "l.window_start = r.window_start AND l.window_end = r.window_end"
SUBQUERIES = {
    "in": f"l.k IN (SELECT k FROM {RIGHT} WHERE {SAME_WINDOW})",
    "exists": f"EXISTS (SELECT * FROM {RIGHT} WHERE l.k = r.k AND {SAME_WINDOW})",
    "not_in": f"l.k NOT IN (SELECT k FROM {RIGHT} WHERE {SAME_WINDOW})",
    "not_exists": f"NOT EXISTS (SELECT * FROM {RIGHT} WHERE l.k = r.k AND {SAME_WINDOW})",
    # unqualified: the outer k is a's (SQL's scoping), the subquery's k is b's
    "unqualified_not_in": f"k NOT IN (SELECT k FROM {RIGHT} WHERE {SAME_WINDOW})",
}
SEMI_QUERIES = {name: f"SELECT l.window_start, l.ts, l.k, v FROM {LEFT} WHERE {condition} "
                      f"EMIT ON WINDOW CLOSE" for name, condition in SUBQUERIES.items()}


def semi_query(name: str) -> Query:
    return parse_script(SOURCES + SEMI_QUERIES[name] + ";").query


def row(second: int, k: int | None, v: int) -> tuple[int, int, int | None, int]:
    """A left row as the queries select it: its window's start, its time, k and v."""
    return at(second - second % 5), at(second), k, v


#: Windows of 5 s; a's watermark is ts - 3 s, b's ts - 5 s. [0, 5): a keys 1, 2, NULL; b keys
#: 1, 1. [5, 10): a keys 1, 2; b keys NULL, 2. [10, 15): a keys 3 (and 9 from epoch 1); b's
#: key 3 arrives in epoch 1. Epoch 1 (W_a = 11 s, W_b = 11 s) closes [0, 5) and [5, 10) on
#: both sides; epoch 2 (W_a = 27 s, W_b = 25 s) closes [10, 15).
LOG = ArrivalLog((
    (Event("a", (at(1), 1, 10)), Event("a", (at(2), 2, 20)), Event("a", (at(3), None, 30)),
     Event("b", (at(1), 1, 0)), Event("b", (at(4), 1, 0)),
     Event("a", (at(6), 1, 40)), Event("a", (at(7), 2, 50)),
     Event("b", (at(8), None, 0)), Event("b", (at(9), 2, 0)),
     Event("a", (at(11), 3, 60))),
    (Event("b", (at(12), 3, 0)), Event("a", (at(14), 9, 70)), Event("b", (at(16), 7, 0))),
    (Event("a", (at(30), 5, 0)), Event("b", (at(30), 6, 0))),
))
SEMI = [(1, row(1, 1, 10)), (1, row(7, 2, 50)), (2, row(11, 3, 60))]
#: [0, 5): the a row of key 1 is matched; [5, 10): key 2; [10, 15): key 3
NOT_EXISTS = [(1, row(2, 2, 20)), (1, row(3, None, 30)), (1, row(6, 1, 40)),
              (2, row(14, 9, 70))]
#: NOT IN drops NULL (b has rows in [0, 5)) and key 1 in [5, 10) (1 NOT IN (NULL, 2) is unknown)
NOT_IN = [(1, row(2, 2, 20)), (2, row(14, 9, 70))]
EOWC_ROWS = {"in": SEMI, "exists": SEMI, "not_exists": NOT_EXISTS, "not_in": NOT_IN,
             "unqualified_not_in": NOT_IN}


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", sorted(SEMI_QUERIES))
def test_window_semi_and_anti_joins_emit_each_left_row_once_when_the_window_closes(
        name: str, convention: Convention) -> None:
    """Hand-computed: a semi join's left row once (key 1 in [0, 5) meets two b rows), when
    its window has closed on both sides; an anti join's left rows without a match."""
    emitted = sorted((e.epoch, e.row) for e in run_eowc(semi_query(name), LOG, convention))
    assert emitted == sorted(EOWC_ROWS[name])
    assert sorted((e.epoch, e.row) for e in run_in_process(semi_query(name), LOG, convention)
                  .emissions) == emitted


def test_the_subquery_is_read_as_a_left_semi_or_anti_join() -> None:
    plans = {name: semi_query(name).plan for name in SEMI_QUERIES}
    kinds = {name: next(n.kind for n in walk(plan) if isinstance(n, Join))
             for name, plan in plans.items()}
    assert kinds == {"in": "semi", "exists": "semi", "not_in": "anti", "not_exists": "anti",
                     "unqualified_not_in": "anti"}


UPDATE_ROWS = {
    "in": [{row(1, 1, 10), row(7, 2, 50)},
           {row(1, 1, 10), row(7, 2, 50), row(11, 3, 60)},
           {row(1, 1, 10), row(7, 2, 50), row(11, 3, 60)}],
    "not_exists": [{row(2, 2, 20), row(3, None, 30), row(6, 1, 40), row(11, 3, 60)},
                   {row(2, 2, 20), row(3, None, 30), row(6, 1, 40), row(14, 9, 70)},
                   {row(2, 2, 20), row(3, None, 30), row(6, 1, 40), row(14, 9, 70),
                    row(30, 5, 0)}],
    "not_in": [{row(2, 2, 20), row(11, 3, 60)},
               {row(2, 2, 20), row(14, 9, 70)},
               {row(2, 2, 20), row(14, 9, 70), row(30, 5, 0)}],
}
UPDATE_ROWS["exists"] = UPDATE_ROWS["in"]
UPDATE_ROWS["unqualified_not_in"] = UPDATE_ROWS["not_in"]


@pytest.mark.parametrize("name", sorted(SEMI_QUERIES))
def test_window_semi_and_anti_joins_on_update(name: str) -> None:
    """Hand-computed tables after each epoch, emitting on update: b's key 3 arriving in
    epoch 1 retracts the anti join's row of key 3 and adds the semi join's."""
    changes = list(run_update(semi_query(name), LOG, Convention.RISINGWAVE))
    tables = snapshots(changes, len(LOG.epochs))
    assert [set(t) for t in tables[-3:]] == UPDATE_ROWS[name]
    assert all(count == 1 for t in tables for count in Counter(t).values())


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", sorted(SEMI_QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=two_source_logs(), close=st.booleans())
def test_the_duckdb_oracle_agrees(name: str, convention: Convention, log: ArrivalLog,
                                  close: bool) -> None:
    q = semi_query(name)
    emitted = Counter(e.row for e in run_eowc(q, log, convention, close=close))
    assert oracle_eowc(q, log, convention, close=close) == emitted


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", sorted(SEMI_QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=two_source_logs(), data=st.data())
def test_the_executor_equals_the_reference_through_restarts(
        name: str, convention: Convention, log: ArrivalLog, data: st.DataObject) -> None:
    q = semi_query(name)
    expected = list(run_eowc(q, log, convention, close=True))
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    assert run_in_process(q, log, convention, close=True, restart_after=restarts).emissions \
        == expected


@pytest.mark.parametrize(("where", "message"), [
    (f"{SUBQUERIES['in']} AND {SUBQUERIES['not_exists']}",
     "more than one IN/EXISTS subquery in a WHERE is not supported"),
    (f"l.k IN (SELECT k FROM {RIGHT} WHERE {SAME_WINDOW} GROUP BY k)",
     "IN \\(subquery\\) with GROUP in the subquery is not supported"),
    (f"l.k IN (SELECT k, w FROM {RIGHT} WHERE {SAME_WINDOW})",
     "IN \\(subquery\\) needs a subquery of one column"),
    (f"l.k IN (SELECT max(k) FROM {RIGHT} WHERE {SAME_WINDOW})",
     "IN \\(subquery\\) with an aggregate"),
    ("EXISTS (SELECT * FROM b)", "an uncorrelated EXISTS \\(subquery\\) is not supported"),
    ("l.k IN (SELECT k FROM b UNION ALL SELECT k FROM b)",
     "IN \\(subquery\\) over a UNION is not supported"),
    (f"l.k = 1 OR {SUBQUERIES['exists']}",
     "EXISTS \\(subquery\\) is supported only as a condition of WHERE"),
    (f"l.k = 1 OR {SUBQUERIES['in']}", "IN \\(subquery\\) is supported only as a condition of WHERE"),
])
def test_other_subqueries_are_refused_by_name(where: str, message: str) -> None:
    with pytest.raises(SqlError, match=message):
        parse_script(SOURCES + f"SELECT l.window_start, l.ts FROM {LEFT} WHERE {where} "
                     f"EMIT ON WINDOW CLOSE;")


def test_a_subquery_in_the_where_of_a_join_is_refused_by_name() -> None:
    with pytest.raises(SqlError, match="an IN/EXISTS subquery in the WHERE of a join is not supported"):
        parse_script(SOURCES + f"SELECT l.window_start FROM {LEFT} JOIN {RIGHT} ON {SAME_WINDOW} "
                     f"WHERE EXISTS (SELECT * FROM b x WHERE x.k = l.k) EMIT ON WINDOW CLOSE;")


# ------------------------------------------------------------------------------ mutants

def _mutated(function: Any, original: str, mutant: str) -> Any:
    """``function`` with one line of its source changed: a bug injected into its logic."""
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(original) == 1, original
    namespace = dict(sys.modules[function.__module__].__dict__)
    exec(compile(source.replace(original, mutant), function.__module__, "exec"), namespace)
    return namespace[function.__name__]


#: a's watermark runs ahead: b's rows of [0, 5) are final first (epoch 1) and flag a's row
#: of [0, 5) matched; a's row is final only once b's watermark passes 5 s (epoch 2).
AHEAD = ArrivalLog(((Event("a", (at(1), 1, 10)), Event("b", (at(2), 1, 0))),
                    (Event("a", (at(20), 5, 0)),),
                    (Event("b", (at(20), 5, 0)),)))


@pytest.mark.parametrize("name", sorted(SEMI_QUERIES))
def test_an_executor_that_forgets_a_match_is_caught(name: str, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    """The executor's kept row forgets the match flagged by a partner consumed before it
    (``matched = entry[1]`` read as False): the semi join loses a's row of [0, 5) and the
    anti join emits it; the comparison with the reference says so."""
    q = semi_query(name)
    # under RisingWave's rule each side's rows are final by the other side's watermark alone
    # (under Flink's, a window joins waits for both, so no side's rows are final first)
    convention = Convention.RISINGWAVE
    expected = list(run_eowc(q, AHEAD, convention, close=True))
    assert run_in_process(q, AHEAD, convention, close=True).emissions == expected
    monkeypatch.setattr(IntervalJoin, "_consume", _mutated(IntervalJoin._consume,
                                                           "matched = entry[1]", "matched = False"))
    assert run_in_process(q, AHEAD, convention, close=True).emissions != expected


def test_not_in_read_as_not_exists_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite without NOT IN's NULL rule (``x NOT IN (...)`` read as ``NOT EXISTS (...
    WHERE x = y)``) gives NOT EXISTS' rows, which the hand-computed NOT IN rows refuse, and
    so does DuckDB's answer to the subquery as written."""
    monkeypatch.setattr(rewrites, "_matching_condition", _mutated(
        rewrites._matching_condition, "        if negated:", "        if False:"))
    emitted = sorted((e.epoch, e.row) for e in run_eowc(semi_query("not_in"), LOG,
                                                        Convention.FLINK))
    assert emitted == sorted(NOT_EXISTS) != sorted(NOT_IN)

    # DuckDB, running NOT IN as written, says so too (without shrinking the failure: that
    # takes Hypothesis minutes here)
    @settings(max_examples=60, deadline=None, phases=(Phase.generate,), database=None)
    @given(log=one_epoch_logs())
    def agrees_with_duckdb(log: ArrivalLog) -> None:
        rewrite_agrees_with_duckdb("not_in", log)

    with pytest.raises(AssertionError):
        agrees_with_duckdb()


# ------------------------------------------------------------------------------ the rewrite, independently

WINDOW = 5 * MICROS_PER_SECOND


@st.composite
def one_epoch_logs(draw: st.DrawFn) -> ArrivalLog:
    """Rows of a and b, NULL keys among them, all in one epoch (none is late)."""
    rows = draw(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 30),
                                   st.sampled_from((1, 2, None)), st.integers(0, 9)), max_size=20))
    return ArrivalLog((tuple(Event(t, (at(s), k, v)) for t, s, k, v in rows),))


def duckdb_subquery_rows(name: str, log: ArrivalLog) -> Counter[tuple[Any, ...]]:
    """The query as written, with its correlated subquery, run by DuckDB over every row (the
    windows as ts - ts % 5 s): SQL's own IN / EXISTS / NOT IN semantics, no rewrite."""
    con = duckdb.connect()
    for table, value in (("a", "v"), ("b", "w")):
        con.execute(f"CREATE TABLE {table} (ts BIGINT, k BIGINT, {value} BIGINT)")
        rows = [e.row for epoch in log.epochs for e in epoch if e.table == table]
        if rows:
            con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)
    windowed = "(SELECT ts - ts % {size} AS window_start, ts - ts % {size} + {size} AS window_end, * " \
               "FROM {table})".format
    condition = SUBQUERIES[name].replace(RIGHT, windowed(size=WINDOW, table="b") + " r")
    sql = f"SELECT l.window_start, l.ts, l.k, l.v FROM {windowed(size=WINDOW, table='a')} l " \
          f"WHERE {condition}"
    return Counter(tuple(row) for row in con.execute(sql).fetchall())


@pytest.mark.parametrize("name", sorted(SEMI_QUERIES))
@settings(max_examples=60, deadline=None)
@given(log=one_epoch_logs())
def test_the_rewrite_agrees_with_duckdb_running_the_subquery(name: str, log: ArrivalLog) -> None:
    rewrite_agrees_with_duckdb(name, log)


def rewrite_agrees_with_duckdb(name: str, log: ArrivalLog) -> None:
    """At the end of the input the output is the query's answer over every row: DuckDB's
    answer to the subquery as written (its NOT IN with NULLs included)."""
    emitted = Counter(e.row for e in run_eowc(semi_query(name), log, Convention.FLINK, close=True))
    assert emitted == duckdb_subquery_rows(name, log)


def test_at_scale_the_executor_the_reference_and_duckdb_agree() -> None:
    """3,000 rows over 25 minutes (300 windows of 5 s), 20 keys and NULLs, 300 epochs: the
    executor through restarts equals the reference, whose rows are DuckDB's answer to each
    subquery as written (the rows arrive in time order: none is late)."""
    rng = random.Random(18)
    events = [Event(rng.choice("ab"), (at(i // 2), rng.choice([*range(20), None]), rng.randint(0, 9)))
              for i in range(3_000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    for name in sorted(SEMI_QUERIES):
        q = semi_query(name)
        expected = list(run_eowc(q, log, Convention.RISINGWAVE, close=True))
        assert len(expected) > 200, name
        assert Counter(e.row for e in expected) == duckdb_subquery_rows(name, log)
        assert run_in_process(q, log, Convention.RISINGWAVE, close=True,
                              restart_after={7, 150, 299}).emissions == expected
