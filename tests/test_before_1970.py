"""Event times at or before 1970-01-01 00:00:00: exact, or refused. Spark's watermark (and the
in-process driver's, which follows it) starts at 0 ms and never goes below it; the reference's
starts at minus infinity (executors/millisecond_watermark.py, docs/executors.md "Before 1970").

Hand-computed: the reference's rows; the executor that follows the engine's watermark gave
other rows before the check (the check left out here shows it) and now refuses the log naming
the file, line and column; a log from just after 1970-01-01 00:00:00 runs exactly; the join,
which keeps each source's watermark itself, runs a log of 1969 exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import eowc.executors.millisecond_watermark as millisecond_watermark
from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from tests.test_sub_millisecond import BARRIER, bid, sort_script, write_files

ALL = tuple(Convention)

#: Delay 5 s. Epoch 0: price 10 at 1969-12-31 23:59:50: the reference's W = 23:59:45. Epoch 1:
#: price 20 at 23:59:58, not late (above 23:59:45); W = 23:59:53, so 10 is complete; --close
#: emits 20: prices 10, 20 under every convention. The engine's watermark is 0 ms
#: (1970-01-01 00:00:00) from the start: both rows are below it, late, and nothing is emitted.
IN_1969 = [bid(10, "1969-12-31 23:59:50"), BARRIER, bid(20, "1969-12-31 23:59:58"), BARRIER]
#: One row exactly at 1970-01-01 00:00:00 (price 10): under the spark and flink rules (c <= W)
#: the engine's 0 ms watermark finds it late; the reference's W = -5 s does not.
AT_1970 = [bid(10, "1970-01-01 00:00:00"), BARRIER, bid(20, "1970-01-01 00:00:02"), BARRIER]
#: From 1 ms after: the reference's W is below 0 ms until 00:00:05.001, where the engine's is 0
#: ms, but no row is at or below 0 ms, so none is late under either and no window ends there:
#: prices 1, 2, 3 (in ts order), the same on the engine's watermark.
AFTER_1970 = [bid(2, "1970-01-01 00:00:03"), bid(1, "1970-01-01 00:00:00.001"), BARRIER,
              bid(3, "1970-01-01 00:00:10"), BARRIER]


def prices(tmp_path: Path, lines: list[dict[str, Any]], convention: Convention,
           engine: str) -> list[int]:
    query, events = write_files(tmp_path, sort_script("5"), lines)
    script = parse_script(Path(query).read_text(encoding="utf-8"))
    log = load_arrival_log(events, script.sources).log
    if engine == "reference":
        return [row[0] for _, row in run_eowc(script.query, log, convention, close=True)]
    run = run_in_process(script.query, log, convention, close=True, log_path=events)
    return [row[0] for _, row in run.emissions]


@pytest.mark.parametrize("convention", ALL, ids=lambda c: c.value)
def test_a_log_of_1969_diverged_and_is_now_refused_by_file_line_and_column(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, convention: Convention) -> None:
    assert prices(tmp_path, IN_1969, convention, "reference") == [10, 20]
    with pytest.raises(InputError) as refused:
        prices(tmp_path, IN_1969, convention, "in-process")
    column = json.dumps(IN_1969[0]).index('"ts"') + 1
    assert str(refused.value).startswith(
        f"{tmp_path / 'events.jsonl'}:1: column {column}: bids.ts: event time 1969-12-31 23:59:50 "
        "is at or before 1970-01-01 00:00:00, where Spark's watermark starts")
    monkeypatch.setattr(millisecond_watermark, "first_time_before_watermark_start",
                        lambda *args: None)
    assert prices(tmp_path, IN_1969, convention, "in-process") == []


def test_a_row_at_1970_diverged_under_the_rules_that_find_c_at_w_late(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for convention in ALL:
        assert prices(tmp_path, AT_1970, convention, "reference") == [10, 20]
        with pytest.raises(InputError, match="event time 1970-01-01 00:00:00 is at or before"):
            prices(tmp_path, AT_1970, convention, "in-process")
    monkeypatch.setattr(millisecond_watermark, "first_time_before_watermark_start",
                        lambda *args: None)
    assert prices(tmp_path, AT_1970, Convention.RISINGWAVE, "in-process") == [10, 20]  # c < W
    assert prices(tmp_path, AT_1970, Convention.SPARK, "in-process") == [20]  # c <= W


@pytest.mark.parametrize("convention", ALL, ids=lambda c: c.value)
def test_a_log_from_just_after_1970_runs_exactly(tmp_path: Path, convention: Convention) -> None:
    assert prices(tmp_path, AFTER_1970, convention, "reference") == [1, 2, 3]
    assert prices(tmp_path, AFTER_1970, convention, "in-process") == [1, 2, 3]


JOIN = """
CREATE SOURCE a (auction BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE SOURCE b (auction BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT a.auction, a.ts AS ats, b.ts AS bts FROM a LEFT JOIN b ON a.auction = b.auction
AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '1' SECOND EMIT ON WINDOW CLOSE;
"""
#: a(1) at 23:59:50 matches b(1) at 23:59:50.5 (23:59:49.5 <= 23:59:50 <= 23:59:51.5); a(2) at
#: 23:59:55 has no b row: NULL-padded once b's watermark passes 23:59:56 (--close). b(3) has
#: no a row: a LEFT join leaves it out.
JOIN_LOG = [{"table": "a", "row": {"auction": 1, "ts": "1969-12-31 23:59:50"}},
            {"table": "b", "row": {"auction": 1, "ts": "1969-12-31 23:59:50.5"}}, BARRIER,
            {"table": "a", "row": {"auction": 2, "ts": "1969-12-31 23:59:55"}},
            {"table": "b", "row": {"auction": 3, "ts": "1969-12-31 23:59:58"}}, BARRIER]


@pytest.mark.parametrize("convention", ALL, ids=lambda c: c.value)
def test_the_join_keeps_its_own_watermarks_and_runs_1969_exactly(tmp_path: Path,
                                                                 convention: Convention) -> None:
    _, events = write_files(tmp_path, JOIN, JOIN_LOG)
    script = parse_script(JOIN)
    log = load_arrival_log(events, script.sources).log
    expected = [(1, "1969-12-31 23:59:50", "1969-12-31 23:59:50.500000"),
                (2, "1969-12-31 23:59:55", None)]

    def shown(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return sorted((a, format_timestamp(t), u if u is None else format_timestamp(u))
                      for a, t, u in rows)
    assert shown([row for _, row in run_eowc(script.query, log, convention, close=True)]) == expected
    run = run_in_process(script.query, log, convention, close=True, log_path=events)
    assert shown([row for _, row in run.emissions]) == expected


def test_the_command_line_prints_the_refusal_in_one_line(tmp_path: Path) -> None:
    query, events = write_files(tmp_path, sort_script("5"), IN_1969)
    result = CliRunner().invoke(main, ["run", query, events, "--close", "--engine", "in-process"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"eowc: error: {events}:1: column ")
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert CliRunner().invoke(main, ["run", query, events, "--close"]).exit_code == 0  # reference
