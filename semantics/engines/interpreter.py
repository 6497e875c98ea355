"""The reference interpreter: what an EOWC (or emit-on-update) query must have emitted after
every epoch of an arrival log, computed in one pass.

Because a source watermark never goes down and every trigger condition is monotone in it
(:mod:`eowc.semantics.rules.triggers`), a result that is complete after epoch ``e`` is final: it is
emitted, tagged ``e``, and its state dropped. So one pass over the log gives every row's
emission epoch, with memory bounded by the results still open. :mod:`eowc.semantics.engines.spec` states
the same outputs declaratively (``Q'(INPUT, W)`` re-evaluated after each epoch) and the tests
check that the two agree.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from operator import itemgetter
from typing import Any, NamedTuple

from eowc.semantics.analysis.completion import (
    CompletionRule,
    completion_rule,
    late_check_is_per_window,
    watermark_columns,
)
from eowc.semantics.engines.multi_input import (
    derived_epochs,
    has_several_inputs,
    source_epochs,
    sources_of,
    split_multi_input,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import ColumnRef, Row, Schema, column_index, compile_expr
from eowc.semantics.ir.plan import (
    Aggregate,
    CountTVF,
    Filter,
    MatchRecognize,
    OverWindow,
    Plan,
    Project,
    Query,
    Scan,
    SessionTVF,
    TopN,
    WindowTVF,
    tie_break,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.operators.aggregates import AggregateFunction, aggregate_value, compile_aggregate
from eowc.semantics.operators.count_window import CompiledCount, CountPartition, compile_count, count_rows
from eowc.semantics.operators.over import CompiledOver, compile_over, partition_results
from eowc.semantics.operators.pattern import (
    CompiledPattern,
    PatternPartition,
    compile_pattern,
    partition_matches,
)
from eowc.semantics.operators.session import (
    CompiledSession,
    compile_session,
    pop_closed_sessions,
    session_rows,
)
from eowc.semantics.operators.top_n import CompiledTopN, TopNPartition, compile_top_n
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    frame_is_complete,
    source_watermark,
    window_accepts,
    windowed_row_is_late,
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


class LateRow(NamedTuple):
    """A row left out of INPUT (Definition 1): late under ``watermark_before``."""

    epoch: int
    event: Event
    watermark_before: Watermark


LateSink = Callable[[LateRow], None]
Stage = Callable[[Row, Watermark], list[Row]]


def tuple_of(exprs: list[Any], schema: Schema) -> Callable[[Row], Row]:
    """A function from a row to the tuple of ``exprs``' values (column picks use itemgetter)."""
    if exprs and all(isinstance(e, ColumnRef) for e in exprs):
        positions = [column_index(schema, e.name) for e in exprs]
        if len(positions) == 1:
            only = positions[0]
            return lambda row: (row[only],)
        return itemgetter(*positions)
    fs = tuple(compile_expr(e, schema).evaluate for e in exprs)
    return lambda row: tuple(f(row) for f in fs)


def _chain(nodes: list[Plan], convention: Convention, per_window: bool = False) -> Stage:
    """Compile stateless nodes (bottom first) into one function ``(row, W_before) -> rows``.
    With ``per_window`` (the late check of a window aggregate under Spark or Flink), a window
    TVF gives a row only the windows that still accept it (:func:`window_accepts`)."""
    stages: list[Stage] = []
    for node in nodes:
        if isinstance(node, Filter):
            predicate = compile_expr(node.predicate, node.input.schema).evaluate
            stages.append(lambda row, w, p=predicate: [row] if p(row) is True else [])
        elif isinstance(node, Project):
            project = tuple_of([e for _, e in node.items], node.input.schema)
            stages.append(lambda row, w, p=project: [p(row)])
        elif isinstance(node, WindowTVF):
            index = [c.name for c in node.input.schema].index(node.time_column)
            windows_of = node.spec.windows_of
            accepts = partial(window_accepts, convention=convention) if per_window else None

            def assign(row: Row, w: Watermark, i: int = index, of: Any = windows_of,
                       accepts: Any = accepts) -> list[Row]:
                t = row[i]
                if t is None:
                    return []
                out = []  # a loop, not a comprehension: no frame per row on Python 3.11
                for window in of(t):
                    if accepts is None or accepts(window, w):
                        start, end = window
                        out.append(row + (start, end, end - MICROS_PER_MILLI))
                return out
            stages.append(assign)
        else:
            raise PlanError(f"{type(node).__name__} is not supported here")
    if len(stages) == 1:
        return stages[0]

    def chained(row: Row, w: Watermark) -> list[Row]:
        rows = [row]
        for stage in stages:
            rows = [out for r in rows for out in stage(r, w)]
        return rows
    return chained


#: The stateless nodes ``nodes`` (bottom first) as one stage ``(row, W_before) -> rows``: what
#: the executors run below a join (:mod:`eowc.executors.joins`), as the lower part here does.
compile_stateless = _chain


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
    from eowc.semantics.analysis.derivation_graph import analyze

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
    source = compiled.source
    name, below, is_late = source.name, compiled.below, compiled.is_late
    time_index = source.event_time_index
    delay = source.watermark.delay if source.watermark else 0
    convention = compiled.convention
    max_time: Watermark = NO_WATERMARK
    watermark: Watermark = NO_WATERMARK
    max_time_used = max_time
    for epoch, events in enumerate(log.epochs):
        rows: list[Row] = []
        for event in events:
            table, row, _ = event
            if table != name:
                continue
            if time_index is not None:
                t = row[time_index]
                if t > max_time:
                    max_time = t
                if is_late(t, watermark):
                    if late is not None:
                        late(LateRow(epoch, event, watermark))
                    continue
            rows += below(row, watermark)
        before = watermark
        if max_time > max_time_used:
            watermark = max(watermark, source_watermark(max_time, delay, convention))
            max_time_used = max_time
        yield epoch, before, watermark, rows


def watermark_sequence(query: Query, log: ArrivalLog, convention: Convention) -> list[Watermark]:
    """The query source's watermark after each epoch."""
    compiled = compile_query(query, convention, eowc=False)
    return [after for _, _, after, _ in admitted_epochs(compiled, log)]


class _Groups:
    """Open aggregation groups, and the order in which they complete."""

    def __init__(self, compiled: CompiledQuery) -> None:
        self.compiled = compiled
        self.states: dict[Row, list[Any]] = {}
        self.pending: list[tuple[int, Any, Row]] = []
        self.add = self._adder()

    def _adder(self) -> Callable[[list[Row], set[Row] | None], None]:
        """``add(rows, touched=None)``: fold ``rows`` into their groups (opening new groups
        in completion order); collect the keys of the groups touched into ``touched``. A
        closure over everything it reads, since it runs once per epoch."""
        key_of, functions, states = self.compiled.key, self.compiled.functions, self.states
        adds = [(i, f.add) for i, f in enumerate(functions)]
        bound = self.compiled.rule.bound if self.compiled.rule else None
        pending, push = self.pending, heapq.heappush

        def add(rows: list[Row], touched: set[Row] | None = None) -> None:
            for row in rows:
                key = key_of(row)
                group = states.get(key)
                if group is None:
                    group = states[key] = [f.initial() for f in functions]
                    if bound is not None:
                        push(pending, (bound(key), row_sort_key(key), key))
                for i, fold in adds:
                    group[i] = fold(group[i], row)
                if touched is not None:
                    touched.add(key)
        return add

    def result(self, key: Row) -> Row | None:
        group = self.states[key]
        values = tuple(f.result(s) for f, s in zip(self.compiled.functions, group, strict=True))
        return self.compiled.above(key + values)

    def any_complete(self, watermark: Watermark) -> bool:
        """Some open group is complete at ``watermark`` (the first in completion order is)."""
        pending, rule = self.pending, self.compiled.rule
        return bool(pending) and rule is not None and rule.is_complete(pending[0][0], watermark)

    def pop_complete(self, watermark: Watermark) -> Iterator[Row]:
        """Drop the groups complete at ``watermark``; their result rows that pass HAVING."""
        for key in self.complete(watermark):
            out = self.result(key)
            del self.states[key]
            if out is not None:
                yield out

    def complete(self, watermark: Watermark) -> list[Row]:
        """Pop the groups complete at ``watermark``, in bound-then-key order."""
        rule, pending = self.compiled.rule, self.pending
        done: list[Row] = []
        while rule is not None and pending and rule.is_complete(pending[0][0], watermark):
            done.append(heapq.heappop(pending)[2])
        return done


def run_eowc(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
             close: bool = False, late: LateSink | None = None) -> Iterator[Emission]:
    """``Q'(INPUT, W)`` as an append-only stream: each result row once, tagged with the epoch
    after which it is first emitted, in emission order (by epoch, then watermark column,
    then the rest of the row). ``close`` moves the watermark to +infinity after the last
    epoch (end of a bounded input); those rows are tagged ``len(log.epochs)``.

    The query is checked here (a PlanError if it is not valid under EOWC); rows are
    computed as the iterator is consumed."""
    compiled = compile_query(query, convention, eowc=True)
    if compiled.pattern is not None:
        return _eowc_pattern(compiled, log, close, late)
    if compiled.count is not None:
        return _eowc_count(compiled, log, close, late)
    if compiled.session is not None:
        return _eowc_session(compiled, log, close, late)
    if compiled.aggregate is not None:
        return _eowc_aggregate(compiled, log, close, late)
    if compiled.over is not None:
        return _eowc_over(compiled, log, close, late)
    if compiled.top_n is not None:
        return _eowc_top_n(compiled, log, close, late)
    return _eowc_sort(compiled, log, close, late)


def _eowc_aggregate(compiled: CompiledQuery, log: ArrivalLog, close: bool,
                    late: LateSink | None) -> Iterator[Emission]:
    """EOWC GroupAgg/SortAgg: fold rows into their groups; emit and drop complete groups."""
    groups = _Groups(compiled)
    add, any_complete, pop_complete = groups.add, groups.any_complete, groups.pop_complete
    for epoch, before, after, rows in admitted_epochs(compiled, log, late, close):
        if rows:
            add(rows)
        if after != before and any_complete(after):  # else nothing new is complete
            for out in pop_complete(after):
                yield Emission(epoch, out)
    if close:
        for out in groups.pop_complete(CLOSED_WATERMARK):
            yield Emission(len(log.epochs), out)


def _eowc_sort(compiled: CompiledQuery, log: ArrivalLog, close: bool,
               late: LateSink | None) -> Iterator[Emission]:
    """EOWC sort: buffer rows ordered by their watermark column; emit the complete ones. A
    row whose watermark column is NULL (only a join's NULL-padded outer row, which the join
    makes once it is final) is emitted at once."""
    rule = compiled.rule
    assert rule is not None
    buffer: list[tuple[Any, Any, Row]] = []  # the SortBuffer
    order = tie_break(compiled.query.schema, compiled.source)
    for epoch, _, after, rows in admitted_epochs(compiled, log, late, close):
        unordered = []  # a NULL watermark column: a join's outer row, final when made
        for row in rows:
            bound = rule.bound(row)
            if bound is None:
                unordered.append(row)
            else:
                heapq.heappush(buffer, (bound, order(row), row))
        for row in sorted(unordered, key=order):
            yield Emission(epoch, row)
        while buffer and rule.is_complete(buffer[0][0], after):
            yield Emission(epoch, heapq.heappop(buffer)[2])
    if close:
        while buffer:
            yield Emission(len(log.epochs), heapq.heappop(buffer)[2])


def _eowc_over(compiled: CompiledQuery, log: ArrivalLog, close: bool,
               late: LateSink | None) -> Iterator[Emission]:
    """EOWC OverWindow (seed 002): each partition's rows in ORDER BY order; after every epoch
    the rows whose frame is complete (:func:`frame_is_complete`) are emitted with their
    results. They are a prefix of the partition's pending rows, since a later row waits for
    at least as much."""
    over, convention = compiled.over, compiled.convention
    assert over is not None

    def finals(key: Row, partition: OverPartition, watermark: Watermark) -> Any:
        return partition.pop_final(over, watermark, convention) if partition.pending else ()
    return _eowc_by_partition(compiled, log, close, late, over, OverPartition, finals)


def _eowc_by_partition(compiled: CompiledQuery, log: ArrivalLog, close: bool,
                       late: LateSink | None, operator: Any, new_partition: Callable[[], Any],
                       finals: Callable[[Row, Any, Watermark], Any]) -> Iterator[Emission]:
    """A partitioned operator (OVER window, MATCH_RECOGNIZE) under EOWC: each row goes to its
    partition (``operator.partition(row)``, ``partition.add(operator, row)``); after every
    epoch ``finals(key, partition, W)`` gives the partition's rows that became final as
    ``(order, tie, row)``, emitted in that order across partitions."""
    above = compiled.above
    partitions: dict[Row, Any] = {}

    def release(epoch: int, watermark: Watermark) -> Iterator[Emission]:
        done = [item for key, p in partitions.items() for item in finals(key, p, watermark)]
        for _, _, row in sorted(done, key=lambda item: (item[0], item[1])):
            out = above(row)
            if out is not None:
                yield Emission(epoch, out)

    for epoch, _, after, rows in admitted_epochs(compiled, log, late, close):
        for row in rows:
            partitions.setdefault(operator.partition(row), new_partition()).add(operator, row)
        yield from release(epoch, after)
    if close:
        yield from release(len(log.epochs), CLOSED_WATERMARK)


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


def _session_groups(compiled: CompiledQuery, tvf_rows: list[Row]) -> list[Row]:
    return [row for _, row in session_group_results(compiled, tvf_rows)]


def _eowc_session(compiled: CompiledQuery, log: ArrivalLog, close: bool,
                  late: LateSink | None) -> Iterator[Emission]:
    """EOWC session aggregation: per partition key the rows of its open sessions; after each
    epoch the sessions that closed (a prefix, in time order) are aggregated, emitted and
    dropped."""
    session, rule = compiled.session, compiled.rule
    assert session is not None and rule is not None
    partitions: dict[Row, list[Row]] = {}

    def release(epoch: int, watermark: Watermark) -> Iterator[Emission]:
        by_window = pop_closed_sessions(session, partitions,
                                        lambda window: rule.is_complete(window, watermark))
        for window in sorted(by_window, key=lambda w: (w.end, w.start)):
            for out in _session_groups(compiled, by_window[window]):
                yield Emission(epoch, out)

    for epoch, _, after, rows in admitted_epochs(compiled, log, late, close):
        for row in rows:
            partitions.setdefault(session.partition(row), []).append(row)
        yield from release(epoch, after)
    if close:
        yield from release(len(log.epochs), CLOSED_WATERMARK)


def _update_session(compiled: CompiledQuery, log: ArrivalLog,
                    late: LateSink | None) -> Iterator[Change]:
    """Session aggregation without EOWC: after each epoch Q(INPUT) again, as the changes from
    the previous result (a row can merge two sessions, so old sessions disappear)."""
    session = compiled.session
    assert session is not None
    return _update_by_recomputing(compiled, log, late, lambda rows: _session_groups(
        compiled, session_rows(session, rows)))


def _update_by_recomputing(compiled: CompiledQuery, log: ArrivalLog, late: LateSink | None,
                           result: Callable[[list[Row]], list[Row]]) -> Iterator[Change]:
    """After each epoch that brought rows, ``result`` of every row of INPUT so far, as the
    changes from the previous result."""
    rows: list[Row] = []
    shown: Counter[Row] = Counter()
    for epoch, _, _, admitted in admitted_epochs(compiled, log, late):
        rows += admitted
        if not admitted and epoch:
            continue
        new = Counter(result(rows))
        yield from _changes(epoch, shown, new)
        shown = new


def _changes(epoch: int, old: Counter[Row], new: Counter[Row]) -> Iterator[Change]:
    """The deletes, then the inserts, that turn ``old`` into ``new`` (each in row order)."""
    for row in sorted((old - new).elements(), key=row_sort_key):
        yield Change(epoch, "-", row)
    for row in sorted((new - old).elements(), key=row_sort_key):
        yield Change(epoch, "+", row)


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


def closed_count_windows(count: CompiledCount, key: Row, windows: list[tuple[int, list[Row]]]
                         ) -> list[tuple[Any, Row]]:
    """The TVF rows of one key's closed count windows, each placed by its window's last row,
    the key, the window and its position in it: the order of an epoch's output."""
    return [((count.order(members[-1]), row_sort_key(key), ordinal, j), row)
            for ordinal, members in windows
            for j, row in enumerate(count.with_window(members, ordinal))]


def _eowc_count(compiled: CompiledQuery, log: ArrivalLog, close: bool,
                late: LateSink | None) -> Iterator[Emission]:
    """EOWC count windows: per partition key its rows in order; after each epoch the windows
    that close (:func:`~eowc.semantics.rules.triggers.count_window_closes`: full, last row's time
    complete) are aggregated, emitted and their rows dropped. At the close every full window
    is emitted; a partial one never is."""
    count, convention = compiled.count, compiled.convention
    assert count is not None
    partitions: dict[Row, CountPartition] = {}

    def release(epoch: int, watermark: Watermark) -> Iterator[Emission]:
        tvf_rows: list[tuple[Any, Row]] = []
        for key, partition in partitions.items():
            tvf_rows += closed_count_windows(count, key,
                                             partition.pop_closed(count, watermark, convention))
        for _, out in sorted(count_results(compiled, tvf_rows), key=lambda item: item[0]):
            yield Emission(epoch, out)

    for epoch, _, after, rows in admitted_epochs(compiled, log, late):
        for row in rows:
            if count.time(row) is not None:
                partitions.setdefault(count.partition(row), CountPartition()).add(count, row)
        yield from release(epoch, after)
    if close:
        yield from release(len(log.epochs), CLOSED_WATERMARK)


def _update_count(compiled: CompiledQuery, log: ArrivalLog,
                  late: LateSink | None) -> Iterator[Change]:
    """Count windows without EOWC: after each epoch Q(INPUT) again, as the changes from the
    previous result (a row older than the newest of its key shifts every later window)."""
    count = compiled.count
    assert count is not None
    return _update_by_recomputing(compiled, log, late, lambda rows: [
        row for _, row in count_results(compiled, list(enumerate(count_rows(count, rows))))])


def _eowc_top_n(compiled: CompiledQuery, log: ArrivalLog, close: bool,
                late: LateSink | None) -> Iterator[Emission]:
    """EOWC TopN: each partition keeps its top ``limit`` rows in rank order; a ranked row is
    emitted once its bound (its window, or for deduplication its event time) is complete.
    The bound never decreases along a partition's ranking, so the emitted rows are a prefix."""
    top, rule, above = compiled.top_n, compiled.rule, compiled.above
    assert top is not None and rule is not None
    partitions: dict[Row, TopNPartition] = {}

    def release(epoch: int, watermark: Watermark) -> Iterator[Emission]:
        done = []
        for key, partition in partitions.items():
            done += [(bound, key, ranked[-1], ranked)
                     for bound, ranked in partition.pop_complete(rule.bound, rule.is_complete,
                                                                 watermark)]
        for *_, ranked in sorted(done, key=lambda item: (item[0], row_sort_key(item[1]), item[2])):
            out = above(ranked)
            if out is not None:
                yield Emission(epoch, out)

    for epoch, _, after, rows in admitted_epochs(compiled, log, late, close):
        for row in rows:
            partitions.setdefault(top.partition(row), TopNPartition()).add(top, row)
        yield from release(epoch, after)
    if close:
        yield from release(len(log.epochs), CLOSED_WATERMARK)


class OverPartition:
    """One partition of an OVER window: its kept rows sorted (with their sort and ORDER BY
    keys), how many of them were emitted (a prefix), and how many rows (and distinct ORDER BY
    keys) were dropped in front: emitted rows no future frame reads
    (:attr:`CompiledOver.reach`), all ordered strictly before every kept row."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.sort_keys: list[Any] = []
        self.keys: list[Any] = []
        self.emitted = 0
        self.dropped = 0
        self.dropped_keys = 0

    @property
    def pending(self) -> bool:
        return self.emitted < len(self.rows)

    def add(self, over: CompiledOver, row: Row) -> int:
        """Insert ``row`` in order; its position."""
        key = over.sort_key(row)
        at = bisect.bisect_right(self.sort_keys, key)
        self.sort_keys.insert(at, key)
        self.keys.insert(at, key[0])
        self.rows.insert(at, row)
        return at

    def pop_final(self, over: CompiledOver, watermark: Watermark, convention: Convention
                  ) -> list[tuple[Any, Any, Row]]:
        """The pending rows now final, each ``(sort key, partition, row with results)``."""
        done = []
        while self.pending and frame_is_complete(over.needed_value(self.rows, self.emitted),
                                                 watermark, convention):
            i = self.emitted
            row = self.rows[i] + over.results(self.rows, self.keys, i,
                                              (self.dropped, self.dropped_keys))
            done.append((self.sort_keys[i], over.partition(self.rows[i]), row))
            self.emitted += 1
        self.emitted -= self.prune_before(over, self.emitted, watermark)
        return done

    def prune_before(self, over: CompiledOver, first_open: int, watermark: Watermark) -> int:
        """Drop rows that no result still to be computed reads: the results of the rows from
        ``first_open`` on (pending, or still changing) and of rows still to come, which are
        not late at ``watermark`` (so their ORDER BY value is at least ``watermark``). Keep
        the ``reach`` rows before ``first_open`` and, of those before, the rows whose ORDER
        BY value is at most ``value_reach`` below the least of those values; never drop a
        peer of a kept row (ranks count peers). Returns how many rows were dropped."""
        reach = over.reach
        if reach is None or not self.rows:
            return 0
        cut = max(0, first_open - reach)
        if over.value_reach is not None:
            least = watermark if first_open >= len(self.rows) else \
                min(watermark, over.order_value(self.rows[first_open]))
            lowest = least - over.value_reach
            cut = bisect.bisect_left([over.order_value(r) for r in self.rows[:cut]], lowest)
        while cut > 0 and cut < len(self.keys) and self.keys[cut - 1] == self.keys[cut]:
            cut -= 1
        if cut == 0:
            return 0
        self.dropped += cut
        self.dropped_keys += len(set(self.keys[:cut]))
        if cut < len(self.keys) and self.keys[cut] == self.keys[cut - 1]:  # pragma: no cover
            raise AssertionError("a peer of a kept row was dropped")
        del self.rows[:cut], self.sort_keys[:cut], self.keys[:cut]
        return cut


def run_update(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
               late: LateSink | None = None) -> Iterator[Change]:
    """``Q(INPUT)`` after every epoch, as a changelog: per epoch, the deletes and inserts
    that turn the previous result into the new one (Definition 2). The query is checked
    here; rows are computed as the iterator is consumed."""
    compiled = compile_query(query, convention, eowc=False)
    if compiled.feed is not None:
        return _update_multi_input(query, log, convention, late)
    if compiled.count is not None:
        return _update_count(compiled, log, late)
    if compiled.session is not None:
        if compiled.aggregate is None:
            raise PlanError("a SESSION window is supported under a GROUP BY (session "
                            "aggregation)")
        return _update_session(compiled, log, late)
    if compiled.over is not None or compiled.top_n is not None or compiled.pattern is not None:
        return _update_partitions(compiled, log, late)
    if compiled.aggregate is None:
        return (Change(epoch, "+", row) for epoch, _, _, rows in admitted_epochs(compiled, log, late)
                for row in sorted(rows, key=row_sort_key))
    return _update_aggregate(compiled, log, late)


def _update_multi_input(query: Query, log: ArrivalLog, convention: Convention,
                        late: LateSink | None) -> Iterator[Change]:
    """Joins and unions under emit on update: ``Q(INPUT)`` re-evaluated after each epoch
    (:func:`eowc.semantics.engines.spec.update_after_each_epoch`: an outer row stands NULL-padded until its
    match arrives, then is deleted), as the changes between consecutive results."""
    from eowc.semantics.engines.spec import update_after_each_epoch

    if late is not None:
        for _ in source_epochs(sources_of(query.plan), log, convention,
                               lambda epoch, event, watermark: late(LateRow(epoch, event,
                                                                            watermark))):
            pass
    previous: Counter[Row] = Counter()
    for epoch, current in enumerate(update_after_each_epoch(query, log, convention)):
        yield from _changes(epoch, previous, current)
        previous = current


def _update_partitions(compiled: CompiledQuery, log: ArrivalLog,
                       late: LateSink | None) -> Iterator[Change]:
    """OVER window, TopN and MATCH_RECOGNIZE: per epoch, for each partition a row arrived in,
    the result rows that changed, old out and new in (for an OVER window, seed 002's affected
    range: an inserted row changes the rows whose frames it enters; for TopN, the rows that
    enter or leave the top, or change rank; for a pattern, a new row can extend a match,
    replace it, or start new ones)."""
    above = compiled.above
    if compiled.over is not None:
        over = compiled.over
        partition_of: Callable[[Row], Row] = over.partition

        def results(key: Row, rows: list[Row]) -> Any:
            return [r for r, _ in partition_results(over, rows)]
    elif compiled.pattern is not None:
        pattern = compiled.pattern
        partition_of = pattern.partition

        def results(key: Row, rows: list[Row]) -> Any:
            return partition_matches(pattern, key, sorted(rows, key=pattern.sort_key))
    else:
        top = compiled.top_n
        assert top is not None
        partition_of = top.partition

        def results(key: Row, rows: list[Row]) -> Any:
            return top.ranked(rows)
    members: dict[Row, list[Row]] = {}
    shown: dict[Row, Counter[Row]] = {}
    for epoch, _, _, rows in admitted_epochs(compiled, log, late):
        touched = list(dict.fromkeys(partition_of(row) for row in rows))
        for row in rows:
            members.setdefault(partition_of(row), []).append(row)
        removed: list[Row] = []
        added: list[Row] = []
        for key in touched:
            shown_rows = [above(r) for r in results(key, members[key])]
            new = Counter(r for r in shown_rows if r is not None)
            old = shown.get(key, Counter())
            removed += (old - new).elements()
            added += (new - old).elements()
            shown[key] = new
        for row in sorted(removed, key=row_sort_key):
            yield Change(epoch, "-", row)
        for row in sorted(added, key=row_sort_key):
            yield Change(epoch, "+", row)


def _update_aggregate(compiled: CompiledQuery, log: ArrivalLog,
                      late: LateSink | None) -> Iterator[Change]:
    """Per epoch: each touched group's old row out, its new row in."""
    assert compiled.aggregate is not None
    groups = _Groups(compiled)
    shown: dict[Row, Row | None] = {}
    global_aggregate = not compiled.aggregate.group_by
    for epoch, _, after, rows in admitted_epochs(compiled, log, late):
        touched: set[Row] = set()
        if global_aggregate and epoch == 0:
            groups.states.setdefault((), [f.initial() for f in compiled.functions])
            touched.add(())
        groups.add(rows, touched)
        for key in sorted(touched, key=row_sort_key):
            new, old = groups.result(key), shown.get(key)
            if new != old:
                if old is not None:
                    yield Change(epoch, "-", old)
                if new is not None:
                    yield Change(epoch, "+", new)
                shown[key] = new
        for key in groups.complete(after):  # a closed group never changes
            del groups.states[key]
            shown.pop(key, None)


def snapshots(changes: list[Change], epochs: int) -> list[list[Row]]:
    """The result after each epoch (sorted), rebuilt from a changelog."""
    from collections import Counter

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


def _eowc_pattern(compiled: CompiledQuery, log: ArrivalLog, close: bool,
                  late: LateSink | None) -> Iterator[Emission]:
    """EOWC MATCH_RECOGNIZE: each partition keeps its rows in ORDER BY order; after every
    epoch it takes the matcher's decisions from where it stopped while they are final
    (:func:`eowc.semantics.rules.triggers.match_is_final`: every row the search read is complete) and
    emits the matches among them, in order of their last row, then partition key. Rows no
    later search reads are dropped (:class:`eowc.semantics.operators.pattern.PatternPartition`)."""
    pattern, convention = compiled.pattern, compiled.convention
    assert pattern is not None

    def finals(key: Row, partition: PatternPartition, watermark: Watermark) -> Any:
        return ((last, row_sort_key(key), row)
                for last, row in partition.pop_final(pattern, key, watermark, convention))
    return _eowc_by_partition(compiled, log, close, late, pattern, PatternPartition, finals)
