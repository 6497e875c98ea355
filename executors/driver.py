"""The in-process driver: runs an executor over an arrival log with Spark's micro-batch
protocol (``SEMANTICS.md`` §4), without Spark. Used by the tests and, later, by fuzzing.

Per epoch, as Spark does with paced epochs and no-data batches:

1. the data batch: the epoch's rows go through the stateless part, are grouped by the
   executor's key and handed to it key by key, under the watermark of the previous epochs;
2. the watermark moves to ``max(event time)`` truncated to the millisecond, minus the delay
   (Spark's rule; it starts at 0 ms, as Spark's does); with several sources, each source's
   so, and the minimum over them (Spark's global watermark);
3. the no-data batch: every timer with ``expiry <= W`` fires, in (expiry, key) order.

Rows emitted in one epoch are put in the reference's order (watermark value, then tie-break),
as the Spark sink does, but for an executor ordered per partition (the EOWC sort): each
partition's rows keep the order they were emitted in, so that a check sees it
(:func:`emission_order`). A restart after an epoch drops everything the executor holds in memory
(its caches) and keeps the state store, as recovery from a checkpoint does.

The engine's own decisions in steps 1-3 (a source's event-time statistic, the watermark, which
watermark the rows and the timers see, what the source delivers again after a restart) are the
methods of :class:`MicroBatchProtocol`, so that
a test can run the executors under an engine that takes one of them wrongly
(:mod:`eowc.verify.mutants`); the executors never see it.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from eowc.executors.choice import processor_for
from eowc.executors.interface import EowcProcessor
from eowc.executors.millisecond_watermark import UNNAMED_LOG, check_millisecond_watermarks
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.protocol import (
    Arrival,
    Emit,
    Output,
    Refusal,
    SourceProgress,
    Update,
)
from eowc.executors.runtime import gc_paused
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Query, arrival_ties
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    default_ties,
    source_watermark,
)


class Emission(NamedTuple):
    """A result row the executor emitted after epoch ``epoch`` (``len(epochs)`` for the end
    of the input): as the reference's emissions, so that the two compare as tuples."""

    epoch: int
    row: Row


class PartitionEmission(Emission):
    """An :class:`Emission` of an executor ordered within each partition (the EOWC sort), with
    the ``partition`` it came from. It equals the plain emission (the partition says where a
    row came from, it is not part of the result)."""

    partition: int | None = None

    def __new__(cls, epoch: int, row: Row, partition: int | None = None) -> PartitionEmission:
        emission = super().__new__(cls, epoch, row)
        emission.partition = partition
        return emission


class Change(NamedTuple):
    """One entry of an emit-on-update executor's changelog: ``op`` is ``+`` or ``-``."""

    epoch: int
    op: str
    row: Row


class LateRow(NamedTuple):
    """A source row the executor refused as late, under ``watermark_before``."""

    epoch: int
    event: Event
    watermark_before: Watermark


#: Spark's watermark before any row: 0 ms.
SPARK_INITIAL_WATERMARK_MS = 0


@dataclass
class DriverRun:
    """What an executor emitted, the source rows it left out as late, and its state size
    (rows in state, and bytes when ``measure_bytes``) after each epoch."""

    emissions: list[Emission] = field(default_factory=list)
    #: The changelog of an emit-on-update executor (its emissions stay empty).
    changes: list[Change] = field(default_factory=list)
    late: list[LateRow] = field(default_factory=list)
    state_rows: list[int] = field(default_factory=list)
    state_bytes: list[int] = field(default_factory=list)


class MicroBatchProtocol:
    """How the engine drives an executor, as Spark does with paced epochs and no-data batches
    (module documentation). Each decision is one method, so that a subclass can take one
    differently; the driver's behaviour is this class's."""

    def event_time_statistic(self, highest: Watermark, t: int) -> Watermark:
        """A source's event-time statistic after a row with event time ``t``: the maximum."""
        return max(highest, t)

    def watermark_ms(self, max_event_time: Watermark, delay: int, previous_ms: int) -> int:
        """A source's watermark after a batch (:func:`spark_watermark_ms`)."""
        return spark_watermark_ms(max_event_time, delay, previous_ms)

    def rows_watermark(self, before: Watermark, after: Watermark) -> Watermark:
        """The watermark a data batch's rows are handed with: the one before the batch (Spark's
        watermark takes effect in the next batch), not ``after`` it."""
        return before

    def redelivered_after_restart(self, epoch: tuple[Event, ...]) -> tuple[Event, ...]:
        """The rows the source delivers again, at the start of the next epoch, after a restart
        that followed ``epoch``: none (its offsets were committed with the state)."""
        return ()

    def timers_watermark_ms(self, before_ms: int, after_ms: int) -> int:
        """The watermark the timers of an epoch fire at: the one after its data batch (the
        no-data batch runs at once), not ``before_ms``."""
        return after_ms


#: The protocol the driver follows unless told otherwise.
SPARK_PROTOCOL = MicroBatchProtocol()


def spark_watermark_ms(max_event_time: Watermark, delay: int, previous_ms: int) -> int:
    """Spark's watermark after a batch: ``max(c)`` truncated to the millisecond minus the
    delay, never going down."""
    if max_event_time == NO_WATERMARK:
        return previous_ms
    candidate = source_watermark(max_event_time, delay, Convention.SPARK)
    return max(previous_ms, int(candidate) // MICROS_PER_MILLI)


def run_in_process(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
                   close: bool = False, restart_after: Collection[int] = (),
                   processor: EowcProcessor | None = None, measure_bytes: bool = False,
                   protocol: MicroBatchProtocol = SPARK_PROTOCOL, ties: str | None = None,
                   options: ExecutorOptions = DEFAULT_OPTIONS, log_path: str = UNNAMED_LOG
                   ) -> DriverRun:
    """Run ``query``'s executor (``processor_for`` with ``options`` unless given) over
    ``log``, driven by ``protocol``; ``ties`` orders rows with equal ORDER BY values (default:
    the convention's). A log whose watermark would fall between two milliseconds is refused
    (:func:`~eowc.executors.millisecond_watermark.check_millisecond_watermarks`, naming
    ``log_path``) by an executor that follows the driver's watermark, Spark's, in whole
    milliseconds."""
    if processor is None:
        arrival = arrival_ties(((e.table, e.row) for e in log.events),
                               ties or default_ties(convention))
        processor = processor_for(query, convention, arrival, options)
    check_millisecond_watermarks(processor, log, convention, log_path)
    with gc_paused():
        return _run(processor, log, close, restart_after, measure_bytes, protocol)


def _run(processor: EowcProcessor, log: ArrivalLog, close: bool, restart_after: Collection[int],
         measure_bytes: bool, protocol: MicroBatchProtocol) -> DriverRun:
    store = MemoryStore()
    processor.init(memory_handle(store))
    sources = {source.name: source for source in processor.sources}
    max_time = {name: NO_WATERMARK for name in sources}
    watermark_ms = SPARK_INITIAL_WATERMARK_MS
    marks_ms = {name: SPARK_INITIAL_WATERMARK_MS for name, source in sources.items()
                if source.watermark is not None}
    run = DriverRun()
    seq = 0
    wants_progress = bool(processor.progress_keys)
    statistic = protocol.event_time_statistic
    redelivered: tuple[Event, ...] = ()
    for epoch, events in enumerate(log.epochs):
        by_key: dict[Row, list[Any]] = {}
        arrived: dict[int, Event] = {}
        progress: dict[str, Watermark] = {}
        for event in (*redelivered, *events) if redelivered else events:
            seq += 1
            source = sources.get(event.table)
            if source is None:
                continue
            time_index = source.event_time_index
            t = event.row[time_index] if time_index is not None else 0
            max_time[event.table] = statistic(max_time[event.table], t)
            if wants_progress:
                progress[event.table] = statistic(progress.get(event.table, NO_WATERMARK), t)
            arrived[seq] = event
            outs = processor.stateless_of(event.table, event.row)
            for out in outs:
                by_key.setdefault(processor.key_of(out), []).append(Arrival(seq, len(outs), t, out))
        if progress:  # every shard that wants it learns how far each source got
            reached = [SourceProgress(table, t) for table, t in sorted(progress.items())]
            for key in processor.progress_keys:
                by_key.setdefault(key, []).extend(reached)
        outputs = []
        before_ms = watermark_ms
        before = before_ms * MICROS_PER_MILLI
        for name in marks_ms:  # Spark: per input, then the minimum over them
            declared = sources[name].watermark
            assert declared is not None
            marks_ms[name] = protocol.watermark_ms(max_time[name], declared.delay, marks_ms[name])
        if marks_ms:
            watermark_ms = max(watermark_ms, min(marks_ms.values()))
        rows_watermark = protocol.rows_watermark(before, watermark_ms * MICROS_PER_MILLI)
        for key in sorted(by_key, key=row_sort_key):
            store.current_key = key
            outputs += processor.handle_rows(key, by_key[key], rows_watermark)
        timers_ms = protocol.timers_watermark_ms(before_ms, watermark_ms)
        outputs += _fire_timers(processor, store, timers_ms, timers_ms * MICROS_PER_MILLI)
        record_outputs(run, epoch, outputs, arrived, before)
        run.state_rows.append(store.size())
        if measure_bytes:
            run.state_bytes.append(store.size_in_bytes())
        redelivered = ()
        if epoch in restart_after:
            processor.init(memory_handle(store))  # a new process: in-memory caches are gone
            redelivered = protocol.redelivered_after_restart(events)
    if close:
        record_outputs(run, len(log.epochs), _fire_timers(processor, store, None, CLOSED_WATERMARK),
                       {}, CLOSED_WATERMARK)
    return run


def _fire_timers(processor: EowcProcessor, store: MemoryStore, watermark_ms: int | None,
                 watermark: Watermark) -> list[Output]:
    """Fire every timer with ``expiry <= watermark_ms`` (all of them when None), in (expiry,
    key) order."""
    outputs: list[Output] = []
    while (timer := store.pop_due_timer(watermark_ms)) is not None:
        expiry, key = timer
        store.current_key = key
        outputs += processor.handle_timer(key, expiry, watermark)
    return outputs


def record_outputs(run: DriverRun, epoch: int, outputs: list[Output],
                   arrived: Mapping[int, Event], watermark_before: Watermark) -> None:
    """Add one epoch's outputs to ``run``: its emitted rows (:func:`emission_order`), and
    the source rows all of whose rows the executor refused (late, left out of INPUT)."""
    run.emissions += [Emission(epoch, e.row) if e.partition is None
                      else PartitionEmission(epoch, e.row, e.partition)
                      for e in emission_order(o for o in outputs if isinstance(o, Emit))]
    updates = sorted((o for o in outputs if isinstance(o, Update)), key=lambda u: u.order)
    run.changes += [Change(epoch, u.op, u.row) for u in updates]
    refused = Counter(o.seq for o in outputs if isinstance(o, Refusal))
    fanout = {o.seq: o.fanout for o in outputs if isinstance(o, Refusal)}
    run.late += [LateRow(epoch, arrived[s], watermark_before) for s in sorted(refused)
                 if refused[s] == fanout[s]]


def emission_order(emits: Iterable[Emit]) -> list[Emit]:
    """An epoch's emitted rows, in the order they were emitted, as a consumer of all
    partitions at once would see them: the rows of each partition (``Emit.partition``) in the
    order the executor emitted them, the partitions merged by ``order``; the rows that name
    no partition put in place by ``order`` (the reference's order). The result is in the
    reference's order exactly when each partition emitted in it."""
    by_partition: dict[int | None, list[Emit]] = {}
    for emit in emits:
        by_partition.setdefault(emit.partition, []).append(emit)
    by_order = attrgetter("order")
    unnamed = sorted(by_partition.pop(None, []), key=by_order)
    streams = [unnamed, *(by_partition[p] for p in sorted(by_partition))]
    streams = [s for s in streams if s]
    if len(streams) <= 1:
        return streams[0] if streams else []
    return list(heapq.merge(*streams, key=by_order))
