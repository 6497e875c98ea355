"""The SQL dialects (eowc.semantics.frontend.dialects): RisingWave's and Flink's streaming SQL
read by sqlglot parser hooks, not by rewriting the text.

Each hook is checked by parsing a statement as RisingWave's documentation writes it and as
Flink's does, and comparing the plans with the form eowc read before the dialects (the plans
are the semantics: equal plans give equal output). Computed columns are checked on a run
whose output is computed by hand; errors on the line and column of the user's text, with the
user's own words.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.dialects import EowcFlink, EowcRisingWave, detect_dialect
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import parse_arrival_log
from eowc.semantics.ir.plan import Project, Scan, SessionTVF, WatermarkDecl, walk
from eowc.semantics.ir.values import SqlType, parse_timestamp

S = 1_000_000
MIN = 60 * S

BID = ("CREATE TABLE bid (bidtime TIMESTAMP, price BIGINT, item VARCHAR, "
       "WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND);\n")
WINDOWED = ("SELECT window_start, window_end, SUM(price) AS total FROM {tvf} "
            "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")


def plan_of(text: str, dialect: str = "auto") -> object:
    query = parse_script(text, dialect=dialect).query
    return (query.plan, query.emit_on_window_close)


def rejected(text: str, dialect: str = "auto") -> SqlError:
    with pytest.raises(SqlError) as info:
        parse_script(text, dialect=dialect)
    return info.value


# ---------------------------------------------------------------------------------------------
# Each hook: the RisingWave-doc and the Flink-doc form give the plan of the old form


@pytest.mark.parametrize(("old", "risingwave", "flink"), [
    # APPEND ONLY and the connector clauses after the column list
    (BID + "SELECT item FROM bid",
     "CREATE TABLE bid (bidtime TIMESTAMP, price BIGINT, item VARCHAR, WATERMARK FOR bidtime AS "
     "bidtime - INTERVAL '1' SECOND) APPEND ONLY WITH (connector = 'datagen', "
     "datagen.rows.per.second = '10') FORMAT PLAIN ENCODE JSON;\nSELECT item FROM bid",
     "CREATE TABLE bid (bidtime TIMESTAMP(3), price BIGINT, item STRING, WATERMARK FOR bidtime AS "
     "bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'kafka', 'topic' = 'bids');\n"
     "SELECT item FROM bid"),
    # CREATE SOURCE
    (BID + "SELECT item FROM bid",
     BID.replace("CREATE TABLE", "CREATE SOURCE").replace(");", ") WITH (connector = 'kafka') "
                                                          "FORMAT PLAIN ENCODE JSON;")
     + "SELECT item FROM bid",
     BID.replace("TIMESTAMP,", "TIMESTAMP(3),") + "SELECT item FROM bid"),
    # window TVFs: TUMBLE, HOP, CUMULATE with and without an alias
    (BID + WINDOWED.format(tvf="TUMBLE(bid, bidtime, INTERVAL '1' MINUTE)"),
     BID + WINDOWED.format(tvf="TUMBLE (bid, bidtime, INTERVAL '1 minute') AS w"),
     BID + WINDOWED.format(tvf="TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), "
                               "INTERVAL '1' MINUTES))")),
    (BID + WINDOWED.format(tvf="TUMBLE(bid, bidtime, INTERVAL '1' MINUTE)"),
     BID + WINDOWED.format(tvf="TUMBLE(public.bid, bidtime, INTERVAL '60' SECOND)"),
     BID + WINDOWED.format(tvf="TABLE(TUMBLE(DATA => TABLE bid, TIMECOL => DESCRIPTOR(bidtime), "
                               "SIZE => INTERVAL '1' MINUTES))")),
    (BID + WINDOWED.format(tvf="HOP(bid, bidtime, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)"),
     BID + WINDOWED.format(tvf="HOP(bid, bidtime, INTERVAL '1 minute', INTERVAL '2 minutes') w"),
     BID + WINDOWED.format(tvf="TABLE(\n  HOP(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '1' "
                               "MINUTES, INTERVAL '2' MINUTES)) AS w")),
    (BID + WINDOWED.format(tvf="CUMULATE(bid, bidtime, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)"),
     BID + WINDOWED.format(tvf="CUMULATE(bid, bidtime, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)"),
     BID + WINDOWED.format(tvf="TABLE(CUMULATE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '1' "
                               "MINUTES, INTERVAL '2' MINUTES))")),
    # PARTITION BY inside SESSION and COUNT_TUMBLE
    (BID + WINDOWED.format(tvf="SESSION(bid, bidtime, INTERVAL '5' MINUTE, item)"),
     BID + WINDOWED.format(tvf="SESSION(bid, bidtime, INTERVAL '5' MINUTE, item)"),
     BID + WINDOWED.format(tvf="TABLE(SESSION(TABLE bid PARTITION BY item, DESCRIPTOR(bidtime), "
                               "INTERVAL '5' MINUTES))")),
    (BID + WINDOWED.format(tvf="COUNT_TUMBLE(bid, bidtime, 3, item)"),
     BID + WINDOWED.format(tvf="COUNT_TUMBLE(bid, bidtime, 3, item)"),
     BID + WINDOWED.format(tvf="TABLE(COUNT_TUMBLE(TABLE bid PARTITION BY item, "
                               "DESCRIPTOR(bidtime), 3))")),
    # EMIT ON WINDOW CLOSE ending a view over a UNION ALL, and an INSERT INTO
    (BID + "CREATE VIEW v AS SELECT bidtime, item FROM bid UNION ALL SELECT bidtime, item FROM "
     "bid EMIT ON WINDOW CLOSE",
     BID + "CREATE MATERIALIZED VIEW v AS\nSELECT bidtime, item FROM bid\nUNION ALL\n"
     "SELECT bidtime, item FROM bid\nEMIT ON WINDOW CLOSE;",
     BID + "CREATE TEMPORARY VIEW v AS SELECT bidtime, item FROM bid UNION ALL SELECT bidtime, "
     "item FROM bid EMIT ON WINDOW CLOSE;"),
])
def test_each_hook_reads_both_forms_as_the_old_one(old: str, risingwave: str, flink: str) -> None:
    expected = plan_of(old)
    assert plan_of(risingwave, "risingwave") == expected
    assert plan_of(flink, "flink") == expected
    assert plan_of(risingwave) == plan_of(flink) == expected  # and auto-detected


def test_flink_metadata_columns_are_columns_the_rows_carry() -> None:
    text = ("CREATE TABLE bid (bidtime TIMESTAMP(3) METADATA FROM 'timestamp', price BIGINT, "
            "item VARCHAR, part BIGINT METADATA VIRTUAL, WATERMARK FOR bidtime AS bidtime - "
            "INTERVAL '1' SECOND) WITH ('connector' = 'kafka');\nSELECT item FROM bid")
    script = parse_script(text)
    assert [c.name for c in script.sources["bid"].columns] == ["bidtime", "price", "item", "part"]


def test_on_conflict_is_refused_by_name() -> None:
    error = rejected("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)\nON CONFLICT OVERWRITE;\n"
                     "SELECT v FROM t")
    assert "ON CONFLICT OVERWRITE is not supported" in str(error)
    assert (error.line, error.column, error.fragment) == (2, 1, "ON CONFLICT OVERWRITE")


def test_the_session_tvf_keys_are_the_partition_by_columns() -> None:
    query = parse_script(BID + WINDOWED.format(
        tvf="TABLE(SESSION(TABLE bid PARTITION BY item, price, DESCRIPTOR(bidtime), "
            "INTERVAL '5' MINUTES))")).query
    node = next(n for n in walk(query.plan) if isinstance(n, SessionTVF))
    assert (node.time_column, node.gap, node.partition_by) == ("bidtime", 5 * MIN,
                                                             ("item", "price"))


def test_frames_are_nodes_of_the_tree() -> None:
    """EXCLUDE is the frame's ``exclude`` argument (its words); SESSION WITH GAP a frame of
    kind SESSION whose start is the gap."""
    tree = EowcRisingWave().parse(
        "SELECT sum(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE "
        "CURRENT ROW), first_value(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP "
        "'10 minutes') FROM t")[0]
    rows, session = [w.args["spec"] for w in tree.find_all(exp.Window)]
    assert (rows.args["kind"], rows.args["exclude"]) == ("ROWS", "CURRENT ROW")
    assert session.args["kind"] == "SESSION" and session.args["start"].name == "10 minutes"


def test_match_recognize_is_a_keyword_of_both_dialects() -> None:
    for dialect in (EowcRisingWave, EowcFlink):
        tree = dialect().parse("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.x AS x "
                               "PATTERN (A B) DEFINE A AS A.x > 1)")[0]
        assert tree.find(exp.MatchRecognize) is not None


@pytest.mark.parametrize(("sql", "words"), [
    ("SELECT sum(price) OVER (PARTITION BY item ORDER BY bidtime GROUPS BETWEEN 1 PRECEDING "
     "AND CURRENT ROW) AS f FROM bid", "GROUPS frames are not supported"),
    ("SELECT window_start, item, COUNT(*) AS n FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE) "
     "GROUP BY window_end, ROLLUP (window_start, item)",
     "every grouping set must hold window_start and window_end"),
    ("SELECT unnest(ARRAY[1, 2]) + 1 AS x FROM bid", "unnest(array) is supported only as a "
     "whole item of the SELECT list"),
])
def test_unsupported_constructs_are_named(sql: str, words: str) -> None:
    error = rejected(BID + sql)
    assert words in str(error)
    assert error.line == 2


# ---------------------------------------------------------------------------------------------
# Which dialect: auto-detection and what each dialect does with names


@pytest.mark.parametrize(("text", "dialect"), [
    ("SELECT * FROM `t`", "flink"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "flink"),
    ("CREATE TABLE t (a INT) WITH ('connector' = 'kafka')", "flink"),
    ("CREATE TABLE t (a INT, p AS PROCTIME())", "flink"),
    ("SELECT a FROM t EMIT ON WINDOW CLOSE", "risingwave"),
    ("CREATE TABLE t (a INT) APPEND ONLY", "risingwave"),
    ("CREATE SOURCE t (a INT) WITH (connector = 'kafka') FORMAT PLAIN ENCODE JSON", "risingwave"),
    ("SELECT * FROM TUMBLE(t, ts, INTERVAL '1' MINUTE)", "risingwave"),
    ("SELECT a FROM t", "risingwave"),  # ambiguous
    ("-- `not code`\nSELECT 'DESCRIPTOR(x)' FROM t", "risingwave"),  # comments and strings
])
def test_the_dialect_is_detected_from_the_text(text: str, dialect: str) -> None:
    assert detect_dialect(text) == dialect


def test_a_comment_names_the_dialect() -> None:
    """``-- eowc: dialect=NAME`` decides (eowc verify --dialect ends each script with it)."""
    assert detect_dialect("SELECT * FROM `t`\n-- eowc: dialect=risingwave") == "risingwave"
    assert detect_dialect("-- eowc: dialect = Flink\nSELECT a FROM t EMIT ON WINDOW CLOSE") == "flink"
    text = "CREATE TABLE Bid (a BIGINT);\nSELECT a FROM Bid"
    assert set(parse_script(text).sources) == {"bid"}
    assert set(parse_script(text + ";\n-- eowc: dialect=flink").sources) == {"Bid"}
    assert set(parse_script(text + ";\n-- a comment;\n/* and another */").sources) == {"bid"}


def test_risingwave_folds_unquoted_names_to_lower_case() -> None:
    script = parse_script("CREATE TABLE Bid (BidTime TIMESTAMP, Price BIGINT, \"Item\" VARCHAR, "
                          "WATERMARK FOR bidtime AS BIDTIME - INTERVAL '1' SECOND);\n"
                          "SELECT PRICE, \"Item\" FROM bid", dialect="risingwave")
    assert set(script.sources) == {"bid"}
    assert [c.name for c in script.sources["bid"].columns] == ["bidtime", "price", "Item"]
    assert [c.name for c in script.query.schema] == ["price", "Item"]


def test_flink_keeps_the_case_of_names_and_reads_backquotes() -> None:
    text = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), `order` BIGINT, WATERMARK FOR bidtime AS "
            "bidtime - INTERVAL '1' SECOND);\nSELECT `order` FROM Bid")
    assert [c.name for c in parse_script(text, dialect="flink").query.schema] == ["order"]
    error = rejected(text.replace("FROM Bid", "FROM bid"), "flink")
    assert "unknown table 'bid'" in str(error) and "Bid" in str(error)


def test_schema_qualified_names_read_the_table() -> None:
    plain = plan_of(BID + WINDOWED.format(tvf="TUMBLE(bid, bidtime, INTERVAL '1' MINUTE)"))
    assert plan_of(BID + WINDOWED.format(
        tvf="TUMBLE(public.bid, bidtime, INTERVAL '1' MINUTE)")) == plain
    assert plan_of(BID + WINDOWED.format(
        tvf="TABLE(TUMBLE(TABLE cat.db.bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE))")) == plain
    assert plan_of(BID + "SELECT item FROM public.bid") == plan_of(BID + "SELECT item FROM bid")
    join = parse_script(BID + "SELECT l.bidtime, r.price FROM public.bid l JOIN bid r "
                              "ON l.item = r.item").query
    assert [c.name for c in join.schema] == ["bidtime", "price"]


@pytest.mark.parametrize(("type_name", "sql_type"), [
    ("TIMESTAMPTZ", SqlType.TIMESTAMPTZ), ("TIMESTAMP WITH TIME ZONE", SqlType.TIMESTAMPTZ),
    ("TIMESTAMP_LTZ(3)", SqlType.TIMESTAMP_LTZ), ("TIMESTAMP(3)", SqlType.TIMESTAMP)])
def test_timestamp_type_names_parse(type_name: str, sql_type: SqlType) -> None:
    dialect = "flink" if "LTZ" in type_name else "risingwave"
    script = parse_script(f"CREATE TABLE t (ts {type_name}, WATERMARK FOR ts AS ts - INTERVAL "
                          f"'1' SECOND);\nSELECT ts FROM t", dialect=dialect)
    assert script.sources["t"].columns[0].type is sql_type
    assert script.sources["t"].watermark == WatermarkDecl("ts", S)


# ---------------------------------------------------------------------------------------------
# Computed columns (Flink)

FLINK_BIDS = ("CREATE TABLE Bids (\n  bidtime TIMESTAMP(3),\n  price BIGINT,\n"
              "  price2 AS price * 2,\n  proc AS PROCTIME(),\n"
              "  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND\n"
              ") WITH ('connector' = 'kafka');\n")


def _events(*rows: tuple[str, int]) -> list[str]:
    return [json.dumps({"table": "Bids", "row": {"bidtime": t, "price": p}}) for t, p in rows]


def test_a_computed_column_is_computed_when_a_row_arrives() -> None:
    script = parse_script(FLINK_BIDS + "SELECT window_start, SUM(price2) AS total FROM TABLE("
                          "TUMBLE(TABLE Bids, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)) "
                          "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")
    bids = script.sources["Bids"]
    assert [c.name for c in bids.columns] == ["bidtime", "price", "price2"]  # PROCTIME: in no row
    assert [c.name for c in bids.carried] == ["bidtime", "price"]
    assert not any(isinstance(n, Project) and isinstance(n.input, Scan)
                   for n in walk(script.query.plan))  # the rows carry it: no projection
    log = parse_arrival_log(_events(("2024-01-01 00:00:10", 3), ("2024-01-01 00:00:50", 4),
                                    ("2024-01-01 00:01:30", 10), ("2024-01-01 00:02:05", 1)),
                            script.sources).log
    rows = [e.row for e in run_eowc(script.query, log)]
    # by hand: minute 0 holds 3 and 4 (doubled: 14), minute 1 holds 10 (20); minute 2 is open
    # (the watermark is 00:02:04 after the last row)
    assert rows == [(parse_timestamp("2024-01-01 00:00:00"), 14),
                    (parse_timestamp("2024-01-01 00:01:00"), 20)]


def test_a_query_that_reads_proctime_is_refused_by_name() -> None:
    error = rejected(FLINK_BIDS + "SELECT price, proc FROM Bids")
    assert "PROCTIME() is processing time, which EOWC semantics does not define" in str(error)
    assert (error.line, error.column) == (8, 15)
    parse_script(FLINK_BIDS + "SELECT price FROM Bids")  # declaring it is fine
    windowed = rejected(FLINK_BIDS + "SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE "
                                     "Bids, DESCRIPTOR(proc), INTERVAL '1' MINUTE))\n"
                                     "GROUP BY window_start, window_end")
    assert "PROCTIME() is processing time" in str(windowed) and windowed.fragment == "proc"
    assert [c.name for c in parse_script(FLINK_BIDS + "SELECT * FROM Bids").query.schema] == [
        "bidtime", "price", "price2"]  # SELECT * leaves it out


def test_a_watermark_on_a_proctime_column_is_refused_by_name() -> None:
    error = rejected("CREATE TABLE t (ms BIGINT, p AS PROCTIME(), WATERMARK FOR p "
                     "AS p - INTERVAL '5' SECOND) WITH ('connector' = 'kafka');\nSELECT ms FROM t")
    assert "WATERMARK FOR p: PROCTIME() is processing time" in str(error)
    assert error.fragment == "p"


# ---------------------------------------------------------------------------------------------
# Errors point at the user's text


def test_an_error_in_the_third_line_names_it_and_quotes_the_user() -> None:
    text = ("CREATE TABLE bid (bidtime TIMESTAMP, price BIGINT,\n"
            "  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND);\n"
            "SELECT window_start, SUM(price) FROM TUMBLE(Nope, bidtime, INTERVAL '1' MINUTE)\n"
            "GROUP BY window_start")
    error = rejected(text)
    column = text.splitlines()[2].index("Nope") + 1  # 45
    assert (error.line, error.column) == (3, column)
    assert error.fragment == "Nope"  # as written, though RisingWave reads it as nope
    lines = str(error).splitlines()
    assert lines[0].startswith(f"line 3, column {column}: unknown table 'nope' in TUMBLE")
    assert lines[1] == "  " + text.splitlines()[2]
    assert lines[2] == "  " + " " * (column - 1) + "^^^^"


def test_a_syntax_error_names_the_dialect_and_how_to_choose_another() -> None:
    text = BID + "SELECT item\nFROM bid\nWHERE price >> 1 ORDER"
    error = rejected(text, "risingwave")
    assert error.line == 4
    assert "read as risingwave SQL, as asked; choose with --dialect risingwave|flink" in str(error)
    backquoted = rejected("CREATE TABLE `t` (a BIGINT);\nSELECT a FROM t", "risingwave")
    assert (backquoted.line, "risingwave") == (1, "risingwave")


def test_an_unsupported_construct_quotes_the_users_words() -> None:
    text = BID + "SELECT item,\n  ntile(2) OVER (ORDER BY bidtime) AS n\nFROM bid"
    error = rejected(text)
    assert (error.line, error.column) == (3, 3)
    assert error.fragment == "ntile(2)" and "unsupported window function ntile" in str(error)


def test_a_frame_error_quotes_the_frame() -> None:
    error = rejected(BID + "SELECT SUM(price) OVER (ORDER BY bidtime\n  GROUPS BETWEEN 1 PRECEDING AND "
                           "CURRENT ROW) AS s FROM bid")
    assert "GROUPS frames are not supported" in str(error)
    assert (error.line, error.column) == (3, 3)
    assert error.fragment == "GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW"


@pytest.mark.parametrize(("text", "words", "where"), [
    (BID + "SELECT item\nFROM bid WHERE item = 'x", "' is never closed", (3, 23)),
    (BID + "SELECT item /* the item\nFROM bid", "the comment /* is never closed", (2, 13)),
    (BID + "SELECT * FROM TABLE(TUMBLE(TABLE bid PARTITION BY item, DESCRIPTOR(bidtime), "
           "INTERVAL '1' MINUTE))", "PARTITION BY is allowed in SESSION", (2, 38)),
    (BID + "SELECT * FROM TABLE(HOP(DATA => TABLE bid, TIMECOL => DESCRIPTOR(bidtime), "
           "SIZE => INTERVAL '1' MINUTE))", "HOP needs its parameter SLIDE", None),
])
def test_syntax_errors_are_placed(text: str, words: str, where: tuple[int, int] | None) -> None:
    error = rejected(text)
    assert words in str(error)
    if where is not None:
        assert (error.line, error.column) == where


def test_emit_must_end_the_query() -> None:
    error = rejected(BID + "SELECT item FROM bid\nEMIT ON WINDOW CLOSE\nWHERE price > 1")
    assert "EMIT ON WINDOW CLOSE must end the query" in str(error)
    assert (error.line, error.column) == (3, 1)


# ---------------------------------------------------------------------------------------------
# Layout and case do not change what a script means


SCRIPT = [
    "CREATE", "TABLE", "bid", "(", "bidtime", "TIMESTAMP", ",", "price", "BIGINT", ",", "item",
    "VARCHAR", ",", "WATERMARK", "FOR", "bidtime", "AS", "bidtime", "-", "INTERVAL", "'1'",
    "SECOND", ")", "APPEND", "ONLY", ";", "SELECT", "window_start", ",", "item", ",", "SUM", "(",
    "price", ")", "AS", "total", "FROM", "TUMBLE", "(", "bid", ",", "bidtime", ",", "INTERVAL",
    "'1'", "MINUTE", ")", "GROUP", "BY", "window_start", ",", "window_end", ",", "item", "EMIT",
    "ON", "WINDOW", "CLOSE",
]
SEPARATORS = st.sampled_from([" ", "  ", "\n", "\t", " -- a comment\n", " /* a\ncomment */ "])
#: sqlglot reads GROUP BY as one token: a comment may not split it (whitespace may).
IN_KEYWORD = st.sampled_from([" ", "  ", "\n", "\t"])


@settings(max_examples=60, deadline=None)
@given(st.lists(SEPARATORS, min_size=len(SCRIPT), max_size=len(SCRIPT)),
       st.lists(st.booleans(), min_size=len(SCRIPT), max_size=len(SCRIPT)), IN_KEYWORD)
def test_whitespace_comments_and_case_do_not_change_the_plan(separators: list[str],
                                                             upper: list[bool],
                                                             in_group_by: str) -> None:
    separators[SCRIPT.index("BY")] = in_group_by
    words = [w if w.startswith("'") else (w.upper() if up else w.lower())
             for w, up in zip(SCRIPT, upper, strict=True)]
    text = "".join(s + w for s, w in zip(separators, words, strict=True))
    assert plan_of(text) == plan_of(" ".join(SCRIPT))
    assert re.sub(r"\s+", " ", text)  # the text is a real variation
