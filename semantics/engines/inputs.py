"""INPUT (Definition 1 of seed 001), epoch by epoch: the one loop over an arrival log.

Per source, after each epoch the watermark is ``max(previous, max(c) - d)``
(:func:`eowc.semantics.rules.triggers.source_watermark`: Spark truncates ``max(c)`` to the
millisecond first); under Spark's one global watermark every source reads the least of them
(:func:`eowc.semantics.rules.triggers.query_watermarks`). A row is in INPUT unless it is late
under the watermark in force before its epoch: judged on the row
(:func:`eowc.semantics.rules.triggers.row_is_late`), or, for a window aggregation under Spark
and Flink, on each of its windows
(:func:`eowc.semantics.rules.triggers.windowed_row_is_late`, a :data:`LateCheck` the caller
binds). A late row goes to the late sink, never to the query.

The reference interpreter (:mod:`eowc.semantics.engines.dataflow`), the specification
(:mod:`eowc.semantics.engines.spec`) and the DuckDB oracle
(:mod:`eowc.semantics.oracles.duckdb_oracle`, :func:`arrived_input`) all read their sources
through this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

from eowc.semantics.analysis.operator_inputs import WindowJoinInput
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Source, WindowTVF
from eowc.semantics.operators.protocol import Marks, Stage, watermark_key
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

#: Whether a row with event time ``t`` is late under the watermark before its epoch.
LateCheck = Callable[[int, Watermark], bool]


class LateRow(NamedTuple):
    """A row left out of INPUT (Definition 1): late under ``watermark_before``."""

    epoch: int
    event: Event
    watermark_before: Watermark


LateSink = Callable[[LateRow], None]


class InputEpoch(NamedTuple):
    """One epoch of INPUT: each source's admitted rows (through its stage, if it has one) and
    the source watermarks before and after the epoch. A plain tuple: one per epoch on the hot
    path. ``after`` is the same object as ``before`` when no watermark moved."""

    epoch: int
    rows: dict[str, list[Row]]
    before: Marks
    after: Marks


def closed_marks(marks: Mapping[str, Watermark]) -> Marks:
    """Every source watermark at +infinity (the end of a bounded input)."""
    return {k: CLOSED_WATERMARK for k in marks}


def input_epochs(sources: Sequence[Source], log: ArrivalLog, convention: Convention,
                 late: LateSink | None = None, checks: Mapping[str, LateCheck] | None = None,
                 stages: Mapping[str, Stage] | None = None,
                 judged_by: Mapping[str, Sequence[Source]] | None = None
                 ) -> Iterator[InputEpoch]:
    """Per epoch, every source's rows of INPUT and the source watermarks (``SEMANTICS.md``
    §1). ``checks`` overrides a source's late check (default: :func:`row_is_late`);
    ``stages`` gives a source's rows their first stateless steps, with the watermark before
    the epoch (a window TVF that gives a row only the windows still accepting it); a source
    of ``judged_by`` has its rows judged, and staged, by the least of those sources'
    watermarks before the epoch instead of its own (a Flink window join's own watermark:
    :func:`~eowc.semantics.analysis.operator_inputs.window_join_input`)."""
    checks = checks or {}
    stages = stages or {}
    judged_by = judged_by or {}
    by_name = {s.name: s for s in sources}
    comparison = completeness_comparison(convention)
    plan = {s.name: (s.event_time_index, watermark_key(s) if s.watermark else None,
                     s.watermark.delay if s.watermark else 0, checks.get(s.name, comparison),
                     stages.get(s.name),
                     tuple(watermark_key(j) for j in judged_by.get(s.name, ()) if j.watermark))
            for s in sources}
    max_time: dict[str, Watermark] = {s.name: NO_WATERMARK for s in sources}
    used = dict(max_time)
    own: Marks = {watermark_key(s): NO_WATERMARK for s in sources if s.watermark is not None}
    marks = query_watermarks(own, convention)
    for epoch, events in enumerate(log.epochs):
        rows: dict[str, list[Row]] = {s.name: [] for s in sources}
        before = marks
        for event in events:
            table, row, _ = event
            if table not in by_name:
                continue
            index, key, _, is_late, stage, judges = plan[table]
            judging = min(before[k] for k in judges) if judges else \
                before[key] if key else NO_WATERMARK
            if index is not None:
                t = row[index]
                if t > max_time[table]:
                    max_time[table] = t
                if is_late(t, judging):
                    if late is not None:
                        late(LateRow(epoch, event, judging))
                    continue
            if stage is None:
                rows[table].append(row)
            else:
                rows[table] += stage(row, judging)
        moved = False
        for name, (_, key, delay, _, _, _) in plan.items():
            if key is not None and max_time[name] > used[name]:
                used[name] = max_time[name]
                mark = source_watermark(max_time[name], delay, convention)
                if mark > own[key]:
                    own[key], moved = mark, True
        if moved:
            marks = query_watermarks(own, convention)
        yield InputEpoch(epoch, rows, before, marks)


def one_source_epochs(source: Source, log: ArrivalLog, convention: Convention,
                      late: LateSink | None, is_late: LateCheck | None, stage: Stage | None
                      ) -> Iterator[tuple[int, list[Row], Watermark, Watermark]]:
    """:func:`input_epochs` for a query of one source, as (epoch, rows, W before, W after):
    the same rules, written for speed (every row of a log passes here)."""
    name = source.name
    time_index = source.event_time_index
    delay = source.watermark.delay if source.watermark else 0
    if is_late is None:
        is_late = completeness_comparison(convention)
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
            if stage is None:
                rows.append(row)
            else:
                rows += stage(row, watermark)
        before = watermark
        if max_time > max_time_used:
            watermark = max(watermark, source_watermark(max_time, delay, convention))
            max_time_used = max_time
        yield epoch, rows, before, watermark


def never_late(event_time: int, watermark_before: Watermark) -> bool:
    """A :data:`LateCheck` that admits every row (the check is made later, per window)."""
    return False


def source_watermarks(source: Source, log: ArrivalLog, convention: Convention) -> list[Watermark]:
    """``source``'s watermark after each epoch."""
    return [after for _, _, _, after in one_source_epochs(source, log, convention, None,
                                                          never_late, None)]


class ArrivedInput(NamedTuple):
    """INPUT of one source as a batch: each admitted row with the watermark in force when it
    arrived (before its epoch), in arrival order, and the source watermark after the last
    epoch."""

    rows: list[tuple[Row, Watermark]]
    watermark: Watermark


def arrived_input(source: Source, log: ArrivalLog, convention: Convention,
                  late: LateSink | None = None, is_late: LateCheck | None = None,
                  judged: WindowJoinInput | None = None, along: Sequence[Source] = ()
                  ) -> ArrivedInput:
    """``source``'s rows of INPUT over the whole of ``log``, each with its arrival watermark;
    the rows left out go to ``late``. ``is_late`` overrides the late check (default:
    :func:`row_is_late`; :func:`never_late` keeps every row, for a check made per window).
    A source a window join ``judged`` (:func:`window_join_input`) has its rows judged per
    window (unless ``is_late`` says otherwise) by the least watermark of the join's sources,
    and carries that watermark. ``along`` are the other sources of its query: under a
    convention with one global watermark (Spark's) they hold its watermark back."""
    joint = [s for s in along if s.watermark is not None and s.name != source.name]
    if judged is not None or (convention.global_watermark and joint and source.watermark):
        return _joint_input(source, log, convention, late, judged, is_late, joint)
    rows: list[tuple[Row, Watermark]] = []
    watermark: Watermark = NO_WATERMARK
    for _, admitted, before, after in one_source_epochs(source, log, convention, late, is_late, None):
        rows += [(row, before) for row in admitted]
        watermark = after
    return ArrivedInput(rows, watermark)


def _joint_input(source: Source, log: ArrivalLog, convention: Convention,
                 late: LateSink | None, judged: WindowJoinInput | None,
                 is_late: LateCheck | None, along: Sequence[Source]) -> ArrivedInput:
    """:func:`arrived_input` of a source whose rows are judged by watermarks of other sources
    too (a Flink window join's own, or Spark's global watermark): through :func:`input_epochs`
    over all of them, keeping ``source``'s rows."""
    check = is_late or (per_window_check(judged.windows, convention) if judged else None)
    judges = judged.judged_by if judged else (source,)
    sources = list(dict.fromkeys((source, *judges, *along)))
    keys = [watermark_key(s) for s in judges if s.watermark]
    own = watermark_key(source)

    def sink(row: LateRow) -> None:
        if late is not None and row.event.table == source.name:
            late(row)
    rows: list[tuple[Row, Watermark]] = []
    watermark: Watermark = NO_WATERMARK
    for epoch in input_epochs(sources, log, convention, sink,
                              {source.name: check} if check else None, None,
                              {source.name: judges} if judged else None):
        judging = min(epoch.before[k] for k in keys) if keys else NO_WATERMARK
        rows += [(row, judging) for row in epoch.rows[source.name]]
        watermark = epoch.after[own]
    return ArrivedInput(rows, watermark)


def per_window_check(windows: WindowTVF, convention: Convention) -> LateCheck:
    """The late check of a row read by the window TVF ``windows`` under a convention that
    judges per window: late once every window of its time has closed
    (:func:`~eowc.semantics.rules.triggers.windowed_row_is_late`)."""
    windows_of = windows.spec.windows_of
    return lambda t, watermark: windowed_row_is_late(windows_of(t), watermark, convention)
