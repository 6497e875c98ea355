"""The executors' state on Spark as typed columns: nothing in a checkpoint is a Python pickle.

Every state variable has a Spark schema of typed columns, so ``spark.read.format("statestore")``
shows it, and reading a checkpoint back can only build the reference's plain values (it never
runs code, whoever wrote the files):

- A state the executor *declares* (``handle.value_state(name, schema)`` with a
  :class:`~eowc.executors.state.StateSchema`) gets one Spark column per declared column
  (:func:`declared_spark_schema`: BIGINT and the times (microseconds) as ``bigint``, DOUBLE as
  ``double``, VARCHAR as ``string``, BOOLEAN as ``boolean``, DATE as ``bigint`` microseconds,
  DECIMAL as ``string`` (its exact digits, scale included), ARRAY as ``array`` of the element).
- Any other state holds each value as a *tape* (:data:`TAPE_SCHEMA`): the value tree in
  preorder as a string of one-letter kinds (:data:`KINDS`) after the format's digit, and the
  leaves in three JSON arrays of one type each (:func:`tape_row`): ``longs`` (64-bit integers,
  and the lengths of containers), ``doubles`` and ``texts`` (strings, and the digits of
  decimals and of integers beyond 64 bits). (JSON text, not Spark arrays: the JVM converts a
  Python row's arrays element by element on every state call, and that was most of the state
  store's time.) A list of rows of one shape (a sort buffer's run), or a dict whose keys and
  whose values have one shape each (a bucket's groups), is a *table*: the shape once, then its
  leaves column by column (kinds ``R`` and ``M``), which the codec reads and writes a column
  at a time instead of a node at a time; a dict whose keys alone have one shape (a bucket's
  partitions) keeps its keys as a table and walks its values (kind ``K``); a list of lists
  whose elements have one shape (a partition's open sessions) keeps their lengths and its
  elements as one table (kind ``J``).
- The executor's grouping key (the ``_key`` column Spark groups by, which the state store keys
  every row by) is a canonical JSON text (:func:`value_text`): equal keys give equal texts.

:data:`STATE_FORMAT` is the format of all three. A checkpoint records it in its work
directory's fingerprint (:mod:`eowc.executors.spark.workdir`), and every tape starts with it: a
checkpoint of another format, or one from before typed state (pickled binary columns, whose
state schema Spark itself refuses to match against these), is refused, and a tape that does not
decode raises :class:`StateFormatError` (one line, reported as a damaged checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields as dataclass_fields
from decimal import Decimal, InvalidOperation
from itertools import accumulate, islice
from operator import itemgetter
from typing import Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessorHandle
from pyspark.sql.types import ArrayType as SparkArray
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from eowc.executors.count_window import CountRows
from eowc.executors.ordering import Reversed
from eowc.executors.over_window import OverRows
from eowc.executors.pattern import PatternRows
from eowc.executors.protocol import Arrival, SourceProgress
from eowc.executors.state import StateSchema
from eowc.executors.top_n import TopRows
from eowc.semantics.ir.values import ArrayType, SqlType, ValueType
from eowc.semantics.ir.windows import Window

#: The format of the state and keys this version writes and reads (see the module's text).
STATE_FORMAT = 1
_FORMAT_MARK = str(STATE_FORMAT)

TAPE_SCHEMA = StructType([StructField("kinds", StringType(), False),
                          StructField("longs", StringType(), False),
                          StructField("doubles", StringType(), False),
                          StructField("texts", StringType(), False)])

#: The kinds of a tape: one letter per node of the value tree, in preorder.
KINDS = {"n": "NULL (None)", "t": "true", "f": "false",
         "i": "an integer of 64 bits (in longs)", "I": "a larger integer (its digits in texts)",
         "d": "a double (in doubles)", "s": "a string (in texts)",
         "m": "a decimal (its digits in texts, scale included)",
         "T": "a tuple of n values (n in longs)", "L": "a list of n values (n in longs)",
         "D": "a dict of n entries (n in longs), each a key then its value",
         "S": "a set of n values (n in longs)", "F": "a frozen set of n values (n in longs)",
         "N": "a record of :data:`RECORDS` (its class's name in texts, then its fields as a "
              "tuple)",
         "R": "a table: a list of n values (n in longs) of one shape, the shape once (its "
              "kinds, leaves of one kind each: i, d or s), then each leaf's n values",
         "M": "a dict of n entries (n in longs) as two tables: its keys' shape, its values' "
              "shape, then each leaf's n values, the keys' first",
         "K": "a dict of n entries (n in longs) whose keys are a table: their shape, each "
              "leaf's n values, then the n values in the keys' order",
         "J": "a list of n lists (n, then each list's length, in longs) whose elements have "
              "one shape: the elements of all the lists, one list after another, as a table "
              "(the shape once, then each leaf's values)"}

#: The leaf kinds of a table's shape, by the Python type of its column's values.
_COLUMN_KINDS = {int: "i", float: "d", str: "s"}
#: The shortest list written as a table (below it the walk is as fast).
_TABLE_ROWS = 4
#: The types of a table's rows.
_TABLE_TYPES = frozenset((tuple, list, *_COLUMN_KINDS))


def _record(cls: type) -> tuple[str, tuple[type, tuple[str, ...]]]:
    """A class's entry of :data:`RECORDS`: its name, the class and its constructor's fields."""
    fields = getattr(cls, "_fields", None) or getattr(cls, "__slots__", None) or tuple(
        f.name for f in dataclass_fields(cls))
    return cls.__name__, (cls, tuple(fields))


#: The records (named tuples, data classes) of the reference and the executors a state may
#: hold, by class name, with the fields a tape keeps, in the order their constructor takes
#: them: decoding builds these and plain values, nothing else.
RECORDS: dict[str, tuple[type, tuple[str, ...]]] = dict(map(_record, (
    Window, Arrival, SourceProgress, CountRows, OverRows, PatternRows, TopRows, Reversed)))

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1

Tape = tuple[str, list[int], list[float], list[str]]
#: A table's shape (:func:`_table_shape`): its kinds, its lengths, and each leaf's column.
Shape = tuple[str, list[int], list[tuple[str, list]]]


class StateFormatError(ValueError):
    """A state row or key this version cannot read: damaged, or of another format."""


def encode_tape(value: Any) -> Tape:
    """``value`` (a tree of the reference's plain values) as a tape row of :data:`TAPE_SCHEMA`;
    a ``TypeError`` for anything else (a class the decoder would not build)."""
    kinds = [_FORMAT_MARK]
    longs: list[int] = []
    doubles: list[float] = []
    texts: list[str] = []
    kind, long, double, text = kinds.append, longs.append, doubles.append, texts.append
    leaves_of = {"i": longs, "d": doubles, "s": texts}

    def walk(v: Any) -> None:
        t = type(v)
        if t is int:
            if _LONG_MIN <= v <= _LONG_MAX:
                kind("i")
                long(v)
            else:
                kind("I")
                text(str(v))
        elif t is tuple:
            kind("T")
            long(len(v))
            items(v)
        elif t is str:
            kind("s")
            text(v)
        elif t is float:
            kind("d")
            double(v)
        elif v is None:
            kind("n")
        elif t is bool:
            kind("t" if v else "f")
        elif t is Decimal:
            kind("m")
            text(str(v))
        elif t is list:
            if len(v) >= _TABLE_ROWS and (shape := shape_of(v)) is not None:
                table("R", len(v), shape)
                return
            if len(v) > 1 and (joined := _joined(v)) is not None and \
                    (shape := shape_of(joined)) is not None:
                table("J", len(v), shape, lengths=map(len, v))
                return
            kind("L")
            long(len(v))
            items(v)
        elif t is dict:
            if len(v) >= _TABLE_ROWS and (keys := shape_of(list(v))) is not None:
                if (values := shape_of(list(v.values()))) is not None:
                    table("M", len(v), keys, values)
                else:
                    table("K", len(v), keys)
                    items(v.values())
                return
            kind("D")
            long(len(v))
            for k, x in v.items():
                walk(k)
                walk(x)
        elif t is set or t is frozenset:
            kind("S" if t is set else "F")
            long(len(v))
            for x in v:
                walk(x)
        elif (record := RECORDS.get(t.__name__)) is not None and record[0] is t:
            kind("N")
            text(t.__name__)
            walk(tuple([getattr(v, name) for name in record[1]]))
        else:
            raise TypeError(f"a {t.__name__} cannot be kept in state (not a value of the reference)")

    def shape_of(part: list) -> Shape | None:
        # The one shape of ``part`` 's values as a table, or None. (Values whose first and
        # last differ in type, or whose first has no table's shape, are refused before any
        # column is built.)
        first = part[0]
        if type(first) is not type(part[-1]) or type(first) not in _TABLE_TYPES or \
                _table_shape([first]) is None:
            return None
        return _table_shape(part)

    def table(table_kind: str, n: int, *shapes: Shape, lengths: Iterable[int] = ()) -> None:
        # A table of kind ``table_kind`` of ``n`` values (``lengths``: of ``n`` lists, their
        # lengths) of each shape: the shapes first, then the columns, shape after shape.
        kind(table_kind)
        long(n)
        longs.extend(lengths)
        for shape, sizes, _ in shapes:
            kinds.append(shape)
            longs.extend(sizes)
        for _, _, columns in shapes:
            for column_kind, column in columns:
                leaves_of[column_kind].extend(column)

    def items(values: Iterable[Any]) -> None:
        # The common leaves inline (a call per leaf is most of the walk's cost).
        for x in values:
            tx = type(x)
            if tx is int and _LONG_MIN <= x <= _LONG_MAX:
                kind("i")
                long(x)
            elif tx is float:
                kind("d")
                double(x)
            elif tx is str:
                kind("s")
                text(x)
            elif x is None:
                kind("n")
            else:
                walk(x)

    walk(value)
    return "".join(kinds), longs, doubles, texts


def _joined(lists: list) -> list | None:
    """The elements of ``lists``, a list of lists, one after another (None for a list of
    anything else, or of fewer than :data:`_TABLE_ROWS` elements in all: not worth a table)."""
    if not all(type(x) is list for x in lists):
        return None
    joined = [e for x in lists for e in x]
    return joined if len(joined) >= _TABLE_ROWS else None


def _table_shape(values: list) -> Shape | None:
    """The shape that every value of ``values`` has, as a table (kind ``R``) keeps it: its
    kinds in preorder, the lengths of its tuples and lists, and each leaf's column (its kind
    and its values in order); None when they have no one shape of tuples, lists and leaves of
    one kind each (the tape then walks them one by one)."""
    kinds: list[str] = []
    lengths: list[int] = []
    columns: list[tuple[str, list]] = []

    def visit(column: list) -> bool:
        types = set(map(type, column))
        if len(types) != 1:
            return False
        (t,) = types
        if t is tuple or t is list:
            sizes = set(map(len, column))
            if len(sizes) != 1 or 0 in sizes:
                return False
            (size,) = sizes
            kinds.append("T" if t is tuple else "L")
            lengths.append(size)
            return all(visit(list(map(itemgetter(i), column))) for i in range(size))
        leaf = _COLUMN_KINDS.get(t)
        if leaf is None or (t is int and (min(column) < _LONG_MIN or max(column) > _LONG_MAX)):
            return False
        kinds.append(leaf)
        columns.append((leaf, column))
        return True

    return ("".join(kinds), lengths, columns) if visit(values) else None


def decode_tape(row: Any) -> Any:
    """The value of a tape row (a tuple or Spark row of :data:`TAPE_SCHEMA`): only plain values
    and :data:`RECORDS` are built. :class:`StateFormatError` for a row of another format or
    one that does not decode exactly (a kind unknown, a leaf missing or left over)."""
    kinds, longs, doubles, texts = row
    if not kinds or kinds[0] != _FORMAT_MARK:
        raise StateFormatError(f"a state value of format {kinds[:1]!r}, not {_FORMAT_MARK!r}: "
                               "written by another version")
    next_kind = iter(kinds).__next__
    next_kind()  # the format's digit
    leaves = {"i": iter(longs), "d": iter(doubles), "s": iter(texts)}
    next_long, next_double, next_text = (leaves[k].__next__ for k in "ids")

    def read() -> Any:
        return read_kind(next_kind())

    def children(count: int | None = None) -> list[Any]:
        # ``count`` values (None: their number is the next long), the common leaves inline (a
        # call per leaf is most of the walk's cost).
        out = []
        add = out.append
        for _ in range(next_long() if count is None else count):
            k = next_kind()
            if k == "i":
                add(next_long())
            elif k == "d":
                add(next_double())
            elif k == "s":
                add(next_text())
            elif k == "n":
                add(None)
            else:
                add(read_kind(k))
        return out

    def table_rows() -> int:
        n = next_long()
        if n < 1:
            raise StateFormatError(f"a table of {n} rows")
        return n

    def shape() -> Any:
        # A table's shape: a leaf's kind, or a tuple's or list's kind and its children's shapes.
        k = next_kind()
        if k == "T" or k == "L":
            size = next_long()
            if size < 1:
                raise StateFormatError(f"a table's shape has a {k} of {size} values")
            return k, [shape() for _ in range(size)]
        if k not in leaves:
            raise StateFormatError(f"a table's shape has kind {k!r}")
        return k

    def table(n: int, node: Any) -> list[Any]:
        # The n values of a table of shape ``node``, built column by column.
        if type(node) is str:
            column = list(islice(leaves[node], n))
            if len(column) != n:
                raise StateFormatError(f"a table of {n} rows has {len(column)} {node} leaves")
            return column
        k, children = node
        rows = zip(*[table(n, child) for child in children], strict=True)
        return list(rows) if k == "T" else list(map(list, rows))

    def read_kind(k: str) -> Any:
        if k == "i":
            return next_long()
        if k == "T":
            return tuple(children())
        if k == "R":
            n = table_rows()
            return table(n, shape())
        if k == "M":
            n = table_rows()
            key_shape, value_shape = shape(), shape()
            return dict(zip(table(n, key_shape), table(n, value_shape), strict=True))
        if k == "K":
            n = table_rows()
            keys = table(n, shape())
            return dict(zip(keys, children(n), strict=True))
        if k == "J":
            n = table_rows()
            lengths = [next_long() for _ in range(n)]
            if min(lengths) < 0 or sum(lengths) < 1:
                raise StateFormatError(f"a table of lists of lengths {lengths[:10]}")
            joined = table(sum(lengths), shape())
            ends = list(accumulate(lengths))
            return [joined[end - length:end] for end, length in zip(ends, lengths, strict=True)]
        if k == "s":
            return next_text()
        if k == "d":
            return next_double()
        if k == "n":
            return None
        if k == "t":
            return True
        if k == "f":
            return False
        if k == "m":
            return Decimal(next_text())
        if k == "L":
            return children()
        if k == "D":
            entries = {}
            for _ in range(next_long()):
                key = read()
                entries[key] = read()
            return entries
        if k == "I":
            return int(next_text())
        if k == "S":
            return {read() for _ in range(next_long())}
        if k == "F":
            return frozenset([read() for _ in range(next_long())])
        if k == "N":
            cls, names = RECORDS[next_text()]
            values = read()
            if type(values) is not tuple or len(values) != len(names):
                raise StateFormatError(f"the fields of a {cls.__name__} are not {values!r:.60}")
            return cls(*values)
        raise StateFormatError(f"unknown kind {k!r}")

    try:
        value = read()
        complete = _exhausted(next_kind, next_long, next_double, next_text)
    except (StopIteration, KeyError, TypeError, ValueError, InvalidOperation,
            RecursionError) as error:
        raise StateFormatError(f"a damaged state value (kinds {kinds[:40]!r}): "
                               f"{type(error).__name__} {error}".rstrip()) from None
    if not complete:
        raise StateFormatError(f"a damaged state value (kinds {kinds[:40]!r}): leaves left over")
    return value


def _exhausted(*nexts: Callable[[], Any]) -> bool:
    for next_leaf in nexts:
        try:
            next_leaf()
        except StopIteration:
            continue
        return False
    return True


_leaves_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: The Python type of each leaf column's elements.
_LEAF_TYPES = (("longs", int), ("doubles", float), ("texts", str))


def tape_row(value: Any) -> tuple[str, str, str, str]:
    """The Spark row of :data:`TAPE_SCHEMA` that keeps ``value``: :func:`encode_tape`'s kinds,
    and its leaves as JSON arrays."""
    kinds, longs, doubles, texts = encode_tape(value)
    return kinds, _leaves_text(longs), _leaves_text(doubles), _leaves_text(texts)


def tape_value(row: Any) -> Any:
    """The value a row of :data:`TAPE_SCHEMA` keeps (:func:`tape_row`);
    :class:`StateFormatError` if a leaf column is not a JSON array of its type."""
    kinds, *texts = row
    leaves = []
    for text, (name, leaf_type) in zip(texts, _LEAF_TYPES, strict=True):
        try:
            leaf = json.loads(text)
        except (TypeError, ValueError) as error:
            raise StateFormatError(f"a damaged state value: its {name} are not JSON "
                                   f"({type(error).__name__} {error})") from None
        if type(leaf) is not list or not set(map(type, leaf)) <= {leaf_type}:
            raise StateFormatError(f"a damaged state value: its {name} are not an array of "
                                   f"{leaf_type.__name__}: {text[:60]!r}")
        leaves.append(leaf)
    return decode_tape((kinds, *leaves))


# ------------------------------------------------------------------------------ grouping keys

#: The types :func:`_key_tree` keeps as they are (exactly these: not a subclass).
_JSON_LEAVES = frozenset((int, float, str, bool, type(None)))


def _key_tree(value: Any) -> Any:
    """``value`` as JSON: a tuple as an array; a decimal, a record, a list and a dict as an
    object of one tag (``m``, the class's name, ``L``, ``D``). A tuple of tuples and
    :data:`_JSON_LEAVES` only (every output row) is kept as it is, since its JSON is already
    that array's: only the tuples around a record or a decimal (an output's order, a window)
    are rebuilt."""
    t = type(value)
    if t is tuple:
        if _is_plain(value):
            return value
        leaves = _JSON_LEAVES
        return [v if type(v) in leaves else _key_tree(v) for v in value]
    if t in _JSON_LEAVES:
        return value
    if t is Decimal:
        return {"m": str(value)}
    if (record := RECORDS.get(t.__name__)) is not None and record[0] is t:
        return {t.__name__: _key_tree(tuple([getattr(value, name) for name in record[1]]))}
    if t is list:
        return {"L": [_key_tree(v) for v in value]}
    if t is dict:
        return {"D": [[_key_tree(k), _key_tree(v)] for k, v in value.items()]}
    raise TypeError(f"a {t.__name__} cannot be a grouping key (not a value of the reference)")


def value_text(value: Any) -> str:
    """A value of the reference or the executors (a row, a key, an output's fields) as
    canonical JSON text: equal values of one query, whose columns have fixed types, give equal
    texts. It is the ``_key`` column Spark groups by, and the ``_out`` column of the executors'
    outputs that the sink keeps."""
    return _json_text(_key_tree(value))


def _is_plain(value: tuple) -> bool:
    """``value`` holds only tuples and :data:`_JSON_LEAVES` (exactly those types, at any depth),
    so that its JSON is the array it is."""
    leaves = _JSON_LEAVES
    for v in value:
        t = type(v)
        if t is tuple:
            if not _is_plain(v):
                return False
        elif t not in leaves:
            return False
    return True


_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _refuse_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_writer() -> Callable[[Any], str]:
    """:data:`_compact_json`, its C encoder made once: ``JSONEncoder.encode`` makes one on every
    call, which was two thirds of the time of an output row's text. (No check for cycles: a
    value is a tree.)"""
    make = json.encoder.c_make_encoder
    if make is None:  # a Python without the _json accelerator
        return _compact_json
    encoder = make(None, _refuse_json, json.encoder.encode_basestring, None, ":", ",",
                   False, False, True)
    return lambda value: "".join(encoder(value, 0))


_json_text = _json_writer()


def _key_value(tree: Any) -> Any:
    if isinstance(tree, list):
        return tuple(_key_value(v) for v in tree)
    if isinstance(tree, dict):
        ((tag, inner),) = tree.items()
        if tag == "m":
            return Decimal(inner)
        if tag == "L":
            return [_key_value(v) for v in inner]
        if tag == "D":
            return {_key_value(k): _key_value(v) for k, v in inner}
        cls, names = RECORDS[tag]
        if len(inner) != len(names):
            raise ValueError(f"{len(inner)} fields for a {tag}")
        return cls(*(_key_value(v) for v in inner))
    return tree


def value_of_text(text: str) -> Any:
    """The value of a :func:`value_text`; :class:`StateFormatError` if it is not one."""
    try:
        return _key_value(json.loads(text))
    except (TypeError, ValueError, KeyError, InvalidOperation, RecursionError) as error:
        raise StateFormatError(f"a damaged grouping key {text[:80]!r}: "
                               f"{type(error).__name__} {error}".rstrip()) from None


# --------------------------------------------------------------------------- declared schemas

def _spark_type(value_type: ValueType) -> DataType:
    if isinstance(value_type, ArrayType):
        return SparkArray(_spark_type(value_type.element))
    if value_type is SqlType.DOUBLE:
        return DoubleType()
    if value_type is SqlType.BOOLEAN:
        return BooleanType()
    if value_type in (SqlType.VARCHAR, SqlType.DECIMAL):
        return StringType()
    if value_type is SqlType.BIGINT or value_type.is_time or value_type is SqlType.DATE:
        return LongType()
    raise TypeError(f"a state column cannot be declared {value_type.value}")


def declared_spark_schema(schema: StateSchema) -> StructType:
    """The Spark columns of a declared state: one per declared column, of its type."""
    return StructType([StructField(name, _spark_type(t)) for name, t in schema.columns])


def _to_spark(value: Any, value_type: ValueType) -> Any:
    if value is None:
        return None
    if isinstance(value_type, ArrayType):
        return [_to_spark(v, value_type.element) for v in value]
    return str(value) if value_type is SqlType.DECIMAL else value


def _from_spark(cell: Any, value_type: ValueType) -> Any:
    if cell is None:
        return None
    if isinstance(value_type, ArrayType):
        return tuple(_from_spark(v, value_type.element) for v in cell)
    return Decimal(cell) if value_type is SqlType.DECIMAL else cell


class StateCodec:
    """How a state's values become Spark rows and back: its declared columns, or a tape."""

    def __init__(self, schema: StateSchema | None) -> None:
        self.schema = schema
        self.spark_schema = TAPE_SCHEMA if schema is None else declared_spark_schema(schema)

    def row(self, value: Any) -> tuple[Any, ...]:
        """The Spark row of ``value``."""
        schema = self.schema
        if schema is None:
            return tape_row(value)
        cells = value if schema.row else (value,)
        return tuple(_to_spark(v, t) for v, (_, t) in zip(cells, schema.columns, strict=True))

    def value(self, row: Any) -> Any:
        """The value of a Spark row (None for no row)."""
        if row is None:
            return None
        schema = self.schema
        if schema is None:
            return tape_value(row)
        cells = tuple(_from_spark(c, t) for c, (_, t) in zip(row, schema.columns, strict=True))
        return cells if schema.row else cells[0]


# ---------------------------------------------------------------------- Spark's state variables

class _Value:
    """A value state. What the task wrote for a key is read back as the object written, as
    from the in-process store (:class:`~eowc.executors.state.MemoryStore`), without a round
    trip to the JVM or a decoding: a key's state changes only in its own task, and a handle
    lives for one task (Spark calls ``init`` per task). A key's value is typically written
    when its rows arrive and read again when its timer fires, later in the same batch."""

    def __init__(self, state: Any, codec: StateCodec, handle: SparkStateHandle) -> None:
        self.state, self.codec, self.handle = state, codec, handle
        #: Each key's value as this task last wrote it (None: cleared).
        self.written: dict[Any, Any] = {}

    def exists(self) -> bool:
        key = self.handle.key
        if key is not None and key in self.written:
            return self.written[key] is not None
        return self.state.exists()

    def get(self) -> Any:
        key = self.handle.key
        if key is not None and key in self.written:
            return self.written[key]
        return self.codec.value(self.state.get())

    def update(self, value: Any) -> None:
        self.state.update(self.codec.row(value))
        self._wrote(value)

    def clear(self) -> None:
        self.state.clear()
        self._wrote(None)

    def _wrote(self, value: Any) -> None:
        if self.handle.key is not None:
            self.written[self.handle.key] = value


class _List:
    def __init__(self, state: Any, codec: StateCodec) -> None:
        self.state, self.codec = state, codec

    def exists(self) -> bool:
        return self.state.exists()

    def get(self) -> Iterator[Any]:
        value = self.codec.value
        return (value(row) for row in self.state.get())

    def extend(self, values: list[Any]) -> None:
        row = self.codec.row
        self.state.appendList([row(value) for value in values])

    def clear(self) -> None:
        self.state.clear()


class _Map:
    def __init__(self, state: Any, keys: StateCodec, values: StateCodec) -> None:
        self.state, self.key_codec, self.codec = state, keys, values

    def exists(self) -> bool:
        return self.state.exists()

    def contains(self, key: Any) -> bool:
        return self.state.containsKey(self.key_codec.row(key))

    def get(self, key: Any) -> Any:
        return self.codec.value(self.state.getValue(self.key_codec.row(key)))

    def put(self, key: Any, value: Any) -> None:
        self.state.updateValue(self.key_codec.row(key), self.codec.row(value))

    def remove(self, key: Any) -> None:
        self.state.removeKey(self.key_codec.row(key))

    def keys(self) -> Iterator[Any]:
        value = self.key_codec.value
        return (value(row) for row in self.state.keys())  # noqa: SIM118 - a Spark MapState

    def clear(self) -> None:
        self.state.clear()


class SparkStateHandle:
    """:class:`eowc.executors.state.StateHandle` over Spark's ``StatefulProcessorHandle``: each
    state variable with the Spark schema of its :class:`StateCodec`. ``key`` is the grouping
    key Spark is calling the processor for (the caller sets it; None: unknown, and value
    states are then always read from Spark)."""

    def __init__(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.key: Any = None

    def value_state(self, name: str, schema: StateSchema | None = None) -> _Value:
        codec = StateCodec(schema)
        return _Value(self.handle.getValueState(name, codec.spark_schema), codec, self)

    def list_state(self, name: str, schema: StateSchema | None = None) -> _List:
        codec = StateCodec(schema)
        return _List(self.handle.getListState(name, codec.spark_schema), codec)

    def map_state(self, name: str, key_schema: StateSchema | None = None,
                  value_schema: StateSchema | None = None) -> _Map:
        keys, values = StateCodec(key_schema), StateCodec(value_schema)
        return _Map(self.handle.getMapState(name, keys.spark_schema, values.spark_schema),
                    keys, values)

    def register_timer(self, expiry_ms: int) -> None:
        self.handle.registerTimer(expiry_ms)

    def delete_timer(self, expiry_ms: int) -> None:
        self.handle.deleteTimer(expiry_ms)

    def timers(self) -> Iterator[int]:
        return iter(self.handle.listTimers())
