"""RisingWave's ASOF JOIN and ASOF LEFT JOIN (docs/operators/joins.md, "ASOF joins").

Expected rows are RisingWave's own: its e2e test ``e2e_test/streaming/join/asof_join.slt.part``
(the insert-only parts, epoch by epoch) and hand-computed cases for NULL keys and ties; then
the dataflow interpreter against the declarative specification after every epoch, and the
final table against DuckDB (its own SQL), on random two-source logs; the executor against the
reference; and the refusals."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings

from eowc.executors.asof_join import AsofJoinExecutor
from eowc.executors.driver import run_in_process
from eowc.executors.protocol import Update
from eowc.semantics.analysis.derivation_graph import analyze
from eowc.semantics.engines import spec
from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import AsofJoin, Query, walk
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.oracles.duckdb_oracle import oracle_update
from eowc.semantics.rules.triggers import Convention
from tests.strategies import script_once
from tests.test_joins import SOURCES, at, two_source_logs

logging.getLogger("sqlglot").setLevel(logging.ERROR)

CORPUS = Path(__file__).parent / "docs_corpus" / "risingwave"

#: RisingWave's e2e tables: t1 keyed by its last column, t2 by v3.
E2E_TABLES = """
CREATE TABLE t1 (v1 INT, v2 INT, v3 INT PRIMARY KEY);
CREATE TABLE t2 (v1 INT, v2 INT, v3 INT PRIMARY KEY);
"""


def e2e_query(join: str, inequality: str) -> Query:
    return parse_script(E2E_TABLES + f"SELECT t1.v1 AS t1_v1, t1.v2 AS t1_v2, t1.v3 AS t1_v3, "
                        f"t2.v1 AS t2_v1, t2.v2 AS t2_v2, t2.v3 AS t2_v3 FROM t1 {join} t2 "
                        f"ON t1.v1 = t2.v1 AND {inequality};").query


def epochs(*batches: list[tuple[str, tuple[int | None, ...]]]) -> ArrivalLog:
    """One epoch per batch of (table, row): each of RisingWave's e2e statements."""
    return ArrivalLog(tuple(tuple(Event(t, r) for t, r in batch) for batch in batches))


def tables_after_each_epoch(query: Query, log: ArrivalLog) -> list[list[tuple[object, ...]]]:
    return snapshots(list(run_update(query, log)), len(log.epochs))


# ------------------------------------------------------------------------------ RisingWave's e2e


def test_a_closer_right_row_revises_the_match_and_ties_go_to_the_lowest_key() -> None:
    """e2e "asof inner join", ``t1.v2 <= t2.v2`` (the least v2 at or above the left's): each
    epoch's table as RisingWave's ``select * from mv1`` prints it."""
    query = e2e_query("ASOF JOIN", "t1.v2 <= t2.v2")
    log = epochs([("t1", (1, 2, 3))], [("t2", (1, 3, 4))], [("t2", (1, 2, 3))],
                 [("t1", (2, 3, 4)), ("t2", (2, 3, 6))], [("t2", (2, 3, 7))], [("t2", (2, 3, 5))],
                 [("t2", (2, 3, 1)), ("t2", (2, 3, 2))])
    tables = tables_after_each_epoch(query, log)
    assert tables[:3] == [[], [(1, 2, 3, 1, 3, 4)], [(1, 2, 3, 1, 2, 3)]]
    with_two = [[r for r in table if r[0] == 2] for table in tables[3:]]
    assert with_two == [[(2, 3, 4, 2, 3, 6)], [(2, 3, 4, 2, 3, 6)], [(2, 3, 4, 2, 3, 5)],
                        [(2, 3, 4, 2, 3, 1)]]
    # the revision is a retraction of the old joined row and an insert of the new one
    revised = [(c.op, c.row) for c in run_update(query, log) if c.epoch == 5]
    assert revised == [("-", (2, 3, 4, 2, 3, 6)), ("+", (2, 3, 4, 2, 3, 5))]


def test_one_right_row_revises_several_left_rows() -> None:
    """e2e "one right-side change affects multiple left rows"."""
    query = e2e_query("ASOF JOIN", "t1.v2 <= t2.v2")
    log = epochs([("t1", (1, 3, 101)), ("t1", (1, 5, 102)), ("t1", (1, 7, 103))],
                 [("t2", (1, 10, 200))], [("t2", (1, 6, 201))])
    assert tables_after_each_epoch(query, log) == [
        [],
        [(1, 3, 101, 1, 10, 200), (1, 5, 102, 1, 10, 200), (1, 7, 103, 1, 10, 200)],
        [(1, 3, 101, 1, 6, 201), (1, 5, 102, 1, 6, 201), (1, 7, 103, 1, 10, 200)]]


def test_asof_left_join_pads_then_matches() -> None:
    """e2e "asof left join", ``t1.v2 > t2.v2`` (the greatest v2 below the left's)."""
    query = e2e_query("ASOF LEFT JOIN", "t1.v2 > t2.v2")
    log = epochs([("t1", (1, 2, 3))], [("t2", (1, 2, 4))], [("t2", (1, 1, 3))],
                 [("t1", (2, 3, 4))], [("t2", (2, 2, 6)), ("t2", (2, 2, 7)), ("t2", (2, 2, 5))],
                 [("t2", (2, 2, 1)), ("t2", (2, 2, 2))])
    tables = tables_after_each_epoch(query, log)
    assert tables[:3] == [[(1, 2, 3, None, None, None)], [(1, 2, 3, None, None, None)],
                          [(1, 2, 3, 1, 1, 3)]]
    assert [[r for r in table if r[0] == 2] for table in tables[3:]] == [
        [(2, 3, 4, None, None, None)], [(2, 3, 4, 2, 2, 5)], [(2, 3, 4, 2, 2, 1)]]


@pytest.mark.parametrize(("inequality", "expected"), [
    ("t1.v2 < t2.v2", (1, 5, 100, 1, 6, 10)),    # e2e mv_pk_lt: 5 is not < 5
    ("t1.v2 >= t2.v2", (1, 5, 100, 1, 5, 10)),   # e2e mv_pk_ge: 5 >= 5, the lower key
    ("t1.v2 > t2.v2", (1, 5, 100, 1, 4, 8)),
    ("t1.v2 <= t2.v2", (1, 5, 100, 1, 5, 10))])
def test_each_inequality_picks_the_nearest_allowed_value(inequality: str,
                                                         expected: tuple[int, ...]) -> None:
    query = e2e_query("ASOF LEFT JOIN", inequality)
    log = epochs([("t1", (1, 5, 100))], [("t2", (1, 5, 20)), ("t2", (1, 6, 30)), ("t2", (1, 6, 10)),
                                         ("t2", (1, 5, 10)), ("t2", (1, 4, 8)), ("t2", (1, 3, 50))])
    assert tables_after_each_epoch(query, log)[-1] == [expected]


# ------------------------------------------------------------------------------ NULLs and ties

TRADES = """
CREATE TABLE trades (k BIGINT, t BIGINT, id VARCHAR);
CREATE TABLE quotes (k BIGINT, t BIGINT, q VARCHAR);
"""


def trades_query(join: str = "ASOF LEFT JOIN") -> Query:
    return parse_script(TRADES + f"SELECT id, trades.t AS tt, q FROM trades {join} quotes "
                        "ON trades.k = quotes.k AND quotes.t <= trades.t;").query


def test_null_keys_and_null_times_match_nothing() -> None:
    """A NULL key matches no key, a NULL key either side included; a NULL ordered value
    satisfies no inequality. ASOF LEFT JOIN pads those left rows; ASOF JOIN drops them."""
    log = epochs([("trades", (None, 10, "a")), ("trades", (1, None, "b")), ("trades", (1, 10, "c")),
                  ("quotes", (None, 5, "n")), ("quotes", (1, None, "m")), ("quotes", (1, 4, "x"))])
    assert tables_after_each_epoch(trades_query(), log)[-1] == [
        ("a", 10, None), ("b", None, None), ("c", 10, "x")]
    assert tables_after_each_epoch(trades_query("ASOF JOIN"), log)[-1] == [("c", 10, "x")]


def test_ties_without_a_primary_key_go_to_the_least_whole_row() -> None:
    """Right rows of equal ordered value and no primary key: eowc's deterministic tie order
    (the whole row, ``--ties deterministic``), here q = 'p' before 'z' whatever arrived first."""
    log = epochs([("quotes", (1, 4, "z"))], [("trades", (1, 10, "c"))], [("quotes", (1, 4, "p"))])
    changes = [(c.epoch, c.op, c.row) for c in run_update(trades_query(), log)]
    assert changes == [(1, "+", ("c", 10, "z")), (2, "-", ("c", 10, "z")), (2, "+", ("c", 10, "p"))]


# ------------------------------------------------------------------------------ against the spec and DuckDB

ASOF_QUERIES = {
    "inner_le": "SELECT a.ts AS ats, a.k, v, b.ts AS bts, w FROM a ASOF JOIN b "
                "ON a.k = b.k AND b.ts <= a.ts",
    "left_lt": "SELECT a.ts AS ats, a.k, v, b.ts AS bts, w FROM a ASOF LEFT JOIN b "
               "ON a.k = b.k AND a.ts < b.ts",
    "left_gt_values": "SELECT a.k, v, w FROM a ASOF LEFT JOIN b ON b.k = a.k AND a.v > b.w + 1",
    "inner_ge_filtered": "SELECT a.k, v, w, b.ts AS bts FROM a ASOF JOIN "
                         "(SELECT * FROM b WHERE w % 3 <> 0) b ON a.k = b.k AND a.ts >= b.ts",
}


def asof_query(name: str) -> Query:
    return script_once(SOURCES + ASOF_QUERIES[name] + ";").query


@settings(max_examples=25, deadline=None)
@given(log=two_source_logs())
def test_the_interpreter_equals_the_specification_after_every_epoch(log: ArrivalLog) -> None:
    """Emit on update: the changelog's table after each epoch is Q(INPUT) from scratch."""
    for name in ASOF_QUERIES:
        query = asof_query(name)
        for convention in (Convention.RISINGWAVE, Convention.SPARK):
            expected = [sorted(c.elements(), key=repr)
                        for c in spec.update_after_each_epoch(query, log, convention)]
            changes = list(run_update(query, log, convention))
            got = [sorted(rows, key=repr) for rows in snapshots(changes, len(log.epochs))]
            assert got == expected, (name, convention)


@settings(max_examples=15, deadline=None)
@given(log=two_source_logs())
def test_duckdb_gives_the_final_table(log: ArrivalLog) -> None:
    """DuckDB's batch query of the final INPUT (its own SQL: a row_number per left row)
    equals the reference's final table, each source's late rows left out."""
    for name in ASOF_QUERIES:
        query = asof_query(name)
        changes = list(run_update(query, log))
        final = Counter(snapshots(changes, len(log.epochs))[-1]) if log.epochs else Counter()
        assert oracle_update(query, log) == final, name


def test_the_checks_exercise_matches_revisions_and_padding() -> None:
    """The random logs above are not vacuous: over 200 logs of the strategy (derandomized, so
    the figures are the same on every run) the ASOF LEFT join revises a match (a retraction)
    in 16, pads rows in 196 and joins rows in 99; each kind must stay common."""
    query = asof_query("left_lt")
    seen: Counter[str] = Counter()

    @settings(max_examples=200, database=None, phases=[Phase.generate], derandomize=True,
              deadline=None)
    @given(log=two_source_logs())
    def tally(log: ArrivalLog) -> None:
        changes = list(run_update(query, log))
        seen["logs"] += 1
        seen["revised"] += any(c.op == "-" and c.row[3] is not None for c in changes)
        seen["padded"] += any(c.row[3] is None for c in changes)
        seen["joined"] += any(c.row[3] is not None for c in changes)
    tally()
    assert seen["logs"] == 200
    assert seen["revised"] >= 8 and seen["padded"] >= 100 and seen["joined"] >= 50, seen


# ------------------------------------------------------------------------------ the executor


@settings(max_examples=20, deadline=None)
@given(log=two_source_logs())
def test_the_executor_equals_the_reference_after_every_epoch(log: ArrivalLog) -> None:
    for name in ASOF_QUERIES:
        query = asof_query(name)
        for convention in Convention:
            expected = list(run_update(query, log, convention))
            run = run_in_process(query, log, convention, restart_after={0, 2})
            assert run.changes == expected, (name, convention)


class FarthestMatch(AsofJoinExecutor):
    """A realistic bug: the executor takes the farthest allowed right row, not the nearest."""

    def choose(self, values: list[Any], value: Any) -> int | None:
        nearest = super().choose(values, value)
        if nearest is None:
            return None
        return len(values) - 1 if self.asof.op in ("<", "<=") else 0


class NoRetraction(AsofJoinExecutor):
    """A realistic bug: a revised match inserts the new joined row but does not retract the
    old one."""

    def revisions(self, delta: Counter[Row]) -> Iterator[Update]:
        return (u for u in super().revisions(delta) if u.op == "+")


@pytest.mark.parametrize("mutant", [FarthestMatch, NoRetraction])
def test_a_mutant_executor_fails(mutant: type[AsofJoinExecutor]) -> None:
    query = e2e_query("ASOF JOIN", "t1.v2 <= t2.v2")
    log = epochs([("t1", (2, 3, 4)), ("t2", (2, 3, 6))], [("t2", (2, 9, 7))],
                 [("t2", (2, 3, 5))])
    expected = list(run_update(query, log))
    assert run_in_process(query, log).changes == expected
    wrong = run_in_process(query, log, processor=mutant(query, Convention.RISINGWAVE))
    assert wrong.changes != expected


def test_the_executor_keeps_every_row() -> None:
    """No bound: RisingWave keeps all rows of both sides, and so does the executor."""
    query = asof_query("inner_le")
    log = ArrivalLog(tuple((Event("a", (at(i), i % 3, i)), Event("b", (at(i), i % 3, i)))
                           for i in range(50)))
    executor = AsofJoinExecutor(query, Convention.RISINGWAVE)
    run = run_in_process(query, log, processor=executor)
    assert run.changes == list(run_update(query, log))
    kept = sum(len(executor.rows.get(key)) for key in executor.rows.keys())  # noqa: SIM118
    assert kept == 100


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(("condition", "message"), [
    ("md.market_time <= sp.stock_time",
     "ASOF JOIN needs at least one equality between the two sides"),
    ("sp.stock_name = md.stock_name", "ASOF JOIN needs exactly one inequality"),
    ("sp.stock_name = md.stock_name AND md.market_time <= sp.stock_time AND "
     "sp.stock_time < md.market_time + INTERVAL '1' HOUR", "found 2"),
    ("sp.stock_name = md.stock_name AND md.market_time <= sp.stock_time AND sp.price > 3",
     "ANDed: this is neither"),
    ("sp.stock_name = md.stock_name OR md.market_time <= sp.stock_time", "this is neither")])
def test_a_malformed_asof_condition_is_refused_by_name(condition: str, message: str) -> None:
    tables = ("CREATE TABLE stock_prices (stock_name VARCHAR, stock_time TIMESTAMP, price INT);\n"
              "CREATE TABLE market_data (stock_name VARCHAR, market_time TIMESTAMP, sentiment "
              "DOUBLE);\n")
    with pytest.raises(SqlError, match=message) as error:
        parse_script(tables + "SELECT sp.stock_name, md.sentiment FROM stock_prices sp\n"
                     f"ASOF JOIN market_data md ON {condition};")
    assert error.value.line == 4


def test_asof_under_emit_on_window_close_is_refused_with_risingwaves_reason() -> None:
    with pytest.raises(SqlError, match="ASOF LEFT JOIN is not supported with EMIT ON WINDOW "
                                       "CLOSE: a left row's match is revised") as error:
        parse_script(SOURCES + "SELECT a.ts, v, w FROM a\nASOF LEFT JOIN b ON a.k = b.k AND "
                     "b.ts <= a.ts EMIT ON WINDOW CLOSE;")
    assert (error.value.line, error.value.column) == (5, 1)
    query = asof_query("inner_le")
    with pytest.raises(PlanError, match="ASOF JOIN is not supported with EMIT ON WINDOW CLOSE"):
        list(run_eowc(Query(query.plan, True, None, query.sources), ArrivalLog(())))


def test_asof_right_join_is_refused_by_name() -> None:
    with pytest.raises(SqlError, match="ASOF RIGHT JOIN is not supported yet"):
        parse_script(SOURCES + "SELECT v FROM a ASOF RIGHT JOIN b ON a.k = b.k AND a.ts < b.ts;")


def test_the_plan_names_its_keys_and_inequality() -> None:
    """``md.market_time <= sp.stock_time`` is read from the left row's side: stock_time >=."""
    (asof,) = [n for n in walk(parse_script(
        (CORPUS / "asof_join" / "query.sql").read_text()).query.plan) if isinstance(n, AsofJoin)]
    assert (asof.op, asof.kind, len(asof.left_keys)) == (">=", "inner", 1)


# ------------------------------------------------------------------------------ the docs' example

DOCS = Path(__file__).parent.parent / "docs" / "examples"


def test_the_worked_example_by_hand() -> None:
    """docs/operators/joins.md: trades with the latest quote at or before them. Epoch 1's
    nearer quote revises A's match; epoch 2's quote for B replaces its NULL-padded row, and
    the second 10:00:03 quote of A (99) ties with the first (101): the least whole row by
    default, the first arrived with --ties row-id (RisingWave's _row_id)."""
    script = parse_script((DOCS / "analysis" / "asof_join.sql").read_text())
    log = load_arrival_log(str(DOCS / "asof_join.jsonl"), script.sources).log

    def shown(ties: str) -> list[tuple[object, ...]]:
        return [(c.epoch, c.op, c.row[0], format_timestamp(c.row[1])[11:19], c.row[4])
                for c in run_update(script.query, log, ties=ties)]
    common = [(0, "+", "A", "10:00:05", 100.0), (0, "+", "B", "10:00:06", None),
              (1, "-", "A", "10:00:05", 100.0), (1, "+", "A", "10:00:05", 101.0)]
    assert shown("deterministic") == common + [
        (2, "-", "A", "10:00:05", 101.0), (2, "-", "B", "10:00:06", None),
        (2, "+", "A", "10:00:04", 99.0), (2, "+", "A", "10:00:05", 99.0),
        (2, "+", "B", "10:00:06", 50.0)]
    assert shown("row-id") == common + [
        (2, "-", "B", "10:00:06", None), (2, "+", "A", "10:00:04", 101.0),
        (2, "+", "B", "10:00:06", 50.0)]
    assert run_in_process(script.query, log).changes == list(run_update(script.query, log))


def test_explain_names_the_asof_join_and_its_unbounded_state() -> None:
    query = asof_query("left_lt")
    (report,) = [r for r in analyze(query).operators if r.operator == "AsofJoin"]
    assert "ASOF LEFT JOIN" in report.detail and report.state.kind == "unbounded"
    eowc = analyze(Query(query.plan, True, None, query.sources))
    assert eowc.error is not None and eowc.error.startswith(
        "ASOF LEFT JOIN is not supported with EMIT ON WINDOW CLOSE")
