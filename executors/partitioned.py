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

A *shard* (the executor's grouping key) is the operator's partition key. Where an aggregate
above a SESSION or count window groups rows of several partitions together (its GROUP BY
lacks a PARTITION BY column), the shard is the whole input, so that one group is computed in
one place.

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


# ------------------------------------------------------------------------ ordered operators

class OrderedPartitions(EowcProcessor):
    """The two stages of seed 002 for an operator over each partition's rows in ORDER BY order
    of the watermark column. Subclasses say how a partition is made, fed and released."""

    #: The state of one partition (the reference's structure).
    new_partition: Callable[[], Any]

    def __init__(self, plan: ExecutorPlan, operator: Any, time_of: Callable[[Row], Any],
                 shard_is_partition: bool = True) -> None:
        super().__init__(plan)
        self.operator = operator
        self.time_of = time_of
        self.shard_is_partition = shard_is_partition
        self.complete = partial(time_is_complete, convention=plan.convention)

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.buffers: dict[Row, SortBuffer] = {}
        self.sort_table = handle.map_state("sort_buffer")
        self.inserted = handle.value_state("inserted")
        self.partitions = handle.value_state("partitions")
        self.timer = ShardTimer(self.handle)

    def key_of(self, row: Row) -> Row:
        return self.operator.partition(row) if self.shard_is_partition else ()

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

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        """Stage two: move the complete rows, in order, to their partitions; emit what became
        final; wait for the next row or frame."""
        self.timer.fired()
        watermark = input_watermark(watermark)
        buffer = self._buffer(key)
        partitions: dict[Row, Any] = self.partitions.get() or {}
        for _, row in buffer.drain(lambda t: self.complete(t, watermark)):
            part = self.operator.partition(row)
            if part not in partitions:
                partitions[part] = self.new_partition()
            partitions[part].add(self.operator, row)
        yield from self.release(partitions, watermark)
        partitions = {k: p for k, p in partitions.items() if not self.is_empty(p)}
        if partitions:
            self.partitions.update(partitions)
        else:
            self.partitions.clear()
        first = buffer.first()
        waits = [self.waits_for(p) for p in partitions.values()]
        if first is not None:
            waits.append(closing_timer_ms(self.complete, first[0]))
        self.timer.at_most(min((w for w in waits if w is not None), default=None))

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        raise NotImplementedError

    def waits_for(self, partition: Any) -> int | None:
        """The timer at which stage two may emit more without new rows (None: only new rows)."""
        return None

    def is_empty(self, partition: Any) -> bool:
        return not partition.rows

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

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        above, convention = self.plan.compiled.above, self.plan.convention
        for key, partition in partitions.items():
            if not partition.pending:
                continue
            for sort_key, row in self.operator.pop_final(partition, watermark, convention):
                out = above(row)
                if out is not None:
                    yield Emit(out, (sort_key, key))

    def waits_for(self, partition: OverRows) -> int | None:
        if not partition.pending:
            return None
        needed = self.operator.waits_for(partition, partition.emitted)
        if needed is None:
            return END_OF_INPUT_MS
        return closing_timer_ms(lambda v, w: frame_is_complete(v, w, self.plan.convention), needed)

    def is_empty(self, partition: OverRows) -> bool:
        return False  # the rows kept for future frames, and the counts of dropped rows


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

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        above, convention = self.plan.compiled.above, self.plan.convention
        for part, partition in partitions.items():
            for last, row in partition.pop_final(self.operator, part, watermark, convention):
                out = above(row)
                if out is not None:
                    yield Emit(out, (last, row_sort_key(part)))

    def waits_for(self, partition: PatternRows) -> int | None:
        return END_OF_INPUT_MS if partition.start < len(partition.rows) else None

    def is_empty(self, partition: PatternRows) -> bool:
        return False  # the number of matches so far (MATCH_NUMBER) and the rows PREV reads


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

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
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

    def is_empty(self, partition: CountRows) -> bool:
        return False  # the numbering continues: rows dropped and the next window's ordinal


# ------------------------------------------------------------------------- session windows

class EowcSession(EowcProcessor):
    """Session windows: per shard the open sessions of each partition (disjoint, in time
    order). An arriving row opens, extends or merges sessions
    (:meth:`~eowc.executors.session.SessionWindows.add`); a session ``[first, last + gap)``
    is emitted, aggregated, once it closes (the query's ``window_closes``), and deleted. One
    timer, at the earliest open session's close."""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        session, rule = plan.compiled.session, plan.compiled.rule
        assert session is not None and rule is not None
        self.session, self.rule = session, rule
        self.shard_is_partition = not _grouping_spans_partitions(
            plan.compiled.aggregate, session.node.partition_by)

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.open_sessions = handle.value_state("open_sessions")
        self.timer = ShardTimer(self.handle)

    def key_of(self, row: Row) -> Row:
        return self.session.partition(row) if self.shard_is_partition else ()

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        if not accepted:
            return
        partitions: dict[Row, list[OpenSession]] = self.open_sessions.get() or {}
        add, partition_of = self.session.add, self.session.partition
        for arrival in accepted:
            add(partitions.setdefault(partition_of(arrival.row), []), arrival.row)
        partitions = {part: sessions for part, sessions in partitions.items() if sessions}
        self._keep(partitions)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        watermark = input_watermark(watermark)
        partitions: dict[Row, list[OpenSession]] = self.open_sessions.get() or {}
        closed: dict[Window, list[Row]] = {}
        still_open: dict[Row, list[OpenSession]] = {}
        for part, sessions in partitions.items():
            for session in sessions:
                window = self.session.window(session)
                if self.rule.is_complete(window, watermark):
                    closed.setdefault(window, []).extend(
                        self.session.with_window(row, window) for row in session)
                else:
                    still_open.setdefault(part, []).append(session)
        compiled = self.plan.compiled
        for window in sorted(closed, key=lambda w: (w.end, w.start)):
            if compiled.aggregate is None:
                yield from self._session_rows(window, closed[window])
                continue
            for group, out in group_results(compiled, closed[window]):
                yield Emit(out, ((window.end, window.start), row_sort_key(group)))
        self._keep(still_open)

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

    def _keep(self, partitions: dict[Row, list[OpenSession]]) -> None:
        """Store the open sessions; the timer at the earliest one's close."""
        if partitions:
            self.open_sessions.update(partitions)
        else:
            self.open_sessions.clear()
        closes = [closing_timer_ms(self.rule.is_complete, self.session.window(s))
                  for sessions in partitions.values() for s in sessions]
        self.timer.exactly(min(closes, default=None))


# -------------------------------------------------------------------------------- TopN

class EowcTopN(EowcProcessor):
    """Window TopN and deduplication: a partition keeps its top ``limit`` rows in rank order
    (a row that cannot rank within the limit is never kept); the ranked rows are emitted, in
    rank order, once their bound is complete (window TopN: the window closes; deduplication:
    the row's event time is complete, when no row that can still arrive ranks before it). A
    window TopN's partition is deleted once its window is emitted; a deduplication keeps its
    partition, which refuses every later row of the key."""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        top, rule = plan.compiled.top_n, plan.compiled.rule
        assert top is not None and rule is not None
        self.top, self.rule = top, rule

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.partition = handle.value_state("top_rows")
        self.timer = ShardTimer(self.handle)

    def key_of(self, row: Row) -> Row:
        return self.top.partition(row)

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        if not accepted:
            return
        partition: TopRows = self.partition.get() or TopRows()
        for arrival in accepted:
            partition.add(self.top, arrival.row)
        self.partition.update(partition)
        self.timer.exactly(self._next_timer(partition))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        watermark = input_watermark(watermark)
        partition: TopRows | None = self.partition.get()
        if partition is None:
            return
        above, sort_key = self.plan.compiled.above, row_sort_key(key)
        for bound, ranked in partition.pop_final(self.rule.bound, self.rule.is_complete,
                                                 watermark):
            out = above(ranked)
            if out is not None:
                yield Emit(out, (bound, sort_key, ranked[-1]))
        done = partition.emitted == len(partition.rows)
        if done and partition.rows and isinstance(self.rule.bound(partition.rows[0] + (1,)), Window):
            self.partition.clear()  # the window closed: every later row of it is late
            return
        self.partition.update(partition)
        self.timer.exactly(self._next_timer(partition))

    def _next_timer(self, partition: TopRows) -> int | None:
        ranked = partition.next_ranked()
        return None if ranked is None else closing_timer_ms(self.rule.is_complete,
                                                            self.rule.bound(ranked))


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

class OverWindowChangelog(EowcProcessor):
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

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        over = plan.compiled.over
        assert over is not None
        self.over = over
        self.complete = partial(time_is_complete, convention=plan.convention)

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.state = handle.value_state("partition")

    def key_of(self, row: Row) -> Row:
        return self.over.partition(row)

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        if not accepted:
            return
        over, above = self.over, self.plan.compiled.above
        partition, shown = self.state.get() or (OverRows(), [])
        for arrival in accepted:
            at = partition.add(over, arrival.row)
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
        self.state.update((partition, shown))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        return iter(())  # no timers: every change is emitted in the batch that makes it

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


class SessionChangelog(EowcProcessor):
    """The SESSION TVF read without a GROUP BY, emitting on update: per partition key its
    sessions (disjoint, in time order); an arriving row opens, extends or merges sessions
    (:meth:`~eowc.executors.session.SessionWindows.add`), and the rows of the sessions it
    touched are retracted with their old window and inserted with the new one (the net change
    of the batch). A session no row can join any more
    (:func:`~eowc.semantics.rules.triggers.session_is_closed` of its last row at the
    watermark) never changes again and is deleted."""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        session = plan.compiled.session
        assert session is not None and plan.compiled.aggregate is None
        self.session = session

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.open_sessions = handle.value_state("open_sessions")

    def key_of(self, row: Row) -> Row:
        return self.session.partition(row)

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        accepted, refused = self.plan.admit(arrivals, watermark)
        yield from refused
        if not accepted:
            return
        session = self.session
        sessions: list[OpenSession] = self.open_sessions.get() or []
        before = list(sessions)  # add replaces the sessions it merges, never changes them
        times = []
        for arrival in accepted:
            if session.time(arrival.row) is not None:
                session.add(sessions, arrival.row)
                times.append(session.time(arrival.row))
        grown = [s for s in sessions if any(session.window(s).start <= t < session.window(s).end
                                            for t in times)]
        changed = self.changed_before(before, [session.window(s) for s in grown], times)
        old = [row for s in changed for row in self._outputs(s)]
        now = [row for s in grown for row in self._outputs(s)]
        yield from net_changes(old, now)
        gap, convention = session.gap, self.plan.convention
        sessions = [s for s in sessions if not session_is_closed(session.time(s[-1]), gap,
                                                                 watermark, convention)]
        if sessions:
            self.open_sessions.update(sessions)
        else:
            self.open_sessions.clear()

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        return iter(())  # no timers: every change is emitted in the batch that makes it

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
