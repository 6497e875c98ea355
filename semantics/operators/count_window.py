"""Count windows (seed 003's tuple-based windows): COUNT_TUMBLE and COUNT_HOP.

Per partition key the rows are put in event-time order, ties broken by the project's total
order (:func:`eowc.semantics.ir.plan.tie_break`: the primary key, then the whole row; never arrival
order), and numbered from 1. Window ``k`` (``window_ordinal``, from 1) holds the rows numbered
``(k - 1) * slide + 1 .. (k - 1) * slide + size``; COUNT_TUMBLE is ``slide == size``. A window
exists only once it has all ``size`` rows (Flink's countWindow never emits a partial window,
and neither does the batch TVF here, so ``Q(INPUT)`` and the EOWC output agree on what a
window is). With ``slide > size`` the rows between two windows belong to none.

Under EMIT ON WINDOW CLOSE a window is emitted when :func:`~eowc.semantics.rules.triggers.count_window_closes`
holds: it is full and the time of its last row is complete. Every row that can still arrive
then has a strictly later time, so it sorts after the window's rows: no earlier window of the
key changes membership. Before that, a row that is late-but-not-late (older than the newest
rows, not older than the watermark) shifts every later window of its key by one row, which is
what emit-on-update shows as retractions.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from eowc.semantics.ir.expr import Row, column_index
from eowc.semantics.ir.plan import CountTVF
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.rules.triggers import Convention, Watermark, count_window_closes


def full_windows(rows: int, size: int, slide: int) -> int:
    """How many full windows ``rows`` rows of one key make: 0 below ``size`` rows, else
    ``(rows - size) // slide + 1``."""
    return 0 if rows < size else (rows - size) // slide + 1


def window_range(ordinal: int, size: int, slide: int) -> range:
    """The 0-based positions (in the key's order) of the rows of window ``ordinal`` (from 1)."""
    first = (ordinal - 1) * slide
    return range(first, first + size)


@dataclass(frozen=True)
class CompiledCount:
    """A count window TVF bound to its input schema: ``time`` and ``partition`` of a row, and
    ``order``, the total order of a key's rows (time, then the tie-break)."""

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

    def with_window(self, members: Sequence[Row], ordinal: int) -> list[Row]:
        """The TVF's output rows of one window (its rows in order): each input row with
        window_start, window_end (first and last row's time) and window_ordinal."""
        start, end = self.time(members[0]), self.time(members[-1])
        return [row + (start, end, ordinal) for row in members]

    def windows(self, ordered: Sequence[Row]) -> Iterator[tuple[int, list[Row]]]:
        """One key's rows, already in order, cut into its full windows ``(ordinal, rows)``."""
        for ordinal in range(1, full_windows(len(ordered), self.size, self.slide) + 1):
            positions = window_range(ordinal, self.size, self.slide)
            yield ordinal, list(ordered[positions.start:positions.stop])


def compile_count(node: CountTVF, tie: Callable[[Row], Any]) -> CompiledCount:
    """Bind ``node``; ``tie`` is :func:`eowc.semantics.ir.plan.tie_break` of its input schema."""
    schema = node.input.schema
    time_index = column_index(schema, node.time_column)
    keys = [column_index(schema, k) for k in node.partition_by]
    return CompiledCount(node, lambda row: row[time_index],
                         lambda row: tuple(row[i] for i in keys),
                         lambda row: (row[time_index], tie(row)))


def count_rows(compiled: CompiledCount, rows: Sequence[Row]) -> list[Row]:
    """The TVF over a batch (Q over INPUT): every row of every full window, with its window's
    columns; a row of several windows (COUNT_HOP) once per window, a row of none not at all.
    Rows with a NULL time belong to no window."""
    partitions: dict[Row, list[Row]] = {}
    for row in rows:
        if compiled.time(row) is not None:
            partitions.setdefault(compiled.partition(row), []).append(row)
    out: list[Row] = []
    for members in partitions.values():
        ordered = sorted(members, key=compiled.order)
        for ordinal, window in compiled.windows(ordered):
            out += compiled.with_window(window, ordinal)
    return out


@dataclass
class CountPartition:
    """The EOWC state of one key: its kept rows in order, how many rows were dropped in front
    of them (rows of emitted windows that no later window reads), and the ordinal of the next
    window to emit."""

    rows: list[Row] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    dropped: int = 0
    next_ordinal: int = 1

    def add(self, compiled: CompiledCount, row: Row) -> None:
        key = compiled.order(row)
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.rows.insert(at, row)

    def last_time(self, compiled: CompiledCount, ordinal: int) -> Any:
        """The time of window ``ordinal``'s last row; None while it has fewer rows."""
        last = window_range(ordinal, compiled.size, compiled.slide)[-1] - self.dropped
        return compiled.time(self.rows[last]) if last < len(self.rows) else None

    def pop_closed(self, compiled: CompiledCount, watermark: Watermark,
                   convention: Convention) -> list[tuple[int, list[Row]]]:
        """The windows of this key that close at ``watermark`` (a prefix of the ones not yet
        emitted, since later windows end later), each ``(ordinal, rows)``; then drop the rows
        that no window still to come reads."""
        done = []
        while count_window_closes(self.last_time(compiled, self.next_ordinal), watermark,
                                  convention):
            positions = window_range(self.next_ordinal, compiled.size, compiled.slide)
            done.append((self.next_ordinal, self.rows[positions.start - self.dropped:
                                                      positions.stop - self.dropped]))
            self.next_ordinal += 1
        if done:
            # Rows before the next window that are complete: the next window's first row,
            # but never past the last emitted row (with slide > size the rows in between
            # are not complete yet and still count for the numbering).
            next_first = window_range(self.next_ordinal, compiled.size, compiled.slide).start
            emitted_end = window_range(self.next_ordinal - 1, compiled.size, compiled.slide).stop
            cut = min(next_first, emitted_end) - self.dropped
            del self.rows[:cut], self.keys[:cut]
            self.dropped += cut
        return done


def closed_count_windows(count: CompiledCount, key: Row, windows: list[tuple[int, list[Row]]]
                         ) -> list[tuple[Any, Row]]:
    """The TVF rows of one key's closed count windows, each placed by its window's last row,
    the key, the window and its position in it: the order of an epoch's output."""
    return [((count.order(members[-1]), row_sort_key(key), ordinal, j), row)
            for ordinal, members in windows
            for j, row in enumerate(count.with_window(members, ordinal))]
