"""The executors of RisingWave's GAP_FILL (``docs/operators/gap_fill.md``), written against
:mod:`eowc.executors.state` like the others, independent of the reference's operator: they
share with it the plan, the trigger function and the tie-break, not the filling.

* :class:`EowcGapFill` (EMIT ON WINDOW CLOSE): RisingWave's ``StreamEowcSort`` +
  ``StreamEowcGapFill``. A shard is a hash bucket of the PARTITION_BY key
  (:class:`~eowc.executors.partitioned.PartitionBuckets`). It holds, per partition, the rows
  whose time is not complete yet, in time order, and the last row released (RisingWave's
  ``prev_row_table``); one timer at the earliest waiting row's closing watermark. When it
  fires, the complete rows leave in order, each after the filled rows of the gap between it
  and the last row released (:func:`gap_row_is_final`).
* :class:`GapFillChangelog` (emit on update, RisingWave's ``StreamGapFill``): a partition keeps its
  rows in time order from the last one whose time is complete (rows still to come go after
  it); a batch's rows are inserted and the gaps around each new row are filled again: the
  filled rows of the gap it splits are retracted and those of its two new gaps inserted.

Filled rows: at ``prev + k * interval`` before the next row's time; PARTITION_BY and LOCF
columns copied from the row before the gap, INTERPOLATE ones stepped from it by
``(next - prev) / (n + 1)`` (floor for integers), one addition per filled row; NULL otherwise.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import partial
from typing import Any

from eowc.executors.interface import EowcProcessor
from eowc.executors.partitioned import PartitionBuckets
from eowc.executors.plan import ExecutorPlan
from eowc.executors.protocol import Emit, Output, Update, closing_timer_ms
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import GapFill, tie_break, walk
from eowc.semantics.ir.values import SqlType, row_sort_key
from eowc.semantics.rules.triggers import Watermark, gap_row_is_final, time_is_complete


class Filler:
    """How one GAP_FILL makes the filled rows of a gap (the executors' own copy of the rule).

    ``copy`` are the positions taken from the row before the gap (PARTITION_BY, LOCF),
    ``stepped`` the INTERPOLATE positions with whether they are integers; the time is at
    ``time``; every other position is NULL."""

    def __init__(self, node: GapFill, tie: Callable[[Row], Any]) -> None:
        schema = node.input.schema
        names = [c.name for c in schema]
        self.width = len(names)
        self.time = names.index(node.time_column)
        self.interval = node.interval
        self.keys = tuple(names.index(k) for k in node.partition_by)
        strategies = dict(node.fills)
        self.copy = tuple(i for i, n in enumerate(names)
                          if n in node.partition_by or strategies.get(n) == "locf")
        self.stepped = tuple((i, schema[i].type is SqlType.BIGINT) for i, n in enumerate(names)
                             if strategies.get(n) == "interpolate")
        self.tie = tie

    def order(self, row: Row) -> tuple[Any, ...]:
        """A row's place in its partition: its time, then the tie-break."""
        return (row[self.time], self.tie(row))

    def partition(self, row: Row) -> Row:
        return tuple(row[i] for i in self.keys)

    def gap(self, before: Row, after: Row) -> list[Row]:
        """The filled rows strictly between ``before`` and ``after`` (consecutive rows)."""
        start, end = before[self.time], after[self.time]
        times = list(range(start + self.interval, end, self.interval))
        if not times:
            return []
        template: list[Any] = [None] * self.width
        for i in self.copy:
            template[i] = before[i]
        values = {i: _step(before[i], after[i], len(times) + 1, integer)
                  for i, integer in self.stepped}
        running = {i: before[i] for i in values}
        filled = []
        for t in times:
            row = list(template)
            row[self.time] = t
            for i, step in values.items():
                if step is not None:
                    running[i] = running[i] + step
                    row[i] = running[i]
            filled.append(tuple(row))
        return filled


def _step(first: Any, last: Any, parts: int, integer: bool) -> Any:
    """One interpolation step: NULL with a NULL end, floor division for integers."""
    if first is None or last is None:
        return None
    if isinstance(first, Decimal) or isinstance(last, Decimal):
        return (Decimal(last) - Decimal(first)) / Decimal(parts)
    difference = last - first
    return difference // parts if integer else difference / parts


def _gap_fill_node(plan: ExecutorPlan) -> GapFill | None:
    return next((n for n in walk(plan.compiled.query.plan) if isinstance(n, GapFill)), None)


class _GapFillShards(PartitionBuckets):
    """A GAP_FILL executor: per PARTITION_BY key (sharded by its bucket), its rows filled by
    ``filler``."""

    #: EOWC: (the waiting rows in order, the last row released); emit on update: the
    #: partition's rows in order from its last complete one.
    state_name = "gap_fill"

    def __init__(self, plan: ExecutorPlan) -> None:
        node = _gap_fill_node(plan)
        assert node is not None
        self.filler = Filler(node, tie_break(node.input.schema, plan.compiled.source))
        super().__init__(plan, self.filler.partition)


class EowcGapFill(_GapFillShards):
    """EOWC GAP_FILL: see the module docstring. A partition keeps the last row released
    (the start of its next gap) for good."""

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        self.complete = partial(gap_row_is_final, convention=plan.convention)

    def insert(self, partitions: dict[Row, Any], part: Row, rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        waiting, last = partitions.get(part) or ([], None)
        waiting = list(waiting)
        order = self.filler.order
        for row in rows:
            bisect.insort(waiting, (order(row), row))
        partitions[part] = (waiting, last)
        return iter(())

    def anchor_time(self, last: Row | None, row: Row) -> int:
        """The time whose completeness releases ``row`` with the gap between ``last`` (the
        last row released) and it: ``row``'s own (:func:`gap_row_is_final`)."""
        return row[self.filler.time]

    def release(self, partitions: dict[Row, Any], watermark: Watermark) -> Iterator[Emit]:
        """Each partition's complete rows, in order, each after the filled rows of its gap."""
        above = self.plan.compiled.above
        for key, (waiting, last) in partitions.items():
            part = row_sort_key(key)
            released = 0
            for place, row in waiting:
                if not self.complete(self.anchor_time(last, row), watermark):
                    break
                released += 1
                rows = (self.filler.gap(last, row) if last is not None else []) + [row]
                for k, out in enumerate(rows):
                    shown = above(out)
                    if shown is not None:
                        yield Emit(shown, ((place, k), part))
                last = row
            if released:
                partitions[key] = (waiting[released:], last)

    def wakes_at(self, state: tuple[list[tuple[Any, Row]], Row | None]) -> int | None:
        waiting, last = state
        if not waiting:
            return None
        return closing_timer_ms(self.complete, self.anchor_time(last, waiting[0][1]))


class GapFillChangelog(_GapFillShards):
    """Emit-on-update GAP_FILL: see the module docstring."""

    has_timers = False

    def __init__(self, plan: ExecutorPlan) -> None:
        super().__init__(plan)
        self.complete = partial(time_is_complete, convention=plan.convention)

    def insert(self, partitions: dict[Row, Any], part: Row, new_rows: list[Row],
               watermark: Watermark) -> Iterator[Output]:
        rows: list[tuple[Any, Row]] = list(partitions.get(part) or [])
        filler, above = self.filler, self.plan.compiled.above
        out: Counter[Row] = Counter()

        def change(result: list[Row], sign: int) -> None:
            for r in result:
                shown = above(r)
                if shown is not None:
                    out[shown] += sign
        for new in new_rows:
            item = (filler.order(new), new)
            at = bisect.bisect_right(rows, item)
            before = rows[at - 1][1] if at > 0 else None
            after = rows[at][1] if at < len(rows) else None
            if before is not None and after is not None:
                change(filler.gap(before, after), -1)
            change([new], 1)
            if before is not None:
                change(filler.gap(before, new), 1)
            if after is not None:
                change(filler.gap(new, after), 1)
            rows.insert(at, item)
        partitions[part] = rows[self._first_kept(rows, watermark):]
        for row, n in sorted(out.items(), key=lambda item: row_sort_key(item[0])):
            for _ in range(-n):
                yield Update("-", row, (0, row_sort_key(row)))
        for row, n in sorted(out.items(), key=lambda item: row_sort_key(item[0])):
            for _ in range(n):
                yield Update("+", row, (1, row_sort_key(row)))

    def _first_kept(self, rows: list[tuple[Any, Row]], watermark: Watermark) -> int:
        """The first row a future batch can still read: a row still to come is not late, so
        its time is not complete and it goes after every row whose time is; only the last of
        those (the start of its gap) and the rows after it are read again."""
        complete, time = self.complete, self.filler.time
        done = bisect.bisect_left([not complete(r[time], watermark) for _, r in rows], True)
        return max(done - 1, 0)


def gap_fill_processor(plan: ExecutorPlan, eowc: bool) -> EowcProcessor | None:
    """The executor of a query whose stateful operator is a GAP_FILL, or None."""
    if _gap_fill_node(plan) is None:
        return None
    if plan.compiled.rule is None:
        raise PlanError("GAP_FILL needs its rule bound")
    return EowcGapFill(plan) if eowc else GapFillChangelog(plan)
