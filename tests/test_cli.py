"""The ``eowc`` command line (eowc.verify.cli.main): output formats, modes, late and rejected rows,
error reporting, conventions and the built-in demo.

Errors: a clear message on stderr naming the file (and the line, for the arrival log), exit
code 2 and nothing on stdout. Late rows (Definition 1) are counted per source on stderr.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from eowc.verify.cli.main import main

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, name VARCHAR, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
TUMBLE = SOURCE + """SELECT window_start, window_end, count(*) AS n, sum(price) AS s
FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
"""
TUMBLE_UPDATE = TUMBLE.replace("\nEMIT ON WINDOW CLOSE", "")
SORT = SOURCE + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE;\n"

BARRIER = {"barrier": True}


def bid(ts: str, price: int | None = None, auction: int = 1) -> dict[str, Any]:
    """An event of ``bids`` at 2023-01-01 ``ts``."""
    return {"table": "bids", "row": {"auction": auction, "price": price,
                                     "ts": f"2023-01-01 {ts}"}}


def write(path: Path, lines: list[dict[str, Any] | str]) -> str:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
                    encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path):
    """``files(sql, lines)`` writes q.sql and events.jsonl under tmp_path; returns their paths."""
    def make(sql: str, lines: list[dict[str, Any] | str]) -> tuple[str, str]:
        query = tmp_path / "q.sql"
        query.write_text(sql, encoding="utf-8")
        return str(query), write(tmp_path / "events.jsonl", lines)
    return make


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def jsonl(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


# Epochs: 0 = {00:00:01 p3, 00:00:04 p2}; 1 = {00:00:12 p4} -> W = 10 s closes [0 s, 10 s);
# 2 = {00:00:05 p100: late, 5 < W = 10}; 3 = {00:00:25 p5} -> W = 23 closes [10 s, 20 s).
# [20 s, 30 s) stays open until --close.
LOG = [bid("00:00:01", 3), bid("00:00:04", 2), BARRIER, bid("00:00:12", 4), BARRIER,
       bid("00:00:05", 100), BARRIER, bid("00:00:25", 5), BARRIER]
W0 = {"window_start": "2023-01-01 00:00:00", "window_end": "2023-01-01 00:00:10", "n": 2, "s": 5}
W1 = {"window_start": "2023-01-01 00:00:10", "window_end": "2023-01-01 00:00:20", "n": 1, "s": 4}
W2 = {"window_start": "2023-01-01 00:00:20", "window_end": "2023-01-01 00:00:30", "n": 1, "s": 5}


# ---------------------------------------------------------------- output

def test_eowc_jsonl_emits_closed_windows_only(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG))
    assert jsonl(result) == [W0, W1]


def test_with_epoch_adds_the_epoch_of_first_emission(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG), "--with-epoch")
    assert jsonl(result) == [{**W0, "_epoch": 1}, {**W1, "_epoch": 3}]


def test_close_emits_the_open_windows_with_epoch_equal_to_the_number_of_epochs(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG), "--close", "--with-epoch")
    assert jsonl(result) == [{**W0, "_epoch": 1}, {**W1, "_epoch": 3}, {**W2, "_epoch": 4}]


def test_close_without_barriers_counts_one_epoch_per_event(files) -> None:
    lines = [bid("00:00:01", 1), bid("00:00:15", 2)]  # 2 epochs; W after epoch 1 = 13 s
    result = invoke("run", *files(TUMBLE, lines), "--close", "--with-epoch")
    assert [(r["window_end"], r["_epoch"]) for r in jsonl(result)] == \
        [("2023-01-01 00:00:10", 1), ("2023-01-01 00:00:20", 2)]


def test_csv_format(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG), "--format", "csv", "--close", "--with-epoch")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert result.stdout.splitlines()[0] == "window_start,window_end,n,s,_epoch"
    assert rows == [{k: str(v) for k, v in {**w, "_epoch": e}.items()}
                    for w, e in ((W0, 1), (W1, 3), (W2, 4))]


def test_table_format(files) -> None:
    lines = [bid("00:00:01"), bid("00:00:15", 7)]  # the first window's sum is over NULL only
    result = invoke("run", *files(TUMBLE, lines), "--format", "table", "--close")
    assert result.exit_code == 0, result.output
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in result.stdout.splitlines()
             if line.startswith("│")]
    assert cells == [["2023-01-01 00:00:00", "2023-01-01 00:00:10", "1", "NULL"],
                     ["2023-01-01 00:00:10", "2023-01-01 00:00:20", "1", "7"]]
    for name in ("window_start", "window_end", "n", "s"):
        assert name in result.stdout


def test_null_is_json_null_and_an_empty_csv_cell(files) -> None:
    q, e = files(TUMBLE, [bid("00:00:01")])
    assert jsonl(invoke("run", q, e, "--close"))[0]["s"] is None
    out = invoke("run", q, e, "--close", "--format", "csv").stdout
    assert out.splitlines()[1] == "2023-01-01 00:00:00,2023-01-01 00:00:10,1,"


def test_the_sort_emits_rows_in_event_time_order(files) -> None:
    lines = [bid("00:00:03", 1), bid("00:00:01", 2), BARRIER, bid("00:00:09", 3), BARRIER]
    # W after epoch 0 = 1 s: nothing below it (risingwave keeps ts = W); after epoch 1, W = 7 s.
    result = invoke("run", *files(SORT, lines), "--with-epoch")
    assert jsonl(result) == [
        {"auction": 1, "price": 2, "ts": "2023-01-01 00:00:01", "_epoch": 1},
        {"auction": 1, "price": 1, "ts": "2023-01-01 00:00:03", "_epoch": 1}]


# ---------------------------------------------------------------- modes

# epoch 0: one row in [0, 10); epoch 1: a second row there -> the window's row is retracted.
UPDATE_LOG = [bid("00:00:01", 3), BARRIER, bid("00:00:02", 4), BARRIER]
U1 = {"window_start": "2023-01-01 00:00:00", "window_end": "2023-01-01 00:00:10", "n": 1, "s": 3}
U2 = {**U1, "n": 2, "s": 7}


def test_update_mode_is_a_changelog_with_retractions(files) -> None:
    result = invoke("run", *files(TUMBLE, UPDATE_LOG), "--mode", "update", "--with-epoch")
    assert jsonl(result) == [{**U1, "_op": "+", "_epoch": 0}, {**U1, "_op": "-", "_epoch": 1},
                             {**U2, "_op": "+", "_epoch": 1}]


def test_update_is_the_default_without_emit_on_window_close(files) -> None:
    result = invoke("run", *files(TUMBLE_UPDATE, UPDATE_LOG))
    assert jsonl(result) == [{**U1, "_op": "+"}, {**U1, "_op": "-"}, {**U2, "_op": "+"}]


def test_mode_eowc_forces_eowc_on_a_query_without_the_clause(files) -> None:
    result = invoke("run", *files(TUMBLE_UPDATE, LOG), "--mode", "eowc")
    assert jsonl(result) == [W0, W1]


def test_snapshot_prints_q_of_input_after_every_epoch(files) -> None:
    result = invoke("run", *files(TUMBLE, UPDATE_LOG), "--mode", "update", "--snapshot")
    assert jsonl(result) == [{**U1, "_epoch": 0}, {**U2, "_epoch": 1}]


def test_snapshot_keeps_closed_windows_and_excludes_late_rows(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG), "--mode", "update", "--snapshot")
    by_epoch: dict[int, list[dict[str, Any]]] = {}
    for record in jsonl(result):
        by_epoch.setdefault(record.pop("_epoch"), []).append(record)
    # The late row (price 100, epoch 2) never enters [0, 10): it stays n=2, s=5.
    assert by_epoch == {0: [W0], 1: [W0, W1], 2: [W0, W1], 3: [W0, W1, W2]}


# ---------------------------------------------------------------- late rows

def test_late_rows_are_counted_on_stderr(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG + [bid("00:00:02", 1)]))
    assert result.exit_code == 0
    assert "late rows excluded from INPUT: bids=2" in result.stderr
    assert "--late-out" in result.stderr
    assert "late" not in result.stdout


def test_no_late_rows_no_late_message(files) -> None:
    result = invoke("run", *files(TUMBLE, UPDATE_LOG))
    assert result.exit_code == 0
    assert result.stderr == ""


def test_late_out_writes_each_late_row(files, tmp_path: Path) -> None:
    late_path = tmp_path / "late.jsonl"
    result = invoke("run", *files(TUMBLE, LOG), "--late-out", str(late_path))
    assert result.exit_code == 0
    assert jsonl(result) == [W0, W1]  # the output is unchanged by --late-out
    assert f"bids=1 (written to {late_path})" in result.stderr
    (record,) = [json.loads(x) for x in late_path.read_text(encoding="utf-8").splitlines()]
    # The late row is on line 6 (epoch 2); W before epoch 2 = max(12 s) - 2 s = 10 s.
    assert record["table"] == "bids"
    assert record["row"] == {"auction": 1, "price": 100, "name": None, "ts": "2023-01-01 00:00:05"}
    assert (record["epoch"], record["line"]) == (2, 6)
    assert record["watermark"] == "2023-01-01 00:00:10"


def test_late_out_is_written_empty_when_nothing_is_late(files, tmp_path: Path) -> None:
    late_path = tmp_path / "late.jsonl"
    assert invoke("run", *files(TUMBLE, UPDATE_LOG), "--late-out", str(late_path)).exit_code == 0
    assert late_path.read_text(encoding="utf-8") == ""


def test_late_rows_are_counted_only_for_the_querys_source(tmp_path: Path) -> None:
    sql = SOURCE + """CREATE SOURCE asks (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, ts FROM bids EMIT ON WINDOW CLOSE;"""
    (tmp_path / "q.sql").write_text(sql, encoding="utf-8")
    events = write(tmp_path / "e.jsonl", [
        bid("00:00:10"), {"table": "asks", "row": {"ts": "2023-01-01 00:00:30"}}, BARRIER,
        bid("00:00:01"), bid("00:00:02"), {"table": "asks", "row": {"ts": "2023-01-01 00:00:00"}},
        BARRIER])
    result = invoke("run", str(tmp_path / "q.sql"), events)
    assert result.exit_code == 0, result.output
    # bids: W = 8 s after epoch 0, so 1 s and 2 s are late; asks is not read by the query.
    assert "late rows excluded from INPUT: bids=2 " in result.stderr
    assert "asks" not in result.stderr


# ---------------------------------------------------------------- conventions

# Epoch 0 holds 00:00:11 and 00:00:21.999, so W = 19.999 s; epoch 1 brings 00:00:15.
#   risingwave: 15 < W, late;                     [10, 20) closes at --close (epoch 2) with n=1
#   spark:      window end 20 > W, still accepted; [10, 20) closes at --close with n=2
#   flink:      W >= 20 s - 1 ms, [10, 20) fired in epoch 0 with n=1; 15 s is late
BOUNDARY_LOG = [bid("00:00:11"), bid("00:00:21.999"), BARRIER, bid("00:00:15"), BARRIER]


@pytest.mark.parametrize(("convention", "first", "late"), [
    ("risingwave", {"n": 1, "_epoch": 2}, True),
    ("spark", {"n": 2, "_epoch": 2}, False),
    ("flink", {"n": 1, "_epoch": 0}, True),
])
def test_the_convention_decides_a_boundary_row(files, convention: str, first: dict[str, int],
                                               late: bool) -> None:
    result = invoke("run", *files(TUMBLE, BOUNDARY_LOG), "--convention", convention, "--close",
                    "--with-epoch")
    records = jsonl(result)
    assert [(r["window_end"], r["n"], r["_epoch"]) for r in records] == [
        ("2023-01-01 00:00:20", first["n"], first["_epoch"]), ("2023-01-01 00:00:30", 1, 2)]
    assert ("bids=1" in result.stderr) is late


@pytest.mark.parametrize(("convention", "kept"), [("risingwave", True), ("spark", False),
                                                  ("flink", False)])
def test_a_row_equal_to_the_watermark(files, convention: str, kept: bool) -> None:
    """W = 12 s - 2 s = 10 s after epoch 0; a row at exactly 10 s is kept only by RisingWave."""
    lines = [bid("00:00:12"), BARRIER, bid("00:00:10"), BARRIER]
    result = invoke("run", *files(SORT, lines), "--convention", convention, "--close")
    times = [r["ts"] for r in jsonl(result)]
    assert times == (["2023-01-01 00:00:10"] if kept else []) + ["2023-01-01 00:00:12"]


def test_an_unknown_convention_is_a_usage_error(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG), "--convention", "beam")
    assert result.exit_code == 2
    assert result.stdout == ""


# ---------------------------------------------------------------- bad input

BAD = {
    "malformed JSON": ('{"table": "bids", "row": {', "malformed JSON"),
    "not an object": ("[1, 2]", "expected a JSON object"),
    "unknown table": ('{"table": "asks", "row": {}}', "unknown table 'asks'"),
    "unknown column": ('{"table": "bids", "row": {"bidder": 1, "ts": "2023-01-01 00:00:00"}}',
                       "unknown column(s) bidder"),
    "missing event time": ('{"table": "bids", "row": {"price": 1}}', "bids.ts is missing"),
    "null event time": ('{"table": "bids", "row": {"ts": null}}', "bids.ts is NULL"),
    "string for BIGINT": ('{"table": "bids", "row": {"price": "1", "ts": "2023-01-01 00:00:00"}}',
                          "bids.price: expected a BIGINT, got '1'"),
    "number for VARCHAR": ('{"table": "bids", "row": {"name": 1, "ts": "2023-01-01 00:00:00"}}',
                           "bids.name: expected a VARCHAR string, got 1"),
    "bool for BIGINT": ('{"table": "bids", "row": {"price": true, "ts": "2023-01-01 00:00:00"}}',
                        "bids.price: expected a BIGINT, got True"),
    "unparseable timestamp": ('{"table": "bids", "row": {"ts": "01/01/2023"}}',
                              "bids.ts: expected a timestamp"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_fails_with_file_and_line_and_no_output(files, case: str) -> None:
    text, reason = BAD[case]
    # Line 4 is bad; the windows of lines 1-3 would already be closed: still nothing printed.
    query, events = files(TUMBLE, [bid("00:00:01", 1), BARRIER, bid("00:00:30", 2), text])
    result = invoke("run", query, events, "--close")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"eowc: error: {events}:4: ")
    assert reason in result.stderr


def test_an_impossible_date_fails_naming_the_value(files) -> None:
    """A timestamp that matches the pattern but is no date: the message says what was found."""
    line = '{"table": "bids", "row": {"ts": "2023-02-30 00:00:00"}}'
    query, events = files(TUMBLE, [line])
    result = invoke("run", query, events)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"eowc: error: {events}:1: ")
    assert "2023-02-30" in result.stderr


def test_keep_going_counts_writes_and_skips_bad_lines(files, tmp_path: Path) -> None:
    rejects = tmp_path / "rejects.jsonl"
    lines = [bid("00:00:01", 3), '{"table": "bids", "row": {"price": "x", "ts": "2023-01-01 00:00:02"}}',
             "not json", bid("00:00:04", 2), BARRIER, bid("00:00:12", 4), BARRIER]
    result = invoke("run", *files(TUMBLE, lines), "--keep-going", "--rejects-out", str(rejects))
    assert result.exit_code == 0, result.output
    # The good rows still count: [0, 10) has 3 + 2 (the bad "x" row is not in it).
    assert jsonl(result) == [W0]
    assert f"rejected input lines: 2 (written to {rejects})" in result.stderr
    records = [json.loads(x) for x in rejects.read_text(encoding="utf-8").splitlines()]
    assert [(r["line"], r["table"]) for r in records] == [(2, "bids"), (3, None)]
    assert records[0]["row"] == {"price": "x", "ts": "2023-01-01 00:00:02"}
    assert "expected a BIGINT, got 'x'" in records[0]["reason"]
    assert records[1]["row"] == "not json"
    assert "malformed JSON" in records[1]["reason"]


def test_keep_going_without_rejects_out_still_counts(files) -> None:
    result = invoke("run", *files(TUMBLE, LOG + ["{"]), "--keep-going")
    assert result.exit_code == 0
    assert jsonl(result) == [W0, W1]
    assert "rejected input lines: 1" in result.stderr
    assert "late rows excluded from INPUT: bids=1" in result.stderr


def test_a_missing_query_file(tmp_path: Path) -> None:
    events = write(tmp_path / "e.jsonl", LOG)
    missing = tmp_path / "nope.sql"
    result = invoke("run", str(missing), events)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{missing}: cannot read the file" in result.stderr


def test_a_missing_events_file(files, tmp_path: Path) -> None:
    query, _ = files(TUMBLE, [])
    missing = tmp_path / "nope.jsonl"
    result = invoke("run", query, str(missing))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"eowc: error: {missing}: cannot read the file: No such file or directory\n"


def test_malformed_json_names_the_column_of_the_fault(files) -> None:
    """'{"table": "bids"' with a newline: the fault is at column 17 of line 1 (the missing
    '}' or ','), not on a line 2 that the file does not have."""
    query, events = files(TUMBLE, ['{"table": "bids"'])
    result = invoke("run", query, events)
    assert result.exit_code == 2
    assert f"{events}:1: malformed JSON (Expecting ',' delimiter at column 17)" in result.stderr


@pytest.mark.parametrize(("flags", "message"), [
    (["--mode", "eowc", "--snapshot"], "--snapshot shows Q(INPUT) after every epoch"),
    (["--mode", "update", "--close"], "--close advances the watermark"),
])
def test_flags_that_do_not_apply_to_the_mode_are_refused(files, flags: list[str],
                                                          message: str) -> None:
    result = invoke("run", *files(TUMBLE, LOG), *flags)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert message in result.stderr


@pytest.mark.parametrize(("sql", "fragment"), [
    (SOURCE + "SELECT ts FROM bidz EMIT ON WINDOW CLOSE;", "bidz"),
    (SOURCE + "SELECT ts FROM bids WHERE ts >>> 3 EMIT ON WINDOW CLOSE;", "ts >>> 3"),
    (SOURCE + "SELECT ts FROM bids EMIT ON WINDOW CLOSE WHERE ts > 1;", "WHERE ts > 1"),
    ("CREATE SOURCE bids (ts TIMESTAMP, WATERMARK FOR tz AS tz - INTERVAL '1' SECOND);\n"
     "SELECT ts FROM bids EMIT ON WINDOW CLOSE;", "tz"),
])
def test_bad_sql_names_the_file_and_the_fragment(files, sql: str, fragment: str) -> None:
    query, events = files(sql, LOG)
    result = invoke("run", query, events)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"eowc: error: {query}: ")
    assert fragment in result.stderr


def test_a_query_without_a_trigger_is_refused_under_eowc(files) -> None:
    sql = SOURCE + "SELECT auction, count(*) AS n FROM bids GROUP BY auction EMIT ON WINDOW CLOSE;"
    query, events = files(sql, LOG)
    result = invoke("run", query, events)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{query}: " in result.stderr
    assert "cannot be executed in Emit-On-Window-Close mode" in result.stderr


def test_an_evaluation_error_prints_nothing_on_stdout(files) -> None:
    sql = SOURCE + "SELECT CAST(name AS BIGINT) AS x, ts FROM bids EMIT ON WINDOW CLOSE;"
    lines = [{"table": "bids", "row": {"name": "1", "ts": "2023-01-01 00:00:00"}},
             {"table": "bids", "row": {"name": "2", "ts": "2023-01-01 00:00:09"}},
             {"table": "bids", "row": {"name": "abc", "ts": "2023-01-01 00:00:10"}}]
    result = invoke("run", *files(sql, lines))
    assert result.exit_code == 2
    assert result.stdout == ""  # the row 00:00:00 was complete before the failure
    assert "'abc'" in result.stderr


def test_one_file_only_is_an_error(files) -> None:
    query, _ = files(TUMBLE, LOG)
    result = invoke("run", query)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "give both QUERY_FILE and EVENTS_FILE" in result.stderr


# ---------------------------------------------------------------- the demo

def demo_rows(stdout: str) -> list[list[str]]:
    """The body rows of the rich table printed by the demo, as lists of cells."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in stdout.splitlines()
            if line.startswith("│")]


# semantics/examples: window [08:00, 08:10) = C 4 + A 2 + D 5 = 11.0, closed by W = 08:10 after
# epoch 1; [08:10, 08:20) = B 3 + E 1 + F 6 = 10.0 (LATE 08:08 excluded), closed in epoch 4.
DEMO = [["2020-04-15 08:00:00", "2020-04-15 08:10:00", "11.0", "3", "1"],
        ["2020-04-15 08:10:00", "2020-04-15 08:20:00", "10.0", "3", "4"]]


@pytest.mark.parametrize("args", [[], ["demo"], ["run"]], ids=["no-args", "demo", "run-no-files"])
def test_the_demo_prints_the_built_in_example_as_a_table(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "CREATE SOURCE bid" in result.stdout
    assert "arrival log: 5 epochs, 8 rows" in result.stdout
    assert demo_rows(result.stdout) == DEMO
    assert "late rows excluded from INPUT: bid=1" in result.stderr


def test_the_demo_in_jsonl() -> None:
    result = invoke("demo", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [(r["total_price"], r["bids"], r["_epoch"]) for r in records] == [(11.0, 3, 1),
                                                                              (10.0, 3, 4)]


@pytest.mark.parametrize("args", [[], ["demo"]], ids=["eowc", "eowc-demo"])
def test_the_console_script_runs_the_demo(args: list[str]) -> None:
    exe = shutil.which("eowc")
    assert exe is not None, "the eowc console script is not installed (pip install -e .)"
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert demo_rows(done.stdout) == DEMO


def test_the_console_script_end_to_end(tmp_path: Path) -> None:
    exe = shutil.which("eowc")
    assert exe is not None
    (tmp_path / "q.sql").write_text(TUMBLE, encoding="utf-8")
    events = write(tmp_path / "e.jsonl", LOG)
    late = tmp_path / "late.jsonl"
    done = subprocess.run([exe, "run", str(tmp_path / "q.sql"), events, "--close", "--format",
                           "csv", "--late-out", str(late)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "window_start,window_end,n,s", "2023-01-01 00:00:00,2023-01-01 00:00:10,2,5",
        "2023-01-01 00:00:10,2023-01-01 00:00:20,1,4", "2023-01-01 00:00:20,2023-01-01 00:00:30,1,5"]
    assert "bids=1" in done.stderr
    assert json.loads(late.read_text(encoding="utf-8"))["line"] == 6


def test_the_console_script_fails_with_exit_code_2(tmp_path: Path) -> None:
    exe = shutil.which("eowc")
    assert exe is not None
    (tmp_path / "q.sql").write_text(TUMBLE, encoding="utf-8")
    events = write(tmp_path / "e.jsonl", [bid("00:00:01"), "{oops"])
    done = subprocess.run([exe, "run", str(tmp_path / "q.sql"), events],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"{events}:2: malformed JSON" in done.stderr


# ---------------------------------------------------------------- engines

@pytest.mark.parametrize("flags", [[], ["--close"], ["--convention", "spark", "--close"]])
def test_the_in_process_engine_prints_what_the_reference_prints(files, flags: list[str]) -> None:
    paths = files(TUMBLE, LOG)
    reference = invoke("run", *paths, "--with-epoch", *flags)
    executor = invoke("run", *paths, "--with-epoch", "--engine", "in-process", *flags)
    assert executor.exit_code == 0
    assert executor.stdout == reference.stdout
    assert executor.stderr == reference.stderr


def test_an_executor_engine_runs_emit_on_update_for_an_over_window(files) -> None:
    """Without EMIT ON WINDOW CLOSE the executor is seed 002's general OverWindow: the same
    changelog as the reference. Other queries, or an EOWC query with --mode update, are
    refused with the reason."""
    over = SOURCE + ("SELECT auction, ts, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS "
                     "BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM bids;")
    paths = files(over, LOG)
    reference = invoke("run", *paths, "--with-epoch")
    executor = invoke("run", *paths, "--with-epoch", "--engine", "in-process")
    assert executor.exit_code == 0, executor.stderr
    assert executor.stdout == reference.stdout and '"_op": "-"' in executor.stdout
    refused = invoke("run", *files(TUMBLE, LOG), "--mode", "update", "--engine", "in-process")
    assert refused.exit_code == 2
    assert "--engine in-process runs emit on update for a query without EMIT ON WINDOW CLOSE" \
        in refused.stderr
    other = invoke("run", *files(TUMBLE_UPDATE, LOG), "--engine",
                   "in-process")
    assert other.exit_code == 2
    assert "only OVER windows have an emit-on-update executor" in other.stderr
