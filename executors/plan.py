"""What an executor makes of a query of one source: the stateless part below its stateful
operator, the operator itself bound to its input schema, the part above it, the trigger and
the late check.

This is the executors' own binding of a query, independent of the reference interpreter's
(``eowc.semantics.engines``): it shares with the reference only the plan dataclasses and
expression compilation (``eowc.semantics.ir``), the trigger functions
(``eowc.semantics.rules.triggers``), the completion rule and watermark columns derived from
the plan (``eowc.semantics.analysis``) and the aggregate functions
(``eowc.semantics.operators.aggregates``, a fold tested on its own). The operators are the
executors' (:mod:`eowc.executors.over_window`, :mod:`eowc.executors.pattern`,
:mod:`eowc.executors.session`, :mod:`eowc.executors.count_window`,
:mod:`eowc.executors.top_n`), so a differential test of an executor against the reference
compares two implementations of each operator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from itertools import zip_longest
from operator import itemgetter
from typing import Any

from eowc.executors.count_window import CountWindows, count_windows
from eowc.executors.over_window import OverFunctions, over_functions
from eowc.executors.pattern import PatternMatcher, pattern_matcher
from eowc.executors.protocol import Arrival, Partial, Refusal
from eowc.executors.session import SessionWindows, session_windows
from eowc.executors.top_n import TopRanking, top_ranking
from eowc.semantics.analysis.completion import (
    CompletionRule,
    WatermarkColumns,
    completion_rule,
    late_check_is_per_window,
    ties_to_latest_arrival,
    watermark_columns,
    window_column,
    window_of_row,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import ColumnRef, Row, Schema, column_index, compile_expr
from eowc.semantics.ir.plan import (
    Aggregate,
    ArrivalOrder,
    CountTVF,
    Filter,
    GapFill,
    MatchRecognize,
    OverWindow,
    Plan,
    Project,
    ProjectSet,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    Unnest,
    WindowTVF,
    tie_break,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, format_timestamp
from eowc.semantics.operators.aggregates import AggregateFunction, compile_aggregate
from eowc.semantics.rules.triggers import (
    Convention,
    Watermark,
    completeness_comparison,
    window_accepts,
)

#: A stateless part of a plan: the rows it makes of one row.
Stateless = Callable[[Row], list[Row]]

STATEFUL = (Aggregate, OverWindow, TopN, MatchRecognize, GapFill)


def several_inputs(plan: Plan) -> bool:
    """The plan joins or unions several inputs (it runs on :mod:`eowc.executors.composed`)."""
    return any(len(node.children) > 1 for node in walk(plan))


def columns_of(exprs: list[Any], schema: Schema) -> Callable[[Row], Row]:
    """The tuple of ``exprs``' values of a row (column picks by ``itemgetter``)."""
    if exprs and all(isinstance(e, ColumnRef) for e in exprs):
        positions = [column_index(schema, e.name) for e in exprs]
        if len(positions) == 1:
            only = positions[0]
            return lambda row: (row[only],)
        return itemgetter(*positions)
    evaluators = tuple(compile_expr(e, schema).evaluate for e in exprs)
    return lambda row: tuple(f(row) for f in evaluators)


def _node_step(node: Plan) -> Stateless:
    """One stateless node as a function of a row: a filter keeps it or not, a projection
    maps it, a window TVF makes one row per window (a row with a NULL time none)."""
    if isinstance(node, Filter):
        predicate = compile_expr(node.predicate, node.input.schema).evaluate
        return lambda row: [row] if predicate(row) is True else []
    if isinstance(node, Project):
        project = columns_of([e for _, e in node.items], node.input.schema)
        return lambda row: [project(row)]
    if isinstance(node, ProjectSet):
        return _flat_map(node)
    if isinstance(node, WindowTVF):
        time_at = column_index(node.input.schema, node.time_column)
        windows_of = node.spec.windows_of

        def windowed(row: Row) -> list[Row]:
            t = row[time_at]
            if t is None:
                return []
            out = []
            for start, end in windows_of(t):
                out.append(row + (start, end, end - MICROS_PER_MILLI))
            return out
        return windowed
    raise PlanError(f"{type(node).__name__} is not supported here")


def _flat_map(node: ProjectSet) -> Stateless:
    """unnest in the select list: the unnested arrays side by side, the shorter ones padded
    with NULL, each other item's value beside every position."""
    unnested = [i for i, (_, e) in enumerate(node.items) if isinstance(e, Unnest)]
    evaluate = columns_of([e.array if isinstance(e, Unnest) else e for _, e in node.items],
                          node.input.schema)

    def flat_map(row: Row) -> list[Row]:
        values = evaluate(row)
        columns = zip_longest(*(values[i] or () for i in unnested))
        out = []
        for elements in columns:
            made = list(values)
            for i, element in zip(unnested, elements, strict=True):
                made[i] = element
            out.append(tuple(made))
        return out
    return flat_map


def stateless_part(nodes: list[Plan]) -> Stateless:
    """The stateless nodes ``nodes`` (bottom first) as one function of a row. Every window a
    row falls in is made: refusing a closed one is the stateful operator's late check."""
    steps = [_node_step(node) for node in nodes]
    if not steps:
        return lambda row: [row]
    if len(steps) == 1:
        return steps[0]

    def chained(row: Row) -> list[Row]:
        rows = [row]
        for step in steps:
            rows = [out for r in rows for out in step(r)]
        return rows
    return chained


@dataclass(frozen=True)
class BoundQuery:
    """A query of one source split around its stateful operator: ``stateless`` makes the
    operator's input rows of a source row; the operator is one of ``aggregate`` (with its
    ``functions`` and group ``key``), ``over``, ``top_n``, ``pattern``, or a ``session`` /
    ``count`` window TVF below an aggregate (``middle``: the stateless part between the
    two), or none (an EOWC sort); ``above`` is the part above it (None: the row is filtered
    out). ``rule`` is the trigger; ``per_window`` says the late check judges each window."""

    query: Query
    convention: Convention
    stateless: Stateless
    rule: CompletionRule
    per_window: bool
    above: Callable[[Row], Row | None]
    aggregate: Aggregate | None = None
    functions: tuple[AggregateFunction, ...] = ()
    key: Callable[[Row], Row] = lambda row: row  # noqa: E731
    over: OverFunctions | None = None
    top_n: TopRanking | None = None
    pattern: PatternMatcher | None = None
    session: SessionWindows | None = None
    count: CountWindows | None = None
    middle: Stateless | None = None
    #: The arrival positions that break ties (``--ties row-id``); None: the deterministic order.
    arrival: ArrivalOrder | None = None

    @property
    def source(self) -> Source:
        return self.query.source

    @property
    def is_sort(self) -> bool:
        """An EOWC sort: no stateful operator, rows emitted in watermark order."""
        return all(x is None for x in (self.aggregate, self.over, self.top_n, self.pattern,
                                       self.session, self.count))


def _above(nodes: list[Plan]) -> Callable[[Row], Row | None]:
    if not nodes:
        return lambda row: row
    part = stateless_part(nodes)

    def above(row: Row) -> Row | None:
        out = part(row)
        return out[0] if out else None
    return above


@lru_cache(maxsize=128)
def bind_query(query: Query, convention: Convention, arrival: ArrivalOrder | None = None
               ) -> BoundQuery:
    """Bind a query of one source and one stateful operator for an executor; a PlanError if it
    is not valid under EOWC (no trigger, a type error). Cached: a bound query holds only pure
    functions, and Spark builds the executor again at every start of a task."""
    if several_inputs(query.plan):
        raise PlanError("a query with joins or unions runs on the composed executor "
                        "(eowc.executors.composed, through processor_for)")
    nodes = list(reversed(walk(query.plan)))
    assert isinstance(nodes[0], Scan)
    if sum(isinstance(n, STATEFUL) for n in nodes) > 1:
        raise PlanError("a query of several stateful operators runs on the composed executor "
                        "(eowc.executors.composed, through processor_for)")
    _ = query.schema  # type-check the whole plan before anything runs
    rule = completion_rule(query, convention)
    source = query.source
    at = next((i for i, n in enumerate(nodes) if isinstance(n, STATEFUL)), len(nodes))
    below, above = nodes[1:at], nodes[at + 1:]
    stateful = nodes[at] if at < len(nodes) else None
    parts: dict[str, Any] = {}
    tvf_at = next((i for i, n in enumerate(below) if isinstance(n, SessionTVF | CountTVF)), None)
    if tvf_at is not None:
        tvf = below[tvf_at]
        if isinstance(tvf, SessionTVF):
            parts["session"] = session_windows(tvf, convention)
        else:
            assert isinstance(tvf, CountTVF)
            parts["count"] = count_windows(tvf, tie_break(tvf.input.schema, source, arrival))
        parts["middle"] = stateless_part(below[tvf_at + 1:])
        below = below[:tvf_at]
    if isinstance(stateful, Aggregate):
        schema = stateful.input.schema
        event_time = watermark_columns(stateful.input).event_time
        time_name = schema[event_time].name if event_time is not None else None
        tie = tie_break(schema, source, arrival)
        parts["aggregate"] = stateful
        parts["functions"] = tuple(compile_aggregate(c, schema, time_name, tie)
                                   for c in stateful.calls)
        parts["key"] = columns_of([e for _, e in stateful.group_by], schema)
    elif isinstance(stateful, OverWindow):
        parts["over"] = over_functions(stateful, tie_break(stateful.input.schema, source, arrival))
    elif isinstance(stateful, TopN):
        parts["top_n"] = top_ranking(stateful, tie_break(
            stateful.input.schema, source, arrival, ties_to_latest_arrival(stateful, convention)))
    elif isinstance(stateful, MatchRecognize):
        parts["pattern"] = pattern_matcher(stateful, tie_break(stateful.input.schema, source,
                                                               arrival))
    return BoundQuery(query, convention, stateless_part(below), rule,
                      late_check_is_per_window(query.plan, convention), _above(above),
                      arrival=arrival, **parts)


#: The partitions of an EOWC sort unless :class:`ExecutorOptions` says otherwise: each a
#: Spark key with a timer, so more cost more state calls per micro-batch; 32 keys spread over
#: 8 shuffle partitions at most 8 to one (16: 5, 48: 10; ``tests/spark/test_bucket_spread.py``).
SORT_PARTITIONS = 32


@dataclass(frozen=True)
class ExecutorOptions:
    """How an executor runs where the semantics leaves the choice to the engine.

    ``sort_partitions``: the partitions of an EOWC sort (:class:`~eowc.executors.processors.EowcSort`).
    Its rows are hash-partitioned by the source's primary key (or the whole row) and come out
    ordered by the watermark column within each partition, not across them, as RisingWave's
    EOWC sort is ordered within each parallel partition; 1 gives one total order (on one
    task). A partition is part of the state's key: a run resumed from a checkpoint must keep
    the number it was started with."""

    sort_partitions: int = SORT_PARTITIONS

    def __post_init__(self) -> None:
        if self.sort_partitions < 1:
            raise ValueError(f"an EOWC sort needs at least 1 partition, got {self.sort_partitions}")


#: The options an executor runs with unless told otherwise.
DEFAULT_OPTIONS = ExecutorOptions()


@dataclass(frozen=True)
class ExecutorPlan:
    """What an executor needs of a query (:class:`BoundQuery`, named ``compiled``), the
    window a row of its operator's input belongs to, where the late check judges windows, and
    the engine's :class:`ExecutorOptions`. ``group_window``: the window of a group
    aggregate's group, where the group holds the column ``window_of`` reads (so all the rows of
    a group are in that window); None where it does not."""

    compiled: BoundQuery
    window_of: Callable[[Row], Any] | None
    options: ExecutorOptions = DEFAULT_OPTIONS
    group_window: Callable[[Row], Any] | None = None

    @property
    def convention(self) -> Convention:
        return self.compiled.convention

    def stateless(self, row: Row) -> list[Row]:
        """The rows the stateless part makes of one source row (every window: refusing a
        closed window is the stateful operator's job)."""
        return self.compiled.stateless(row)

    def admit(self, arrivals: list[Arrival], watermark: Watermark
              ) -> tuple[list[Arrival], list[Refusal]]:
        """The convention's late check of a batch of arrivals: those the operator takes, in
        order, and a :class:`Refusal` saying why for each other.
        Under a per-window check (Spark, Flink aggregates) each distinct window is judged
        once."""
        accepted: list[Arrival] = []
        refused: list[Refusal] = []
        if self.compiled.per_window and self.window_of is not None:
            verdict = self.window_verdicts(watermark)
            for arrival in arrivals:
                reason = verdict(self.window_of(arrival.row))
                if reason is None:
                    accepted.append(arrival)
                else:
                    refused.append(Refusal(arrival.seq, arrival.fanout, reason, arrival.source))
            return accepted, refused
        is_late = self.late_comparison()
        rule = self.convention.value
        for arrival in arrivals:
            if is_late(arrival.time, watermark):
                reason = (f"event time {format_timestamp(arrival.time)} is late at watermark "
                          f"{format_timestamp(watermark)} ({rule} rule)")
                refused.append(Refusal(arrival.seq, arrival.fanout, reason, arrival.source))
            else:
                accepted.append(arrival)
        return accepted, refused

    def admit_partials(self, partials: list[Partial], watermark: Watermark
                       ) -> tuple[list[Partial], list[Refusal]]:
        """The per-window late check of folded rows (:class:`Partial`): those whose group's
        window takes rows, and a :class:`Refusal` for each row of the others."""
        group_window = self.group_window
        assert group_window is not None
        accepted: list[Partial] = []
        refused: list[Refusal] = []
        verdict = self.window_verdicts(watermark)
        for partial in partials:
            reason = verdict(group_window(partial.group))
            if reason is None:
                accepted.append(partial)
            else:
                sources = partial.sources or [None] * len(partial.seqs)
                refused += [Refusal(seq, fanout, reason, source) for seq, fanout, source in
                            zip(partial.seqs, partial.fanouts, sources, strict=True)]
        return accepted, refused

    def late_comparison(self) -> Callable[[int, Watermark], bool]:
        """The late check of a row's event time against the watermark before its batch:
        :func:`~eowc.semantics.rules.triggers.row_is_late` with the convention bound."""
        return completeness_comparison(self.convention)

    def window_verdicts(self, watermark: Watermark) -> Callable[[Any], str | None]:
        """:meth:`window_refusal` at ``watermark``, each distinct window judged once."""
        return cache(lambda window: self.window_refusal(window, watermark))

    def window_refusal(self, window: Any, watermark: Watermark) -> str | None:
        """Why ``window`` refuses rows at ``watermark`` (:func:`window_accepts`), or None."""
        if window_accepts(window, watermark, self.convention):
            return None
        return (f"window [{format_timestamp(window.start)}, {format_timestamp(window.end)}) was "
                f"closed at watermark {format_timestamp(watermark)} ({self.convention.value} rule)")


def executor_plan(query: Query, convention: Convention, arrival: ArrivalOrder | None = None,
                  options: ExecutorOptions = DEFAULT_OPTIONS) -> ExecutorPlan:
    """Bind ``query`` for an executor run with ``options``; a PlanError if it is not valid
    under EOWC. Ties are broken by ``arrival`` when given (``--ties row-id``)."""
    compiled = bind_query(query, convention, arrival)
    window_of = group_window = None
    stateful = compiled.aggregate or (compiled.top_n.node if compiled.top_n else None)
    if stateful is not None and compiled.session is None and compiled.count is None:
        columns = watermark_columns(stateful.input)
        if columns.has_window_column:
            window_of = window_of_row(columns)
            if compiled.aggregate is not None:
                group_window = _group_window(columns, compiled.aggregate)
    return ExecutorPlan(compiled, window_of, options, group_window)


def _group_window(columns: WatermarkColumns, aggregate: Aggregate) -> Callable[[Row], Any] | None:
    """The window of a group of ``aggregate``, read off the group where it holds the window
    column its input rows' window is read from (:func:`window_column`); else None."""
    at = window_column(columns)
    name = aggregate.input.schema[at].name
    position = next((j for j, (_, e) in enumerate(aggregate.group_by)
                     if isinstance(e, ColumnRef) and e.name == name), None)
    if position is None:
        return None
    role = next(role for role, i in columns.positions.items() if i == at)
    return window_of_row(replace(WatermarkColumns(window=columns.window), **{role: position}))
