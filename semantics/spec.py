"""The declarative specification: Definitions 1-5 of seed 001, written as plainly as possible.

* ``watermarks(source, log)``: the source watermark after each epoch.
* ``input_through(query, log, e)``: INPUT after epoch ``e``, each row with the watermark in
  force when it arrived (Definition 1; the late check itself is part of the operators below).
* ``evaluate(plan, input)``: the batch query ``Q(INPUT)`` (Definition 2).
* ``evaluate_eowc(query, input, W)``: ``Q'(INPUT, W)``, the query with its stateful operator
  altered to keep only results whose trigger holds at ``W`` (Definitions 4-5).
* ``eowc_after_each_epoch`` / ``update_after_each_epoch``: those results after every epoch.

This re-evaluates everything after every epoch and is slow by design; the interpreter
(:mod:`semantics.interpreter`) computes the same in one pass and is tested against it.
"""

from __future__ import annotations

from collections import Counter

from .aggregates import aggregate_value, compile_aggregate
from .arrival import ArrivalLog
from .expr import Row, compile_expr
from .over import compile_over, over_results
from .plan import (
    Aggregate,
    Filter,
    OverWindow,
    Plan,
    Project,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    WindowTVF,
    tie_break,
    walk,
)
from .session import compile_session, session_rows
from .top_n import compile_top_n, top_n_results
from .triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    frame_is_complete,
    row_is_late,
    source_watermark,
    window_accepts,
)
from .values import MICROS_PER_MILLI
from .watermarks import CompletionRule, completion_rule, late_check_is_per_window, watermark_columns

Arrived = tuple[Row, Watermark]  # a row and the watermark in force before its epoch


def watermarks(source: Source, log: ArrivalLog, convention: Convention) -> list[Watermark]:
    """``W`` after each epoch: ``max(previous W, max(c) - d)`` over all rows seen so far."""
    if source.watermark is None:
        return [NO_WATERMARK] * len(log.epochs)
    index, delay = source.event_time_index, source.watermark.delay
    result: list[Watermark] = []
    seen: list[int] = []
    for epoch in log.epochs:
        seen += [e.row[index] for e in epoch if e.table == source.name]
        candidate = source_watermark(max(seen), delay, convention) if seen else NO_WATERMARK
        result.append(max([candidate] + result[-1:]))
    return result


def input_through(query: Query, log: ArrivalLog, epoch: int,
                  convention: Convention) -> list[Arrived]:
    """The source's rows that arrived in epochs ``0..epoch``, each with the watermark in force
    before its epoch."""
    source = query.source
    marks = watermarks(source, log, convention)
    return [(event.row, marks[e - 1] if e else NO_WATERMARK)
            for e in range(epoch + 1) for event in log.epochs[e] if event.table == source.name]


def evaluate(plan: Plan, rows: list[Arrived], convention: Convention,
             rule: CompletionRule | None = None, watermark: Watermark = NO_WATERMARK,
             per_window: bool | None = None) -> list[Arrived]:
    """Batch evaluation of ``plan`` over INPUT. With ``rule``, the stateful operator keeps only
    the results complete at ``watermark`` (the altered operator of Definition 4)."""
    if per_window is None:
        per_window = late_check_is_per_window(plan, convention)
    if isinstance(plan, Scan):
        index = plan.source.event_time_index
        if index is None or per_window:
            return rows
        return [(r, w) for r, w in rows if not row_is_late(r[index], w, convention)]
    below = evaluate(plan.input, rows, convention, rule, watermark, per_window)  # type: ignore[attr-defined]
    if isinstance(plan, Filter):
        predicate = compile_expr(plan.predicate, plan.input.schema).evaluate
        return [(r, w) for r, w in below if predicate(r) is True]
    if isinstance(plan, Project):
        fs = [compile_expr(e, plan.input.schema).evaluate for _, e in plan.items]
        return [(tuple(f(r) for f in fs), w) for r, w in below]
    if isinstance(plan, SessionTVF):  # rows are judged late before: keep no arrival mark
        session = compile_session(plan)
        return [(row, NO_WATERMARK) for row in session_rows(session, [r for r, _ in below])]
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
    if isinstance(plan, TopN):  # with a rule: only the ranked rows whose bound is complete
        source = next(n.source for n in walk(plan) if isinstance(n, Scan))
        top = compile_top_n(plan, tie_break(plan.input.schema, source))
        return [(row, NO_WATERMARK) for row in top_n_results(top, [r for r, _ in below])
                if rule is None or rule.is_complete(rule.bound(row), watermark)]
    raise NotImplementedError(type(plan).__name__)


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
    if not any(isinstance(n, Aggregate | OverWindow | TopN) for n in walk(query.plan)):  # sort
        result = [(r, w) for r, w in result if rule.is_complete(rule.bound(r), watermark)]
    return [r for r, _ in result]


def eowc_after_each_epoch(query: Query, log: ArrivalLog, convention: Convention,
                          close: bool = False) -> list[Counter[Row]]:
    """The cumulative EOWC output after each epoch (and after the close, with ``close``)."""
    marks = watermarks(query.source, log, convention)
    outputs = [Counter(evaluate_eowc(query, input_through(query, log, e, convention), marks[e],
                                     convention)) for e in range(len(log.epochs))]
    if close:
        everything = input_through(query, log, len(log.epochs) - 1, convention) \
            if log.epochs else []
        outputs.append(Counter(evaluate_eowc(query, everything, CLOSED_WATERMARK, convention)))
    return outputs


def update_after_each_epoch(query: Query, log: ArrivalLog,
                            convention: Convention) -> list[Counter[Row]]:
    """``Q(INPUT)`` after each epoch (Definition 2)."""
    return [Counter(r for r, _ in evaluate(query.plan, input_through(query, log, e, convention),
                                            convention))
            for e in range(len(log.epochs))]
