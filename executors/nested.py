"""Executors run inside another executor's shard: the stateful operators of a query with a
join, below it (seed 004's window aggregates that a window join reads) or above it (a window
aggregate, OVER window or TopN of the joined rows).

A join with an operator below or above it has one shard (:mod:`eowc.executors.composed`: only
a join alone is keyed by its join key), which knows each source's watermark and the watermark
derived for the join's output. The operators below and above the
join therefore run in that shard, each as the executor it would be on its own (EowcGroupAgg,
SortAgg, EowcOverWindow, ...), against a :class:`NestedHandle`: its own grouping keys, states
and event-time timers, kept in the host shard's map states, and the watermark the host hands
it (the source's for an operator below the join, the derived one above it). Nothing about
triggers is restated here: the nested executor is the same object that runs a query of one
source.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eowc.executors.processors import Arrival, EowcProcessor, Output
from eowc.executors.state import ListState, MapState, StateHandle, StateSchema, ValueState
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.rules.triggers import Watermark


class NestedHandle:
    """A :class:`~eowc.executors.state.StateHandle` inside a host shard: each state named ``name``
    is the host's map state ``prefix.name``, keyed by the nested executor's current grouping
    key (``current_key``); timers are entries ``(expiry_ms, key)`` of the map
    ``prefix.timers``, fired by :meth:`NestedExecutor.advance`."""

    def __init__(self, host: StateHandle, prefix: str) -> None:
        self.host, self.prefix = host, prefix
        self.current_key: Row = ()
        self.timer_table = host.map_state(f"{prefix}.timers")

    # A declared schema is not applied: the values are entries of the host's undeclared map.
    def value_state(self, name: str, schema: StateSchema | None = None) -> ValueState:
        return _NestedValue(self, self.host.map_state(f"{self.prefix}.{name}"))

    def list_state(self, name: str, schema: StateSchema | None = None) -> ListState:
        return _NestedList(self, self.host.map_state(f"{self.prefix}.{name}"))

    def map_state(self, name: str, key_schema: StateSchema | None = None,
                  value_schema: StateSchema | None = None) -> MapState:
        return _NestedMap(self, self.host.map_state(f"{self.prefix}.{name}"))

    def register_timer(self, expiry_ms: int) -> None:
        self.timer_table.put((expiry_ms, self.current_key), True)

    def delete_timer(self, expiry_ms: int) -> None:
        self.timer_table.remove((expiry_ms, self.current_key))

    def timers(self) -> Iterator[int]:
        timers = self.timer_table.keys()
        return iter(sorted(e for e, k in timers if k == self.current_key))

    def due_timers(self, watermark: Watermark) -> list[tuple[int, Row]]:
        """The timers with ``expiry <= watermark`` (microseconds), in (expiry, key) order."""
        timers = self.timer_table.keys()
        due = [t for t in timers if t[0] * MICROS_PER_MILLI <= watermark]
        return sorted(due, key=lambda t: (t[0], row_sort_key(t[1])))


class _Nested:
    def __init__(self, owner: NestedHandle, table: MapState) -> None:
        self.owner, self.table = owner, table

    @property
    def slot(self) -> Row:
        return self.owner.current_key


class _NestedValue(_Nested):
    def exists(self) -> bool:
        return self.table.contains(self.slot)

    def get(self) -> Any:
        return self.table.get(self.slot)

    def update(self, value: Any) -> None:
        self.table.put(self.slot, value)

    def clear(self) -> None:
        self.table.remove(self.slot)


class _NestedList(_NestedValue):
    def get(self) -> Iterator[Any]:  # type: ignore[override]
        return iter(self.table.get(self.slot) or [])

    def extend(self, values: list[Any]) -> None:
        self.table.put(self.slot, [*(self.table.get(self.slot) or []), *values])


class _NestedMap(_Nested):
    def exists(self) -> bool:
        return any(True for _ in self.keys())

    def contains(self, key: Any) -> bool:
        return self.table.contains((self.slot, key))

    def get(self, key: Any) -> Any:
        return self.table.get((self.slot, key))

    def put(self, key: Any, value: Any) -> None:
        self.table.put((self.slot, key), value)

    def remove(self, key: Any) -> None:
        self.table.remove((self.slot, key))

    def keys(self) -> Iterator[Any]:
        slot, entries = self.slot, self.table.keys()
        return iter([k for s, k in entries if s == slot])

    def clear(self) -> None:
        for key in list(self.keys()):
            self.remove(key)


class NestedExecutor:
    """An executor of one part of a query, run inside a host shard (module documentation):
    rows go to it grouped by its own key, under the watermark the host hands it, and
    :meth:`advance` fires its timers as that watermark moves, as Spark would."""

    def __init__(self, processor: EowcProcessor, prefix: str) -> None:
        self.processor, self.prefix = processor, prefix

    def init(self, host: StateHandle) -> None:
        self.handle = NestedHandle(host, self.prefix)
        self.processor.init(self.handle)

    def rows(self, arrivals: list[Arrival], watermark: Watermark) -> list[Output]:
        """Hand ``arrivals`` (rows after its stateless part) to the executor, key by key, under
        ``watermark`` (the watermark before the batch)."""
        by_key: dict[Row, list[Arrival]] = {}
        for arrival in arrivals:
            by_key.setdefault(self.processor.key_of(arrival.row), []).append(arrival)
        outputs: list[Output] = []
        for key in sorted(by_key, key=row_sort_key):
            self.handle.current_key = key
            outputs += self.processor.handle_rows(key, by_key[key], watermark)
        return outputs

    def advance(self, watermark: Watermark) -> list[Output]:
        """Fire every timer that ``watermark`` (the watermark after the batch; +infinity at
        the end of the input) has reached, in (expiry, key) order, until none is due."""
        outputs: list[Output] = []
        while due := self.handle.due_timers(watermark):
            for expiry, key in due:
                if not self.handle.timer_table.contains((expiry, key)):
                    continue  # deleted by the key's earlier timer
                self.handle.timer_table.remove((expiry, key))
                self.handle.current_key = key
                outputs += self.processor.handle_timer(key, expiry, watermark)
        return outputs
