"""The interpreter's fast paths equal their definitions.

``AggregateFunction.add_rows`` (many rows folded at once, the interpreter's window aggregate)
gives the state ``add`` gives row after row, for every aggregate function, on BIGINT and DOUBLE
columns with NULLs, from a fresh state and from a state already folded; the SQL values are the
ones computed by hand. ``in_row_order`` sorts as ``row_sort_key`` does, NULLs included."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.ir.expr import Column, ColumnRef
from eowc.semantics.ir.plan import AggCall
from eowc.semantics.ir.values import SqlType, row_sort_key
from eowc.semantics.operators.aggregates import AggregateFunction, aggregate_value, compile_aggregate
from eowc.semantics.operators.logical import in_row_order

SCHEMA = (Column("ts", SqlType.TIMESTAMP), Column("n", SqlType.BIGINT), Column("x", SqlType.DOUBLE))
CALLS = [AggCall("count")] + [AggCall(f, ColumnRef(c), distinct=d) for f in
                              ("count", "sum", "min", "max", "avg") for c in ("n", "x")
                              for d in (False, True)] + \
    [AggCall(f, ColumnRef(c)) for f in ("median", "first_value", "last_value") for c in ("n", "x")]

ints = st.one_of(st.none(), st.integers(-10**12, 10**12))
# values whose sums round differently in another order: (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)
floats = st.one_of(st.none(), st.floats(allow_nan=False, width=64),
                   st.sampled_from([0.0, -0.0, 0.1, 0.2, 0.3, 1.0, 1e16]))
table = st.lists(st.tuples(st.integers(0, 100), ints, floats), max_size=12)


def row_after_row(function: AggregateFunction, state: object, rows: list[tuple]) -> object:
    for row in rows:
        state = function.add(state, row)
    return state


def same(a: object, b: object) -> bool:
    """Equal to the bit (a float's sign of zero included)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c.function}{'_distinct' if c.distinct else ''}"
                         f"_{c.argument.name if c.argument else 'star'}")
@settings(max_examples=60, deadline=None)
@given(first=table, then=table)
def test_add_rows_is_add_row_after_row(call: AggCall, first: list[tuple], then: list[tuple]) -> None:
    function = compile_aggregate(call, SCHEMA, "ts")
    by_rows = row_after_row(function, function.initial(), first)
    at_once = function.add_rows(function.initial(), list(first))
    assert same(function.result(at_once), function.result(by_rows))
    by_rows = row_after_row(function, by_rows, then)
    at_once = function.add_rows(at_once, list(then))
    assert same(function.result(at_once), function.result(by_rows))
    assert same(function.result(at_once), aggregate_value(function, first + then))


def test_hand_computed_values() -> None:
    rows = [(1, 3, None), (2, None, 1.5), (3, 4, -0.0), (4, 3, 2.5)]
    values = {}
    for call in CALLS[:11]:
        f = compile_aggregate(call, SCHEMA, "ts")
        values[(call.function, call.argument.name if call.argument else "*", call.distinct)] = \
            f.result(f.add_rows(f.add_rows(f.initial(), rows[:1]), rows[1:]))
    assert values[("count", "*", False)] == 4
    assert values[("count", "n", False)] == 3 and values[("count", "n", True)] == 2
    assert values[("count", "x", False)] == 3
    assert values[("sum", "n", False)] == 10 and values[("sum", "n", True)] == 7
    assert values[("sum", "x", False)] == 4.0
    f = compile_aggregate(AggCall("sum", ColumnRef("x")), SCHEMA, "ts")
    assert f.result(f.add_rows(f.initial(), [(0, 0, None)])) is None  # no non-NULL value
    assert math.copysign(1, f.result(f.add_rows(f.initial(), [(0, 0, -0.0)]))) == -1
    assert f.result(f.add_rows(f.add_rows(f.initial(), [(0, 0, 0.1)]), [(0, 0, 0.2), (0, 0, 0.3)])) \
        == (0.1 + 0.2) + 0.3  # left to right, as row after row
    avg = compile_aggregate(AggCall("avg", ColumnRef("n")), SCHEMA, "ts")
    assert avg.result(avg.add_rows(avg.add_rows(avg.initial(), rows[:2]), rows[2:])) == 10 / 3


values = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([0.5, -0.0, float("inf")]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(values, values), max_size=15) | st.lists(st.tuples(st.text(max_size=2) | st.none()),
                                                                   max_size=15))
def test_in_row_order_is_row_sort_key_order(keys: list[tuple]) -> None:
    assert in_row_order(keys) == sorted(keys, key=row_sort_key)
    assert in_row_order([(2, None), (1, 5), (1, None), (None, 0)]) == [(None, 0), (1, None), (1, 5),
                                                                       (2, None)]
