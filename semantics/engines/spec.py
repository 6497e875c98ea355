"""The declarative specification: Definitions 1-5 of seed 001, written as plainly as possible.

* ``watermarks(source, log)``: the source watermark after each epoch.
* ``input_through(query, log, e)``: INPUT after epoch ``e``, each row with the watermark in
  force when it arrived (Definition 1; the late check itself is part of the operators below).
* ``evaluate(plan, input)``: the batch query ``Q(INPUT)`` (Definition 2).
* ``evaluate_eowc(query, input, W)``: ``Q'(INPUT, W)``, the query with its stateful operator
  altered to keep only results whose trigger holds at ``W`` (Definitions 4-5).
* ``eowc_after_each_epoch`` / ``update_after_each_epoch``: those results after every epoch.

This re-evaluates everything after every epoch and is slow by design; the interpreter
(:mod:`eowc.semantics.engines.interpreter`) computes the same in one pass and is tested against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from eowc.semantics.analysis.completion import (
    CompletionRule,
    completion_rule,
    late_check_is_per_window,
    watermark_columns,
)
from eowc.semantics.analysis.operator_inputs import (
    WindowJoinInput,
    emits_under,
    is_composed,
    is_emitting,
    operator_input,
    per_window_tvf,
    refuse_join_judging_late_rows,
    window_join_input,
)
from eowc.semantics.analysis.watermark_derivation import (
    Derivation,
    as_join_reads,
    derive,
    join_time_bounds,
    watermark_in_reading,
)
from eowc.semantics.engines.inputs import arrived_input, never_late, source_watermarks
from eowc.semantics.engines.multi_input import has_several_inputs, is_subquery, sources_of, split_multi_input
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row, array_element, compile_expr
from eowc.semantics.ir.plan import (
    Aggregate,
    AsofJoin,
    CountTVF,
    Filter,
    Join,
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
    Union,
    Unnest,
    WindowTVF,
    tie_break,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, computing_under
from eowc.semantics.operators.aggregates import aggregate_value, compile_aggregate
from eowc.semantics.operators.count_window import compile_count, count_rows
from eowc.semantics.operators.over import compile_over, over_results
from eowc.semantics.operators.pattern import compile_pattern, eowc_matches, pattern_results
from eowc.semantics.operators.session import compile_session, session_rows
from eowc.semantics.operators.top_n import compile_top_n, top_n_results
from eowc.semantics.rules.emit_modes import refuse_at_once
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    frame_is_complete,
    query_watermarks,
    row_is_late,
    unmatched_row_is_final,
    window_accepts,
)

Arrived = tuple[Row, Watermark]  # a row and the watermark in force before its epoch


def watermarks(source: Source, log: ArrivalLog, convention: Convention) -> list[Watermark]:
    """``W`` after each epoch: ``max(previous W, max(c) - d)`` over all rows seen so far (the
    one INPUT loop, :func:`eowc.semantics.engines.inputs.source_watermarks`)."""
    return source_watermarks(source, log, convention)


def input_through(query: Query, log: ArrivalLog, epoch: int,
                  convention: Convention) -> list[Arrived]:
    """The source's rows that arrived in epochs ``0..epoch``, each with the watermark in force
    before its epoch."""
    return arrived_through(query.source, log, epoch, convention)


def arrived_through(source: Source, log: ArrivalLog, epoch: int,
                    convention: Convention, judged: WindowJoinInput | None = None,
                    along: Sequence[Source] = ()) -> list[Arrived]:
    """``source``'s rows that arrived in epochs ``0..epoch``, late ones too (each operator of
    the specification judges lateness itself), each with the watermark in force before its
    epoch (for a source a window join ``judged``, the join's own: the least of its sources';
    under Spark's global watermark, the least of ``along``'s, the query's sources):
    the one input loop (:func:`eowc.semantics.engines.inputs.arrived_input`) over the
    log's first epochs, since a watermark depends only on the epochs before it."""
    return arrived_input(source, ArrivalLog(log.epochs[:epoch + 1]), convention,
                         is_late=never_late, judged=judged, along=along).rows


def _unnested_rows(plan: ProjectSet, row: Row) -> list[Row]:
    """The rows ``unnest`` makes of ``row``: for ``i`` from 1 to the greatest cardinality of
    its unnested arrays (0 for NULL), the row of each item's value, an unnest item's being
    ``array[i]`` (NULL past its end)."""
    items = [(isinstance(e, Unnest), compile_expr(e.array if isinstance(e, Unnest) else e,
                                                  plan.input.schema).evaluate(row))
             for _, e in plan.items]
    n = max(len(v or ()) for unnested, v in items if unnested)
    return [tuple((array_element(v, i) if v is not None else None) if unnested else v
                  for unnested, v in items) for i in range(1, n + 1)]


def evaluate(plan: Plan, rows: list[Arrived] | Mapping[str, list[Arrived]],
             convention: Convention, rule: CompletionRule | None = None,
             watermark: Watermark = NO_WATERMARK, per_window: bool | None = None,
             source_marks: Mapping[str, Watermark] | None = None) -> list[Arrived]:
    """Batch evaluation of ``plan`` over INPUT (``rows``: one source's, or every source's by
    name). With ``rule``, the stateful operator keeps only the results complete at
    ``watermark`` (the altered operator of Definition 4); with ``source_marks`` (the source
    watermarks), a join keeps only the unmatched outer rows that no future row can match.
    Expressions compute under the convention's value rules."""
    with computing_under(convention.values):
        return _evaluate(plan, rows, convention, rule, watermark, per_window, source_marks)


def _evaluate(plan: Plan, rows: list[Arrived] | Mapping[str, list[Arrived]],
              convention: Convention, rule: CompletionRule | None, watermark: Watermark,
              per_window: bool | None, source_marks: Mapping[str, Watermark] | None
              ) -> list[Arrived]:
    if per_window is None:
        per_window = late_check_is_per_window(plan, convention)
    if isinstance(plan, Scan):
        if isinstance(rows, Mapping):
            rows = rows.get(plan.source.name, [])
        index = plan.source.event_time_index
        if index is None or per_window:
            return rows
        return [(r, w) for r, w in rows
                if r[index] is None or not row_is_late(r[index], w, convention)]
    if isinstance(plan, Union):
        return [arrived for p in plan.inputs
                for arrived in _input_of(p, rows, convention, source_marks)]
    if isinstance(plan, AsofJoin):
        left, right = (_input_of(p, rows, convention, source_marks)
                       for p in (plan.left, plan.right))
        return [(row, NO_WATERMARK) for row in _asof_join(plan, [r for r, _ in left],
                                                          [r for r, _ in right])]
    if isinstance(plan, Join):
        left, right = (_input_of(p, rows, convention, source_marks, _judges(plan, p, convention))
                       for p in (plan.left, plan.right))
        return [(row, NO_WATERMARK) for row in _join(plan, [r for r, _ in left],
                                                     [r for r, _ in right], convention,
                                                     source_marks)]
    below = evaluate(plan.input, rows, convention, rule, watermark, per_window,  # type: ignore[attr-defined]
                     source_marks)
    if isinstance(plan, Filter):
        predicate = compile_expr(plan.predicate, plan.input.schema).evaluate
        return [(r, w) for r, w in below if predicate(r) is True]
    if isinstance(plan, Project):
        fs = [compile_expr(e, plan.input.schema).evaluate for _, e in plan.items]
        return [(tuple(f(r) for f in fs), w) for r, w in below]
    if isinstance(plan, ProjectSet):
        return [(row, w) for r, w in below for row in _unnested_rows(plan, r)]
    if isinstance(plan, SessionTVF):  # rows are judged late before; a touching row by its mark
        session = compile_session(plan, convention)
        return [(row, NO_WATERMARK) for row in session_rows(session, [r for r, _ in below],
                                                               [m for _, m in below])]
    if isinstance(plan, CountTVF):  # rows are judged late before; only full windows exist
        source = next(n.source for n in walk(plan) if isinstance(n, Scan))
        count = compile_count(plan, tie_break(plan.input.schema, source))
        return [(row, NO_WATERMARK) for row in count_rows(count, [r for r, _ in below])]
    if isinstance(plan, WindowTVF):
        index = [c.name for c in plan.input.schema].index(plan.time_column)
        return [(r + (win.start, win.end, win.end - MICROS_PER_MILLI), w)
                for r, w in below if r[index] is not None
                for win in plan.spec.windows_of(r[index])
                if not per_window or window_accepts(win, w, convention)]
    if isinstance(plan, Aggregate):
        return [(row, NO_WATERMARK) for row in _aggregate(plan, [r for r, _ in below], rule,
                                                          watermark)]
    if isinstance(plan, OverWindow):  # with a rule: only the rows whose frame is complete
        source = next(n.source for n in walk(plan) if isinstance(n, Scan))
        over = compile_over(plan, tie_break(plan.input.schema, source))
        return [(row, NO_WATERMARK) for row, needed in over_results(over, [r for r, _ in below])
                if rule is None or frame_is_complete(needed, watermark, convention)]
    if isinstance(plan, MatchRecognize):  # with a rule: the matcher over the complete prefix
        source = next(n.source for n in walk(plan) if isinstance(n, Scan))
        pattern = compile_pattern(plan, tie_break(plan.input.schema, source))
        rows_in = [r for r, _ in below]
        found = pattern_results(pattern, rows_in) if rule is None else \
            eowc_matches(pattern, rows_in, watermark, convention)
        return [(row, NO_WATERMARK) for row in found]
    if isinstance(plan, TopN):  # with a rule: only the ranked rows whose bound is complete
        source = next(n.source for n in walk(plan) if isinstance(n, Scan))
        top = compile_top_n(plan, tie_break(plan.input.schema, source))
        return [(row, NO_WATERMARK) for row in top_n_results(top, [r for r, _ in below])
                if rule is None or rule.is_complete(rule.bound(row), watermark)]
    raise NotImplementedError(type(plan).__name__)


def _judges(join: Join, side: Plan, convention: Convention) -> bool:
    """Whether the rows of ``join``'s input ``side`` are judged late per window: by the
    join's own watermark (:func:`window_join_input`: they arrive with it), or by the window
    aggregation that reads them (:func:`per_window_tvf`)."""
    sources = sources_of(side)
    return len(sources) == 1 and (window_join_input(join, sources[0], convention) is not None
                                  or per_window_tvf(join, sources[0], convention) is not None)


def _input_of(plan: Plan, rows: list[Arrived] | Mapping[str, list[Arrived]],
              convention: Convention, source_marks: Mapping[str, Watermark] | None,
              per_window: bool = False) -> list[Arrived]:
    """An input of a join or a union, each source's rows judged late per row (``per_window``:
    per window, :func:`_judges`). A subquery of one source with a stateful operator (a window
    aggregate, ...) gives, in ``Q'`` (``source_marks``), its own ``Q'`` at its source's
    watermark."""
    if source_marks is None or not is_subquery(plan):
        return evaluate(plan, rows, convention, per_window=per_window,
                        source_marks=source_marks)
    (source,) = sources_of(plan)
    assert isinstance(rows, Mapping) and source.watermark is not None
    index = source.event_time_index
    admitted = [(r, w) for r, w in rows.get(source.name, [])
                if per_window or not row_is_late(r[index], w, convention)]
    mark = source_marks[f"{source.name}.{source.watermark.column}"]
    return [(row, NO_WATERMARK) for row in evaluate_eowc(Query(plan, True, None, (source,)),
                                                         admitted, mark, convention)]


def _join(plan: Join, left: list[Row], right: list[Row], convention: Convention,
          source_marks: Mapping[str, Watermark] | None) -> list[Row]:
    """Every pair whose condition is TRUE; then each unmatched row of an outer side padded with
    NULLs: all of them in ``Q``, and in ``Q'`` (``source_marks``) those no row still to come on
    the other side can match: a match needs every conjunct, so a row is final as soon as
    one time bound of the condition in its direction says so (:func:`unmatched_row_is_final`
    at the other side's column), and with no bound only at the end of the input."""
    condition = compile_expr(plan.condition, plan.joined_schema).evaluate
    pairs = [(i, j) for i, one in enumerate(left) for j, other in enumerate(right)
             if condition(one + other) is True]
    result = [left[i] + right[j] for i, j in pairs]
    if plan.kind == "semi":  # each left row with a match, once
        return [row for i, row in enumerate(left) if i in {i for i, _ in pairs}]
    left_names, right_names = plan.sides
    left_derived, right_derived = derive(plan.left).columns, derive(plan.right).columns
    bounds = join_time_bounds(plan)
    closed = source_marks is not None and all(w == CLOSED_WATERMARK for w in source_marks.values())
    # (this side's column, its shift, the other side's deciding column's derivation)
    left_bounds = [(b.left, -b.lower, as_join_reads(right_derived[right_names.index(b.right)], b,
                                                    left_derived[left_names.index(b.left)],
                                                    convention))
                   for b in bounds if b.lower is not None]
    right_bounds = [(b.right, b.upper, as_join_reads(left_derived[left_names.index(b.left)], b,
                                                     right_derived[right_names.index(b.right)],
                                                     convention))
                    for b in bounds if b.upper is not None]

    def final(row: Row, names: tuple[str, ...],
              by: list[tuple[str, int, Derivation | None]]) -> bool:
        if source_marks is None or closed:
            return True
        for column, shift, other in by:
            value = row[names.index(column)]
            if value is None:
                return True  # a NULL time meets no row
            if other is not None and unmatched_row_is_final(
                    value + shift, watermark_in_reading(other, source_marks, convention),
                    convention):
                return True
        return False

    if plan.kind in ("left", "full", "anti"):
        matched = {i for i, _ in pairs}
        padding = () if plan.kind == "anti" else (None,) * len(right_names)
        unmatched = [row + padding for i, row in enumerate(left)
                     if i not in matched and final(row, left_names, left_bounds)]
        if plan.kind == "anti":  # each left row without a match (once none can come)
            return unmatched
        result += unmatched
    if plan.kind in ("right", "full"):
        matched = {j for _, j in pairs}
        result += [(None,) * len(left_names) + row for j, row in enumerate(right)
                   if j not in matched and final(row, right_names, right_bounds)]
    return result


def _asof_join(plan: AsofJoin, left: list[Row], right: list[Row]) -> list[Row]:
    """RisingWave's ASOF join, from its definition: each left row with the right row that
    satisfies the whole ON condition and whose ordered value is nearest its own (the least
    above it for ``<``/``<=``, the greatest below it for ``>``/``>=``), ties to the first
    right row in the right side's tie order; a left row without one NULL-padded (LEFT)."""
    condition = compile_expr(plan.condition, plan.joined_schema).evaluate
    left_width = len(plan.left.schema)
    order = compile_expr(plan.right_order, plan.joined_schema).evaluate
    source = next(n.source for n in walk(plan.right) if isinstance(n, Scan))
    tie = tie_break(plan.right.schema, source)
    result = []
    for one in left:
        matches = [other for other in right if condition(one + other) is True]
        values = [order((None,) * left_width + other) for other in matches]
        if matches:
            nearest = min(values) if plan.op in ("<", "<=") else max(values)
            result.append(one + min((m for m, v in zip(matches, values, strict=True)
                                     if v == nearest), key=tie))
        elif plan.kind == "left":
            result.append(one + (None,) * len(plan.right.schema))
    return result


def _aggregate(plan: Aggregate, rows: list[Row], rule: CompletionRule | None,
               watermark: Watermark) -> list[Row]:
    schema = plan.input.schema
    keys = [compile_expr(e, schema).evaluate for _, e in plan.group_by]
    event_time = watermark_columns(plan.input).event_time
    time_name = schema[event_time].name if event_time is not None else None
    groups: dict[Row, list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(k(row) for k in keys), []).append(row)
    if not keys and not groups:
        groups[()] = []  # a global aggregate over no rows still has its one row
    source = next(n.source for n in walk(plan) if isinstance(n, Scan))
    functions = [compile_aggregate(c, schema, time_name, tie_break(schema, source)) for c in plan.calls]
    result = [key + tuple(aggregate_value(f, members) for f in functions)
              for key, members in groups.items()]
    if rule is not None:
        result = [r for r in result if rule.is_complete(rule.bound(r), watermark)]
    return result


def evaluate_eowc(query: Query, rows: list[Arrived], watermark: Watermark,
                  convention: Convention) -> list[Row]:
    """``Q'(INPUT, W)``: the results of ``query`` whose trigger holds at ``watermark``."""
    rule = completion_rule(query, convention)
    result = evaluate(query.plan, rows, convention, rule, watermark)
    if not any(isinstance(n, Aggregate | OverWindow | TopN | MatchRecognize)
               for n in walk(query.plan)):  # sort
        result = [(r, w) for r, w in result  # NULL: a join's outer row, final when made
                  if rule.bound(r) is None or rule.is_complete(rule.bound(r), watermark)]
    return [r for r, _ in result]


def eowc_after_each_epoch(query: Query, log: ArrivalLog, convention: Convention,
                          close: bool = False) -> list[Counter[Row]]:
    """The cumulative EOWC output after each epoch (and after the close, with ``close``)."""
    refuse_at_once(query.at_once, "the specification")
    refuse_join_judging_late_rows(query.plan, convention, "the specification")
    if is_composed(query.plan):
        return _composed_eowc(query, log, convention, close)
    if has_several_inputs(query.plan):
        return _multi_input_eowc(query, log, convention, close)
    marks = watermarks(query.source, log, convention)
    outputs = [Counter(evaluate_eowc(query, input_through(query, log, e, convention), marks[e],
                                     convention)) for e in range(len(log.epochs))]
    if close:
        everything = input_through(query, log, len(log.epochs) - 1, convention) \
            if log.epochs else []
        outputs.append(Counter(evaluate_eowc(query, everything, CLOSED_WATERMARK, convention)))
    return outputs


def sources_through(query: Query, log: ArrivalLog, epoch: int,
                    convention: Convention) -> dict[str, list[Arrived]]:
    """Every source's rows that arrived in epochs ``0..epoch``, each with its source's
    watermark in force before its epoch (Definition 1 per source)."""
    result: dict[str, list[Arrived]] = {}
    sources = query.sources or [n.source for n in walk(query.plan) if isinstance(n, Scan)]
    for source in sources:
        result[source.name] = arrived_through(source, log, epoch, convention,
                                              window_join_input(query.plan, source, convention),
                                              sources)
    return result


def source_marks_after(query: Query, log: ArrivalLog, epoch: int,
                       convention: Convention) -> dict[str, Watermark]:
    """Every source watermark after ``epoch``, by source column (``table.column``), as the
    query's operators read them (:func:`query_watermarks`: Spark's one global watermark)."""
    return query_watermarks(
        {f"{n.source.name}.{n.source.watermark.column}":
         watermarks(n.source, log, convention)[epoch] if log.epochs else NO_WATERMARK
         for n in walk(query.plan) if isinstance(n, Scan) and n.source.watermark is not None},
        convention)


def _multi_input_eowc(query: Query, log: ArrivalLog, convention: Convention,
                      close: bool) -> list[Counter[Row]]:
    """``Q'`` of a query with joins or unions: the part below them (``Q'`` of the joins at the
    source watermarks) is a derived source whose rows arrive when they first appear there,
    judged by its derived watermark; the part above reads it as any source."""
    split = split_multi_input(query, convention)
    assert split is not None
    derived_marks: list[Watermark] = []
    arrived: list[Arrived] = []
    seen: Counter[Row] = Counter()
    outputs = []
    steps = list(range(len(log.epochs))) + ([len(log.epochs)] if close else [])
    for e in steps:
        last = min(e, len(log.epochs) - 1)
        marks = source_marks_after(query, log, last, convention)
        if e == len(log.epochs):
            marks = {k: CLOSED_WATERMARK for k in marks}
        rows = sources_through(query, log, last, convention) if log.epochs else {}
        lower = Counter(r for r, _ in evaluate(split.lower, rows, convention, per_window=False,
                                               source_marks=marks))
        mark = NO_WATERMARK if split.watermark is None else \
            watermark_in_reading(split.watermark, marks, convention)
        derived_marks.append(max([mark] + derived_marks[-1:]))
        before = derived_marks[-2] if len(derived_marks) > 1 else NO_WATERMARK
        arrived += [(row, before) for row in (lower - seen).elements()]
        seen = lower
        outputs.append(Counter(evaluate_eowc(split.upper, arrived, derived_marks[-1],
                                             convention)))
    return outputs


def _composed_eowc(query: Query, log: ArrivalLog, convention: Convention,
                   close: bool) -> list[Counter[Row]]:
    """``Q'`` of a plan of several stateful operators, one operator at a time (Definition 4):
    each reads its input (:func:`eowc.semantics.analysis.operator_inputs.operator_input`) as
    a source whose rows arrive in the epoch they first appear in the input's own ``Q'``, and
    keeps the results complete at the watermark the derivation gives that input. A join
    joins its inputs' ``Q'`` (its outer rows once no match can come), a union unites them."""
    steps = list(range(len(log.epochs))) + ([len(log.epochs)] if close else [])
    sources = [n.source for n in walk(query.plan) if isinstance(n, Scan)]
    keys = {f"{s.name}.{s.watermark.column}": s for s in sources if s.watermark is not None}
    marks_by_step = [query_watermarks({k: (CLOSED_WATERMARK if e == len(log.epochs) else
                                           watermarks(s, log, convention)[e])
                                       for k, s in keys.items()}, convention)
                     for e in steps]
    rows_by_step = [sources_through(query, log, min(e, len(log.epochs) - 1), convention)
                    if log.epochs else {} for e in steps]
    memo: dict[tuple[int, int], Counter[Row]] = {}
    # a source read twice or more, or under a join, without a per-window check: per row
    judged_per_row = {s.name for s in sources if len(sources) > 1
                      and per_window_tvf(query.plan, s, convention) is None}

    def released(plan: Plan, step: int) -> Counter[Row]:
        key = (id(plan), step)
        if key not in memo:
            memo[key] = _released(plan, step)
        return memo[key]

    def _released(plan: Plan, step: int) -> Counter[Row]:
        if is_emitting(plan) or (plan is query.plan and not emits_under(plan)):
            made = operator_input(plan, query, convention)
            if not made.is_derived:
                arrived = rows_by_step[step].get(made.source.name, [])
                mark = marks_by_step[step].get(f"{made.source.name}.{made.source.watermark.column}")
                if made.source.name in judged_per_row:
                    index = made.source.event_time_index
                    arrived = [(r, w) for r, w in arrived
                               if not row_is_late(r[index], w, convention)]
            else:
                arrived = []
                for earlier in range(step + 1):
                    new = released(made.below, earlier) - \
                        (released(made.below, earlier - 1) if earlier else Counter())
                    arrived += [(row, NO_WATERMARK) for row in new.elements()]
                mark = max(NO_WATERMARK, *(
                    NO_WATERMARK if made.watermark is None else
                    watermark_in_reading(made.watermark, marks_by_step[e], convention)
                    for e in range(step + 1)))
                if steps[step] == len(log.epochs):
                    mark = CLOSED_WATERMARK
            assert mark is not None
            return Counter(evaluate_eowc(made.query, arrived, mark, convention))
        if isinstance(plan, Scan):
            return Counter(r for r, _ in evaluate(plan, rows_by_step[step], convention,
                                                  per_window=False))
        if isinstance(plan, Union):
            total: Counter[Row] = Counter()
            for p in plan.inputs:
                total += released(p, step)
            return total
        if isinstance(plan, Join):
            left, right = (list(released(p, step).elements()) for p in (plan.left, plan.right))
            return Counter(_join(plan, left, right, convention, marks_by_step[step]))
        below = plan.children[0]
        free = Source("rows", below.schema)  # rows already judged: no late check
        field = next(f for f in ("input",) if getattr(plan, f) is below)
        rebuilt = replace(plan, **{field: Scan(free)})
        rows = {"rows": [(r, NO_WATERMARK) for r in released(below, step).elements()]}
        return Counter(r for r, _ in evaluate(rebuilt, rows, convention, per_window=False))

    return [released(query.plan, step) for step in range(len(steps))]


def update_after_each_epoch(query: Query, log: ArrivalLog,
                            convention: Convention) -> list[Counter[Row]]:
    """``Q(INPUT)`` after each epoch (Definition 2)."""
    if has_several_inputs(query.plan):  # every source's rows judged late by its own watermark
        return [Counter(r for r, _ in evaluate(query.plan, sources_through(query, log, e,
                                                                           convention),
                                               convention, per_window=False))
                for e in range(len(log.epochs))]
    return [Counter(r for r, _ in evaluate(query.plan, input_through(query, log, e, convention),
                                            convention))
            for e in range(len(log.epochs))]
