"""The EOWC executors of the partitioned operators: OVER windows (seed 002), MATCH_RECOGNIZE,
count windows, session windows, window TopN and deduplication.

Each is written against :mod:`eowc.executors.state`, like the executors of seed 000, and keeps
a partition's structure of the executors' own operators as a value in state
(:class:`~eowc.executors.over_window.OverRows`, :class:`~eowc.executors.pattern.PatternRows`,
:class:`~eowc.executors.count_window.CountRows`, :class:`~eowc.executors.top_n.TopRows`, a
partition's :class:`~eowc.executors.session.OpenSession` list), independent of the reference
interpreter's. Shared with the reference: the plan, the trigger functions
(:mod:`eowc.semantics.rules.triggers`: when a result is final) and the aggregate functions
(:mod:`eowc.semantics.operators.aggregates`); the differential tests compare everything else.

**Ordered operators** (:class:`OrderedPartitions`: OVER, MATCH_RECOGNIZE, count windows) are
the two stages of seed 002. Stage one is the SortBuffer of the EOWC sort, per shard: a row
waits there until its ORDER BY value (the watermark column) is complete
(``time_is_complete``). Stage two receives the complete rows in order, so a partition's rows
only ever grow at the end, and each row's results are computed once, when its frame (match,
window) is final, after which the rows no future result reads are deleted. One timer per
shard, at the earliest of: the first buffered row becoming complete, and what stage two waits
for (``v + y`` of ``RANGE y FOLLOWING``; the end of the input for ``UNBOUNDED FOLLOWING`` or a
row that has not arrived). After a restart the structures are read back from state.

**Session windows** (:class:`EowcSession`) keep the rows of a shard's open sessions; one timer
at the earliest open session's close; a row that falls between two sessions merges them.
**TopN** (:class:`EowcTopN`: window TopN, deduplication) keeps only a partition's top
``limit`` rows; a ranked row is emitted once its bound (its window, its event time) is
complete.

A *shard* (the executor's grouping key) is a hash bucket of the operator's partition key
(:class:`PartitionBuckets`): its partitions share one value state and one timer. Where an
aggregate above a SESSION or count window groups rows of several partitions together (its
GROUP BY lacks a PARTITION BY column), the shard is the whole input, so that one group is
computed in one place.

The end of the input: the reference closes a bounded input with the watermark at +infinity;
on Spark the ``--close`` row of ``eowc_arrival_log`` (event time 2262-01-01) moves the
watermark past :data:`END_OF_INPUT_MS`, which the executors read as the end of the input.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from eowc.executors.buckets import bucket_of
from eowc.executors.count_window import CountRows
from eowc.executors.interface import EowcProcessor
from eowc.executors.over_window import OverRows, session_span
from eowc.executors.pattern import PatternRows
from eowc.executors.plan import BoundQuery, ExecutorPlan
from eowc.executors.protocol import (
    Arrival,
    Emit,
    Output,
    ShardTimer,
    Update,
    closing_timer_ms,
)
from eowc.executors.session import OpenSession
from eowc.executors.sort_buffer import SortBuffer
from eowc.executors.top_n import TopRows
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import ColumnRef, Row
from eowc.semantics.ir.plan import Aggregate
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.ir.windows import Window
from eowc.semantics.operators.aggregates import aggregate_value
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    Watermark,
    frame_is_complete,
    session_is_closed,
    time_is_complete,
)

#: 2200-01-01 00:00:00 UTC in milliseconds: a watermark at or past it means the input ended.
END_OF_INPUT_MS = 7_258_118_400_000


def input_watermark(watermark: Watermark) -> Watermark:
    """The watermark as the reference sees it: +infinity once the input has ended."""
    return CLOSED_WATERMARK if watermark >= END_OF_INPUT_MS * MICROS_PER_MILLI else watermark


def _grouping_spans_partitions(aggregate: Aggregate | None, partition_by: tuple[str, ...]) -> bool:
    """An aggregate above a partitioned TVF puts rows of several partitions in one group: its
    GROUP BY lacks a PARTITION BY column."""
    if aggregate is None:
        return False
    grouped = {e.name for _, e in aggregate.group_by if isinstance(e, ColumnRef)}
    return not set(partition_by) <= grouped


#: The hash buckets of a partitioned executor's partition keys: its shards (Spark keys). A
#: bucket's partitions share one value state and one timer. The bucket is part of the state's
#: key: changing this number makes a checkpoint unreadable by the executor.
PARTITION_BUCKETS = 128


class PartitionBuckets(EowcProcessor):
    """An executor whose state is per partition key, sharded by the hash bucket of the
    partition (:func:`~eowc.executors.buckets.bucket_of`, one of :data:`PARTITION_BUCKETS`),
    or by the whole input (``()``) where its grouping spans partitions. A shard's partitions
    share one value state, a dict from partition key to that partition's state, and one timer,
    at the earliest watermark any of them waits for (:meth:`wakes_at`); when it fires, every
    partition of the shard that is due emits (:meth:`release`). A partition with nothing kept
    (:meth:`is_spent`) is removed from the dict, so that state is bounded by the open
    partitions. (A bucket, not a partition, per key, and one value: each key and each state
    call costs Spark's state API a Python call and round trips to the JVM per micro-batch.)"""

    #: The name of the shard's value state.
    state_name = "partitions"
    #: Whether the executor waits for the watermark (False: every change is emitted in the
    #: batch that makes it).
    has_timers = True

    def __init__(self, plan: ExecutorPlan, partition_of: Callable[[Row], Row],
                 shard_is_partition: bool = True) -> None:
        super().__init__(plan)
        self.partition_of = partition_of
        self.shard_is_partition = shard_is_partition

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.bucket = handle.value_state(self.state_name)
        self.timer = ShardTimer(self.handle)

    def key_of(self, row: Row) -> Row:
        """The row's shard: the bucket of its partition key (as a one-value key), or ``()``."""
        if not self.shard_is_partition:
            return ()
        return (bucket_of(self.partition_of(row), PARTITION_BUCKETS),)

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        """The rows that are not late go to their partitions (:meth:`insert`); then every
        partition of the shard that is due at ``watermark`` emits (:meth:`release`)."""
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        if not accepted:
            return
        self.shard = key
        by_partition: dict[Row, list[Row]] = {}
        partition_of = self.partition_of
        for arrival in accepted:
            part = partition_of(arrival.row)
            if part in by_partition:
                by_partition[part].append(arrival.row)
            else:
                by_partition[part] = [arrival.row]
        partitions: dict[Row, Any] = self.bucket.get() or {}
        for part, rows in by_partition.items():
            yield from self.insert(partitions, part, rows, watermark)
        if self.has_timers:
            # What is final at this watermark is emitted now, not by the timer (which Spark
            # fires at the same watermark later in the batch): the shard is written once.
            yield from self.release(partitions, input_watermark(watermark))
        self.keep(partitions)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        """Every partition of the shard that is due emits."""
        if not self.has_timers:
            return
        self.timer.fired()
        self.shard = key
        partitions: dict[Row, Any] = self.bucket.get() or {}
        yield from self.release(partitions, input_watermark(watermark))
        self.keep(partitions)

    def insert(self, partitions: dict[Row, Any], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        """Add ``rows`` (in arrival order, none late) to partition ``part``'s state in
        ``partitions`` (absent before its first rows); what an emit-on-update executor emits."""
        raise NotImplementedError

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        """Emit what became final in every partition of the shard, and drop it from state."""
        raise NotImplementedError

    def wakes_at(self, state: Any) -> int | None:
        """The watermark (ms) at which a partition may emit more without new rows (None: only
        new rows)."""
        return None

    def is_spent(self, state: Any) -> bool:
        """Whether a partition keeps nothing a later row or timer needs."""
        return False

    def next_timer(self, partitions: dict[Row, Any]) -> int | None:
        """The shard's timer: the earliest partition's."""
        wakes = self.wakes_at
        return min((w for w in map(wakes, partitions.values()) if w is not None), default=None)

    def keep(self, partitions: dict[Row, Any]) -> None:
        """Store the shard's partitions (the spent ones removed); its timer at the earliest
        time one of them waits for."""
        for part in [p for p, state in partitions.items() if self.is_spent(state)]:
            del partitions[part]
        if partitions:
            self.bucket.update(partitions)
        else:
            self.bucket.clear()
        if self.has_timers:
            self.timer.exactly(self.next_timer(partitions))


# ------------------------------------------------------------------------ ordered operators

class OrderedPartitions(PartitionBuckets):
    """The two stages of seed 002 for an operator over each partition's rows in ORDER BY order
    of the watermark column. Subclasses say how a partition is made, fed and released."""

    #: The state of one partition (the reference's structure).
    new_partition: Callable[[], Any]

    def __init__(self, plan: ExecutorPlan, operator: Any, time_of: Callable[[Row], Any],
                 shard_is_partition: bool = True) -> None:
        super().__init__(plan, operator.partition, shard_is_partition)
        self.operator = operator
        self.time_of = time_of
        self.complete = partial(time_is_complete, convention=plan.convention)

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.buffers: dict[Row, SortBuffer] = {}
        self.sort_table = handle.map_state("sort_buffer")
        self.inserted = handle.value_state("inserted")

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        """Stage one: buffer the rows that are not late."""
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        if not accepted:
            return
        inserted = self.inserted.get() or 0
        rows = []
        for arrival in accepted:
            inserted += 1
            rows.append(((self.time_of(arrival.row), inserted), arrival.row))
        self.inserted.update(inserted)
        self._buffer(key).insert(rows)
        self.timer.at_most(closing_timer_ms(self.complete, min(k[0] for k, _ in rows)))

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        """Stage two: move the shard's complete rows, in order, to their partitions; emit what
        became final (:meth:`emit_final`)."""
        for _, row in self._buffer(self.shard).drain(lambda t: self.complete(t, watermark)):
            part = self.operator.partition(row)
            if part not in partitions:
                partitions[part] = self.new_partition()
            partitions[part].add(self.operator, row)
        return self.emit_final(partitions, watermark)

    def emit_final(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        raise NotImplementedError

    def next_timer(self, partitions: dict[Row, Any]) -> int | None:
        """The earliest of what stage two waits for and the first buffered row's completion."""
        waits = super().next_timer(partitions)
        first = self._buffer(self.shard).first()
        if first is not None:
            buffered = closing_timer_ms(self.complete, first[0])
            waits = buffered if waits is None else min(waits, buffered)
        return waits

    def _buffer(self, key: Row) -> SortBuffer:
        if key not in self.buffers:
            self.buffers[key] = self.new_sort_buffer(self.sort_table)
        return self.buffers[key]


class EowcOverWindow(OrderedPartitions):
    """EOWC OverWindow (seed 002): a row is emitted with its window functions once its own
    ORDER BY value and its frame's last row are complete (``frame_is_complete``); rows that
    left every future frame are deleted (:meth:`OverFunctions.pop_final`)."""

    new_partition = OverRows

    def __init__(self, plan: ExecutorPlan) -> None:
        over = plan.compiled.over
        assert over is not None
        super().__init__(plan, over, over.order_value)

    def emit_final(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        above, convention = self.plan.compiled.above, self.plan.convention
        for key, partition in partitions.items():
            if not partition.pending:
                continue
            for sort_key, row in self.operator.pop_final(partition, watermark, convention):
                out = above(row)
                if out is not None:
                    yield Emit(out, (sort_key, key))

    def wakes_at(self, partition: OverRows) -> int | None:
        if not partition.pending:
            return None
        needed = self.operator.waits_for(partition, partition.emitted)
        if needed is None:
            return END_OF_INPUT_MS
        return closing_timer_ms(lambda v, w: frame_is_complete(v, w, self.plan.convention), needed)


class EowcPattern(OrderedPartitions):
    """MATCH_RECOGNIZE: the matcher's searches, taken from where the partition stopped, are
    emitted once every row they looked at is complete (``match_is_final``); rows no later
    search reads are deleted. Stage two holds only complete rows, so a search that is not
    final waits for a row that has not arrived: a new row, or the end of the input."""

    new_partition = PatternRows

    def __init__(self, plan: ExecutorPlan) -> None:
        pattern = plan.compiled.pattern
        assert pattern is not None
        super().__init__(plan, pattern, pattern.order_value)

    def emit_final(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        above, convention = self.plan.compiled.above, self.plan.convention
        for part, partition in partitions.items():
            for last, row in partition.pop_final(self.operator, part, watermark, convention):
                out = above(row)
                if out is not None:
                    yield Emit(out, (last, row_sort_key(part)))

    def wakes_at(self, partition: PatternRows) -> int | None:
        return END_OF_INPUT_MS if partition.start < len(partition.rows) else None


def group_results(compiled: BoundQuery, tvf_rows: list[Row]) -> list[tuple[Row, Row]]:
    """The GROUP BY above a session or count window TVF over some of its rows: each group's
    key and result row (after HAVING and the projection), ordered by key. The rows of a
    group are folded in the order given."""
    middle = compiled.middle
    assert middle is not None
    groups: dict[Row, list[Row]] = {}
    for tvf_row in tvf_rows:
        for row in middle(tvf_row):
            groups.setdefault(compiled.key(row), []).append(row)
    out = []
    for key in sorted(groups, key=row_sort_key):
        result = compiled.above(key + tuple(aggregate_value(f, groups[key])
                                            for f in compiled.functions))
        if result is not None:
            out.append((key, result))
    return out


class EowcCountWindow(OrderedPartitions):
    """COUNT_TUMBLE / COUNT_HOP: a partition's complete rows are numbered in order; a window
    is emitted once full and its last row complete (``count_window_closes``), with the part
    of the query above it (an aggregate, or the rows), and the rows no later window reads are
    deleted. A partial window is never emitted."""

    new_partition = CountRows

    def __init__(self, plan: ExecutorPlan) -> None:
        count = plan.compiled.count
        assert count is not None
        spans = _grouping_spans_partitions(plan.compiled.aggregate, count.node.partition_by)
        super().__init__(plan, count, count.time, shard_is_partition=not spans)

    def emit_final(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        count, compiled = self.operator, self.plan.compiled
        placed: list[tuple[Any, Row]] = []  # each TVF row with its place in the output
        for part, partition in partitions.items():
            part_key = row_sort_key(part)
            for ordinal, members in partition.pop_closed(count, watermark, self.plan.convention):
                last = count.order(members[-1])
                placed += [((last, part_key, ordinal, j), row)
                           for j, row in enumerate(count.tvf_rows(members, ordinal))]
        if compiled.aggregate is None:
            assert compiled.middle is not None
            for place, tvf_row in placed:
                for out in compiled.middle(tvf_row):
                    yield Emit(out, place)
            return
        bound = compiled.rule.bound
        for key, out in group_results(compiled, [row for _, row in placed]):
            yield Emit(out, (bound(key), row_sort_key(key)))


# ------------------------------------------------------------------------- session windows

class EowcSession(PartitionBuckets):
    """Session windows: the open sessions of each partition (disjoint, in time order). An
    arriving row opens, extends or merges sessions
    (:meth:`~eowc.executors.session.SessionWindows.add`); a session ``[first, last + gap)``
    is emitted, aggregated, once it closes (the query's ``window_closes``), and deleted, and
    so is a partition without open sessions. The shard's timer is at its earliest open
    session's close."""

    state_name = "open_sessions"

    def __init__(self, plan: ExecutorPlan) -> None:
        session, rule = plan.compiled.session, plan.compiled.rule
        assert session is not None and rule is not None
        super().__init__(plan, session.partition, not _grouping_spans_partitions(
            plan.compiled.aggregate, session.node.partition_by))
        self.session, self.rule = session, rule

    def insert(self, partitions: dict[Row, list[OpenSession]], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        sessions = partitions.setdefault(part, [])
        for row in rows:
            self.session.add(sessions, row)
        return iter(())

    def release(self, partitions: dict[Row, list[OpenSession]], watermark: Watermark
                ) -> Iterator[Emit]:
        """Every closed session of the shard, by window, then group (or partition and time)."""
        closed: dict[Window, list[Row]] = {}
        window_of, is_complete = self.session.window, self.rule.is_complete
        for sessions in partitions.values():
            # The sessions close in their order (their windows end in it): a prefix closed.
            done = 0
            for session in sessions:
                window = window_of(session)
                if not is_complete(window, watermark):
                    break
                closed.setdefault(window, []).extend(
                    self.session.with_window(row, window) for row in session)
                done += 1
            if done:
                del sessions[:done]
        compiled = self.plan.compiled
        for window in sorted(closed, key=lambda w: (w.end, w.start)):
            if compiled.aggregate is None:
                yield from self._session_rows(window, closed[window])
                continue
            for group, out in group_results(compiled, closed[window]):
                yield Emit(out, ((window.end, window.start), row_sort_key(group)))

    def wakes_at(self, sessions: list[OpenSession]) -> int | None:
        """The earliest open session's close: the first's (their windows end in order)."""
        if not sessions:
            return None
        return closing_timer_ms(self.rule.is_complete, self.session.window(sessions[0]))

    def is_spent(self, sessions: list[OpenSession]) -> bool:
        return not sessions

    def _session_rows(self, window: Window, tvf_rows: list[Row]) -> Iterator[Emit]:
        """A closed session read without a GROUP BY: its rows, by partition key, then time
        (equal times in arrival order), through the part of the query above the TVF."""
        compiled, session = self.plan.compiled, self.session
        assert compiled.middle is not None
        for j, tvf_row in enumerate(tvf_rows):
            place = ((window.end, window.start), row_sort_key(session.partition(tvf_row)),
                     session.time(tvf_row), j)
            for row in compiled.middle(tvf_row):
                out = compiled.above(row)
                if out is not None:
                    yield Emit(out, place)


# -------------------------------------------------------------------------------- TopN

#: A deduplication's partition that no row can enter any more (:meth:`EowcTopN.seals`): kept
#: as this alone, in place of its :class:`TopRows`.
SEALED = None


class EowcTopN(PartitionBuckets):
    """Window TopN and deduplication: a partition keeps its top ``limit`` rows in rank order
    (a row that cannot rank within the limit is never kept); the ranked rows are emitted, in
    rank order, once their bound is complete (window TopN: the window closes; deduplication:
    the row's event time is complete, when no row that can still arrive ranks before it). A
    window TopN's partition is deleted once its window is emitted; a deduplication keeps its
    partition, which refuses every later row of the key, as :data:`SEALED` once it is full."""

    state_name = "top_rows"

    def __init__(self, plan: ExecutorPlan) -> None:
        top, rule = plan.compiled.top_n, plan.compiled.rule
        assert top is not None and rule is not None
        super().__init__(plan, top.partition)
        self.top, self.rule = top, rule
        #: A deduplication (its bound is a row's event time), not a window TopN (a window).
        self.deduplicates = not isinstance(rule.bound((0,) * len(top.node.schema)), Window)

    def insert(self, partitions: dict[Row, TopRows | None], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        if part in partitions:
            partition = partitions[part]
            if partition is SEALED:
                return iter(())
        else:
            partition = partitions[part] = TopRows()
        for row in rows:
            partition.add(self.top, row)
        return iter(())

    def release(self, partitions: dict[Row, TopRows | None], watermark: Watermark
                ) -> Iterator[Emit]:
        above, bound, is_complete = self.plan.compiled.above, self.rule.bound, self.rule.is_complete
        for part, partition in partitions.items():
            if partition is SEALED:
                continue
            final = partition.pop_final(bound, is_complete, watermark)
            if not final:
                continue
            if self.seals(partition):
                partitions[part] = SEALED
            sort_key = row_sort_key(part)
            for value, ranked in final:
                out = above(ranked)
                if out is not None:
                    yield Emit(out, (value, sort_key, ranked[-1]))

    def seals(self, partition: TopRows) -> bool:
        """Whether a deduplication's partition takes no more rows: all its top rows were
        emitted and a row after all of them would rank beyond the limit. A row that is not
        late is after all of them: their event times are complete (they were emitted), its
        is not (:func:`~eowc.semantics.rules.triggers.row_is_late`), and the ORDER BY is the
        event time ascending."""
        return (self.deduplicates and partition.emitted == len(partition.rows)
                and not partition.ranks_a_later_row(self.top))

    def wakes_at(self, partition: TopRows | None) -> int | None:
        ranked = None if partition is SEALED else partition.next_ranked()
        return None if ranked is None else closing_timer_ms(self.rule.is_complete,
                                                            self.rule.bound(ranked))

    def is_spent(self, partition: TopRows | None) -> bool:
        """A window TopN's partition once its window is emitted (every later row of it is
        late); never a deduplication's."""
        return (not self.deduplicates and bool(partition.rows)
                and partition.emitted == len(partition.rows))


def partitioned_processor(plan: ExecutorPlan) -> EowcProcessor | None:
    """The executor of a query whose stateful operator is partitioned, or None."""
    compiled = plan.compiled
    if compiled.over is not None:
        return EowcOverWindow(plan)
    if compiled.pattern is not None:
        return EowcPattern(plan)
    if compiled.top_n is not None:
        return EowcTopN(plan)
    if compiled.session is not None:
        return EowcSession(plan)
    if compiled.count is not None:
        return EowcCountWindow(plan)
    return None


# ------------------------------------------------------------ emit on update: OverWindow

class OverWindowChangelog(PartitionBuckets):
    """Seed 002's general OverWindow, for a query without EMIT ON WINDOW CLOSE: per batch,
    each partition's new rows are inserted in order and the results of the *affected range*
    are recomputed: the rows whose frame (or LAG/LEAD row, or rank) a new row enters
    (:attr:`OverFunctions.influence`). Each result row that changed is retracted and its new
    version inserted; the changelog of a batch is the net change of the partition's result.

    State per partition: its :class:`OverRows` and the result row last shown for each. A row
    whose value is complete can no longer be inserted before, so rows that no future
    insertion can change, and that no changeable row's frame reads, are deleted
    (:meth:`OverFunctions.unread_rows`); with UNBOUNDED FOLLOWING, or a ``RANGE ...
    FOLLOWING`` frame, the rows are kept."""

    state_name = "partition"
    has_timers = False

    def __init__(self, plan: ExecutorPlan) -> None:
        over = plan.compiled.over
        assert over is not None
        super().__init__(plan, over.partition)
        self.over = over
        self.complete = partial(time_is_complete, convention=plan.convention)

    def insert(self, partitions: dict[Row, Any], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        over, above = self.over, self.plan.compiled.above
        partition, shown = partitions.get(part) or (OverRows(), [])
        for row in rows:
            at = partition.add(over, row)
            shown.insert(at, None)  # no result shown yet
        new = [i for i, s in enumerate(shown) if s is None]
        values = partition.values  # sorted, as the rows are
        old: list[Row] = []
        now: list[Row] = []
        for i in self._affected(values, new):
            result = above(over.results(partition, i))
            before = shown[i]
            if before is not None and before[0] == result:
                continue
            if before is not None and before[0] is not None:
                old.append(before[0])
            if result is not None:
                now.append(result)
            shown[i] = (result,)
        yield from net_changes(old, now)
        cut = over.unread_rows(partition, self._first_changeable(values, watermark), watermark)
        partition.drop_front(cut)
        del shown[:cut]
        partitions[part] = (partition, shown)

    def _affected(self, values: list[Any], new: list[int]) -> list[int]:
        """The positions whose results a new row (at the positions ``new``) may change;
        ``values`` are the partition's ORDER BY values, in order."""
        n = len(values)
        affected: set[int] = set(new)
        for p in new:
            for kind, lo, hi in self.over.influence:
                if kind == "session":  # its session, merged by the new rows
                    first, end = session_span(lo, values, p)
                    last = end - 1
                elif kind == "rows":
                    first = 0 if hi is None else max(0, p - hi)
                    last = n - 1 if lo is None else min(n - 1, p - lo)
                else:
                    v = values[p]
                    first = 0 if hi is None else bisect.bisect_left(values, v - hi)
                    last = n - 1 if lo is None else bisect.bisect_right(values, v - lo) - 1
                affected.update(range(first, last + 1))
        return sorted(affected)

    def _first_changeable(self, values: list[Any], watermark: Watermark) -> int:
        """The first position a future batch can still change (``values``: the partition's
        ORDER BY values, in order): rows that can still arrive have values that are not
        complete at ``watermark``, so they are inserted after every complete row, and change
        only rows within their influence."""
        first_open = next((i for i, v in enumerate(values) if not self.complete(v, watermark)),
                          len(values))
        changeable = first_open
        for kind, gap, hi in self.over.influence:
            if kind == "session":
                changeable = min(changeable, self._first_open_session(values, gap, watermark))
                continue
            if hi is None:
                return 0
            if kind == "rows":
                changeable = min(changeable, first_open - hi)
            elif hi > 0:
                return 0  # RANGE ... FOLLOWING: rows kept
        return max(0, changeable)

    def _first_open_session(self, values: list[Any], gap: int, watermark: Watermark) -> int:
        """The first row of the first session (of gap ``gap``) that a row still to come can
        join or merge: a session is closed once :func:`session_is_closed` of its last row, and
        the sessions before a closed one are closed too (their last rows are earlier); the
        rows with a NULL ORDER BY value (the last session) are never closed."""
        start = len(values)
        while start > 0:
            first, end = session_span(gap, values, start - 1)
            last = values[end - 1]
            if last is not None and session_is_closed(last, gap, watermark, self.plan.convention):
                break
            start = first
        return start


class SessionChangelog(PartitionBuckets):
    """The SESSION TVF read without a GROUP BY, emitting on update: per partition key its
    sessions (disjoint, in time order); an arriving row opens, extends or merges sessions
    (:meth:`~eowc.executors.session.SessionWindows.add`), and the rows of the sessions it
    touched are retracted with their old window and inserted with the new one (the net change
    of the batch). A session no row can join any more
    (:func:`~eowc.semantics.rules.triggers.session_is_closed` of its last row at the
    watermark) never changes again and is deleted, and so is a partition without sessions."""

    state_name = "open_sessions"
    has_timers = False

    def __init__(self, plan: ExecutorPlan) -> None:
        session = plan.compiled.session
        assert session is not None and plan.compiled.aggregate is None
        super().__init__(plan, session.partition)
        self.session = session

    def insert(self, partitions: dict[Row, list[OpenSession]], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        session = self.session
        sessions: list[OpenSession] = partitions.get(part) or []
        before = list(sessions)  # add replaces the sessions it merges, never changes them
        times = []
        for row in rows:
            if session.time(row) is not None:
                session.add(sessions, row)
                times.append(session.time(row))
        grown = [s for s in sessions if any(session.window(s).start <= t < session.window(s).end
                                            for t in times)]
        changed = self.changed_before(before, [session.window(s) for s in grown], times)
        old = [row for s in changed for row in self._outputs(s)]
        now = [row for s in grown for row in self._outputs(s)]
        yield from net_changes(old, now)
        gap, convention = session.gap, self.plan.convention
        partitions[part] = [s for s in sessions if not session_is_closed(
            session.time(s[-1]), gap, watermark, convention)]

    def is_spent(self, sessions: list[OpenSession]) -> bool:
        return not sessions

    def changed_before(self, before: list[OpenSession], grown: list[Window], times: list[int]
                       ) -> list[OpenSession]:
        """The sessions of before the batch whose rows change: those inside a session (its
        window in ``grown``) that a new row (at ``times``) joined, merged into it or not."""
        window = self.session.window
        return [s for s in before if any(w.start <= window(s).start < w.end for w in grown)]

    def _outputs(self, rows: OpenSession) -> list[Row]:
        """The query's rows of one session: its rows with its window, through the query."""
        compiled, window = self.plan.compiled, self.session.window(rows)
        assert compiled.middle is not None
        out = []
        for row in rows:
            for middle in compiled.middle(self.session.with_window(row, window)):
                result = compiled.above(middle)
                if result is not None:
                    out.append(result)
        return out


def net_changes(old: list[Row], now: list[Row]) -> Iterator[Update]:
    """The changes that turn the rows ``old`` into ``now`` (as multisets): the deletes, then
    the inserts."""
    retracted, inserted = Counter(old) - Counter(now), Counter(now) - Counter(old)
    for row in retracted.elements():
        yield Update("-", row, (0, row_sort_key(row)))
    for row in inserted.elements():
        yield Update("+", row, (1, row_sort_key(row)))


def changelog_processor(plan: ExecutorPlan) -> EowcProcessor:
    """The emit-on-update executor of a query without EMIT ON WINDOW CLOSE: seed 002's
    general OverWindow, or the SESSION TVF's rows; a PlanError for any other query."""
    if plan.compiled.session is not None and plan.compiled.aggregate is None:
        return SessionChangelog(plan)
    if plan.compiled.over is None:
        raise PlanError("only OVER windows have an emit-on-update executor yet (seed 002's "
                        "general OverWindow); add EMIT ON WINDOW CLOSE, or run the query on "
                        "the reference (eowc run --mode update)")
    return OverWindowChangelog(plan)
