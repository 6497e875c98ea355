"""The EOWC executors on real Spark (transformWithStateInPandas, RocksDB state store, event-time
timers, the arrival-log source with settle pacing, the exactly-once sink): the same rows in the
same epochs as the reference interpreter and the in-process driver, the same late rows, and the
same again after the query is stopped part-way and restarted from its checkpoint.

One hand-made log (whole-millisecond times, see tests/test_executors_in_process.py): out of
order within the 5 s delay, an empty epoch, equal timestamps, a row on the watermark and rows
beyond it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from eowc.executors.driver import run_in_process
from eowc.executors.spark.runner import collect_run, start_query
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.rules.triggers import Convention

SOURCE = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
QUERIES = {
    "group_agg": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                 "FROM HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) "
                 "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
    "sort_agg": "SELECT window_start, median(price) AS m FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                "GROUP BY window_start EMIT ON WINDOW CLOSE",
    "sort": "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE",
    "over": "SELECT auction, ts, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN "
            "1 PRECEDING AND 1 FOLLOWING) AS s, lag(price) OVER (PARTITION BY auction ORDER BY "
            "ts) AS prev, max(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN "
            "CURRENT ROW AND UNBOUNDED FOLLOWING) AS rest FROM bids EMIT ON WINDOW CLOSE",
    "pattern": "SELECT * FROM bids MATCH_RECOGNIZE (PARTITION BY auction ORDER BY ts MEASURES "
               "FIRST(A.ts) AS from_ts, LAST(B.price) AS top ONE ROW PER MATCH AFTER MATCH "
               "SKIP PAST LAST ROW PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)) AS m "
               "EMIT ON WINDOW CLOSE",
    "session": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s FROM "
               "TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' "
               "SECOND)) GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
    "count": "SELECT auction, window_ordinal, window_end, sum(price) AS s FROM "
             "TABLE(COUNT_TUMBLE(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), 2)) "
             "GROUP BY auction, window_ordinal, window_end EMIT ON WINDOW CLOSE",
    "top_n": "SELECT window_start, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER "
             "(PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM "
             "TUMBLE(bids, ts, INTERVAL '10' SECOND)) WHERE rn <= 2 EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "auction ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE",
}
#: (second, auction, price) per epoch. W after each epoch (delay 5 s): 3, 7, 7, 13, 22.
EPOCHS = [[(8, 1, 10), (3, 2, 20)],
          [(12, 1, 5), (9, 1, 7), (9, 2, 7)],
          [],
          [(7, 2, 1), (18, 1, 3), (6, 1, 100)],   # 7 s equals W = 7 s; 6 s is below it
          [(27, 2, 4), (4, 1, 9)]]                # 4 s is far below W = 13 s


def write_case(directory: Path, name: str) -> tuple[str, str]:
    query = directory / f"{name}.sql"
    query.write_text(SOURCE + QUERIES[name], encoding="utf-8")
    events = directory / "events.jsonl"
    events.write_text("\n".join(event_lines()) + "\n", encoding="utf-8")
    return str(query), str(events)


def event_lines() -> list[str]:
    """The lines of the arrival log of :data:`EPOCHS`."""
    lines = []
    for epoch in EPOCHS:
        for second, auction, price in epoch:
            lines.append(json.dumps({"table": "bids", "row": {
                "auction": auction, "price": price, "ts": f"2024-01-01 00:00:{second:02d}"}}))
        lines.append('{"barrier": true}')
    return lines


def log_of(query_path: str, events_path: str) -> ArrivalLog:
    script = parse_script(Path(query_path).read_text(encoding="utf-8"))
    return load_arrival_log(events_path, script.sources).log


def expected(query_path: str, events_path: str, convention: Convention) -> tuple[list, Counter]:
    script = parse_script(Path(query_path).read_text(encoding="utf-8"))
    log = log_of(query_path, events_path)
    late: list[LateRow] = []
    out = list(run_eowc(script.query, log, convention, close=True, late=late.append))
    driver = run_in_process(script.query, log, convention, close=True)
    assert driver.emissions == out  # the in-process driver agrees with the reference too
    return out, Counter(r.event.row for r in late)


@pytest.mark.parametrize(("name", "convention"), [
    ("group_agg", Convention.RISINGWAVE), ("group_agg", Convention.SPARK),
    ("group_agg", Convention.FLINK), ("sort_agg", Convention.SPARK),
    ("sort", Convention.RISINGWAVE), ("sort", Convention.FLINK),
    ("over", Convention.RISINGWAVE), ("pattern", Convention.RISINGWAVE),
    ("session", Convention.FLINK), ("count", Convention.RISINGWAVE),
    ("top_n", Convention.SPARK), ("dedup", Convention.RISINGWAVE),
])
def test_executor_on_spark_equals_the_reference(spark, tmp_path: Path, name: str,
                                                convention: Convention) -> None:
    query, events = write_case(tmp_path, name)
    start_query(spark, query, events, convention, tmp_path / "run", close=True)
    run = collect_run(log_of(query, events), tmp_path / "run")
    out, late = expected(query, events, convention)
    assert out, "the case emits nothing: it would prove nothing"
    assert run.emissions == out
    assert Counter(r.event.row for r in run.late) == late
    assert late, "the case has no late rows: it would not test the late side output"


def test_stopped_and_restarted_from_the_checkpoint(spark, tmp_path: Path) -> None:
    """Stop after 2 epochs, restart the same query on the same checkpoint: the output equals
    the uninterrupted run's, nothing lost and nothing written twice."""
    query, events = write_case(tmp_path, "group_agg")
    start_query(spark, query, events, Convention.SPARK, tmp_path / "run", max_epochs=2)
    first = collect_run(log_of(query, events), tmp_path / "run")
    start_query(spark, query, events, Convention.SPARK, tmp_path / "run", close=True)
    resumed = collect_run(log_of(query, events), tmp_path / "run")
    out, _ = expected(query, events, Convention.SPARK)
    assert resumed.emissions == out
    assert first.emissions == [e for e in out if e.epoch < 2]


def test_eowc_run_engine_spark_prints_what_the_reference_prints(tmp_path: Path) -> None:
    """The command line, in a process of its own (its own Spark): same stdout, same late-row
    report, as the reference."""
    import shutil
    import subprocess

    query, events = write_case(tmp_path, "sort_agg")
    exe = shutil.which("eowc")
    assert exe is not None
    common = [exe, "run", query, events, "--with-epoch", "--close", "--convention", "flink"]
    reference = subprocess.run(common, capture_output=True, text=True, timeout=120, check=False)
    on_spark = subprocess.run([*common, "--engine", "spark", "--workdir", str(tmp_path / "w")],
                              capture_output=True, text=True, timeout=600, check=False)
    assert on_spark.returncode == 0, on_spark.stderr[-2000:]
    assert reference.stdout and on_spark.stdout == reference.stdout
    assert reference.stderr.strip().splitlines()[-1] in on_spark.stderr


def test_the_emit_on_update_over_window_on_spark_equals_the_reference(spark, tmp_path: Path
                                                                      ) -> None:
    """Seed 002's general OverWindow (a query without EMIT ON WINDOW CLOSE) on Spark: the same
    changelog, epoch by epoch, as the reference's emit-on-update run, and the same late rows."""
    from eowc.semantics.engines.interpreter import run_update

    sql = ("SELECT auction, ts, price, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS "
           "BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s, lag(price) OVER (PARTITION BY auction "
           "ORDER BY ts) AS prev FROM bids")
    query_path = tmp_path / "q.sql"
    query_path.write_text(SOURCE + sql, encoding="utf-8")
    _, events = write_case(tmp_path, "sort")
    start_query(spark, str(query_path), events, Convention.RISINGWAVE, tmp_path / "run")
    log = log_of(str(query_path), events)
    run = collect_run(log, tmp_path / "run")
    late: list[LateRow] = []
    expected = list(run_update(parse_script(SOURCE + sql).query, log, Convention.RISINGWAVE,
                               late=late.append))
    assert any(c.op == "-" for c in expected), "no retraction: the case would prove little"
    assert run.changes == expected and run.emissions == []
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)


JOIN_SOURCES = ("CREATE SOURCE a (ts TIMESTAMP, k BIGINT, v BIGINT, WATERMARK FOR ts AS ts - "
                "INTERVAL '3' SECOND);\nCREATE SOURCE b (ts TIMESTAMP, k BIGINT, w BIGINT, "
                "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
#: (table, second, k, value) per epoch: b lags a, a row of a is late for a's own watermark
#: but not for the minimum (Spark's global watermark), a key matches nothing.
JOIN_EPOCHS = [[("a", 10, 1, 1), ("b", 9, 1, 2), ("a", 11, 2, 3)],
               [("a", 20, 1, 4), ("b", 12, 1, 5)],
               [("a", 15, 1, 6), ("b", 19, 1, 7), ("a", 30, 3, 8)],
               [("b", 40, 9, 9)]]


#: The queries by name: a join, UNION ALL, seed 004's window join of two window aggregates
#: (each aggregate run in the join's shard under its source's watermark), an OVER window
#: above a join (under the join's derived watermark).
JOINS = {
    "LEFT": "SELECT a.ts AS ats, b.ts AS bts, a.k, v, w FROM a LEFT JOIN b ON a.k = b.k AND "
            "a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND "
            "EMIT ON WINDOW CLOSE;",
    "UNION": "SELECT ts, k, v FROM a UNION ALL SELECT ts + INTERVAL '1' SECOND, k, w FROM b "
             "EMIT ON WINDOW CLOSE;",
    "AGGREGATES": "SELECT l.window_end, l.k, n, m FROM (SELECT window_start, window_end, k, "
                  "count(*) AS n FROM TUMBLE(a, ts, INTERVAL '5' SECOND) GROUP BY window_start, "
                  "window_end, k) l FULL JOIN (SELECT window_start, window_end, k, sum(w) AS m "
                  "FROM TUMBLE(b, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end, k) "
                  "r ON l.window_start = r.window_start AND l.window_end = r.window_end AND "
                  "l.k = r.k EMIT ON WINDOW CLOSE;",
    "OVER": "SELECT ts, k, sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING "
            "AND CURRENT ROW) AS s FROM (SELECT a.ts AS ts, a.k AS k, v FROM a LEFT JOIN b ON "
            "a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' "
            "SECOND) EMIT ON WINDOW CLOSE;",
}


@pytest.mark.parametrize(("kind", "convention"), [("LEFT", Convention.RISINGWAVE),
                                                  ("UNION", Convention.FLINK),
                                                  ("AGGREGATES", Convention.SPARK),
                                                  ("OVER", Convention.RISINGWAVE)])
def test_a_join_on_spark_equals_the_reference(spark, tmp_path: Path, kind: str,
                                              convention: Convention) -> None:
    """Two arrival-log streams, unioned into the join executor: the same rows, epochs and
    late rows as the reference, where a row late for its own source (a at 15 s after a's
    watermark reached 17 s) would pass Spark's global minimum (b's 7 s). Under the join of
    window aggregates the row is judged by its window instead (F14: a window aggregation
    reading its source directly drops a row only once the row's window has closed), and
    [15 s, 20 s) is still open at 17 s, so the row is counted, not late."""
    sql = JOIN_SOURCES + JOINS[kind]
    query_path, events_path = tmp_path / "join.sql", tmp_path / "join.jsonl"
    query_path.write_text(sql, encoding="utf-8")
    lines = []
    for epoch in JOIN_EPOCHS:
        for table, second, k, value in epoch:
            lines.append(json.dumps({"table": table, "row": {
                "ts": f"2024-01-01 00:00:{second:02d}", "k": k, "v" if table == "a" else "w": value}}))
        lines.append('{"barrier": true}')
    events_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    start_query(spark, str(query_path), str(events_path), convention, tmp_path / "run", close=True)
    log = log_of(str(query_path), str(events_path))
    run = collect_run(log, tmp_path / "run")
    late: list[LateRow] = []
    expected = list(run_eowc(parse_script(sql).query, log, convention, close=True,
                             late=late.append))
    late_for_its_source = [(1_704_067_215_000_000, 1, 6)]
    assert [r.event.row for r in late] == ([] if kind == "AGGREGATES" else late_for_its_source)
    assert kind != "AGGREGATES" or any(e.row[:2] == (1_704_067_220_000_000, 1) and e.row[2] == 1
                                       for e in expected)  # the 15 s row is counted
    assert run.emissions == expected
    assert len(expected) >= 3
    assert kind != "LEFT" or any(e.row[1] is None for e in expected)  # an outer row
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
