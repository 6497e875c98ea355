"""The keyed-state interface every EOWC executor is written against.

It is the shape of Spark's ``transformWithStateInPandas``: per grouping key, named value, list
and map states, event-time timers in milliseconds that fire once ``expiry <= watermark``, and
the current watermark. An executor's logic is written once against :class:`StateHandle`; the
in-process driver (:mod:`eowc.executors.driver`) implements it with dictionaries, the Spark adapter
with Spark's own state store (typed columns, :mod:`eowc.executors.spark.typed_state`).

Values are the reference's plain values (None, bool, int, float, str, ``Decimal``) and tuples,
lists and dicts of them. A state may declare a :class:`StateSchema`: its values are then rows
of typed columns, which the Spark adapter stores as columns of those types (readable by Spark's
state data source) and :class:`MemoryStore` checks.
"""

from __future__ import annotations

import heapq
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from eowc.semantics.ir.values import ArrayType, SqlType, ValueType, row_sort_key


class StateSchemaError(TypeError):
    """A value that does not fit the schema its state declared."""


#: The Python class of each declared column type's non-NULL values (times in microseconds).
_PYTHON_CLASS: dict[SqlType, type] = {
    SqlType.BIGINT: int, SqlType.DOUBLE: float, SqlType.VARCHAR: str, SqlType.BOOLEAN: bool,
    SqlType.DECIMAL: Decimal, SqlType.DATE: int, SqlType.TIMESTAMP: int,
    SqlType.TIMESTAMPTZ: int, SqlType.TIMESTAMP_LTZ: int}


@dataclass(frozen=True)
class StateSchema:
    """The declared shape of a state's values: named columns of the reference's value types
    (each cell NULL or a value of its type). With ``row``, a value is a tuple of one cell per
    column; without, the state has one column and a value is that cell alone."""

    columns: tuple[tuple[str, ValueType], ...]
    row: bool = True

    @classmethod
    def single(cls, name: str, value_type: ValueType) -> StateSchema:
        """The schema of a state whose values are single cells of ``value_type``."""
        return cls(((name, value_type),), row=False)

    def check(self, value: Any) -> None:
        """:class:`StateSchemaError` unless ``value`` fits the schema."""
        cells = value if self.row else (value,)
        if not isinstance(cells, tuple) or len(cells) != len(self.columns):
            raise StateSchemaError(f"{value!r} is not a row of {len(self.columns)} columns")
        for cell, (name, value_type) in zip(cells, self.columns, strict=True):
            if not _fits(cell, value_type):
                raise StateSchemaError(f"{cell!r} is not a {value_type.value} (state column {name})")


def _fits(cell: Any, value_type: ValueType) -> bool:
    if cell is None:
        return True
    if isinstance(value_type, ArrayType):
        return isinstance(cell, tuple) and all(_fits(c, value_type.element) for c in cell)
    wanted = _PYTHON_CLASS.get(value_type)
    return wanted is not None and type(cell) is wanted


class ValueState(Protocol):
    """One value per grouping key."""

    def exists(self) -> bool: ...
    def get(self) -> Any: ...
    def update(self, value: Any) -> None: ...
    def clear(self) -> None: ...


class ListState(Protocol):
    """An append-only list per grouping key."""

    def exists(self) -> bool: ...
    def get(self) -> Iterator[Any]: ...
    def extend(self, values: list[Any]) -> None: ...
    def clear(self) -> None: ...


class MapState(Protocol):
    """A map per grouping key. Iteration order is unspecified (as in Spark's RocksDB store)."""

    def exists(self) -> bool: ...
    def contains(self, key: Any) -> bool: ...
    def get(self, key: Any) -> Any: ...
    def put(self, key: Any, value: Any) -> None: ...
    def remove(self, key: Any) -> None: ...
    def keys(self) -> Iterator[Any]: ...
    def clear(self) -> None: ...


class StateHandle(Protocol):
    """States and timers of the grouping key being processed. A state may declare the schema
    of its values (a list's elements; a map's keys and values): see :class:`StateSchema`."""

    def value_state(self, name: str, schema: StateSchema | None = None) -> ValueState: ...
    def list_state(self, name: str, schema: StateSchema | None = None) -> ListState: ...
    def map_state(self, name: str, key_schema: StateSchema | None = None,
                  value_schema: StateSchema | None = None) -> MapState: ...
    def register_timer(self, expiry_ms: int) -> None: ...
    def delete_timer(self, expiry_ms: int) -> None: ...
    def timers(self) -> Iterator[int]: ...


# ------------------------------------------------------------------- in-memory implementation

class MemoryStore:
    """Every key's states and timers in dictionaries: the in-process driver's state store.

    ``current_key`` selects the grouping key the states and timers refer to, as Spark does
    before it calls the processor for a key.
    """

    def __init__(self) -> None:
        self.current_key: Any = None
        self.values: dict[tuple[str, Any], Any] = {}
        self.lists: dict[tuple[str, Any], list[Any]] = {}
        self.maps: dict[tuple[str, Any], dict[Any, Any]] = {}
        self.timer_set: set[tuple[int, Any]] = set()
        #: The registered timers ordered by (expiry, key); deleted ones are skipped when popped.
        self._timer_heap: list[tuple[int, Any, Any]] = []

    def register_timer(self, expiry_ms: int) -> None:
        timer = (expiry_ms, self.current_key)
        if timer not in self.timer_set:
            self.timer_set.add(timer)
            heapq.heappush(self._timer_heap, (expiry_ms, row_sort_key(self.current_key),
                                              self.current_key))

    def pop_due_timer(self, watermark_ms: int | None) -> tuple[int, Any] | None:
        """Remove and return the first timer in (expiry, key) order with ``expiry <=
        watermark_ms`` (any timer when None), or None when no timer is due."""
        heap = self._timer_heap
        while heap and (watermark_ms is None or heap[0][0] <= watermark_ms):
            expiry, _, key = heapq.heappop(heap)
            if (expiry, key) in self.timer_set:
                self.timer_set.discard((expiry, key))
                return expiry, key
        return None

    def size(self) -> int:
        """Rows in state: one per value, list element and map entry (Spark's numRowsTotal)."""
        return (len(self.values) + sum(len(v) for v in self.lists.values())
                + sum(len(m) for m in self.maps.values()))

    def size_in_bytes(self) -> int:
        """The bytes the state would take pickled: a measure of its size, which a state row
        (one value holding a partition's rows) does not show (Spark's store holds typed
        columns instead, of a similar size: docs/state.md)."""
        return len(pickle.dumps((self.values, self.lists, self.maps, self.timer_set), protocol=5))


class _MemoryHandle:
    """:class:`StateHandle` over a :class:`MemoryStore`."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def value_state(self, name: str, schema: StateSchema | None = None) -> ValueState:
        return _MemoryValue(self.store, name, schema)

    def list_state(self, name: str, schema: StateSchema | None = None) -> ListState:
        return _MemoryList(self.store, name, schema)

    def map_state(self, name: str, key_schema: StateSchema | None = None,
                  value_schema: StateSchema | None = None) -> MapState:
        return _MemoryMap(self.store, name, value_schema, key_schema)

    def register_timer(self, expiry_ms: int) -> None:
        self.store.register_timer(expiry_ms)

    def delete_timer(self, expiry_ms: int) -> None:
        self.store.timer_set.discard((expiry_ms, self.store.current_key))

    def timers(self) -> Iterator[int]:
        key = self.store.current_key
        return iter(sorted(e for e, k in self.store.timer_set if k == key))


def memory_handle(store: MemoryStore) -> StateHandle:
    return _MemoryHandle(store)


class _Scoped:
    """A state of a :class:`MemoryStore`; values (and map keys) are checked against the
    declared schemas."""

    def __init__(self, store: MemoryStore, name: str, schema: StateSchema | None = None,
                 key_schema: StateSchema | None = None) -> None:
        self.store, self.name = store, name
        self.schema, self.key_schema = schema, key_schema

    def checked(self, value: Any, schema: StateSchema | None) -> Any:
        if schema is not None:
            schema.check(value)
        return value

    @property
    def slot(self) -> tuple[str, Any]:
        return (self.name, self.store.current_key)


class _MemoryValue(_Scoped):
    def exists(self) -> bool:
        return self.slot in self.store.values

    def get(self) -> Any:
        return self.store.values.get(self.slot)

    def update(self, value: Any) -> None:
        self.store.values[self.slot] = self.checked(value, self.schema)

    def clear(self) -> None:
        self.store.values.pop(self.slot, None)


class _MemoryList(_Scoped):
    def exists(self) -> bool:
        return self.slot in self.store.lists

    def get(self) -> Iterator[Any]:
        return iter(list(self.store.lists.get(self.slot, [])))

    def extend(self, values: list[Any]) -> None:
        self.store.lists.setdefault(self.slot, []).extend(
            [self.checked(value, self.schema) for value in values])

    def clear(self) -> None:
        self.store.lists.pop(self.slot, None)


class _MemoryMap(_Scoped):
    def exists(self) -> bool:
        return bool(self.store.maps.get(self.slot))

    def contains(self, key: Any) -> bool:
        return key in self.store.maps.get(self.slot, {})

    def get(self, key: Any) -> Any:
        return self.store.maps.get(self.slot, {}).get(key)

    def put(self, key: Any, value: Any) -> None:
        self.store.maps.setdefault(self.slot, {})[self.checked(key, self.key_schema)] = \
            self.checked(value, self.schema)

    def remove(self, key: Any) -> None:
        entries = self.store.maps.get(self.slot)
        if entries is not None:
            entries.pop(key, None)
            if not entries:
                del self.store.maps[self.slot]

    def keys(self) -> Iterator[Any]:
        # Unspecified order, like RocksDB's: reversed insertion order catches code that
        # relies on the order of insertion.
        return iter(list(reversed(self.store.maps.get(self.slot, {}))))

    def clear(self) -> None:
        self.store.maps.pop(self.slot, None)
