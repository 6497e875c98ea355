"""Exact below a millisecond, or refused: the executors keep Spark's watermark, a whole number of
milliseconds, while the reference's is in microseconds (``docs/executors.md``, "Below a
millisecond").

Every comparison an executor makes with its watermark (the late check ``c < W`` or ``c <= W``, a
window's close ``e <= W`` or ``e - 1 ms <= W``, a time's completeness, a timer) is exact as long
as the reference's watermark is itself a whole millisecond: the millisecond watermark is then the
reference's, and every timer is placed at the least millisecond that completes its bound
(:func:`~eowc.executors.protocol.closing_timer_ms`), whatever the sub-millisecond parts of event
times, window sizes, offsets, gaps or join bounds. Only a watermark between two milliseconds can
be decided differently, so an executor that decides with the engine's watermark refuses
exactly what makes one:

* a watermark delay that is not a whole millisecond (under every convention: Spark truncates
  the delay, the in-process driver rounds the watermark down, the reference does neither);
* under a convention that keeps ``max(c)`` to the microsecond (risingwave, flink; spark
  truncates it to the millisecond), an epoch after which a source's largest event time is not a
  whole millisecond: the row holding it is refused, with its file, line and column.

Spark's watermark also starts at 0 ms, 1970-01-01 00:00:00, and never goes below it, while the
reference's starts at minus infinity: an executor that decides with it finds an event time at or
before 1970-01-01 00:00:00 late where the reference does not (a row of 1969 is late against 0 ms;
a window that ends by then closes at once). It refuses the first such row too, with its file,
line and column.

An executor told each source's progress (:attr:`~eowc.executors.interface.EowcProcessor.progress_keys`:
the composed and join executors, ``executors/composed.py``) keeps each source's watermark itself,
to the microsecond, as the reference does, and runs whatever the log.

On a streaming DataFrame (:mod:`eowc.executors.spark.api`) the largest event time of a batch is
known to no single task, so under those conventions every row with a sub-millisecond event time
is set aside, with its reason, and left out of Spark's watermark.
"""

from __future__ import annotations

from collections.abc import Iterable

from eowc.executors.interface import EowcProcessor
from eowc.semantics.errors import InputError, PlanError
from eowc.semantics.ir.arrival import ArrivalLog, Event, key_column
from eowc.semantics.ir.plan import Source
from eowc.semantics.ir.values import MICROS_PER_MILLI, format_interval, format_timestamp
from eowc.semantics.rules.triggers import Convention

#: Where an arrival log that is not a file is said to be.
UNNAMED_LOG = "<arrival log>"


def keeps_microsecond_event_times(convention: Convention) -> bool:
    """The convention's source watermark ``max(c) - d`` keeps ``max(c)`` finer than the
    millisecond (risingwave and flink; spark truncates it: ``SEMANTICS.md`` §4)."""
    return convention.source_watermark_precision % MICROS_PER_MILLI != 0


def is_whole_millisecond(t: int) -> bool:
    """``t`` (microseconds) is a whole number of milliseconds."""
    return t % MICROS_PER_MILLI == 0


def sub_millisecond_time_reason(t: int, convention: Convention) -> str | None:
    """Why an event time ``t`` cannot enter a millisecond watermark exactly under ``convention``
    (None: it can): a log is refused for it where it would be its source's largest, a row of a
    streaming DataFrame is set aside for it anywhere."""
    if is_whole_millisecond(t) or not keeps_microsecond_event_times(convention):
        return None
    return (f"event time {format_timestamp(t)} is not a whole millisecond: under the "
            f"{convention.value} convention the watermark max(event time) - delay keeps its "
            f"microseconds, but the executors keep Spark's watermark in whole milliseconds, so a "
            f"late check or a window close could be decided differently from the reference")


#: Where Spark's watermark starts (0 ms, 1970-01-01 00:00:00), in microseconds: it never goes
#: below it.
ENGINE_WATERMARK_START = 0


def before_watermark_start_reason(t: int) -> str | None:
    """Why an event time ``t`` cannot be judged against the engine's watermark as the reference
    judges it (None: it can): ``t`` is at or before where that watermark starts."""
    if t > ENGINE_WATERMARK_START:
        return None
    return (f"event time {format_timestamp(t)} is at or before 1970-01-01 00:00:00, where "
            f"Spark's watermark starts (the reference's starts at minus infinity), so the "
            f"executors would find it late, or close its window, where the reference does not")


def check_delays(sources: Iterable[Source]) -> None:
    """A :class:`PlanError` for the first source whose watermark delay is not a whole
    millisecond (the executors cannot follow it under any convention)."""
    for source in sources:
        if source.watermark is None or is_whole_millisecond(source.watermark.delay):
            continue
        raise PlanError(
            f"the watermark delay of {source.name}, {format_interval(source.watermark.delay)}, is "
            f"not a whole number of milliseconds: the executors keep Spark's watermark in whole "
            f"milliseconds (Spark truncates the delay), so a late check or a window close could "
            f"be decided differently from the reference; use a delay of whole milliseconds, or "
            f"--engine reference")


def first_sub_millisecond_watermark(sources: Iterable[Source], log: ArrivalLog,
                                    convention: Convention) -> tuple[Event, int] | None:
    """The first event (with the index of its event-time column) after whose epoch its source's
    watermark is not a whole millisecond under ``convention``, the delays being whole: the
    event holding the source's largest event time then, if that time is not a whole
    millisecond. None if every watermark of the run is a whole millisecond."""
    if not keeps_microsecond_event_times(convention):
        return None
    watermarked = {s.name: s.event_time_index for s in sources
                   if s.watermark is not None and s.event_time_index is not None}
    highest: dict[str, tuple[int, Event]] = {}
    for epoch in log.epochs:
        for event in epoch:
            index = watermarked.get(event.table)
            t = event.row[index] if index is not None else None
            if t is not None and (event.table not in highest or t > highest[event.table][0]):
                highest[event.table] = (t, event)
        for t, event in sorted(highest.values(), key=lambda h: h[1].line):
            if not is_whole_millisecond(t):
                return event, watermarked[event.table]
    return None


def first_time_before_watermark_start(sources: Iterable[Source], log: ArrivalLog
                                      ) -> tuple[Event, int] | None:
    """The first event (with the index of its event-time column) whose event time is at or
    before 1970-01-01 00:00:00 (:func:`before_watermark_start_reason`); None if there is none."""
    watermarked = {s.name: s.event_time_index for s in sources
                   if s.watermark is not None and s.event_time_index is not None}
    for event in log.events:
        index = watermarked.get(event.table)
        if index is not None and event.row[index] is not None \
                and before_watermark_start_reason(event.row[index]) is not None:
            return event, index
    return None


def follows_engine_watermark(processor: EowcProcessor) -> bool:
    """``processor`` decides with the watermark the engine hands it (Spark's, in whole
    milliseconds), not with source watermarks of its own, which an executor told each source's
    progress keeps to the microsecond."""
    return not processor.progress_keys


def check_millisecond_watermarks(processor: EowcProcessor, log: ArrivalLog, convention: Convention,
                                 path: str = UNNAMED_LOG) -> None:
    """Refuse a run ``processor`` would not run exactly (module documentation): a
    :class:`PlanError` for a delay, an :class:`InputError` naming ``path``, the line and the
    column of the first row at or before 1970-01-01 00:00:00, else of the first row that makes
    a watermark fall between two milliseconds. Nothing is
    refused when ``processor`` keeps its own microsecond watermarks."""
    if not follows_engine_watermark(processor):
        return
    sources = processor.sources
    check_delays(sources)
    early = first_time_before_watermark_start(sources, log)
    if early is not None:
        event, index = early
        reason = before_watermark_start_reason(event.row[index])
        _refuse(sources, event, index, path, f"{reason}; give event times after 1970-01-01 "
                                             f"00:00:00, or use --engine reference")
    found = first_sub_millisecond_watermark(sources, log, convention)
    if found is None:
        return
    event, index = found
    reason = sub_millisecond_time_reason(event.row[index], convention)
    _refuse(sources, event, index, path, f"{reason} (it is the largest event time of "
                                         f"{event.table} so far); give event times in whole "
                                         f"milliseconds, or use --engine reference")


def _refuse(sources: Iterable[Source], event: Event, index: int, path: str, why: str) -> None:
    """An :class:`InputError` naming ``path``, the event's line and the column of its event
    time, and ``why``."""
    source = next(s for s in sources if s.name == event.table)
    column = source.columns[index].name
    where = _row_key_column(path, event.line, column)
    at = f"column {where}: " if where is not None else ""
    raise InputError(path, event.line or None, f"{at}{source.name}.{column}: {why}")


def _row_key_column(path: str, line: int, name: str) -> int | None:
    """The column (from 1) of the key ``name`` in the ``row`` object of line ``line`` of the
    file ``path``; None when the file or the key cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = next((t for number, t in enumerate(handle, start=1) if number == line), None)
    except OSError:
        return None
    if text is None or '"row"' not in text:
        return None
    row_at = key_column(text, "row") - 1
    start = text.find("{", row_at)
    if start < 0:
        return None
    inner = key_column(text[start:], name)
    found = text[start + inner - 1:].startswith(f'"{name}"')
    return start + inner if found else None
