"""ARRAY columns and ``unnest`` (issue 18): ``INT[]`` / ``ARRAY<INT>`` columns read from JSON
arrays and printed as JSON arrays, ``ARRAY[...]``, ``arr[i]``, ``cardinality``; ``unnest`` in
the SELECT list (RisingWave's ProjectSet: several unnests zip to the longest, padded with
NULL; an empty or NULL array gives no row) and ``CROSS JOIN unnest(arr) AS u(x)``, under EMIT
ON WINDOW CLOSE, in emit-on-update mode and below a window aggregate. Every expected row is
counted by hand in the test's docstring; random logs check the reference against the
specification, the DuckDB oracle (DuckDB's own LISTs and unnest) and the in-process
executors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors import plan as executor_plan
from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.engines.spec import eowc_after_each_epoch
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, parse_arrival_log
from eowc.semantics.ir.plan import ProjectSet, walk
from eowc.semantics.ir.values import (
    MICROS_PER_SECOND,
    SqlType,
    array_of,
    from_external,
    from_output_external,
    json_text,
    parse_timestamp,
    to_external,
)
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.generators import _domain
from tests.strategies import cut_into_epochs

S = MICROS_PER_SECOND
T0 = parse_timestamp("2024-01-01 00:00:00")
TABLE = ("CREATE TABLE t (id INT, tags VARCHAR[], nums INT[], ts TIMESTAMP, "
         "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) APPEND ONLY;\n")
FLINK_TABLE = ("CREATE TABLE t (id INT, tags ARRAY<STRING>, nums ARRAY<INT>, ts TIMESTAMP(3), "
               "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'kafka');\n")
#: Unnested tags per minute: the window aggregate over a subquery with unnest.
TAGS_PER_MINUTE = ("SELECT window_start, tag, count(*) AS n FROM TUMBLE((SELECT ts, unnest(tags) "
                   "AS tag FROM t), ts, INTERVAL '1' MINUTE) GROUP BY window_start, tag")
ZIPPED = "SELECT id, unnest(tags) AS tag, unnest(nums) AS n, ts FROM t"


def at(seconds: float) -> int:
    return T0 + int(seconds * S)


def query(sql: str, eowc: bool = True, table: str = TABLE):  # noqa: ANN201
    return parse_script(table + sql + (" EMIT ON WINDOW CLOSE" if eowc else "") + ";").query


def rejected(sql: str, table: str = TABLE) -> str:
    with pytest.raises(SqlError) as info:
        parse_script(table + sql + ";")
    return str(info.value)


def log(*epochs: list[tuple[int, tuple | None, tuple | None, float]]) -> ArrivalLog:
    """Epochs of (id, tags, nums, seconds after T0) rows of t."""
    return ArrivalLog(tuple(tuple(Event("t", (i, tags, nums, at(s))) for i, tags, nums, s in epoch)
                            for epoch in epochs))


#: Epoch 0: rows 1 (three tags, two numbers), 2 (no tags, NULL numbers), 3 (NULL tags, one
#: number); epoch 1: row 4 at 1:10 (a NULL tag); epoch 2: row 5 at 2:10, which moves the
#: watermark to 2:05.
EVENTS = log([(1, ("a", "b", "c"), (10, 20), 1), (2, (), None, 2), (3, None, (5,), 3)],
             [(4, ("b", None), (), 70)],
             [(5, ("a",), (7, 8), 130)])


# ------------------------------------------------------------------------------ the type

def test_array_columns_in_both_dialects() -> None:
    """``VARCHAR[]``, ``INT[]``, ``DOUBLE[]`` and Flink's ``ARRAY<STRING>`` are arrays of the
    element types; an array of arrays is refused by name."""
    source = query("SELECT id, ts FROM t").source
    assert [c.type for c in source.columns] == [SqlType.BIGINT, array_of(SqlType.VARCHAR),
                                                array_of(SqlType.BIGINT), SqlType.TIMESTAMP]
    flink = query("SELECT id, ts FROM t", table=FLINK_TABLE).source
    assert [c.type for c in flink.columns][:3] == [c.type for c in source.columns][:3]
    doubles = parse_script("CREATE TABLE d (x DOUBLE[], ts TIMESTAMP, WATERMARK FOR ts AS ts);"
                           "SELECT ts FROM d;").query.source
    assert doubles.columns[0].type is array_of(SqlType.DOUBLE)
    assert array_of(SqlType.DOUBLE).value == "DOUBLE[]"
    with pytest.raises(SqlError, match=r"arrays of arrays \(BIGINT\[\]\[\]\) are not supported"):
        parse_script("CREATE TABLE d (x INT[][], ts TIMESTAMP); SELECT ts FROM d;")


def test_json_arrays_are_read_as_tuples_and_written_back_as_json_arrays() -> None:
    """Each element is read as the element type reads it (a TIMESTAMP from its text, a NULL
    element kept) and written back the same way, by the one writer of values."""
    times = array_of(SqlType.TIMESTAMP)
    value = from_external(["2024-01-01 00:00:01", None], times)
    assert value == (at(1), None)
    assert json_text({"x": to_external(value, times)}) == \
        '{"x": ["2024-01-01 00:00:01", null]}'
    assert from_output_external(to_external(value, times), times) == value  # eowc's own output
    assert from_external([], array_of(SqlType.BIGINT)) == ()
    assert json_text(to_external((1.5, float("nan")), array_of(SqlType.DOUBLE))) == '[1.5, "NaN"]'


@pytest.mark.parametrize(("value", "words"), [
    (["a", 2], "element 2 of the VARCHAR[] array: expected a VARCHAR string, got 2"),
    ("a", "expected a JSON array of VARCHAR (a VARCHAR[]), got 'a'"),
])
def test_a_bad_array_in_the_events_file_names_the_line_the_column_and_the_element(
        tmp_path: Path, value: object, words: str) -> None:
    """The events file's second line gives a wrong array: exit 2, the file, line 2, the column
    t.tags and what was expected; nothing on stdout, no traceback."""
    (tmp_path / "q.sql").write_text(TABLE + "SELECT id, ts FROM t EMIT ON WINDOW CLOSE;\n")
    good = {"table": "t", "row": {"id": 1, "tags": [], "nums": [], "ts": "2024-01-01 00:00:01"}}
    bad = {"table": "t", "row": {**good["row"], "tags": value}}
    (tmp_path / "e.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    result = CliRunner().invoke(main, ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl")])
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert f"e.jsonl:2: column t.tags: {words}" in result.stderr, result.stderr


def test_array_literals_subscripts_and_cardinality() -> None:
    """Row 1: tags ('a', 'b', 'c'): tags[1] = 'a', tags[3] = 'c', tags[4] and tags[0] NULL
    (outside 1..3), cardinality 3, ARRAY[id, 2] = [1, 2]; row 2 (no tags): NULL, NULL, NULL,
    NULL, 0; row 3 (NULL tags): all NULL. The columns print as JSON arrays."""
    q = query("SELECT id, tags[1] AS first, tags[3] AS third, tags[4] AS fourth, tags[0] AS zeroth, "
              "cardinality(tags) AS k, array_length(nums) AS m, ARRAY[id, 2] AS pair, ts FROM t")
    rows = sorted(e.row for e in run_eowc(q, EVENTS, close=True))
    assert [r[:8] for r in rows] == [
        (1, "a", "c", None, None, 3, 2, (1, 2)), (2, None, None, None, None, 0, None, (2, 2)),
        (3, None, None, None, None, None, 1, (3, 2)), (4, "b", None, None, None, 2, 0, (4, 2)),
        (5, "a", None, None, None, 1, 2, (5, 2))]
    assert q.schema[7].type is array_of(SqlType.BIGINT)


def test_arrays_compare_by_equality_and_group() -> None:
    """``nums = ARRAY[10, 20]`` holds for row 1 only; grouping by an array: rows 4 (nums [])
    and 5 (nums [7, 8]) in the minute of 1:00 and 2:00; ordering arrays is refused by name."""
    q = query("SELECT id, ts FROM t WHERE nums = ARRAY[10, 20]")
    assert [e.row[0] for e in run_eowc(q, EVENTS, close=True)] == [1]
    grouped = query("SELECT window_start, nums, count(*) AS n FROM TUMBLE(t, ts, INTERVAL '1' "
                    "MINUTE) GROUP BY window_start, nums")
    assert sorted((r[1], r[2]) for r in (e.row for e in run_eowc(grouped, EVENTS, close=True))
                  if r[0] > at(0)) == [((), 1), ((7, 8), 1)]
    assert "arrays are compared by = and <> only" in rejected("SELECT ts FROM t WHERE nums < nums")


# ------------------------------------------------------------------------------ unnest

def test_unnest_zips_to_the_longest_array_in_both_modes() -> None:
    """Row 1: tags a, b, c and nums 10, 20 zip to (a, 10), (b, 20), (c, NULL); row 2 (no tags,
    NULL nums) gives no row; row 3 (NULL tags, nums 5) gives (NULL, 5); row 4 (tags b, NULL,
    nums []) gives (b, NULL), (NULL, NULL); row 5 (tags a, nums 7, 8) gives (a, 7), (NULL, 8).
    Under EOWC a row is emitted once the watermark passes its time: 1:10 - 5s = 1:05 after
    epoch 1 (rows 1-3, 0:01-0:03), 2:10 - 5s = 2:05 after epoch 2 (row 4, 1:10), row 5 at the
    close (epoch 3); in each epoch in time order, ties by the whole row (NULL first). In update
    mode each row's rows are inserted in the epoch it arrives."""
    q = query(ZIPPED)
    row1 = [(1, "a", 10, at(1)), (1, "b", 20, at(1)), (1, "c", None, at(1))]
    row3 = [(3, None, 5, at(3))]
    row4 = [(4, None, None, at(70)), (4, "b", None, at(70))]
    row5 = [(5, None, 8, at(130)), (5, "a", 7, at(130))]
    assert [(e.epoch, e.row) for e in run_eowc(q, EVENTS, close=True)] == \
        [(1, r) for r in row1 + row3] + [(2, r) for r in row4] + [(3, r) for r in row5]
    changes = [(c.epoch, c.op, c.row) for c in run_update(query(ZIPPED, eowc=False), EVENTS)]
    assert sorted(changes, key=repr) == sorted([(0, "+", r) for r in row1 + row3] +
                                               [(1, "+", r) for r in row4] +
                                               [(2, "+", r) for r in row5], key=repr)


def test_unnest_below_a_window_aggregate() -> None:
    """Tags per minute. Minute 0:00: a (row 1), b (row 1), c (row 1) once each; minute 1:00:
    b and NULL once (row 4); minute 2:00: a (row 5). The watermark reaches 1:05 after epoch 1,
    closing minute 0:00 (end 1:00), and 2:05 after epoch 2, closing 1:00; 2:00 closes at the
    end. Update mode: minute 0:00's counts in epoch 0, 1:00's in 1, 2:00's in 2, each
    inserted once."""
    minute = 60 * S
    first = [(T0, "a", 1), (T0, "b", 1), (T0, "c", 1)]
    second = [(T0 + minute, None, 1), (T0 + minute, "b", 1)]
    third = [(T0 + 2 * minute, "a", 1)]
    out = [(e.epoch, e.row) for e in run_eowc(query(TAGS_PER_MINUTE), EVENTS, close=True)]
    assert out == [(1, r) for r in first] + [(2, r) for r in second] + [(3, r) for r in third]
    changes = sorted(((c.epoch, c.op, c.row)
                      for c in run_update(query(TAGS_PER_MINUTE, eowc=False), EVENTS)), key=repr)
    assert changes == sorted([(0, "+", r) for r in first] + [(1, "+", r) for r in second]
                             + [(2, "+", r) for r in third], key=repr)


def test_the_in_process_executors_and_the_oracle_give_the_hand_counted_rows() -> None:
    for sql in (ZIPPED, TAGS_PER_MINUTE):
        q = query(sql)
        reference = [(e.epoch, e.row) for e in run_eowc(q, EVENTS, close=True)]
        assert len(reference) >= 6
        executed = run_in_process(q, EVENTS, close=True).emissions
        assert [(e.epoch, e.row) for e in executed] == reference, sql
        assert oracle_eowc(q, EVENTS, Convention.RISINGWAVE, close=True) == \
            Counter(r for _, r in reference), sql


def test_cross_join_unnest_is_the_select_list_unnest() -> None:
    """``FROM t CROSS JOIN unnest(t.tags) AS u(tag)`` (RisingWave, PostgreSQL) and Flink's
    ``CROSS JOIN UNNEST(tags) AS u (tag)`` plan as ``unnest(tags) AS tag`` in a subquery:
    the same rows as the SELECT-list form's tags (row 1: a, b, c; row 4: b, NULL; row 5: a)."""
    written = "SELECT id, u.tag AS tag, ts FROM t CROSS JOIN unnest(t.tags) AS u(tag)"
    flink = "SELECT id, tag, ts FROM t CROSS JOIN UNNEST(tags) AS u (tag)"
    by_hand = sorted([(1, "a", at(1)), (1, "b", at(1)), (1, "c", at(1)), (4, "b", at(70)),
                      (4, None, at(70)), (5, "a", at(130))], key=str)
    for q in (query(written), query(flink, table=FLINK_TABLE)):
        assert any(isinstance(n, ProjectSet) for n in walk(q.plan))
        assert sorted((e.row for e in run_eowc(q, EVENTS, close=True)), key=str) == by_hand


def test_with_ordinality_numbers_each_element_from_one() -> None:
    """``CROSS JOIN unnest(t.tags) WITH ORDINALITY AS u(tag, i)``: row 1 gives (a, 1), (b, 2),
    (c, 3); row 4 (b, 1), (NULL, 2); row 5 (a, 1); rows 2 (empty) and 3 (NULL) give none."""
    sql = "SELECT id, tag, i, ts FROM t CROSS JOIN unnest(t.tags) WITH ORDINALITY AS u(tag, i)"
    by_hand = sorted([(1, "a", 1, at(1)), (1, "b", 2, at(1)), (1, "c", 3, at(1)),
                      (4, "b", 1, at(70)), (4, None, 2, at(70)), (5, "a", 1, at(130))], key=str)
    q = query(sql)
    assert sorted((e.row for e in run_eowc(q, EVENTS, close=True)), key=str) == by_hand
    assert sorted(oracle_eowc(q, EVENTS, Convention.RISINGWAVE, close=True).elements(),
                  key=str) == by_hand
    executed = run_in_process(q, EVENTS, close=True).emissions
    assert sorted((e.row for e in executed), key=str) == by_hand


def test_generate_series_in_the_select_list_zips_with_unnest() -> None:
    """``generate_series(a, b[, step])`` as a SELECT item is a set of rows, zipped with the
    unnests beside it (PostgreSQL 10+, RisingWave's ProjectSet): row 1 (nums 10, 20) with
    ``generate_series(1, 3)`` gives (10, 1), (20, 2), (NULL, 3); ``generate_series(id, 1, -1)``
    counts down, both ends in; a NULL bound gives no row; a zero step is an error."""
    q = query("SELECT id, unnest(nums) AS n, generate_series(1, 3) AS k, ts FROM t")
    rows = [e.row for e in run_eowc(q, EVENTS, close=True) if e.row[0] == 1]
    assert sorted(rows, key=str) == sorted([(1, 10, 1, at(1)), (1, 20, 2, at(1)),
                                            (1, None, 3, at(1))], key=str)
    down = query("SELECT id, generate_series(id, 1, -1) AS k, ts FROM t")
    counted = Counter(e.row[:2] for e in run_eowc(down, EVENTS, close=True))
    assert counted == Counter([(1, 1), (2, 2), (2, 1), (3, 3), (3, 2), (3, 1), (4, 4), (4, 3),
                               (4, 2), (4, 1), (5, 5), (5, 4), (5, 3), (5, 2), (5, 1)])
    oracle = oracle_eowc(down, EVENTS, Convention.RISINGWAVE, close=True)
    assert Counter(r[:2] for r in oracle.elements()) == counted
    assert Counter(e.row[:2] for e in run_in_process(down, EVENTS, close=True).emissions) == counted
    with pytest.raises(ValueError, match="step size cannot equal zero"):
        list(run_eowc(query("SELECT id, generate_series(1, 3, 0) AS k, ts FROM t"), EVENTS,
                      close=True))


@pytest.mark.parametrize(("sql", "words"), [
    ("SELECT unnest(tags) || 'x' AS y, ts FROM t", "unnest(array) is supported only as a whole "
     "item of the SELECT list"),
    ("SELECT id, count(*) AS n, unnest(tags) AS x FROM t GROUP BY id",
     "unnest in the SELECT list of a grouped query is not supported"),
    ("SELECT * FROM unnest(ARRAY[1, 2])", "unnest in FROM without a table is not supported"),
    ("SELECT generate_series(1, id) + 1 AS x, ts FROM t", "generate_series(a, b) is supported "
     "only as a whole item of the SELECT list"),
    ("SELECT generate_series(1, 'a') AS x, ts FROM t", "generate_series expects BIGINT"),
    ("SELECT unnest(id) AS x, ts FROM t", "unnest takes an ARRAY, got BIGINT"),
    ("SELECT CAST(tags AS VARCHAR) AS s, ts FROM t", "CAST from VARCHAR[] to VARCHAR"),
    ("SELECT tags || tags AS s, ts FROM t", "|| on arrays (array concatenation) is not supported"),
    ("SELECT window_start, max(nums) AS m FROM TUMBLE(t, ts, INTERVAL '1' MINUTE) GROUP BY "
     "window_start", "max of an ARRAY (BIGINT[]) is not supported: unnest it in a subquery"),
])
def test_unsupported_array_forms_are_refused_by_name(sql: str, words: str) -> None:
    assert words in rejected(sql)


# ------------------------------------------------------------------------------ random logs

ELEMENTS = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))


@st.composite
def array_logs(draw) -> ArrivalLog:  # noqa: ANN001
    """Rows of t: arrays of 0-3 elements (or NULL), times on a 20-second grid over 3 minutes
    (late rows included), any epoch boundaries."""
    n = draw(st.integers(0, 14))
    events = []
    for i in range(n):
        tags = draw(st.one_of(st.none(), st.lists(ELEMENTS, max_size=3).map(tuple)))
        nums = draw(st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 3)),
                                                  max_size=3).map(tuple)))
        events.append(Event("t", (i, tags, nums, at(20 * draw(st.integers(0, 9))))))
    cuts = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return cut_into_epochs(events, cuts)


RANDOM_QUERIES = (ZIPPED, TAGS_PER_MINUTE,
                  "SELECT id, x, i, ts FROM t CROSS JOIN unnest(t.nums) WITH ORDINALITY AS u(x, i)",
                  "SELECT window_start, n, count(*) AS c FROM TUMBLE((SELECT ts, unnest(nums) AS n, "
                  "unnest(tags) AS tag FROM t), ts, INTERVAL '1' MINUTE) GROUP BY window_start, n",
                  "SELECT id, tags[2] AS second, nums[0] AS none, cardinality(nums) AS k, "
                  "nums = ARRAY[1, 2] AS same, ts FROM t")


@settings(max_examples=12, deadline=None)
@given(events=array_logs(), close=st.booleans())
def test_reference_spec_oracle_and_executors_agree_on_random_logs(events: ArrivalLog,
                                                                  close: bool) -> None:
    for sql in RANDOM_QUERIES:
        q = query(sql)
        emitted = [(e.epoch, e.row) for e in run_eowc(q, events, close=close)]
        cumulative = [Counter(r for epoch, r in emitted if epoch <= k)
                      for k in range(len(events.epochs) + (1 if close else 0))]
        assert eowc_after_each_epoch(q, events, Convention.RISINGWAVE, close) == cumulative, sql
        assert oracle_eowc(q, events, Convention.RISINGWAVE, close) == Counter(r for _, r in emitted)
        executed = run_in_process(q, events, close=close).emissions
        assert Counter((e.epoch, e.row) for e in executed) == Counter(emitted), sql


# ------------------------------------------------------------------------------ a mutant

def test_an_executor_whose_flat_map_drops_the_last_element_fails(monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """A realistic bug in the in-process executor's own unnest (an off-by-one in its loop over
    the positions): the hand-counted example above catches it (row 1's (c, NULL) is lost)."""
    correct = executor_plan._flat_map

    def off_by_one(node: ProjectSet):  # noqa: ANN202
        made = correct(node)
        return lambda row: made(row)[:-1]
    monkeypatch.setattr(executor_plan, "_flat_map", off_by_one)
    executor_plan.bind_query.cache_clear()  # bound queries are cached: bind it with the bug
    q = query(ZIPPED)
    executed = [(e.epoch, e.row) for e in run_in_process(q, EVENTS, close=True).emissions]
    reference = [(e.epoch, e.row) for e in run_eowc(q, EVENTS, close=True)]
    assert executed != reference
    assert (1, (1, "c", None, at(1))) in reference and (1, (1, "c", None, at(1))) not in executed
    executor_plan.bind_query.cache_clear()


def test_csv_and_table_output_write_an_array_as_its_json_array(tmp_path: Path) -> None:
    """Row 1 of EVENTS: tags ["a", "b", "c"] (CSV doubles the quotes inside its cell)."""
    (tmp_path / "q.sql").write_text(TABLE + "SELECT id, tags, ts FROM t EMIT ON WINDOW CLOSE;\n")
    event = {"table": "t", "row": {"id": 1, "tags": ["a", "b", "c"], "nums": None,
                                   "ts": "2024-01-01 00:00:01"}}
    (tmp_path / "e.jsonl").write_text(json.dumps(event) + "\n")
    args = ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"), "--close"]
    csv = CliRunner().invoke(main, [*args, "--format", "csv"])
    assert csv.stdout == 'id,tags,ts\n1,"[""a"", ""b"", ""c""]",2024-01-01 00:00:01\n'
    table = CliRunner().invoke(main, [*args, "--format", "table"])
    assert '["a", "b", "c"]' in table.stdout


def test_generated_logs_give_arrays_of_zero_to_three_elements() -> None:
    """eowc verify's logs: the k-th array value holds k mod 4 elements from the k-th on."""
    assert _domain(array_of(SqlType.VARCHAR), 5) == [(), ("b",), ("c", "d"), ("d", "e", "a"), ()]


def test_the_events_file_reads_arrays_from_its_lines() -> None:
    lines = ['{"table": "t", "row": {"id": 1, "tags": ["a", null], "nums": null, '
             '"ts": "2024-01-01 00:00:01"}}']
    read = parse_arrival_log(lines, {"t": query("SELECT id, ts FROM t").source})
    assert read.log.events[0].row == (1, ("a", None), None, at(1))
