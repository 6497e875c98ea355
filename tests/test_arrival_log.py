"""The arrival log's JSON Lines form (eowc.semantics.ir.arrival): epochs, line numbers, values, errors.

A line is an event ``{"table": T, "row": {...}}`` or a barrier ``{"barrier": true}`` that ends
an epoch (SEMANTICS.md §1: an epoch is a barrier interval / micro-batch / checkpoint interval).
With no barrier line at all, every event is its own epoch. Blank lines are ignored but still
counted, so a line number is the line of the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log, parse_arrival_log
from eowc.semantics.ir.plan import Source

SCRIPT = """
CREATE SOURCE bids (auction BIGINT, price BIGINT, name VARCHAR, ok BOOLEAN, amount DOUBLE,
                    ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE TABLE people (id BIGINT, name VARCHAR);
SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE;
"""

SOURCES: dict[str, Source] = dict(parse_script(SCRIPT).sources)

T0 = 1_672_531_200_000_000  # 2023-01-01 00:00:00 UTC = 1672531200 s after the epoch
SECOND = 1_000_000
BARRIER = '{"barrier": true}'


def bid(second: int, auction: int = 1) -> str:
    """An event line of ``bids`` at 2023-01-01 00:00:<second>."""
    return json.dumps({"table": "bids", "row": {"auction": auction,
                                                "ts": f"2023-01-01 00:00:{second:02d}"}})


def row(second: int, auction: int = 1) -> tuple:
    """The internal row of :func:`bid`: unset columns are NULL, ts in microseconds."""
    return (auction, None, None, None, None, T0 + second * SECOND)


def parse(lines: list[str], keep_going: bool = False):
    return parse_arrival_log(lines, SOURCES, "events.jsonl", keep_going)


def shape(log: ArrivalLog) -> list[list[int]]:
    """Each epoch as the list of its events' line numbers."""
    return [[e.line for e in epoch] for epoch in log.epochs]


# ---------------------------------------------------------------- epochs

def test_barriers_end_epochs() -> None:
    loaded = parse([bid(1), bid(2), BARRIER, bid(3), BARRIER])
    assert shape(loaded.log) == [[1, 2], [4]]  # the trailing barrier ends epoch 1; no 3rd epoch
    assert loaded.log.epochs[0] == (Event("bids", row(1), 1), Event("bids", row(2), 2))
    assert loaded.rejected == ()


def test_rows_after_the_last_barrier_form_a_last_epoch() -> None:
    assert shape(parse([bid(1), BARRIER, bid(2), bid(3)]).log) == [[1], [3, 4]]


def test_without_barriers_every_event_is_its_own_epoch() -> None:
    log = parse([bid(5), bid(1), bid(3)]).log
    assert shape(log) == [[1], [2], [3]]
    assert [e.row for e in log.events] == [row(5), row(1), row(3)]  # arrival order is kept


def test_consecutive_barriers_give_empty_epochs() -> None:
    assert shape(parse([bid(1), BARRIER, BARRIER, BARRIER, bid(2), BARRIER]).log) == \
        [[1], [], [], [5]]


def test_a_leading_barrier_gives_an_empty_first_epoch() -> None:
    assert shape(parse([BARRIER, bid(1), BARRIER]).log) == [[], [2]]


def test_only_barriers_give_only_empty_epochs() -> None:
    assert parse([BARRIER, BARRIER]).log.epochs == ((), ())


def test_empty_input_has_no_epoch() -> None:
    assert parse([]).log.epochs == ()
    assert parse(["", "  \n"]).log.epochs == ()


def test_blank_lines_are_ignored_but_counted() -> None:
    loaded = parse(["", bid(1), "   ", "\t\n", BARRIER, "", bid(2), ""])
    assert shape(loaded.log) == [[2], [7]]
    loaded = parse(["\n", bid(1), "\n", bid(2)])  # no barrier: still one epoch per event
    assert shape(loaded.log) == [[2], [4]]


def test_events_of_other_tables_are_kept_in_the_log() -> None:
    people = json.dumps({"table": "people", "row": {"id": 7}})
    log = parse([people, bid(1), BARRIER]).log
    assert log.epochs == ((Event("people", (7, None), 1), Event("bids", row(1), 2)),)


# ---------------------------------------------------------------- values

def test_values_are_converted_to_their_internal_form() -> None:
    line = json.dumps({"table": "bids", "row": {
        "auction": 3, "price": -4, "name": "x", "ok": False, "amount": 2,
        "ts": "2023-01-01 00:00:01.5"}})
    (event,) = parse([line]).log.events
    # 00:00:01.5 = T0 + 1.5 s; DOUBLE from a JSON integer is a float
    assert event.row == (3, -4, "x", False, 2.0, T0 + 1_500_000)
    assert isinstance(event.row[4], float)


def test_explicit_null_of_an_ordinary_column_is_null() -> None:
    line = json.dumps({"table": "bids", "row": {"price": None, "ts": "2023-01-01 00:00:00"}})
    assert parse([line]).log.events[0].row == (None, None, None, None, None, T0)


def test_a_timestamp_may_use_T_and_microseconds() -> None:
    line = json.dumps({"table": "bids", "row": {"ts": "2023-01-01T00:00:00.000001"}})
    assert parse([line]).log.events[0].row[5] == T0 + 1


# ---------------------------------------------------------------- errors

BAD_LINES = {
    "malformed JSON": ('{"table": "bids", "row": {', "malformed JSON"),
    "not an object": ("[1, 2]", "expected a JSON object"),
    "a string": ('"bids"', "expected a JSON object"),
    "row not an object": ('{"table": "bids", "row": [1]}', 'expected "row" to be a JSON object'),
    "extra key": ('{"table": "bids", "row": {"ts": "2023-01-01 00:00:00"}, "x": 1}',
                  'expected {"table"'),
    "barrier false": ('{"barrier": false}', '{"barrier": true}'),
    "barrier with extra key": ('{"barrier": true, "epoch": 3}', '{"barrier": true}'),
    "unknown table": ('{"table": "asks", "row": {}}', "unknown table 'asks'"),
    "unknown column": ('{"table": "bids", "row": {"bidder": 1, "ts": "2023-01-01 00:00:00"}}',
                       "unknown column(s) bidder for table bids"),
    "missing event time": ('{"table": "bids", "row": {"price": 1}}',
                           "event-time column bids.ts is missing"),
    "null event time": ('{"table": "bids", "row": {"ts": null}}',
                        "event-time column bids.ts is NULL"),
    "string for BIGINT": ('{"table": "bids", "row": {"price": "1", "ts": "2023-01-01 00:00:00"}}',
                          "column bids.price: expected a BIGINT, got '1'"),
    "float for BIGINT": ('{"table": "bids", "row": {"price": 1.5, "ts": "2023-01-01 00:00:00"}}',
                         "column bids.price: expected a BIGINT, got 1.5"),
    "bool for BIGINT": ('{"table": "bids", "row": {"price": true, "ts": "2023-01-01 00:00:00"}}',
                        "column bids.price: expected a BIGINT, got True"),
    "number for VARCHAR": ('{"table": "bids", "row": {"name": 7, "ts": "2023-01-01 00:00:00"}}',
                           "column bids.name: expected a VARCHAR string, got 7"),
    "string for BOOLEAN": ('{"table": "bids", "row": {"ok": "yes", "ts": "2023-01-01 00:00:00"}}',
                           "column bids.ok: expected a BOOLEAN"),
    "bool for DOUBLE": ('{"table": "bids", "row": {"amount": false, "ts": "2023-01-01 00:00:00"}}',
                        "column bids.amount: expected a DOUBLE"),
    "unparseable timestamp": ('{"table": "bids", "row": {"ts": "yesterday"}}',
                              "column bids.ts: expected a timestamp YYYY-MM-DD HH:MM:SS"),
    "fraction for TIMESTAMP": ('{"table": "bids", "row": {"ts": 1672531200.5}}',
                               "column bids.ts: expected a TIMESTAMP string or epoch milliseconds"),
    "timestamp with zone": ('{"table": "bids", "row": {"ts": "2023-01-01 00:00:00Z"}}',
                            "column bids.ts: expected a timestamp without time zone"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_bad_line_names_the_file_the_line_and_the_problem(case: str) -> None:
    text, reason = BAD_LINES[case]
    with pytest.raises(InputError) as caught:
        parse([bid(1), "", BARRIER, text, bid(2)])
    error = caught.value
    assert (error.path, error.line) == ("events.jsonl", 4)
    assert str(error).startswith("events.jsonl:4: ")
    assert reason in str(error)


@pytest.mark.parametrize("text", ["2023-13-01 00:00:00", "2023-02-30 00:00:00",
                                  "2023-01-01 24:00:00"])
def test_an_impossible_timestamp_names_the_column_and_the_text(text: str) -> None:
    """Matching the pattern is not enough: the date must exist. The message says where (file,
    line, column) and what was found (semantics/errors.py: 'each says where, what was found
    and what was expected')."""
    line = json.dumps({"table": "bids", "row": {"ts": text}})
    with pytest.raises(InputError) as caught:
        parse([line])
    assert str(caught.value).startswith("events.jsonl:1: column bids.ts")
    assert text in str(caught.value)


def test_keep_going_rejects_bad_lines_and_keeps_the_good_ones() -> None:
    loaded = parse([bid(1), '{"table": "bids", "row": {"price": "x", "ts": "2023-01-01 00:00:02"}}',
                    BARRIER, "not json", bid(3), '{"table": "asks", "row": {}}', BARRIER],
                   keep_going=True)
    assert shape(loaded.log) == [[1], [5]]  # bad lines vanish; the barriers still cut
    assert [(r.line, r.table) for r in loaded.rejected] == [(2, "bids"), (4, None), (6, "asks")]
    assert loaded.rejected[0].row == {"price": "x", "ts": "2023-01-01 00:00:02"}
    assert "expected a BIGINT, got 'x'" in loaded.rejected[0].reason
    assert loaded.rejected[1].row == "not json"
    assert "malformed JSON" in loaded.rejected[1].reason
    assert "unknown table 'asks'" in loaded.rejected[2].reason


def test_keep_going_without_barriers_gives_each_good_event_an_epoch() -> None:
    loaded = parse([bid(1), "{", bid(2)], keep_going=True)
    assert shape(loaded.log) == [[1], [3]]
    assert [r.line for r in loaded.rejected] == [2]


def test_load_reads_a_file_with_its_path_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join([bid(1), BARRIER, bid(2)]) + "\n", encoding="utf-8")
    assert shape(load_arrival_log(str(path), SOURCES).log) == [[1], [3]]
    path.write_text(bid(1) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"events\.jsonl:2: malformed JSON") as caught:
        load_arrival_log(str(path), SOURCES)
    assert caught.value.path == str(path)


def test_a_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as caught:
        load_arrival_log(str(missing), SOURCES)
    assert str(missing) in str(caught.value)
    assert "cannot read the file" in str(caught.value)
