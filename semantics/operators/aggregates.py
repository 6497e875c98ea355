"""Aggregate functions: SQL results over a group's rows, incrementally foldable.

Each function is an :class:`AggregateFunction` with ``initial``/``add``/``result``, so the
streaming interpreter folds rows one at a time and the specification folds a whole group
(:func:`aggregate_value`). count, sum, min, max, avg, median and percentile_cont ignore NULL
arguments, and give NULL (0 for count) for a group with no non-NULL argument.
first_value/last_value return the argument of the first/last row by their order key (NULL
keys last, ties broken by primary key then whole row), NULL or not (RESPECT NULLS).
median and percentile_cont keep every value (the SortAgg case of seed 000).

stddev_samp/stddev_pop/var_samp/var_pop fold Welford's running (count, mean, sum of squared
deviations), which loses no precision to cancellation as ``sum(x*x) - sum(x)**2 / n`` does;
they ignore NULLs, are NULL for no value, and the sample statistics are NULL for one value
(both engines). string_agg concatenates the non-NULL values with its separator in its ORDER
BY order, by default in the values' own order: a deterministic order where the engines
promise none (docs/sql/aggregates.md). approx_count_distinct is the exact number of
distinct non-NULL values, which the engines' sketches give at small cardinalities.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import reduce
from math import sqrt
from operator import add as plus
from operator import itemgetter
from typing import Any

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import ColumnRef, Compiled, Evaluator, Row, Schema, compile_expr
from eowc.semantics.ir.plan import STATISTICAL_FUNCTIONS, AggCall, result_type  # result_type re-exported
from eowc.semantics.ir.values import (
    EXACT,
    TIME_TYPES,
    SqlType,
    ValueType,
    decimal_average,
    decimal_sum_shape,
    fit_decimal,
    fit_decimal_shape,
    integer_average,
    row_sort_key,
    value_rules,
)


def percentile_cont(sorted_values: list[Any], fraction: float) -> float | None:
    """Linear interpolation between the closest ranks (PostgreSQL's percentile_cont)."""
    if not sorted_values:
        return None
    position = fraction * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    weight = position - lower
    return float(sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * weight)


RowsFold = Callable[[Any, list[Row]], Any]


StatesMerge = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class AggregateFunction:
    """One aggregate bound to its input schema: a fold from rows to a SQL value. ``add_rows``
    folds several rows at once into a state, the same state as ``add`` row after row (built-in
    loops where a function has them; by default ``add`` row after row).

    ``merge``, where the function has one, is partial aggregation: the state of two disjoint
    sets of rows from their two states, equal to the state of folding all the rows in any
    order (so rows folded apart, e.g. before a shuffle, and merged in any order give exactly
    the one-by-one result). None where the fold's result depends on the rows' order (a float
    sum rounds, min of equal doubles keeps the first of 0.0 and -0.0) or on more than a
    state (first_value's ties, string_agg)."""

    call: AggCall
    initial: Callable[[], Any]
    add: Callable[[Any, Row], Any]
    result: Callable[[Any], Any]
    add_rows: RowsFold | None = None
    merge: StatesMerge | None = None

    def __post_init__(self) -> None:
        if self.add_rows is None:
            object.__setattr__(self, "add_rows", _row_after_row(self.add))


def _row_after_row(add: Callable[[Any, Row], Any]) -> RowsFold:
    """``add`` applied to each row in turn."""
    def add_rows(state: Any, rows: list[Row]) -> Any:
        for row in rows:
            state = add(state, row)
        return state
    return add_rows


def _plain_fold(function: str, value: Evaluator
                ) -> tuple[Callable[[Any, Row], Any], Callable[[Any], Any]]:
    """(add, finish) of count/sum/min/max/avg of ``value(row)``: the state is None until the
    first non-NULL value; NULLs leave it unchanged. One call per row: this runs for every
    row and every aggregate (:func:`_plain_rows_fold` folds many rows at once)."""
    if function == "count":
        def add_count(s: Any, row: Row) -> Any:
            return s if value(row) is None else (s or 0) + 1
        return add_count, (lambda s: s or 0)
    if function == "sum":
        def add_sum(s: Any, row: Row) -> Any:
            v = value(row)
            return s if v is None else v if s is None else s + v
        return add_sum, (lambda s: s)
    if function == "min":
        def add_min(s: Any, row: Row) -> Any:
            v = value(row)
            return s if v is None or (s is not None and s <= v) else v
        return add_min, (lambda s: s)
    if function == "max":
        def add_max(s: Any, row: Row) -> Any:
            v = value(row)
            return s if v is None or (s is not None and s >= v) else v
        return add_max, (lambda s: s)
    if function == "avg":
        def add_avg(s: Any, row: Row) -> Any:
            v = value(row)
            return s if v is None else (v, 1) if s is None else (s[0] + v, s[1] + 1)
        return add_avg, (lambda s: None if s is None else s[0] / s[1])
    if function in STATISTICAL_FUNCTIONS:
        def add_deviation(s: Any, row: Row) -> Any:
            v = value(row)
            return s if v is None else welford_add(s, float(v))
        finish = _statistic(function)
        return add_deviation, finish
    raise PlanError(f"{function} has no plain fold")


Welford = tuple[int, float, float]


def welford_add(state: Welford | None, v: float) -> Welford:
    """Welford's update of (count, mean, sum of squared deviations from the mean) by ``v``."""
    if state is None:
        return (1, v, 0.0)
    n, mean, squares = state
    n += 1
    delta = v - mean
    mean += delta / n
    return (n, mean, squares + delta * (v - mean))


def _statistic(function: str) -> Callable[[Welford | None], float | None]:
    """The result of a statistical aggregate from its Welford state: the population variance
    divides the squared deviations by n, the sample variance by n - 1 (NULL for one value);
    the standard deviations are their square roots."""
    sample = function in ("stddev_samp", "var_samp")
    root = function.startswith("stddev")

    def finish(state: Welford | None) -> float | None:
        if state is None or (sample and state[0] < 2):
            return None
        n, _, squares = state
        variance = squares / (n - 1 if sample else n)
        return sqrt(variance) if root else variance
    return finish


def _plain_rows_fold(function: str, value: Evaluator) -> RowsFold | None:
    """``add_rows`` of count/sum/avg (:func:`_plain_fold`'s states) in built-in loops: the
    non-NULL values in row order, counted, or added left to right onto the state (the same
    additions in the same order as row after row, so float sums agree to the bit). None for
    min and max (their fold takes the first of equal values and puts a NaN first; row after
    row keeps that)."""
    def present(rows: list[Row]) -> list[Any]:
        values = list(map(value, rows))
        return [v for v in values if v is not None] if None in values else values
    if function == "count":
        def add_count(s: Any, rows: list[Row]) -> Any:
            n = len(present(rows))
            return (s or 0) + n if n else s
        return add_count
    if function == "sum":
        def add_sum(s: Any, rows: list[Row]) -> Any:
            values = present(rows)
            if not values:
                return s
            return reduce(plus, values) if s is None else reduce(plus, values, s)
        return add_sum
    if function == "avg":  # (sum, count)
        total, count = _plain_rows_fold("sum", value), _plain_rows_fold("count", value)
        assert total is not None and count is not None

        def add_avg(s: Any, rows: list[Row]) -> Any:
            if s is None:
                s = (None, None)
            state = total(s[0], rows), count(s[1], rows)
            return None if state[0] is None else state
        return add_avg
    return None


#: Types whose equal values are the same value (no 0.0 and -0.0, no 1.0 and 1.00, no NaN):
#: min and max of them do not depend on which of equal values comes first.
_IDENTICAL_WHEN_EQUAL = frozenset({SqlType.BIGINT, SqlType.BOOLEAN, SqlType.VARCHAR,
                                   SqlType.DATE, *TIME_TYPES})


def _optional(combine: Callable[[Any, Any], Any]) -> StatesMerge:
    """``combine`` of two states either of which may be None (no non-NULL value yet)."""
    def merge(a: Any, b: Any) -> Any:
        return b if a is None else a if b is None else combine(a, b)
    return merge


def _plain_merge(function: str, argument: ValueType) -> StatesMerge | None:
    """The exact merge of :func:`_plain_fold`'s states of ``function`` over values of type
    ``argument``, or None where it is not exact: integer (and exact decimal) sums and counts
    add whatever the order; min and max of values that are identical when equal."""
    if function == "count":
        return _optional(plus)
    if function in ("sum", "avg") and argument is SqlType.BIGINT:
        return _optional(plus) if function == "sum" else \
            _optional(lambda a, b: (a[0] + b[0], a[1] + b[1]))
    if function in ("min", "max") and argument in _IDENTICAL_WHEN_EQUAL:
        return _optional(min if function == "min" else max)
    return None


def _collector(value: Evaluator, distinct: bool) -> tuple[Callable[[], Any], Callable[[Any, Row], Any]]:
    """(initial state, add) of a state that keeps every non-NULL value, or each distinct one."""
    if distinct:
        def add_distinct(state: set[Any], row: Row) -> set[Any]:
            v = value(row)
            if v is not None:
                state.add(v)
            return state
        return set, add_distinct

    def add_value(state: list[Any], row: Row) -> list[Any]:
        v = value(row)
        if v is not None:
            state.append(v)
        return state
    return list, add_value


def compile_aggregate(call: AggCall, schema: Schema, event_time: str | None,
                      tie_break: Callable[[Row], Any] = row_sort_key) -> AggregateFunction:
    """Bind ``call`` to ``schema``.

    ``event_time`` names the column first_value/last_value order by when the call has no
    ORDER BY; ``tie_break`` orders rows with equal order keys (SEMANTICS.md §2).
    """
    result_type(call, schema)
    function = call.function
    if call.argument is None:  # count(*)
        return AggregateFunction(call, lambda: 0, lambda s, row: s + 1, lambda s: s,
                                 lambda s, rows: s + len(rows), plus)
    value: Evaluator = compile_expr(call.argument, schema).evaluate

    if function in ("first_value", "last_value"):
        order_expr = call.order_by
        if order_expr is None:
            if event_time is None:
                raise PlanError(f"{function} without ORDER BY needs a source watermark column")
            order_expr = ColumnRef(event_time)
        order = compile_expr(order_expr, schema).evaluate
        keep_first = function == "first_value"

        def add_ordered(state: Any, row: Row) -> Any:
            key = order(row)
            candidate = ((1, 0) if key is None else (0, key), tie_break(row))  # NULLS LAST
            if state is None:
                return (candidate, value(row))
            better = candidate < state[0] if keep_first else candidate > state[0]
            return (candidate, value(row)) if better else state
        return AggregateFunction(call, lambda: None, add_ordered,
                                 lambda s: None if s is None else s[1])

    if function == "approx_count_distinct":  # exact: see the module's docstring
        initial, add = _collector(value, distinct=True)
        return AggregateFunction(call, initial, add, len)

    if function == "string_agg":
        return _string_agg(call, schema, value, tie_break)

    if function in ("median", "percentile_cont"):
        fraction = 0.5 if function == "median" else call.fraction
        if fraction is None or not 0 <= fraction <= 1:
            raise PlanError("percentile_cont needs a fraction between 0 and 1")
        initial, add = _collector(value, call.distinct)
        return AggregateFunction(call, initial, add, lambda s: percentile_cont(sorted(s), fraction))

    if call.distinct:  # fold the distinct values, in order, as one-column rows
        initial, collect = _collector(value, distinct=True)
        add_value, finish = _plain_fold(function, itemgetter(0))

        def fold_distinct(state: set[Any]) -> Any:
            folded = None
            for v in sorted(state):
                folded = add_value(folded, (v,))
            return finish(folded)
        return AggregateFunction(call, initial, collect, fold_distinct)
    argument = compile_expr(call.argument, schema)
    if argument.type is SqlType.DECIMAL and function in ("sum", "avg"):
        return _decimal_fold(call, argument)
    add, finish = _plain_fold(function, value)
    if function == "avg" and argument.type is SqlType.BIGINT and value_rules().integer_avg == "integer":
        finish = _integer_average
    return AggregateFunction(call, lambda: None, add, finish, _plain_rows_fold(function, value),
                             _plain_merge(function, argument.type))


def _integer_average(state: Any) -> Any:
    """avg of integers where it is an integer (Flink): the sum over the count, toward zero."""
    return None if state is None else integer_average(state[0], state[1])


def _decimal_fold(call: AggCall, argument: Compiled) -> AggregateFunction:
    """sum or avg of DECIMALs: the exact sum and the count of the non-NULL values, finished by
    the engine's rules (:class:`~eowc.semantics.ir.values.ValueRules`): a sum fitted to its
    type (:func:`~eowc.semantics.ir.values.decimal_sum_shape` where the argument's shape is
    known), an average at the engine's scale
    (:func:`~eowc.semantics.ir.values.decimal_average`)."""
    rules, value = value_rules(), argument.evaluate
    shape = None if argument.shape is None else decimal_sum_shape(argument.shape, rules)

    def add(state: Any, row: Row) -> Any:
        v = value(row)
        if v is None:
            return state
        return (v, 1) if state is None else (EXACT.add(state[0], v), state[1] + 1)

    def finish(state: Any) -> Any:
        if state is None:
            return None
        total, count = state
        if call.function == "avg":
            return decimal_average(total, count, rules)
        return fit_decimal(total, rules) if shape is None else fit_decimal_shape(total, shape, rules)
    merge = _optional(lambda a, b: (EXACT.add(a[0], b[0]), a[1] + b[1]))  # EXACT: no rounding
    return AggregateFunction(call, lambda: None, add, finish, merge=merge)


def _string_agg(call: AggCall, schema: Schema, value: Evaluator,
                tie_break: Callable[[Row], Any]) -> AggregateFunction:
    """string_agg(value, separator [ORDER BY key [DESC]]): the non-NULL values joined by the
    separator, ordered by the key (NULLS LAST ascending, FIRST descending, as PostgreSQL),
    rows with equal keys by ``tie_break``. Without ORDER BY (the engines promise no order)
    the values are joined in ascending order of the values themselves: deterministic, and
    the same whatever breaks ties. DISTINCT joins each distinct value once, in value order.
    NULL when no value is not NULL."""
    separator = call.separator
    assert separator is not None
    if call.distinct or call.order_by is None:
        initial, collect = _collector(value, distinct=call.distinct)
        return AggregateFunction(call, initial, collect,
                                 lambda s: separator.join(sorted(s)) if s else None)
    order = compile_expr(call.order_by, schema).evaluate
    descending = call.order_descending

    def add_value(state: list[tuple[Any, Any, Any]], row: Row) -> list[tuple[Any, Any, Any]]:
        v = value(row)
        if v is not None:
            key = order(row)
            state.append(((key is None, 0 if key is None else key), tie_break(row), v))
        return state

    def joined(state: list[tuple[Any, Any, Any]]) -> str | None:
        if not state:
            return None
        by_tie = sorted(state, key=itemgetter(1))  # stable: equal keys keep the tie order
        return separator.join(v for _, _, v in sorted(by_tie, key=itemgetter(0), reverse=descending))
    return AggregateFunction(call, list, add_value, joined)


def aggregate_value(function: AggregateFunction, rows: Iterable[Row]) -> Any:
    """The aggregate of a whole group (the batch definition)."""
    state = function.initial()
    for row in rows:
        state = function.add(state, row)
    return function.result(state)
