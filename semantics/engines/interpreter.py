"""The reference interpreter's entry points, and the single-operator compilation the executors
still read.

``run_eowc`` and ``run_update`` are the dataflow interpreter's
(:mod:`eowc.semantics.engines.dataflow`: a plan compiled to a graph of logical operators,
evaluated epoch by epoch). :class:`CompiledQuery` and :func:`compile_query` (one stateful
operator over one source, or over a join's derived source), :func:`admitted_epochs`,
:func:`session_group_results` and :func:`count_results` are kept for
:mod:`eowc.executors`, which reads its queries through them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from eowc.semantics.analysis.completion import (
    CompletionRule,
    completion_rule,
    late_check_is_per_window,
    watermark_columns,
)
from eowc.semantics.analysis.derivation_graph import analyze
from eowc.semantics.analysis.operator_inputs import operator_inputs
from eowc.semantics.engines.dataflow import Change, Emission, compile_dataflow, run_eowc, run_update
from eowc.semantics.engines.inputs import LateRow, LateSink, input_epochs, one_source_epochs
from eowc.semantics.engines.multi_input import (
    derived_epochs,
    has_several_inputs,
    sources_of,
    split_multi_input,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import (
    Aggregate,
    CountTVF,
    MatchRecognize,
    OverWindow,
    Plan,
    Query,
    Scan,
    SessionTVF,
    TopN,
    WindowTVF,
    tie_break,
    walk,
)
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.operators.aggregates import AggregateFunction, aggregate_value, compile_aggregate
from eowc.semantics.operators.count_window import CompiledCount, closed_count_windows, compile_count
from eowc.semantics.operators.logical import compile_stateless, tuple_of
from eowc.semantics.operators.over import CompiledOver, OverPartition, compile_over
from eowc.semantics.operators.pattern import (
    CompiledPattern,
    compile_pattern,
)
from eowc.semantics.operators.protocol import PortClock
from eowc.semantics.operators.session import (
    CompiledSession,
    compile_session,
)
from eowc.semantics.operators.top_n import CompiledTopN, compile_top_n
from eowc.semantics.rules.triggers import (
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    windowed_row_is_late,
)

Stage = Callable[[Row, Watermark], list[Row]]
#: The stateless nodes ``nodes`` (bottom first) as one stage ``(row, W_before) -> rows``: what
#: the executors run below a join (:mod:`eowc.executors.joins`), as the lower part here does.
_chain = compile_stateless


def _linear(plan: Plan) -> list[Plan]:
    """The plan's nodes bottom first; a PlanError unless it is a single chain."""
    nodes = walk(plan)
    assert not has_several_inputs(plan), "split by compile_query"
    if sum(isinstance(n, OverWindow | Aggregate | TopN | MatchRecognize) for n in nodes) > 1:
        raise PlanError("two stateful operators (GROUP BY, OVER window, TopN) in one query are "
                        "not executed by the interpreter yet")
    return list(reversed(nodes))


@dataclass(frozen=True)
class CompiledQuery:
    """A query split around its aggregate: ``below`` rows feed ``aggregate`` (if any), whose
    result rows go through ``above``. ``is_late`` is the late check of INPUT, made per
    (row, window) when ``per_window`` (:func:`late_check_is_per_window`), in which case
    ``below`` gives a row only the windows that accept it; ``below_every_window`` is ``below``
    without that check (the executors make it in their stateful operator)."""

    query: Query
    convention: Convention
    below: Stage
    aggregate: Aggregate | None
    functions: tuple[AggregateFunction, ...]
    key: Callable[[Row], Row]
    above: Callable[[Row], Row | None]
    is_late: Callable[[int, Watermark], bool]
    per_window: bool
    rule: CompletionRule | None
    below_every_window: Stage
    over: CompiledOver | None = None
    top_n: CompiledTopN | None = None
    #: A SESSION TVF below the aggregate, and the stateless part between the two.
    session: CompiledSession | None = None
    middle: Stage | None = None
    #: With joins or unions: the derived source's epochs (:mod:`eowc.semantics.engines.multi_input`),
    #: called as ``feed(log, late, close)``; ``query`` is then the part above them.
    feed: Callable[..., Iterator[EpochInput]] | None = None
    #: A count window TVF (COUNT_TUMBLE, COUNT_HOP) below the aggregate; ``middle`` is then
    #: the stateless part between the two.
    count: CompiledCount | None = None
    #: A MATCH_RECOGNIZE (the stateful operator; :mod:`eowc.semantics.operators.pattern`).
    pattern: CompiledPattern | None = None

    @property
    def source(self) -> Any:
        return self.query.source

    @property
    def is_sort(self) -> bool:
        """An EOWC sort: no stateful operator, rows emitted in watermark order."""
        stateful = (self.aggregate, self.over, self.top_n, self.pattern, self.session,
                    self.count, self.feed)
        return all(node is None for node in stateful)


@lru_cache(maxsize=128)
def compile_query(query: Query, convention: Convention, eowc: bool) -> CompiledQuery:
    """Bind ``query`` for evaluation; under EOWC, a PlanError if it has no trigger. Cached:
    a compiled query holds only pure functions, and verification runs one query many times."""
    if has_several_inputs(query.plan):
        return _compile_multi_input(query, convention, eowc)
    nodes = _linear(query.plan)
    assert isinstance(nodes[0], Scan)
    source = query.source
    _ = query.schema  # type-check the whole plan before anything runs
    rule: CompletionRule | None = None
    if eowc:
        rule = completion_rule(query, convention)
    else:
        try:
            rule = completion_rule(query, convention)
        except PlanError:
            rule = None
    split = next((i for i, n in enumerate(nodes)
                  if isinstance(n, Aggregate | OverWindow | TopN | MatchRecognize)),
                 len(nodes))
    below_nodes, above_nodes = nodes[1:split], nodes[split + 1:]
    session_at = next((i for i, n in enumerate(below_nodes) if isinstance(n, SessionTVF)), None)
    session, middle = None, None
    if session_at is not None:
        session_node = below_nodes[session_at]
        assert isinstance(session_node, SessionTVF)
        session = compile_session(session_node)
        middle_nodes = below_nodes[session_at + 1:]
        middle = _chain(middle_nodes, convention) if middle_nodes else (lambda row, w: [row])
        below_nodes = below_nodes[:session_at]
    count_at = next((i for i, n in enumerate(below_nodes) if isinstance(n, CountTVF)), None)
    count = None
    if count_at is not None:
        count_node = below_nodes[count_at]
        assert isinstance(count_node, CountTVF)
        count = compile_count(count_node, tie_break(count_node.input.schema, source))
        middle_nodes = below_nodes[count_at + 1:]
        middle = _chain(middle_nodes, convention) if middle_nodes else (lambda row, w: [row])
        below_nodes = below_nodes[:count_at]
    stateful = nodes[split] if split < len(nodes) else None
    aggregate = stateful if isinstance(stateful, Aggregate) else None
    over = compile_over(stateful, tie_break(stateful.input.schema, source)) \
        if isinstance(stateful, OverWindow) else None
    top_n = compile_top_n(stateful, tie_break(stateful.input.schema, source)) \
        if isinstance(stateful, TopN) else None
    pattern = compile_pattern(stateful, tie_break(stateful.input.schema, source)) \
        if isinstance(stateful, MatchRecognize) else None
    windows = [n for n in below_nodes if isinstance(n, WindowTVF)]
    time_index = source.event_time_index
    per_window = late_check_is_per_window(query.plan, convention)
    below = _chain(below_nodes, convention, per_window) if below_nodes else (lambda row, w: [row])
    below_every_window = _chain(below_nodes, convention) if below_nodes else below
    functions: tuple[AggregateFunction, ...] = ()
    key: Callable[[Row], Row] = lambda row: row  # noqa: E731
    if isinstance(aggregate, Aggregate):
        schema = aggregate.input.schema
        event_time = watermark_columns(aggregate.input).event_time
        time_name = schema[event_time].name if event_time is not None else None
        functions = tuple(compile_aggregate(c, schema, time_name, tie_break(schema, source))
                          for c in aggregate.calls)
        key = tuple_of([e for _, e in aggregate.group_by], schema)
    if above_nodes:
        chain = _chain(above_nodes, convention)

        def above(row: Row) -> Row | None:
            out = chain(row, NO_WATERMARK)
            return out[0] if out else None
    else:
        def above(row: Row) -> Row | None:
            return row
    if time_index is None:
        def is_late(t: int, w: Watermark) -> bool:
            return False
    elif per_window:
        windows_of = windows[0].spec.windows_of

        def is_late(t: int, w: Watermark) -> bool:
            return windowed_row_is_late(windows_of(t), w, convention)
    else:  # row_is_late under ``convention``
        is_late = completeness_comparison(convention)
    return CompiledQuery(query, convention, below, aggregate, functions, key, above, is_late,
                         per_window, rule, below_every_window, over, top_n, session, middle,
                         count=count, pattern=pattern)


def _compile_multi_input(query: Query, convention: Convention, eowc: bool) -> CompiledQuery:
    """A query with joins or unions: the part above them, fed by the derived source of
    :mod:`eowc.semantics.engines.multi_input`."""

    if eowc:
        error = analyze(query, convention).error
        if error is not None:
            raise PlanError(error)

    split = split_multi_input(query, convention)
    assert split is not None
    compiled = compile_query(split.upper, convention, eowc)

    def feed(log: ArrivalLog, late: LateSink | None, close: bool) -> Iterator[EpochInput]:
        below = compiled.below
        report = None if late is None else \
            (lambda epoch, event, watermark: late(LateRow(epoch, event, watermark)))
        def run(subquery: Query, admitted: ArrivalLog, close: bool) -> Iterator[tuple[int, Row]]:
            return ((e.epoch, e.row) for e in run_eowc(subquery, admitted, convention, close))
        for epoch, before, after, rows in derived_epochs(split, convention, _chain, log, report,
                                                          close, run):
            yield epoch, before, after, [out for row in rows for out in below(row, before)]
    return replace(compiled, feed=feed)


#: What the stateful part receives per epoch: (epoch, W before, W after, rows of INPUT
#: after the stateless part). A plain tuple: it is made once per epoch on the hot path.
EpochInput = tuple[int, Watermark, Watermark, list[Row]]


def admitted_epochs(compiled: CompiledQuery, log: ArrivalLog,
                    late: LateSink | None = None, close: bool = False) -> Iterator[EpochInput]:
    """Per epoch: the rows of INPUT after the stateless part, and the source watermark
    before and after the epoch (``SEMANTICS.md`` §1). A query with joins or unions reads its
    derived source (:mod:`eowc.semantics.engines.multi_input`), which with ``close`` has one more step
    after the last epoch, at +infinity."""
    if compiled.feed is not None:
        yield from compiled.feed(log, late, close)
        return
    for epoch, rows, before, after in one_source_epochs(compiled.source, log, compiled.convention,
                                                        late, compiled.is_late, compiled.below):
        yield epoch, before, after, rows


def watermark_sequence(query: Query, log: ArrivalLog, convention: Convention) -> list[Watermark]:
    """After each epoch, the watermark of the input the EOWC query's top operator reads (its
    port's watermark, :class:`~eowc.semantics.operators.protocol.PortClock`): its source's
    watermark, or over a join, a union or another operator, the watermark the derivation gives
    the column its trigger reads."""
    eowc = replace(query, emit_on_window_close=True)
    top = operator_inputs(eowc, convention)[-1]
    clock = PortClock(top.source, top.watermark, convention)
    marks = []
    for step in input_epochs(sources_of(query.plan), log, convention):
        clock.advance(step.after, False)
        marks.append(clock.after)
    return marks


def check_runs_under_eowc(query: Query, convention: Convention) -> None:
    """A PlanError unless the reference runs ``query`` under EOWC: a valid EOWC query
    (:func:`~eowc.semantics.engines.dataflow.check_eowc`) of operators it has."""
    compile_dataflow(query, convention, eowc=True)


def session_group_results(compiled: CompiledQuery, tvf_rows: list[Row]) -> list[tuple[Row, Row]]:
    """The GROUP BY above a SESSION TVF over a batch of its output rows: each group's key and
    result row (after HAVING and the projection), ordered by key."""
    middle = compiled.middle
    assert middle is not None
    groups: dict[Row, list[Row]] = {}
    for tvf_row in tvf_rows:
        for row in middle(tvf_row, NO_WATERMARK):
            groups.setdefault(compiled.key(row), []).append(row)
    out = []
    for key in sorted(groups, key=row_sort_key):
        result = compiled.above(key + tuple(aggregate_value(f, groups[key])
                                            for f in compiled.functions))
        if result is not None:
            out.append((key, result))
    return out


def count_results(compiled: CompiledQuery, tvf_rows: list[tuple[Any, Row]]
                  ) -> list[tuple[Any, Row]]:
    """The part above a count window TVF over a batch of its output rows, each given with its
    place in the output order: with a GROUP BY, each group's result row (after HAVING and
    the projection), placed by the group's bound, then its key; without, the rows through the
    stateless part, in the places of their TVF rows."""
    middle, rule = compiled.middle, compiled.rule
    assert middle is not None
    if compiled.aggregate is None:
        return [(order, out) for order, row in tvf_rows for out in middle(row, NO_WATERMARK)]
    groups: dict[Row, list[Row]] = {}
    for _, tvf_row in tvf_rows:
        for row in middle(tvf_row, NO_WATERMARK):
            groups.setdefault(compiled.key(row), []).append(row)

    def order(key: Row) -> Any:
        return (rule.bound(key) if rule is not None else 0, row_sort_key(key))
    results = ((order(key), compiled.above(key + tuple(aggregate_value(f, groups[key])
                                                        for f in compiled.functions)))
               for key in sorted(groups, key=order))
    return [(place, row) for place, row in results if row is not None]


def snapshots(changes: list[Change], epochs: int) -> list[list[Row]]:
    """The result after each epoch (sorted), rebuilt from a changelog."""
    current: Counter[Row] = Counter()
    result: list[list[Row]] = []
    by_epoch: dict[int, list[Change]] = {}
    for change in changes:
        by_epoch.setdefault(change.epoch, []).append(change)
    for epoch in range(epochs):
        for change in by_epoch.get(epoch, []):
            current[change.row] += 1 if change.op == "+" else -1
        result.append(sorted(current.elements(), key=row_sort_key))
    return result




#: What other packages import from here (the entry points, and names the executors read).
__all__ = ["Change", "CompiledQuery", "Emission", "LateRow", "LateSink", "OverPartition",
           "admitted_epochs", "check_runs_under_eowc", "closed_count_windows", "compile_query",
           "compile_stateless",
           "count_results", "run_eowc", "run_update", "session_group_results", "snapshots",
           "tuple_of", "watermark_sequence"]
