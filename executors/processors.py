"""The EOWC executors of seed 000, written once against :mod:`eowc.executors.state`.

Each processor receives, per grouping key, the rows that reached the stateful operator (after
the stateless part of the plan: filters, projections, the window TVF) and the current
watermark, and later the timers that fire. Late checks and trigger conditions are the
functions of :mod:`eowc.semantics.rules.triggers`, bound by
:func:`eowc.semantics.analysis.completion.completion_rule`;
nothing here restates a boundary rule.

* :class:`EowcSort`: one :class:`~eowc.executors.sort_buffer.SortBuffer` per shard; a timer per
  distinct watermark value; emits complete rows in watermark order.
* :class:`EowcGroupAgg`: incremental aggregate states per group in a value state; one timer
  at the watermark that completes the group; emits the group's row and deletes its state.
* :class:`SortAgg`: buffers the group's input rows in a list state and computes any
  aggregate a batch query can (median, percentile_cont) once the group is complete.

Times are microseconds, as in :mod:`semantics`; timers are milliseconds, as in Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eowc.executors.gap_fill import gap_fill_processor
from eowc.executors.interface import EowcProcessor
from eowc.executors.partitioned import partitioned_processor
from eowc.executors.plan import ExecutorPlan, executor_plan
from eowc.executors.protocol import (
    Arrival,
    Emit,
    Output,
    Refusal,
    Rejected,
    ShardTimer,
    SourceProgress,
    Update,
    closing_timer_ms,
)
from eowc.executors.sort_buffer import SortBuffer
from eowc.executors.state import StateHandle
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import tie_break
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.operators.aggregates import aggregate_value
from eowc.semantics.rules.triggers import Watermark

#: Names of the executors' interface (:mod:`eowc.executors.protocol`) and plan
#: (:mod:`eowc.executors.plan`) that callers import from here.
__all__ = ["Arrival", "Emit", "EowcGroupAgg", "EowcProcessor", "EowcSort", "ExecutorPlan", "Output",
           "Refusal", "Rejected", "ShardTimer", "SortAgg", "SourceProgress", "Update",
           "closing_timer_ms", "eowc_processor", "executor_plan"]


class EowcSort(EowcProcessor):
    """Plain ``SELECT ... EMIT ON WINDOW CLOSE``: an append-only stream in watermark order.
    All rows go to one shard (the empty key), whose SortBuffer orders them. One timer, at the
    watermark that completes the earliest buffered row, wakes the shard; it then drains every
    complete row and sets the timer for the next one. (Several shards would sort on several
    cores, but Spark runs the timers of the keys of one partition one after another, so their
    rows would interleave: the output would no longer be ordered within a partition.)"""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        if plan.compiled.aggregate is not None:
            raise PlanError("EowcSort runs a query without GROUP BY")
        assert plan.compiled.rule is not None
        self.rule = plan.compiled.rule
        self.tie = tie_break(plan.compiled.query.schema, plan.compiled.source,
                             plan.compiled.arrival)

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.table = handle.map_state("sort_buffer")  # scoped to the current key, as in Spark
        #: Each shard's SortBuffer (its cache is the shard's own), made on first use.
        self.buffers: dict[Row, SortBuffer] = {}
        #: How many rows the shard has ever buffered: the last part of a buffer key, which
        #: makes keys unique whatever the input's sequence numbers.
        self.inserted = handle.value_state("inserted")
        #: The shard's one timer, at the closing watermark of its earliest buffered row.
        self.timer = ShardTimer(handle)

    def key_of(self, row: Row) -> Row:
        return ()

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        above, bound_of = self.plan.compiled.above, self.rule.bound
        inserted = self.inserted.get() or 0
        rows = []
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        for arrival in accepted:
            out = above(arrival.row)
            if out is not None:
                inserted += 1
                rows.append(((bound_of(out), inserted), out))
        if rows:
            self.inserted.update(inserted)
            self._buffer(key).insert(rows)
            self.timer.at_most(closing_timer_ms(self.rule.is_complete, min(k[0] for k, _ in rows)))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        complete, buffer = self.rule.is_complete, self._buffer(key)
        tie = self.tie
        for (bound, _), row in buffer.drain(lambda b: complete(b, watermark)):
            yield Emit(row, (bound, tie(row)))
        first = buffer.first()
        if first is not None:
            self.timer.at_most(closing_timer_ms(complete, first[0]))

    def _buffer(self, key: Row) -> SortBuffer:
        if key not in self.buffers:
            self.buffers[key] = self.new_sort_buffer(self.table)
        return self.buffers[key]


class EowcGroupAgg(EowcProcessor):
    """GROUP BY with incremental aggregates. The executor's key (its shard) is the groups'
    bound, e.g. their window: all groups of a window share one value state, a dict from group
    key to aggregate states, and one timer at the watermark that closes the window, which emits
    every group of the window and deletes the state. (A shard per window, not per group, and
    one value, not a map entry per group: each key and each state call costs Spark's state API
    a round trip to the JVM, so the shard's groups are read and written once per micro-batch.)"""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        if plan.compiled.aggregate is None or plan.compiled.rule is None:
            raise PlanError("a group aggregate needs GROUP BY with a watermark column")
        self.rule = plan.compiled.rule
        self.functions = plan.compiled.functions

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.groups = handle.value_state("groups")

    def key_of(self, row: Row) -> Row:
        return (self.rule.bound(self.plan.compiled.key(row)),)

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        group_of = self.plan.compiled.key
        by_group: dict[Row, list[Row]] = {}
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        for arrival in accepted:
            row = arrival.row
            group = group_of(row)
            if group in by_group:
                by_group[group].append(row)
            else:
                by_group[group] = [row]
        if not by_group:
            return
        groups = self.groups.get()
        if groups is None:  # the shard's first rows: set its timer
            groups = {}
            self.handle.register_timer(closing_timer_ms(self.rule.is_complete, key[0]))
        for group, rows in by_group.items():
            groups[group] = self._fold(groups.get(group), rows)
        self.groups.update(groups)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        groups = sorted((self.groups.get() or {}).items(), key=lambda item: row_sort_key(item[0]))
        self.groups.clear()
        for group, state in groups:
            out = self.plan.compiled.above(group + self._results(state))
            if out is not None:
                yield Emit(out, (key[0], row_sort_key(group)))

    def _fold(self, state: Any, rows: list[Row]) -> Any:
        """The group's state (None before its first rows) with ``rows`` added."""
        states = state if state is not None else [f.initial() for f in self.functions]
        folded = []
        for function, s in zip(self.functions, states, strict=True):
            add = function.add
            for row in rows:  # rows in arrival order, as the reference folds them
                s = add(s, row)
            folded.append(s)
        return folded

    def _results(self, state: Any) -> tuple[Any, ...]:
        return tuple(f.result(s) for f, s in zip(self.functions, state, strict=True))


class SortAgg(EowcGroupAgg):
    """GROUP BY whose aggregates need the whole group (median, percentile_cont, or any
    other): each group's state is its rows, aggregated once the group is complete."""

    def _fold(self, state: Any, rows: list[Row]) -> Any:
        return (state or []) + rows

    def _results(self, state: Any) -> tuple[Any, ...]:
        return tuple(aggregate_value(f, state) for f in self.functions)


#: Aggregates whose state grows with the group: the SortAgg case of seed 000.
NON_INCREMENTAL = frozenset({"median", "percentile_cont"})


def eowc_processor(plan: ExecutorPlan) -> EowcProcessor:
    """The EOWC executor of a query of one source (:func:`processor_for`)."""
    gap_fill = gap_fill_processor(plan, eowc=True)
    if gap_fill is not None:
        return gap_fill
    partitioned = partitioned_processor(plan)
    if partitioned is not None:
        return partitioned
    if plan.compiled.aggregate is None:
        return EowcSort(plan)
    if any(f.call.function in NON_INCREMENTAL for f in plan.compiled.functions):
        return SortAgg(plan)
    return EowcGroupAgg(plan)
