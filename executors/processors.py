"""The EOWC executors of seed 000, written once against :mod:`eowc.executors.state`.

Each processor receives, per grouping key, the rows that reached the stateful operator (after
the stateless part of the plan: filters, projections, the window TVF) and the current
watermark, and later the timers that fire. Late checks and trigger conditions are the
functions of :mod:`eowc.semantics.rules.triggers`, bound by
:func:`eowc.semantics.analysis.completion.completion_rule`;
nothing here restates a boundary rule.

* :class:`EowcSort`: rows hash-partitioned by the source's primary key (or the whole row);
  one :class:`~eowc.executors.sort_buffer.SortBuffer` and one timer per partition; emits
  complete rows in watermark order within each partition.
* :class:`EowcGroupAgg`: keyed by the hash bucket of the group; incremental aggregate states
  per group of each open window of the bucket in a value state; one timer at the watermark
  that closes the bucket's earliest window; emits every complete window's groups and deletes
  them.
* :class:`SortAgg`: keeps each group's input rows and computes any aggregate a batch query
  can (median, percentile_cont) once the group is complete.

Times are microseconds, as in :mod:`semantics`; timers are milliseconds, as in Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from eowc.executors.buckets import GROUP_BUCKETS, bucket_of
from eowc.executors.gap_fill import gap_fill_processor
from eowc.executors.interface import EowcProcessor
from eowc.executors.partitioned import partitioned_processor
from eowc.executors.plan import ExecutorPlan, executor_plan
from eowc.executors.protocol import (
    Arrival,
    Emit,
    Output,
    Partial,
    Refusal,
    Rejected,
    ShardTimer,
    SourceProgress,
    Update,
    closing_timer_ms,
)
from eowc.executors.sort_buffer import SortBuffer, SortKey
from eowc.executors.state import StateHandle
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row, Schema
from eowc.semantics.ir.plan import Source, tie_break
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.operators.aggregates import aggregate_value
from eowc.semantics.rules.triggers import Watermark

#: Names of the executors' interface (:mod:`eowc.executors.protocol`) and plan
#: (:mod:`eowc.executors.plan`) that callers import from here.
__all__ = ["Arrival", "Emit", "EowcGroupAgg", "EowcProcessor", "EowcSort", "ExecutorPlan", "Output",
           "Partial", "Refusal", "Rejected", "ShardTimer", "SortAgg", "SourceProgress", "Update",
           "closing_timer_ms", "eowc_processor", "executor_plan"]


class EowcSort(EowcProcessor):
    """Plain ``SELECT ... EMIT ON WINDOW CLOSE``: an append-only stream ordered by the
    watermark column within each partition, as RisingWave's EOWC sort is ordered within each
    parallel partition, not globally. A row's partition is the hash bucket
    (:func:`~eowc.executors.buckets.bucket_of`) of its source's primary key (the key columns
    the row still has; the whole row for a source without one, or a row that kept none of
    them), one of ``options.sort_partitions``; one partition gives one total order.

    Each partition is a shard (Spark's shuffle spreads them over the tasks) with its own
    SortBuffer and one timer, at the watermark that completes its earliest buffered row; its
    rows or its timer (:meth:`release`) drain every complete row of the partition in order and
    set the timer for the next one. The rows of one task's partitions interleave (Spark
    handles a task's keys one after another), each partition's in order: every
    :class:`Emit` names its partition."""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        if plan.compiled.aggregate is not None:
            raise PlanError("EowcSort runs a query without GROUP BY")
        assert plan.compiled.rule is not None
        self.rule = plan.compiled.rule
        self.tie = tie_break(plan.compiled.query.schema, plan.compiled.source,
                             plan.compiled.arrival)
        self.partitions = plan.options.sort_partitions
        self.partitioned_by = partition_columns(plan.compiled.query.schema, plan.compiled.source)

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
        """The row's partition (as a one-value key)."""
        return (bucket_of(self.partitioned_by(row), self.partitions),)

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
            yield from self.release(key, watermark, rows)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        yield from self.release(key, watermark)

    def release(self, key: Row, watermark: Watermark,
                rows: Sequence[tuple[SortKey, Row]] = ()) -> Iterator[Emit]:
        """Buffer ``rows``, then emit every row of the partition complete at ``watermark``, in
        order; the timer at the next row's completion. (Rows and timers both release: Spark
        fires a timer due at a batch's watermark after the batch's rows, so the partition's
        buffer is written once a batch.)"""
        complete, buffer = self.rule.is_complete, self._buffer(key)
        tie, partition = self.tie, key[0]
        # Rows of equal bound complete together: the drained rows, buffered in (bound,
        # insertion) order, are emitted in the reference's order, (bound, tie-break).
        ordered = sorted((((bound, tie(row)), row) for (bound, _), row in
                          buffer.insert_and_drain(rows, lambda b: complete(b, watermark))),
                         key=itemgetter(0))
        for order, row in ordered:
            yield Emit(row, order, partition)
        first = buffer.first()
        self.timer.exactly(None if first is None else closing_timer_ms(complete, first[0]))

    def _buffer(self, key: Row) -> SortBuffer:
        if key not in self.buffers:
            self.buffers[key] = self.new_sort_buffer(self.table)
        return self.buffers[key]


def partition_columns(schema: Schema, source: Source) -> Callable[[Row], Row]:
    """What an EOWC sort partitions a row of ``schema`` read from ``source`` by: the source's
    primary key columns the row still has, else the whole row."""
    names = [c.name for c in schema]
    kept = [names.index(k) for k in source.primary_key if k in names]
    if not kept:
        return lambda row: row
    return lambda row: tuple(row[i] for i in kept)


class EowcGroupAgg(EowcProcessor):
    """GROUP BY with incremental aggregates. The executor's key (its shard) is the hash bucket
    of the group (:func:`~eowc.executors.buckets.bucket_of`, one of
    :data:`~eowc.executors.buckets.GROUP_BUCKETS`), so that Spark's shuffle spreads the groups
    over every task whatever the windows. A bucket keeps one value, a dict from each open
    bound (e.g. a window) to its groups' aggregate states, and one timer, at the watermark that
    closes the earliest bound; when it fires, or rows arrive, every bound of the bucket that
    is complete emits its groups and is removed (:meth:`release`). (A bucket, not a group or a
    (window, group), per key, and one value: each key and each state call costs Spark's state
    API a round trip to the JVM, so a micro-batch costs a handful of calls per bucket, however
    many windows, groups and rows it brings.)"""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        if plan.compiled.aggregate is None or plan.compiled.rule is None:
            raise PlanError("a group aggregate needs GROUP BY with a watermark column")
        self.rule = plan.compiled.rule
        self.functions = plan.compiled.functions
        self.merges = tuple(f.merge for f in self.functions)
        #: Partial aggregation (:meth:`combine`): where the late check judges whole windows,
        #: the rows of a group are in one window and every aggregate merges exactly.
        self.combines = (plan.compiled.per_window and plan.group_window is not None
                         and None not in self.merges)

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.bounds = handle.value_state("groups")  # {bound: {group: aggregate states}}
        self.timer = ShardTimer(handle)

    def key_of(self, row: Row) -> Row:
        """The group's bucket (as a one-value key)."""
        return (bucket_of(self.plan.compiled.key(row), GROUP_BUCKETS),)

    def combine(self, arrivals: list[Arrival]) -> list[Any]:
        """Where the executor :attr:`combines`, one :class:`Partial` per group of
        ``arrivals``: the group's rows folded (run before the shuffle, a combiner: a batch
        sends a value per group to the stateful task, not its rows). The arrivals themselves
        where that would not halve what is sent (most groups have one row)."""
        if not self.combines:
            return arrivals
        by_group = self._by_group(arrivals)
        return arrivals if 2 * len(by_group) > len(arrivals) else self._partials(by_group)

    def _by_group(self, arrivals: list[Any]) -> dict[Row, list[Any]]:
        """``arrivals`` (Arrivals, or plain tuples of them) by group, each in arrival order."""
        group_of = self.plan.compiled.key
        by_group: dict[Row, list[Any]] = {}
        for arrival in arrivals:
            group = group_of(arrival[3])
            if group in by_group:
                by_group[group].append(arrival)
            else:
                by_group[group] = [arrival]
        return by_group

    def _partials(self, by_group: dict[Row, list[Any]]) -> list[Partial]:
        """Each group's arrivals folded into one :class:`Partial`."""
        functions, partials = self.functions, []
        for group, members in by_group.items():
            seqs, fanouts, _, rows, sources = map(list, zip(*members, strict=True))
            partials.append(Partial(group, [f.add_rows(f.initial(), rows) for f in functions],
                                    seqs, fanouts, None if sources.count(None) == len(sources)
                                    else sources))
        return partials

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        if self.combines:  # Partials folded before the shuffle, or rows to fold here
            partials = [a for a in arrivals if isinstance(a, Partial)]
            if len(partials) < len(arrivals):
                rows = [a for a in arrivals if not isinstance(a, Partial)]
                partials += self._partials(self._by_group(rows))
            yield from self._merge(partials, watermark)
            return
        group_of, bound_of = self.plan.compiled.key, self.rule.bound
        by_bound: dict[Any, dict[Row, list[Row]]] = {}
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        for arrival in accepted:
            row = arrival.row
            group = group_of(row)
            by_group = by_bound.setdefault(bound_of(group), {})
            if group in by_group:
                by_group[group].append(row)
            else:
                by_group[group] = [row]
        if not by_bound:
            return
        bounds = self.bounds.get() or {}
        for bound, by_group in by_bound.items():
            groups = bounds.setdefault(bound, {})
            for group, rows in by_group.items():
                groups[group] = self._fold(groups.get(group), rows)
        yield from self.release(bounds, watermark)

    def _merge(self, partials: list[Partial], watermark: Watermark) -> Iterator[Output]:
        """Add the groups whose window takes rows to the bucket's, refuse the others' rows,
        and release."""
        accepted, refused = self.plan.admit_partials(partials, watermark)
        yield from refused
        if not accepted:
            return
        bounds, merges, bound_of = self.bounds.get() or {}, self.merges, self.rule.bound
        for group, states, *_ in accepted:
            groups = bounds.setdefault(bound_of(group), {})
            prior = groups.get(group)
            groups[group] = states if prior is None else \
                [merge(a, b) for merge, a, b in zip(merges, prior, states, strict=True)]
        yield from self.release(bounds, watermark)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        yield from self.release(self.bounds.get() or {}, watermark)

    def release(self, bounds: dict[Any, dict[Row, Any]], watermark: Watermark) -> Iterator[Emit]:
        """Every bound of the bucket complete at ``watermark`` emits its groups and is removed;
        the rest are stored, the timer at the earliest one's close. (Rows and timers both
        release: Spark fires a timer due at a batch's watermark after the batch's rows, so the
        bucket is written once a batch.)"""
        complete, above = self.rule.is_complete, self.plan.compiled.above
        for bound in [b for b in bounds if complete(b, watermark)]:
            groups = sorted(bounds.pop(bound).items(), key=lambda item: row_sort_key(item[0]))
            for group, state in groups:
                out = above(group + self._results(state))
                if out is not None:
                    yield Emit(out, (bound, row_sort_key(group)))
        if bounds:
            self.bounds.update(bounds)
        else:
            self.bounds.clear()
        self.timer.exactly(min((closing_timer_ms(complete, bound) for bound in bounds), default=None))

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
