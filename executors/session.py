"""Session windows in the executors (the SESSION TVF): per partition key, the open sessions
``[first, last + gap)``, kept in time order and merged as rows arrive.

A row at time ``t`` opens the window ``[t, t + gap)``; a session is a maximal union of such
windows that overlap (half-open: rows exactly ``gap`` apart are in different sessions). A row
whose window overlaps one session extends it; one that overlaps two (it falls between them)
merges them into one. Rows with a NULL time belong to no session. The executor
(:class:`eowc.executors.partitioned.EowcSession`) keeps the open sessions of its shard in
state and emits a session once its window closes.

Written for the executors, independently of the reference interpreter's session operator:
the reference recomputes the sessions from a partition's rows; here each arriving row is
merged into the sessions it touches.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eowc.semantics.ir.expr import Row, column_index
from eowc.semantics.ir.plan import SessionTVF
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.ir.windows import Window


@dataclass
class OpenSession:
    """A session not yet emitted: its first and last row's time and its rows, in time order
    (rows with equal times in the order they arrived)."""

    first: int
    last: int
    rows: list[Row]


@dataclass(frozen=True)
class SessionWindows:
    """A SESSION TVF bound to its input schema: a row's time and partition key, the gap."""

    node: SessionTVF
    time: Callable[[Row], Any]
    partition: Callable[[Row], Row]

    @property
    def gap(self) -> int:
        return self.node.gap

    def window(self, session: OpenSession) -> Window:
        """The session's window ``[first, last + gap)``."""
        return Window(session.first, session.last + self.gap)

    def touches(self, session: OpenSession, t: int) -> bool:
        """A row at ``t`` belongs to ``session``: its window ``[t, t + gap)`` overlaps the
        session's ``[first, last + gap)``."""
        return t < session.last + self.gap and session.first < t + self.gap

    def add(self, sessions: list[OpenSession], row: Row) -> None:
        """Put ``row`` into a partition's open ``sessions`` (disjoint, in time order): it
        opens a session, extends the one it touches, or merges the ones it bridges."""
        t = self.time(row)
        if t is None:
            return
        firsts = [s.first for s in sessions]
        # Sessions starting at or after t + gap cannot be touched; of those before, the
        # touched ones are the last few (sessions are disjoint and in order).
        end = bisect.bisect_left(firsts, t + self.gap)
        begin = end
        while begin > 0 and self.touches(sessions[begin - 1], t):
            begin -= 1
        touched = sessions[begin:end]
        rows = [r for s in touched for r in s.rows]
        times = [self.time(r) for r in rows]
        rows.insert(bisect.bisect_right(times, t), row)
        first = min([t] + [s.first for s in touched])
        last = max([t] + [s.last for s in touched])
        sessions[begin:end] = [OpenSession(first, last, rows)]

    def with_window(self, row: Row, window: Window) -> Row:
        """The TVF's output row: the input row, window_start, window_end, window_time."""
        return row + (window.start, window.end, window.end - MICROS_PER_MILLI)


def session_windows(node: SessionTVF) -> SessionWindows:
    """Bind ``node`` to its input schema."""
    schema = node.input.schema
    time_at = column_index(schema, node.time_column)
    keys = [column_index(schema, k) for k in node.partition_by]
    return SessionWindows(node, lambda row: row[time_at], lambda row: tuple(row[i] for i in keys))
