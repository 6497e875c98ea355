"""Flink's watermark on a computed column (``ts AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR ts
AS ts - INTERVAL '5' SECOND``): computed columns are computed when a row arrives, as Flink's
source computes them. Events give the carried columns only; the event time, the late check and
the windows follow the computed time. Hand-computed output through the reference, ``eowc run``
(reference, in-process, the DuckDB oracle), bad rows, generated rows and ``eowc verify``."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import log_lines, parse_arrival_log
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.executors import InProcessExecutor
from eowc.verify.external import event_message
from eowc.verify.generators import LogShape, arrival_logs, random_arrival_log
from eowc.verify.mutants import MutantExecutor, mutant_named
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, run_suite

ORDERS = """CREATE TABLE orders (
  order_id BIGINT, price DECIMAL(10, 2), ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3),
  proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'format' = 'json');
"""
TUMBLING = ORDERS + """SELECT window_start, window_end, COUNT(*) AS n, SUM(price) AS total
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end EMIT ON WINDOW CLOSE;
"""

#: 2024-01-01 00:00:00 UTC in epoch milliseconds.
MIDNIGHT_MS = 1_704_067_200_000


def order(order_id: int, price: str, ms_after_midnight: int) -> dict:
    return {"table": "orders", "row": {"order_id": order_id, "price": price,
                                       "ts_ms": MIDNIGHT_MS + ms_after_midnight}}


#: One event per epoch. By hand, with W = max(ts) - 5 s after each:
#: 1 at 00:00:01 (W 23:59:56), 2 at 00:00:09.999 (W 00:00:04.999), 3 at 00:00:16 (W 00:00:11:
#: [00:00, 00:10) closes with 1 and 2: n 2, total 3.30), 4 at 00:00:08 (late: 00:00:08 < W
#: 00:00:11, under every convention), 5 at 00:00:26 (W 00:00:21: [00:10, 00:20) closes with 3
#: alone). [00:20, 00:30) holds 5 and stays open.
EVENTS = [order(1, "1.10", 1_000), order(2, "2.20", 9_999), order(3, "3.00", 16_000),
          order(4, "4.00", 8_000), order(5, "5.00", 26_000)]
EXPECTED = [(parse_timestamp("2024-01-01 00:00:00"), parse_timestamp("2024-01-01 00:00:10"),
             2, Decimal("3.30")),
            (parse_timestamp("2024-01-01 00:00:10"), parse_timestamp("2024-01-01 00:00:20"),
             1, Decimal("3.00"))]
EXPECTED_EPOCHS = [2, 4]  # emitted after the events of 00:00:16 and 00:00:26


def lines(events: list[dict]) -> list[str]:
    return [json.dumps(e) for e in events]


def test_the_rows_are_the_carried_columns_then_the_computed_ones() -> None:
    orders = parse_script(TUMBLING).sources["orders"]
    assert [c.name for c in orders.carried] == ["order_id", "price", "ts_ms"]
    assert [c.name for c in orders.columns] == ["order_id", "price", "ts_ms", "ts"]
    assert orders.processing_time == ("proc",)
    row = parse_arrival_log(lines(EVENTS[:1]), {"orders": orders}).log.events[0].row
    assert row == (1, Decimal("1.10"), MIDNIGHT_MS + 1_000, parse_timestamp("2024-01-01 00:00:01"))
    star = parse_script(ORDERS + "SELECT * FROM orders EMIT ON WINDOW CLOSE").query.schema
    assert [c.name for c in star] == ["order_id", "price", "ts_ms", "ts"]  # no PROCTIME column


@pytest.mark.parametrize("convention", list(Convention))
def test_the_reference_windows_by_the_computed_time(convention: Convention) -> None:
    script = parse_script(TUMBLING)
    log = parse_arrival_log(lines(EVENTS), script.sources).log
    emitted = list(run_eowc(script.query, log, convention))
    assert [e.row for e in emitted] == EXPECTED
    assert [e.epoch for e in emitted] == EXPECTED_EPOCHS


@pytest.mark.parametrize("convention", list(Convention))
def test_in_process_and_the_duckdb_oracle_agree(convention: Convention) -> None:
    script = parse_script(TUMBLING)
    log = parse_arrival_log(lines(EVENTS), script.sources).log
    run = run_in_process(script.query, log, convention)
    assert [e.row for e in run.emissions] == EXPECTED
    assert [e.event.row[0] for e in run.late] == [4]  # judged late by its computed time
    assert oracle_eowc(script.query, log, convention) == Counter(EXPECTED)


@pytest.fixture
def files(tmp_path: Path):
    def make(sql: str, events: list[dict | str]) -> tuple[str, str]:
        query, log = tmp_path / "orders.sql", tmp_path / "orders.jsonl"
        query.write_text(sql, encoding="utf-8")
        log.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n"
                               for e in events), encoding="utf-8")
        return str(query), str(log)
    return make


def emitted(output: str) -> list[tuple]:
    rows = [json.loads(line, parse_float=Decimal) for line in output.splitlines()
            if line.startswith("{")]
    return [(parse_timestamp(r["window_start"]), parse_timestamp(r["window_end"]), r["n"],
             r["total"]) for r in rows]


@pytest.mark.parametrize("how", [[], ["--engine", "in-process"], ["--oracle", "duckdb"],
                                 ["--convention", "flink"]])
def test_eowc_run(files, how: list[str]) -> None:
    query, events = files(TUMBLING, EVENTS)
    result = CliRunner().invoke(main, ["run", query, events, *how])
    assert result.exit_code == 0, result.output
    assert emitted(result.stdout) == EXPECTED


def test_eowc_run_writes_the_late_row_with_its_computed_time(files, tmp_path: Path) -> None:
    query, events = files(TUMBLING, EVENTS)
    late = tmp_path / "late.jsonl"
    result = CliRunner().invoke(main, ["run", query, events, "--late-out", str(late)])
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in late.read_text().splitlines()]
    assert record["row"]["ts"] == "2024-01-01 00:00:08" and record["line"] == 4
    assert record["watermark"] == "2024-01-01 00:00:11"


@pytest.mark.parametrize(("row", "words"), [
    ({"order_id": 1, "ts_ms": MIDNIGHT_MS, "ts": "2024-01-01 00:00:00"},
     "ts AS to_timestamp_ltz(ts_ms, 3): computed column of table orders, which an event does "
     "not give (it gives order_id, price, ts_ms)"),
    ({"order_id": 1, "ts_ms": MIDNIGHT_MS, "proc": "2024-01-01 00:00:00"},
     "proc AS PROCTIME(): computed column of table orders"),
    ({"order_id": 1}, "event-time column orders.ts (computed as to_timestamp_ltz(ts_ms, 3)) is NULL"),
    ({"order_id": 1, "ts_ms": None}, "orders.ts (computed as to_timestamp_ltz(ts_ms, 3)) is NULL"),
    ({"order_id": 1, "ts_ms": 10 ** 15}, "computed column orders.ts: "),  # beyond year 9999
])
def test_a_bad_row_is_refused_naming_the_column(row: dict, words: str) -> None:
    sources = parse_script(TUMBLING).sources
    with pytest.raises(InputError) as error:
        parse_arrival_log([json.dumps({"table": "orders", "row": row})], sources, "e.jsonl")
    assert words in str(error.value) and "e.jsonl" in str(error.value)


def test_bad_rows_are_rejects_with_keep_going(files, tmp_path: Path) -> None:
    query, events = files(TUMBLING, [*EVENTS[:3],
                                     {"table": "orders", "row": {"order_id": 9, "ts_ms": None}},
                                     {"table": "orders", "row": {"order_id": 9, "ts_ms": 10 ** 15}},
                                     *EVENTS[3:]])
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(main, ["run", query, events, "--keep-going",
                                       "--rejects-out", str(rejects)])
    assert result.exit_code == 0, result.output
    assert emitted(result.stdout) == EXPECTED
    assert [json.loads(line)["line"] for line in rejects.read_text().splitlines()] == [4, 5]
    without = CliRunner().invoke(main, ["run", query, events])
    assert without.exit_code != 0 and "orders.jsonl:4:" in without.output and "is NULL" in without.output


def test_an_external_engine_gets_the_carried_columns_only() -> None:
    """The engine computes its own columns (it runs the same CREATE TABLE)."""
    script = parse_script(TUMBLING)
    event = parse_arrival_log(lines(EVENTS[:1]), script.sources).log.events[0]
    assert event_message(event, script.sources) == EVENTS[0] | {
        "row": {"order_id": 1, "price": Decimal("1.10"), "ts_ms": MIDNIGHT_MS + 1_000}}


@pytest.mark.parametrize("convention", list(Convention))
def test_generated_rows_carry_the_carried_columns_and_compute_the_rest(convention: Convention
                                                                        ) -> None:
    script = parse_script(TUMBLING)
    orders = script.sources["orders"]
    log = random_arrival_log(orders, convention, 7, LogShape(rows=200, edges=5, late=3))
    for event in log.events:
        assert event.row[3] == event.row[2] * 1000  # ts in microseconds = ts_ms * 1000
    written = log_lines(log, script.sources)
    assert all(set(json.loads(line).get("row", {})) <= {"order_id", "price", "ts_ms"}
               for line in written)
    back = parse_arrival_log(written, script.sources).log
    assert [[e.row for e in epoch] for epoch in back.epochs] == \
        [[e.row for e in epoch] for epoch in log.epochs]
    assert len({e.row[3] for e in log.events}) > 50  # event times spread over the span


@settings(max_examples=30, deadline=None)
@given(data=st.data(), convention=st.sampled_from(list(Convention)))
def test_the_strategy_computes_the_event_time_of_each_row(data: st.DataObject,
                                                           convention: Convention) -> None:
    """The Hypothesis strategy: each row's event time is its ts_ms, and the log reads back
    from its JSON Lines (carried columns only) as the same rows."""
    script = parse_script(TUMBLING)
    log = data.draw(arrival_logs(script.sources["orders"], convention, LogShape(late=2, edges=2)))
    assert all(e.row[3] == e.row[2] * 1000 for e in log.events)
    back = parse_arrival_log(log_lines(log, script.sources), script.sources).log
    assert [e.row for e in back.events] == [e.row for e in log.events]


def test_eowc_verify_passes_on_generated_rows(files) -> None:
    query, _ = files(TUMBLING, [])
    result = CliRunner().invoke(main, ["verify", query, "--cases", "12"])
    assert result.exit_code == 0, result.output
    assert "every property held (12 cases)" in result.output


@pytest.mark.parametrize("mutant", ["watermark-without-delay", "late-check-flipped",
                                    "closes-one-unit-early", "closes-one-unit-late"])
def test_verify_on_computed_event_times_catches_a_broken_executor(mutant: str) -> None:
    """The generated cases reach the rules' boundaries through the computed time: the right
    executor passes them with output, late rows and boundary rows, and an executor with a
    watermark, late-check or trigger bug fails them."""
    target = Target("orders", TUMBLING)
    right = run_suite([target], InProcessExecutor(), list(Convention), 12, 0, False,
                      GeneratorSettings(), None)
    assert right.ok
    coverage = right.coverage["orders"]
    assert coverage.with_output > 6 and coverage.late_rows > 0 and coverage.at_boundary > 0
    broken = run_suite([target], MutantExecutor(mutant_named(mutant)), list(Convention), 12, 0,
                       False, GeneratorSettings(), None, shrink_budget_s=2)
    assert not broken.ok


def test_eowc_verify_names_an_event_time_it_cannot_generate(files) -> None:
    query, _ = files("CREATE TABLE t (k BIGINT, s VARCHAR, ts AS CAST(s AS TIMESTAMP), WATERMARK "
                     "FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'kafka');\n"
                     "SELECT k, ts FROM t EMIT ON WINDOW CLOSE;\n", [])
    result = CliRunner().invoke(main, ["verify", query, "--cases", "2"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "cannot generate rows of t: its event time is computed as CAST(s AS TIMESTAMP)" in \
        result.output


def test_explain_shows_the_computed_event_time(files) -> None:
    query, _ = files(TUMBLING, [])
    result = CliRunner().invoke(main, ["explain", query])
    assert result.exit_code == 0, result.output
    assert "Scan orders, ts AS to_timestamp_ltz(ts_ms, 3), WATERMARK FOR ts AS ts - 5s" in \
        result.output
