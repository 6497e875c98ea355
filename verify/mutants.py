"""The mutant zoo: bugs a real EOWC executor makes, each injected into the in-process
executors' own logic (never into their output), for ``eowc verify --mutants``.

A :class:`Mutant` builds, for a query and a convention, the executor with one decision taken
wrongly, and may drive it with an engine that takes one of its own decisions wrongly. The ways
in, all without touching the module globals the executors read:

* **the engine** (:class:`~eowc.executors.driver.MicroBatchProtocol` subclasses): the event-time
  statistic, the watermark, the watermark the rows and the timers see;
* **the plan** the executor is built from (:class:`~eowc.executors.processors.ExecutorPlan`): its
  late check (:meth:`ExecutorPlan.late_comparison`, ``admit``, ``compiled.per_window``), the
  sort key of its operator, its session TVF;
* **the executor itself**: a subclass overriding one method (:func:`_mixed` gives the built
  executor the subclass, whatever its class), its SortBuffer
  (:meth:`~eowc.executors.processors.EowcProcessor.new_sort_buffer`), or the state handle it is
  given at each start (its states, its timers).

A mutant that has nothing to break in a query (a join's mutant on a query without a join)
does not apply to it: its ``build`` returns None.

Under ``--ties row-id`` each mutant is built with the case's arrival order (so that its own
bug is the only difference from the right executor); a mutant whose decision is a bug under
one tie order only says so (``Mutant.ties``): ``ties-by-value`` (:data:`ROW_ID_MUTANTS`), the
executor built without the arrival order, is one under row-id only.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from typing import Any

from eowc.executors.choice import processor_for
from eowc.executors.composed import ComposedExecutor
from eowc.executors.driver import SPARK_PROTOCOL, MicroBatchProtocol, run_in_process, spark_watermark_ms
from eowc.executors.interval_join import IntervalJoin
from eowc.executors.multi_input import LowerNode, Marks, sources_of
from eowc.executors.partitioned import EowcOverWindow, EowcSession, EowcTopN, OrderedPartitions
from eowc.executors.plan import several_inputs
from eowc.executors.processors import (
    Arrival,
    Emit,
    EowcGroupAgg,
    EowcProcessor,
    EowcSort,
    ExecutorPlan,
    Output,
    Refusal,
    closing_timer_ms,
    eowc_processor,
    executor_plan,
)
from eowc.executors.sort_buffer import SortBuffer, SortKey
from eowc.executors.state import ListState, MapState, StateHandle, StateSchema, ValueState
from eowc.executors.top_n import TopRanking, TopRows
from eowc.semantics.analysis.completion import CompletionRule, late_check_is_per_window
from eowc.semantics.analysis.operator_inputs import (
    has_join_judging_late_rows,
    is_composed,
    operator_inputs,
)
from eowc.semantics.engines.interpreter import Emission
from eowc.semantics.ir.arrival import Event
from eowc.semantics.ir.expr import ColumnRef, Row
from eowc.semantics.ir.plan import (
    Aggregate,
    ArrivalOrder,
    CountTVF,
    Join,
    MatchRecognize,
    OverWindow,
    Plan,
    Query,
    SessionTVF,
    TopN,
    WindowTVF,
    arrival_ties,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.ir.windows import Window, WindowKind, WindowSpec
from eowc.semantics.rules.triggers import (
    NO_WATERMARK,
    Convention,
    Watermark,
    default_ties,
    time_is_complete,
)
from eowc.verify.executors import Case, InProcessExecutor

#: One unit of the executors' watermark: the millisecond (Spark's watermark, which the
#: in-process driver keeps, is in whole milliseconds; a microsecond off it changes nothing).
UNIT = MICROS_PER_MILLI

Build = Callable[[Query, Convention], EowcProcessor | None]

#: The arrival order the executor being built breaks ties by (``--ties row-id``; None: the
#: deterministic order), set by :class:`MutantExecutor` for the case it runs.
_ARRIVAL: ContextVar[ArrivalOrder | None] = ContextVar("arrival", default=None)


@dataclass(frozen=True)
class Mutant:
    """A realistic executor bug: ``name``, the ``bug`` in domain words, ``where`` it is
    injected, the queries it applies to (``scope``, in words), and ``build(query,
    convention)``: the broken executor of the query, or None when the bug has nothing to break
    in it (not applicable). ``protocol`` drives it."""

    name: str
    bug: str
    where: str
    scope: str
    build: Build
    protocol: MicroBatchProtocol = SPARK_PROTOCOL
    #: The tie order (``--ties``) under which the decision it takes is a bug (None: both).
    ties: str | None = None

    def applies(self, query: Query) -> bool:
        """Whether the bug can change anything for ``query`` (judged under one convention:
        no mutant's applicability depends on it)."""
        return self.build(query, Convention.SPARK) is not None


class MutantExecutor(InProcessExecutor):
    """A :class:`Mutant` as an :class:`~eowc.verify.executors.Executor`: the in-process driver
    running the broken executor (as :class:`~eowc.verify.executors.InProcessExecutor` runs the
    right one: a crash is a restart after the epoch before)."""

    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant
        self.name = f"mutant {mutant.name}"

    def emissions(self, case: Case) -> list[Emission]:
        arrival = arrival_ties(((e.table, e.row) for e in case.log.events),
                               case.ties or default_ties(case.convention))
        token = _ARRIVAL.set(arrival)
        try:
            processor = self.mutant.build(case.query, case.convention)
        finally:
            _ARRIVAL.reset(token)
        if processor is None:
            raise ValueError(f"mutant {self.mutant.name} does not apply to this query")
        return run_in_process(case.query, case.log, case.convention,
                              restart_after=case.restarts(), processor=processor,
                              protocol=self.mutant.protocol).emissions


# ------------------------------------------------------------------------------ helpers

_MIXED: dict[tuple[type, type], type] = {}


def _mixed(processor: EowcProcessor, bug: type) -> EowcProcessor:
    """``processor`` with the methods of ``bug`` (a subclass of a class ``processor`` is an
    instance of, overriding one decision and calling ``super()`` for the rest) in front of its
    own class's: the executor as built, with one decision taken wrongly."""
    cls = type(processor)
    if (bug, cls) not in _MIXED:
        _MIXED[bug, cls] = type(f"{bug.__name__}{cls.__name__}", (bug, cls), {})
    processor.__class__ = _MIXED[bug, cls]
    return processor


def _single_source(query: Query) -> bool:
    """A query of one source and one stateful operator: not run by the composed executor."""
    return not several_inputs(query.plan) and not is_composed(query.plan)


def _plan(query: Query, convention: Convention) -> ExecutorPlan | None:
    """The executor plan of a query of one source (None for joins and unions)."""
    return executor_plan(query, convention, _ARRIVAL.get()) if _single_source(query) else None


def _with_compiled(plan: ExecutorPlan, **changes: Any) -> ExecutorPlan:
    return replace(plan, compiled=replace(plan.compiled, **changes))


def _buffered(processor: EowcProcessor) -> bool:
    """The executor keeps rows in a SortBuffer of its own until they are complete."""
    if isinstance(processor, ComposedExecutor):  # an EOWC sort above, or a join's sort tables
        return processor.upper is None or bool(processor.joins)
    return isinstance(processor, EowcSort | OrderedPartitions)


class _HandleAround:
    """A state handle that passes everything on to ``handle``; each subclass changes one
    thing (the names of the states, or the timers)."""

    def __init__(self, handle: StateHandle) -> None:
        self.handle = handle

    def named(self, name: str) -> str:
        return name

    def value_state(self, name: str, schema: StateSchema | None = None) -> ValueState:
        return self.handle.value_state(self.named(name), schema)

    def list_state(self, name: str, schema: StateSchema | None = None) -> ListState:
        return self.handle.list_state(self.named(name), schema)

    def map_state(self, name: str, key_schema: StateSchema | None = None,
                  value_schema: StateSchema | None = None) -> MapState:
        return self.handle.map_state(self.named(name), key_schema, value_schema)

    def register_timer(self, expiry_ms: int) -> None:
        self.handle.register_timer(expiry_ms)

    def delete_timer(self, expiry_ms: int) -> None:
        self.handle.delete_timer(expiry_ms)

    def timers(self) -> Iterator[int]:
        return self.handle.timers()


# ------------------------------------------------------------------------- the engine

class _WatermarkOfLastRow(MicroBatchProtocol):
    def event_time_statistic(self, highest: Watermark, t: int) -> Watermark:
        return t


class _WatermarkWithoutDelay(MicroBatchProtocol):
    def watermark_ms(self, max_event_time: Watermark, delay: int, previous_ms: int) -> int:
        return spark_watermark_ms(max_event_time, 0, previous_ms)


class _RowsJudgedAfterTheirEpoch(MicroBatchProtocol):
    def rows_watermark(self, before: Watermark, after: Watermark) -> Watermark:
        return after


class _EpochRedelivered(MicroBatchProtocol):
    def redelivered_after_restart(self, epoch: tuple[Event, ...]) -> tuple[Event, ...]:
        return epoch


def _counts_duplicates(query: Query, convention: Convention) -> EowcProcessor | None:
    """The right executor of a query whose result changes when a row arrives twice: not a
    deduplication (the first row of a key, taken twice, is still the first)."""
    processor = processor_for(query, convention, _ARRIVAL.get())
    if isinstance(processor, EowcTopN) and processor.top.limit == 1:
        return None
    return processor


class _NoSettleBatch(MicroBatchProtocol):
    def timers_watermark_ms(self, before_ms: int, after_ms: int) -> int:
        return before_ms


def _correct_single_source(query: Query, convention: Convention) -> EowcProcessor | None:
    """The right executor, for an engine bug that only a query of one source sees (a join
    keeps each source's watermark itself, from the rows' progress)."""
    return processor_for(query, convention, _ARRIVAL.get()) if _single_source(query) else None


def _correct(query: Query, convention: Convention) -> EowcProcessor:
    return processor_for(query, convention, _ARRIVAL.get())


# --------------------------------------------------------------------------- triggers

class _ShiftedTimers(_HandleAround):
    """A state handle whose timers are set ``ms`` earlier than asked (and reported as asked)."""

    def __init__(self, handle: StateHandle, ms: int) -> None:
        super().__init__(handle)
        self.ms = ms

    def register_timer(self, expiry_ms: int) -> None:
        self.handle.register_timer(expiry_ms - self.ms)

    def delete_timer(self, expiry_ms: int) -> None:
        self.handle.delete_timer(expiry_ms - self.ms)

    def timers(self) -> Iterator[int]:
        return iter([e + self.ms for e in self.handle.timers()])


class _TriggerShifted(EowcProcessor):
    """An executor whose trigger judges a watermark ``shift`` above the real one: its timers
    fire that much early, and what they release is judged at the shifted watermark."""

    shift: int

    def init(self, handle: StateHandle) -> None:
        super().init(_ShiftedTimers(handle, self.shift // UNIT))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        return super().handle_timer(key, expiry_ms + self.shift // UNIT, watermark + self.shift)


class _OneUnitEarly(_TriggerShifted):
    shift = UNIT


class _OneUnitLate(_TriggerShifted):
    shift = -UNIT


class _JoinTriggerShifted(ComposedExecutor):
    """A join executor that judges every trigger (which rows no future row can meet, what the
    operators below and above it emit) at watermarks ``shift`` above the real ones."""

    shift: int

    def _step(self, admitted: dict[str, list[Arrival]], before: Marks, after: Marks
              ) -> Iterator[Output]:
        return super()._step(admitted, before, {mark: w + self.shift for mark, w in after.items()})


def _trigger_shifted(bug: type[_TriggerShifted]) -> Build:
    join_bug = type(f"Join{bug.__name__}", (_JoinTriggerShifted,), {"shift": bug.shift})

    def build(query: Query, convention: Convention) -> EowcProcessor | None:
        processor = processor_for(query, convention, _ARRIVAL.get())
        return _mixed(processor, join_bug if isinstance(processor, ComposedExecutor) else bug)
    return build


# -------------------------------------------------------------------------- late checks

class _FlippedLateCheck(ExecutorPlan):
    """The late check's comparison flipped: on the row (``<`` and ``<=`` swapped) and on
    each window (a window takes rows while ``W <= closing`` instead of ``W < closing``)."""

    def late_comparison(self) -> Callable[[int, Watermark], bool]:
        return operator.le if super().late_comparison() is operator.lt else operator.lt

    def window_refusal(self, window: Any, watermark: Watermark) -> str | None:
        return super().window_refusal(window, watermark - 1)  # W - 1 us < c: W <= c


def _late_check_flipped(query: Query, convention: Convention) -> EowcProcessor | None:
    plan = _plan(query, convention)
    if plan is None:
        join = processor_for(query, convention, _ARRIVAL.get())
        assert isinstance(join, ComposedExecutor)
        join.is_late = operator.le if join.is_late is operator.lt else operator.lt
        return join
    return eowc_processor(_FlippedLateCheck(plan.compiled, plan.window_of, plan.options,
                                                     plan.group_window))


def _late_check_per(window: bool) -> Build:
    def build(query: Query, convention: Convention) -> EowcProcessor | None:
        plan = _plan(query, convention)
        if plan is None or plan.window_of is None or \
                not late_check_is_per_window(query.plan, Convention.SPARK):
            return None
        return eowc_processor(_with_compiled(plan, per_window=window))
    return build


# ------------------------------------------------------------------- the executors' logic

class _EmitsOnUpdate(EowcGroupAgg):
    """EowcGroupAgg (and SortAgg) that also emit every group of the shard as rows arrive."""

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        yield from super().handle_rows(key, arrivals, watermark)
        for bound, groups in (self.bounds.get() or {}).items():
            for group, state in sorted(groups.items(), key=lambda item: row_sort_key(item[0])):
                out = self.plan.compiled.above(group + self._results(state))
                if out is not None:
                    yield Emit(out, (bound, row_sort_key(group)))


def _emits_on_update(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    return _mixed(processor, _EmitsOnUpdate) if isinstance(processor, EowcGroupAgg) else None


class _ReleasesInArrivalOrder(EowcSort):
    """EowcSort that emits the complete rows in the order they were buffered."""

    def release(self, key: Row, watermark: Watermark,
                rows: Sequence[tuple[SortKey, Row]] = ()) -> Iterator[Emit]:
        complete, buffer = self.rule.is_complete, self._buffer(key)
        for (_, inserted), row in buffer.insert_and_drain(rows, lambda b: complete(b, watermark)):
            yield Emit(row, inserted)
        first = buffer.first()
        self.timer.exactly(None if first is None else closing_timer_ms(complete, first[0]))


def _sort_in_arrival_order(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    return _mixed(processor, _ReleasesInArrivalOrder) if isinstance(processor, EowcSort) else None


class _DrainsInInsertionOrder(EowcSort):
    """EowcSort that emits a partition's complete rows in the order they were buffered (by
    insertion number), each with its right order and partition."""

    def release(self, key: Row, watermark: Watermark,
                rows: Sequence[tuple[SortKey, Row]] = ()) -> Iterator[Emit]:
        complete, buffer = self.rule.is_complete, self._buffer(key)
        drained = buffer.insert_and_drain(rows, lambda b: complete(b, watermark))
        for (bound, _), row in sorted(drained, key=lambda entry: entry[0][1]):
            yield Emit(row, (bound, self.tie(row)), key[0])
        first = buffer.first()
        self.timer.exactly(None if first is None else closing_timer_ms(complete, first[0]))


def _sort_drained_in_insertion_order(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    return _mixed(processor, _DrainsInInsertionOrder) if isinstance(processor, EowcSort) else None


class _KeyedByEventTime(SortBuffer):
    """A SortBuffer keyed by the watermark column alone: of a batch's rows with the same
    value, the last overwrites the others."""

    def insert(self, rows: Iterable[tuple[SortKey, Any]]) -> None:
        super().insert(_last_of_each_time(rows))

    def insert_and_drain(self, rows: Iterable[tuple[SortKey, Any]],
                         is_complete: Callable[[Any], bool]) -> list[tuple[SortKey, Any]]:
        return super().insert_and_drain(_last_of_each_time(rows), is_complete)


def _last_of_each_time(rows: Iterable[tuple[SortKey, Any]]) -> Iterable[tuple[SortKey, Any]]:
    """Of the rows with equal watermark values, the last (a table keyed by that value)."""
    return {key[0]: (key, row) for key, row in rows}.values()


class _ForgetsDrainedRowsInTable(SortBuffer):
    """A SortBuffer whose drain forgets the drained runs in its cache only: the state table
    keeps them, and a restart, which reads the table again, drains them again. Every row goes
    through the table (``insert_and_drain`` is ``insert`` then ``drain``): rows complete when
    they come, which the buffer's own ``insert_and_drain`` never writes, would otherwise leave
    the bug nothing to act on where no row waits (a window join of aggregates)."""

    def _remove(self, first: SortKey) -> None:
        self._run_keys().remove(first)

    def insert_and_drain(self, rows: Iterable[tuple[SortKey, Any]],
                         is_complete: Callable[[Any], bool]) -> list[tuple[SortKey, Any]]:
        self.insert(rows)
        return self.drain(is_complete)


def _sort_buffer(buffer: type[SortBuffer]) -> Build:
    class Buffered(EowcProcessor):
        def new_sort_buffer(self, table: MapState) -> SortBuffer:
            return buffer(table)

    def build(query: Query, convention: Convention) -> EowcProcessor | None:
        processor = _correct(query, convention)
        return _mixed(processor, Buffered) if _buffered(processor) else None
    return build


def _ties_by_value(query: Query, convention: Convention) -> EowcProcessor | None:
    """The executor built without the rows' arrival order: rows with equal ORDER BY values
    ranked by their values (the deterministic order) where ``--ties row-id`` ranks them by
    arrival (an engine whose state is keyed by the row, not by its ``_row_id``)."""
    return processor_for(query, convention) if _ranks_arrived_rows(query, convention) else None


#: The aggregates whose result depends on the order of rows with equal ORDER BY values.
_ORDERED_AGGREGATES = ("first_value", "last_value", "string_agg")


def _ranks_arrived_rows(query: Query, convention: Convention) -> bool:
    """Some operator of ``query`` orders rows with equal ORDER BY values (a ROW_NUMBER TopN,
    OVER, MATCH_RECOGNIZE, a count window, first_value/last_value/string_agg) that have an
    arrival order (rows of a source, or made of them: not an aggregate's)."""
    probe = ArrivalOrder((s.name, (None,) * len(s.columns)) for s in sources_of(query.plan))
    for made in operator_inputs(query, convention):
        top = made.top
        ranks = (isinstance(top, TopN) and top.function == "row_number") or \
            isinstance(top, OverWindow | MatchRecognize) or \
            any(isinstance(n, CountTVF) for n in made.nodes) or \
            (isinstance(top, Aggregate) and any(c.function in _ORDERED_AGGREGATES for c in top.calls))
        if ranks and probe.of(made.source, top.children[0].schema) is not None:
            return True
    return False


def _ties_by_arrival(query: Query, convention: Convention) -> EowcProcessor | None:
    """The operator's order with the tie-break left out: rows with equal keys keep the order
    they arrived in (bisect inserts after equals)."""
    plan = _plan(query, convention)
    if plan is None:
        return None
    c = plan.compiled
    if c.top_n is not None:
        key = c.top_n.sort_key
        changes: dict[str, Any] = {"top_n": replace(c.top_n, sort_key=lambda row: (key(row)[0], 0))}
    elif c.over is not None:
        changes = {"over": replace(c.over, tie=lambda row: 0)}
    elif c.count is not None:
        time = c.count.time
        changes = {"count": replace(c.count, order=lambda row: (time(row), 0))}
    elif c.pattern is not None:
        key = c.pattern.sort_key
        changes = {"pattern": replace(c.pattern, sort_key=lambda row: (key(row)[0], 0))}
    else:
        return None  # nothing ranks rows: an EOWC sort's ties come out in one epoch anyway
    return eowc_processor(_with_compiled(plan, **changes))


#: Columns of a window TVF: never NULL.
_WINDOW_COLUMNS = frozenset({"window_start", "window_end", "window_time", "window_ordinal"})


def _key_names(query: Query) -> list[str]:
    """The columns the stateful operator groups or partitions rows by."""
    names: list[str] = []
    for node in walk(query.plan):
        if isinstance(node, Aggregate):
            names += [e.name if isinstance(e, ColumnRef) else n for n, e in node.group_by]
        elif isinstance(node, OverWindow | TopN):
            names += [e.name for e in node.partition_by if isinstance(e, ColumnRef)]
        elif isinstance(node, SessionTVF | CountTVF | MatchRecognize):
            names += [str(k) for k in node.partition_by]
    return names


class _DropsNullKeys(EowcProcessor):
    """An executor that drops the rows whose grouping key holds a NULL (as a hash join
    would), before its late check."""

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        group_of = _group_key(self)
        kept = [a for a in arrivals if None not in group_of(a.row)]
        return super().handle_rows(key, kept, watermark)


def _group_key(processor: EowcProcessor) -> Callable[[Row], Row]:
    if isinstance(processor, EowcGroupAgg):
        return processor.plan.compiled.key
    if isinstance(processor, OrderedPartitions):
        return processor.operator.partition
    if isinstance(processor, EowcSession):
        return processor.session.partition
    assert isinstance(processor, EowcTopN)
    return processor.top.partition


def _null_keys_dropped(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    if processor is None or not isinstance(processor, EowcGroupAgg | OrderedPartitions |
                                           EowcSession | EowcTopN):
        return None
    time = query.source.watermark.column if query.source.watermark else None
    if not [n for n in _key_names(query) if n not in _WINDOW_COLUMNS and n != time]:
        return None  # grouped by time or windows only: no key can be NULL
    return _mixed(processor, _DropsNullKeys)


class _NoLateCheck(ExecutorPlan):
    def admit(self, arrivals: list[Arrival], watermark: Watermark
              ) -> tuple[list[Arrival], list[Refusal]]:
        return list(arrivals), []

    def window_refusal(self, window: Any, watermark: Watermark) -> str | None:
        return None


def _late_rows_admitted(query: Query, convention: Convention) -> EowcProcessor | None:
    plan = _plan(query, convention)
    if plan is None:
        join = processor_for(query, convention, _ARRIVAL.get())
        assert isinstance(join, ComposedExecutor)
        join.is_late = lambda t, w: False
        return join
    return eowc_processor(_NoLateCheck(plan.compiled, plan.window_of, plan.options,
                                               plan.group_window))


class _CountStarSkipsNulls(EowcGroupAgg):
    """A group aggregate whose COUNT(*) counts the rows without a NULL (as COUNT(x) would)."""

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.functions = tuple(replace(f, add=_count_rows_without_null, add_rows=None)
                               if f.call.argument is None
                               else f for f in self.plan.compiled.functions)


def _count_rows_without_null(count: int, row: Row) -> int:
    return count + (None not in row)


def _count_star_skips_nulls(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    if not isinstance(processor, EowcGroupAgg) or \
            not any(f.call.argument is None for f in processor.functions):
        return None
    return _mixed(processor, _CountStarSkipsNulls)


def _session_touching_flipped(query: Query, convention: Convention) -> EowcProcessor | None:
    """Sessions that take the other convention's rule for rows exactly ``gap`` apart: they
    merge where the convention keeps them apart (RisingWave), and the other way round (Spark,
    Flink)."""
    plan = _plan(query, convention)
    if plan is None or plan.compiled.session is None:
        return None
    session = plan.compiled.session
    return eowc_processor(_with_compiled(plan, session=replace(
        session, merges_touching=not session.merges_touching)))


class _JoinOfGlobalWatermark(ComposedExecutor):
    """A join that takes every source's watermark to be the minimum over the sources (Spark's
    global watermark), so a row its own source's watermark makes late is admitted."""

    def _marks(self, max_times: dict[str, Watermark]) -> Marks:
        marks = super()._marks(max_times)
        return {mark: min(marks.values()) for mark in marks}


def _join_of_global_watermark(query: Query, convention: Convention) -> EowcProcessor | None:
    several = len(sources_of(query.plan)) > 1  # else the least watermark is the source's own
    return _JoinOfGlobalWatermark(query, convention) if several else None


class _LateCheckPerKey(EowcProcessor):
    """An executor that judges a key's rows against the key's own watermark (the largest
    event time of the key's earlier rows, minus the delay) instead of the source's."""

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.key_max_time = handle.value_state("key_max_time")

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        highest = self.key_max_time.get()
        declared = self.plan.compiled.source.watermark
        own = NO_WATERMARK if highest is None else \
            spark_watermark_ms(highest, declared.delay, 0) * MICROS_PER_MILLI
        self.key_max_time.update(max(a.time for a in arrivals) if highest is None
                                 else max(highest, *(a.time for a in arrivals)))
        return super().handle_rows(key, arrivals, own)


def _late_check_per_key(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    if processor is None or isinstance(processor, EowcSort):
        return None  # the sort has one key: its watermark is the source's
    return _mixed(processor, _LateCheckPerKey)


def _with_window(plan: Plan, change: Callable[[WindowSpec], WindowSpec]) -> Plan:
    """``plan`` with the spec of its window TVF changed."""
    if isinstance(plan, WindowTVF):
        return replace(plan, spec=change(plan.spec))
    inputs = {f.name: _with_window(getattr(plan, f.name), change) for f in fields(plan)
              if isinstance(getattr(plan, f.name), Plan)}
    return replace(plan, **inputs) if inputs else plan


def _hop_size_and_slide_swapped(query: Query, convention: Convention) -> EowcProcessor | None:
    hops = [n.spec for n in walk(query.plan) if isinstance(n, WindowTVF)
            and n.spec.kind is WindowKind.HOP and n.spec.size != n.spec.slide]
    if not hops or not _single_source(query):
        return None
    swapped = _with_window(query.plan, lambda spec: replace(spec, size=spec.slide,
                                                            slide=spec.size))
    return eowc_processor(executor_plan(replace(query, plan=swapped), convention, _ARRIVAL.get()))


# ------------------------------------------------------------------------------ restarts

class _IncarnationHandle(_HandleAround):
    """A state handle whose states are the process's own: named after the incarnation, so
    that after a restart the executor reads states nothing was written to."""

    def __init__(self, handle: StateHandle, incarnation: int) -> None:
        super().__init__(handle)
        self.incarnation = incarnation

    def named(self, name: str) -> str:
        return f"{name}@{self.incarnation}"


class _LosesStateOnRestart(EowcProcessor):
    """An executor whose state lives in its process (:class:`_IncarnationHandle`)."""

    def init(self, handle: StateHandle) -> None:
        self.incarnation = getattr(self, "incarnation", -1) + 1
        super().init(_IncarnationHandle(handle, self.incarnation))


class _TimerRecordingHandle(_HandleAround):
    """A state handle that notes the timers set through it in ``timers_set``."""

    def __init__(self, handle: StateHandle, timers_set: set[int]) -> None:
        super().__init__(handle)
        self.timers_set = timers_set

    def register_timer(self, expiry_ms: int) -> None:
        self.timers_set.add(expiry_ms)
        self.handle.register_timer(expiry_ms)


class _LosesTimersOnRestart(EowcProcessor):
    """An executor whose timers are held in its process: the ones set before a restart fire
    into nothing after it."""

    def init(self, handle: StateHandle) -> None:
        self.timers_set: set[int] = set()
        super().init(_TimerRecordingHandle(handle, self.timers_set))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        if expiry_ms not in self.timers_set:
            return iter(())
        return super().handle_timer(key, expiry_ms, watermark)


def _on_restart(bug: type, joins: bool) -> Build:
    def build(query: Query, convention: Convention) -> EowcProcessor | None:
        processor = _correct(query, convention)
        if isinstance(processor, ComposedExecutor) and not joins:
            return None  # its one timer is the end of the input
        return _mixed(processor, bug)
    return build


# ------------------------------------------- the logic mutants of the partitioned executors

class _OverIgnoringTheFrame(EowcOverWindow):
    """An OverWindow that emits a row once its own ORDER BY value is complete, without waiting
    for the last row of its frame (LEAD's, ``1 FOLLOWING``'s)."""

    def emit_final(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        over, convention, above = self.operator, self.plan.convention, self.plan.compiled.above
        for key, p in partitions.items():
            while p.pending and time_is_complete(p.values[p.emitted], watermark, convention):
                i = p.emitted
                p.emitted += 1
                yield Emit(above(over.results(p, i)), (p.sort_keys[i], key))


def _over_ignoring_the_frame(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    return _mixed(processor, _OverIgnoringTheFrame) \
        if isinstance(processor, EowcOverWindow) else None


class _SessionWithoutMerging(EowcSession):
    """A session executor that closes a session when its *first* row plus the gap is
    complete (it forgets to extend the session by its later rows)."""

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        rule, gap = self.rule, self.session.gap
        self.rule = CompletionRule(rule.bound, lambda w, wm: rule.is_complete(
            Window(w.start, w.start + gap), wm), rule.describe)


def _session_without_merging(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    return _mixed(processor, _SessionWithoutMerging) \
        if isinstance(processor, EowcSession) else None


class _FirstRows(TopRows):
    def add(self, ranking: TopRanking, row: Row) -> None:
        if len(self.rows) < ranking.limit:
            self.rows.append(row)
            self.keys.append(ranking.sort_key(row))
            self.ranks.append(len(self.rows))


class _TopNOfFirstArrivals(EowcTopN):
    """A TopN that keeps the first ``limit`` rows to arrive rather than the top ones."""

    def insert(self, partitions: dict[Row, TopRows], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        partitions.setdefault(part, _FirstRows())
        return super().insert(partitions, part, rows, watermark)


def _top_n_of_first_arrivals(query: Query, convention: Convention) -> EowcProcessor | None:
    processor = _correct_single_source(query, convention)
    return _mixed(processor, _TopNOfFirstArrivals) if isinstance(processor, EowcTopN) else None


class _SidesSwapped(IntervalJoin):
    def bind(self, handle: StateHandle,
             new_sort_buffer: Callable[[MapState], SortBuffer] = SortBuffer) -> None:
        super().bind(handle, new_sort_buffer)
        self.left.other, self.right.other = self.right.other, self.left.other


class _JoinOfSwappedSides(ComposedExecutor):
    def _join(self, plan: Join, left: LowerNode, right: LowerNode) -> LowerNode:
        join = _SidesSwapped(plan, left, right, self.convention, f"join{len(self.joins)}")
        self.joins.append(join)
        return join


def _join_judged_by_the_wrong_side(query: Query, convention: Convention) -> EowcProcessor | None:
    if _single_source(query):
        return None
    processor = _JoinOfSwappedSides(query, convention)
    # a union has no join; sides judged by the same watermark (seed 004's join of two
    # aggregates of one source) swap nothing
    swapped = [j for j in processor.joins if j.join.left_other != j.join.right_other]
    return processor if swapped else None


class _LateCheckedIntervalJoin(ComposedExecutor):
    """An interval join that judges its input rows itself (Flink's) over sources that drop
    late rows all the same, as every other join's sources do."""

    def __init__(self, query: Query, convention: Convention) -> None:
        super().__init__(query, convention)
        self.judged_by_an_operator = set(self.judged_by_stage)


def _interval_join_of_late_checked_sources(query: Query, convention: Convention
                                           ) -> EowcProcessor | None:
    if not has_join_judging_late_rows(query.plan, Convention.FLINK):
        return None  # no interval join that Flink's rule has judge its own rows
    return _LateCheckedIntervalJoin(query, convention)


# --------------------------------------------------------------------------------- the zoo

MUTANTS: tuple[Mutant, ...] = (
    # the engine
    Mutant("watermark-of-last-row", "the source's watermark follows the event time of the last "
           "row of a batch, not the largest", "MicroBatchProtocol.event_time_statistic",
           "every query", _correct, _WatermarkOfLastRow()),
    Mutant("watermark-without-delay", "the watermark is the largest event time, the declared "
           "delay forgotten: windows close and rows turn late too soon",
           "MicroBatchProtocol.watermark_ms", "queries of one source (a join keeps its own)",
           _correct_single_source, _WatermarkWithoutDelay()),
    Mutant("late-check-current-watermark", "rows are judged late against the watermark after "
           "their own batch instead of the one before it", "MicroBatchProtocol.rows_watermark",
           "queries of one source", _correct_single_source, _RowsJudgedAfterTheirEpoch()),
    Mutant("window-closed-an-epoch-late", "no settle (no-data) batch: what a batch's watermark "
           "completes waits for the next batch with data", "MicroBatchProtocol.timers_watermark_ms",
           "queries of one source (a join's output is released in the data batch)",
           _correct_single_source, _NoSettleBatch()),
    # triggers
    Mutant("closes-one-unit-early", "the trigger is off by one unit: a window [s, e) closes at "
           "W = e - 1 ms, a time t is complete at W = t (RisingWave) or W = t - 1 ms",
           "the timers and the watermark handle_timer judges; ComposedExecutor._step", "every query",
           _trigger_shifted(_OneUnitEarly)),
    Mutant("closes-one-unit-late", "`<` for `<=` in the trigger: a window [s, e) closes only "
           "at W = e + 1 ms", "the timers and the watermark handle_timer judges; ComposedExecutor._step",
           "every query", _trigger_shifted(_OneUnitLate)),
    # late checks
    Mutant("late-check-flipped", "`<=` for `<` in the late check (RisingWave drops rows equal "
           "to the watermark) and `<` for `<=` (Spark and Flink keep them; a window still takes "
           "rows at the watermark that closes it)",
           "ExecutorPlan.late_comparison and window_refusal; the join's is_late", "every query",
           _late_check_flipped),
    Mutant("late-rows-admitted", "no late check: rows older than the watermark are taken in",
           "ExecutorPlan.admit; the join's is_late", "every query", _late_rows_admitted),
    Mutant("late-check-per-key", "rows are judged late against their key's own watermark "
           "(the largest event time of the key's rows), not the source's", "handle_rows of "
           "the keyed executors", "keyed executors of one source (not the EOWC sort)",
           _late_check_per_key),
    Mutant("per-row-late-check", "a window aggregate drops a row older than the watermark even "
           "where one of its windows is still open (Spark, Flink)", "compiled.per_window",
           "window aggregates and window TopN", _late_check_per(window=False)),
    Mutant("per-window-late-check", "a window aggregate takes a late row into a window still "
           "open (RisingWave drops it at the source)", "compiled.per_window",
           "window aggregates and window TopN", _late_check_per(window=True)),
    # the operators
    Mutant("hop-size-and-slide-swapped", "HOP's size and slide read in the other order (as "
           "Spark's window(ts, size, slide) takes them)", "the window TVF of the plan",
           "HOP windows whose size is not their slide", _hop_size_and_slide_swapped),
    Mutant("emits-on-update", "a group aggregate emits each group's partial result as rows "
           "arrive, before its window closes", "EowcGroupAgg.handle_rows",
           "GROUP BY (EowcGroupAgg, SortAgg)", _emits_on_update),
    Mutant("count-star-skips-nulls", "COUNT(*) counts only the rows without a NULL, as "
           "COUNT(x) would", "EowcGroupAgg's aggregate functions", "GROUP BY with COUNT(*)",
           _count_star_skips_nulls),
    Mutant("sort-in-arrival-order", "the EOWC sort releases complete rows in the order they "
           "arrived, not in event-time order", "EowcSort.release",
           "EOWC sorts of one source", _sort_in_arrival_order),
    Mutant("sort-drained-in-insertion-order", "the EOWC sort emits a partition's "
           "complete rows in the order they were buffered, each tagged with its right order "
           "(only the order they come out in is wrong)", "EowcSort.release",
           "EOWC sorts of one source", _sort_drained_in_insertion_order),
    Mutant("ties-overwritten", "the SortBuffer is keyed by the watermark column alone: of the "
           "rows of a batch with equal event times only the last is kept",
           "SortBuffer.insert (new_sort_buffer)",
           "executors with a SortBuffer: sorts (also above a join), a join's sides, OVER, "
           "MATCH_RECOGNIZE, count windows",
           _sort_buffer(_KeyedByEventTime)),
    Mutant("ties-by-arrival-order", "rows with equal ORDER BY values are ranked in arrival "
           "order instead of by the tie-break", "the operator's sort key in the plan",
           "TopN, OVER, MATCH_RECOGNIZE, count windows", _ties_by_arrival,
           ties="deterministic"),
    Mutant("null-keys-dropped", "rows whose GROUP BY or PARTITION BY key holds a NULL are "
           "dropped", "handle_rows of the grouping executors",
           "keys with a column that is not a time or a window", _null_keys_dropped),
    Mutant("session-touching-flipped", "rows exactly the gap apart take the other engines' "
           "rule (one session where the convention has two, two where it has one)",
           "SessionWindows.touches",
           "SESSION windows", _session_touching_flipped),
    Mutant("over-ignores-frame", "an OVER window emits a row once its own time is complete, "
           "before the last row of its frame (LEAD, 1 FOLLOWING)", "EowcOverWindow.release",
           "OVER windows of one source", _over_ignoring_the_frame),
    Mutant("session-no-merge", "a session closes at its first row plus the gap, not extended "
           "by its later rows", "EowcSession's rule", "SESSION windows",
           _session_without_merging),
    Mutant("top-n-first-arrivals", "a TopN keeps the first rows to arrive, not the top ones",
           "EowcTopN's partition (TopNPartition.add)", "window TopN, deduplication",
           _top_n_of_first_arrivals),
    # joins
    Mutant("join-wrong-side", "a join decides that a row can meet no more partners by its own "
           "side's watermark instead of the other side's", "IntervalJoin.bind (SideTables.other)",
           "joins", _join_judged_by_the_wrong_side),
    Mutant("join-global-watermark", "a join judges each source's rows by the minimum of the "
           "source watermarks (Spark's global one), not by their own source's",
           "ComposedExecutor._marks", "joins and unions", _join_of_global_watermark),
    Mutant("interval-join-drops-late-rows", "an interval join that judges its rows by its own "
           "watermark (Flink's) also has its sources drop the rows late for their own table",
           "ComposedExecutor.judged_by_an_operator", "interval joins (under flink)",
           _interval_join_of_late_checked_sources),
    # restarts
    Mutant("emitted-twice-after-restart", "drained rows are deleted from the SortBuffer's cache "
           "but not from its state table: a restart emits them again",
           "SortBuffer._remove (new_sort_buffer)", "executors with a SortBuffer",
           _sort_buffer(_ForgetsDrainedRowsInTable)),
    Mutant("epoch-replayed-after-restart", "after a restart the source delivers the last "
           "epoch again (its offsets not committed with the state), and the executor takes its "
           "rows a second time", "MicroBatchProtocol.redelivered_after_restart",
           "every query but a deduplication (idempotent)", _counts_duplicates,
           _EpochRedelivered()),
    Mutant("state-lost-on-restart", "the executor's state lives in its process: after a "
           "restart it starts empty, while its timers still fire",
           "the state handle given to init", "every query",
           _on_restart(_LosesStateOnRestart, joins=True)),
    Mutant("timers-lost-on-restart", "timers are held in the process: those set before a "
           "restart never fire after it", "init and handle_timer",
           "queries of one source (a join's one timer is the end of the input)",
           _on_restart(_LosesTimersOnRestart, joins=False)),
)


#: Mutants whose bug is one under ``--ties row-id`` only (the zoo of :func:`mutants_for`).
ROW_ID_MUTANTS: tuple[Mutant, ...] = (
    Mutant("ties-by-value", "rows with equal ORDER BY values are ranked by their values, not in "
           "arrival order (RisingWave's _row_id)", "the executor's tie-break (built without "
           "the arrival order)", "ROW_NUMBER TopN, OVER, MATCH_RECOGNIZE, count windows, "
           "first_value/last_value/string_agg, over source rows (also joined or unioned)",
           _ties_by_value, ties="row-id"),
)


def mutants_for(ties: str) -> tuple[Mutant, ...]:
    """The zoo for a run whose cases break ties by ``ties`` (:data:`~eowc.semantics.ir.plan.TIES`):
    the mutants whose decision is a bug under it."""
    return tuple(m for m in (*MUTANTS, *ROW_ID_MUTANTS) if m.ties in (None, ties))


def mutant_named(name: str) -> Mutant:
    for mutant in (*MUTANTS, *ROW_ID_MUTANTS):
        if mutant.name == name:
            return mutant
    raise ValueError(f"unknown mutant {name!r} (one of {', '.join(m.name for m in MUTANTS)})")
