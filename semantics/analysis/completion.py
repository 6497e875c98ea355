"""Which columns carry the source watermark through a plan, and how an EOWC query's result
rows are judged complete.

Which columns carry it is derived by :func:`eowc.semantics.analysis.watermark_derivation.derive`; the trigger
conditions read the source's event-time column and the ``window_start``/``window_end``/
``window_time`` of a window TVF over it (kept through GROUP BY when it is a grouping key).
The emit-on-window-close trigger of a query is the trigger of its stateful operator
(:mod:`eowc.semantics.rules.triggers`) applied to those columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import Any

from eowc.semantics.analysis.watermark_derivation import derive
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import ColumnRef, Row, column_index, sql_of
from eowc.semantics.ir.plan import (
    Aggregate,
    CountTVF,
    GapFill,
    MatchRecognize,
    OverWindow,
    Plan,
    Query,
    SessionTVF,
    Source,
    TopN,
    WindowTVF,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.ir.windows import Window, WindowSpec
from eowc.semantics.rules.triggers import (
    Convention,
    Watermark,
    count_window_closes,
    gap_row_is_final,
    group_is_complete,
    match_is_final,
    time_is_complete,
    window_closes,
)


@dataclass(frozen=True)
class WatermarkColumns:
    """Output positions of the columns that carry the source's watermark."""

    event_time: int | None = None
    window_start: int | None = None
    window_end: int | None = None
    window_time: int | None = None
    window: WindowSpec | None = None

    @property
    def has_window_column(self) -> bool:
        """Some window column of a TVF over the watermark column is kept."""
        return self.window is not None and (self.window_end is not None or
                                            self.window_start is not None or
                                            self.window_time is not None)

    @property
    def positions(self) -> dict[str, int]:
        return {name: index for name in ("event_time", "window_start", "window_end", "window_time")
                if (index := getattr(self, name)) is not None}


def watermark_columns(plan: Plan) -> WatermarkColumns:
    """The trigger columns of ``plan``'s output: the first column of each role that carries
    the source watermark (:func:`eowc.semantics.analysis.watermark_derivation.derive`, the one copy of
    the rules)."""
    derived = derive(plan).columns

    def first(role: str) -> int | None:
        return next((i for i, d in enumerate(derived) if d is not None and d.role == role), None)

    window = next((d.window for d in derived if d is not None and d.window is not None), None)
    return WatermarkColumns(first("event_time"), first("window_start"), first("window_end"),
                            first("window_time"), window)


def late_check_is_per_window(plan: Plan, convention: Convention) -> bool:
    """Whether INPUT's late check is made per (row, window): under Spark and Flink, in a window
    *aggregation* over a TVF of the watermark column. A plain SELECT over a window TVF (the
    EOWC sort) checks each row's event time under every convention."""
    nodes = walk(plan)
    return convention.checks_lateness_per_window and \
        any(isinstance(n, Aggregate | TopN) for n in nodes) and \
        any(isinstance(n, WindowTVF) and watermark_columns(n).window is not None for n in nodes)


def ties_to_latest_arrival(node: TopN, convention: Convention) -> bool:
    """Whether, of ``node``'s rows tied on its ORDER BY, the last to arrive ranks first (under
    ``--ties row-id``): in a deduplication keeping the last row (ROW_NUMBER, at most 1,
    ORDER BY the event time DESC) under a convention whose
    :attr:`~eowc.semantics.rules.triggers.BoundaryRules.last_row_ties_to_latest` holds
    (Flink's window deduplication). Otherwise ties rank in arrival order."""
    if not convention.last_row_ties_to_latest or node.function != "row_number" or \
            node.limit != 1 or len(node.order_by) != 1:
        return False
    expr, descending = node.order_by[0]
    return descending and isinstance(expr, ColumnRef) and \
        watermark_columns(node.input).event_time == column_index(node.input.schema, expr.name)


@dataclass(frozen=True)
class CompletionRule:
    """How an EOWC query decides that one of its result rows is complete.

    ``bound(row)`` is what the trigger judges: the row's window, or its event time. Bounds
    are ordered so that smaller bounds complete first (windows of one TVF order by end);
    ``is_complete(bound, W)`` is the operator's trigger condition from
    :mod:`eowc.semantics.rules.triggers`. ``describe`` says it in words.
    """

    bound: Callable[[Row], Any]
    is_complete: Callable[[Any, Watermark], bool]
    describe: str


def window_column(columns: WatermarkColumns) -> int:
    """The column :func:`window_of_row` reads a row's window from: window_end, else
    window_time, else window_start (rows equal there are in one window)."""
    i = next((c for c in (columns.window_end, columns.window_time, columns.window_start)
              if c is not None), None)
    assert i is not None
    return i


def window_of_row(columns: WatermarkColumns) -> Callable[[Row], Window]:
    """The window a result row belongs to, from whichever window column it kept."""
    spec = columns.window
    assert spec is not None
    i = window_column(columns)
    if i == columns.window_end:
        return lambda row: spec.window_ending_at(row[i])
    if i == columns.window_time:
        return lambda row: spec.window_ending_at(row[i] + MICROS_PER_MILLI)
    return lambda row: spec.last_window_starting_at(row[i])


def completion_rule(query: Query, convention: Convention) -> CompletionRule:
    """The trigger of ``query``'s stateful operator, or a PlanError if it has none under EOWC.

    GROUP BY: the window of a window column in the key closes (:func:`window_closes`),
    or the key's event-time value is complete (:func:`group_is_complete`). A plain SELECT
    is an EOWC sort: the row's event time is complete (:func:`time_is_complete`).
    """
    source = query.source
    if source.watermark is None:
        raise PlanError(f"The query cannot be executed in Emit-On-Window-Close mode: source "
                        f"{source.name} declares no watermark (add WATERMARK FOR <column> AS "
                        f"<column> - INTERVAL ... to its CREATE statement)")
    gaps = [n for n in walk(query.plan) if isinstance(n, GapFill)]
    if gaps:
        return _gap_fill_rule(gaps[0], source, convention)
    patterns = [n for n in walk(query.plan) if isinstance(n, MatchRecognize)]
    if patterns:
        return _pattern_rule(patterns[0], source, convention)
    overs = [n for n in walk(query.plan) if isinstance(n, OverWindow)]
    if overs:
        return _over_rule(overs[0], source, convention)
    tops = [n for n in walk(query.plan) if isinstance(n, TopN)]
    if tops:
        return _top_n_rule(tops[0], source, convention)
    aggregates = [n for n in walk(query.plan) if isinstance(n, Aggregate)]
    sessions = [n for n in walk(query.plan) if isinstance(n, SessionTVF)]
    if sessions:
        return _session_rule(sessions[0], aggregates, convention)
    counts = [n for n in walk(query.plan) if isinstance(n, CountTVF)]
    if counts:
        return _count_rule(counts[0], aggregates, source, convention)
    if len(aggregates) > 1:
        raise PlanError("nested aggregations are not supported under EMIT ON WINDOW CLOSE yet")
    wm_column = source.watermark.column
    if aggregates:
        node = aggregates[0]
        columns = watermark_columns(node)
        keys = ", ".join(name for name, _ in node.group_by) or "(none)"
        if columns.has_window_column:
            return CompletionRule(
                window_of_row(columns), partial(window_closes, convention=convention),
                f"a group is emitted when its window closes (window_closes under "
                f"{convention.value})")
        if columns.event_time is not None:
            i = columns.event_time
            return CompletionRule(
                itemgetter(i), partial(group_is_complete, convention=convention),
                f"a group is emitted when its {wm_column} value is complete "
                f"(group_is_complete under {convention.value})")
        raise PlanError(
            f"The query cannot be executed in Emit-On-Window-Close mode: GROUP BY {keys} "
            f"has no column derived from the watermark column {source.name}.{wm_column}. "
            f"Group by window_start or window_end of a TUMBLE, HOP or CUMULATE over "
            f"{wm_column}, or by {wm_column} itself")
    columns = watermark_columns(query.plan)
    if columns.event_time is None:
        raise PlanError(
            f"The query cannot be executed in Emit-On-Window-Close mode: its output has no "
            f"column derived from the watermark column {source.name}.{wm_column}; select "
            f"{wm_column} so that rows can be emitted in watermark order")
    i = columns.event_time
    return CompletionRule(itemgetter(i), partial(time_is_complete, convention=convention),
                          f"a row is emitted when its {wm_column} is complete "
                          f"(time_is_complete under {convention.value})")


def _gap_fill_rule(node: GapFill, source: Source, convention: Convention) -> CompletionRule:
    """GAP_FILL under EOWC needs the watermark on its time column (RisingWave refuses it
    otherwise); a row of its output is final once its anchor's time is complete
    (:func:`gap_row_is_final`, applied by the operator per partition). The bound is the time
    column of the GAP_FILL's input."""
    assert source.watermark is not None
    index = watermark_columns(node.input).event_time
    names = [c.name for c in node.input.schema]
    if index is None or names[index] != node.time_column:
        raise PlanError(f"Not supported: GAP_FILL with EMIT ON WINDOW CLOSE requires a "
                        f"watermark on the time column ({node.time_column} does not carry the "
                        f"watermark of {source.name}.{source.watermark.column})")
    return CompletionRule(itemgetter(index), partial(gap_row_is_final, convention=convention),
                          f"a row is emitted when its {node.time_column}, or a filled row's next "
                          f"row's, is complete (gap_row_is_final under {convention.value})")


def _over_rule(over: OverWindow, source: Source, convention: Convention) -> CompletionRule:
    """An EOWC OVER window must ORDER BY the watermark column, ascending (seed 002: rows are
    released by a SortBuffer on it); its rows are emitted when their frame is complete
    (:func:`frame_is_complete`, applied by the interpreter per partition). The bound is the
    row's own order value, which must be complete first."""
    column = watermark_columns(over.input).event_time
    name = over.input.schema[column].name if column is not None else None
    order = over.order_by
    if name is None or len(order) != 1 or order[0] != (ColumnRef(name), False):
        written = ", ".join(sql_of(e) + (" DESC" if d else "") for e, d in order)
        raise PlanError(
            f"The query cannot be executed in Emit-On-Window-Close mode: an OVER window must "
            f"ORDER BY the watermark column {source.name}.{source.watermark.column} ascending "
            f"(and nothing else), not ORDER BY {written}")
    assert column is not None
    return CompletionRule(itemgetter(column), partial(time_is_complete, convention=convention),
                          f"a row is emitted when its {name} and its frame are complete "
                          f"(frame_is_complete under {convention.value})")


def _top_n_rule(node: TopN, source: Source, convention: Convention) -> CompletionRule:
    """A TopN under EOWC is a window TopN (partitioned by a window column: a window's top rows
    are emitted when it closes) or a deduplication (ordered by the watermark column
    ascending: a row's rank is final once its event time is complete). The bound is read
    from the TopN's output row (its input columns, then the rank)."""
    columns = watermark_columns(node)
    names = [c.name for c in node.schema]
    partition = {e.name for e in node.partition_by if isinstance(e, ColumnRef)}
    windowed = [i for i in (columns.window_start, columns.window_end, columns.window_time)
                if i is not None and names[i] in partition]
    if columns.window is not None and windowed:
        return CompletionRule(window_of_row(columns), partial(window_closes, convention=convention),
                              f"a window's top {node.limit} rows are emitted when it closes "
                              f"(window_closes under {convention.value})")
    event = watermark_columns(node.input).event_time
    if event is not None and node.order_by == ((ColumnRef(names[event]), False),):
        return CompletionRule(itemgetter(event), partial(time_is_complete, convention=convention),
                              f"a row is emitted once its {names[event]} is complete and it is "
                              f"among the first {node.limit} of its partition (time_is_complete "
                              f"under {convention.value})")
    raise PlanError(
        f"The query cannot be executed in Emit-On-Window-Close mode: a TopN must PARTITION BY "
        f"window_start, window_end of a window TVF (window TopN) or ORDER BY the watermark "
        f"column {source.name}.{source.watermark.column} ascending (deduplication)")


def _session_rule(node: SessionTVF, aggregates: list[Aggregate], convention: Convention
                  ) -> CompletionRule:
    """Session aggregation: GROUP BY the session's window_start and window_end; a group is
    emitted when its session closes (``window_closes`` of ``[first, last + gap)``). Without a
    GROUP BY, the rows of a session with its window columns, once it closes (the bound is
    read from the TVF's output row)."""
    if not aggregates:
        width = len(node.input.schema)
        return CompletionRule(lambda row: Window(row[width], row[width + 1]),
                              partial(window_closes, convention=convention),
                              f"a session's rows are emitted when it closes (window_closes of "
                              f"[first, last + gap) under {convention.value})")
    keys = [name for name, expr in aggregates[0].group_by] if aggregates else []
    exprs = [expr for _, expr in aggregates[0].group_by] if aggregates else []
    if ColumnRef("window_start") not in exprs or ColumnRef("window_end") not in exprs:
        raise PlanError("The query cannot be executed in Emit-On-Window-Close mode: a SESSION "
                        "window is emitted by a GROUP BY window_start, window_end (session "
                        f"aggregation); GROUP BY {', '.join(keys) or '(none)'} has not both")
    start, end = exprs.index(ColumnRef("window_start")), exprs.index(ColumnRef("window_end"))
    return CompletionRule(lambda row: Window(row[start], row[end]),
                          partial(window_closes, convention=convention),
                          f"a session is emitted when it closes (window_closes of [first, last "
                          f"+ gap) under {convention.value})")


def _count_rule(node: CountTVF, aggregates: list[Aggregate], source: Source,
                convention: Convention) -> CompletionRule:
    """Count window aggregation: over the source's watermark column, GROUP BY ``window_end``
    (the time of the window's last row; with ``window_ordinal`` and the partition keys to
    tell windows apart); a group is emitted when :func:`count_window_closes` holds for it.
    Its windows are then all full with their last row complete, and no other window can end
    at that time any more."""
    assert source.watermark is not None
    names = [c.name for c in node.input.schema]
    time = derive(node.input).columns[names.index(node.time_column)]
    if time is None or time.role != "event_time" or time.steps or time.parts:
        raise PlanError(f"The query cannot be executed in Emit-On-Window-Close mode: a "
                        f"{node.kind} orders rows by {node.time_column}, which is not the "
                        f"watermark column {source.name}.{source.watermark.column}")
    if not aggregates:
        raise PlanError(f"The query cannot be executed in Emit-On-Window-Close mode: a "
                        f"{node.kind} window is emitted by a GROUP BY window_end, "
                        f"window_ordinal[, partition keys] (count window aggregation)")
    exprs = [expr for _, expr in aggregates[0].group_by]
    if ColumnRef("window_end") not in exprs:
        keys = ", ".join(name for name, _ in aggregates[0].group_by) or "(none)"
        raise PlanError(f"The query cannot be executed in Emit-On-Window-Close mode: a "
                        f"{node.kind} window is emitted by a GROUP BY that has window_end (the "
                        f"time of its last row, which the trigger reads); GROUP BY {keys} has "
                        f"not")
    end = exprs.index(ColumnRef("window_end"))
    return CompletionRule(itemgetter(end), partial(count_window_closes, convention=convention),
                          f"a count window is emitted when it has its {node.size} rows and the "
                          f"time of its last row (window_end) is complete (count_window_closes "
                          f"under {convention.value})")


def _no_row_bound(row: Row) -> Any:
    raise PlanError("a match's bound is the last row its search read (eowc.semantics.operators.pattern), not "
                    "a column of its output row")


def _pattern_rule(node: MatchRecognize, source: Source, convention: Convention
                  ) -> CompletionRule:
    """MATCH_RECOGNIZE under EOWC must ORDER BY the watermark column ascending (and nothing
    else): a match is emitted once the matcher's decision is final (:func:`match_is_final`:
    the ORDER BY value of the last row its search read is complete), applied per partition by
    the interpreter. The bound is not a column of the output row."""
    column = watermark_columns(node.input).event_time
    name = node.input.schema[column].name if column is not None else None
    if name is None or node.order_by != ((name, False),):
        written = ", ".join(c + (" DESC" if d else "") for c, d in node.order_by)
        raise PlanError(
            f"The query cannot be executed in Emit-On-Window-Close mode: MATCH_RECOGNIZE must "
            f"ORDER BY the watermark column {source.name}.{source.watermark.column} ascending "
            f"(and nothing else), not ORDER BY {written}")
    return CompletionRule(_no_row_bound, partial(match_is_final, convention=convention),
                          f"a match is emitted once every row its search read is complete: "
                          f"the {name} of its last row, or of the row after it when a greedy "
                          f"quantifier asked for one more (match_is_final under "
                          f"{convention.value})")
