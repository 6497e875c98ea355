"""Composed EOWC queries on the executors: any plan with joins or unions (interval and window
joins, seed 000's IntervalJoin and EqJoin; INNER, LEFT, RIGHT, FULL, SEMI, ANTI; UNION ALL)
or with more than one stateful operator (a window aggregate over another's ``window_time``, a
TopN or an OVER window over an aggregate, seed 004's window TopN over a window join of window
aggregates, ...). Seed 001, Definition 4: EOWC is a property of each operator, each with its
own trigger, judged at the watermark of its own input.

**Stages.** The plan is cut at every stateful operator
(:func:`eowc.semantics.analysis.operator_inputs.operator_input`). Each cut is a *stage*: the
operator with the stateless steps under it, a query of one operator over one source, run by
the executor that would run that query alone (EowcGroupAgg, SortAgg, EowcOverWindow,
EowcTopN, ...) as a :class:`~eowc.executors.nested.NestedExecutor`. A stage reads a real
source, or a *derived source*: the output of its input (another stage, a join, a union, and
the stateless steps between), whose watermark column's watermark derives from the source
watermarks (:func:`~eowc.semantics.analysis.watermark_derivation.watermark_in_reading` of
its derivation). Joins run seed 000's four-step loop (:mod:`eowc.executors.interval_join`)
between the stages; an EOWC sort over a join or a union is the root's SortBuffer.

**Shards.** Each source's rows reach one keyed operator, tagged with their source (on Spark:
one ``eowc_arrival_log`` stream per source, each with ``withWatermark``, unioned before
``transformWithStateInPandas``). A source's watermark is ``max(event time) - delay`` over *all*
its rows, which no shard of a key sees: every batch therefore brings each shard that wants it
(``progress_keys``) each source's :class:`~eowc.executors.processors.SourceProgress` (the
largest event time of the batch's rows, late and filtered ones included), and from them every
shard keeps each source's watermark exactly as the reference does (``source_watermark``),
rather than Spark's global minimum, which would admit a row that its own source's watermark
makes late; and from those, every stage's derived watermark, which no Spark operator could be
told.

* **A join alone** (:func:`keyed_sides`: one interval or window join with an equality key,
  each side stateless steps over a source, only stateless steps and the EOWC sort above it)
  is keyed by its equality key: a row's shard is a hash bucket of the key of the row the
  side's stateless steps made (:data:`JOIN_BUCKETS` buckets,
  :func:`~eowc.executors.buckets.bucket_of`), the same for both sides, so that a row's
  partners are in its shard. Those steps run on the way to
  the shard (the late check, in the shard, judges the source row's own time), and every
  bucket gets each source's progress in every batch, so that a shard whose keys fell quiet
  still consumes, emits and forgets its rows as the watermarks move. Each shard's output is in
  watermark order; the rows of an epoch are ordered across shards by the sink (Spark's
  output, the in-process driver), as those of one shard are. A source row that no side takes
  (filtered) goes to bucket 0, only to be judged late or not.
* **Every other plan has one shard** (the key ``()``): a stateful operator above the join
  (an aggregate whose groups span join keys, an OVER window, a TopN) or below it, a union,
  several joins, a join without an equality key (every row may meet every other). One shard
  keeps the output one stream in watermark order and lets each operator read all its rows,
  on one core.

**Per batch** (a data batch of epoch ``e``; its outputs belong to epoch ``e``):

1. each row is judged late against its own source's watermark before the batch
   (``row_is_late``) and refused with the reason, or admitted; a query of one source read
   once, by a window aggregate under Spark or Flink, leaves the check to that stage's
   executor, which judges each window (as the reference's input loop does);
2. the source watermarks move (``SourceProgress``), and with them every derived watermark;
3. the stages run inputs first: each takes the rows its input made in this batch (a lower
   stage's include what its timers released at this batch's watermark) under its watermark
   before the batch, then fires its timers at its watermark after the batch, and hands what
   it emitted, in emission order, to what reads it. A row a stage reads from another is never
   late at the derived watermark (the derivation's soundness, proven by ``eowc prove``): a
   refusal there is a bug, and stops the run, except over an interval join that keeps late
   rows (Flink's, :mod:`eowc.executors.interval_join`), whose late pairs a window stage drops
   for their closed windows, as the reference does; a source such a join reads is not judged
   late here at all;
4. the root stage's rows are the output.

The end of the input (``--close``) releases every kept row: in process by each shard's last
timer, on Spark when the close rows move every source to 2262 (their progress reaches every
shard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from eowc.executors.asof_join import asof_join_processor
from eowc.executors.buckets import bucket_of
from eowc.executors.interval_join import IntervalJoin
from eowc.executors.multi_input import (
    LastMarks,
    LowerNode,
    Marks,
    RowByRow,
    ShardRows,
    lower_nodes,
    source_under_steps,
    sources_of,
)
from eowc.executors.nested import NestedExecutor
from eowc.executors.partitioned import END_OF_INPUT_MS, input_watermark
from eowc.executors.processors import (
    Arrival,
    Emit,
    EowcProcessor,
    ExecutorPlan,
    Output,
    Refusal,
    ShardTimer,
    SourceProgress,
    eowc_processor,
    executor_plan,
)
from eowc.executors.sort_buffer import SortBuffer
from eowc.semantics.analysis.derivation_graph import analyze
from eowc.semantics.analysis.operator_inputs import (
    OperatorInput,
    has_join_judging_late_rows,
    is_emitting,
    operator_input,
    output_over_input,
    per_window_tvf,
    sides_judged_by_join,
    window_join_input,
)
from eowc.semantics.analysis.watermark_derivation import Derivation, watermark_in_reading
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import ArrivalOrder, Join, Plan, Query, Scan, Source, tie_break, walk
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    query_watermarks,
    source_watermark,
    windowed_row_is_late,
)

#: A stage's watermark from the source watermarks.
Clock = Callable[[Marks], Watermark]
#: The shards of a join keyed by its equality key: hash buckets of the key.
JOIN_BUCKETS = 128
#: The shard of a source row that no side of a keyed join takes (judged late or not only).
UNTAKEN_SHARD: Row = (0,)
#: The shard of every row of a plan that is not keyed.
ONE_SHARD: Row = ()


def derived_watermark(derivation: Derivation | None, marks: Marks, convention: Convention
                      ) -> Watermark:
    """The watermark of a derived source's watermark column (``derivation``, in the
    convention's reading) from the source watermarks ``marks``; +infinity once every source
    closed, -infinity when no column carries one."""
    if marks and all(w == CLOSED_WATERMARK for w in marks.values()):
        return CLOSED_WATERMARK
    if derivation is None:
        return NO_WATERMARK
    return watermark_in_reading(derivation, marks, convention)


@dataclass
class Stage(LowerNode):
    """One stateful operator of the plan run by its ``executor`` (module documentation),
    under the watermark ``clock`` gives it. It reads source ``table``'s admitted rows
    (``input`` None: the host hands them as ``arrivals``) or what its ``input`` makes in the
    batch; ``before`` holds the source watermarks before the batch, set by the host. A source
    row is judged late once: by the stage's own check where it ``judges_lateness`` (per
    window), else by the host before the stage sees it."""

    name: str
    executor: NestedExecutor
    input: LowerNode | None
    table: str | None
    clock: Clock
    judges_lateness: bool = False
    #: Whether a row of its input may be late at its derived watermark, and is dropped as
    #: late for its window: below it, a join that keeps late rows (Flink's interval join,
    #: whose output watermark does not bound the rows it still makes).
    drops_late_input: bool = False
    before: Marks = field(default_factory=dict)
    arrivals: list[Arrival] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        emits = sorted((o for o in self.run(rows, after) if isinstance(o, Emit)),
                       key=lambda e: e.order)
        return [e.row for e in emits]

    def run(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Output]:
        """The batch through the stage: its input's rows under its watermark before the
        batch, then its timers at its watermark after the batch. Refusals of source rows are
        kept in ``refusals`` for the host."""
        arrivals = self._arrivals(rows, after)
        outputs = self.take(arrivals) + self.fire(after)
        kept = [o for o in outputs if not isinstance(o, Refusal)]
        refused = [o for o in outputs if isinstance(o, Refusal)]
        if refused and self.input is not None and not self.drops_late_input:
            raise AssertionError(f"a row of the stage {self.name}'s input is late at its derived "
                                 f"watermark: {refused[0].reason}")
        if self.input is None:
            self.refusals += refused
        return kept

    def take(self, arrivals: list[Arrival]) -> list[Output]:
        """The batch's rows, under the stage's watermark before the batch."""
        return self.executor.rows(arrivals, self.clock(self.before))

    def fire(self, after: Marks) -> list[Output]:
        """The stage's timers that its watermark after the batch has reached."""
        return self.executor.advance(self.clock(after))

    def _arrivals(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Arrival]:
        """The rows reaching the stage's operator, after its stateless part. A row the host
        judged, and a row of a derived source (whose watermark is derived so that it is never
        late), reach it as never late."""
        stateless_of = self.executor.processor.stateless_of
        arrivals = []
        if self.input is None:
            table = self.table or ""
            for arrival in self.arrivals:
                outs = stateless_of(table, arrival.row[1])
                time = arrival.time if self.judges_lateness else CLOSED_WATERMARK
                arrivals += [Arrival(arrival.seq, len(outs), time, out, arrival.source)
                             for out in outs]
            self.arrivals = []
            return arrivals
        for row in self.input.step(rows, after):
            outs = stateless_of("", row)
            arrivals += [Arrival(0, len(outs), CLOSED_WATERMARK, out) for out in outs]
        return arrivals


@dataclass(frozen=True)
class KeyedSide:
    """One side of a join keyed by its equality key (module documentation): the source
    ``table`` it reads, ``made``, the rows the stateless steps under the join make of a
    source row (run on the way to the shard), the side's equality ``key`` over them, and the
    name under which they reach the join in the shard (``into``)."""

    table: str
    made: LowerNode
    key: Callable[[Row], Row]
    into: str

    def rows_of(self, row: Row) -> list[Row]:
        return self.made.step({self.table: [row]}, {})


def keyed_sides(input: LowerNode | None, stages: list[Stage], joins: list[IntervalJoin]
                ) -> tuple[KeyedSide, KeyedSide] | None:
    """The sides of the plan's join where the join is the plan's only stateful work, so that
    the plan is keyed by the join's equality key: one join with an equality key, each side
    stateless steps over a source, only stateless steps (and the EOWC sort) above it. None for
    every other plan (a stateful operator above or below the join, a union, several joins, a
    join without an equality key), which keeps one shard."""
    if stages or len(joins) != 1 or joins[0].join.key_width == 0:
        return None
    (join,) = joins
    node = input
    while isinstance(node, RowByRow):
        node = node.input  # the stateless steps above the join
    if node is not join:
        return None
    sides = []
    for made, key, into in ((join.left_input, join.join.left_key, f"{join.name}.left"),
                            (join.right_input, join.join.right_key, f"{join.name}.right")):
        source = source_under_steps(made)
        if source is None:
            return None
        sides.append(KeyedSide(source.name, made, key, into))
    left, right = sides
    return left, right


class ComposedExecutor(EowcProcessor):
    """The composed executor: joins, unions and any number of stateful operators, each a
    stage under the watermark derived for its input (module documentation). With ``arrival``
    (``--ties row-id``) every stage breaks ties by arrival: over a join, a union or another
    stage by the stream key of its rows' source rows
    (:class:`~eowc.semantics.ir.plan.ArrivalOrder`). A join alone is keyed by its equality
    key (``sides``), every other plan has one shard (module documentation)."""

    def __init__(self, query: Query, convention: Convention,
                 arrival: ArrivalOrder | None = None) -> None:
        self.convention, self.query, self.arrival = convention, query, arrival
        self._sources = tuple(sources_of(query.plan))
        self.marks_of = {s.name: f"{s.name}.{s.watermark.column}" for s in self._sources
                         if s.watermark is not None}
        #: The stages below the root, inputs first.
        self.below: list[Stage] = []
        #: The joins, each by seed 000's four-step loop over its tables in state.
        self.joins: list[IntervalJoin] = []
        top = query.plan
        while len(top.children) == 1 and not is_emitting(top):
            top = top.children[0]
        if is_emitting(top):  # the root is a stage; the stateless nodes above it its own
            made = operator_input(top, query, convention)
            rooted = Query(output_over_input(query, made), query.emit_on_window_close,
                           query.name, made.query.sources)
            plan = executor_plan(rooted, convention, arrival)
            #: The root stage (None: an EOWC sort over a join or a union, run here).
            self.root: Stage | None = self._stage(made, plan, "upper")
            self.input: LowerNode | None = None
        else:
            made = operator_input(query.plan, query, convention)
            plan = executor_plan(made.query, convention, arrival)
            self.root = None
            self.input = lower_nodes(made.below, self._stage_of, self._join)
        super().__init__(plan)
        self.derivation = made.watermark
        #: The executor of the root stage (None: the EOWC sort, run here).
        self.upper = None if self.root is None else self.root.executor
        self.stages = [*self.below, *([self.root] if self.root is not None else [])]
        # a source whose every reader judges per window of one TVF (one window aggregate, or
        # the two GROUPING SETS plan): judged by its stages, each per window
        per_window = {n.source.name for n in walk(query.plan) if isinstance(n, Scan)
                      and per_window_tvf(query.plan, n.source, convention) is not None}
        keeps_late_rows = has_join_judging_late_rows(query.plan, convention)
        for stage in self.stages:
            stage.drops_late_input = keeps_late_rows and stage.input is not None
            plan_of = stage.executor.processor.plan
            stage.judges_lateness = stage.input is None and stage.table in per_window and \
                plan_of.compiled.per_window and plan_of.window_of is not None
        #: The sources whose rows their stage judges late, per window (module documentation).
        self.judged_by_stage = {s.table for s in self.stages if s.judges_lateness}
        #: The sources whose rows a window join judges, per window, by its own watermark.
        self.judged_by_join = {s.name: judged for s in self._sources
                               if (judged := window_join_input(query.plan, s, convention))}
        #: The sources whose rows an interval join judges itself (Flink's): never late here.
        judged_by_interval_join = {s.name for s in sides_judged_by_join(query.plan, convention)}
        #: The sources whose rows an operator judges, not the late check here: a stage (per
        #: window), or an interval join that judges them itself (Flink's).
        self.judged_by_an_operator = self.judged_by_stage | judged_by_interval_join
        assert plan.compiled.rule is not None
        self.rule = plan.compiled.rule
        self.tie = tie_break(plan.compiled.query.schema, plan.compiled.source, arrival)
        self.is_late = completeness_comparison(convention)  # row_is_late
        #: The sides of a join keyed by its equality key (None: one shard).
        self.sides = keyed_sides(self.input, self.stages, self.joins)
        if self.sides is None:
            self.progress_keys: tuple[Row, ...] = (ONE_SHARD,)
        else:  # the join reads the rows that reached its shard
            self.joins[0].left_input, self.joins[0].right_input = (
                ShardRows(side.into) for side in self.sides)
            self.progress_keys = tuple((bucket,) for bucket in range(JOIN_BUCKETS))
        self.side_key = {side.into: side.key for side in self.sides or ()}
        #: The joins that judge their input rows themselves (Flink's interval join).
        self.joins_judging_rows = [join for join in self.joins if join.judges_late_rows]

    def _stage_of(self, top: Plan) -> LowerNode:
        """The stage of the stateful operator ``top`` below the root."""
        made = operator_input(top, self.query, self.convention)
        stage = self._stage(made, executor_plan(made.query, self.convention, self.arrival), None)
        self.below.append(stage)
        return stage

    def _stage(self, made: OperatorInput, plan: ExecutorPlan, name: str | None) -> Stage:
        """The stage of ``made`` bound as ``plan``, its input's stages made first."""
        reads_source = isinstance(made.below, Scan)
        input = None if reads_source else lower_nodes(made.below, self._stage_of, self._join)
        name = name or f"below{len(self.below)}"
        table = made.source.name if reads_source else None
        return Stage(name, NestedExecutor(eowc_processor(plan), name), input, table,
                     self._clock(made))

    def _clock(self, made: OperatorInput) -> Clock:
        """The watermark of the stage ``made``: its source's own, or the one derived for its
        input's watermark column."""
        if isinstance(made.below, Scan):
            mark = self.marks_of.get(made.source.name)
            return lambda marks: marks.get(mark, NO_WATERMARK) if mark else NO_WATERMARK
        derivation, convention = made.watermark, self.convention
        return lambda marks: derived_watermark(derivation, marks, convention)

    def _join(self, plan: Join, left: LowerNode, right: LowerNode) -> LowerNode:
        join = IntervalJoin(plan, left, right, self.convention, f"join{len(self.joins)}")
        self.joins.append(join)
        return join

    # -------------------------------------------------------------- what reaches the shard

    @property
    def sources(self) -> tuple[Source, ...]:
        return self._sources

    def stateless_of(self, table: str, row: Row) -> list[Row]:
        """A source row as ``(table, row, into)`` rows: ``row`` as it is, into its source's
        stages and nodes (one shard: each stage's stateless part runs in it, after the late
        check); in a keyed join, each row a side's stateless steps make of it, into that
        side, or the row into no side when none takes it."""
        if self.sides is None:
            return [(table, row, table)]
        made = [(table, out, side.into) for side in self.sides if side.table == table
                for out in side.rows_of(row)]
        return made or [(table, row, None)]

    def key_of(self, row: Row) -> Row:
        """The shard: a hash bucket of a keyed join's equality key, else the one shard."""
        if self.sides is None:
            return ONE_SHARD
        _, made, into = row
        key = self.side_key.get(into)
        return UNTAKEN_SHARD if key is None else (bucket_of(key(made), JOIN_BUCKETS),)

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.max_times = handle.value_state("max_times")
        self.inserted = handle.value_state("inserted")
        self.table = handle.map_state("sort_buffer")
        self.timer = ShardTimer(handle)
        #: Each shard's SortBuffer of joined rows (it caches the shard's runs).
        self.buffers: dict[Row, SortBuffer] = {}
        self.shard: Row = ONE_SHARD
        #: The watermarks, the same in every shard of a batch: computed once per batch.
        self.source_marks = LastMarks(self._source_marks)
        self.output_watermark = LastMarks(
            lambda after: derived_watermark(self.derivation, after, self.convention))
        for join in self.joins:
            join.bind(handle, self.new_sort_buffer)
        for stage in self.stages:
            stage.executor.init(handle)

    def enter(self, shard: Row) -> None:
        """Work in the shard ``shard`` (the grouping key Spark or the driver hands)."""
        self.shard = shard
        for join in self.joins:
            join.enter(shard)

    # ----------------------------------------------------------------------- per batch

    def handle_rows(self, key: Row, arrivals: list[Any], watermark: Watermark
                    ) -> Iterator[Output]:
        self.enter(key)
        max_times: dict[str, Watermark] = self.max_times.get() or {}
        before = self._marks(max_times)
        admitted: dict[str, list[Arrival]] = {}
        join_marks = {table: min(before.get(self.marks_of.get(s.name, ""), NO_WATERMARK)
                                 for s in judged.judged_by)
                      for table, judged in self.judged_by_join.items()}
        for item in arrivals:
            if isinstance(item, SourceProgress):
                max_times[item.table] = max(max_times.get(item.table, NO_WATERMARK), item.time)
                continue
            table, _, into = item.row
            judged = self.judged_by_join.get(table)
            mark = join_marks[table] if judged is not None else \
                before.get(self.marks_of.get(table, ""), NO_WATERMARK)
            if judged is not None and windowed_row_is_late(
                    judged.windows.spec.windows_of(item.time), mark, self.convention):
                yield Refusal(item.seq, item.fanout,
                              f"event time {format_timestamp(item.time)} is late: each of "
                              f"its windows has closed at the window join's watermark "
                              f"{format_timestamp(mark)}, the least of "
                              f"{', '.join(s.name for s in judged.judged_by)}'s "
                              f"({self.convention.value} rule)", item.source)
            elif judged is None and table in self.marks_of and \
                    table not in self.judged_by_an_operator and self.is_late(item.time, mark):
                yield Refusal(item.seq, item.fanout,
                              f"event time {format_timestamp(item.time)} is late at the watermark "
                              f"{format_timestamp(mark)} of {table} ({self.convention.value} rule)",
                              item.source)
            elif into is not None:
                admitted.setdefault(into, []).append(item)
        self.max_times.update(max_times)
        yield from self._step(admitted, before, self._marks(max_times))
        self.timer.at_most(END_OF_INPUT_MS)  # the end of the input releases what is kept

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        self.enter(key)
        self.timer.fired()
        if input_watermark(watermark) == CLOSED_WATERMARK:
            before = self._marks(self.max_times.get() or {})
            yield from self._step({}, before, {k: CLOSED_WATERMARK for k in before})

    def _step(self, admitted: dict[str, list[Arrival]], before: Marks, after: Marks
              ) -> Iterator[Output]:
        """One batch through the stages, inputs first, and the root's output; ``admitted``
        holds the admitted rows by where they go (a source, or a keyed join's side)."""
        for join in self.joins:
            join.before = before
        if self.joins_judging_rows:  # they take the batch's rows in arrival order
            arrived = [(into, a.row[1]) for into, a in sorted(
                ((into, a) for into, arrivals in admitted.items() for a in arrivals),
                key=lambda pair: pair[1].seq)]
            for join in self.joins_judging_rows:
                join.arrived = arrived
        for stage in self.stages:
            stage.before = before
            if stage.table is not None:
                stage.arrivals = admitted.get(stage.table, [])
        rows = {into: [a.row[1] for a in arrivals] for into, arrivals in admitted.items()}
        if self.root is not None:
            outputs: list[Output] = self.root.run(rows, after)
        else:
            assert self.input is not None
            outputs = list(self._sort(self.input.step(rows, after), after))
        for stage in self.stages:
            yield from stage.refusals
            stage.refusals = []
        yield from outputs

    def _sort(self, joined: list[Row], after: Marks) -> Iterator[Output]:
        """The EOWC sort over a join or a union: its rows once complete, in watermark order."""
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
        output_watermark = self.output_watermark(after)
        complete = self.rule.is_complete
        for (bound, _), row in buffer.insert_and_drain(
                waiting, lambda b: complete(b, output_watermark)):
            yield Emit(row, (1, bound, tie(row)))

    def _marks(self, max_times: dict[str, Watermark]) -> Marks:
        """Each source's watermark (``source_watermark``) as the query reads it
        (``query_watermarks``: Spark's global one), +infinity once the input ended."""
        return dict(self.source_marks(max_times))

    def _source_marks(self, max_times: Mapping[str, Watermark]) -> Marks:
        marks: Marks = {}
        for source in self._sources:
            if source.watermark is None:
                continue
            t = max_times.get(source.name, NO_WATERMARK)
            mark = NO_WATERMARK if t == NO_WATERMARK else input_watermark(
                source_watermark(t, source.watermark.delay, self.convention))
            marks[self.marks_of[source.name]] = mark
        return query_watermarks(marks, self.convention)

    def _buffer(self) -> SortBuffer:
        buffer = self.buffers.get(self.shard)
        if buffer is None:
            buffer = self.buffers[self.shard] = self.new_sort_buffer(self.table)
        return buffer


def composed_processor(query: Query, convention: Convention, arrival: ArrivalOrder | None = None
                       ) -> EowcProcessor:
    """The executor of a composed query (joins, unions, several stateful operators), ties
    broken by ``arrival`` when given; a PlanError naming the operator that has no trigger, as
    the reference's. An ASOF join (emit on update only) runs on its own executor
    (:mod:`eowc.executors.asof_join`)."""
    asof = asof_join_processor(query, convention, arrival)
    if asof is not None:
        return asof
    error = analyze(query, convention).error  # e.g. no trigger over a stage's input
    if error is not None:
        raise PlanError(error)
    if not query.emit_on_window_close:
        raise PlanError("joins, unions and composed operators run on the executors under "
                        "EMIT ON WINDOW CLOSE only")
    return ComposedExecutor(query, convention, arrival)
