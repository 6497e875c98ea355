"""Count windows in the executors (COUNT_TUMBLE, COUNT_HOP): per partition key, its rows in
time order (ties by the project's total order, never arrival), numbered from 1; window ``k``
holds the rows numbered ``(k - 1) * slide + 1 .. (k - 1) * slide + size``. A window exists
once it has all ``size`` rows, and closes when the time of its last row is complete
(:func:`eowc.semantics.rules.triggers.count_window_closes`); a partial window is never
emitted.

Written for the executors, independently of the reference interpreter's count windows: a
partition keeps only the rows from the next window's first on, and how many came before.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eowc.semantics.ir.expr import Row, column_index
from eowc.semantics.ir.plan import CountTVF
from eowc.semantics.rules.triggers import Convention, Watermark, count_window_closes


@dataclass(frozen=True)
class CountWindows:
    """A count window TVF bound to its input schema: a row's time, partition key and place
    in its partition's order (time, then the tie-break)."""

    node: CountTVF
    time: Callable[[Row], Any]
    partition: Callable[[Row], Row]
    order: Callable[[Row], Any]

    @property
    def size(self) -> int:
        return self.node.size

    @property
    def slide(self) -> int:
        return self.node.slide

    def first_row(self, ordinal: int) -> int:
        """The number (from 0) of window ``ordinal``'s first row in its partition."""
        return (ordinal - 1) * self.slide

    def tvf_rows(self, members: list[Row], ordinal: int) -> list[Row]:
        """The TVF's rows of one window: each row with window_start, window_end (its first
        and last row's time) and window_ordinal."""
        start, end = self.time(members[0]), self.time(members[-1])
        return [row + (start, end, ordinal) for row in members]


@dataclass
class CountRows:
    """One partition between batches: its kept rows in order, how many rows come before them
    (``skipped``), and the ordinal of the next window to emit."""

    rows: list[Row] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    skipped: int = 0
    next_window: int = 1

    def add(self, windows: CountWindows, row: Row) -> None:
        key = windows.order(row)
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.rows.insert(at, row)

    def pop_closed(self, windows: CountWindows, watermark: Watermark, convention: Convention
                   ) -> list[tuple[int, list[Row]]]:
        """The windows that closed, in order, each ``(ordinal, rows)``; the rows before the
        next window's first are then forgotten (counted in ``skipped``), but never a row
        after the last emitted window (with ``slide > size`` it still counts)."""
        closed = []
        while True:
            first = windows.first_row(self.next_window) - self.skipped
            last = first + windows.size - 1
            last_time = windows.time(self.rows[last]) if last < len(self.rows) else None
            if not count_window_closes(last_time, watermark, convention):
                break
            closed.append((self.next_window, self.rows[first:last + 1]))
            self.next_window += 1
        if closed:
            emitted_end = windows.first_row(self.next_window - 1) + windows.size
            forget = min(windows.first_row(self.next_window), emitted_end) - self.skipped
            del self.rows[:forget], self.keys[:forget]
            self.skipped += forget
        return closed


def count_windows(node: CountTVF, tie: Callable[[Row], Any]) -> CountWindows:
    """Bind ``node``; ``tie`` is :func:`eowc.semantics.ir.plan.tie_break` of its input."""
    schema = node.input.schema
    time_at = column_index(schema, node.time_column)
    keys = [column_index(schema, k) for k in node.partition_by]
    return CountWindows(node, lambda row: row[time_at], lambda row: tuple(row[i] for i in keys),
                        lambda row: (row[time_at], tie(row)))
