"""The reference interpreter as a dataflow: a plan (a DAG of
:mod:`eowc.semantics.ir.plan` nodes) compiled to a graph of logical operators
(:mod:`eowc.semantics.operators.logical`), evaluated epoch by epoch by one loop.

Per epoch, INPUT's new rows (:mod:`eowc.semantics.engines.inputs`) flow bottom-up through the
graph with the source watermarks after the epoch; each operator releases what its own trigger
makes final at its port's watermark, derived from the source watermarks as
:mod:`eowc.semantics.analysis.watermark_derivation` says, so any number of stateful operators
compose (a window aggregate over another's ``window_time``, a TopN over a window join, ...).
Because every trigger is monotone in the watermark and a watermark never goes down, a row
released after epoch ``e`` is final: the root's rows are the EOWC output, tagged ``e``.

Emit on update (Definition 2) is ``Q(INPUT)`` after each epoch, as a changelog: a GROUP BY
over one source folds its rows as they come; any other plan runs as a graph of changes, each
operator (without its trigger) turning the rows in and out of its input into the rows in and
out of its result: a join from the rows they match (:class:`JoinChanges`), the other
operators by evaluating again the groups or partitions they touch (:class:`PartitionChanges`).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from eowc.semantics.analysis.completion import (
    CompletionRule,
    completion_rule,
    late_check_is_per_window,
    ties_to_latest_arrival,
)
from eowc.semantics.analysis.derivation_graph import analyze
from eowc.semantics.analysis.operator_inputs import (
    MULTI_INPUT,
    OperatorInput,
    emits_under,
    has_join_judging_late_rows,
    is_composed,
    is_emitting,
    join_judges_late_rows,
    operator_input,
    per_window_tvf,
    sides_judged_by_join,
    stateless_nodes,
    window_join_input,
)
from eowc.semantics.engines.inputs import (
    LateCheck,
    LateRow,
    LateSink,
    input_epochs,
    never_late,
    one_source_epochs,
    per_window_check,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import (
    Aggregate,
    ArrivalOrder,
    AsofJoin,
    CountTVF,
    EveryArrival,
    GapFill,
    Join,
    MatchRecognize,
    OverWindow,
    Plan,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    Union,
    arrival_ties,
    tie_break,
    walk,
)
from eowc.semantics.ir.values import computing_under, row_sort_key
from eowc.semantics.operators.asof_join import compile_asof, refuse_asof_under_eowc
from eowc.semantics.operators.count_window import compile_count
from eowc.semantics.operators.gap_fill import GapFillOperator, compile_gap_fill
from eowc.semantics.operators.logical import (
    AsofJoinOperator,
    CountWindows,
    EowcSort,
    OneInput,
    OverWindowOperator,
    Partitioned,
    PatternOperator,
    SessionAggregate,
    SessionRows,
    SourceRows,
    Stateless,
    StreamJoin,
    TopNOperator,
    UnionAll,
    WindowAggregate,
    compile_stateless,
)
from eowc.semantics.operators.over import compile_over
from eowc.semantics.operators.pattern import compile_pattern
from eowc.semantics.operators.protocol import Marks, Operator, PortClock, Stage, watermark_key
from eowc.semantics.operators.session import compile_session
from eowc.semantics.operators.top_n import compile_top_n
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    default_ties,
)


class Emission(NamedTuple):
    """A result row, first emitted after epoch ``epoch`` (``len(epochs)`` for ``--close``)."""

    epoch: int
    row: Row


class Change(NamedTuple):
    """One entry of the emit-on-update changelog: ``op`` is ``+`` (insert) or ``-`` (delete)."""

    epoch: int
    op: str
    row: Row


@dataclass
class Node:
    """An operator of the graph and the nodes feeding its input ports (``source``: a Scan's
    source name; its port is fed by the input loop). ``fresh`` makes another instance of a
    stateful operator, with no state yet (for an evaluation of its own)."""

    operator: Operator
    inputs: tuple[int, ...] = ()
    source: str | None = None
    fresh: Callable[[], Operator] | None = None


@dataclass
class Dataflow:
    """A plan compiled to operators, inputs first (the last node is the root); ``checks`` and
    ``stages``: per source, its late check and the stateless steps the input loop applies
    (a window TVF that judges lateness per window, moved there from the operator or the
    window join above)."""

    nodes: list[Node]
    sources: list[Source]
    checks: dict[str, LateCheck] = field(default_factory=dict)
    stages: dict[str, Stage] = field(default_factory=dict)
    #: Per source a window join judges (:func:`window_join_input`), the join's sources, whose
    #: least watermark judges its rows.
    judged_by: dict[str, tuple[Source, ...]] = field(default_factory=dict)

    def epochs(self, log: ArrivalLog, convention: Convention, late: LateSink | None = None,
               close: bool = False) -> Iterator[tuple[int, list[Row]]]:
        """The generic loop: per epoch that releases rows (and with ``close`` once more, every
        watermark at +infinity, tagged ``len(log.epochs)``), the root's released rows. An operator whose
        ports got no rows, in an epoch that moved no watermark (in any epoch, if it
        :attr:`~eowc.semantics.operators.protocol.Operator.releases_only_rows`), is not asked; one that
        :attr:`~eowc.semantics.operators.protocol.Operator.waits_for_watermark` gets its rows
        in the next epoch that moves one (it could release nothing before)."""
        plan = [(i, node.operator.step, node.inputs, node.inputs[0] if len(node.inputs) == 1
                 else None, node.operator.waits_for_watermark, node.operator.releases_only_rows)
                for i, node in enumerate(self.nodes) if node.source is None]
        scans = [(i, node.source) for i, node in enumerate(self.nodes) if node.source is not None]
        outputs: list[list[Row]] = [[] for _ in self.nodes]
        waiting: list[list[Row]] = [[] for _ in self.nodes]  # held for an operator that waits
        empty: list[Row] = []
        marks: Marks = {watermark_key(s): NO_WATERMARK for s in self.sources if s.watermark}

        def run(after: Marks, moved: bool) -> list[Row]:
            """One epoch through the graph, inputs first (the scans' ``outputs`` set by the
            caller); the root's released rows."""
            for i, step, inputs, only, waits, idle in plan:
                if only is not None:
                    port = outputs[only]
                    if moved and (port or not idle):
                        if waiting[i]:
                            port = waiting[i] + port
                            waiting[i].clear()
                        outputs[i] = step((port,), after, False)
                    elif not port:
                        outputs[i] = empty
                    elif waits:
                        waiting[i] += port
                        outputs[i] = empty
                    else:
                        outputs[i] = step((port,), after, False)
                else:
                    ins = [outputs[j] for j in inputs]
                    outputs[i] = step(ins, after, False) if (moved and not idle) or any(ins) \
                        else empty
            return outputs[-1]

        if len(self.sources) == 1:  # the fast loop of one source
            source = self.sources[0]
            name, held = source.name, self._held_node()
            key = watermark_key(source) if source.watermark else None
            after, last = marks, NO_WATERMARK
            held_rows = waiting[held] if held is not None else None
            for epoch, rows, _, watermark in one_source_epochs(
                    source, log, convention, late, self.checks.get(name), self.stages.get(name)):
                if watermark != last and key is not None:
                    after, last, moved = {key: watermark}, watermark, True
                elif held_rows is not None:  # nothing moved: the held node could release nothing
                    held_rows += rows
                    continue
                else:
                    moved = False
                for i, _ in scans:
                    outputs[i] = rows
                released = run(after, moved)
                if released:
                    yield epoch, released
        else:
            previous: Marks | None = None
            for epoch, rows, _, after in input_epochs(self.sources, log, convention, late,
                                                      self.checks, self.stages, self.judged_by):
                for i, scanned in scans:
                    outputs[i] = rows[scanned]
                released = run(after, after is not previous)
                previous = after
                if released:
                    yield epoch, released
        if close:
            closed = {k: CLOSED_WATERMARK for k in marks}
            for i, _ in scans:
                outputs[i] = empty
            for i, step, inputs, _, _, _ in plan:
                outputs[i] = step([waiting[i] + outputs[j] for j in inputs], closed, True)
            if outputs[-1]:
                yield len(log.epochs), outputs[-1]

    def _held_node(self) -> int | None:
        """The node that waits for a watermark right above a query's one source, when it is
        the source's only reader: in an epoch that moves no watermark nothing else can run, so
        its rows wait there and the epoch is not passed on."""
        if len(self.sources) != 1 or len(self.nodes) < 2 or \
                [n.source for n in self.nodes if n.source is not None] != [self.sources[0].name]:
            return None
        node = self.nodes[1]
        readers = [n for n in self.nodes if 0 in n.inputs]
        if self.nodes[0].source is None or node.inputs != (0,) or readers != [node] or \
                not node.operator.waits_for_watermark:
            return None
        return 1


def _local_nodes(made: OperatorInput) -> list[Plan]:
    """The operator's nodes as they read its (possibly derived) source, top first."""
    nodes, node = [], made.query.plan
    for _ in made.nodes:
        nodes.append(node)
        node = node.children[0]
    return nodes


def _rule(made: OperatorInput, convention: Convention, eowc: bool) -> CompletionRule | None:
    """The operator's trigger (a PlanError under EOWC if it has none), None without EOWC."""
    if not eowc:
        return None
    return completion_rule(made.query, convention)


def bind(made: OperatorInput, convention: Convention, eowc: bool,
         arrival: ArrivalOrder | None = None) -> OneInput:
    """The operator of ``made``, its trigger bound (``eowc``) or not (the batch query); rows
    with equal ORDER BY values in arrival order with ``arrival`` (``--ties row-id``; over a
    derived source, a join's or a union's output, by the stream key of the source rows each
    row is made of: :class:`~eowc.semantics.ir.plan.ArrivalOrder`); its expressions compute
    under the convention's value rules."""
    with computing_under(convention.values):
        return _bind(made, convention, eowc, arrival)


def _bind(made: OperatorInput, convention: Convention, eowc: bool,
          arrival: ArrivalOrder | None) -> OneInput:
    local = _local_nodes(made)
    source = made.source
    clock = PortClock(source, made.watermark, convention)
    rule = _rule(made, convention, eowc)
    per_window = late_check_is_per_window(made.query.plan, convention)

    def below(nodes: list[Plan]) -> Stage | None:
        return compile_stateless(list(reversed(nodes)), convention, per_window) if nodes else None
    top = local[0] if local else None
    if isinstance(top, Aggregate):
        at = next((i for i, n in enumerate(local) if isinstance(n, SessionTVF | CountTVF)), None)
        if at is None:
            return WindowAggregate(top, source, rule, below(local[1:]), clock, arrival)
        tvf = local[at]
        middle = compile_stateless(list(reversed(local[1:at])), convention)
        if isinstance(tvf, SessionTVF):
            return SessionAggregate(compile_session(tvf, convention), middle, top, source, rule,
                                    below(local[at + 1:]), clock, arrival)
        assert isinstance(tvf, CountTVF)
        count = compile_count(tvf, tie_break(tvf.input.schema, source, arrival))
        return CountWindows(count, middle, top, source, rule, convention, below(local[at + 1:]),
                            clock, arrival)
    if isinstance(top, CountTVF):
        count = compile_count(top, tie_break(top.input.schema, source, arrival))
        return CountWindows(count, lambda row, w: [row], None, source, rule, convention,
                            below(local[1:]), clock)
    if isinstance(top, SessionTVF):
        return SessionRows(compile_session(top, convention), rule, below(local[1:]), clock)
    if isinstance(top, OverWindow):
        over = compile_over(top, tie_break(top.input.schema, source, arrival))
        return OverWindowOperator(over, convention, below(local[1:]), clock)
    if isinstance(top, TopN):
        tie = tie_break(top.input.schema, source, arrival, ties_to_latest_arrival(top, convention))
        return TopNOperator(compile_top_n(top, tie), rule, below(local[1:]), clock)
    if isinstance(top, GapFill):
        return GapFillOperator(compile_gap_fill(top, tie_break(top.input.schema, source)),
                               convention, below(local[1:]), clock)
    if isinstance(top, MatchRecognize):
        return PatternOperator(compile_pattern(top, tie_break(top.input.schema, source, arrival)),
                               convention, below(local[1:]), clock)
    assert rule is not None, "an EOWC sort exists under EOWC only"
    return EowcSort(rule, tie_break(made.query.schema, source, arrival), below(local), clock)


def check_eowc(query: Query, convention: Convention) -> None:
    """A PlanError if ``query`` is not valid under EOWC: the single-operator rules of
    :func:`completion_rule` for a query of one source and one operator, else the analysis of
    every operator (:func:`eowc.semantics.analysis.derivation_graph.analyze`)."""
    refuse_asof_under_eowc(query)
    several = any(isinstance(n, MULTI_INPUT) for n in walk(query.plan))
    if not several and not is_composed(query.plan):
        completion_rule(query, convention)
        return
    error = analyze(query, convention).error
    if error is not None:
        raise PlanError(error)


@lru_cache(maxsize=128)
def _checked(query: Query, convention: Convention, eowc: bool) -> None:
    _ = query.schema  # type-check the whole plan before anything runs
    if eowc:
        check_eowc(query, convention)


def compile_dataflow(query: Query, convention: Convention, eowc: bool,
                     arrival: ArrivalOrder | None = None,
                     arrivals: EveryArrival | None = None) -> Dataflow:
    """``query`` as a graph of operators (:class:`Dataflow`), each with its trigger under
    ``eowc``, without triggers (the batch query) otherwise; ties in arrival order with
    ``arrival``. Under EOWC the root of a plan that nothing else emits for is an
    :class:`EowcSort`. ``arrivals``: every row's arrival position, which a join that judges
    its own late rows takes an epoch's rows in (:func:`join_arrivals`). Its expressions
    compute under the convention's value rules (:class:`~eowc.semantics.ir.values.ValueRules`)."""
    with computing_under(convention.values):
        return _compile_dataflow(query, convention, eowc, arrival, arrivals)


def _compile_dataflow(query: Query, convention: Convention, eowc: bool,
                      arrival: ArrivalOrder | None, arrivals: EveryArrival | None) -> Dataflow:
    _checked(query, convention, eowc)
    nodes: list[Node] = []
    consumers: dict[int, list[int]] = {}

    def add(node: Node) -> int:
        nodes.append(node)
        for j in node.inputs:
            consumers.setdefault(j, []).append(len(nodes) - 1)
        return len(nodes) - 1

    def build(plan: Plan, is_top: bool) -> int:
        if isinstance(plan, Scan):
            return add(Node(SourceRows(plan.source), (), plan.source.name))
        if is_emitting(plan) or (is_top and eowc and not emits_under(plan) and not query.at_once):
            made = operator_input(plan, query, convention)
            below = build(made.below, False)
            return add(Node(bind(made, convention, eowc, arrival), (below,),
                            fresh=lambda: bind(made, convention, eowc, arrival)))
        if isinstance(plan, AsofJoin):
            return add(Node(AsofJoinOperator(compile_asof(plan, arrival)),
                            (build(plan.left, False), build(plan.right, False))))
        if isinstance(plan, Join):
            positions = (_positions(plan.left, arrivals), _positions(plan.right, arrivals)) \
                if arrivals is not None and join_judges_late_rows(plan, convention) else None
            return add(Node(StreamJoin(plan, convention, positions),
                            (build(plan.left, False), build(plan.right, False))))
        if isinstance(plan, Union):
            return add(Node(UnionAll(), tuple(build(p, False) for p in plan.inputs)))
        chain, below_plan = stateless_nodes(plan)
        judged = window_join_input(query.plan, below_plan.source, convention) \
            if isinstance(below_plan, Scan) else None
        if judged is not None and any(n is judged.windows for n in chain):
            name = below_plan.source.name  # the input loop judges its (row, window) pairs
            checks[name] = per_window_check(judged.windows, convention)
            stages[name] = compile_stateless(list(reversed(chain)), convention, True)
            judged_by[name] = judged.judged_by
            return build(below_plan, False)
        below = build(below_plan, False)
        return add(Node(Stateless(compile_stateless(list(reversed(chain)), convention)), (below,)))

    checks: dict[str, LateCheck] = {}
    stages: dict[str, Stage] = {}
    judged_by: dict[str, tuple[Source, ...]] = {}
    build(query.plan, True)
    for source in sides_judged_by_join(query.plan, convention):
        checks[source.name] = never_late  # the join judges them
    sources = list(dict.fromkeys(n.source for n in walk(query.plan) if isinstance(n, Scan)))
    flow = Dataflow(nodes, sources, checks, stages, judged_by)
    _fuse_source_stage(flow, consumers, query, convention)
    return flow


def _positions(side: Plan, arrivals: EveryArrival) -> Callable[[Row], list[int]] | None:
    """The arrival positions of a row of a join's input ``side``: its source rows', through
    stateless steps; None for an operator's rows."""
    below = stateless_nodes(side)[1]
    return arrivals.of(below.source, side.schema) if isinstance(below, Scan) else None


def join_arrivals(query: Query, log: ArrivalLog, convention: Convention) -> EveryArrival | None:
    """The arrival positions of ``log``'s rows where a join of ``query`` takes an epoch's
    rows in arrival order (:func:`join_judges_late_rows`), else None."""
    if has_join_judging_late_rows(query.plan, convention):
        return EveryArrival((e.table, e.row) for e in log.events)
    return None


def _fuse_source_stage(flow: Dataflow, consumers: dict[int, list[int]], query: Query,
                       convention: Convention) -> None:
    """Move the stateless steps of the operator over a source into the input loop (the same
    steps, with the same watermark before each epoch) where its rows are judged late per
    window (a window aggregation under Spark or Flink:
    :func:`eowc.semantics.rules.triggers.windowed_row_is_late`), and, for a query's one
    source, always."""
    for source in flow.sources:
        tvf = per_window_tvf(query.plan, source, convention)
        if len(flow.sources) > 1 and tvf is None:
            continue
        scans = [i for i, node in enumerate(flow.nodes) if node.source == source.name]
        readers = consumers.get(scans[0], []) if len(scans) == 1 else []
        consumer = flow.nodes[readers[0]].operator if len(readers) == 1 else None
        if isinstance(consumer, OneInput) and consumer.below is not None:
            flow.stages[source.name], consumer.below = consumer.below, None
        if tvf is not None:
            flow.checks[source.name] = per_window_check(tvf, convention)


# ----------------------------------------------------------------------------- the two modes


def arrival_order(log: ArrivalLog, convention: Convention, ties: str | None) -> ArrivalOrder | None:
    """The arrival positions of ``log``'s rows when ties are broken by arrival (``ties``, else
    the convention's default, is ``row-id``); None for the deterministic order."""
    return arrival_ties(((e.table, e.row) for e in log.events), ties or default_ties(convention))


def run_eowc(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
             close: bool = False, late: LateSink | None = None, ties: str | None = None
             ) -> Iterator[Emission]:
    """``Q'(INPUT, W)`` as an append-only stream: each result row once, tagged with the epoch
    after which it is first emitted, in emission order. ``close`` moves every watermark to
    +infinity after the last epoch (end of a bounded input); those rows are tagged
    ``len(log.epochs)``. The query is checked here (a PlanError if it is not valid under
    EOWC); rows are computed as the iterator is consumed. ``ties`` orders rows with equal
    ORDER BY values (:data:`~eowc.semantics.ir.plan.TIES`; default: the convention's)."""
    flow = compile_dataflow(query, convention, eowc=True,
                            arrival=arrival_order(log, convention, ties),
                            arrivals=join_arrivals(query, log, convention))
    return (Emission(epoch, row) for epoch, rows in flow.epochs(log, convention, late, close)
            for row in rows)


def run_update(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
               late: LateSink | None = None, ties: str | None = None) -> Iterator[Change]:
    """``Q(INPUT)`` after every epoch, as a changelog: per epoch, the deletes and inserts that
    turn the previous result into the new one (Definition 2). A GROUP BY over one source folds
    its rows as they come (:func:`_update_aggregate`); any other plan runs as a graph of
    changes (:func:`_update_by_changes`). ``ties`` as :func:`run_eowc`'s."""
    flow = compile_dataflow(query, convention, eowc=False,
                            arrival=arrival_order(log, convention, ties),
                            arrivals=join_arrivals(query, log, convention))
    stateful = [n for n in flow.nodes if isinstance(n.operator, OneInput)]
    several = len(flow.sources) > 1 or any(isinstance(n.operator, StreamJoin | UnionAll |
                                                      AsofJoinOperator)
                                           for n in flow.nodes)
    if not stateful and not several:
        return (Change(epoch, "+", row) for epoch, rows in flow.epochs(log, convention, late)
                for row in sorted(rows, key=row_sort_key))
    if len(stateful) == 1 and not several and isinstance(stateful[0].operator, WindowAggregate):
        above = _above(flow, flow.nodes.index(stateful[0]))
        return _update_aggregate(flow, stateful[0].operator, above, log, convention, late)
    return _update_by_changes(flow, log, convention, late)


def _above(flow: Dataflow, at: int) -> Callable[[Row], Row | None]:
    """The stateless nodes above node ``at`` (a chain up to the root), as one row map."""
    stages = [n.operator.stage for n in flow.nodes[at + 1:] if isinstance(n.operator, Stateless)]

    def above(row: Row) -> Row | None:
        rows = [row]
        for stage in stages:
            rows = [out for r in rows for out in stage(r, NO_WATERMARK)]
        return rows[0] if rows else None
    return above


def _update_aggregate(flow: Dataflow, aggregate: WindowAggregate, above: Callable[[Row], Row | None],
                      log: ArrivalLog, convention: Convention, late: LateSink | None
                      ) -> Iterator[Change]:
    """A GROUP BY: per epoch each touched group's old row out, its new row in
    (:meth:`WindowAggregate.changes`)."""
    (source,) = flow.sources
    shown: dict[Row, Row | None] = {}
    for epoch, rows, _, marks in input_epochs(flow.sources, log, convention, late, flow.checks,
                                              flow.stages, flow.judged_by):
        aggregate.clock.advance(marks, False)
        admitted = rows[source.name]
        if aggregate.below is not None:
            admitted = [out for row in admitted
                        for out in aggregate.below(row, aggregate.clock.before)]
        for op, row in aggregate.changes(admitted, epoch == 0, above, shown):
            yield Change(epoch, op, row)


# ------------------------------------------------------- emit on update as a graph of changes

#: The changes to a result in one epoch: each row's count in (+) or out (-), never 0.
Delta = dict[Row, int]


def _count(delta: Delta, row: Row, n: int) -> None:
    """Add ``n`` to ``row``'s count in ``delta``."""
    total = delta.get(row, 0) + n
    if total:
        delta[row] = total
    else:
        delta.pop(row, None)


def _mapped(delta: Delta, stage: Stage) -> Delta:
    """The changes through stateless steps: a row's outputs come and go with it."""
    out: Delta = {}
    for row, n in delta.items():
        for mapped in stage(row, NO_WATERMARK):
            _count(out, mapped, n)
    return out


class PartitionRows:
    """A partition's rows on one port: a multiset, in no order."""

    def __init__(self) -> None:
        self.counts: Counter[Row] = Counter()

    def change(self, row: Row, n: int) -> None:
        """``n`` more copies of ``row`` (fewer if negative)."""
        self.counts[row] += n
        if not self.counts[row]:
            del self.counts[row]

    def __bool__(self) -> bool:
        return bool(self.counts)

    def rows(self) -> list[Row]:
        return list(self.counts.elements())


class OrderedPartitionRows:
    """A partition's rows on one port in the order of ``order`` (a total order on rows: equal
    keys only for equal rows), so that the first rows are read without a sort."""

    def __init__(self, order: Callable[[Row], Any]) -> None:
        self.order = order
        self.keys: list[Any] = []
        self.sorted: list[Row] = []

    def change(self, row: Row, n: int) -> None:
        key = self.order(row)
        if n > 0:
            at = bisect.bisect_right(self.keys, key)
            self.keys[at:at], self.sorted[at:at] = [key] * n, [row] * n
        else:
            at = bisect.bisect_left(self.keys, key)
            del self.keys[at:at - n], self.sorted[at:at - n]

    def __bool__(self) -> bool:
        return bool(self.sorted)

    def rows(self) -> list[Row]:
        return self.sorted


class PartitionChanges:
    """Emit on update of an operator whose result is the union, over the partitions of its
    input, of a batch function of each partition's rows (``evaluate(key, rows per port)``;
    ``keys``: a row's partition, per port). It keeps each partition's rows; per epoch it
    evaluates again the partitions its input's changes touched, and its own changes are those
    partitions' old rows out and new rows in. The partition ``always`` has a result over no
    rows (a GROUP BY without keys): it is evaluated in the first epoch too. ``kept`` keeps a
    partition's rows on a port (:class:`PartitionRows`, or :class:`OrderedPartitionRows`)."""

    def __init__(self, keys: Sequence[Callable[[Row], Row]],
                 evaluate: Callable[[Row, list[list[Row]]], list[Row]],
                 always: Row | None = None,
                 kept: Callable[[], PartitionRows | OrderedPartitionRows] = PartitionRows
                 ) -> None:
        self.keys, self.evaluate, self.always, self.kept = keys, evaluate, always, kept
        self.members: dict[Row, list[PartitionRows | OrderedPartitionRows]] = {}
        self.shown: dict[Row, Counter[Row]] = {}
        self.first = True

    def changes(self, deltas: Sequence[Delta]) -> Delta:
        """The operator's changes in an epoch whose changes on its ports are ``deltas``."""
        touched: dict[Row, None] = {}
        if self.first and self.always is not None:
            touched[self.always] = None
            self.members.setdefault(self.always, [self.kept() for _ in self.keys])
        self.first = False
        for port, (key_of, delta) in enumerate(zip(self.keys, deltas, strict=True)):
            for row, n in delta.items():
                key = key_of(row)
                ports = self.members.get(key)
                if ports is None:
                    ports = self.members[key] = [self.kept() for _ in self.keys]
                ports[port].change(row, n)
                touched[key] = None
        out: Delta = {}
        for key in touched:
            ports = self.members[key]
            new: Counter[Row] = Counter()
            if key == self.always or any(ports):
                new.update(self.evaluate(key, [rows.rows() for rows in ports]))
            else:
                del self.members[key]
            old = self.shown.pop(key, Counter())
            if new:
                self.shown[key] = new
            for row in new.keys() | old.keys():
                _count(out, row, new[row] - old[row])
        return out


class JoinChanges:
    """Emit on update of a join (every kind) consuming its sides' changes. It keeps each
    side's rows by equality key (a row with a NULL in its key matches nothing). A left row
    contributes its joined rows: one per matching right row (its pair, or itself once for a
    SEMI join), or with no match its NULL-padded row (LEFT, FULL; itself for ANTI); a right
    row, with no match, its NULL-padded row (RIGHT, FULL). An epoch's changes concern the
    changed rows and the other side's rows they match: their contributions after the epoch,
    less before (the right rows a left row matches concern it only if the right side is an
    outer one)."""

    def __init__(self, join: StreamJoin) -> None:
        self.join = join
        self.rows: tuple[dict[Row, Counter[Row]], dict[Row, Counter[Row]]] = ({}, {})
        self.padding = () if join.kind == "anti" else (None,) * join.right.width

    def matches(self, row: Row, side: int) -> list[tuple[Row, int]]:
        """The other side's rows that ``row`` of ``side`` (0 left, 1 right) meets, with how
        many times each is kept."""
        key = (self.join.left, self.join.right)[side].key(row)
        others = self.rows[1 - side].get(key) if None not in key else None
        if not others:
            return []
        condition = self.join.condition
        if side == 0:
            return [(other, n) for other, n in others.items() if condition(row + other) is True]
        return [(other, n) for other, n in others.items() if condition(other + row) is True]

    def contribute(self, row: Row, side: int, sign: int, out: Delta) -> None:
        """Count ``sign`` times the rows ``row`` of ``side`` contributes into ``out``, once
        per copy of it kept."""
        kept = self.rows[side].get((self.join.left, self.join.right)[side].key(row))
        copies = kept[row] if kept else 0
        if not copies:
            return
        matches = self.matches(row, side)
        kind = self.join.kind
        if side == 1:
            if not matches and self.join.right.outer:
                _count(out, (None,) * self.join.left.width + row, sign * copies)
            return
        if matches and kind == "semi":
            _count(out, row, sign * copies)
        elif matches and kind != "anti":
            for other, n in matches:
                _count(out, row + other, sign * copies * n)
        elif not matches and self.join.left.outer:
            _count(out, row + self.padding, sign * copies)

    def changes(self, deltas: Sequence[Delta]) -> Delta:
        """The join's changes in an epoch whose changes on its sides are ``deltas``."""
        concerned: tuple[dict[Row, None], dict[Row, None]] = ({}, {})
        for side, delta in enumerate(deltas):
            for row in delta:
                concerned[side][row] = None
                if side == 1 or self.join.right.outer:  # a right row's part is its padding
                    for other, _ in self.matches(row, side):
                        concerned[1 - side][other] = None
        out: Delta = {}
        for side, rows in enumerate(concerned):
            for row in rows:
                self.contribute(row, side, -1, out)
        for side, delta in enumerate(deltas):
            by_key = self.rows[side]
            key_of = (self.join.left, self.join.right)[side].key
            for row, n in delta.items():
                kept = by_key.setdefault(key_of(row), Counter())
                kept[row] += n
                if not kept[row]:
                    del kept[row]
                    if not kept:
                        del by_key[key_of(row)]
        for side, rows in enumerate(concerned):
            for row in rows:
                self.contribute(row, side, 1, out)
        return out


def _node_changes(node: Node) -> Callable[[Sequence[Delta]], Delta]:
    """Node ``node`` of a batch graph as a function from its ports' changes to its own: a
    stateless node maps them; a join recomputes the rows the changes concern
    (:class:`JoinChanges`); a GROUP BY evaluates its touched groups again, an OVER window,
    TopN (from its partition's first rows, kept in rank order) or MATCH_RECOGNIZE its touched
    partitions (:class:`PartitionChanges`); a SESSION or
    count window, whose groups may gather rows from several of its partitions, is evaluated
    again over all its input."""
    operator = node.operator
    if isinstance(operator, Stateless):
        stage = operator.stage
        return lambda deltas: _mapped(deltas[0], stage)
    if isinstance(operator, UnionAll):
        def union(deltas: Sequence[Delta]) -> Delta:
            out: Delta = {}
            for delta in deltas:
                for row, n in delta.items():
                    _count(out, row, n)
            return out
        return union
    if isinstance(operator, StreamJoin):
        return JoinChanges(operator).changes
    if isinstance(operator, AsofJoinOperator):  # a key's matches, evaluated again
        asof = operator.asof
        return PartitionChanges([asof.left_key, asof.right_key], operator.results).changes
    assert isinstance(operator, OneInput)
    fresh = node.fresh
    assert fresh is not None

    def alone(key: Row, ports: list[list[Row]]) -> list[Row]:
        """The operator's batch result over ``ports`` (a new instance, its input then ended)."""
        instance = fresh()
        assert isinstance(instance, OneInput)
        instance.below = None  # the live operator's steps below were applied already
        return instance.step(ports, {}, True)
    partitions: PartitionChanges
    if isinstance(operator, WindowAggregate):
        aggregate = operator
        partitions = PartitionChanges([aggregate.key], lambda key, ports: [
            aggregate.group_row(key, ports[0])], () if aggregate.is_global else None)
    elif isinstance(operator, TopNOperator):  # the first rows of a partition in rank order
        top = operator.top
        partitions = PartitionChanges([top.partition],
                                      lambda key, ports: top.ranked(top.head(ports[0])),
                                      kept=lambda: OrderedPartitionRows(top.sort_key))
    elif isinstance(operator, Partitioned):
        partitioned = operator
        partitions = PartitionChanges([partitioned.partition],
                                      lambda key, ports: partitioned.results(key, ports[0]))
    else:
        partitions = PartitionChanges([lambda row: ()], alone, ())
    below = operator.below
    if below is None:
        return partitions.changes
    return lambda deltas: partitions.changes([_mapped(deltas[0], below)])


def _update_by_changes(flow: Dataflow, log: ArrivalLog, convention: Convention,
                       late: LateSink | None) -> Iterator[Change]:
    """``Q(INPUT)`` after each epoch as the batch graph's changes: each epoch's new rows of
    INPUT flow bottom-up as changes, each node turning its ports' changes into its own
    (:func:`_node_changes`); the root's are the changelog."""
    steps = [None if node.source is not None else _node_changes(node) for node in flow.nodes]
    for epoch, rows, _, _ in input_epochs(flow.sources, log, convention, late, flow.checks,
                                          flow.stages, flow.judged_by):
        deltas: list[Delta] = []
        for node, step in zip(flow.nodes, steps, strict=True):
            if node.source is not None:
                delta: Delta = {}
                for row in rows[node.source]:
                    _count(delta, row, 1)
                deltas.append(delta)
            else:
                assert step is not None
                deltas.append(step([deltas[j] for j in node.inputs]))
        root = deltas[-1]
        yield from changes(epoch, Counter({row: -n for row, n in root.items() if n < 0}),
                           Counter({row: n for row, n in root.items() if n > 0}))


def changes(epoch: int, old: Counter[Row], new: Counter[Row]) -> Iterator[Change]:
    """The deletes, then the inserts, that turn ``old`` into ``new`` (each in row order)."""
    for row in sorted((old - new).elements(), key=row_sort_key):
        yield Change(epoch, "-", row)
    for row in sorted((new - old).elements(), key=row_sort_key):
        yield Change(epoch, "+", row)


__all__ = ["Change", "Dataflow", "Emission", "LateRow", "Node", "compile_dataflow", "run_eowc",
           "run_update"]
