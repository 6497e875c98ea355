"""Session windows in the executors (the SESSION TVF): per partition key, the open sessions
``[first, last + gap)``, kept in time order and merged as rows arrive.

A row at time ``t`` opens the window ``[t, t + gap)``; a session is a maximal union of such
windows that overlap (half-open: rows exactly ``gap`` apart are in different sessions), or
under Spark's and Flink's rules overlap or touch (rows exactly ``gap`` apart are in one). A row
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
from eowc.semantics.rules.triggers import Convention

#: A session not yet emitted: its rows in time order (rows with equal times in the order they
#: arrived). Its first and last rows' times make its window.
OpenSession = list[Row]


@dataclass(frozen=True)
class SessionWindows:
    """A SESSION TVF bound to its input schema: a row's time and partition key, the gap."""

    node: SessionTVF
    time: Callable[[Row], Any]
    partition: Callable[[Row], Row]
    #: Rows exactly ``gap`` apart are in one session
    #: (:attr:`~eowc.semantics.rules.triggers.BoundaryRules.merges_touching_sessions`).
    merges_touching: bool

    @property
    def gap(self) -> int:
        return self.node.gap

    def window(self, session: OpenSession) -> Window:
        """The session's window ``[first, last + gap)``. A partition's open sessions are
        disjoint and in time order, so their windows end in that order too."""
        return Window(self.time(session[0]), self.time(session[-1]) + self.gap)

    def touches(self, session: OpenSession, t: int) -> bool:
        """A row at ``t`` belongs to ``session``: its own window ``[t, t + gap)`` overlaps the
        session's ``[first, last + gap)``, or meets it where touching sessions merge. The
        session is open: a closed one has been emitted and dropped."""
        if self.merges_touching:
            return t <= self.time(session[-1]) + self.gap and self.time(session[0]) <= t + self.gap
        return t < self.time(session[-1]) + self.gap and self.time(session[0]) < t + self.gap

    def add(self, sessions: list[OpenSession], row: Row) -> None:
        """Put ``row`` into a partition's open ``sessions`` (disjoint, in time order): it
        opens a session, extends the one it touches, or merges the ones it bridges, as a new
        session in their place (the sessions it replaces are not changed)."""
        t = self.time(row)
        if t is None:
            return
        time = self.time
        # Sessions starting after t + gap (or at it, unless touching ones merge) cannot be
        # touched; of those before, the touched ones are the last few (sessions are disjoint
        # and in order).
        find = bisect.bisect_right if self.merges_touching else bisect.bisect_left
        end = find(sessions, t + self.gap, key=lambda s: time(s[0]))
        begin = end
        while begin > 0 and self.touches(sessions[begin - 1], t):
            begin -= 1
        # A new list: the sessions it replaces are never changed (an emit-on-update reader
        # compares them with it, SessionChangelog).
        merged = [r for session in sessions[begin:end] for r in session]
        if not merged or time(merged[-1]) <= t:
            merged.append(row)  # the common case: the row is the session's latest
        else:
            merged.insert(bisect.bisect_right(merged, t, key=time), row)
        sessions[begin:end] = [merged]

    def with_window(self, row: Row, window: Window) -> Row:
        """The TVF's output row: the input row, window_start, window_end, window_time."""
        return row + (window.start, window.end, window.end - MICROS_PER_MILLI)


def session_windows(node: SessionTVF, convention: Convention) -> SessionWindows:
    """Bind ``node`` to its input schema, with ``convention``'s rule for sessions that touch."""
    schema = node.input.schema
    time_at = column_index(schema, node.time_column)
    keys = [column_index(schema, k) for k in node.partition_by]
    return SessionWindows(node, lambda row: row[time_at], lambda row: tuple(row[i] for i in keys),
                          convention.merges_touching_sessions)
