"""Seed 000's IntervalJoin (and EqJoin): each side's rows in a *state table* keyed ``[k, t,
pk]`` and a *sort table* keyed ``[t, pk]``, joined by the four-step loop once they are complete.

For a condition ``l.k = r.k AND l.t BETWEEN r.t - a AND r.t + b``, a row's ``until`` is the
greatest value of the other side's bound column it can meet (``l.t + a`` for a left row,
``r.t + b`` for a right one: ``t`` shifted by a constant, so ordering by ``until`` is ordering
by ``t``). Per side (``pk`` is the row's insertion number on its side, its stream key):

* the **state table**, one value per shard: a dict from the equality key ``k`` to that key's
  rows by ``(until, pk)``, each with a *matched* flag (the key's entry is its ``[k, ...]``
  prefix; only keys with rows are kept). It is read once and then cached until a restart
  (the seed's cache on the state table), and written back once per batch that changes it:
  two calls to Spark's state API per shard and batch, not two per key (each is a round trip
  to the JVM). A state table kept by format 1, a map state with an entry per key, is moved
  into the value when a shard first reads it;
* the **sort table**, a :class:`~eowc.executors.sort_buffer.SortBuffer` keyed ``(until, pk)``:
  ``first()`` is the seed's ``peek``.

After a batch's rows are added, for each side in turn, the four steps:

1. take the lowest row ``R`` of the side's sort table;
2. if no row still to come on the other side can meet it (its ``until`` is complete under the
   other side's watermark: :func:`~eowc.semantics.rules.triggers.unmatched_row_is_final`, the proven
   cleaning bound), consume it, and go on with the next; else stop (``until`` is monotone);
3. join ``R`` with the rows of the other side's state table with ``R``'s key that satisfy
   the whole condition, emit each pair and flag both rows matched; an outer side's ``R``
   never matched is emitted NULL-padded (SEMI: the left ``R`` if it matched; ANTI: if not).
   When both time bounds are on the same pair of columns, a row whose ``until`` is beyond
   ``R``'s reach (``R``'s plus the side's ``reach``, see
   :class:`~eowc.executors.multi_input.JoinSides`) cannot satisfy the condition and is
   skipped without evaluating it;
4. delete ``R`` from its state table.

Each pair comes out exactly once, when the first of its two rows is consumed (the other is
still in its state table: it had arrived, since the first could be consumed only once no
matching row could still come). That is no later than the pair is complete under the
watermark derived for the join's output (a pair's bounded column is complete only when both
rows are final), so what reads the join (the EOWC sort, an aggregate, another join) sees every
row in time. A window join (EqJoin: equal ``window_start`` and ``window_end``) is the case
``a = b = 0`` on ``window_end``: the sort tables are the seed's two SortBuffers, and a window
of one side is consumed once the other side's peek has passed it. A side with no time bound
keeps its rows until the end of the input; a row with a NULL key or time never matches.

Where a window join judges rows by its own watermark (the least of both inputs': Flink's, see
:func:`~eowc.semantics.analysis.operator_inputs.window_join_input`), a new row whose window
the join has already fired, i.e. one already final under the watermarks before the batch
(``before``, set by the executor), is dropped as late for that window, not joined.

Where an interval join judges its input rows itself (Flink's ``TimeIntervalJoin``, see
:func:`~eowc.semantics.analysis.operator_inputs.join_judges_late_rows`), no row is late at its
source, and the batch's rows are taken one by one in arrival order (``arrived``, set by the
executor: each source row with where it went, by its position in the log): each meets the
other side's kept rows of its key at once (the pairs, SEMI's first match), and is kept only
if a row still to come can meet it by the watermarks before the batch, without the
convention's ``join_state_margin`` (Flink caches a row while the join's watermark is below
its bound); an outer row not kept that met none is padded at once. The sort tables then only
release: a row final under the watermarks after the batch leaves its state table, padded if
it is an outer side's and never matched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from eowc.executors.multi_input import (
    JoinSides,
    LastMarks,
    LowerNode,
    Marks,
    ShardRows,
    is_closed,
    join_sides,
    no_match_can_come,
    source_under_steps,
)
from eowc.executors.sort_buffer import SortBuffer
from eowc.executors.state import MapState, StateHandle
from eowc.semantics.analysis.operator_inputs import join_judges_late_rows
from eowc.semantics.analysis.watermark_derivation import join_time_bounds
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Join
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, NO_WATERMARK, Convention

#: A kept row: ``[row, matched]``.
Entry = list[Any]


class SideTables:
    """One side of an interval join in state: its state table and sort table (module
    documentation)."""

    def __init__(self, handle: StateHandle, name: str, join: JoinSides, left: bool,
                 new_sort_buffer: Callable[[MapState], SortBuffer] = SortBuffer) -> None:
        self.new_sort_buffer = new_sort_buffer
        self.key = join.left_key if left else join.right_key
        self.until = join.left_until if left else join.right_until
        self.other = join.left_other if left else join.right_other
        self.outer = join.left_outer if left else join.right_outer
        self.reach = join.left_reach if left else join.right_reach
        self.state = handle.value_state(f"{name}.table")
        #: The state table as format 1 kept it: an entry per equality key.
        self.format_1_state = handle.map_state(f"{name}.state")
        self.sort_table = handle.map_state(f"{name}.sort")
        self.inserted = handle.value_state(f"{name}.pk")
        self.dirty: set[Row] = set()
        #: Per shard, its sort table (a SortBuffer caches the shard's runs) and its state
        #: table (rows by equality key, read from state once per restart; None: not yet).
        self.shards: dict[Row, list[Any]] = {}
        self.enter(())

    def enter(self, shard: Row) -> None:
        """Work in the shard ``shard`` (the executor's grouping key): its tables."""
        tables = self.shards.get(shard)
        if tables is None:
            tables = self.shards[shard] = [self.new_sort_buffer(self.sort_table), None]
        self.tables = tables
        self.sort = tables[0]

    @property
    def table(self) -> dict[Row, dict[tuple[Any, int], Entry]]:
        """The shard's state table (read from state once per restart)."""
        if self.tables[1] is None:
            kept = self.state.get()
            self.tables[1] = self._from_format_1() if kept is None else kept
        return self.tables[1]

    def _from_format_1(self) -> dict[Row, dict[tuple[Any, int], Entry]]:
        """The rows a format 1 checkpoint keeps in a map entry per key, moved to the value."""
        old = self.format_1_state
        table = {key: old.get(key) for key in list(old.keys())}
        if table:
            old.clear()
            self.dirty.update(table)
        return table

    def rows_of(self, key: Row) -> dict[tuple[Any, int], Entry]:
        """The state table's rows of ``key`` (a new empty dict, not kept, for a key without
        rows: looking a key up keeps nothing)."""
        return self.table.get(key) or {}

    def reach_of(self, until: Any) -> Any:
        """The greatest ``until`` of a row of the other side that a row of this side with
        ``until`` can meet (+infinity: no bound is known)."""
        return math.inf if self.reach is None else until + self.reach

    def add(self, rows: list[Row]) -> list[tuple[tuple[Any, int], tuple[Row, Row]]]:
        """Keep ``rows`` in the state table; their entries for the sort table, which the
        caller inserts (or consumes at once, see :meth:`IntervalJoin.step`)."""
        if not rows:
            return []
        pk = self.inserted.get() or 0
        sorted_rows = []
        for row in rows:
            pk += 1
            value = CLOSED_WATERMARK if self.until is None else self.until(row)
            until = NO_WATERMARK if value is None else value
            key = self.key(row)
            if None not in key:
                table = self.table
                if key not in table:
                    table[key] = {}
                table[key][(until, pk)] = [row, False]
                self.dirty.add(key)
            sorted_rows.append(((until, pk), (key, row)))
        self.inserted.update(pk)
        return sorted_rows

    def flush(self) -> None:
        """Write the state table back if this batch changed it (the keys left without rows
        removed)."""
        if not self.dirty:
            return
        table = self.table
        for key in self.dirty:
            if key in table and not table[key]:
                del table[key]
        self.state.update(table)
        self.dirty.clear()


class IntervalJoin(LowerNode):
    """An equality-keyed join with time bounds, by the four-step loop (module
    documentation); its tables live in the executor's state under ``name``."""

    def __init__(self, plan: Join, left: LowerNode, right: LowerNode, convention: Convention,
                 name: str) -> None:
        self.left_input, self.right_input = left, right
        self.convention, self.name, self.kind = convention, name, plan.kind
        self.join = join_sides(plan, convention)
        #: Whether the join drops a row whose window it has fired (module documentation).
        self.drops_fired_windows = convention.join_waits_for_both and \
            not all(bound.is_range for bound in join_time_bounds(plan))
        #: The source watermarks before the batch (set by the executor, each batch).
        self.before: Marks = {}
        #: Whether the join judges its input rows itself (module documentation).
        self.judges_late_rows = join_judges_late_rows(plan, convention)
        #: Where it does: the batch's source rows in arrival order, each with the name of
        #: where it went (its source, or a keyed join's side), set by the executor.
        self.arrived: list[tuple[str, Row]] = []

    def bind(self, handle: StateHandle,
             new_sort_buffer: Callable[[MapState], SortBuffer] = SortBuffer) -> None:
        """Read the tables from ``handle`` (after a start or a restart), each side's sort
        table a ``new_sort_buffer`` (the executor's, see
        :meth:`~eowc.executors.interface.EowcProcessor.new_sort_buffer`)."""
        self.left = SideTables(handle, f"{self.name}.left", self.join, True, new_sort_buffer)
        self.right = SideTables(handle, f"{self.name}.right", self.join, False, new_sort_buffer)
        self.finals = LastMarks(self._finals)

    def enter(self, shard: Row) -> None:
        """Work in the shard ``shard`` (the executor's grouping key: one, or a hash bucket
        of the equality key, see :mod:`eowc.executors.composed`)."""
        self.left.enter(shard)
        self.right.enter(shard)

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        """Add the batch's rows of both sides, then consume every row no future row can
        meet, side by side: the pairs, and the outer rows that stay unmatched."""
        if self.judges_late_rows:
            return self._judged_step(rows, after)
        made = (self.left_input.step(rows, after), self.right_input.step(rows, after))
        if self.drops_fired_windows and self.before:
            made = tuple(self._not_fired(side, fired, side_rows) for side, fired, side_rows
                         in zip((self.left, self.right), self.finals(self.before), made,
                                strict=True))
        added = (self.left.add(made[0]), self.right.add(made[1]))
        out: list[Row] = []
        for final, this, other, is_left, new in zip(self.finals(after), (self.left, self.right),
                                                    (self.right, self.left), (True, False), added,
                                                    strict=True):
            for sort_key, (key, row) in this.sort.insert_and_drain(new, final):  # steps 1, 2
                out += self._consume(this, other, is_left, sort_key, key, row)
        self.left.flush()
        self.right.flush()
        return out

    def _judged_step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        """The batch as a join that judges its input rows takes it (module documentation)."""
        before = self.before or {k: NO_WATERMARK for k in after}
        sides = (self.left, self.right)
        keeps = [no_match_can_come(side.other, before, False, self.convention, join_margin=0)
                 for side in sides]
        out: list[Row] = []
        added: tuple[list, list] = ([], [])
        for index, row in self._in_arrival_order(rows, after):
            this, other = sides[index], sides[1 - index]
            value = None if this.until is None else this.until(row)
            matched = self._meet(this, other, index == 0, row, out)
            if not keeps[index](NO_WATERMARK if value is None else value):
                [(sort_key, (key, _))] = entries = this.add([row])
                if matched and None not in key:
                    this.rows_of(key)[sort_key][1] = True
                added[index].extend(entries)
            elif this.outer and not matched:
                out.append(self._padded(row, index == 0))
        for final, this, is_left, new in zip(self.finals(after), sides, (True, False), added,
                                             strict=True):
            for sort_key, (key, row) in this.sort.insert_and_drain(new, final):
                matched = False
                if None not in key:
                    matched = this.rows_of(key).pop(sort_key)[1]
                    this.dirty.add(key)
                if this.outer and not matched:
                    out.append(self._padded(row, is_left))
        self.left.flush()
        self.right.flush()
        return out

    def _in_arrival_order(self, rows: Mapping[str, list[Row]], after: Marks
                          ) -> list[tuple[int, Row]]:
        """The batch's rows of both sides (0 left, 1 right) in arrival order: a side over a
        source row by row as ``arrived`` orders its source rows, then a side over an
        operator in its output order."""
        inputs = (self.left_input, self.right_input)
        by_row = [isinstance(i, ShardRows) or source_under_steps(i) is not None for i in inputs]
        ordered = []
        for into, row in self.arrived:
            for index, side in enumerate(inputs):
                if by_row[index]:
                    ordered += [(index, made) for made in side.step({into: [row]}, after)]
        for index, side in enumerate(inputs):
            if not by_row[index]:
                ordered += [(index, made) for made in side.step(rows, after)]
        self.arrived = []
        return ordered

    def _meet(self, this: SideTables, other: SideTables, is_left: bool, row: Row,
              out: list[Row]) -> bool:
        """A new row of ``this`` side meets the other side's kept rows of its key: the pairs
        (a SEMI join's left row at its first match) into ``out``. Whether it matched."""
        key = this.key(row)
        if None in key:
            return False
        matched = False
        condition = self.join.condition
        for partner in other.rows_of(key).values():
            joined = row + partner[0] if is_left else partner[0] + row
            if condition(joined) is not True:
                continue
            if self.kind not in ("semi", "anti"):
                out.append(joined)
            elif self.kind == "semi" and not (matched if is_left else partner[1]):
                out.append(row if is_left else partner[0])
            matched = partner[1] = True
            other.dirty.add(key)
        return matched

    def _padded(self, row: Row, is_left: bool) -> Row:
        """An outer row that met no row, NULL-padded (an ANTI join's left row as it is)."""
        if not is_left:
            return (None,) * self.join.left_width + row
        return row if self.kind == "anti" else row + (None,) * self.join.right_width

    @staticmethod
    def _not_fired(side: SideTables, fired: Callable[[Any], bool], rows: list[Row]
                   ) -> list[Row]:
        """The rows of ``rows`` whose window the join has not fired (a row without a time
        is never late)."""
        until = side.until
        if until is None:
            return rows
        return [row for row in rows if (value := until(row)) is None or not fired(value)]

    def _finals(self, after: Marks) -> tuple[Callable[[Any], bool], Callable[[Any], bool]]:
        """Per side, whether a kept row (by its ``until``) can meet no row still to come,
        under the source watermarks ``after``."""
        closed = is_closed(after)
        left, right = (no_match_can_come(side.other, after, closed, self.convention)
                       for side in (self.left, self.right))
        return left, right

    def _consume(self, this: SideTables, other: SideTables, is_left: bool,
                 sort_key: tuple[Any, int], key: Row, row: Row) -> list[Row]:
        """Steps 3 and 4 for one consumed row."""
        matched = False
        if None not in key:
            entry = this.rows_of(key).pop(sort_key)  # step 4
            this.dirty.add(key)
            matched = entry[1]
        out: list[Row] = []
        pairs, condition = self.kind not in ("semi", "anti"), self.join.condition
        if None not in key:
            reach = this.reach_of(sort_key[0])
            for (until, _), partner in other.rows_of(key).items():  # step 3
                if until > reach:
                    continue
                joined = row + partner[0] if is_left else partner[0] + row
                if condition(joined) is True:
                    matched = partner[1] = True
                    other.dirty.add(key)
                    if pairs:
                        out.append(joined)
        if is_left and self.kind == "semi":
            if matched:
                out.append(row)
        elif this.outer and not matched:
            if is_left:
                out.append(row if self.kind == "anti" else row + (None,) * self.join.right_width)
            else:
                out.append((None,) * self.join.left_width + row)
        return out
