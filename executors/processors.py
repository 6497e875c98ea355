"""The EOWC executors of seed 000, written once against :mod:`executors.state`.

Each processor receives, per grouping key, the rows that reached the stateful operator (after
the stateless part of the plan: filters, projections, the window TVF) and the current
watermark, and later the timers that fire. Late checks and trigger conditions are the
functions of :mod:`semantics.triggers`, bound by :func:`semantics.watermarks.completion_rule`;
nothing here restates a boundary rule.

* :class:`EowcSort`: one :class:`~executors.sort_buffer.SortBuffer` per shard; a timer per
  distinct watermark value; emits complete rows in watermark order.
* :class:`EowcGroupAgg`: incremental aggregate states per group in a value state; one timer
  at the watermark that completes the group; emits the group's row and deletes its state.
* :class:`SortAgg`: buffers the group's input rows in a list state and computes any
  aggregate a batch query can (median, percentile_cont) once the group is complete.

Times are microseconds, as in :mod:`semantics`; timers are milliseconds, as in Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from semantics.aggregates import aggregate_value
from semantics.errors import PlanError
from semantics.expr import Row
from semantics.interpreter import CompiledQuery, compile_query
from semantics.plan import Aggregate, Query, tie_break
from semantics.triggers import NO_WATERMARK, Convention, Watermark, row_is_late, window_accepts
from semantics.values import MICROS_PER_MILLI, row_sort_key
from semantics.watermarks import watermark_columns, window_of_row

from .sort_buffer import SortBuffer
from .state import StateHandle


class Arrival(NamedTuple):
    """A row reaching the stateful operator: ``seq`` is its source row's position in the
    arrival log, ``fanout`` how many rows the stateless part made of that source row (its
    windows), ``time`` the source row's event time."""

    seq: int
    fanout: int
    time: int
    row: Row


class Emit(NamedTuple):
    """A result row; ``order`` sorts the rows emitted in one epoch (watermark value, then
    tie-break), as the reference does."""

    row: Row
    order: Any


class Refusal(NamedTuple):
    """One row refused as late by the operator. Its source row is late (left out of INPUT)
    when all ``fanout`` of its rows are refused."""

    seq: int
    fanout: int


Output = Emit | Refusal


def closing_timer_ms(is_complete: Callable[[Any, Watermark], bool], bound: Any) -> int:
    """The least millisecond watermark at which ``bound`` is complete: the timer that fires
    exactly when the trigger condition first holds (Spark fires when ``expiry <= W``). Every
    trigger holds within 2 ms of the window end or event time, and is monotone in ``W``."""
    hint = (bound.end if hasattr(bound, "end") else bound) // MICROS_PER_MILLI
    for ms in range(hint - 2, hint + 3):
        if is_complete(bound, ms * MICROS_PER_MILLI):
            return ms
    raise AssertionError(f"no watermark near {hint} ms completes {bound!r}")


@dataclass(frozen=True)
class ExecutorPlan:
    """What an executor needs of a query: the stateless part below the stateful operator, the
    grouping key, the trigger (``compiled.rule``) and the late check of the convention."""

    compiled: CompiledQuery
    window_of: Callable[[Row], Any] | None

    @property
    def convention(self) -> Convention:
        return self.compiled.convention

    def stateless(self, row: Row) -> list[Row]:
        """The rows the stateless part makes of one source row (every window: refusing a
        closed window is the stateful operator's job)."""
        return self.compiled.below(row, NO_WATERMARK)

    def refuses(self, arrival: Arrival, watermark: Watermark) -> bool:
        """The convention's late check, on the window (Spark, Flink aggregates) or the row."""
        if self.compiled.per_window and self.window_of is not None:
            return not window_accepts(self.window_of(arrival.row), watermark, self.convention)
        return row_is_late(arrival.time, watermark, self.convention)


def executor_plan(query: Query, convention: Convention) -> ExecutorPlan:
    """Bind ``query`` for an executor; a PlanError if it is not valid under EOWC."""
    compiled = compile_query(query, convention, eowc=True)
    window_of = None
    if isinstance(compiled.aggregate, Aggregate):
        columns = watermark_columns(compiled.aggregate.input)
        if columns.has_window_column:
            window_of = window_of_row(columns)
    return ExecutorPlan(compiled, window_of)


class EowcProcessor:
    """The interface every executor implements (the shape of Spark's StatefulProcessor)."""

    def __init__(self, plan: ExecutorPlan) -> None:
        self.plan = plan

    def init(self, handle: StateHandle) -> None:
        self.handle = handle

    def key_of(self, row: Row) -> Row:
        """The grouping key under which ``row`` is processed."""
        raise NotImplementedError

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        raise NotImplementedError

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        raise NotImplementedError


class EowcSort(EowcProcessor):
    """Plain ``SELECT ... EMIT ON WINDOW CLOSE``: an append-only stream in watermark order.
    All rows go to one shard (the empty key), whose SortBuffer orders them."""

    def __init__(self, plan: ExecutorPlan, cache_size: int = 64) -> None:
        super().__init__(plan)
        if plan.compiled.aggregate is not None:
            raise PlanError("EowcSort runs a query without GROUP BY")
        assert plan.compiled.rule is not None
        self.rule = plan.compiled.rule
        self.tie = tie_break(plan.compiled.query.schema, plan.compiled.source)
        self.cache_size = cache_size

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.buffer = SortBuffer(handle.map_state("sort_buffer"), self.cache_size)

    def key_of(self, row: Row) -> Row:
        return ()

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        above = self.plan.compiled.above
        for arrival in arrivals:
            if self.plan.refuses(arrival, watermark):
                yield Refusal(arrival.seq, arrival.fanout)
                continue
            out = above(arrival.row)
            if out is None:
                continue
            bound = self.rule.bound(out)
            self.buffer.insert((bound, self.tie(out), arrival.seq), out)
            self.handle.register_timer(closing_timer_ms(self.rule.is_complete, bound))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        complete = self.rule.is_complete
        for (bound, tie, _), row in self.buffer.drain(lambda b: complete(b, watermark)):
            yield Emit(row, (bound, tie))


class EowcGroupAgg(EowcProcessor):
    """GROUP BY with incremental aggregates: per group, the aggregate states in a value
    state and one timer at the watermark that completes the group."""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        if plan.compiled.aggregate is None or plan.compiled.rule is None:
            raise PlanError("a group aggregate needs GROUP BY with a watermark column")
        self.rule = plan.compiled.rule
        self.functions = plan.compiled.functions

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.groups = handle.value_state("aggregates")

    def key_of(self, row: Row) -> Row:
        return self.plan.compiled.key(row)

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        accepted = []
        for arrival in arrivals:
            if self.plan.refuses(arrival, watermark):
                yield Refusal(arrival.seq, arrival.fanout)
            else:
                accepted.append(arrival.row)
        if not accepted:
            return
        if not self._has_state():
            bound = self.rule.bound(key)
            self.handle.register_timer(closing_timer_ms(self.rule.is_complete, bound))
        self._fold(accepted)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        values = self._results()
        self._clear()
        out = self.plan.compiled.above(key + values)
        if out is not None:
            yield Emit(out, (self.rule.bound(key), row_sort_key(key)))

    def _has_state(self) -> bool:
        return self.groups.exists()

    def _fold(self, rows: list[Row]) -> None:
        states = self.groups.get() if self.groups.exists() else [f.initial() for f in self.functions]
        for row in rows:
            states = [f.add(s, row) for f, s in zip(self.functions, states, strict=True)]
        self.groups.update(states)

    def _results(self) -> tuple[Any, ...]:
        states = self.groups.get()
        return tuple(f.result(s) for f, s in zip(self.functions, states, strict=True))

    def _clear(self) -> None:
        self.groups.clear()


class SortAgg(EowcGroupAgg):
    """GROUP BY whose aggregates need the whole group (median, percentile_cont, or any
    other): the group's rows in a list state, aggregated once the group is complete."""

    def init(self, handle: StateHandle) -> None:
        EowcProcessor.init(self, handle)
        self.rows = handle.list_state("rows")

    def _has_state(self) -> bool:
        return self.rows.exists()

    def _fold(self, rows: list[Row]) -> None:
        for row in rows:
            self.rows.append(row)

    def _results(self) -> tuple[Any, ...]:
        rows = list(self.rows.get())
        return tuple(aggregate_value(f, rows) for f in self.functions)

    def _clear(self) -> None:
        self.rows.clear()


#: Aggregates whose state grows with the group: the SortAgg case of seed 000.
NON_INCREMENTAL = frozenset({"median", "percentile_cont"})


def processor_for(query: Query, convention: Convention) -> EowcProcessor:
    """The executor seed 000 prescribes for ``query``: EowcSort without GROUP BY, SortAgg when
    an aggregate needs the whole group, EowcGroupAgg otherwise."""
    plan = executor_plan(query, convention)
    if plan.compiled.aggregate is None:
        return EowcSort(plan)
    if any(f.call.function in NON_INCREMENTAL for f in plan.compiled.functions):
        return SortAgg(plan)
    return EowcGroupAgg(plan)
