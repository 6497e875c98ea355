"""executors/nested.py: the state handle of an executor run inside another's shard keeps each
grouping key's value, list and map states apart, inside the host's map states, and fires its
timers in (expiry, key) order once the handed watermark reaches them."""

from __future__ import annotations

from eowc.executors.nested import NestedHandle
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import CLOSED_WATERMARK


def handle() -> tuple[MemoryStore, NestedHandle]:
    store = MemoryStore()
    store.current_key = ()  # the host's one shard
    return store, NestedHandle(memory_handle(store), "upper")


def test_each_key_has_its_own_states_inside_the_hosts_map_states() -> None:
    store, nested = handle()
    value, items, table = nested.value_state("v"), nested.list_state("l"), nested.map_state("m")
    nested.current_key = ("a",)
    value.update(1)
    items.extend([1, 2])
    table.put("x", 10)
    nested.current_key = ("b",)
    assert not value.exists() and value.get() is None and list(items.get()) == []
    assert not table.exists() and not table.contains("x")
    value.update(2)
    items.extend([3])
    table.put("y", 20)
    table.put("z", 30)
    assert sorted(table.keys()) == ["y", "z"]
    nested.current_key = ("a",)
    assert value.get() == 1 and list(items.get()) == [1, 2]
    assert list(table.keys()) == ["x"] and table.get("x") == 10
    table.clear()
    value.clear()
    assert not table.exists() and not value.exists()
    nested.current_key = ("b",)
    assert value.get() == 2 and sorted(table.keys()) == ["y", "z"]
    # everything lives in the host's map states, named by the prefix
    assert {name for name, _ in store.maps} == {"upper.v", "upper.l", "upper.m"}


def test_timers_are_due_in_expiry_then_key_order_once_the_watermark_reaches_them() -> None:
    _, nested = handle()
    for key, expiry in ((("b",), 5), (("a",), 5), (("a",), 9), (("c",), 3)):
        nested.current_key = key
        nested.register_timer(expiry)
    nested.current_key = ("a",)
    assert list(nested.timers()) == [5, 9]
    assert nested.due_timers(4 * MICROS_PER_MILLI) == [(3, ("c",))]
    assert nested.due_timers(5 * MICROS_PER_MILLI) == [(3, ("c",)), (5, ("a",)), (5, ("b",))]
    nested.delete_timer(9)
    assert nested.due_timers(CLOSED_WATERMARK) == [(3, ("c",)), (5, ("a",)), (5, ("b",))]
