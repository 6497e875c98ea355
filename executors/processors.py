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

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from eowc.executors.sort_buffer import SortBuffer
from eowc.executors.state import MapState, StateHandle
from eowc.semantics.analysis.completion import watermark_columns, window_of_row
from eowc.semantics.engines.interpreter import CompiledQuery, compile_query
from eowc.semantics.engines.multi_input import has_several_inputs
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Query, Source, tie_break
from eowc.semantics.ir.values import MICROS_PER_MILLI, format_timestamp, row_sort_key
from eowc.semantics.operators.aggregates import aggregate_value
from eowc.semantics.rules.triggers import (
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    window_accepts,
)


class Arrival(NamedTuple):
    """A row reaching the stateful operator: ``seq`` is its source row's position in the
    arrival log, ``fanout`` how many rows the stateless part made of that source row (its
    windows), ``time`` the source row's event time; ``source`` the source row itself where the
    caller wants it back in refusals (the side output of :mod:`eowc.executors.spark.api`)."""

    seq: int
    fanout: int
    time: int
    row: Row
    source: Row | None = None


class SourceProgress(NamedTuple):
    """How far a source got in one batch: the largest event time among ``table``'s rows (late
    and filtered rows included, as the source's watermark counts them). Given to an executor
    that judges each source by its own watermark (the joins: :mod:`eowc.executors.joins`)."""

    table: str
    time: int


class Emit(NamedTuple):
    """A result row; ``order`` sorts the rows emitted in one epoch (watermark value, then
    tie-break), as the reference does."""

    row: Row
    order: Any


class Update(NamedTuple):
    """One change of an emit-on-update executor's changelog: ``op`` is ``"-"`` (a result row
    retracted) or ``"+"`` (inserted); ``order`` sorts an epoch's changes as the reference
    does (deletes, then inserts, each in row order)."""

    op: str
    row: Row
    order: Any


class Refusal(NamedTuple):
    """One row refused as late by the operator, and why. Its source row is late (left out of
    INPUT) when all ``fanout`` of its rows are refused."""

    seq: int
    fanout: int
    reason: str = "late"
    source: Row | None = None


class Rejected(NamedTuple):
    """An input row that never reached the executor, and why (its event time is NULL or does
    not parse: see :mod:`eowc.executors.spark.api`); ``row`` is the row as JSON."""

    reason: str
    row: str


Output = Emit | Update | Refusal


def closing_timer_ms(is_complete: Callable[[Any, Watermark], bool], bound: Any) -> int:
    """The least millisecond watermark at which ``bound`` is complete: the timer that fires
    exactly when the trigger condition first holds (Spark fires when ``expiry <= W``). Every
    trigger holds within 2 ms of the window end or event time, and is monotone in ``W``."""
    hint = (bound.end if hasattr(bound, "end") else bound) // MICROS_PER_MILLI
    for ms in range(hint - 2, hint + 3):
        if is_complete(bound, ms * MICROS_PER_MILLI):
            return ms
    raise AssertionError(f"no watermark near {hint} ms completes {bound!r}")


class ShardTimer:
    """A shard's single timer, kept at the earliest watermark anything in it waits for."""

    def __init__(self, handle: StateHandle) -> None:
        self.handle = handle
        self.expiry = handle.value_state("timer")

    def fired(self) -> None:
        self.expiry.clear()

    def at_most(self, expiry: int | None) -> None:
        """Move the timer to ``expiry`` if that is earlier (None: nothing to wait for)."""
        current = self.expiry.get()
        if expiry is None or (current is not None and current <= expiry):
            return
        if current is not None:
            self.handle.delete_timer(current)
        self.handle.register_timer(expiry)
        self.expiry.update(expiry)

    def exactly(self, expiry: int | None) -> None:
        """Set the timer to ``expiry`` (None: no timer)."""
        current = self.expiry.get()
        if current == expiry:
            return
        if current is not None:
            self.handle.delete_timer(current)
            self.expiry.clear()
        self.at_most(expiry)


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
        return self.compiled.below_every_window(row, NO_WATERMARK)

    def admit(self, arrivals: list[Arrival], watermark: Watermark
              ) -> tuple[list[Arrival], list[Refusal]]:
        """The convention's late check of a batch of arrivals: those the operator takes, in
        order, and a :class:`Refusal` saying why for each other. Under a per-window check
        (Spark, Flink aggregates) each distinct window is judged once."""
        accepted: list[Arrival] = []
        refused: list[Refusal] = []
        rule = self.convention.value
        if self.compiled.per_window and self.window_of is not None:
            verdicts: dict[Any, str | None] = {}  # window -> why it refuses rows, or None
            for arrival in arrivals:
                window = self.window_of(arrival.row)
                if window not in verdicts:
                    verdicts[window] = self._closed_window(window, watermark)
                reason = verdicts[window]
                if reason is None:
                    accepted.append(arrival)
                else:
                    refused.append(Refusal(arrival.seq, arrival.fanout, reason, arrival.source))
            return accepted, refused
        is_late = self.late_comparison()
        for arrival in arrivals:
            if is_late(arrival.time, watermark):
                reason = (f"event time {format_timestamp(arrival.time)} is late at watermark "
                          f"{format_timestamp(watermark)} ({rule} rule)")
                refused.append(Refusal(arrival.seq, arrival.fanout, reason, arrival.source))
            else:
                accepted.append(arrival)
        return accepted, refused

    def late_comparison(self) -> Callable[[int, Watermark], bool]:
        """The late check of a row's event time against the watermark before its batch:
        :func:`~eowc.semantics.rules.triggers.row_is_late` with the convention bound (one call a row)."""
        return completeness_comparison(self.convention)

    def _closed_window(self, window: Any, watermark: Watermark) -> str | None:
        """Why ``window`` refuses rows at ``watermark`` (:func:`window_accepts`), or None."""
        if window_accepts(window, watermark, self.convention):
            return None
        return (f"window [{format_timestamp(window.start)}, {format_timestamp(window.end)}) was "
                f"closed at watermark {format_timestamp(watermark)} ({self.convention.value} rule)")


def executor_plan(query: Query, convention: Convention) -> ExecutorPlan:
    """Bind ``query`` for an executor; a PlanError if it is not valid under EOWC."""
    compiled = compile_query(query, convention, eowc=True)
    if compiled.feed is not None:
        raise PlanError("a query with joins or unions runs on the join executor "
                        "(eowc.executors.joins, through processor_for)")
    window_of = None
    stateful = compiled.aggregate or (compiled.top_n.node if compiled.top_n else None)
    if stateful is not None and compiled.session is None and compiled.count is None:
        columns = watermark_columns(stateful.input)
        if columns.has_window_column:
            window_of = window_of_row(columns)
    return ExecutorPlan(compiled, window_of)


class EowcProcessor:
    """The interface every executor implements (the shape of Spark's StatefulProcessor)."""

    def __init__(self, plan: ExecutorPlan) -> None:
        self.plan = plan

    def init(self, handle: StateHandle) -> None:
        self.handle = handle

    #: The key that gets the :class:`SourceProgress` of every batch (None: not wanted).
    progress_key: Row | None = None

    @property
    def sources(self) -> tuple[Source, ...]:
        """The sources the executor reads."""
        return (self.plan.compiled.source,)

    def stateless_of(self, table: str, row: Row) -> list[Row]:
        """The rows the stateless part makes of one row of source ``table``."""
        return self.plan.stateless(row)

    def key_of(self, row: Row) -> Row:
        """The grouping key under which ``row`` is processed."""
        raise NotImplementedError

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        raise NotImplementedError

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        raise NotImplementedError

    def new_sort_buffer(self, table: MapState) -> SortBuffer:
        """The SortBuffer over ``table`` in which the executor keeps rows until complete."""
        return SortBuffer(table)


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
        self.tie = tie_break(plan.compiled.query.schema, plan.compiled.source)

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


def processor_for(query: Query, convention: Convention) -> EowcProcessor:
    """The executor seed 000 or 002 prescribes for ``query``: without EMIT ON WINDOW CLOSE the
    emit-on-update executor (seed 002's general OverWindow, the only one yet); else the
    executor of its partitioned operator (:mod:`eowc.executors.partitioned`: OVER,
    MATCH_RECOGNIZE, TopN, SESSION, count windows), else EowcSort without GROUP BY, SortAgg
    when an aggregate needs the whole group, EowcGroupAgg otherwise."""
    from eowc.executors.joins import join_processor
    from eowc.executors.partitioned import changelog_processor

    if has_several_inputs(query.plan):
        return join_processor(query, convention)
    if not query.emit_on_window_close:
        return changelog_processor(executor_plan(query, convention))
    return eowc_processor(executor_plan(query, convention))


def eowc_processor(plan: ExecutorPlan) -> EowcProcessor:
    """The EOWC executor of a query of one source (:func:`processor_for`)."""
    from eowc.executors.partitioned import partitioned_processor

    partitioned = partitioned_processor(plan)
    if partitioned is not None:
        return partitioned
    if plan.compiled.aggregate is None:
        return EowcSort(plan)
    if any(f.call.function in NON_INCREMENTAL for f in plan.compiled.functions):
        return SortAgg(plan)
    return EowcGroupAgg(plan)
