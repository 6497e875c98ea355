"""Scripts with views (issue 17): CREATE [TEMPORARY | MATERIALIZED] VIEW chains, INSERT INTO,
the statement that is run (the last one, or --view), the errors with their line and column,
and the plans of composed queries (a window TVF, a TopN, an OVER window or a join over a
view, a subquery, a join or a window aggregate). Expectations are written by hand."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import parse_arrival_log
from eowc.semantics.ir.expr import Binary, ColumnRef, Literal
from eowc.semantics.ir.plan import (
    AggCall,
    Aggregate,
    Filter,
    Join,
    OverWindow,
    Plan,
    Project,
    Scan,
    TopN,
    WindowTVF,
    walk,
)
from eowc.semantics.ir.values import SqlType, parse_timestamp
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
S = 1_000_000
MIN = 60 * S

BID = ("CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR,\n"
       "    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);\n")
ASK = ("CREATE SOURCE ask (asktime TIMESTAMP, price DOUBLE, item VARCHAR,\n"
       "    WATERMARK FOR asktime AS asktime - INTERVAL '1' MINUTE);\n")
#: Per item and 10-minute window, the total price (a window aggregate with window_time).
PER_ITEM = ("SELECT item, window_start, window_end, window_time, SUM(price) AS total "
            "FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) "
            "GROUP BY item, window_start, window_end, window_time")


def kinds(plan: Plan) -> list[str]:
    """The plan's node types, root first (depth first, left before right)."""
    return [type(node).__name__ for node in walk(plan)]


def names(plan: Plan) -> list[str]:
    return [c.name for c in plan.schema]


def rejected(script: str, view: str | None = None) -> SqlError:
    with pytest.raises(SqlError) as info:
        parse_script(script, view)
    return info.value


def position(script: str, fragment: str, occurrence: int = 0) -> tuple[int, int]:
    """Line and column (from 1) of the ``occurrence``-th ``fragment`` in ``script``: what an
    error about it must name."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = script.index(fragment, offset + 1)
    line = script.count("\n", 0, offset) + 1
    return line, offset - (script.rfind("\n", 0, offset) + 1) + 1


# ---------------------------------------------------------------------------------------------
# Statement forms


@pytest.mark.parametrize("create", ["CREATE VIEW", "CREATE TEMPORARY VIEW",
                                    "CREATE MATERIALIZED VIEW", "CREATE VIEW IF NOT EXISTS"])
def test_each_view_statement_names_a_plan_that_a_later_query_reads(create: str) -> None:
    script = parse_script(BID + f"{create} cheap AS SELECT item, price, bidtime FROM bid "
                                "WHERE price < 10;\nSELECT item FROM cheap")
    bid = script.sources["bid"]
    cheap = Project(Filter(Scan(bid), Binary("<", ColumnRef("price"), Literal(10, SqlType.BIGINT))),
                    (("item", ColumnRef("item")), ("price", ColumnRef("price")),
                     ("bidtime", ColumnRef("bidtime"))))
    assert script.views["cheap"].plan == cheap
    assert script.views["cheap"].name == "cheap"
    assert script.query.plan == Project(cheap, (("item", ColumnRef("item")),))
    assert script.query.name is None and not script.query.emit_on_window_close


def test_a_view_without_as_as_seed_004_writes_it() -> None:
    with_as = parse_script(BID + "CREATE TEMPORARY VIEW v AS SELECT item FROM bid; SELECT * FROM v")
    without = parse_script(BID + "CREATE TEMPORARY VIEW v SELECT item FROM bid; SELECT * FROM v")
    assert without.query.plan == with_as.query.plan


def test_a_view_in_each_place_a_table_goes() -> None:
    """FROM, Flink's TABLE v in a TVF, RisingWave's TUMBLE(v, ...), and both sides of a join."""
    views = BID + "CREATE VIEW b AS SELECT bidtime, price, item FROM bid;\n"
    bid = parse_script(views + "SELECT 1 FROM b").sources["bid"]
    b = Project(Scan(bid), tuple((n, ColumnRef(n)) for n in ("bidtime", "price", "item")))
    tumble = WindowTVF(b, "bidtime", WindowSpec(WindowKind.TUMBLE, 10 * MIN))
    for tvf in ("TABLE(TUMBLE(TABLE b, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))",
                "TUMBLE(b, bidtime, INTERVAL '10' MINUTE)"):
        plan = parse_script(views + f"SELECT window_start, COUNT(*) AS n FROM {tvf} "
                                    "GROUP BY window_start").query.plan
        assert plan == Project(Aggregate(tumble, (("window_start", ColumnRef("window_start")),),
                                         (AggCall("count", name="_agg0"),)),
                               (("window_start", ColumnRef("window_start")),
                                ("n", ColumnRef("_agg0"))))
    joined = parse_script(views + "SELECT l.item FROM b l JOIN b r ON l.item = r.item").query.plan
    assert isinstance(joined, Project) and isinstance(joined.input, Join)
    assert (joined.input.left, joined.input.right) == (b, b)
    assert (joined.input.left_alias, joined.input.right_alias) == ("l", "r")


def test_views_chain_and_may_be_defined_after_the_statement_that_reads_them() -> None:
    script = parse_script(BID + "CREATE VIEW top AS SELECT item FROM mid;\n"
                                "CREATE VIEW mid AS SELECT item, price FROM low;\n"
                                "CREATE VIEW low AS SELECT item, price FROM bid WHERE price > 1;")
    assert script.query.name == "low"  # the last statement is run
    assert kinds(script.views["top"].plan) == ["Project", "Project", "Project", "Filter", "Scan"]
    assert script.views["mid"].plan is script.views["top"].plan.input  # one plan, shared


def test_the_last_statement_is_run_unless_a_view_is_named() -> None:
    text = (BID + "CREATE MATERIALIZED VIEW a AS SELECT item FROM bid;\n"
            "CREATE MATERIALIZED VIEW b AS SELECT price FROM bid EMIT ON WINDOW CLOSE;\n")
    assert parse_script(text).query.name == "b"
    assert parse_script(text).query.emit_on_window_close
    chosen = parse_script(text, view="a").query
    assert (chosen.name, names(chosen.plan), chosen.emit_on_window_close) == ("a", ["item"], False)
    assert parse_script(text + "SELECT * FROM a").query.name is None


def test_insert_into_is_the_query_and_its_declared_sink_is_no_source() -> None:
    text = (BID + "CREATE TABLE cheap_bids (item VARCHAR, price DOUBLE) WITH ('connector' = "
            "'print');\nINSERT INTO cheap_bids SELECT item, price FROM bid WHERE price < 2")
    script = parse_script(text)
    assert script.query.name == "cheap_bids"
    assert list(script.sources) == ["bid"] and list(script.sinks) == ["cheap_bids"]
    assert [s.name for s in script.query.sources] == ["bid"]
    assert kinds(script.query.plan) == ["Project", "Filter", "Scan"]
    listed = parse_script(BID + "INSERT INTO out (i) SELECT item FROM bid").query
    assert listed.name == "out" and names(listed.plan) == ["item"]


def test_the_risingwave_join_view_pattern_takes_the_emit_mode_of_the_statement_run() -> None:
    text = (EXAMPLES / "analysis" / "window_join.sql").read_text(encoding="utf-8")
    body = text[text.index("SELECT c.window_start"):text.index("EMIT ON WINDOW CLOSE")]
    script = parse_script(text[:text.index("SELECT c.window_start")]
                          + f"CREATE MATERIALIZED VIEW join_view AS {body};\n"
                          "CREATE MATERIALIZED VIEW mv AS SELECT * FROM join_view "
                          "EMIT ON WINDOW CLOSE;")
    assert not script.views["join_view"].emit_on_window_close
    assert script.query.name == "mv" and script.query.emit_on_window_close
    assert script.query.plan.input == script.views["join_view"].plan  # type: ignore[attr-defined]
    assert kinds(script.query.plan)[:3] == ["Project", "Project", "Join"]


def test_semicolons_inside_parentheses_end_no_statement() -> None:
    """Seed 004 writes ``GROUP BY ...;`` before a subquery's closing parenthesis."""
    plan = parse_script(BID + "SELECT * FROM (SELECT item FROM bid;) s;").query.plan
    assert kinds(plan) == ["Project", "Project", "Scan"]


# ---------------------------------------------------------------------------------------------
# Errors: what is wrong, where (line and column in the script)


def test_an_unknown_view_names_the_declared_tables_and_views_and_where() -> None:
    text = BID + "CREATE VIEW v AS SELECT item FROM bid;\nSELECT *\nFROM  vv"
    error = rejected(text)
    assert error.reason == "unknown table 'vv' (declared: bid; views: v)"
    assert (error.line, error.column) == position(text, "vv") == (5, 7)
    assert str(error).startswith("line 5, column 7: unknown table 'vv'")
    in_tvf = BID + "SELECT window_start FROM TABLE(TUMBLE(TABLE nope, DESCRIPTOR(bidtime), " \
                   "INTERVAL '1' MINUTE)) GROUP BY window_start"
    error = rejected(in_tvf)
    assert error.reason.startswith("unknown table 'nope' in TUMBLE")
    assert (error.line, error.column) == position(in_tvf, "nope")


def test_a_view_that_reads_itself_is_a_cycle() -> None:
    text = BID + "CREATE VIEW a AS SELECT item FROM b;\nCREATE VIEW b AS\n  SELECT item FROM a;"
    error = rejected(text)
    assert error.reason == "view a reads itself: a -> b -> a"
    assert (error.line, error.column) == position(text, "a;") == (5, 20)
    self_loop = BID + "CREATE VIEW a AS SELECT item FROM a"
    error = rejected(self_loop)
    assert error.reason == "view a reads itself: a -> a"
    line, column = position(self_loop, "FROM a")
    assert (error.line, error.column) == (line, column + len("FROM "))


def test_a_name_defined_twice() -> None:
    text = BID + "CREATE VIEW v AS SELECT item FROM bid;\nCREATE VIEW   v AS SELECT price FROM bid"
    error = rejected(text)
    assert error.reason == "v is defined twice (first as a view at line 3)"
    assert (error.line, error.column) == (4, 15)
    error = rejected(BID + "CREATE VIEW bid AS SELECT 1 FROM bid")
    assert error.reason == "bid is defined twice (first as a table at line 1)"
    assert (error.line, error.column) == (3, 13)
    error = rejected(BID + BID + "SELECT * FROM bid")
    assert error.reason == "table bid is declared twice (first at line 1)"
    assert (error.line, error.column) == (3, 15)


def test_a_view_to_run_that_the_script_does_not_have() -> None:
    text = BID + "CREATE VIEW v AS SELECT item FROM bid;"
    assert str(rejected(text, view="w")) == \
        "cannot run view 'w': no view has that name (the script's views: v)"
    assert str(rejected(text, view="bid")) == \
        "cannot run view 'bid': bid is a table (the script's views: v)"


def test_two_unnamed_queries() -> None:
    text = BID + "SELECT item FROM bid;\nSELECT price FROM bid"
    error = rejected(text)
    assert error.reason == ("a script holds exactly one query besides its views (the first is at "
                            "line 3): name the others with CREATE VIEW name AS")
    assert (error.line, error.column) == (4, 1)


def test_a_view_that_emits_on_window_close_cannot_feed_a_statement_that_emits_on_update() -> None:
    text = (BID + "CREATE VIEW w AS SELECT window_start, COUNT(*) AS n FROM TUMBLE(bid, bidtime, "
            "INTERVAL '1' MINUTE) GROUP BY window_start EMIT ON WINDOW CLOSE;\n"
            "SELECT * FROM w")
    error = rejected(text)
    assert error.reason.startswith("view w emits on window close, but the query, which reads it "
                                   "and is run, emits on update")
    assert (error.line, error.column) == (4, 1)
    assert parse_script(text, view="w").query.emit_on_window_close  # the view itself runs


def test_an_error_inside_a_view_is_placed_in_the_view() -> None:
    text = BID + "CREATE VIEW v AS\nSELECT item FROM bid b JOIN bid c ON b.item = c.item;\n" \
                 "SELECT * FROM v"
    error = rejected(text)
    assert error.reason == "column item is ambiguous: write b.item or c.item"
    assert (error.line, error.column) == (4, 8)


def test_a_view_statement_that_is_no_query() -> None:
    error = rejected(BID + "CREATE VIEW v AS SELECT item FROM bid;\nDELETE FROM bid")
    assert error.reason.startswith("expected CREATE SOURCE/TABLE, CREATE VIEW, INSERT INTO or a "
                                   "SELECT query")
    assert (error.line, error.column) == (4, 1)


# ---------------------------------------------------------------------------------------------
# Composed queries: the front end builds the plan; the analysis decides if it has a trigger


def test_a_cascaded_window_aggregate_over_a_view_of_window_time() -> None:
    text = (BID + "CREATE VIEW per_5min AS SELECT item, window_start AS w5_start, window_end AS "
            "w5_end, window_time AS rowtime, SUM(price) AS partial FROM TABLE(TUMBLE(TABLE bid, "
            "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) GROUP BY item, window_start, window_end, "
            "window_time;\n"
            "SELECT window_start, window_end, SUM(partial) AS total FROM TABLE(TUMBLE(TABLE "
            "per_5min, DESCRIPTOR(rowtime), INTERVAL '10' MINUTES)) GROUP BY window_start, "
            "window_end EMIT ON WINDOW CLOSE")
    plan = parse_script(text).query.plan
    assert kinds(plan) == ["Project", "Aggregate", "WindowTVF", "Project", "Aggregate",
                           "WindowTVF", "Scan"]
    tvfs = [n for n in walk(plan) if isinstance(n, WindowTVF)]
    assert [(t.time_column, t.spec.size) for t in tvfs] == [("rowtime", 10 * MIN),
                                                           ("bidtime", 5 * MIN)]
    assert names(tvfs[0].input) == ["item", "w5_start", "w5_end", "rowtime", "partial"]
    assert names(plan) == ["window_start", "window_end", "total"]


def test_a_window_tvf_over_a_subquery_in_both_dialects() -> None:
    inner = ("SELECT item, window_end AS closed, SUM(price) AS total FROM TABLE(TUMBLE(TABLE "
             "bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES)) GROUP BY item, window_end")
    flink = parse_script(BID + f"SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE "
                               f"({inner}), DESCRIPTOR(closed), INTERVAL '1' HOUR)) "
                               f"GROUP BY window_start").query.plan
    risingwave = parse_script(BID + f"SELECT window_start, COUNT(*) AS n FROM TUMBLE(({inner}), "
                                    f"closed, INTERVAL '1' HOUR) GROUP BY window_start").query.plan
    assert flink == risingwave
    assert kinds(flink) == ["Project", "Aggregate", "WindowTVF", "Project", "Aggregate",
                            "WindowTVF", "Scan"]


def test_a_window_tvf_over_a_relation_with_window_columns_says_to_rename_them() -> None:
    error = rejected(BID + f"SELECT window_start FROM TUMBLE(({PER_ITEM}), window_time, "
                           f"INTERVAL '1' HOUR) GROUP BY window_start")
    assert "TUMBLE input already has column(s) ['window_end', 'window_start', 'window_time']" \
        in error.reason


@pytest.mark.parametrize("below", [
    f"({PER_ITEM})",  # a subquery: a window aggregate's output
    "per_item",  # a view of it
])
def test_a_window_top_n_over_a_window_aggregate(below: str) -> None:
    text = (BID + f"CREATE VIEW per_item AS {PER_ITEM};\n"
            f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
            f"ORDER BY total DESC) AS rn FROM {below}) WHERE rn <= 3 EMIT ON WINDOW CLOSE")
    plan = parse_script(text).query.plan
    assert kinds(plan) == ["Project", "Project", "TopN", "Project", "Aggregate", "WindowTVF",
                           "Scan"]
    top = next(n for n in walk(plan) if isinstance(n, TopN))
    assert top.limit == 3
    assert top.partition_by == (ColumnRef("window_start"), ColumnRef("window_end"))
    assert top.order_by == ((ColumnRef("total"), True),)
    assert names(plan) == ["item", "window_start", "window_end", "window_time", "total", "rn"]


def test_a_dedup_over_a_join_and_a_top_n_over_a_plain_view() -> None:
    text = (BID + ASK + "CREATE VIEW matched AS SELECT b.item, bidtime, asktime FROM bid b JOIN "
            "ask a ON b.item = a.item AND a.asktime BETWEEN b.bidtime AND b.bidtime + INTERVAL "
            "'1' MINUTE;\n"
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY item ORDER BY asktime) "
            "AS first_ask FROM matched) WHERE first_ask = 1")
    plan = parse_script(text).query.plan
    assert kinds(plan) == ["Project", "Project", "TopN", "Project", "Join", "Scan", "Scan"]
    top = next(n for n in walk(plan) if isinstance(n, TopN))
    assert (top.limit, top.partition_by, top.order_by) == (1, (ColumnRef("item"),),
                                                           ((ColumnRef("asktime"), False),))
    bids = parse_script(BID + "CREATE VIEW v AS SELECT * FROM bid;\nSELECT * FROM (SELECT *, "
                              "ROW_NUMBER() OVER (PARTITION BY item ORDER BY price DESC) AS r "
                              "FROM v) WHERE r < 3").query.plan
    assert next(n for n in walk(bids) if isinstance(n, TopN)).limit == 2


def test_an_over_window_over_a_window_aggregate() -> None:
    plan = parse_script(BID + f"SELECT item, total, SUM(total) OVER (PARTITION BY item ORDER BY "
                              f"window_time ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS last_two "
                              f"FROM ({PER_ITEM}) EMIT ON WINDOW CLOSE").query.plan
    assert kinds(plan) == ["Project", "OverWindow", "Project", "Aggregate", "WindowTVF", "Scan"]
    over = plan.input  # type: ignore[attr-defined]
    assert isinstance(over, OverWindow)
    assert over.order_by == ((ColumnRef("window_time"), False),)
    assert names(plan) == ["item", "total", "last_two"]


def test_an_interval_join_over_a_window_aggregates_output() -> None:
    text = (BID + ASK + f"CREATE VIEW per_item AS {PER_ITEM};\n"
            "SELECT p.item, total, asktime FROM per_item p JOIN ask a ON p.item = a.item AND "
            "a.asktime BETWEEN p.window_time AND p.window_time + INTERVAL '5' MINUTE "
            "EMIT ON WINDOW CLOSE")
    plan = parse_script(text).query.plan
    assert kinds(plan) == ["Project", "Join", "Project", "Aggregate", "WindowTVF", "Scan", "Scan"]
    join = plan.input  # type: ignore[attr-defined]
    assert isinstance(join, Join) and (join.left_alias, join.right_alias) == ("p", "a")
    assert names(join) == ["p.item", "window_start", "window_end", "window_time", "total",
                           "asktime", "price", "a.item"]


def test_a_join_below_a_join_through_a_view() -> None:
    text = (BID + ASK + "CREATE VIEW pairs AS SELECT b.item, bidtime, asktime FROM bid b JOIN ask "
            "a ON b.item = a.item AND a.asktime BETWEEN b.bidtime AND b.bidtime + INTERVAL '1' "
            "MINUTE;\nSELECT p.item, p.asktime, c.asktime AS again FROM pairs p JOIN ask c ON "
            "p.item = c.item AND c.asktime BETWEEN p.asktime AND p.asktime + INTERVAL '1' MINUTE")
    plan = parse_script(text).query.plan
    assert kinds(plan) == ["Project", "Join", "Project", "Join", "Scan", "Scan", "Scan"]
    assert names(plan) == ["item", "asktime", "again"]


# ---------------------------------------------------------------------------------------------
# Seed 004's job


def test_seed_004s_job_as_written_stops_at_its_ambiguous_column() -> None:
    text = (EXAMPLES / "seed004_job.sql").read_text(encoding="utf-8")
    error = rejected(text)
    assert error.reason == "column seller_id is ambiguous: write a.seller_id or b.seller_id"
    # the view's SELECT list: "SELECT item_id, seller_id, ..." on the line after CREATE
    view_line = text[:text.index("CREATE TEMPORARY VIEW")].count("\n") + 2
    assert (error.line, error.column) == (view_line, len("SELECT item_id, ") + 1)


def test_seed_004s_fixed_job_is_the_plan_the_seed_describes() -> None:
    script = parse_script((EXAMPLES / "seed004_job_fixed.sql").read_text(encoding="utf-8"))
    query = script.query
    assert query.name == "item_top100_cumulate_10min" and query.emit_on_window_close
    assert list(script.views) == ["trd_itm_ord_mm"]
    assert list(script.sources) == ["orders"] and list(script.sinks) == [query.name]
    assert kinds(query.plan) == ["Project", "Project", "TopN", "Project", "Join",
                                 "Project", "Aggregate", "WindowTVF", "Scan",
                                 "Project", "Aggregate", "WindowTVF", "Scan"]
    cumulate = WindowSpec(WindowKind.CUMULATE, 24 * 60 * MIN, 10 * MIN)
    assert [n.spec for n in walk(query.plan) if isinstance(n, WindowTVF)] == [cumulate, cumulate]
    join = next(n for n in walk(query.plan) if isinstance(n, Join))
    assert (join.kind, join.left_alias, join.right_alias) == ("left", "a", "b")
    item_sales, seller_buyers = (n for n in walk(query.plan) if isinstance(n, Aggregate))
    assert [(c.function, c.distinct) for c in item_sales.calls] == [("sum", False), ("count", True)]
    assert [(c.function, c.distinct) for c in seller_buyers.calls] == [("count", True)]
    top = next(n for n in walk(query.plan) if isinstance(n, TopN))
    assert top.limit == 100
    assert top.partition_by == (ColumnRef("window_start"), ColumnRef("window_end"))
    assert top.order_by == ((ColumnRef("sales"), True),)
    assert names(query.plan) == ["item_id", "seller_id", "window_start", "window_end", "sales",
                                 "item_buyer_cnt", "slr_buyer_cnt", "rank"]
    assert [c.type for c in query.schema] == [SqlType.BIGINT, SqlType.BIGINT, SqlType.TIMESTAMP,
                                              SqlType.TIMESTAMP, SqlType.DOUBLE, SqlType.BIGINT,
                                              SqlType.BIGINT, SqlType.BIGINT]


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
def test_seed_004s_fixed_job_runs(convention: Convention) -> None:
    """seed004_orders.jsonl, W = pay_time - 5 s: epoch 1 moves W to 00:11:55 and closes the
    CUMULATE window [00:00, 00:10) (orders at 00:01 i1 s10 u100 5.0, 00:03 i2 s10 u101 7.0,
    00:04 i1 s10 u101 3.0, 00:08 i3 s20 u102 9.0); epoch 2 moves it to 00:20:55 and closes
    [00:00, 00:20) (plus 00:12 i2 s10 u100 4.0 and 00:15 i3 s20 u103 1.0). No window end is
    within a millisecond of a watermark, so every convention emits the same rows in the same
    epochs."""
    script = parse_script((EXAMPLES / "seed004_job_fixed.sql").read_text(encoding="utf-8"))
    lines = (EXAMPLES / "seed004_orders.jsonl").read_text(encoding="utf-8").splitlines()
    log = parse_arrival_log(lines, script.sources).log
    start, first, second = (parse_timestamp(f"2021-01-01 00:{m}:00") for m in ("00", "10", "20"))
    # (item, seller, window, sales, item buyers, seller buyers, rank), by sales descending
    expected = [
        (1, (3, 20, start, first, 9.0, 1, 1, 1)), (1, (1, 10, start, first, 8.0, 2, 2, 2)),
        (1, (2, 10, start, first, 7.0, 1, 2, 3)),
        (2, (2, 10, start, second, 11.0, 2, 2, 1)), (2, (3, 20, start, second, 10.0, 2, 2, 2)),
        (2, (1, 10, start, second, 8.0, 2, 2, 3))]
    # the DuckDB oracle (a batch query with the final watermark) agrees already
    assert oracle_eowc(script.query, log, convention) == Counter(r for _, r in expected)
    assert sorted(run_eowc(script.query, log, convention)) == sorted(expected)


# ---------------------------------------------------------------------------------------------
# The command line


RW_JOIN_VIEW = (EXAMPLES / "views" / "join_view.sql").read_text(encoding="utf-8")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def records(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def window(minute: int) -> tuple[str, str]:
    return f"2024-01-01 10:0{minute}:00", f"2024-01-01 10:0{minute + 1}:00"


def test_run_takes_the_last_view_or_the_view_named(tmp_path: Path) -> None:
    """window_join.jsonl, both watermarks ts - 5 s: epoch 2 moves W[views] to 10:01:10 and
    closes [10:00, 10:01) (user 1: 2 clicks, 1 view; user 2: 1 and 1); epoch 3 moves both
    to 10:02:25 and closes [10:01, 10:02) (user 1: 1 and 1). [10:02, 10:03) stays open."""
    query = tmp_path / "q.sql"
    query.write_text(RW_JOIN_VIEW, encoding="utf-8")
    events = str(EXAMPLES / "window_join.jsonl")
    expected = [(1, window(0), 2, 1, 2), (2, window(0), 1, 1, 2), (1, window(1), 1, 1, 3)]
    found = records(invoke("run", str(query), events, "--with-epoch"))
    assert [(r["user_id"], (r["window_start"], r["window_end"]), r["clicks"], r["views"],
             r["_epoch"]) for r in found] == expected
    # the join view itself emits on update: user 3's open window [10:02, 10:03) is there too
    found = records(invoke("run", str(query), events, "--view", "join_view"))
    assert {(r["user_id"], r["window_start"], r["_op"]) for r in found} == {
        (1, window(0)[0], "+"), (2, window(0)[0], "+"), (1, window(1)[0], "+"),
        (3, window(2)[0], "+")}


def test_explain_takes_a_view(tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text(RW_JOIN_VIEW, encoding="utf-8")
    done = invoke("explain", str(query), "--view", "mv", "--format", "json")
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["valid"] is True
    assert [o["operator"] for o in found["operators"]].count("WindowJoin") == 1


def test_a_view_the_script_does_not_have_is_a_usage_error(tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text(RW_JOIN_VIEW, encoding="utf-8")
    events = str(EXAMPLES / "window_join.jsonl")
    for command in (["run", str(query), events], ["explain", str(query)], ["prove", str(query)]):
        done = invoke(*command, "--view", "nope")
        assert done.exit_code == 2
        assert f"{query}: cannot run view 'nope': no view has that name (the script's views: " \
               f"join_view, mv)" in done.output
    done = invoke("run", str(query), events, "--view", "mv", "--engine", "spark")
    assert done.exit_code == 2 and "--view takes --engine reference or in-process" in done.output


def test_the_command_line_names_file_line_and_column(tmp_path: Path) -> None:
    done = invoke("run", str(EXAMPLES / "seed004_job.sql"), str(EXAMPLES / "seed004_orders.jsonl"))
    assert done.exit_code == 2
    line = (EXAMPLES / "seed004_job.sql").read_text(encoding="utf-8").splitlines().index(
        "SELECT item_id, seller_id, window_start, window_end, sales, item_buyer_cnt, slr_buyer_cnt") + 1
    assert f"seed004_job.sql: line {line}, column 17: column seller_id is ambiguous: write " \
           f"a.seller_id or b.seller_id" in done.output
    assert "Traceback" not in done.output


def test_run_of_an_insert_into(tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text("CREATE TABLE out (user_id BIGINT, n BIGINT) WITH ('connector' = 'print');\n"
                     + RW_JOIN_VIEW.split("CREATE MATERIALIZED VIEW join_view")[0]
                     + "INSERT INTO out SELECT user_id, COUNT(*) AS n FROM TUMBLE(clicks, ts, "
                       "INTERVAL '1' MINUTE) GROUP BY user_id, window_start EMIT ON WINDOW CLOSE",
                     encoding="utf-8")
    # clicks: W = 10:00:35 after epoch 0, 10:01:15 after epoch 1 (closes [10:00, 10:01): user 1
    # twice, user 2 once), 10:02:25 after epoch 3 (closes [10:01, 10:02): user 1 once)
    found = records(invoke("run", str(query), str(EXAMPLES / "window_join.jsonl"), "--with-epoch"))
    assert [(r["user_id"], r["n"], r["_epoch"]) for r in found] == [(1, 2, 1), (2, 1, 1), (1, 1, 3)]

