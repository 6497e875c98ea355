"""The Flink harness as text (no Flink runs here), Flink's emit modes per operator, and avg of
integers under the flink convention, each worked by hand. tests/flink/ runs them on Flink."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eowc.executors.flink.engine import _root_cause
from eowc.executors.flink.harness import (
    FlinkColumn,
    FlinkTable,
    data_view_ddl,
    epoch_files,
    marked_query,
    protocol_value,
    raw_table_ddl,
)
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import parse_arrival_log
from eowc.semantics.ir.values import integer_average
from eowc.semantics.rules.emit_modes import operator_kinds, runs_as_eowc
from eowc.semantics.rules.triggers import Convention

BID = FlinkTable("Bid", (FlinkColumn("bidtime", "TIMESTAMP(3)"), FlinkColumn("price", "DECIMAL(10, 2)"),
                         FlinkColumn("ms", "BIGINT"),
                         FlinkColumn("ts", "TIMESTAMP_LTZ(3)", "TO_TIMESTAMP_LTZ(`ms`, 3)")),
                 rowtime="bidtime", watermark="`bidtime` - INTERVAL '1' SECOND")


def test_the_raw_table_moves_its_watermark_on_watermark_rows_only() -> None:
    ddl = raw_table_ddl(BID, "file:///tmp/bid", 20)
    assert "`bidtime` TIMESTAMP(3),\n  `price` DECIMAL(10, 2),\n  `ms` BIGINT," in ddl
    assert "`ts` AS TO_TIMESTAMP_LTZ(`ms`, 3)" in ddl  # computed as Flink resolved it
    assert ("WATERMARK FOR `bidtime` AS CASE WHEN `__eowc_kind` = 'wm' THEN `bidtime` - INTERVAL "
            "'1' SECOND ELSE CAST(NULL AS TIMESTAMP(3)) END") in ddl
    assert "'connector' = 'filesystem', 'path' = 'file:///tmp/bid'" in ddl
    assert data_view_ddl(BID) == ("CREATE TEMPORARY VIEW `Bid` AS SELECT `bidtime`, `price`, `ms`, `ts` "
                                  "FROM `__eowc_raw_Bid` WHERE `__eowc_kind` = 'row'")


ROWS = [{"bidtime": "2020-04-15 08:05:00", "price": Decimal("4.10"), "ms": 1},
        {"bidtime": "2020-04-15 08:07:00.5", "price": None, "ms": 2}]


def test_an_epoch_is_its_rows_then_them_again_as_watermark_rows_then_an_end_row() -> None:
    [(end, file)] = epoch_files(BID, ROWS, 3, split=False)
    assert end == "end"
    lines = [json.loads(line) for line in file]
    assert [line["__eowc_kind"] for line in lines] == ["row", "row", "wm", "wm", "end"]
    assert {line["__eowc_epoch"] for line in lines} == {3}
    assert lines[0]["price"] == 4.1 and lines[2]["bidtime"] == "2020-04-15 08:05:00"
    assert "4.10" in file[0]  # the decimal's digits, exactly
    assert lines[4]["bidtime"] == "1970-01-01 00:00:00"  # Flink refuses a NULL rowtime
    assert "ts" not in lines[0]  # computed by Flink, never carried


def test_with_several_tables_an_epochs_rows_are_a_file_before_its_watermark_rows() -> None:
    (rows_end, rows), (end, marks) = epoch_files(BID, ROWS, 3, split=True)
    assert (rows_end, end) == ("rows-end", "end")
    assert [json.loads(line)["__eowc_kind"] for line in rows] == ["row", "row", "rows-end"]
    assert [json.loads(line)["__eowc_kind"] for line in marks] == ["wm", "wm", "end"]
    [(_, empty), (_, last)] = epoch_files(BID, [], 4, split=True)
    assert [json.loads(line)["__eowc_kind"] for line in empty + last] == ["rows-end", "end"]


def test_the_query_and_the_end_rows_go_to_one_sink() -> None:
    output = (FlinkColumn("window_start", "TIMESTAMP(3) NOT NULL"), FlinkColumn("n", "BIGINT NOT NULL"))
    marked = marked_query("SELECT 1", output, ["Bid", "Ask"])
    parts = marked.split("\nUNION ALL\n")
    assert parts[0] == ("SELECT q.`window_start`, q.`n`, CAST(NULL AS STRING) AS `__eowc_mark` "
                        "FROM (SELECT 1) AS q")
    assert parts[1] == ("SELECT CAST(NULL AS TIMESTAMP(3)), CAST(NULL AS BIGINT), "
                        "CONCAT(`__eowc_kind`, ' ', CAST(`__eowc_epoch` AS STRING)) FROM "
                        "`__eowc_raw_Bid` WHERE `__eowc_kind` IN ('rows-end', 'end')")
    assert len(parts) == 3


def test_values_flink_emits_in_the_words_of_eowc_run() -> None:
    assert protocol_value(dt.datetime(2020, 4, 15, 8, 10)) == "2020-04-15 08:10:00"
    assert protocol_value(dt.datetime(2020, 4, 15, 8, 9, 59, 999000)) == "2020-04-15 08:09:59.999000"
    utc_plus_2 = dt.timezone(dt.timedelta(hours=2))
    assert protocol_value(dt.datetime(2020, 4, 15, 10, 0, tzinfo=utc_plus_2)) == "2020-04-15 08:00:00"
    assert protocol_value(dt.date(1969, 12, 31)) == "1969-12-31"
    assert protocol_value(dt.timedelta(seconds=-90)) == "-00:01:30"
    assert protocol_value(Decimal("6.50")) == Decimal("6.50")
    assert protocol_value(float("nan")) == "NaN" and protocol_value(float("-inf")) == "-Infinity"
    assert protocol_value([1, None, dt.date(2020, 1, 2)]) == [1, None, "2020-01-02"]


FLINK_DDL = """CREATE TABLE Bid (bidtime TIMESTAMP(3), price INT, item STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE Ask (asktime TIMESTAMP(3), item STRING,
  WATERMARK FOR asktime AS asktime - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');
"""
TUMBLE = "TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))"

# Each query as Flink's documentation writes it (no EMIT clause), and whether Flink runs every
# one of its stateful operators as eowc's EOWC plan does (Window Aggregation, Window Top-N,
# Window Join final; an Interval Join at once, its rows the query's: Query.at_once; a group
# aggregation updates, a plain SELECT passes rows on).
FLINK_QUERIES = {
    f"SELECT window_start, window_end, SUM(price) AS s FROM {TUMBLE} GROUP BY window_start, window_end":
        (True, ["window aggregation"]),
    f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY "
    f"price DESC) AS rownum FROM {TUMBLE}) WHERE rownum <= 3": (True, ["window Top-N"]),
    f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY "
    f"s DESC) AS rownum FROM (SELECT window_start, window_end, item, SUM(price) AS s FROM {TUMBLE} "
    f"GROUP BY window_start, window_end, item)) WHERE rownum <= 3":
        (True, ["window Top-N", "window aggregation"]),
    "SELECT item, COUNT(*) AS n FROM Bid GROUP BY item": (False, ["group aggregation"]),
    "SELECT item, price FROM Bid WHERE price > 1": (False, []),
    "SELECT b.item, a.asktime FROM Bid b, Ask a WHERE b.item = a.item AND a.asktime BETWEEN "
    "b.bidtime - INTERVAL '1' MINUTE AND b.bidtime": (True, ["interval join"]),
}


@pytest.mark.parametrize("query", FLINK_QUERIES)
def test_flink_runs_as_eowc_the_window_operators_only(query: str) -> None:
    final, kinds = FLINK_QUERIES[query]
    script = parse_script(FLINK_DDL + query + ";", dialect="flink")
    assert [kind for _, kind in operator_kinds(script.query.plan)] == kinds
    assert runs_as_eowc(script.query.plan) is final
    assert script.query.emit_on_window_close is final  # eowc run and verify take it as written
    assert script.query.at_once is (kinds == ["interval join"])


def test_a_risingwave_query_without_emit_still_updates() -> None:
    script = parse_script("CREATE SOURCE bids (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - "
                          "INTERVAL '1' SECOND);\nSELECT window_start, window_end, count(*) AS n "
                          "FROM TUMBLE(bids, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end;")
    assert not script.query.emit_on_window_close


AVG_LOG = [{"table": "Bid", "row": {"bidtime": f"2020-04-15 08:0{i}:00", "price": p, "item": "a"}}
           for i, p in enumerate([10, 20, 40, -7])] + [{"barrier": True},
          {"table": "Bid", "row": {"bidtime": "2020-04-15 08:30:00", "price": 1, "item": "a"}},
          {"barrier": True}]


@pytest.mark.parametrize(("convention", "average"), [(Convention.FLINK, 15), (Convention.SPARK, 15.75),
                                                     (Convention.RISINGWAVE, 15.75)])
def test_avg_of_integers_is_an_integer_under_flink_only(convention: Convention, average: object) -> None:
    """AVG(10, 20, 40, -7) = 63 / 4: Flink's AVG of an INT is an INT, 15 (Java's long division;
    Flink 2.3 printed 23 for AVG(10, 20, 40)); Spark's is a DOUBLE."""
    script = parse_script(FLINK_DDL + f"SELECT window_start, AVG(price) AS a FROM {TUMBLE} GROUP BY "
                          "window_start, window_end;", dialect="flink")
    sources = {s.name: s for s in script.query.sources}
    log = parse_arrival_log([json.dumps(line) for line in AVG_LOG], sources).log
    rows = [e.row for e in run_eowc(script.query, log, convention)]
    assert [r[1] for r in rows] == [average]
    assert type(rows[0][1]) is type(average)


@given(st.integers(-(2 ** 63), 2 ** 63 - 1), st.integers(1, 10 ** 6))
def test_integer_average_divides_toward_zero_as_java_does(total: int, count: int) -> None:
    quotient = integer_average(total, count)
    assert abs(quotient) * count <= abs(total) < (abs(quotient) + 1) * count
    assert quotient == 0 or (quotient < 0) == (total < 0)


TOP_BY_PRICE = (f"SELECT * FROM (SELECT item, price, window_start, ROW_NUMBER() OVER (PARTITION BY "
                f"window_start, window_end ORDER BY price DESC) AS rownum FROM {TUMBLE}) WHERE rownum <= 3")


@pytest.mark.parametrize(("convention", "ranks"), [(Convention.FLINK, {"five": 1, "one": 2, "none": 3}),
                                                   (Convention.RISINGWAVE, {"none": 1, "five": 2, "one": 3})])
def test_flink_sorts_nulls_below_every_value(convention: Convention, ranks: dict[str, int]) -> None:
    """ORDER BY price DESC: Flink (Calcite's NULLs low) ranks a NULL price last, as Flink 2.3 did
    on a generated log (docs/engines.md); PostgreSQL and RisingWave rank it first."""
    script = parse_script(FLINK_DDL + TOP_BY_PRICE + ";", dialect="flink")
    lines = [{"table": "Bid", "row": {"bidtime": "2020-04-15 08:01:00", "price": p, "item": i}}
             for i, p in (("one", 1), ("none", None), ("five", 5))]
    lines += [{"barrier": True}, {"table": "Bid", "row": {"bidtime": "2020-04-15 08:30:00",
                                                          "price": 1, "item": "x"}}]
    sources = {s.name: s for s in script.query.sources}
    log = parse_arrival_log([json.dumps(line) for line in lines], sources).log
    rows = [e.row for e in run_eowc(script.query, log, convention)]
    assert {r[0]: r[-1] for r in rows} == ranks


def test_verify_says_why_flink_does_not_run_a_query_final(tmp_path) -> None:  # noqa: ANN001
    from eowc.semantics.errors import PlanError
    from eowc.verify.suite import load_target
    rows, grouped = tmp_path / "rows.sql", tmp_path / "grouped.sql"
    rows.write_text(FLINK_DDL + f"SELECT * FROM {TUMBLE};")
    grouped.write_text(FLINK_DDL + "SELECT item, COUNT(*) AS n FROM Bid GROUP BY item;")
    with pytest.raises(PlanError, match="Flink passes each row of this query on as it arrives"):
        load_target(str(rows))
    with pytest.raises(PlanError, match="its group aggregation updates"):
        load_target(str(grouped))


def test_flink_refuses_a_hop_aggregation_whose_size_is_not_a_whole_number_of_slides() -> None:
    """Flink 2.3's words (tests/flink pins them on Flink itself); the HOP rows alone run."""
    from eowc.semantics.errors import SqlError
    hop = "TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '3' MINUTES, INTERVAL '10' MINUTES))"
    words = ("HOP table function based aggregate requires size must be an integral multiple of "
             "slide, but got size 600000 ms and slide 180000 ms")
    with pytest.raises(SqlError, match=words):
        parse_script(FLINK_DDL + f"SELECT window_start, COUNT(*) AS n FROM {hop} GROUP BY window_start, "
                     "window_end;", dialect="flink")
    assert parse_script(FLINK_DDL + f"SELECT * FROM {hop};", dialect="flink").query is not None
    whole = hop.replace("'3' MINUTES", "'5' MINUTES")
    assert parse_script(FLINK_DDL + f"SELECT window_start, COUNT(*) AS n FROM {whole} GROUP BY "
                        "window_start, window_end;", dialect="flink").query.emit_on_window_close


def test_explain_says_each_operators_mode_and_why(tmp_path) -> None:  # noqa: ANN001
    """``eowc explain`` of a Flink script: each stateful operator's mode under Flink's rules
    (a window Top-N over a window aggregation: both final; a group aggregation updates; an
    interval join emits at once), on the flink convention by default; of a RisingWave EOWC
    query: final because of EMIT ON WINDOW CLOSE."""
    from click.testing import CliRunner

    from eowc.verify.cli.main import main

    def modes(script: str) -> tuple[str, list[str]]:
        path = tmp_path / "q.sql"
        path.write_text(script)
        result = CliRunner().invoke(main, ["explain", str(path), "--format", "json"])
        report = json.loads(result.stdout)
        return report["convention"], [op["mode"] for op in report["operators"] if op["mode"]]

    topn = next(q for q, (_, kinds) in FLINK_QUERIES.items()
                if kinds == ["window Top-N", "window aggregation"])
    assert modes(FLINK_DDL + topn + ";") == ("flink", [
        "final: each result once, as an insert, once its time is complete (Flink's window Top-N)",
        "final: each result once, as an insert, once its time is complete (Flink's window "
        "aggregation)"])
    grouped = modes(FLINK_DDL + "SELECT item, COUNT(*) AS n FROM Bid GROUP BY item;")
    assert grouped[1] == ["updates: a changelog: a result, then updates and retractions of it ("
                          "Flink's group aggregation)"]
    joined = next(q for q, (_, kinds) in FLINK_QUERIES.items() if kinds == ["interval join"])
    assert modes(FLINK_DDL + joined + ";")[1] == [
        "at once: each row as soon as it is made, as an insert, not waiting for the watermark ("
        "Flink's interval join)"]
    assert modes("CREATE SOURCE bids (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' "
                 "SECOND);\nSELECT window_start, count(*) AS n FROM TUMBLE(bids, ts, INTERVAL '5' "
                 "SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;") == ("risingwave", [
        "final: each result once, as an insert, once its time is complete (EMIT ON WINDOW CLOSE)"])


@pytest.mark.parametrize(("text", "reason"), [
    ("An error occurred while calling o27.executeSql.\n: org.apache.flink.table.api."
     "ValidationException: Table options do not contain an option key 'connector' for "
     "discovering a connector.\n\tat org.apache.flink.table.factories.FactoryUtil",
     "Table options do not contain an option key 'connector' for discovering a connector."),
    ("org.apache.flink.table.api.ValidationException: SQL validation failed.\nCaused by: "
     "org.apache.calcite.sql.validate.SqlValidatorException: Column 'bids' not found",
     "Column 'bids' not found"),
])
def test_flinks_reason_is_its_own_words_not_py4js(text: str, reason: str) -> None:
    assert _root_cause(text) == reason
