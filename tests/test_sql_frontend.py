"""The SQL front end (eowc.semantics.frontend.sql): what scripts become, and the messages of what is refused.

A rejection must say what is wrong and name the offending SQL fragment (or, for the EOWC
checks of eowc.semantics.analysis.completion.completion_rule, the grouping columns and the source's
watermark column), so the tests assert on the message text.
"""

from __future__ import annotations

import json

import pytest

from eowc.semantics.analysis.completion import completion_rule
from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import Statement, parse_script, script_statements
from eowc.semantics.ir.arrival import ArrivalLog, parse_arrival_log
from eowc.semantics.ir.expr import Binary, Column, ColumnRef, Literal
from eowc.semantics.ir.plan import (
    Aggregate,
    Filter,
    Frame,
    Join,
    OverWindow,
    Project,
    Query,
    Scan,
    Source,
    TopN,
    Union,
    WatermarkDecl,
    WindowCall,
    WindowTVF,
    walk,
)
from eowc.semantics.ir.values import SqlType, parse_timestamp
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.rules.triggers import Convention

S = 1_000_000
MIN = 60 * S

BID = ("CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR, "
       "WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);\n")
PLAIN = "CREATE TABLE plain (id BIGINT, ts TIMESTAMP, v VARCHAR);\n"


def query_of(sql: str) -> Query:
    return parse_script(BID + PLAIN + sql).query


def tvf_of(query: Query) -> WindowTVF:
    nodes = [n for n in walk(query.plan) if isinstance(n, WindowTVF)]
    assert len(nodes) == 1
    return nodes[0]


def rejected(sql: str) -> SqlError:
    """The SqlError that parsing ``sql`` (after the two CREATE statements) raises."""
    with pytest.raises(SqlError) as info:
        parse_script(BID + PLAIN + sql)
    return info.value


def eowc_rejected(sql: str, convention: Convention = Convention.RISINGWAVE) -> PlanError:
    """The PlanError that running ``sql`` under EOWC raises (the query itself parses)."""
    script = parse_script(BID + PLAIN + sql)
    log = parse_arrival_log([], script.sources).log
    with pytest.raises(PlanError) as info:
        list(run_eowc(script.query, log, convention))
    return info.value


# ---------------------------------------------------------------------------------------------
# CREATE SOURCE / CREATE TABLE


@pytest.mark.parametrize(("clause", "delay"), [
    ("INTERVAL '5' SECOND", 5 * S),
    ("INTERVAL '5' SECONDS", 5 * S),
    ("INTERVAL '2' MINUTE", 2 * MIN),
    ("INTERVAL '2' MINUTES", 2 * MIN),
    ("INTERVAL '1' HOUR", 60 * MIN),
    ("INTERVAL '500' MILLISECONDS", 500_000),
    ("INTERVAL '1.5' SECONDS", 1_500_000),
    ("INTERVAL '5 seconds'", 5 * S),
])
def test_watermark_delay_units(clause: str, delay: int) -> None:
    script = parse_script(f"CREATE SOURCE s (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - {clause});"
                          "SELECT v, ts FROM s")
    assert script.sources["s"].watermark == WatermarkDecl("ts", delay)


def test_watermark_without_delay_and_in_the_middle_of_the_column_list() -> None:
    """``WATERMARK FOR ts AS ts`` is delay 0; the clause may sit between column definitions."""
    script = parse_script("CREATE SOURCE s (ts TIMESTAMP, WATERMARK FOR ts AS ts, v INT);"
                          "SELECT * FROM s")
    source = script.sources["s"]
    assert source.watermark == WatermarkDecl("ts", 0)
    assert source.columns == (Column("ts", SqlType.TIMESTAMP), Column("v", SqlType.BIGINT))


def test_create_source_with_properties_parses_like_create_table() -> None:
    """WITH (...) connector properties are accepted and ignored; SOURCE and TABLE give the
    same Source; type names map to the subset's types (INT -> BIGINT, TEXT -> VARCHAR...)."""
    columns = "(a INT, b TEXT, c DOUBLE PRECISION, d BOOLEAN, ts TIMESTAMP, " \
              "WATERMARK FOR ts AS ts - INTERVAL '10' SECONDS)"
    source = parse_script(f"CREATE SOURCE s {columns} WITH (connector = 'kafka', topic = 'bids', "
                          f"scan.startup.mode = 'earliest');SELECT a FROM s").sources["s"]
    table = parse_script(f"CREATE TABLE s {columns};SELECT a FROM s").sources["s"]
    assert source == table == Source(
        "s", (Column("a", SqlType.BIGINT), Column("b", SqlType.VARCHAR), Column("c", SqlType.DOUBLE),
              Column("d", SqlType.BOOLEAN), Column("ts", SqlType.TIMESTAMP)),
        WatermarkDecl("ts", 10 * S))


def test_primary_key_as_a_column_constraint() -> None:
    script = parse_script("CREATE TABLE t (id BIGINT PRIMARY KEY, ts TIMESTAMP, "
                          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND); SELECT * FROM t")
    assert script.sources["t"].primary_key == ("id",)


def test_primary_key_as_a_table_constraint() -> None:
    script = parse_script("CREATE TABLE t (id BIGINT, k VARCHAR, ts TIMESTAMP, PRIMARY KEY (id, k), "
                          "WATERMARK FOR ts AS ts - INTERVAL '2' MINUTES); SELECT * FROM t")
    source = script.sources["t"]
    assert source.primary_key == ("id", "k")
    assert source.watermark == WatermarkDecl("ts", 2 * MIN)


def test_a_table_without_watermark() -> None:
    script = parse_script(PLAIN + "SELECT * FROM plain")
    assert script.sources["plain"].watermark is None
    assert script.sources["plain"].event_time_index is None


@pytest.mark.parametrize(("ddl", "message"), [
    ("CREATE SOURCE s (ts TIMESTAMP, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' SECOND)",
     "watermark column s.v must be a TIMESTAMP"),
    ("CREATE SOURCE s (ts TIMESTAMP, WATERMARK FOR nope AS nope - INTERVAL '1' SECOND)",
     "WATERMARK FOR names an unknown column of s"),
    ("CREATE SOURCE s (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MONTH)",
     "interval unit month has no fixed length"),
    ("CREATE SOURCE s (ts TIMESTAMP, WATERMARK FOR ts AS ts + INTERVAL '1' SECOND)",
     "must have the form WATERMARK FOR ts AS ts - INTERVAL"),
])
def test_bad_watermark_declarations(ddl: str, message: str) -> None:
    with pytest.raises(SqlError, match=message):
        parse_script(ddl + "; SELECT * FROM s")


def test_a_table_declared_twice_and_scripts_without_exactly_one_query() -> None:
    with pytest.raises(SqlError, match="table plain is declared twice"):
        parse_script(PLAIN + PLAIN + "SELECT * FROM plain")
    with pytest.raises(SqlError, match="the script has no query"):
        parse_script(PLAIN)
    with pytest.raises(SqlError, match="exactly one query"):
        parse_script(PLAIN + "SELECT * FROM plain; SELECT id FROM plain")


# ---------------------------------------------------------------------------------------------
# Queries


def test_materialized_view_names_the_query() -> None:
    query = query_of("CREATE MATERIALIZED VIEW v AS SELECT window_start, COUNT(*) AS n "
                     "FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE) GROUP BY window_start "
                     "EMIT ON WINDOW CLOSE")
    plain = query_of("SELECT window_start, COUNT(*) AS n FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE) "
                     "GROUP BY window_start EMIT ON WINDOW CLOSE")
    assert query.name == "v"
    assert query.emit_on_window_close
    assert query.plan == plain.plan


@pytest.mark.parametrize(("risingwave", "flink", "spec"), [
    ("TUMBLE(bid, bidtime, INTERVAL '10' MINUTE)",
     "TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))",
     WindowSpec(WindowKind.TUMBLE, 10 * MIN)),
    ("TUMBLE(bid, bidtime, INTERVAL '10' MINUTE, INTERVAL '3' MINUTE)",
     "TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, INTERVAL '3' MINUTES))",
     WindowSpec(WindowKind.TUMBLE, 10 * MIN, offset=3 * MIN)),
    # HOP(table, time, slide, size): slide first (SEMANTICS.md §2b)
    ("HOP(bid, bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE)",
     "TABLE(HOP(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))",
     WindowSpec(WindowKind.HOP, 10 * MIN, slide=5 * MIN)),
    ("HOP(bid, bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE, INTERVAL '1' MINUTE)",
     "TABLE(HOP(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES, "
     "INTERVAL '1' MINUTES))",
     WindowSpec(WindowKind.HOP, 10 * MIN, slide=5 * MIN, offset=1 * MIN)),
    # CUMULATE(table, time, step, size): step first
    ("CUMULATE(bid, bidtime, INTERVAL '2' MINUTE, INTERVAL '10' MINUTE)",
     "TABLE(CUMULATE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))",
     WindowSpec(WindowKind.CUMULATE, 10 * MIN, slide=2 * MIN)),
])
def test_risingwave_and_flink_tvf_forms_give_equal_plans(risingwave: str, flink: str,
                                                         spec: WindowSpec) -> None:
    template = ("SELECT window_start, window_end, SUM(price) AS s FROM {} "
                "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")
    rw_query, flink_query = query_of(template.format(risingwave)), query_of(template.format(flink))
    assert rw_query == flink_query
    tvf = tvf_of(rw_query)
    assert tvf.spec == spec
    assert tvf.time_column == "bidtime"
    assert [c.name for c in tvf.schema] == ["bidtime", "price", "item", "window_start", "window_end",
                                            "window_time"]


def test_wrong_number_of_tvf_arguments_shows_the_expected_shape() -> None:
    error = rejected("SELECT window_start FROM HOP(bid, bidtime, INTERVAL '5' MINUTE) "
                     "GROUP BY window_start")
    assert "expected HOP(table, time_column, slide, size [, offset])" in str(error)
    error = rejected("SELECT window_start FROM CUMULATE(bid, bidtime, INTERVAL '3' MINUTE, "
                     "INTERVAL '10' MINUTE) GROUP BY window_start")
    assert "CUMULATE size must be a whole multiple of its step" in str(error)


@pytest.mark.parametrize("suffix", ["EMIT ON WINDOW CLOSE", "emit on window close",
                                    "EMIT ON WINDOW CLOSE;"])
def test_trailing_emit_on_window_close_sets_the_mode(suffix: str) -> None:
    query = query_of(f"SELECT item, bidtime FROM bid {suffix}")
    assert query.emit_on_window_close
    assert not query_of("SELECT item, bidtime FROM bid").emit_on_window_close


def test_emit_on_window_close_must_end_the_query() -> None:
    error = rejected("SELECT item, bidtime FROM bid EMIT ON WINDOW CLOSE WHERE price > 1")
    assert "EMIT ON WINDOW CLOSE must end the query" in str(error)
    assert error.fragment is not None and error.fragment.startswith("EMIT ON WINDOW CLOSE WHERE")


def test_group_by_ordinal_and_alias_equal_the_named_columns() -> None:
    named = query_of("SELECT window_start AS ws, item, COUNT(*) AS n FROM TUMBLE(bid, bidtime, "
                     "INTERVAL '10' MINUTE) GROUP BY window_start, item EMIT ON WINDOW CLOSE")
    ordinal = query_of("SELECT window_start AS ws, item, COUNT(*) AS n FROM TUMBLE(bid, bidtime, "
                       "INTERVAL '10' MINUTE) GROUP BY 1, 2 EMIT ON WINDOW CLOSE")
    alias = query_of("SELECT window_start AS ws, item, COUNT(*) AS n FROM TUMBLE(bid, bidtime, "
                     "INTERVAL '10' MINUTE) GROUP BY ws, item EMIT ON WINDOW CLOSE")
    assert named == ordinal == alias
    aggregate = next(n for n in walk(named.plan) if isinstance(n, Aggregate))
    assert [name for name, _ in aggregate.group_by] == ["window_start", "item"]
    assert [c.name for c in named.schema] == ["ws", "item", "n"]
    error = rejected("SELECT item, COUNT(*) FROM bid GROUP BY 3")
    assert "GROUP BY position is out of range" in str(error)


def test_select_star_expands_to_the_source_columns() -> None:
    query = query_of("SELECT * FROM bid EMIT ON WINDOW CLOSE")
    assert [c.name for c in query.schema] == ["bidtime", "price", "item"]
    assert isinstance(query.plan, Project)
    assert query.plan.items == (("bidtime", ColumnRef("bidtime")), ("price", ColumnRef("price")),
                                ("item", ColumnRef("item")))
    tvf_star = query_of("SELECT * FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE)")
    assert [c.name for c in tvf_star.schema][-3:] == ["window_start", "window_end", "window_time"]


def test_qualified_columns_and_where_become_a_filter() -> None:
    query = query_of("SELECT b.item, b.bidtime FROM bid AS b WHERE b.price > 2")
    assert isinstance(query.plan, Project) and isinstance(query.plan.input, Filter)
    assert isinstance(query.plan.input.input, Scan)
    assert [c.name for c in query.schema] == ["item", "bidtime"]


def test_subquery_in_from_runs_under_eowc() -> None:
    """The window columns of a TVF inside a subquery still carry the watermark: two bids in
    [08:00, 08:10) with price > 1, one at 08:11 moves W to 08:10 and closes the window."""
    query = query_of("SELECT window_start, COUNT(*) AS n FROM (SELECT * FROM TUMBLE(bid, bidtime, "
                     "INTERVAL '10' MINUTE) WHERE price > 1) AS w GROUP BY window_start "
                     "EMIT ON WINDOW CLOSE")
    lines = [json.dumps({"table": "bid", "row": {"bidtime": f"2020-04-15 {t}:00", "price": p,
                                                 "item": "x"}})
             for t, p in (("08:05", 4.0), ("08:07", 1.0), ("08:09", 2.0), ("08:11", 3.0))]
    log = parse_arrival_log(lines, {s.name: s for s in query.sources}).log
    out = [(e.epoch, e.row) for e in run_eowc(query, log)]
    assert out == [(3, (parse_timestamp("2020-04-15 08:00:00"), 2))]


def test_a_window_function_without_an_alias_is_named_by_its_function() -> None:
    """RisingWave names ``lag(price) OVER (...)`` ``lag``: three bids of one item at 08:05,
    08:07 and 08:09 (one epoch each, the watermark at the bid's time), an item at 08:20 closes
    the first two (the 08:09 bid waits for the row after it, which may still come); lag gives
    NULL, 4.0 and max over one row either side 4.0, 4.0."""
    query = query_of("SELECT bidtime, lag(price) OVER (PARTITION BY item ORDER BY bidtime), "
                     "max(price) OVER (PARTITION BY item ORDER BY bidtime ROWS BETWEEN 1 PRECEDING "
                     "AND 1 FOLLOWING) FROM bid EMIT ON WINDOW CLOSE")
    assert [c.name for c in query.schema] == ["bidtime", "lag", "max"]
    lines = []
    for t, p, item in (("08:05", 4.0, "x"), ("08:07", 1.0, "x"), ("08:09", 2.0, "x"),
                       ("08:20", 9.0, "y")):
        lines += [json.dumps({"table": "bid", "row": {"bidtime": f"2020-04-15 {t}:00",
                                                      "price": p, "item": item}}),
                  '{"barrier": true}']
    log = parse_arrival_log(lines, {s.name: s for s in query.sources}).log
    rows = [e.row[1:] for e in run_eowc(query, log)]
    assert rows == [(None, 4.0), (4.0, 4.0)]


# ---------------------------------------------------------------------------------------------
# EOWC rejections (eowc.semantics.analysis.completion.completion_rule, raised when run_eowc runs)


def test_eowc_group_by_without_a_watermark_column_names_keys_and_watermark() -> None:
    error = eowc_rejected("SELECT item, COUNT(*) AS n FROM bid GROUP BY item EMIT ON WINDOW CLOSE")
    message = str(error)
    assert "Emit-On-Window-Close" in message
    assert "GROUP BY item" in message
    assert "bid.bidtime" in message


def test_eowc_group_by_several_keys_lists_them_all() -> None:
    error = eowc_rejected("SELECT item, price, COUNT(*) AS n FROM bid GROUP BY item, price "
                          "EMIT ON WINDOW CLOSE")
    assert "GROUP BY item, price" in str(error)
    assert "bid.bidtime" in str(error)


def test_eowc_rejection_shows_an_expression_key_as_written() -> None:
    error = eowc_rejected("SELECT upper(item) AS u, COUNT(*) AS n FROM bid GROUP BY upper(item) "
                          "EMIT ON WINDOW CLOSE")
    assert "GROUP BY UPPER(item) has no column derived" in str(error)


def test_eowc_global_aggregate_has_no_watermark_key() -> None:
    error = eowc_rejected("SELECT COUNT(*) AS n FROM bid EMIT ON WINDOW CLOSE")
    assert "GROUP BY (none)" in str(error)
    assert "bid.bidtime" in str(error)


def test_eowc_window_over_a_column_that_is_not_the_watermark_column() -> None:
    """A TUMBLE over ``ts2`` (not the watermark column ``ts``) gives window columns that carry
    no watermark, so grouping by them has no trigger."""
    script = parse_script(
        "CREATE SOURCE two (ts TIMESTAMP, ts2 TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);"
        "SELECT window_start, COUNT(*) FROM TUMBLE(two, ts2, INTERVAL '10' SECOND) "
        "GROUP BY window_start EMIT ON WINDOW CLOSE")
    with pytest.raises(PlanError) as info:
        completion_rule(script.query, Convention.FLINK)
    assert "GROUP BY window_start" in str(info.value)
    assert "two.ts" in str(info.value)


def test_eowc_over_a_source_without_watermark() -> None:
    error = eowc_rejected("SELECT id, ts FROM plain EMIT ON WINDOW CLOSE")
    assert "source plain declares no watermark" in str(error)
    assert "WATERMARK FOR" in str(error)


def test_eowc_sort_without_the_watermark_column_in_its_output() -> None:
    error = eowc_rejected("SELECT item, price FROM bid EMIT ON WINDOW CLOSE")
    assert "no column derived from the watermark column bid.bidtime" in str(error)


@pytest.mark.parametrize("convention", list(Convention))
def test_the_same_queries_are_fine_in_update_mode(convention: Convention) -> None:
    """Without EMIT ON WINDOW CLOSE nothing needs a trigger: the grouped query parses and runs."""
    script = parse_script(BID + "SELECT item, COUNT(*) AS n FROM bid GROUP BY item")
    line = json.dumps({"table": "bid", "row": {"bidtime": "2020-04-15 08:05:00", "price": 1.0,
                                               "item": "x"}})
    log = parse_arrival_log([line], script.sources).log
    assert [(c.epoch, c.op, c.row) for c in run_update(script.query, log, convention)] == [
        (0, "+", ("x", 1))]


# ---------------------------------------------------------------------------------------------
# Unsupported SQL: each message names the construct and the offending fragment


@pytest.mark.parametrize(("sql", "words", "fragment"), [
    ("SELECT * FROM bid, plain", "a join needs an ON condition", "plain"),
    ("SELECT * FROM bid JOIN plain USING (id)", "a join needs an ON condition", "USING"),
    ("SELECT * FROM bid a JOIN plain ON a.price = plain.id JOIN plain ON plain.id = a.price",
     "two relations of the join are called plain: give them aliases", "plain"),
    ("SELECT id FROM bid a JOIN plain p ON a.price = p.id JOIN plain q ON q.id = p.id",
     "column id is ambiguous: write p.id or q.id", "id"),
    ("SELECT * FROM bid JOIN bid ON bid.price = bid.price", "give them aliases", "JOIN bid"),
    ("SELECT price FROM bid a JOIN bid b ON a.bidtime = b.bidtime",
     "column price is ambiguous: write a.price or b.price", "price"),
    ("SELECT item FROM bid UNION SELECT v FROM plain", "UNION without ALL", "UNION"),
    ("SELECT item FROM bid ORDER BY price",
     "ORDER BY without LIMIT orders the query's result by its output columns (item), not price",
     "price"),
    ("SELECT * FROM bid LIMIT 3", "LIMIT is not supported", "LIMIT 3"),
    ("SELECT DISTINCT item FROM bid", "DISTINCT is not supported", "DISTINCT"),
    ("SELECT lag(price) OVER (PARTITION BY item ORDER BY bidtime), sum(price) OVER (ORDER BY "
     "price) FROM bid", "must have the same PARTITION BY and ORDER BY", "OVER (ORDER BY price)"),
    ("SELECT sum(price) OVER (PARTITION BY item) FROM bid", "an OVER window needs ORDER BY",
     "OVER (PARTITION BY item)"),
    ("SELECT ntile(2) OVER (ORDER BY bidtime) FROM bid", "unsupported window function ntile",
     "ntile(2)"),
    ("SELECT item, COUNT(*) OVER (ORDER BY bidtime) FROM bid GROUP BY item",
     "OVER windows cannot be combined with GROUP BY", "GROUP BY item"),
    ("SELECT * FROM nope", "unknown table 'nope'", "nope"),
    ("SELECT window_start FROM TUMBLE(nope, bidtime, INTERVAL '1' MINUTE) GROUP BY window_start",
     "unknown table 'nope' in TUMBLE", "nope"),
    ("SELECT nope FROM bid", "unknown column 'nope'", "nope"),
    ("SELECT item FROM bid WHERE nope > 1", "unknown column 'nope'", "nope"),
    ("SELECT window_start FROM TUMBLE(bid, bidtime, INTERVAL '1' MONTH) GROUP BY window_start",
     "interval unit month has no fixed length", "MONTH"),
    ("SELECT bidtime + INTERVAL '1' YEAR FROM bid", "interval unit year has no fixed length",
     "YEAR"),
    ("SELECT SUM(MAX(price)) FROM bid", "aggregates cannot be nested", "SUM(MAX(price))"),
    ("SELECT item, price, COUNT(*) FROM bid GROUP BY item",
     "column price must appear in GROUP BY or be used in an aggregate function", "price"),
    ("SELECT item, cnt(price) FROM bid GROUP BY item",
     "cnt() is not an aggregate function, so column price must appear in GROUP BY", "price"),
    ("SELECT item FROM bid GROUP BY SUM(price)", "aggregates are not allowed in GROUP BY",
     "SUM(price)"),
    ("SELECT item FROM bid WHERE COUNT(*) > 1",
     "aggregate functions are only allowed in SELECT and HAVING", "COUNT(*)"),
])
def test_unsupported_sql_names_the_fragment(sql: str, words: str, fragment: str) -> None:
    error = rejected(sql)
    assert words in str(error)
    assert fragment in str(error)
    assert error.fragment is not None and fragment in error.fragment


def test_over_window_next_to_a_plain_column_is_an_over_window() -> None:
    """``SELECT price, sum(price) OVER (...)`` is an OVER window, not a grouped query."""
    query = query_of("SELECT price, SUM(price) OVER (ORDER BY bidtime ROWS BETWEEN 1 PRECEDING "
                     "AND CURRENT ROW) AS running FROM bid EMIT ON WINDOW CLOSE")
    over = next(n for n in walk(query.plan) if isinstance(n, OverWindow))
    assert over.order_by == ((ColumnRef("bidtime"), False),) and over.partition_by == ()
    assert over.calls == (WindowCall("_over0", "sum", (ColumnRef("price"),),
                                     Frame("rows", -1, 0)),)
    assert [c.name for c in query.schema] == ["price", "running"]
    assert list(run_eowc(query, ArrivalLog(()))) == []


def test_joins_unions_and_top_n_are_planned() -> None:
    join = query_of("SELECT b.bidtime, a.price FROM bid a LEFT JOIN bid b ON a.item = b.item "
                    "AND a.bidtime BETWEEN b.bidtime - INTERVAL '1' MINUTE AND b.bidtime")
    node = next(n for n in walk(join.plan) if isinstance(n, Join))
    assert (node.kind, node.left_alias, node.right_alias) == ("left", "a", "b")
    assert node.sides[0] == ("a.bidtime", "a.price", "a.item")
    assert [c.name for c in join.schema] == ["bidtime", "price"]
    assert list(run_eowc(join, ArrivalLog(()))) == []  # a self-join runs (tests/test_joins.py)
    union = query_of("SELECT bidtime, item FROM bid UNION ALL SELECT ts, v FROM plain "
                     "UNION ALL SELECT bidtime, item FROM bid")
    assert isinstance(union.plan, Union) and len(union.plan.inputs) == 3
    top = query_of("SELECT item, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
                   "window_start ORDER BY price DESC) AS rn FROM TUMBLE(bid, bidtime, INTERVAL "
                   "'1' MINUTE)) WHERE rn < 4")
    node = next(n for n in walk(top.plan) if isinstance(n, TopN))
    assert (node.limit, node.order_by) == (3, ((ColumnRef("price"), True),))


@pytest.mark.parametrize(("sql", "keys"), [
    ("SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE bid PARTITION BY item, "
     "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) GROUP BY window_start", ("item",)),
    ("SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(bidtime), "
     "INTERVAL '5' MINUTES)) GROUP BY window_start", ()),
    ("SELECT window_start, COUNT(*) FROM SESSION(bid, bidtime, INTERVAL '5' MINUTES, item, price) "
     "GROUP BY window_start", ("item", "price")),
])
def test_session_windows_in_both_forms(sql: str, keys: tuple[str, ...]) -> None:
    """SESSION in the Flink form (SEMANTICS.md §2b, keys after PARTITION BY) and the direct one
    (keys after the gap) give the same plan node; without window_end in the GROUP BY it cannot
    be emitted under EOWC."""
    from eowc.semantics.ir.plan import SessionTVF

    query = query_of(sql)
    node = next(n for n in walk(query.plan) if isinstance(n, SessionTVF))
    assert (node.time_column, node.gap, node.partition_by) == ("bidtime", 5 * MIN, keys)
    with pytest.raises(PlanError, match="GROUP BY window_start, window_end"):
        completion_rule(query, Convention.RISINGWAVE)


# ---------------------------------------------------------------------------------------------
# Where an error is: line and column in the script


def test_statements_know_where_they_start() -> None:
    text = "CREATE TABLE t (a BIGINT);\n\n  SELECT (a;) FROM t ;SELECT 2 FROM t"
    assert script_statements(text) == [
        Statement("CREATE TABLE t (a BIGINT)", 0),
        Statement("SELECT (a;) FROM t", text.index("SELECT (a")),
        Statement("SELECT 2 FROM t", text.index("SELECT 2")),
    ]


@pytest.mark.parametrize(("sql", "fragment"), [
    # errors about a node are placed at it
    ("SELECT price FROM bid a\n  JOIN bid b ON a.bidtime = b.bidtime", "price"),
    ("SELECT *\nFROM nope", "nope"),
    ("SELECT window_start\nFROM TABLE(TUMBLE(TABLE nope, DESCRIPTOR(bidtime), INTERVAL '1' "
     "MINUTES)) GROUP BY window_start", "nope"),
    # errors that print a node, or name a column, are placed at it
    ("SELECT * FROM bid LIMIT 3", "LIMIT 3"),
    ("SELECT nope FROM bid", "nope"),
])
def test_an_error_names_its_line_and_column(sql: str, fragment: str) -> None:
    error = rejected(sql)
    prefix = BID + PLAIN
    offset = len(prefix) + sql.index(fragment)
    line = (prefix + sql).count("\n", 0, offset) + 1
    column = offset - (prefix + sql).rfind("\n", 0, offset)
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"line {line}, column {column}: ")


def test_a_flink_window_tvf_inside_a_flink_window_tvfs_subquery() -> None:
    inner = ("SELECT window_end AS closed, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bid, "
             "DESCRIPTOR(bidtime), INTERVAL '1' MINUTES)) GROUP BY window_end")
    query = query_of(f"SELECT window_start, SUM(n) AS n FROM TABLE(TUMBLE(TABLE ({inner}), "
                     f"DESCRIPTOR(closed), INTERVAL '10' MINUTES)) GROUP BY window_start")
    tvfs = [n for n in walk(query.plan) if isinstance(n, WindowTVF)]
    assert [(t.time_column, t.spec) for t in tvfs] == [
        ("closed", WindowSpec(WindowKind.TUMBLE, 10 * MIN)),
        ("bidtime", WindowSpec(WindowKind.TUMBLE, MIN))]


def test_a_chain_of_joins_is_left_deep_and_names_every_column_by_its_relation() -> None:
    query = query_of("SELECT a.item, v, b.bidtime AS later FROM bid a JOIN plain p ON a.price = "
                     "p.id LEFT JOIN bid b ON b.item = a.item AND b.bidtime BETWEEN a.bidtime AND "
                     "a.bidtime + INTERVAL '1' MINUTE")
    top = query.plan
    assert isinstance(top, Project) and isinstance(top.input, Join)
    outer, inner = top.input, top.input.left
    assert isinstance(inner, Join)
    assert (inner.kind, inner.left_alias, inner.right_alias) == ("inner", "a", "p")
    assert (outer.kind, outer.left_alias, outer.right_alias) == ("left", "a+p", "b")
    assert [c.name for c in outer.schema] == [
        "a.bidtime", "a.price", "a.item", "p.id", "p.ts", "p.v",
        "b.bidtime", "b.price", "b.item"]
    # v is in one relation only: it needs no alias; each relation is renamed by a Project
    assert top.items == (("item", ColumnRef("a.item")), ("v", ColumnRef("p.v")),
                         ("later", ColumnRef("b.bidtime")))
    assert [type(n).__name__ for n in (inner.left, inner.right, outer.right)] == ["Project"] * 3
    assert outer.condition == Binary("AND", Binary("=", ColumnRef("b.item"), ColumnRef("a.item")),
                                     Binary("AND", Binary(">=", ColumnRef("b.bidtime"),
                                                          ColumnRef("a.bidtime")),
                                            Binary("<=", ColumnRef("b.bidtime"),
                                                   Binary("+", ColumnRef("a.bidtime"),
                                                          Literal(MIN, SqlType.INTERVAL)))))
