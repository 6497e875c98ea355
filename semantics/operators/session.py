"""Session windows (seed 004's SESSION TVF): per partition key, rows whose event times are less
than ``gap`` apart form one session ``[first, last + gap)``; under Spark's and Flink's rules rows
exactly ``gap`` apart too (:func:`~eowc.semantics.rules.triggers.row_joins_session`).

A session is the union of its rows' own windows ``[t, t + gap)``, merged while they overlap
(or touch, under Spark and Flink), so a row that arrives between two sessions can merge them.
Under EMIT ON WINDOW CLOSE a session is final once it closes, ``window_closes([first, last +
gap), W)``: every row that can still arrive has ``t > W >= last + gap`` (Spark), ``t >= W >=
last + gap`` (RisingWave), so its window starts after the session ends, or meets it where that
is allowed. Flink closes at ``last + gap - 1 ms``; a row at exactly ``last + gap`` then finds
the session gone and starts its own (z3 proves it: ``eowc prove --operator session``, for
whole-millisecond times, as Flink's are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from eowc.semantics.ir.expr import Row, column_index
from eowc.semantics.ir.plan import SessionTVF
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.ir.windows import Window
from eowc.semantics.rules.triggers import NO_WATERMARK, Convention, Watermark, row_joins_session


@dataclass(frozen=True)
class CompiledSession:
    """A SESSION TVF bound to its input schema."""

    node: SessionTVF
    time: Callable[[Row], Any]
    partition: Callable[[Row], Row]
    convention: Convention

    @property
    def gap(self) -> int:
        return self.node.gap

    def sessions(self, rows: Sequence[Row], marks: Sequence[Watermark] | None = None
                 ) -> Iterator[tuple[Window, list[Row]]]:
        """One partition's rows (any order) grouped into sessions, in time order (rows with a
        NULL time belong to none). ``marks``, one per row: the watermark before each row's
        epoch, where ``rows`` are all of INPUT rather than the open sessions' rows (a row at
        a time joins the session before it if the first of them to arrive could)."""
        marked = zip(rows, marks or [NO_WATERMARK] * len(rows), strict=True)
        timed = sorted(((r, m) for r, m in marked if self.time(r) is not None),
                       key=lambda rm: (self.time(rm[0]), rm[1]))
        members: list[Row] = []
        first = last = 0
        for row, mark in timed:
            t = self.time(row)
            if members and not row_joins_session(t, last, self.gap, self.convention, mark):
                yield Window(first, last + self.gap), members
                members = []
            if not members:
                first = t
            members.append(row)
            last = t
        if members:
            yield Window(first, last + self.gap), members

    def with_window(self, row: Row, window: Window) -> Row:
        """The TVF's output row: the input row, window_start, window_end, window_time."""
        return row + (window.start, window.end, window.end - MICROS_PER_MILLI)


def pop_closed_sessions(compiled: CompiledSession, partitions: dict[Row, list[Row]],
                        closes: Callable[[Window], bool]) -> dict[Window, list[Row]]:
    """The sessions of ``partitions`` (partition key -> rows of its open sessions) that
    ``closes``, by window, each row with its session's window columns; their rows leave
    ``partitions`` (a partition left with no open session is deleted)."""
    closed: dict[Window, list[Row]] = {}
    for key, rows in list(partitions.items()):
        still_open: list[Row] = []
        for window, members in compiled.sessions(rows):
            if closes(window):
                closed.setdefault(window, []).extend(compiled.with_window(r, window)
                                                     for r in members)
            else:
                still_open += members
        if still_open:
            partitions[key] = still_open
        else:
            del partitions[key]
    return closed


def compile_session(node: SessionTVF, convention: Convention) -> CompiledSession:
    schema = node.input.schema
    time_index = column_index(schema, node.time_column)
    keys = [column_index(schema, k) for k in node.partition_by]
    return CompiledSession(node, lambda row: row[time_index],
                           lambda row: tuple(row[i] for i in keys), convention)


def session_rows(compiled: CompiledSession, rows: Sequence[Row],
                 marks: Sequence[Watermark] | None = None) -> list[Row]:
    """The TVF over a batch (Q over INPUT): every row with its session's window columns.
    ``marks``: each row's watermark before its epoch (:meth:`CompiledSession.sessions`)."""
    partitions: dict[Row, tuple[list[Row], list[Watermark]]] = {}
    for row, mark in zip(rows, marks or [NO_WATERMARK] * len(rows), strict=True):
        members, their_marks = partitions.setdefault(compiled.partition(row), ([], []))
        members.append(row)
        their_marks.append(mark)
    return [compiled.with_window(row, window) for members, their_marks in partitions.values()
            for window, session in compiled.sessions(members, their_marks) for row in session]
