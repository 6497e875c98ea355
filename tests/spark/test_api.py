"""The public Python API (executors.eowc_group_agg, eowc_sort, write_eowc) on a streaming
DataFrame the way a user builds one: the arrival-log source with its bookkeeping columns
dropped, so the API sees nothing but the user's columns. Per epoch, the results equal the
reference interpreter's emissions; the side output holds exactly the reference's late rows,
with their reasons, and the rows whose event time is NULL or does not parse.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from eowc.executors import eowc_group_agg, eowc_query, eowc_sort, hop, tumble, write_eowc
from eowc.executors.spark.arrival_source import EPOCH_COLUMN, SEQ_COLUMN, arrival_stream
from eowc.executors.spark.sink import read_batches
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.values import format_timestamp, json_text, to_external
from eowc.semantics.rules.triggers import Convention

from .test_executors_on_spark import SOURCE, event_lines, write_case

GROUP_BY = {"n": "count(*)", "s": "sum(price)", "m": "median(price)"}


def user_stream(spark: SparkSession, query: str, events: str) -> DataFrame:
    """The log as a user's streaming DataFrame: one micro-batch per epoch, no _epoch/_seq."""
    return arrival_stream(spark, events, query, pacing="settle").drop(EPOCH_COLUMN, SEQ_COLUMN)


def run(frame: DataFrame, directory: Path) -> tuple[dict[int, list[dict]], dict[int, list[dict]]]:
    """Write ``frame`` with write_eowc until the log is consumed; results and side output per
    epoch."""
    write_eowc(frame, directory / "out", side_output=directory / "side",
               checkpoint=directory / "chk", available_now=True).awaitTermination()

    def per_epoch(sink: Path) -> dict[int, list[dict]]:
        found: dict[int, list[dict]] = {}
        for batch in read_batches(sink):
            found.setdefault(batch.epoch, []).extend(batch.rows)
        return {e: rows for e, rows in found.items() if rows}
    return per_epoch(directory / "out"), per_epoch(directory / "side")


def reference(sql: str, events: str, convention: Convention
              ) -> tuple[dict[int, list[dict]], list[LateRow]]:
    script = parse_script(sql)
    log = load_arrival_log(events, script.sources).log
    late: list[LateRow] = []
    schema = script.query.schema
    out: dict[int, list[dict[str, Any]]] = {}
    for emission in run_eowc(script.query, log, convention, late=late.append):
        out.setdefault(emission.epoch, []).append(
            {c.name: to_external(v, c.type) for c, v in zip(schema, emission.row, strict=True)})
    return out, late


def same_rows(a: dict[int, list[dict]], b: dict[int, list[dict]]) -> bool:
    # the JSON text of a row: a double read back from the sink is a Decimal with its digits
    key = lambda rows: Counter(json_text(dict(sorted(r.items()))) for r in rows)  # noqa: E731
    return a.keys() == b.keys() and all(key(a[e]) == key(b[e]) for e in a)


@pytest.mark.parametrize("convention", [Convention.RISINGWAVE, Convention.SPARK])
def test_group_agg_results_and_late_rows_equal_the_reference(spark, tmp_path: Path,
                                                             convention: Convention) -> None:
    query, events = write_case(tmp_path, "group_agg")
    frame = eowc_group_agg(user_stream(spark, query, events), keys=["auction"],
                           window=hop("ts", "5 seconds", "10 seconds"), aggs=GROUP_BY,
                           watermark="5 seconds", convention=convention)
    out, side = run(frame, tmp_path)
    sql = (SOURCE + "SELECT auction, window_start, window_end, "
           "count(*) AS n, sum(price) AS s, median(price) AS m "
           "FROM HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) "
           "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
    expected, late = reference(sql, events, convention)
    assert expected and late, "the case must emit rows and have late rows to prove anything"
    assert same_rows(out, expected)
    # Every late source row is in the side output (once per refused window under spark's
    # per-window rule), with its reason; nothing else is.
    late_rows = Counter((r.epoch, r.event.row[2]) for r in late)
    reported = Counter()
    for epoch, rows in side.items():
        for row in rows:
            assert "late at watermark" in row["_side"] or "was closed at watermark" in row["_side"]
            reported[(epoch, json.loads(row["_side_row"])["ts"])] += 1
    assert {(e, format_timestamp(t)) for e, t in late_rows} == set(reported)


def test_string_event_times_null_and_garbage_go_to_the_side_output(spark, tmp_path: Path) -> None:
    """Event times as text: rows whose time is NULL or does not parse are in the side
    output with the reason; the others give the reference's results."""
    events = tmp_path / "events.jsonl"
    lines = event_lines()
    lines[1:1] = [json.dumps({"table": "bids", "row": {"auction": 9, "price": 1, "ts": None}}),
                  json.dumps({"table": "bids", "row": {"auction": 9, "price": 2,
                                                       "ts": "yesterday"}})]
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text_source = tmp_path / "text.sql"
    text_source.write_text("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts VARCHAR);\n"
                           "SELECT * FROM bids", encoding="utf-8")
    frame = eowc_group_agg(user_stream(spark, str(text_source), str(events)),
                           window=tumble("ts", "10 seconds"), aggs={"n": "count(*)"},
                           watermark="5 seconds")
    out, side = run(frame, tmp_path)
    rejected = [row for rows in side.values() for row in rows if "event time" in row["_side"]
                and "late" not in row["_side"]]
    assert sorted(r["_side"].split(":")[0] for r in rejected) == ["NULL event time",
                                                                  "unparseable event time"]
    assert {json.loads(r["_side_row"])["price"] for r in rejected} == {1, 2}
    assert "yesterday" in next(r["_side"] for r in rejected if r["_side"].startswith("unpars"))
    # The well-formed rows give what the reference gives for the log without the two rows.
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(line for line in lines if '"auction": 9' not in line) + "\n",
                     encoding="utf-8")
    sql = (SOURCE + "SELECT window_start, window_end, count(*) AS n "
           "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end "
           "EMIT ON WINDOW CLOSE")
    expected, _ = reference(sql, str(clean), Convention.RISINGWAVE)
    assert expected and same_rows(out, expected)


def test_sort_emits_rows_in_event_time_order(spark, tmp_path: Path) -> None:
    """One partition: one total order (by default the order holds within each partition)."""
    query, events = write_case(tmp_path, "sort")
    frame = eowc_sort(user_stream(spark, query, events), event_time="ts", watermark="5 seconds",
                      columns=["auction", "price", "ts"], convention="flink", partitions=1)
    out, _ = run(frame, tmp_path)
    expected, _ = reference(SOURCE + "SELECT auction, price, ts "
                            "FROM bids EMIT ON WINDOW CLOSE", events, Convention.FLINK)
    assert expected and same_rows(out, expected)
    for rows in out.values():
        assert [r["ts"] for r in rows] == sorted(r["ts"] for r in rows)


def test_bad_arguments_are_clear_errors_on_the_driver(spark, tmp_path: Path) -> None:
    query, events = write_case(tmp_path, "sort")
    frame = user_stream(spark, query, events)
    with pytest.raises(EowcError, match="'when' is not a column"):
        eowc_sort(frame, event_time="when", watermark="5 seconds")
    with pytest.raises(EowcError, match="auction.*is bigint"):
        eowc_sort(frame, event_time="auction", watermark="5 seconds")
    with pytest.raises(EowcError, match=r"nope\(\) is not an aggregate function"):
        eowc_group_agg(frame, window=tumble("ts", "10 seconds"), aggs={"x": "nope(price)"},
                       watermark="5 seconds")
    with pytest.raises(EowcError, match="GROUP BY|watermark|window"):
        eowc_query(frame, "SELECT auction, count(*) AS n FROM input GROUP BY auction "
                   "EMIT ON WINDOW CLOSE", event_time="ts", watermark="5 seconds")
