"""EOWC joins on the executors: interval joins and window joins (seed 000's IntervalJoin and
EqJoin; INNER, LEFT, RIGHT, FULL, SEMI, ANTI) and UNION ALL under an EOWC sort, ``SELECT ...
FROM l JOIN r ON ... EMIT ON WINDOW CLOSE``.

**Both sides into one keyed operator.** Each source's rows reach one stateful operator, tagged
with their source (on Spark: one ``eowc_arrival_log`` stream per source, each with
``withWatermark``, unioned before ``transformWithStateInPandas``; Spark's global watermark is
then the minimum over the inputs). The operator has one shard: a source's watermark is
``max(event time) - delay`` over *all* its rows, which no shard of a join key sees, and every
batch brings the shard each source's :class:`~executors.processors.SourceProgress` (the
largest event time of the batch's rows, late and filtered ones included). From them the
executor keeps each source's watermark exactly as the reference does (``source_watermark``),
rather than Spark's global minimum, which would admit a row that its own source's watermark
makes late.

**Per batch** (a data batch of epoch ``e``; its outputs belong to epoch ``e``):

1. each row is judged late against its own source's watermark before the batch
   (``row_is_late``) and refused with the reason, or admitted;
2. the source watermarks move (``SourceProgress``), and with them the watermark of the
   join's output column (``watermark_in_reading`` of its derivation);
3. the admitted rows go through each side's stateless part and meet the other side's kept
   rows with the same equality key; a pair that satisfies the whole condition is a joined row
   (a SEMI join: the left row at its first match);
4. a kept row whose bound can no longer meet any row of the other side
   (``unmatched_row_is_final`` against the other side's watermark: the proven cleaning bound)
   leaves the state, NULL-padded into the output if it is an outer side's and never matched;
5. the joined rows wait in a SortBuffer until their watermark column is complete under the
   output column's watermark (the EOWC sort's ``time_is_complete``), then are emitted.

The side tables are the reference's :class:`~semantics.multi_input.JoinSide` (rows by
equality key, and a heap by the bound that cleans them), kept in state as plain values and
read back after a restart. The end of the input (``--close``) releases every kept row: in
process by the driver's last timers, on Spark when the close rows move every source to
2262.

UNION ALL runs the same way (no state but the SortBuffer), and so do joins of joins and
unions of joins (each join's sides kept in state). Not run yet: joins and unions under an
aggregate or another stateful operator, joins of subqueries (seed 004's window join of two
window aggregates). The
one shard means one core for the join; shards by join key would need every shard to learn
each source's progress (a broadcast Spark's keyed operator does not have).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from semantics.derivation import watermark_in_reading
from semantics.errors import PlanError
from semantics.expr import Row
from semantics.interpreter import compile_query, compile_stateless
from semantics.multi_input import (
    Evaluator,
    JoinEvaluator,
    Marks,
    StatelessEvaluator,
    UnionEvaluator,
    compile_lower,
    is_subquery,
    sources_of,
    split_multi_input,
)
from semantics.plan import Query, Source, tie_break, walk
from semantics.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    source_watermark,
)
from semantics.values import format_timestamp

from .partitioned import END_OF_INPUT_MS, input_watermark
from .processors import (
    Emit,
    EowcProcessor,
    ExecutorPlan,
    Output,
    Refusal,
    ShardTimer,
    SourceProgress,
)
from .sort_buffer import SortBuffer

NOT_YET = ("the executors run joins and unions of sources (with filters and projections) under "
           "an EOWC sort; {what} is not run by them yet (the reference interpreter runs it: eowc "
           "run, eowc verify --executor reference)")


class EowcJoin(EowcProcessor):
    """Interval and window joins and UNION ALL of sources under an EOWC sort (module
    documentation)."""

    progress_key: Row | None = ()

    def __init__(self, query: Query, convention: Convention) -> None:
        split = split_multi_input(query, convention)
        assert split is not None
        lower = split.lower
        if any(is_subquery(node) for node in walk(lower)):
            raise PlanError(NOT_YET.format(what="a join or union of a subquery (an aggregate, "
                                                "window or TopN of one source)"))
        upper = compile_query(split.upper, convention, eowc=True)
        if not upper.is_sort:
            raise PlanError(NOT_YET.format(what="a join or union under an aggregate, a window "
                                                "or TopN"))
        super().__init__(ExecutorPlan(upper, None))
        self.convention = convention
        self.derivation = split.watermark
        self.join_plan = lower
        self._sources = tuple(sources_of(lower))
        self.marks_of = {s.name: f"{s.name}.{s.watermark.column}" for s in self._sources
                         if s.watermark is not None}
        assert upper.rule is not None
        self.rule = upper.rule
        self.tie = tie_break(upper.query.schema, upper.source)
        self.is_late = completeness_comparison(convention)  # row_is_late

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
        self.sides = handle.value_state("join_sides")
        self.inserted = handle.value_state("inserted")
        self.table = handle.map_state("sort_buffer")
        self.timer = ShardTimer(handle)
        self.buffer: SortBuffer | None = None
        self.evaluator = compile_lower(self.join_plan, self.convention, compile_stateless)
        self.joins = join_evaluators(self.evaluator)

    # ----------------------------------------------------------------------- per batch

    def handle_rows(self, key: Row, arrivals: list[Any], watermark: Watermark
                    ) -> Iterator[Output]:
        max_times: dict[str, Watermark] = self.max_times.get() or {}
        before = self._marks(max_times)
        rows: dict[str, list[Row]] = {s.name: [] for s in self._sources}
        for item in arrivals:
            if isinstance(item, SourceProgress):
                max_times[item.table] = max(max_times.get(item.table, NO_WATERMARK), item.time)
                continue
            table, row = item.row
            mark = before.get(self.marks_of.get(table, ""), NO_WATERMARK)
            if table in self.marks_of and self.is_late(item.time, mark):
                yield Refusal(item.seq, item.fanout,
                              f"event time {format_timestamp(item.time)} is late at the watermark "
                              f"{format_timestamp(mark)} of {table} ({self.convention.value} rule)",
                              item.source)
            else:
                rows[table].append(row)
        self.max_times.update(max_times)
        yield from self._step(rows, self._marks(max_times))

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.timer.fired()
        if input_watermark(watermark) == CLOSED_WATERMARK:
            yield from self._step({}, {k: CLOSED_WATERMARK for k in self.marks_of.values()})

    def _step(self, rows: dict[str, list[Row]], after: Marks) -> Iterator[Output]:
        """The join of one batch, then the joined rows now complete, in watermark order."""
        held = self.sides.get() or [(({}, [], 0), ({}, [], 0)) for _ in self.joins]
        for join, (left, right) in zip(self.joins, held, strict=True):
            join.left.rows, join.right.rows = left, right
        joined = self.evaluator.step(rows, after)
        kept = any(join.left.size or join.right.size for join in self.joins)
        if kept:
            self.sides.update([(join.left.rows, join.right.rows) for join in self.joins])
        else:
            self.sides.clear()
        buffer = self._buffer()
        upper, bound_of, tie = self.plan.compiled.below_every_window, self.rule.bound, self.tie
        inserted = self.inserted.get() or 0
        waiting = []
        for out in (out for row in joined for out in upper(row, NO_WATERMARK)):
            bound = bound_of(out)
            if bound is None:  # a NULL-padded outer row without a time: final when made
                yield Emit(out, (0, tie(out)))
            else:
                inserted += 1
                waiting.append(((bound, inserted), out))
        if waiting:
            self.inserted.update(inserted)
            buffer.insert(waiting)
        output_watermark = CLOSED_WATERMARK if all(w == CLOSED_WATERMARK for w in after.values()) \
            else self._output_watermark(after)
        complete = self.rule.is_complete
        for (bound, _), row in buffer.drain(lambda b: complete(b, output_watermark)):
            yield Emit(row, (1, bound, tie(row)))
        if buffer.first() is not None or kept:
            self.timer.at_most(END_OF_INPUT_MS)  # the end of the input releases the rest

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

    def _output_watermark(self, after: Marks) -> Watermark:
        """The watermark of the join's output column (its derivation, in the convention's
        reading), from the source watermarks."""
        if self.derivation is None:
            return NO_WATERMARK
        return watermark_in_reading(self.derivation, after, self.convention)

    def _buffer(self) -> SortBuffer:
        if self.buffer is None:
            self.buffer = SortBuffer(self.table)
        return self.buffer


def join_evaluators(evaluator: Evaluator) -> list[JoinEvaluator]:
    """The joins of a lower part's evaluator tree, in a fixed order (their state is kept in
    that order)."""
    if isinstance(evaluator, JoinEvaluator):
        return [*join_evaluators(evaluator.left_input), *join_evaluators(evaluator.right_input),
                evaluator]
    if isinstance(evaluator, UnionEvaluator):
        return [join for part in evaluator.inputs for join in join_evaluators(part)]
    if isinstance(evaluator, StatelessEvaluator):
        return join_evaluators(evaluator.input)
    return []


def join_processor(query: Query, convention: Convention) -> EowcProcessor:
    """The executor of a query with joins or unions; a PlanError naming what it cannot run."""
    compile_query(query, convention, eowc=True)  # the reference's PlanError if not valid EOWC
    if not query.emit_on_window_close:
        raise PlanError("joins run on the executors under EMIT ON WINDOW CLOSE only")
    return EowcJoin(query, convention)

