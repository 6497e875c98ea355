"""EOWC queries with joins and UNION ALL on the executors: interval and window joins (seed
000's IntervalJoin and EqJoin; INNER, LEFT, RIGHT, FULL, SEMI, ANTI), unions, joins of joins,
the operators below a join (seed 004's window aggregates) and above it (an EOWC sort, a window
aggregate, an OVER window, TopN, ...).

**Both sides into one keyed operator.** Each source's rows reach one stateful operator, tagged
with their source (on Spark: one ``eowc_arrival_log`` stream per source, each with
``withWatermark``, unioned before ``transformWithStateInPandas``; Spark's global watermark is
then the minimum over the inputs). The operator has one shard: a source's watermark is
``max(event time) - delay`` over *all* its rows, which no shard of a join key sees, and every
batch brings the shard each source's :class:`~eowc.executors.processors.SourceProgress` (the
largest event time of the batch's rows, late and filtered ones included). From them the
executor keeps each source's watermark exactly as the reference does (``source_watermark``),
rather than Spark's global minimum, which would admit a row that its own source's watermark
makes late.

**Per batch** (a data batch of epoch ``e``; its outputs belong to epoch ``e``):

1. each row is judged late against its own source's watermark before the batch
   (``row_is_late``) and refused with the reason, or admitted;
2. the source watermarks move (``SourceProgress``), and with them the watermark of the
   join's output column (``watermark_in_reading`` of its derivation);
3. a subquery of one source below a join (seed 004's window aggregate) runs as its own
   executor (:mod:`eowc.executors.nested`) over its source's admitted rows, under that source's
   watermark; what it emits enters the join;
4. each join runs seed 000's four-step loop (:mod:`eowc.executors.interval_join`): the new rows go
   into each side's state and sort tables, then every row no future row of the other side
   can meet is consumed: joined with its partners, NULL-padded if it is an outer side's and
   never matched, and deleted (the proven cleaning bound);
5. the joined rows go to the operator above the join: an EOWC sort is a SortBuffer here,
   drained once a row is complete under the output column's watermark; any other operator
   runs as its own executor (:mod:`eowc.executors.nested`) under that derived watermark.

The end of the input (``--close``) releases every kept row: in process by the driver's last
timers, on Spark when the close rows move every source to 2262. The one shard means one core
for the whole query. It keeps the output one stream in watermark order (the rows of several
shards would interleave, as ``EowcSort``'s would), lets the operator above the join read all
its rows, and is where each source's progress is known (shards by join key would need it
broadcast to every shard, which Spark's keyed operator does not do).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from eowc.executors.interval_join import IntervalJoin
from eowc.executors.multi_input import LowerNode, Marks, lower_nodes, sources_of, split_at_joins
from eowc.executors.nested import NestedExecutor
from eowc.executors.partitioned import END_OF_INPUT_MS, input_watermark
from eowc.executors.processors import (
    Arrival,
    Emit,
    EowcProcessor,
    Output,
    Refusal,
    ShardTimer,
    SourceProgress,
    eowc_processor,
    executor_plan,
)
from eowc.executors.sort_buffer import SortBuffer
from eowc.semantics.analysis.derivation_graph import analyze
from eowc.semantics.analysis.watermark_derivation import watermark_in_reading
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Join, Plan, Query, Source, tie_break
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    source_watermark,
)


@dataclass
class HandedRows(LowerNode):
    """A subquery below the join (:func:`~eowc.executors.multi_input.is_subquery`): the rows its
    executor emitted in this batch, handed in before the join's step."""

    table: str
    executor: NestedExecutor
    rows: list[Row] = field(default_factory=list)

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        out, self.rows = self.rows, []
        return out


class EowcJoin(EowcProcessor):
    """Interval and window joins and UNION ALL of sources or of subqueries, under any EOWC
    operator (module documentation)."""

    progress_key: Row | None = ()

    def __init__(self, query: Query, convention: Convention) -> None:
        split = split_at_joins(query, convention)
        plan = executor_plan(split.upper, convention)
        upper = plan.compiled
        super().__init__(plan)
        self.convention = convention
        self.derivation = split.watermark
        self._sources = tuple(sources_of(split.lower))
        self.marks_of = {s.name: f"{s.name}.{s.watermark.column}" for s in self._sources
                         if s.watermark is not None}
        #: The executors of the subqueries below the join, in the evaluator's order.
        self.below: list[HandedRows] = []
        #: The joins, each by seed 000's four-step loop over its tables in state.
        self.joins: list[IntervalJoin] = []
        self.evaluator = lower_nodes(split.lower, self._subquery, self._join)
        #: The executor of the operator above the join (None: an EOWC sort, run here).
        self.upper = None if upper.is_sort else NestedExecutor(eowc_processor(plan), "upper")
        self.upper_time = split.derived.event_time_index
        assert upper.rule is not None
        self.rule = upper.rule
        self.tie = tie_break(upper.query.schema, upper.source)
        self.is_late = completeness_comparison(convention)  # row_is_late

    def _subquery(self, plan: Plan) -> LowerNode:
        (source,) = sources_of(plan)
        executor = eowc_processor(executor_plan(Query(plan, True, None, (source,)),
                                                self.convention))
        handed = HandedRows(source.name, NestedExecutor(executor, f"below{len(self.below)}"))
        self.below.append(handed)
        return handed

    def _join(self, plan: Join, left: LowerNode, right: LowerNode) -> LowerNode:
        join = IntervalJoin(plan, left, right, self.convention, f"join{len(self.joins)}")
        self.joins.append(join)
        return join

    # -------------------------------------------------------------- what reaches the shard

    @property
    def sources(self) -> tuple[Source, ...]:
        return self._sources

    def stateless_of(self, table: str, row: Row) -> list[Row]:
        return [(table, row)]  # each side's stateless part runs in the operator, after the late check

    def key_of(self, row: Row) -> Row:
        return ()

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.max_times = handle.value_state("max_times")
        self.inserted = handle.value_state("inserted")
        self.table = handle.map_state("sort_buffer")
        self.timer = ShardTimer(handle)
        self.buffer: SortBuffer | None = None
        for join in self.joins:
            join.bind(handle)
        for nested in [*(b.executor for b in self.below), self.upper]:
            if nested is not None:
                nested.init(handle)

    # ----------------------------------------------------------------------- per batch

    def handle_rows(self, key: Row, arrivals: list[Any], watermark: Watermark
                    ) -> Iterator[Output]:
        max_times: dict[str, Watermark] = self.max_times.get() or {}
        before = self._marks(max_times)
        admitted: dict[str, list[Arrival]] = {s.name: [] for s in self._sources}
        for item in arrivals:
            if isinstance(item, SourceProgress):
                max_times[item.table] = max(max_times.get(item.table, NO_WATERMARK), item.time)
                continue
            table = item.row[0]
            mark = before.get(self.marks_of.get(table, ""), NO_WATERMARK)
            if table in self.marks_of and self.is_late(item.time, mark):
                yield Refusal(item.seq, item.fanout,
                              f"event time {format_timestamp(item.time)} is late at the watermark "
                              f"{format_timestamp(mark)} of {table} ({self.convention.value} rule)",
                              item.source)
            else:
                admitted[table].append(item)
        self.max_times.update(max_times)
        yield from self._step(admitted, before, self._marks(max_times))
        self.timer.at_most(END_OF_INPUT_MS)  # the end of the input releases what is kept

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        if input_watermark(watermark) == CLOSED_WATERMARK:
            before = self._marks(self.max_times.get() or {})
            yield from self._step({}, before, {k: CLOSED_WATERMARK for k in before})

    def _step(self, admitted: dict[str, list[Arrival]], before: Marks, after: Marks
              ) -> Iterator[Output]:
        """One batch: the subqueries below the join, the join, the operator above it."""
        for handed in self.below:
            outputs = self._below(handed, admitted.get(handed.table, []), before, after)
            yield from (o for o in outputs if isinstance(o, Refusal))
            emits = sorted((o for o in outputs if isinstance(o, Emit)), key=lambda e: e.order)
            handed.rows = [e.row for e in emits]
        joined = self.evaluator.step({t: [a.row[1] for a in rows] for t, rows in admitted.items()},
                                     after)
        if self.upper is None:
            yield from self._sort(joined, after)
        else:
            yield from self._upper(self.upper, joined, before, after)

    def _below(self, handed: HandedRows, arrivals: list[Arrival], before: Marks, after: Marks
               ) -> list[Output]:
        """A subquery's executor over its source's admitted rows, under that source's
        watermark."""
        executor, table = handed.executor, handed.table
        mark = self.marks_of[table]
        rows = []
        for arrival in arrivals:
            outs = executor.processor.stateless_of(table, arrival.row[1])
            rows += [Arrival(arrival.seq, len(outs), arrival.time, out, arrival.source)
                     for out in outs]
        return [*executor.rows(rows, before[mark]), *executor.advance(after[mark])]

    def _upper(self, executor: NestedExecutor, joined: list[Row], before: Marks, after: Marks
               ) -> Iterator[Output]:
        """The operator above the join over the joined rows, under the derived watermark. A
        joined row is never late at it (the derivation's soundness, proven by ``eowc
        prove``): a refusal is a bug, and stops the run."""
        time = self.upper_time
        arrivals = []
        for row in joined:
            outs = executor.processor.stateless_of("", row)
            t = row[time] if time is not None and row[time] is not None else CLOSED_WATERMARK
            arrivals += [Arrival(0, len(outs), t, out) for out in outs]
        for output in [*executor.rows(arrivals, self._output_watermark(before)),
                       *executor.advance(self._output_watermark(after))]:
            if isinstance(output, Refusal):
                raise AssertionError(f"a joined row is late at the join's derived watermark: "
                                     f"{output.reason}")
            yield output

    def _sort(self, joined: list[Row], after: Marks) -> Iterator[Output]:
        """The joined rows now complete, in watermark order."""
        buffer = self._buffer()
        upper, bound_of, tie = self.plan.stateless, self.rule.bound, self.tie
        inserted = self.inserted.get() or 0
        waiting = []
        for out in (out for row in joined for out in upper(row)):
            bound = bound_of(out)
            if bound is None:  # a NULL-padded outer row without a time: final when made
                yield Emit(out, (0, tie(out)))
            else:
                inserted += 1
                waiting.append(((bound, inserted), out))
        if waiting:
            self.inserted.update(inserted)
            buffer.insert(waiting)
        output_watermark = self._output_watermark(after)
        complete = self.rule.is_complete
        for (bound, _), row in buffer.drain(lambda b: complete(b, output_watermark)):
            yield Emit(row, (1, bound, tie(row)))

    def _marks(self, max_times: dict[str, Watermark]) -> Marks:
        """Each source's watermark (``source_watermark``), +infinity once the input ended."""
        marks: Marks = {}
        for source in self._sources:
            if source.watermark is None:
                continue
            t = max_times.get(source.name, NO_WATERMARK)
            mark = NO_WATERMARK if t == NO_WATERMARK else input_watermark(
                source_watermark(t, source.watermark.delay, self.convention))
            marks[self.marks_of[source.name]] = mark
        return marks

    def _output_watermark(self, marks: Marks) -> Watermark:
        """The watermark of the join's output column (its derivation, in the convention's
        reading), from the source watermarks; +infinity once every source closed."""
        if marks and all(w == CLOSED_WATERMARK for w in marks.values()):
            return CLOSED_WATERMARK
        if self.derivation is None:
            return NO_WATERMARK
        return watermark_in_reading(self.derivation, marks, self.convention)

    def _buffer(self) -> SortBuffer:
        if self.buffer is None:
            self.buffer = self.new_sort_buffer(self.table)
        return self.buffer


def join_processor(query: Query, convention: Convention) -> EowcProcessor:
    """The executor of a query with joins or unions; a PlanError naming what it cannot run."""
    error = analyze(query, convention).error  # e.g. no trigger on the join's output
    if error is not None:
        raise PlanError(error)
    if not query.emit_on_window_close:
        raise PlanError("joins run on the executors under EMIT ON WINDOW CLOSE only")
    return EowcJoin(query, convention)

