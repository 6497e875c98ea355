"""More aggregates and ranking (issue 18): stddev/variance, string_agg/LISTAGG,
approx_count_distinct, count(DISTINCT x) in explain, TopN by RANK()/DENSE_RANK(), and frames
with EXCLUDE. Hand-computed examples; hypothesis properties of the reference against the
DuckDB oracle and of the in-process executors against the reference, in both modes; and a bug
injected into each executor's logic, caught by those differential checks."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from eowc.executors import over_window, top_n
from eowc.executors import plan as executor_plan_module
from eowc.executors.driver import run_in_process
from eowc.semantics.analysis.derivation_graph import describe
from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, parse_arrival_log
from eowc.semantics.ir.expr import Column, ColumnRef, Row
from eowc.semantics.ir.plan import AggCall, Aggregate, Frame, OverWindow, TopN, walk
from eowc.semantics.ir.values import MICROS_PER_MILLI, MICROS_PER_SECOND, SqlType, row_sort_key
from eowc.semantics.operators import aggregates
from eowc.semantics.operators.aggregates import aggregate_value, compile_aggregate
from eowc.semantics.oracles.duckdb_oracle import OracleUnsupported, oracle_eowc
from eowc.semantics.rules.triggers import Convention, default_ties
from eowc.verify.cli.main import main
from tests.strategies import BASE, MILLISECOND_FRACTIONS, arrival_logs, script_once

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
S = MICROS_PER_SECOND

TABLE = """CREATE TABLE t (ts TIMESTAMP, k BIGINT, x DOUBLE, s VARCHAR,
                       WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
"""


def table_log(sources, rows: list[tuple[str, int, float | None, str | None]]) -> ArrivalLog:  # noqa: ANN001
    """One epoch of rows (second after midnight, k, x, s) of table t."""
    lines = [json.dumps({"table": "t", "row": {"ts": f"2024-01-01 00:00:{second:02d}", "k": k,
                                                "x": x, "s": s}})
             for second, k, x, s in rows] + ['{"barrier": true}']
    return parse_arrival_log(lines, sources).log


def final_rows(sql: str, rows: list, convention: Convention = RW) -> list[Row]:
    parsed = parse_script(TABLE + sql)
    log = table_log(parsed.sources, rows)
    return [e.row for e in run_eowc(parsed.query, log, convention, close=True)]


# ------------------------------------------------------------------- hand-computed aggregates

STATS = ("SELECT window_start, stddev(x) AS sd, stddev_samp(x) AS ss, stddev_pop(x) AS sp, "
         "variance(x) AS v, var_samp(x) AS vs, var_pop(x) AS vp FROM TUMBLE(t, ts, INTERVAL "
         "'10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;")


def test_variance_and_standard_deviation_by_hand() -> None:
    """Window [0, 10): x = 1, 2, 4 and a NULL (ignored): mean 7/3, squared deviations 16/9 +
    1/9 + 25/9 = 42/9, so var_samp = 42/18 = 7/3, var_pop = 42/27 = 14/9. Window [10, 20):
    one value: the sample statistics are NULL, the population ones 0. Window [20, 30): only a
    NULL: all NULL. stddev and variance are the sample statistics (both engines)."""
    out = final_rows(STATS, [(1, 1, 1.0, "a"), (3, 1, 2.0, "b"), (2, 1, 4.0, "a"),
                             (5, 2, None, None), (12, 2, 3.0, "c"), (25, 2, None, "d")])
    assert len(out) == 3
    first, one, empty = out
    assert first[1:] == pytest.approx((math.sqrt(7 / 3), math.sqrt(7 / 3), math.sqrt(14 / 9),
                                       7 / 3, 7 / 3, 14 / 9))
    assert one[1:] == (None, None, 0.0, None, None, 0.0)
    assert empty[1:] == (None,) * 6


def test_variance_is_computed_by_a_stable_algorithm() -> None:
    """1e9 + 4, 7, 13, 16: the deviations from the mean 1e9 + 10 are -6, -3, 3, 6, so
    var_samp = (36 + 9 + 9 + 36) / 3 = 30 exactly. The textbook ``(sum(x²) - sum(x)²/n) /
    (n - 1)`` loses it to cancellation in doubles (its error is larger than 1 here)."""
    columns = (Column("x", SqlType.DOUBLE),)
    values = [1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16]
    fold = compile_aggregate(AggCall("var_samp", ColumnRef("x")), columns, None)
    assert aggregate_value(fold, [(v,) for v in values]) == 30.0
    naive = (sum(v * v for v in values) - sum(values) ** 2 / 4) / 3
    assert abs(naive - 30.0) > 1  # the cancellation the stable algorithm avoids


def test_string_agg_and_listagg_by_hand() -> None:
    """Rows at 1 s (a, x 1), 3 s (b, x 2), 2 s (a, x 4), 5 s (NULL, skipped): without ORDER
    BY the values are joined in value order ``a,a,b`` (the engines promise no order);
    ``ORDER BY x DESC`` puts 4 (a), 2 (b), 1 (a); LISTAGG's default separator is ',';
    DISTINCT joins each value once, in value order."""
    out = final_rows("SELECT window_start, string_agg(s, ',') AS a, string_agg(s, ' | ' ORDER "
                     "BY x DESC) AS b, listagg(s) AS c, listagg(s, ';') AS d, string_agg(DISTINCT "
                     "s, '-') AS e FROM TUMBLE(t, ts, INTERVAL '10' SECOND) GROUP BY "
                     "window_start EMIT ON WINDOW CLOSE;",
                     [(1, 1, 1.0, "a"), (3, 1, 2.0, "b"), (2, 1, 4.0, "a"), (5, 1, 9.0, None)])
    assert out[0][1:] == ("a,a,b", "a | b | a", "a,a,b", "a;a;b", "a-b")


def test_approx_count_distinct_and_count_distinct_by_hand() -> None:
    """s = a, b, a, NULL, c: three distinct non-NULL values; the approximate count is the
    exact one (both engines' sketches are exact at such sizes: docs/sql/aggregates.md)."""
    out = final_rows("SELECT k, approx_count_distinct(s) AS a, count(DISTINCT s) AS c, "
                     "count(s) AS n FROM t GROUP BY k, window_start EMIT ON WINDOW CLOSE;"
                     .replace("FROM t GROUP BY k, window_start",
                              "FROM TUMBLE(t, ts, INTERVAL '10' SECOND) GROUP BY k, window_start"),
                     [(1, 1, 1.0, "a"), (2, 1, 1.0, "b"), (3, 1, 1.0, "a"), (4, 1, 1.0, None),
                      (5, 1, 1.0, "c")])
    assert out == [(1, 3, 3, 4)]


def test_explain_shows_count_distinct_and_the_new_aggregates() -> None:
    """``eowc explain`` describes a GROUP BY by its calls as SQL (it printed count(x))."""
    query = parse_script(TABLE + "SELECT window_start, count(DISTINCT s) AS c, string_agg(s, ',' "
                         "ORDER BY x DESC) AS a, stddev(x) AS d FROM TUMBLE(t, ts, INTERVAL '10' "
                         "SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;").query
    aggregate = next(n for n in walk(query.plan) if isinstance(n, Aggregate))
    assert describe(aggregate) == ("GroupAgg", "GROUP BY window_start: count(DISTINCT s), "
                                   "string_agg(s, ',' ORDER BY x DESC), stddev_samp(x)")


def test_the_new_aggregates_are_refused_on_wrong_arguments_by_name() -> None:
    with pytest.raises((PlanError, SqlError), match="stddev_samp needs a numeric argument"):
        parse_script(TABLE + "SELECT k, stddev(s) AS d FROM t GROUP BY k;")
    with pytest.raises((PlanError, SqlError), match="string_agg concatenates VARCHAR"):
        parse_script(TABLE + "SELECT k, string_agg(x, ',') AS d FROM t GROUP BY k;")
    with pytest.raises(SqlError, match="separator of string_agg/LISTAGG must be a constant"):
        parse_script(TABLE + "SELECT k, string_agg(s, s) AS d FROM t GROUP BY k;")


# ------------------------------------------------------------------------ frames with EXCLUDE

EXCLUDES = ("SELECT ts, x, "
            "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING "
            "EXCLUDE CURRENT ROW) AS a, "
            "sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND "
            "CURRENT ROW EXCLUDE GROUP) AS b, "
            "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND "
            "CURRENT ROW EXCLUDE TIES) AS c, "
            "count(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND "
            "UNBOUNDED FOLLOWING EXCLUDE TIES) AS d, "
            "first_value(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 "
            "FOLLOWING EXCLUDE CURRENT ROW) AS e "
            "FROM t{emit};")
#: Rows at 1 s (x 1), 2 s (x 2 and x 4: peers), 4 s (x 8): in order 1, 2, 4, 8.
EXCLUDE_ROWS = [(4, 1, 8.0, "d"), (2, 1, 4.0, "c"), (1, 1, 1.0, "a"), (2, 1, 2.0, "b")]
#: a: the neighbours without the row; b: the rows before its peers (none for the first row:
#: NULL); c: up to the row without its peers (the row itself stays); d: every row but its
#: peers; e: the next row's x (the frame less the row), NULL for the last.
EXCLUDE_EXPECTED = [(1.0, 2.0, None, 1.0, 4, 2.0), (2.0, 5.0, 1.0, 3.0, 3, 4.0),
                    (4.0, 10.0, 1.0, 5.0, 3, 8.0), (8.0, 4.0, 7.0, 15.0, 4, None)]


def test_exclude_by_hand_in_the_reference_the_executor_and_the_oracle() -> None:
    parsed = parse_script(TABLE + EXCLUDES.format(emit=" EMIT ON WINDOW CLOSE"))
    log = table_log(parsed.sources, EXCLUDE_ROWS)
    for convention in Convention:
        reference = [e.row[1:] for e in run_eowc(parsed.query, log, convention, close=True)]
        assert reference == EXCLUDE_EXPECTED
        executor = [e.row[1:] for e in run_in_process(parsed.query, log, convention, close=True)
                    .emissions]
        assert executor == EXCLUDE_EXPECTED
        with pytest.raises(OracleUnsupported, match="ROWS frame with EXCLUDE TIES"):
            oracle_eowc(parsed.query, log, convention, close=True)
        # the same frame by RANGE (the same rows here) is translated
        ranged = parse_script(TABLE + EXCLUDES.format(emit=" EMIT ON WINDOW CLOSE").replace(
            "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES",
            "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES")).query
        assert sorted(r[1:] for r in oracle_eowc(ranged, log, convention, close=True)
                      .elements()) == EXCLUDE_EXPECTED


def test_exclude_in_emit_on_update_mode() -> None:
    """Without EMIT ON WINDOW CLOSE the changelog ends in the same rows, in the reference and
    in the executor (seed 002's general OverWindow)."""
    parsed = parse_script(TABLE + EXCLUDES.format(emit=""))
    log = table_log(parsed.sources, EXCLUDE_ROWS)
    reference = changelog_result(run_update(parsed.query, log, RW))
    executor = changelog_result(run_in_process(parsed.query, log, RW).changes)
    assert sorted(r[1:] for r in reference.elements()) == EXCLUDE_EXPECTED
    assert executor == reference


def changelog_result(changes) -> Counter:  # noqa: ANN001
    result: Counter = Counter()
    for change in changes:
        result[change.row] += 1 if change.op == "+" else -1
    return +result


def test_exclude_is_shown_and_parsed_from_the_frame() -> None:
    query = parse_script(TABLE + EXCLUDES.format(emit="")).query
    over = next(n for n in walk(query.plan) if isinstance(n, OverWindow))
    assert [c.frame.exclude for c in over.calls] == ["current row", "group", "ties", "ties",
                                                     "current row"]
    assert over.calls[0].frame.sql() == "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW"
    assert Frame("rows", -1, 0, "no others").sql() == "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
    with pytest.raises(PlanError, match="EXCLUDE SOMETHING is not supported"):
        Frame("rows", -1, 0, "something")


# ---------------------------------------------------------------------- RANK / DENSE_RANK TopN

RANKED = ("SELECT window_start, x, r FROM (SELECT *, {function}() OVER (PARTITION BY "
          "window_start, window_end ORDER BY x DESC) AS r FROM TUMBLE(t, ts, INTERVAL '10' "
          "SECOND)) WHERE r <= {n} EMIT ON WINDOW CLOSE;")
#: x in window [0, 10): 5, 7, 7, 3, 9; descending 9, 7, 7, 5, 3.
PRICES = [(1, 1, 5.0, "a"), (2, 1, 7.0, "b"), (3, 1, 7.0, "c"), (4, 1, 3.0, "d"), (5, 1, 9.0, "e")]


@pytest.mark.parametrize(("function", "n", "expected"), [
    ("ROW_NUMBER", 2, [(9.0, 1), (7.0, 2)]),
    ("RANK", 2, [(9.0, 1), (7.0, 2), (7.0, 2)]),  # the peers of the 2nd row come too
    ("RANK", 3, [(9.0, 1), (7.0, 2), (7.0, 2)]),  # 5 ranks 4th: a gap after the tie
    ("DENSE_RANK", 2, [(9.0, 1), (7.0, 2), (7.0, 2)]),
    ("DENSE_RANK", 3, [(9.0, 1), (7.0, 2), (7.0, 2), (5.0, 3)]),  # no gap
    ("RANK", 1, [(9.0, 1)]),
])
def test_rank_and_dense_rank_top_n_by_hand(function: str, n: int, expected: list) -> None:
    parsed = parse_script(TABLE + RANKED.format(function=function, n=n))
    log = table_log(parsed.sources, PRICES)
    for convention in Convention:
        assert [e.row[1:] for e in run_eowc(parsed.query, log, convention, close=True)] == expected
        assert [e.row[1:] for e in run_in_process(parsed.query, log, convention, close=True)
                .emissions] == expected
        assert Counter(r[1:] for r in oracle_eowc(parsed.query, log, convention, close=True)
                       .elements()) == Counter(expected)


def test_explain_names_the_ranking_function() -> None:
    query = parse_script(TABLE + RANKED.format(function="DENSE_RANK", n=3)).query
    top = next(n for n in walk(query.plan) if isinstance(n, TopN))
    assert top.function == "dense_rank"
    assert describe(top)[1].startswith("DENSE_RANK() OVER (PARTITION BY window_start, window_end")


# ------------------------------------------------------- properties against the DuckDB oracle

PROPERTY_QUERIES = {
    "stats": "SELECT window_start, auction, stddev(price) AS a, stddev_pop(price) AS b, "
             "variance(price) AS c, var_pop(price) AS d, approx_count_distinct(price) AS e, "
             "count(DISTINCT price) AS f, string_agg(item, ',') AS g, "
             "string_agg(item, '|' ORDER BY price DESC) AS h FROM "
             "TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, auction "
             "EMIT ON WINDOW CLOSE",
    "distinct_hop": "SELECT window_start, stddev_samp(DISTINCT price) AS a, var_pop(DISTINCT "
                    "price) AS b, listagg(DISTINCT item) AS c FROM HOP(bids, "
                    "ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_start "
                    "EMIT ON WINDOW CLOSE",
    "session": "SELECT window_start, window_end, var_samp(price) AS v, string_agg(item, ';') "
               "AS s FROM SESSION(bids, ts, INTERVAL '2' SECOND) GROUP BY "
               "window_start, window_end EMIT ON WINDOW CLOSE",
    "over": "SELECT ts, auction, price, "
            "var_pop(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND "
            "CURRENT ROW EXCLUDE CURRENT ROW) AS v, "
            "string_agg(item, ',') OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 "
            "PRECEDING AND 1 FOLLOWING) AS s, "
            "stddev_samp(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN INTERVAL "
            "'3' SECOND PRECEDING AND CURRENT ROW EXCLUDE GROUP) AS d, "
            "sum(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND "
            "PRECEDING AND INTERVAL '1' SECOND FOLLOWING EXCLUDE TIES) AS t, "
            "last_value(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING "
            "AND CURRENT ROW EXCLUDE CURRENT ROW) AS l "
            "FROM bids EMIT ON WINDOW CLOSE",
    "rank": "SELECT window_start, auction, price, r FROM (SELECT *, RANK() OVER (PARTITION BY "
            "window_start, window_end ORDER BY price DESC) AS r FROM TUMBLE(bids, ts, INTERVAL "
            "'10' SECOND)) WHERE r <= 2 EMIT ON WINDOW CLOSE",
    "dense_rank": "SELECT window_start, auction, price, r FROM (SELECT *, DENSE_RANK() OVER "
                  "(PARTITION BY window_start, window_end ORDER BY auction) AS r FROM HOP(bids, "
                  "ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE r < 3 EMIT ON WINDOW CLOSE",
    "dedup_rank": "SELECT ts, auction, price, r FROM (SELECT *, RANK() OVER (PARTITION BY auction "
                  "ORDER BY ts) AS r FROM bids) WHERE r = 1 EMIT ON WINDOW CLOSE",
}


ITEMS = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, item VARCHAR,
                    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""


def items_script(sql: str):  # noqa: ANN201
    """``sql`` over the bids of :mod:`tests.strategies` with an ``item`` column."""
    return script_once(ITEMS + sql)


def with_items(log: ArrivalLog) -> ArrivalLog:
    """``log``'s bids, each with an item: ``i`` and the price modulo 4 (NULL with the price),
    so values repeat."""
    return ArrivalLog(tuple(tuple(Event("bids", (*e.row, None if e.row[1] is None else
                                                  f"i{e.row[1] % 4}")) for e in epoch)
                            for epoch in log.epochs))


def same_rows(left: Counter, right: Counter) -> bool:
    """The same rows, floats equal to 1e-9 (DuckDB may add in another order)."""
    def ordered(rows: Counter) -> list[Row]:
        return sorted(rows.elements(), key=lambda r: row_sort_key(
            tuple(round(v, 6) if isinstance(v, float) else v for v in r)))
    a, b = ordered(left), ordered(right)
    return len(a) == len(b) and all(
        len(x) == len(y) and all(math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9)
                                 if isinstance(u, float) and isinstance(v, float) else u == v
                                 for u, v in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True))


def check_against_the_oracle(name: str, log: ArrivalLog) -> None:
    query, log = items_script(PROPERTY_QUERIES[name]).query, with_items(log)
    for convention in Convention:
        for close in (False, True):
            reference = Counter(e.row for e in run_eowc(query, log, convention, close=close))
            assert same_rows(reference, oracle_eowc(query, log, convention, close)), \
                (name, convention, close)


@pytest.mark.parametrize("name", sorted(PROPERTY_QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=arrival_logs())
def test_the_reference_equals_the_duckdb_oracle(name: str, log: ArrivalLog) -> None:
    check_against_the_oracle(name, log)


# ----------------------------------------------- the reference against the declarative spec

@pytest.mark.parametrize("name", sorted(PROPERTY_QUERIES))
@settings(max_examples=20, deadline=None)
@given(log=arrival_logs())
def test_the_reference_equals_the_specification_after_every_epoch(name: str,
                                                                   log: ArrivalLog) -> None:
    """EOWC: the rows emitted up to each epoch are the specification's; emit on update: the
    changelog's result after each epoch is Q over INPUT."""
    sql, log = PROPERTY_QUERIES[name], with_items(log)
    query = items_script(sql).query
    update = items_script(sql.replace(" EMIT ON WINDOW CLOSE", "")).query
    for convention in Convention:
        expected = eowc_after_each_epoch(query, log, convention, close=True)
        emitted: Counter = Counter()
        by_epoch: dict[int, list[Row]] = {}
        for e in run_eowc(query, log, convention, close=True):
            by_epoch.setdefault(e.epoch, []).append(e.row)
        for epoch, rows in enumerate(expected):
            emitted.update(by_epoch.get(epoch, []))
            assert same_rows(emitted, rows), (name, convention, epoch)
        snapshots_ = snapshots(list(run_update(update, log, convention)), len(log.epochs))
        for got, want in zip(snapshots_, update_after_each_epoch(update, log, convention),
                             strict=True):
            assert same_rows(Counter(got), want), (name, convention)


# ------------------------------------------------ the executors against the reference, both modes

def check_executor(name: str, log: ArrivalLog, restarts: tuple[int, ...] = ()) -> None:
    """The in-process executor emits the reference's rows in the same epochs and order; the
    emit-on-update executor of an OVER query ends in the reference's changelog's result."""
    query, log = items_script(PROPERTY_QUERIES[name]).query, with_items(log)
    for convention in Convention:
        expected = list(run_eowc(query, log, convention, close=True))
        run = run_in_process(query, log, convention, close=True, restart_after=restarts)
        assert run.emissions == expected, (name, convention)
        if name == "over":
            update = items_script(PROPERTY_QUERIES[name].replace(" EMIT ON WINDOW CLOSE", "")).query
            assert changelog_result(run_in_process(update, log, convention).changes) == \
                changelog_result(run_update(update, log, convention)), (name, convention)


@pytest.mark.parametrize("name", sorted(PROPERTY_QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS))  # the executors' timers are in ms
def test_the_executors_equal_the_reference(name: str, log: ArrivalLog) -> None:
    check_executor(name, log, (0, 2))


@pytest.mark.parametrize("name", ["rank", "dense_rank", "dedup_rank", "stats"])
@settings(max_examples=25, deadline=None)
@given(log=arrival_logs())
def test_emit_on_update_ends_where_eowc_does(name: str, log: ArrivalLog) -> None:
    """At the end of the input the EOWC output is Q over INPUT, the emit-on-update changelog's
    result: no emitted rank or aggregate changed later (RisingWave keeps rows equal to the
    watermark, so both modes see the same INPUT)."""
    sql, log = PROPERTY_QUERIES[name], with_items(log)
    emitted = Counter(e.row for e in run_eowc(items_script(sql).query, log, RW, close=True))
    update = items_script(sql.replace(" EMIT ON WINDOW CLOSE", "")).query
    assert same_rows(emitted, changelog_result(run_update(update, log, RW)))


# ------------------------------------------------------------------- mutants, shown caught

def bids(*rows: tuple[int, int | None, int]) -> ArrivalLog:
    """One epoch of bids (auction, price, second after BASE)."""
    return ArrivalLog((tuple(Event("bids", (a, p, BASE + s * S)) for a, p, s in rows),))


#: Ties on ts and on price (the highest price twice), two auctions.
TIED = bids((1, 5, 1), (1, 7, 2), (1, 7, 2), (2, 3, 2), (1, 9, 3), (2, 7, 3), (1, 2, 4), (2, 9, 5))


def caught(check: Callable[[], None]) -> bool:
    try:
        check()
    except AssertionError:
        return True
    return False


def test_the_checks_pass_on_the_tied_log() -> None:
    for name in PROPERTY_QUERIES:
        check_executor(name, TIED)
        check_against_the_oracle(name, TIED)


def test_a_frame_that_keeps_the_peers_under_exclude_ties_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The executor's EXCLUDE TIES mutated to EXCLUDE GROUP (it forgets to put the row back)."""
    real = over_window.frame_rows

    def mutant(frame, part, i, descending):  # noqa: ANN001, ANN202
        if frame.exclude == "ties":
            frame = Frame(frame.kind, frame.start, frame.end, "group")
        return real(frame, part, i, descending)
    monkeypatch.setattr(over_window, "frame_rows", mutant)
    assert caught(lambda: check_executor("over", TIED))


def test_a_rank_without_gaps_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The executor's RANK mutated to count distinct values (DENSE_RANK's rule)."""
    real = top_n.TopRanking.ranks_of

    def mutant(self, orders):  # noqa: ANN001, ANN202
        if self.node.function != "rank":
            return real(self, orders)
        return real(type(self)(replace(self.node, function="dense_rank"), self.partition,
                               self.sort_key), orders)
    monkeypatch.setattr(top_n.TopRanking, "ranks_of", mutant)
    assert caught(lambda: check_executor("rank", TIED))


def test_a_sample_variance_divided_by_n_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The shared fold mutated: the sample variance divides by n (the population's)."""
    real = aggregates._statistic
    monkeypatch.setattr(aggregates, "_statistic",
                        lambda function: real(function.replace("samp", "pop")))
    assert caught(lambda: check_against_the_oracle("stats", TIED))


# ------------------------------------------------------------------------------ ties: row-id

TIES_QUERIES = {
    "top": "SELECT window_start, auction, price, item, r FROM (SELECT *, ROW_NUMBER() OVER "
           "(PARTITION BY window_start, window_end ORDER BY price DESC) AS r FROM TUMBLE(bids, "
           "ts, INTERVAL '10' SECOND)) WHERE r <= 2 EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction, item, r FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "auction ORDER BY ts) AS r FROM bids) WHERE r = 1 EMIT ON WINDOW CLOSE",
    "over": "SELECT ts, auction, item, "
            "sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND "
            "CURRENT ROW) AS s, lag(item) OVER (PARTITION BY auction ORDER BY ts) AS l, "
            "row_number() OVER (PARTITION BY auction ORDER BY ts) AS n, first_value(item) OVER "
            "(PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS f "
            "FROM bids EMIT ON WINDOW CLOSE",
    "first": "SELECT window_start, first_value(item) AS f, last_value(item) AS l FROM "
             "TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE",
    "sort": "SELECT ts, auction, item FROM bids EMIT ON WINDOW CLOSE",
}
#: The bids with their arrival position as a declared primary key: the deterministic order
#: breaks ties by it first, which is the row-id order (an oracle built without ArrivalOrder).
KEYED = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, item VARCHAR,
                    rid BIGINT PRIMARY KEY, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
"""


def numbered(log: ArrivalLog, with_position: bool) -> ArrivalLog:
    """``log``'s bids with an item naming their arrival (``e0``, ``e1``, ...: no two rows are
    equal), and with their arrival position as ``rid`` when ``with_position``."""
    position = iter(range(len(log.events)))
    epochs = []
    for epoch in log.epochs:
        rows = []
        for e in epoch:
            i = next(position)
            rows.append(Event("bids", (*e.row, f"e{i}", *((i,) if with_position else ()))))
        epochs.append(tuple(rows))
    return ArrivalLog(tuple(epochs))


def test_row_id_ties_by_hand() -> None:
    """Auction 2 bids 7 at 1 s, then auction 1 bids 7 at 1 s, then auction 1 bids 5 at 2 s.
    Deterministic: the whole rows order (1, 7, ...) before (2, 7, ...); row-id: arrival order,
    auction 2 first (RisingWave's _row_id)."""
    log = bids((2, 7, 1), (1, 7, 1), (1, 5, 2))
    query = items_script(TIES_QUERIES["top"]).query
    log = numbered(log, False)
    for engine in (lambda q, ties: [e.row for e in run_eowc(q, log, RW, close=True, ties=ties)],
                   lambda q, ties: [e.row for e in run_in_process(q, log, RW, close=True,
                                                                  ties=ties).emissions]):
        assert [r[1:] for r in engine(query, "deterministic")] == [(1, 7, "e1", 1), (2, 7, "e0", 2)]
        assert [r[1:] for r in engine(query, "row-id")] == [(2, 7, "e0", 1), (1, 7, "e1", 2)]
    sort = items_script(TIES_QUERIES["sort"]).query  # the EOWC sort: equal ts in arrival order
    assert [e.row[1:] for e in run_eowc(sort, log, RW, close=True, ties="row-id")] == \
        [(2, "e0"), (1, "e1"), (1, "e2")]
    assert [e.row[1:] for e in run_eowc(sort, log, RW, close=True)] == \
        [(1, "e1"), (2, "e0"), (1, "e2")]


def test_each_convention_breaks_ties_deterministically_by_default() -> None:
    assert {c.value: default_ties(c) for c in Convention} == {
        "risingwave": "deterministic", "spark": "deterministic", "flink": "deterministic"}
    with pytest.raises(PlanError, match="unknown tie order 'arrival'"):
        run_eowc(items_script(TIES_QUERIES["top"]).query, ArrivalLog(()), RW, ties="arrival")


@pytest.mark.parametrize("name", sorted(TIES_QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=arrival_logs())
def test_row_id_equals_the_oracle_with_arrival_as_primary_key(name: str, log: ArrivalLog) -> None:
    """The reference under ``--ties row-id`` equals DuckDB on the same rows carrying their
    arrival position as a primary key (which the deterministic order breaks ties by first)."""
    sql = TIES_QUERIES[name]
    query, keyed = items_script(sql).query, parse_script(KEYED + sql).query
    for convention in Convention:
        for close in (False, True):
            reference = Counter(e.row for e in run_eowc(query, numbered(log, False), convention,
                                                        close=close, ties="row-id"))
            assert reference == oracle_eowc(keyed, numbered(log, True), convention, close), \
                (convention, close)


@pytest.mark.parametrize("name", sorted(TIES_QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS))
def test_row_id_executors_equal_the_reference(name: str, log: ArrivalLog) -> None:
    """Same rows, epochs and order (the EOWC sort's too), through restarts; and the
    emit-on-update executor's changelog ends where the reference's does."""
    query, log = items_script(TIES_QUERIES[name]).query, numbered(log, False)
    for convention in Convention:
        expected = list(run_eowc(query, log, convention, close=True, ties="row-id"))
        run = run_in_process(query, log, convention, close=True, restart_after=(0, 2),
                             ties="row-id")
        assert run.emissions == expected, convention
    if name == "over":
        update = items_script(TIES_QUERIES[name].replace(" EMIT ON WINDOW CLOSE", "")).query
        assert changelog_result(run_in_process(update, log, RW, ties="row-id").changes) == \
            changelog_result(run_update(update, log, RW, ties="row-id"))


def test_an_executor_that_drops_the_arrival_order_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The executors' binding mutated to forget ``arrival`` (ties broken deterministically)."""
    real = executor_plan_module.tie_break
    monkeypatch.setattr(executor_plan_module, "tie_break",
                        lambda schema, source, arrival=None, latest_first=False: real(
                            schema, source, None, latest_first))
    executor_plan_module.bind_query.cache_clear()
    log = bids((2, 7, 1), (1, 7, 1), (1, 5, 2))
    assert caught(lambda: test_row_id_executors_equal_the_reference.hypothesis.inner_test(
        "top", log))
    executor_plan_module.bind_query.cache_clear()


def test_eowc_run_takes_ties(tmp_path) -> None:  # noqa: ANN001
    query = tmp_path / "q.sql"
    query.write_text(ITEMS + TIES_QUERIES["top"] + ";", encoding="utf-8")
    events = tmp_path / "e.jsonl"
    events.write_text("\n".join(json.dumps({"table": "bids", "row": row}) for row in [
        {"auction": 2, "price": 7, "ts": "2024-01-01 00:00:01", "item": "first"},
        {"auction": 1, "price": 7, "ts": "2024-01-01 00:00:01", "item": "second"}]) + "\n",
        encoding="utf-8")
    runner = CliRunner()
    for engine in ("reference", "in-process"):
        out = runner.invoke(main, ["run", str(query), str(events), "--close", "--ties", "row-id",
                                   "--engine", engine])
        assert out.exit_code == 0, out.output
        assert [json.loads(line)["item"] for line in out.stdout.splitlines()] == ["first", "second"]
    plain = runner.invoke(main, ["run", str(query), str(events), "--close"])
    assert [json.loads(line)["item"] for line in plain.stdout.splitlines()] == ["second", "first"]
    refused = runner.invoke(main, ["run", str(query), str(events), "--close", "--ties", "row-id",
                                   "--oracle", "spark"])
    assert refused.exit_code == 2 and "--ties row-id is supported by --engine reference" in \
        refused.output


# ------------------------------------------------------------------------------------ at scale

def scale_log(rows: int, keys: int, seed: int) -> ArrivalLog:
    """``rows`` bids over ``keys`` auctions spread over six hours, arriving up to two minutes
    out of order (some late) at whole milliseconds (the executors refuse a watermark between
    two: executors/millisecond_watermark.py), prices with ties and NULLs, cut into epochs of 20
    rows."""
    rng = random.Random(seed)
    events = []
    for i in range(rows):
        lag = rng.randrange(0, 120 * S) // MICROS_PER_MILLI * MICROS_PER_MILLI
        ts = BASE + i * 6 * 3600 * S // rows + lag
        price = None if rng.random() < 0.05 else rng.randrange(0, 50)
        events.append(Event("bids", (rng.randrange(1, keys + 1), price, ts)))
    return ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, rows, 20)))


SCALE_QUERIES = {
    "stats_minute": PROPERTY_QUERIES["stats"].replace("INTERVAL '10' SECOND", "INTERVAL '1' MINUTE"),
    "rank_hour": "SELECT window_start, auction, price, r FROM (SELECT *, RANK() OVER (PARTITION BY "
                 "window_start, window_end, auction ORDER BY price DESC) AS r FROM TUMBLE(bids, "
                 "ts, INTERVAL '1' HOUR)) WHERE r <= 3 EMIT ON WINDOW CLOSE",
    "over_exclude": PROPERTY_QUERIES["over"],
}


@pytest.mark.parametrize("name", sorted(SCALE_QUERIES))
def test_at_scale_the_reference_the_oracle_and_the_executor_agree(name: str) -> None:
    """4,000 rows, 200 auctions, 200 epochs, six hours of minute or hour windows: the
    reference equals DuckDB (RisingWave and Flink rules) and the in-process executor equals
    the reference row for row; the runs emit thousands of rows (none of it vacuous)."""
    query, log = items_script(SCALE_QUERIES[name]).query, with_items(scale_log(4000, 200, 18))
    for convention in (RW, FLINK):
        reference = list(run_eowc(query, log, convention, close=True))
        assert len(reference) > 1000, len(reference)
        assert same_rows(Counter(e.row for e in reference),
                         oracle_eowc(query, log, convention, close=True)), convention
        assert run_in_process(query, log, convention, close=True).emissions == reference


def test_a_string_agg_that_ignores_desc_is_caught(monkeypatch) -> None:  # noqa: ANN001
    """The shared fold mutated: string_agg(x, sep ORDER BY k DESC) joins in ascending order."""
    real = aggregates._string_agg
    monkeypatch.setattr(aggregates, "_string_agg", lambda call, schema, value, tie: real(
        replace(call, order_descending=False), schema, value, tie))
    assert caught(lambda: check_against_the_oracle("stats", TIED))
