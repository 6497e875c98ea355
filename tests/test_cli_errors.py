"""Bad input to the command line gets a clear message and, where it is an error, a non-zero
exit; never a traceback, never part of the output first (issue 18, "Errors"; docs/sql/errors.md).

Each test runs the real ``eowc`` command (click's CliRunner, which keeps stdout and stderr
apart) on files written here; every expected message, line and column is counted by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.ir.windows import FIRST_TIMESTAMP, LAST_TIMESTAMP, WindowKind, WindowSpec
from eowc.verify.cli.main import main

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
TUMBLE = SOURCE + """SELECT window_start, window_end, count(*) AS n
FROM TUMBLE(bids, ts, INTERVAL '10' MINUTE) GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
"""
HOP = SOURCE + """SELECT window_start, window_end, count(*) AS n
FROM HOP(bids, ts, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE) GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
"""
SESSION = SOURCE + """SELECT window_start, window_end, count(*) AS n
FROM TABLE(SESSION(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
GROUP BY window_start, window_end EMIT ON WINDOW CLOSE;
"""
SORT = SOURCE + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE;\n"


def bid(ts: str, price: int = 1) -> dict[str, Any]:
    return {"table": "bids", "row": {"auction": 1, "price": price, "ts": ts}}


def write(path: Path, lines: list[Any]) -> str:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
                    encoding="utf-8")
    return str(path)


def files(tmp_path: Path, sql: str, lines: list[Any]) -> tuple[str, str]:
    """q.sql and events.jsonl under ``tmp_path``: their paths."""
    query = tmp_path / "q.sql"
    query.write_text(sql, encoding="utf-8")
    return str(query), write(tmp_path / "events.jsonl", lines)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_refused(result: Result, *words: str) -> None:
    """Exit 2 with one clear message on stderr holding ``words``; nothing on stdout, no
    traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


@pytest.fixture
def script(tmp_path: Path) -> tuple[str, str]:
    """A query with a late row, so that --late-out has something to write."""
    events = [bid("2023-01-01 00:00:10"), {"barrier": True}, bid("2023-01-01 00:20:00"),
              {"barrier": True}, bid("2023-01-01 00:00:20"), {"barrier": True}]
    return files(tmp_path, TUMBLE, events)


# ------------------------------------------------------------------ output files

OUTPUT_OPTIONS = {
    "run --late-out": lambda q, e, path: ["run", q, e, "--late-out", path],
    "run --rejects-out": lambda q, e, path: ["run", q, e, "--keep-going", "--rejects-out", path],
    "explain --out": lambda q, e, path: ["explain", q, "--out", path],
    "explain --format json --out": lambda q, e, path: ["explain", q, "--format", "json",
                                                       "--out", path],
    "explain --format svg --out": lambda q, e, path: ["explain", q, "--format", "svg",
                                                      "--out", path],
    "verify --report": lambda q, e, path: ["verify", q, "--cases", "1", "--report", path],
    "verify --junit": lambda q, e, path: ["verify", q, "--cases", "1", "--junit", path],
}


@pytest.mark.parametrize("command", sorted(OUTPUT_OPTIONS))
def test_an_output_file_in_a_missing_directory_is_refused_before_any_work(
        command: str, script: tuple[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    path = str(missing / "out.file")
    result = invoke(*OUTPUT_OPTIONS[command](*script, path))
    option = command.split()[-1]
    assert_refused(result, f"'{option}'", path, f"the directory {missing} does not exist")
    assert not (tmp_path / "no").exists()  # eowc creates no directory


@pytest.mark.parametrize("command", ["run --late-out", "explain --out", "verify --junit"])
def test_an_output_file_under_a_file_or_at_a_directory_is_refused(
        command: str, script: tuple[str, str], tmp_path: Path) -> None:
    query, events = script
    under_a_file = f"{events}/out.file"
    assert_refused(invoke(*OUTPUT_OPTIONS[command](query, events, under_a_file)),
                   under_a_file, f"{events} is not a directory")
    assert_refused(invoke(*OUTPUT_OPTIONS[command](query, events, str(tmp_path))),
                   str(tmp_path), "is a directory")


def test_an_output_file_in_an_existing_directory_is_written(script: tuple[str, str],
                                                             tmp_path: Path) -> None:
    late = tmp_path / "late.jsonl"
    result = invoke("run", *script, "--late-out", str(late))
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["row"]["ts"] for line in late.read_text().splitlines()] == \
        ["2023-01-01 00:00:20"]
    explained = tmp_path / "plan.json"
    assert invoke("explain", script[0], "--format", "json", "--out", str(explained)).exit_code == 0
    assert json.loads(explained.read_text())


# ------------------------------------------------------------------ an empty events file

@pytest.mark.parametrize("lines", [[], [""], [{"barrier": True}, {"barrier": True}]],
                         ids=["empty", "blank line", "barriers only"])
def test_an_events_file_without_events_says_so(lines: list[Any], tmp_path: Path) -> None:
    """No input is a legitimate (empty) stream: exit 0, an empty output, and a warning that
    names the file."""
    query, events = files(tmp_path, TUMBLE, lines)
    result = invoke("run", query, events)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == (f"eowc: warning: the events file {events} has no events: the "
                             f"query runs over no input\n")


def test_an_events_file_with_events_gives_no_warning(script: tuple[str, str]) -> None:
    result = invoke("run", *script)
    assert result.exit_code == 0 and "no events" not in result.stderr


# ------------------------------------------------------------------ event lines: the key

BAD_KEYS = {
    # line, what the message names; the column is counted by hand from the line
    "barrier false": ('{"barrier": false}', '"barrier" is false at column 2'),
    "barrier null": ('{"barrier": null}', '"barrier" is null at column 2'),
    "barrier 1": ('{"barrier": 1}', '"barrier" is 1 at column 2'),
    "barrier with a key": ('{"barrier": true, "epoch": 3}', 'unknown key "epoch" at column 19'),
    "unknown key first": ('{"x": 1, "table": "bids", "row": {}}', 'unknown key "x" at column 2'),
    "unknown key between": ('{"table": "bids", "x": 1, "row": {}}',
                            'unknown key "x" at column 19'),
    "unknown key also in the row": ('{"table": "bids", "row": {"x": 1}, "x": 2}',
                                    'unknown key "x" at column 36'),
    "missing row": ('{"table": "bids"}', 'missing key "row"'),
    "missing table": ('{"row": {}}', 'missing key "table"'),
}


@pytest.mark.parametrize("case", sorted(BAD_KEYS))
def test_a_bad_key_is_named_with_its_file_line_and_column(case: str, tmp_path: Path) -> None:
    text, named = BAD_KEYS[case]
    query, events = files(tmp_path, SORT, [bid("2023-01-01 00:00:01"), {"barrier": True}, text])
    result = invoke("run", query, events)
    assert_refused(result, f"eowc: error: {events}:3: {named}")
    expected = '{"barrier": true}' if "barrier" in case else '{"table": ..., "row": {...}}'
    assert expected in result.stderr


def test_keep_going_records_the_named_key(tmp_path: Path) -> None:
    query, events = files(tmp_path, SORT, ['{"barrier": false}', bid("2023-01-01 00:00:01")])
    rejects = tmp_path / "rejects.jsonl"
    result = invoke("run", query, events, "--keep-going", "--rejects-out", str(rejects))
    assert result.exit_code == 0, result.output
    [record] = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert record["line"] == 1 and record["reason"].startswith('"barrier" is false at column 2')


# ------------------------------------------------------------------ the year 9999

@pytest.mark.parametrize(("sql", "ts", "start"), [
    (TUMBLE, "9999-12-31 23:55:00", "9999-12-31 23:50:00"),
    (TUMBLE, "9999-12-31 23:59:59.999999", "9999-12-31 23:50:00"),
    (HOP, "9999-12-31 23:52:00", "9999-12-31 23:50:00"),  # [23:45, 23:55) fits, [23:50, ..) not
], ids=["tumble", "tumble last instant", "hop"])
@pytest.mark.parametrize("engine", ["reference", "in-process"])
def test_a_window_ending_after_the_year_9999_names_the_row_and_the_window(
        sql: str, ts: str, start: str, engine: str, tmp_path: Path) -> None:
    query, events = files(tmp_path, sql, [bid("9999-12-31 23:30:00"), {"barrier": True}, bid(ts),
                                          {"barrier": True}])
    kind = "HOP" if "HOP" in sql else "TUMBLE"
    result = invoke("run", query, events, "--engine", engine, "--close")
    assert_refused(result, f"{events}:3: bids.ts {ts} falls in the {kind} window of 00:10:00 "
                           f"starting {start}, which ends after 9999-12-31 23:59:59.999999, the "
                           f"last TIMESTAMP")


def test_windows_that_end_by_the_year_9999_run(tmp_path: Path) -> None:
    query, events = files(tmp_path, TUMBLE, [bid("9999-12-31 23:49:59"), {"barrier": True}])
    result = invoke("run", query, events, "--close")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"window_start": "9999-12-31 23:40:00",
                                         "window_end": "9999-12-31 23:50:00", "n": 1}


def test_a_session_past_the_year_9999_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    """A session's end is its last row plus the gap: no check before the run sees it, the
    command still ends with a message naming the limit."""
    query, events = files(tmp_path, SESSION, [bid("9999-12-31 23:55:00"), {"barrier": True}])
    assert_refused(invoke("run", query, events, "--close"),
                   "outside 0001-01-01 00:00:00 .. 9999-12-31 23:59:59.999999", query, events)


@given(kind=st.sampled_from(list(WindowKind)), size_minutes=st.integers(1, 120),
       slide_divisor=st.sampled_from([1, 2, 3, 5]), near_the_end=st.booleans(),
       distance=st.integers(0, 200 * 60 * 1_000_000))
def test_a_window_out_of_the_timestamp_range_is_found_exactly(
        kind: WindowKind, size_minutes: int, slide_divisor: int, near_the_end: bool,
        distance: int) -> None:
    """window_out_of_range(t) is the first window of t that starts before the first TIMESTAMP
    or ends after the last, and None exactly when every window of t lies in range."""
    size = size_minutes * 60_000_000
    slide = size // slide_divisor if size % slide_divisor == 0 else size
    spec = WindowSpec(kind, size, 0 if kind is WindowKind.TUMBLE else slide)
    t = LAST_TIMESTAMP - distance if near_the_end else FIRST_TIMESTAMP + distance
    outside = [w for w in spec.windows_of(t) if w.start < FIRST_TIMESTAMP or w.end > LAST_TIMESTAMP]
    assert spec.window_out_of_range(t) == (outside[0] if outside else None)


def test_a_window_starting_before_the_year_1_names_the_row_and_the_window(tmp_path: Path) -> None:
    query, events = files(tmp_path, HOP, [bid("0001-01-01 00:01:00"), {"barrier": True}])
    assert_refused(invoke("run", query, events, "--close"),
                   f"{events}:1: bids.ts 0001-01-01 00:01:00 falls in the HOP window of 00:10:00 "
                   f"ending 0001-01-01 00:05:00, which starts before 0001-01-01 00:00:00, the "
                   f"first TIMESTAMP")


def test_a_query_file_that_is_not_utf8_is_named(script: tuple[str, str], tmp_path: Path) -> None:
    query = tmp_path / "latin1.sql"
    query.write_bytes("-- menu\nSELECT 'caf\u00e9'".encode("latin-1"))
    assert_refused(invoke("run", str(query), script[1]),
                   f"eowc: error: {query}: not UTF-8 text (byte 0xe9 at line 2, column 12)")


def test_the_timestamp_range_is_the_years_1_to_9999() -> None:
    assert parse_timestamp("9999-12-31 23:59:59.999999") == LAST_TIMESTAMP
    assert parse_timestamp("0001-01-01 00:00:00") == FIRST_TIMESTAMP


def test_a_timestamp_of_the_year_1_is_printed_with_four_digits(tmp_path: Path) -> None:
    """Found on the way: the output wrote 0001-01-01 as 1-01-01 (strftime drops the zeros)."""
    query, events = files(tmp_path, SORT, [bid("0001-01-01 00:00:01"), {"barrier": True}])
    result = invoke("run", query, events, "--close")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ts"] == "0001-01-01 00:00:01"
