"""Typed state (eowc.executors.spark.typed_state) without Spark: the tape gives back exactly the
value it was given (types included: ``1``, ``1.0``, ``True`` and ``Decimal('1.0')`` stay apart),
a grouping key's text is canonical and gives back the key, a damaged tape or key is refused with
one line, a declared schema's values are checked, and every executor of the in-process suite,
its state and keys passed through the codecs on every call, gives the reference's output."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eowc.executors.driver as driver
from eowc.executors.count_window import CountRows
from eowc.executors.driver import run_in_process
from eowc.executors.ordering import Reversed
from eowc.executors.over_window import OverRows
from eowc.executors.protocol import Arrival
from eowc.executors.spark.typed_state import (
    TAPE_SCHEMA,
    SparkStateHandle,
    StateCodec,
    StateFormatError,
    _compact_json,
    _key_tree,
    decode_tape,
    encode_tape,
    tape_row,
    tape_value,
    value_of_text,
    value_text,
)
from eowc.executors.spark.workdir import relocate_checkpoint
from eowc.executors.state import MemoryStore, StateSchema, StateSchemaError, memory_handle
from eowc.executors.top_n import TopRows
from eowc.semantics.ir.values import SqlType, array_of
from eowc.semantics.ir.windows import Window
from eowc.semantics.rules.triggers import Convention
from tests.strategies import MILLISECOND_FRACTIONS, arrival_logs, script
from tests.test_executors_in_process import QUERIES, reference

LEAVES = (st.none() | st.booleans() | st.integers() | st.integers(-(1 << 70), 1 << 70)
          | st.floats(allow_nan=False) | st.text(max_size=5)
          | st.decimals(allow_nan=False, allow_infinity=False, places=3))
KEY_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(LEAVES, lambda inner: (
    st.lists(inner, max_size=4).map(tuple) | st.lists(inner, max_size=4)
    | st.dictionaries(LEAVES, inner, max_size=4)
    | st.builds(Window, st.integers(), st.integers())), max_leaves=30)


def typed(value: Any) -> Any:
    """``value`` with every node's type beside it: equal only if equal and of equal types."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(v) for v in value])
    return (type(value).__name__, str(value))


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_a_tape_gives_back_its_value(value: Any) -> None:
    tape = encode_tape(value)
    assert typed(decode_tape(tape)) == typed(value)
    row = tape_row(value)  # what Spark keeps: four texts
    assert len(row) == len(TAPE_SCHEMA.fields) and all(type(cell) is str for cell in row)
    assert typed(tape_value(row)) == typed(value)


def test_a_tape_row_keeps_its_leaves_as_json_arrays() -> None:
    """The example of docs/state.md, and the doubles JSON has no standard text for."""
    assert tape_row({(1,): [2, 0.5]}) == ("1DTiLid", "[1,1,1,2,2]", "[0.5]", "[]")
    row = tape_row([float("inf"), -0.0, 1e300, "é"])
    assert row[2] == "[Infinity,-0.0,1e+300]" and row[3] == '["é"]'
    assert repr(tape_value(row)) == "[inf, -0.0, 1e+300, 'é']"


COLUMN_LEAVES = {"i": st.integers(-(1 << 63), (1 << 63) - 1), "d": st.floats(),
                 "s": st.text(max_size=5)}
#: The shape of a table's rows: a leaf kind, or a tuple or list of shapes.
SHAPES = st.recursive(st.sampled_from(list(COLUMN_LEAVES)), lambda inner: st.tuples(
    st.sampled_from("TL"), st.lists(inner, min_size=1, max_size=3)), max_leaves=6)


def rows_of(shape: Any, leaves: dict[str, st.SearchStrategy[Any]] = COLUMN_LEAVES
            ) -> st.SearchStrategy[Any]:
    if isinstance(shape, str):
        return leaves[shape]
    kind, children = shape
    made = st.tuples(*(rows_of(child, leaves) for child in children))
    return made if kind == "T" else made.map(list)


@settings(max_examples=300, deadline=None)
@given(SHAPES.flatmap(lambda shape: st.lists(rows_of(shape), min_size=4, max_size=30)),
       VALUES, VALUES)
def test_a_list_of_rows_of_one_shape_is_a_table_that_gives_back_its_value(
        rows: list, before: Any, after: Any) -> None:
    """A sort buffer's run (``((bound, n), row)`` pairs) and the like: kept column by column
    (kind ``R``), the shape once, and read back as the same values, types included, wherever
    it is in the value."""
    kinds, longs, doubles, texts = encode_tape(rows)
    assert kinds.startswith("1R") and longs[0] == len(rows)
    assert typed(tape_value(tape_row(rows))) == typed(rows)
    around = {"before": before, "rows": rows, "after": [after, rows]}
    assert typed(tape_value(tape_row(around))) == typed(around)


@settings(max_examples=300, deadline=None)
@given(st.tuples(SHAPES.filter(lambda shape: "L" not in str(shape)), SHAPES).flatmap(
    lambda shapes: st.dictionaries(rows_of(shapes[0], COLUMN_LEAVES | {"d": st.floats(allow_nan=False)}),
                                   rows_of(shapes[1]), min_size=4, max_size=30)), VALUES)
def test_a_dict_of_keys_and_values_of_one_shape_each_is_a_table(entries: dict, other: Any) -> None:
    """A group aggregate's groups (group -> aggregate states) and the like: its keys and its
    values kept as two tables (kind ``M``), read back as the same dict, order included. (Keys
    without NaN: two NaN keys of a dict come back as one, whichever way the dict is kept.)"""
    assert encode_tape(entries)[0].startswith("1M")
    assert typed(tape_value(tape_row(entries))) == typed(entries)
    assert typed(list(tape_value(tape_row(entries)))) == typed(list(entries))
    around = [other, entries, other]
    assert typed(tape_value(tape_row(around))) == typed(around)


@settings(max_examples=300, deadline=None)
@given(SHAPES.filter(lambda shape: "L" not in str(shape)).flatmap(
           lambda shape: st.lists(rows_of(shape, COLUMN_LEAVES | {"d": st.floats(allow_nan=False)}),
                                  min_size=4, max_size=30, unique=True)),
       st.data())
def test_a_dict_of_keys_of_one_shape_and_any_values_keeps_its_keys_as_a_table(
        keys: list, data: st.DataObject) -> None:
    """A deduplication's partitions (partition -> None once sealed, or its open rows) and the
    like: the keys kept as a table (kind ``K``), the values walked, read back as the same dict,
    order and types included. The first value is a NULL, so the values have no one shape."""
    values = [None, *data.draw(st.lists(VALUES, min_size=len(keys) - 1, max_size=len(keys) - 1))]
    entries = dict(zip(keys, values, strict=True))
    assert encode_tape(entries)[0].startswith("1K")
    assert typed(tape_value(tape_row(entries))) == typed(entries)
    assert typed(list(tape_value(tape_row(entries)))) == typed(list(entries))


def test_a_deduplication_s_partitions_keep_their_keys_as_one_column() -> None:
    open_rows = TopRows(rows=[(500, 7)], keys=[((500,), 7)], ranks=[1])
    partitions = {(3,): None, (5,): None, (7,): open_rows, (9,): None}
    assert encode_tape(partitions) == (
        "1KTinnNTLTiiLTTiiLiin", [4, 1, 3, 5, 7, 9, 4, 1, 2, 500, 7, 1, 2, 1, 500, 7, 1, 1, 0],
        [], ["TopRows"])
    assert tape_value(tape_row(partitions)) == partitions


@settings(max_examples=300, deadline=None)
@given(SHAPES.flatmap(lambda shape: st.lists(st.lists(rows_of(shape), max_size=5), min_size=2,
                                             max_size=12)).filter(
           lambda lists: sum(map(len, lists)) >= 4 and len(set(map(len, lists))) > 1),
       VALUES)
def test_a_list_of_lists_of_rows_of_one_shape_keeps_its_rows_as_one_table(
        lists: list, other: Any) -> None:
    """A partition's open sessions (each a list of rows, of different lengths) and the like:
    the lengths, then the rows of all the lists as one table (kind ``J``), read back as the
    same lists, empty ones and types included, wherever it is in the value."""
    kinds, longs, _, _ = encode_tape(lists)
    assert kinds.startswith("1J") and longs[:1 + len(lists)] == [len(lists), *map(len, lists)]
    assert typed(tape_value(tape_row(lists))) == typed(lists)
    around = {"before": other, "sessions": lists, "after": [other, lists]}
    assert typed(tape_value(tape_row(around))) == typed(around)


def test_a_partition_s_open_sessions_keep_their_rows_as_one_table() -> None:
    """Derived by hand: a dict of one partition (walked: fewer than four entries) whose value is
    its three open sessions of 2, 1 and 3 rows ``(auction, price, ts)``: their lengths, the
    rows' shape (a tuple of three integers), then each column of the six rows."""
    sessions = [[(7, 1, 10), (7, 2, 11)], [(7, 3, 500)], [(7, 4, 900), (7, 5, 901), (7, 6, 902)]]
    assert encode_tape({(7,): sessions}) == (
        "1DTiJTiii", [1, 1, 7, 3, 2, 1, 3, 3, 7, 7, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6,
                      10, 11, 500, 900, 901, 902], [], [])
    assert tape_value(tape_row({(7,): sessions})) == {(7,): sessions}


def test_a_table_keeps_each_column_together() -> None:
    run = [((10, 1), (7, "a")), ((10, 2), (8, "b")), ((20, 3), (7, "c")), ((30, 4), (9, "d"))]
    assert encode_tape(run) == ("1RTTiiTis", [4, 2, 2, 2, 10, 10, 20, 30, 1, 2, 3, 4, 7, 8, 7, 9],
                                [], ["a", "b", "c", "d"])


@pytest.mark.parametrize("rows", [
    [(1, 2)] * 3,                                  # too short to be worth a table
    [(1, 2), (1, 2), (1, 2), (1, None)],           # a NULL in a column
    [(1, 2), (1, 2), (1, 2), (1, 2.0)],            # a column of two types
    [(1, 2), (1, 2), (1, 2), (1, 1 << 64)],        # an integer beyond 64 bits
    [(1, 2), (1, 2), (1, 2), (1, 2, 3)],           # rows of two lengths
    [(1, True), (1, True), (1, False), (1, True)], # booleans
    [(), (), (), ()],                              # empty rows
    [Window(1, 2)] * 4,                            # records
])
def test_a_list_not_of_one_shape_is_walked_and_gives_back_its_value(rows: list) -> None:
    kinds = encode_tape(rows)[0]
    assert "R" not in kinds
    assert typed(tape_value(tape_row(rows))) == typed(rows)


@pytest.mark.parametrize(("column", "text"), [
    (1, "[1, 2"), (1, "[1.5]"), (1, '["1"]'), (1, "{}"), (1, "[true]"), (2, "[1]"), (3, "[1]"),
    (2, "not json")])
def test_a_tape_row_whose_leaves_are_not_their_type_is_refused(column: int, text: str) -> None:
    row = list(tape_row((1, 2.5, "a")))
    row[column] = text
    with pytest.raises(StateFormatError, match="a damaged state value: its (longs|doubles|texts)"):
        tape_value(tuple(row))


class RecordedValueState:
    """Spark's value state of one key as rows (``get``, ``update``, ``clear``, ``exists``),
    counting the reads that reach it."""

    def __init__(self) -> None:
        self.row: Any = None
        self.reads = 0

    def get(self) -> Any:
        self.reads += 1
        return self.row

    def exists(self) -> bool:
        self.reads += 1
        return self.row is not None

    def update(self, row: Any) -> None:
        self.row = row

    def clear(self) -> None:
        self.row = None


class RecordedHandle:
    def __init__(self) -> None:
        self.states: dict[str, RecordedValueState] = {}

    def getValueState(self, name: str, schema: Any) -> RecordedValueState:  # noqa: N802 - Spark's
        return self.states.setdefault(name, RecordedValueState())


def test_a_value_written_in_a_task_is_read_back_as_written_without_spark() -> None:
    spark_side = RecordedHandle()
    handle = SparkStateHandle(spark_side)
    state, recorded = handle.value_state("groups"), spark_side.states["groups"]
    recorded.row = tape_row({"kept": 1})  # from an earlier batch
    handle.key = ("[3]",)
    assert state.get() == {"kept": 1} and recorded.reads == 1  # not written yet: read from Spark
    written = {"kept": 2}
    state.update(written)
    assert tape_value(recorded.row) == written  # written through to Spark
    assert state.get() is written and state.exists() and recorded.reads == 1
    state.clear()
    assert recorded.row is None and state.get() is None and not state.exists()
    assert recorded.reads == 1
    handle.key = ("[4]",)  # another key: nothing written for it in this task
    assert state.get() is None and recorded.reads == 2
    handle.key = None  # unknown key: always read from Spark
    assert state.get() is None and recorded.reads == 3


@settings(max_examples=300, deadline=None)
@given(st.lists(KEY_LEAVES | st.builds(Window, st.integers(), st.integers())
                | st.lists(KEY_LEAVES, max_size=3).map(tuple)
                | st.decimals(allow_nan=False, allow_infinity=False, places=2), max_size=4).map(tuple))
def test_a_key_text_is_canonical_and_gives_back_the_key(key: tuple) -> None:
    text = value_text(key)
    again = value_of_text(text)
    assert typed(again) == typed(key)
    assert value_text(again) == text  # equal keys (here: the decoded copy) give equal texts


def test_named_tuples_of_the_reference_are_kept() -> None:
    value = {(Window(0, 10),): [Arrival(1, 1, 5, (1, "a"), None)]}
    assert decode_tape(encode_tape(value)) == value
    assert type(next(iter(decode_tape(encode_tape(value))))[0]) is Window
    assert value_of_text(value_text((Window(0, 10),))) == (Window(0, 10),)
    assert value_text((Window(0, 10_000_000), "a")) == '[{"Window":[0,10000000]},"a"]'


class Foreign(tuple):
    pass


@pytest.mark.parametrize("value", [object(), b"bytes", Foreign((1,)), 1j])
def test_anything_else_cannot_be_stored(value: Any) -> None:
    with pytest.raises(TypeError, match="cannot be kept in state"):
        encode_tape([value])
    with pytest.raises(TypeError, match="cannot be a grouping key"):
        value_text((value,))


def test_the_executors_records_and_sets_are_kept() -> None:
    rows = [TopRows([(1, "a")], [(Reversed(5), 1)], [1], 1), OverRows(), {1, 2},
            frozenset({"x"}), CountRows([(1,)], [2], 3, 4)]
    again = decode_tape(encode_tape(rows))
    assert again == rows and [type(v) for v in again] == [type(v) for v in rows]
    assert type(again[0].keys[0][0]) is Reversed


DAMAGED = {
    "another format": ("2Ti", [1, 5], [], []),
    "no kinds": ("", [], [], []),
    "unknown kind": ("1Tx", [1], [], []),
    "kinds cut short": ("1T", [3], [], []),
    "a leaf missing": ("1Tii", [2, 5], [], []),
    "leaves left over": ("1i", [1, 2], [], []),
    "a text left over": ("1n", [], [], ["x"]),
    "garbage decimal": ("1m", [], [], ["12abc"]),
    "garbage big int": ("1I", [], [], ["0x12"]),
    "an unknown class": ("1NTii", [2, 1, 2], [], ["Popen"]),
    "a named tuple of a non-tuple": ("1Ni", [7], [], ["Window"]),
    "a huge length": ("1L", [1 << 40], [], []),
    "deep nesting": ("1" + "T" * 5000, [1] * 5000, [], []),
    "a table of no rows": ("1Ri", [0], [], []),
    "a table's shape cut short": ("1RT", [4, 2], [], []),
    "a table's shape of an empty tuple": ("1RT", [4, 0], [], []),
    "a table's shape with a NULL": ("1RTin", [4, 2, 1, 2, 3, 4], [], []),
    "a table's column cut short": ("1RTii", [4, 2, 1, 2, 3, 4, 5, 6, 7], [], []),
    "a table of a huge length": ("1Rd", [1 << 40], [0.5], []),
    "a dict table with a list key": ("1MLii", [4, 1, 1, 2, 3, 4, 5, 6, 7, 8], [], []),
    "a dict table with values cut short": ("1Mii", [4, 1, 2, 3, 4, 5], [], []),
    "a keyed dict of no entries": ("1Ki", [0], [], []),
    "a keyed dict with a list key": ("1KLiinnnn", [4, 1, 1, 2, 3, 4, 5, 6, 7, 8], [], []),
    "a keyed dict with values cut short": ("1Kinnn", [4, 1, 2, 3, 4], [], []),
    "lists of a negative length": ("1Ji", [2, 5, -1, 1, 2, 3, 4], [], []),
    "lists of no rows": ("1Ji", [2, 0, 0], [], []),
    "lists with rows cut short": ("1JTii", [2, 1, 2, 2, 1, 2, 3], [], []),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_tape_is_refused_in_one_line(damage: str) -> None:
    with pytest.raises(StateFormatError) as caught:
        decode_tape(DAMAGED[damage])
    assert "\n" not in str(caught.value)
    print(f"{damage}: {caught.value}")


@pytest.mark.parametrize("text", ['[1', '{"m":"x"}', '[{"Popen":[1]}]', '[{"Window":[1]}]', "\x80\x05"])
def test_a_damaged_key_is_refused(text: str) -> None:
    with pytest.raises(StateFormatError, match="damaged grouping key"):
        value_of_text(text)


# ------------------------------------------------------------------------------ declared schemas

ROW = StateSchema((("n", SqlType.BIGINT), ("x", SqlType.DOUBLE), ("d", SqlType.DECIMAL),
                   ("s", SqlType.VARCHAR), ("b", SqlType.BOOLEAN), ("ts", SqlType.TIMESTAMP),
                   ("a", array_of(SqlType.DECIMAL))))


def test_a_declared_row_has_typed_columns_and_comes_back() -> None:
    codec = StateCodec(ROW)
    assert [f.dataType.simpleString() for f in codec.spark_schema.fields] == [
        "bigint", "double", "string", "string", "boolean", "bigint", "array<string>"]
    value = (1 << 62, 0.5, Decimal("1.10"), "é", True, 1_700_000_000_000_001,
             (Decimal("2.500"), None))
    row = codec.row(value)
    assert row == (1 << 62, 0.5, "1.10", "é", True, 1_700_000_000_000_001, ["2.500", None])
    assert typed(codec.value(row)) == typed(value)
    assert codec.value((None,) * 7) == (None,) * 7
    single = StateCodec(StateSchema.single("expiry_ms", SqlType.BIGINT))
    assert single.row(42) == (42,) and single.value((42,)) == 42


@pytest.mark.parametrize("value", [(1, 0.5), ("1", 0.5, None, None, None, None, None),
                                   (1, 1, None, None, None, None, None),
                                   (True, None, None, None, None, None, None),
                                   (None, None, 1.5, None, None, None, None),
                                   (None, None, None, None, None, None, (1,))])
def test_the_memory_store_refuses_a_value_off_its_schema(value: tuple) -> None:
    store = MemoryStore()
    state = memory_handle(store).value_state("v", ROW)
    with pytest.raises(StateSchemaError):
        state.update(value)
    state.update((None, 1.0, Decimal(1), "", False, 0, ()))
    assert store.size() == 1


# -------------------------------------------------------------------- every executor, taped

class _Taped:
    """A state of the in-process store whose values (and map keys) go through the Spark
    codecs on the way in, as on Spark."""

    def __init__(self, state: Any, codec: StateCodec, keys: StateCodec | None = None) -> None:
        self.state, self.codec, self.key_codec = state, codec, keys

    def __getattr__(self, name: str) -> Any:
        return getattr(self.state, name)

    def through(self, value: Any, codec: StateCodec | None = None) -> Any:
        codec = codec or self.codec
        TAPED.append(1)
        return codec.value(codec.row(value))

    def update(self, value: Any) -> None:
        self.state.update(self.through(value))

    def extend(self, values: list[Any]) -> None:
        self.state.extend([self.through(v) for v in values])

    def put(self, key: Any, value: Any) -> None:
        self.state.put(self.through(key, self.key_codec), self.through(value))


TAPED: list[int] = []


class _TapedHandle:
    def __init__(self, store: MemoryStore) -> None:
        self.inner = memory_handle(store)
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def value_state(self, name: str, schema: StateSchema | None = None) -> Any:
        return _Taped(self.inner.value_state(name, schema), StateCodec(schema))

    def list_state(self, name: str, schema: StateSchema | None = None) -> Any:
        return _Taped(self.inner.list_state(name, schema), StateCodec(schema))

    def map_state(self, name: str, key_schema: StateSchema | None = None,
                  value_schema: StateSchema | None = None) -> Any:
        return _Taped(self.inner.map_state(name, key_schema, value_schema),
                      StateCodec(value_schema), StateCodec(key_schema))

    def register_timer(self, expiry_ms: int) -> None:
        key = self.store.current_key
        assert value_of_text(value_text(key)) == key
        self.inner.register_timer(expiry_ms)


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=15, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS))
def test_every_executor_through_the_codecs_equals_the_reference(name: str, log: Any) -> None:
    """Each value stored goes through its codec (a TypeError for a value the tape cannot
    hold), and the run still gives the reference's rows and late rows."""
    expected, _ = reference(name, Convention.RISINGWAVE, log)
    patch = pytest.MonkeyPatch()
    patch.setattr(driver, "memory_handle", _TapedHandle)
    try:
        TAPED.clear()
        run = run_in_process(script(QUERIES[name]).query, log, Convention.RISINGWAVE, close=True)
    finally:
        patch.undo()
    assert run.emissions == expected
    assert TAPED or not log.events  # a run with rows stores something


def test_an_undecodable_state_in_a_resumed_run_is_the_checkpoint_s_one_line(tmp_path: Any) -> None:
    """A StateFormatError in a Spark worker reaches the driver inside Spark's error text (the
    worker's traceback); the run's error is its own line, naming the checkpoint."""
    from pyspark.errors import PySparkException

    from eowc.executors.spark.workdir import checkpoint_failures
    from eowc.semantics.errors import RunError

    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "state").mkdir(parents=True)
    try:
        decode_tape(DAMAGED["unknown kind"])
    except StateFormatError as error:
        worker = (f"[STREAM_FAILED] Query [id = 1] terminated with exception: Traceback (most "
                  f"recent call last):\n  File \"adapter.py\", line 9\n"
                  f"eowc.executors.spark.typed_state.StateFormatError: {error}\n\tat org.apache")
    with pytest.raises(RunError) as caught, checkpoint_failures(checkpoint):
        raise PySparkException(message=worker)
    assert str(caught.value) == (f"{checkpoint}: the checkpoint is corrupted or unreadable: a "
                                 "damaged state value (kinds '1Tx'): StateFormatError unknown kind "
                                 "'x'; remove the directory to start over")


def test_a_moved_checkpoint_names_its_own_state_schema_files(tmp_path: Path) -> None:
    """Spark's operator metadata names the state schema files by absolute path; relocating a
    moved checkpoint points them into it and drops the metadata's stale checksum."""
    metadata = tmp_path / "chk" / "state" / "0" / "_metadata" / "v2" / "3"
    metadata.parent.mkdir(parents=True)
    metadata.write_text('v2\n{"stateSchemaFilePaths":["file:/elsewhere/run/checkpoint/state/0/'
                        '_stateSchema/default/0_ab"]}', encoding="utf-8")
    metadata.with_name(".3.crc").write_bytes(b"crc")
    assert relocate_checkpoint(tmp_path / "chk") == 1
    assert (f'"file:{(tmp_path / "chk").resolve()}/state/0/_stateSchema/default/0_ab"'
            in metadata.read_text(encoding="utf-8"))
    assert not metadata.with_name(".3.crc").exists()
    assert relocate_checkpoint(tmp_path / "chk") == 0


class Flag(int):
    """An int subclass: not a value of the reference, refused as a key."""


def canonical_tree(value: Any) -> Any:
    """The canonical JSON tree of docs/state.md, written out plainly (every tuple rebuilt as a
    list): the oracle of value_text's short ways."""
    if isinstance(value, Window):
        return {"Window": [canonical_tree(value.start), canonical_tree(value.end)]}
    if type(value) is tuple:
        return [canonical_tree(v) for v in value]
    if type(value) in (int, float, str, bool, type(None)):
        return value
    if type(value) is Decimal:
        return {"m": str(value)}
    if type(value) is list:
        return {"L": [canonical_tree(v) for v in value]}
    if type(value) is dict:
        return {"D": [[canonical_tree(k), canonical_tree(v)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} cannot be a grouping key")


@settings(max_examples=400, deadline=None)
@given(st.lists(VALUES | st.floats() | st.builds(Flag, st.integers(0, 3)), max_size=4).map(tuple))
def test_a_plain_value_takes_the_short_way_to_the_same_text(value: tuple) -> None:
    """value_text writes a tree of tuples and plain leaves (every output row), and the plain
    parts of any other value (an output's order beside its window), without rebuilding them:
    the text is the tree's canonical one whatever the value."""
    try:
        canonical = json.dumps(canonical_tree(value), separators=(",", ":"), ensure_ascii=False)
    except TypeError:
        with pytest.raises(TypeError, match="cannot be a grouping key"):
            value_text(value)
        return
    assert value_text(value) == canonical == _compact_json(_key_tree(value))
