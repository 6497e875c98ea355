"""GROUPING SETS / ROLLUP / CUBE (the rule ``grouping_sets`` of semantics/frontend/rewrites.py)
and a trailing ORDER BY without LIMIT (docs/sql/rewrites.md).

Rows are computed by hand in both emit modes; DuckDB's own GROUPING SETS (an implementation
that shares nothing with eowc's rewrite: it reads the written query, not the union eowc plans)
computes the same tables from the same input, and the DuckDB oracle agrees with the reference
on the planned union; the native check fails on a rewrite that drops the empty grouping set
or reads a key as NULL inside an aggregate.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator

import duckdb
import pytest
import sqlglot
from click.testing import CliRunner
from hypothesis import event, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend import rewrites
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import OrderKey, Union, walk
from eowc.semantics.ir.values import MICROS_PER_SECOND, SqlType
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import Case
from eowc.verify.cli.main import main
from eowc.verify.executors import InProcessExecutor

S = MICROS_PER_SECOND
BASE = 1_700_000_000 * S  # 2023-11-14 22:13:20, a multiple of 10 seconds
SOURCE = ("CREATE SOURCE bid (ts TIMESTAMP, sup VARCHAR, item VARCHAR, price BIGINT, "
          "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n")
EOWC = " EMIT ON WINDOW CLOSE"
WINDOWED = ("SELECT window_start, window_end, sup, item, SUM(price) AS total, COUNT(*) AS n, "
            "GROUPING(sup, item) AS g FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) "
            "GROUP BY window_start, window_end, ROLLUP (sup, item)")
PLAIN = ("SELECT sup, item, SUM(price) AS total, GROUPING_ID(sup, item) AS g FROM bid "
         "GROUP BY CUBE (sup, item)")


def at(seconds: float) -> int:
    return BASE + int(seconds * S)


def bids(*epochs: list[tuple[float, str | None, str | None, int]]) -> ArrivalLog:
    """Epochs of (seconds after BASE, sup, item, price) bids."""
    return ArrivalLog(tuple(tuple(Event("bid", (at(s), sup, item, p)) for s, sup, item, p in e)
                            for e in epochs))


#: Window [0, 10) gets three bids in epoch 0; epoch 1's bid at 12 s moves the watermark to
#: 11 s (closing [0, 10)); epoch 2's at 25 s moves it to 24 s (closing [10, 20)).
LOG = bids([(1, "s1", "a", 1), (2, "s1", "b", 2), (3, "s2", "a", 4)],
           [(12, "s2", "b", 8)],
           [(25, "s1", "a", 16)])
W0, W10, W20, W30 = at(0), at(10), at(20), at(30)
#: The rows of ROLLUP (sup, item) per window: sets (sup, item) with g = 0, (sup) g = 1, () g = 3.
WINDOW_0 = [(W0, W10, "s1", "a", 1, 1, 0), (W0, W10, "s1", "b", 2, 1, 0),
            (W0, W10, "s2", "a", 4, 1, 0), (W0, W10, "s1", None, 3, 2, 1),
            (W0, W10, "s2", None, 4, 1, 1), (W0, W10, None, None, 7, 3, 3)]
WINDOW_10 = [(W10, W20, "s2", "b", 8, 1, 0), (W10, W20, "s2", None, 8, 1, 1),
             (W10, W20, None, None, 8, 1, 3)]
WINDOW_20 = [(W20, W30, "s1", "a", 16, 1, 0), (W20, W30, "s1", None, 16, 1, 1),
             (W20, W30, None, None, 16, 1, 3)]


def query(sql: str):  # noqa: ANN201
    return parse_script(SOURCE + sql + ";").query


def rejected(sql: str) -> str:
    with pytest.raises(SqlError) as info:
        parse_script(SOURCE + sql + ";")
    return str(info.value)


# ------------------------------------------------------------------------------ by hand

@pytest.mark.parametrize("convention", list(Convention))
def test_a_window_rollup_emits_each_sets_rows_when_its_window_closes(convention) -> None:  # noqa: ANN001
    """Under EMIT ON WINDOW CLOSE each set's rows of a window are emitted once, when the
    window closes: [0, 10) at epoch 1, [10, 20) at epoch 2, [20, 30) only at the close."""
    emitted = [(e.epoch, e.row) for e in run_eowc(query(WINDOWED + EOWC), LOG, convention,
                                                     close=True)]
    expected = [(1, r) for r in WINDOW_0] + [(2, r) for r in WINDOW_10] + \
        [(3, r) for r in WINDOW_20]
    assert Counter(emitted) == Counter(expected)


KEPT_LATE = [("s1", "a", 1, 1, 0), ("s1", "b", 2, 1, 0), ("s2", "b", 4, 1, 0),
             ("s1", None, 3, 2, 1), ("s2", None, 4, 1, 1), (None, None, 7, 3, 3)]
DROPPED_LATE = [("s1", "b", 2, 1, 0), ("s2", "b", 4, 1, 0), ("s1", None, 2, 1, 1),
                ("s2", None, 4, 1, 1), (None, None, 6, 2, 3)]


@pytest.mark.parametrize("convention, window_0", [
    (Convention.RISINGWAVE, DROPPED_LATE), (Convention.SPARK, KEPT_LATE),
    (Convention.FLINK, KEPT_LATE)])
def test_a_row_late_for_its_time_but_not_its_window_under_each_convention(
        convention: Convention, window_0: list[tuple]) -> None:
    """Epoch 0: 8 s (s1, b, 2) and 9.5 s (s2, b, 4): W = 8.5 s. Epoch 1: 3 s (s1, a, 1) is
    late for its time (3 s <= 8.5 s), but its window [0, 10) has not closed: under Spark's and
    Flink's per-window check every grouping set takes it (Flink 2.3 on the GROUPING SETS query
    of its documentation, found by the campaign); RisingWave drops it. Epoch 2: 25 s (W = 24 s)
    closes [0, 10). The DuckDB oracle and the in-process executors agree."""
    log = bids([(8, "s1", "b", 2), (9.5, "s2", "b", 4)], [(3, "s1", "a", 1)],
               [(25, "s1", "a", 16)])
    windowed = query(WINDOWED + EOWC)
    emitted = list(run_eowc(windowed, log, convention))
    assert Counter(e.row for e in emitted if e.row[0] == W0) == \
        Counter((W0, W10, *r) for r in window_0)
    assert {e.epoch for e in emitted if e.row[0] == W0} == {2}
    assert Counter(e.row for e in emitted) == oracle_eowc(windowed, log, convention, close=False)
    executors = InProcessExecutor().emissions(Case(SOURCE + WINDOWED + EOWC + ";", convention, log))
    assert Counter((e.epoch, e.row) for e in executors) == Counter((e.epoch, e.row) for e in emitted)


def test_a_window_rollup_emitted_on_update() -> None:
    """Emitted on update, each window's rows are inserted in the epoch its bids arrive, and
    the final table is every window's rows."""
    changes = list(run_update(query(WINDOWED), LOG, Convention.RISINGWAVE))
    assert all(c.op == "+" for c in changes)
    by_epoch = Counter((c.epoch, c.row) for c in changes)
    assert by_epoch == Counter([(0, r) for r in WINDOW_0] + [(1, r) for r in WINDOW_10]
                               + [(2, r) for r in WINDOW_20])
    assert Counter(snapshots(changes, 3)[-1]) == Counter(WINDOW_0 + WINDOW_10 + WINDOW_20)


def test_a_plain_cube_retracts_each_sets_changed_groups() -> None:
    """``CUBE (sup, item)`` on a plain group aggregate: after epoch 0 (s1/a 1, s1/b 2, s2/a 4)
    epoch 1's s2/b 8 inserts its own group and updates (s2), (b) and the grand total."""
    changes = list(run_update(query(PLAIN), bids(
        [(1, "s1", "a", 1), (2, "s1", "b", 2), (3, "s2", "a", 4)], [(12, "s2", "b", 8)]),
        Convention.RISINGWAVE))
    assert Counter((c.op, c.row) for c in changes if c.epoch == 1) == Counter([
        ("+", ("s2", "b", 8, 0)),
        ("-", ("s2", None, 4, 1)), ("+", ("s2", None, 12, 1)),
        ("-", (None, "b", 2, 2)), ("+", (None, "b", 10, 2)),
        ("-", (None, None, 7, 3)), ("+", (None, None, 15, 3))])
    assert Counter(snapshots(changes, 2)[-1]) == Counter([
        ("s1", "a", 1, 0), ("s1", "b", 2, 0), ("s2", "a", 4, 0), ("s2", "b", 8, 0),
        ("s1", None, 3, 1), ("s2", None, 12, 1), (None, "a", 5, 2), (None, "b", 10, 2),
        (None, None, 15, 3)])


def test_the_forms_are_one_union_of_their_sets() -> None:
    """ROLLUP (a, b) is GROUPING SETS ((a, b), (a), ()); CUBE (a, b) adds (b); a GROUPING
    SETS item may be a ROLLUP; GROUP BY w, ROLLUP (a) is the cross product (w, a), (w)."""
    sets = [[k.name for k in keys] for keys in rewrites._grouping_sets(
        parse_group("GROUP BY w, GROUPING SETS (ROLLUP (a, b), (c), ()), CUBE (d)"))]
    assert sets == [["w", "a", "b", "d"], ["w", "a", "b"], ["w", "a", "d"], ["w", "a"],
                    ["w", "d"], ["w"], ["w", "c", "d"], ["w", "c"], ["w", "d"], ["w"]]
    rollup = query(PLAIN.replace("CUBE", "ROLLUP")).plan
    spelled = query(PLAIN.replace("CUBE (sup, item)", "GROUPING SETS ((sup, item), (sup), ())")
                    ).plan
    assert rollup == spelled and isinstance(rollup, Union) and len(rollup.inputs) == 3
    empty_first = query(NATIVE["empty set first"][0]).plan
    assert empty_first.inputs[0].schema[0].type is SqlType.NULL  # the () set's NULL AS sup
    assert [c.type for c in empty_first.schema] == [SqlType.VARCHAR, SqlType.BIGINT]


def parse_group(text: str) -> exp.Group:
    return sqlglot.parse_one(f"SELECT 1 FROM t {text}", read="postgres").args["group"]


def test_having_and_order_by_limit_apply_per_set_and_to_the_union() -> None:
    """HAVING filters each set's groups (the () row has n = 3 in window 0, s1's has 2); ORDER
    BY ... LIMIT orders the union: the 2 rows with the largest totals."""
    having = WINDOWED + " HAVING COUNT(*) >= 2"
    rows = [e.row for e in run_eowc(query(having + EOWC), LOG, Convention.RISINGWAVE)]
    assert Counter(rows) == Counter([(W0, W10, "s1", None, 3, 2, 1),
                                     (W0, W10, None, None, 7, 3, 3)])
    top = query(PLAIN + " ORDER BY total DESC LIMIT 2")
    changes = list(run_update(top, bids([(1, "s1", "a", 1), (2, "s1", "b", 2),
                                         (3, "s2", "a", 4)]), Convention.RISINGWAVE))
    assert Counter(snapshots(changes, 1)[-1]) == Counter([(None, None, 7, 3), (None, "a", 5, 2)])


def test_unsupported_forms_are_refused_by_name() -> None:
    window = "FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY "
    assert "every grouping set must hold window_start and window_end" in rejected(
        "SELECT window_start, sup, COUNT(*) " + window + "window_end, ROLLUP (window_start, sup)")
    assert "the set () has no window_start" in rejected(
        "SELECT window_start, sup, COUNT(*) " + window + "GROUPING SETS ((window_start, "
        "window_end, sup), ())")
    assert "GROUPING(price): price is not a GROUP BY key" in rejected(
        "SELECT sup, GROUPING(price) FROM bid GROUP BY ROLLUP (sup)")
    assert "GROUPING(...) needs a GROUP BY" in rejected("SELECT GROUPING(sup) FROM bid")


# ------------------------------------------------------------------------------ DuckDB

#: Queries over ``bid`` with their DuckDB text (GROUPING SETS read by DuckDB itself, over a
#: table ``bid`` with ts in microseconds; window_start computed as ts - ts % size).
NATIVE = {
    "rollup": ("SELECT sup, item, SUM(price) AS total, COUNT(item) AS items, GROUPING_ID(sup, "
               "item) AS g FROM bid GROUP BY ROLLUP (sup, item)",
               "SELECT sup, item, SUM(price) AS total, COUNT(item) AS items, GROUPING(sup, item) "
               "AS g FROM bid GROUP BY ROLLUP (sup, item)"),
    "cube": (PLAIN, "SELECT sup, item, SUM(price) AS total, GROUPING(sup, item) AS g FROM bid "
                    "GROUP BY CUBE (sup, item)"),
    "sets with expression": (
        "SELECT sup, price % 2 AS parity, COUNT(*) AS n, MAX(price) AS top, SUM(price % 2) AS "
        "odd FROM bid GROUP BY GROUPING SETS ((sup, price % 2), (price % 2), ())",
        "SELECT sup, price % 2 AS parity, COUNT(*) AS n, MAX(price) AS top, SUM(price % 2) AS "
        "odd FROM bid GROUP BY GROUPING SETS ((sup, price % 2), (price % 2), ())"),
    "empty set first": ("SELECT sup, SUM(price) AS total FROM bid GROUP BY GROUPING SETS ((), "
                        "(sup))", "SELECT sup, SUM(price) AS total FROM bid GROUP BY GROUPING "
                                  "SETS ((), (sup))"),
    "window": (WINDOWED, "SELECT window_start, window_end, sup, item, SUM(price) AS total, "
               "COUNT(*) AS n, GROUPING(sup, item) AS g FROM (SELECT *, ts - ts % 10000000 AS "
               "window_start, ts - ts % 10000000 + 10000000 AS window_end FROM bid) "
               "GROUP BY window_start, window_end, ROLLUP (sup, item)"),
}


@st.composite
def cut_at_random(draw, events: list[Event]) -> ArrivalLog:  # noqa: ANN001
    """``events`` in their order, cut into epochs at random (no empty epoch at the end)."""
    cuts = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    epochs, current = [], []
    for row, cut in zip(events, cuts, strict=True):
        current.append(row)
        if cut:
            epochs.append(tuple(current))
            current = []
    return ArrivalLog(tuple(epochs + ([tuple(current)] if current else [])))


@st.composite
def in_order_bids(draw) -> ArrivalLog:  # noqa: ANN001
    """Bids in time order (none late), cut into epochs; a few suppliers and items, NULLs."""
    seconds = sorted(draw(st.lists(st.integers(0, 45), max_size=16)))
    events = [Event("bid", (at(s), draw(st.sampled_from(("s1", "s2", None))),
                            draw(st.sampled_from(("a", "b"))), draw(st.integers(-3, 9))))
              for s in seconds]
    return draw(cut_at_random(events))


def native(sql: str, log: ArrivalLog) -> Counter:
    """DuckDB's answer to ``sql`` over every bid of ``log``."""
    connection = duckdb.connect()
    connection.execute("CREATE TABLE bid (ts BIGINT, sup VARCHAR, item VARCHAR, price BIGINT)")
    rows = [e.row for epoch in log.epochs for e in epoch]
    if rows:
        connection.executemany("INSERT INTO bid VALUES (?, ?, ?, ?)", rows)
    return Counter(tuple(r) for r in connection.execute(sql).fetchall())


def final_table(sql: str, log: ArrivalLog) -> Counter:
    changes = list(run_update(query(sql), log, Convention.RISINGWAVE))
    return Counter(snapshots(changes, len(log.epochs))[-1]) if log.epochs else Counter()


def native_difference(name: str, log: ArrivalLog) -> str | None:
    """None when eowc's final table of the query is DuckDB's native GROUPING SETS answer."""
    ours, theirs = final_table(NATIVE[name][0], log), native(NATIVE[name][1], log)
    if not any(log.epochs):  # DuckDB gives the () set's row over no input; a stream no group
        return None if not ours else f"rows over no input: {ours}"
    return None if ours == theirs else f"eowc {ours - theirs} DuckDB {theirs - ours}"


@pytest.mark.parametrize("name", sorted(NATIVE))
@settings(max_examples=40, deadline=None)
@given(log=in_order_bids())
def test_duckdbs_own_grouping_sets_agree(name: str, log: ArrivalLog) -> None:
    """DuckDB's GROUPING SETS (its own implementation, from the written query) give eowc's
    final table, emitted on update, over the same bids."""
    event(f"{name}: {sum(map(len, log.epochs))} bids")
    assert native_difference(name, log) is None


#: Written forms of grouping sets over sup and item, each read by eowc and by DuckDB.
FORMS = ["ROLLUP (sup, item)", "ROLLUP (item, sup)", "CUBE (sup, item)", "CUBE ((sup, item))",
         "GROUPING SETS ((sup), (item), ())", "sup, ROLLUP (item)", "ROLLUP (sup), item",
         "GROUPING SETS (ROLLUP (sup), CUBE (item))", "GROUPING SETS ((sup, item), (sup, item))",
         "GROUPING SETS (sup, (item, sup), ())"]


@pytest.mark.parametrize("form", FORMS)
@settings(max_examples=15, deadline=None)
@given(log=in_order_bids())
def test_every_written_form_is_duckdbs(form: str, log: ArrivalLog) -> None:
    """Each written form (nested, repeated sets, keys in either order) gives DuckDB's rows."""
    sql = ("SELECT sup, item, SUM(price) AS total, COUNT(item) AS items, GROUPING(sup, item) "
           f"AS g FROM bid GROUP BY {form}")
    event(f"{sum(map(len, log.epochs))} bids")
    if any(log.epochs):
        assert final_table(sql, log) == native(sql, log)


@pytest.mark.parametrize("convention", list(Convention))
@settings(max_examples=30, deadline=None)
@given(log=in_order_bids(), close=st.booleans())
def test_the_duckdb_oracle_agrees_under_eowc(convention: Convention, log: ArrivalLog,
                                             close: bool) -> None:
    """The DuckDB oracle (the planned union, each set's trigger a WHERE) agrees with the
    reference on the windowed ROLLUP emitted on window close."""
    windowed = query(WINDOWED + EOWC)
    emitted = Counter(e.row for e in run_eowc(windowed, log, convention, close=close))
    event(f"{'some' if emitted else 'no'} rows")
    assert oracle_eowc(windowed, log, convention, close=close) == emitted


@st.composite
def disordered_bids(draw) -> ArrivalLog:  # noqa: ANN001
    """The bids of :func:`in_order_bids` in any order: rows late for their time, some of
    them in windows still open (Spark's and Flink's per-window check takes those)."""
    log = draw(in_order_bids())
    events = draw(st.permutations([e for epoch in log.epochs for e in epoch]))
    return draw(cut_at_random(events))


@pytest.mark.parametrize("convention", list(Convention))
@settings(max_examples=30, deadline=None)
@given(log=disordered_bids())
def test_late_rows_of_a_rollup_agree_across_oracles(convention: Convention, log: ArrivalLog) -> None:
    """With rows out of order, the reference, the DuckDB oracle and the in-process executors
    judge the windowed ROLLUP's late rows alike (per window under Spark and Flink)."""
    windowed = query(WINDOWED + EOWC)
    emitted = [(e.epoch, e.row) for e in run_eowc(windowed, log, convention)]
    assert oracle_eowc(windowed, log, convention, close=False) == Counter(r for _, r in emitted)
    case = Case(SOURCE + WINDOWED + EOWC + ";", convention, log)
    assert Counter((e.epoch, e.row) for e in InProcessExecutor().emissions(case)) == \
        Counter(emitted)


def _mutants() -> Iterator[tuple[str, str, object]]:
    original_sets, original_in_set = rewrites._grouping_sets, rewrites._in_set

    def without_empty_set(group):  # noqa: ANN001, ANN202
        return [keys for keys in original_sets(group) if keys]

    def nulls_inside_aggregates(node, grouped, nulled, keys, items):  # noqa: ANN001, ANN202
        if rewrites._is_aggregate_call(node) and nulled and \
                not isinstance(node, exp.Grouping | exp.GroupingId):
            node = node.copy()
            for column in list(node.find_all(exp.Column)):
                if any(rewrites._same_key(column, k) for k in nulled):
                    column.replace(exp.Null())
            return node
        return original_in_set(node, grouped, nulled, keys, items)

    yield "empty set dropped", "_grouping_sets", without_empty_set
    yield "a key read as NULL inside an aggregate", "_in_set", nulls_inside_aggregates


@pytest.mark.parametrize(("mutant", "name", "function"), list(_mutants()))
def test_the_native_check_catches_a_broken_rewrite(monkeypatch, mutant: str, name: str,  # noqa: ANN001
                                                  function: object) -> None:
    log = bids([(1, "s1", "a", 1), (2, "s1", "b", 2), (3, "s2", "a", 4)], [(12, "s2", "b", 8)])
    assert all(native_difference(n, log) is None for n in NATIVE)
    monkeypatch.setattr(rewrites, name, function)
    caught = [n for n in NATIVE if native_difference(n, log) is not None]
    assert caught, mutant


# ------------------------------------------------------------------------------ at scale

def scale_log(rows: int, suppliers: int, seed: int) -> ArrivalLog:
    """``rows`` bids over six hours in time order (so none is late), ``suppliers`` suppliers
    and four items with NULLs, one epoch per two rows (thousands of epochs)."""
    rng = random.Random(seed)
    events = [Event("bid", (BASE + i * 6 * 3600 * S // rows,
                            None if rng.random() < 0.05 else f"s{rng.randrange(suppliers)}",
                            rng.choice(("a", "b", "c", None)), rng.randrange(0, 100)))
              for i in range(rows)]
    return ArrivalLog(tuple(tuple(events[i:i + 2]) for i in range(0, rows, 2)))


def test_a_windowed_rollup_at_scale_is_duckdbs_and_the_executors() -> None:
    """5 000 bids in 2 500 epochs, one-minute windows over six hours, 200 suppliers: the
    reference's EOWC output (with the close) is DuckDB's own ROLLUP over the same bids, and the
    in-process executor, restarted every 100 epochs, emits the same rows in the same epochs."""
    log = scale_log(5000, 200, 7)
    sql = WINDOWED.replace("'10' SECOND", "'1' MINUTE")
    windowed = query(sql + EOWC)
    emitted = [(e.epoch, e.row) for e in run_eowc(windowed, log, Convention.RISINGWAVE,
                                                     close=True)]
    theirs = native(NATIVE["window"][1].replace("10000000", "60000000"), log)
    assert Counter(row for _, row in emitted) == theirs and len(theirs) > 5000
    run = run_in_process(windowed, log, Convention.RISINGWAVE, close=True,
                         restart_after=set(range(0, len(log.epochs), 100)))
    assert Counter((e.epoch, e.row) for e in run.emissions) == Counter(emitted)


# ------------------------------------------------------------------------------ ORDER BY

def test_an_order_by_without_limit_changes_no_row_and_orders_the_printed_table() -> None:
    """ORDER BY without LIMIT: the same plan, so the same stream and changelog; the query
    keeps the order for a printed table (by name, alias or position; DESC; NULLS FIRST)."""
    ordered = query(PLAIN + " ORDER BY total DESC, 1 NULLS FIRST")
    assert ordered.plan == query(PLAIN).plan
    assert ordered.order_by == (OrderKey("total", True, True), OrderKey("sup", False, True))
    table = [("s1", "a", 1, 0), (None, None, 7, 3), ("s2", None, 4, 1), ("s1", None, 3, 1),
             ("s2", "a", 4, 0), (None, "a", 5, 2)]
    assert ordered.in_order(table) == [(None, None, 7, 3), (None, "a", 5, 2), ("s2", None, 4, 1),
                                       ("s2", "a", 4, 0), ("s1", None, 3, 1), ("s1", "a", 1, 0)]
    assert query(PLAIN).order_by == ()
    assert "ORDER BY without LIMIT orders the query's result by its output columns" in \
        rejected("SELECT sup FROM bid ORDER BY price")
    assert not any(isinstance(n, Union) for n in walk(query("SELECT sup FROM bid ORDER BY sup"
                                                            ).plan))


def test_eowc_run_snapshot_prints_in_the_querys_order(tmp_path) -> None:  # noqa: ANN001
    sql = tmp_path / "q.sql"
    sql.write_text(SOURCE + PLAIN + " ORDER BY total DESC;", encoding="utf-8")
    events = tmp_path / "e.jsonl"
    events.write_text("\n".join(json.dumps({"table": "bid", "row": {
        "ts": f"2024-01-01 00:00:0{i}", "sup": sup, "item": item, "price": price}})
        for i, (sup, item, price) in enumerate([("s1", "a", 1), ("s1", "b", 2), ("s2", "a", 4)]))
        + "\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["run", str(sql), str(events), "--snapshot"])
    assert out.exit_code == 0, out.output
    records = [json.loads(line) for line in out.stdout.splitlines()]
    last = max(r["_epoch"] for r in records)  # one epoch per line: the last is the whole table
    assert [r["total"] for r in records if r["_epoch"] == last] == [7, 5, 4, 4, 3, 2, 2, 1]
    assert [r["total"] for r in records if r["_epoch"] == 0] == [1, 1, 1, 1]
