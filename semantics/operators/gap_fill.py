"""RisingWave's GAP_FILL table function, in both modes (``docs/operators/gap_fill.md``).

``GAP_FILL(t, ts, interval, strategy(col)..., PARTITION_BY(k...))`` returns every row of
``t`` and, between two consecutive rows ``prev`` and ``next`` of a partition (ordered by
``ts``, ties by the deterministic tie-break), one *filled* row at each
``prev.ts + k * interval`` (``k >= 1``) strictly before ``next.ts``. The grid is anchored at
``prev.ts``, not aligned to multiples of ``interval``; a gap that is not a multiple of the
interval ends with a shorter step. A filled row has:

* ``ts``: its grid time; the PARTITION_BY columns: ``prev``'s;
* ``LOCF(c)``: ``prev.c`` (a NULL in ``prev`` is carried as NULL: the last row, not the last
  non-NULL value);
* ``INTERPOLATE(c)``: with ``n`` filled rows, ``step = (next.c - prev.c) / (n + 1)``, floor
  division for integers, and the k-th filled row has ``prev.c`` plus ``step`` added k times
  (so doubles accumulate the rounding of each addition, as RisingWave does); NULL if either
  end is NULL;
* ``KEEPNULL(c)`` and every unlisted column: NULL.

A row whose ``ts`` is NULL passes through and ends no gap. Under EMIT ON WINDOW CLOSE a real
row is released once its ``ts`` is complete, and the filled rows of a gap with the row that
ends it (:func:`~eowc.semantics.rules.triggers.gap_row_is_final`); a partition's last row
ends no gap, so nothing is filled after it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from operator import itemgetter
from typing import Any

from eowc.semantics.ir.expr import Row, column_index
from eowc.semantics.ir.plan import GapFill
from eowc.semantics.ir.values import SqlType, row_sort_key, sort_key
from eowc.semantics.operators.logical import Partitioned
from eowc.semantics.operators.protocol import PortClock, Stage
from eowc.semantics.rules.triggers import Convention, Watermark, gap_row_is_final


def interpolation_step(first: Any, last: Any, steps: int, sql_type: SqlType) -> Any:
    """``(last - first) / steps`` in the column's arithmetic (RisingWave's
    ``calculate_interpolation_step``): floor division for integers, exact for decimals,
    float division for doubles; None if either end is NULL."""
    if first is None or last is None:
        return None
    if isinstance(first, Decimal) or isinstance(last, Decimal):
        return (Decimal(last) - Decimal(first)) / steps
    if sql_type is SqlType.BIGINT:
        return (last - first) // steps
    return (last - first) / steps


@dataclass(frozen=True)
class CompiledGapFill:
    """A GAP_FILL bound to its input schema: ``order`` sorts a partition's rows (time, then
    the tie-break), ``partition`` gives a row's PARTITION_BY key."""

    node: GapFill
    time: Callable[[Row], Any]
    partition: Callable[[Row], Row]
    order: Callable[[Row], Any]
    #: Per output column, how a filled row gets it: "time", "partition", "locf",
    #: "interpolate" or "null".
    kinds: tuple[str, ...]
    types: tuple[SqlType, ...]

    @property
    def interval(self) -> int:
        return self.node.interval

    def filled_between(self, prev: Row, nxt: Row) -> list[Row]:
        """The filled rows of the gap between consecutive rows ``prev`` and ``nxt`` of a
        partition, in time order (none if ``nxt`` is not later than ``prev``)."""
        start, end, interval = self.time(prev), self.time(nxt), self.interval
        if start is None or end is None or end <= start:
            return []
        count = (end - start - 1) // interval  # k >= 1 with start + k * interval < end
        if count <= 0:
            return []
        steps = [interpolation_step(prev[i], nxt[i], count + 1, self.types[i])
                 if kind == "interpolate" else None for i, kind in enumerate(self.kinds)]
        current = list(prev)
        rows = []
        for k in range(1, count + 1):
            values = []
            for i, kind in enumerate(self.kinds):
                if kind == "time":
                    values.append(start + k * interval)
                elif kind in ("partition", "locf"):
                    values.append(prev[i])
                elif kind == "interpolate" and steps[i] is not None:
                    current[i] = current[i] + steps[i]
                    values.append(current[i])
                else:
                    values.append(None)
            rows.append(tuple(values))
        return rows

    def fill_partition(self, ordered: Sequence[Row]) -> list[Row]:
        """One partition's rows, in ``order``, with their gaps filled."""
        out: list[Row] = []
        prev: Row | None = None
        for row in ordered:
            if prev is not None:
                out += self.filled_between(prev, row)
            out.append(row)
            prev = row
        return out


def compile_gap_fill(node: GapFill, tie: Callable[[Row], Any]) -> CompiledGapFill:
    """``node`` bound to its input schema, ties between equal times broken by ``tie``."""
    schema = node.input.schema
    _ = node.schema  # type-check
    time_index = column_index(schema, node.time_column)
    keys = [column_index(schema, k) for k in node.partition_by]
    strategies = {column_index(schema, name): strategy for name, strategy in node.fills}
    kinds = []
    for i in range(len(schema)):
        if i == time_index:
            kinds.append("time")
        elif i in keys:
            kinds.append("partition")
        else:
            strategy = strategies.get(i, "keepnull")
            kinds.append(strategy if strategy in ("locf", "interpolate") else "null")
    time = itemgetter(time_index)
    return CompiledGapFill(node, time, lambda row: tuple(row[i] for i in keys),
                           lambda row: (sort_key(row[time_index]), tie(row)), tuple(kinds),
                           tuple(c.type for c in schema))


def gap_fill_rows(compiled: CompiledGapFill, rows: Sequence[Row]) -> list[Row]:
    """GAP_FILL over a batch (Q over INPUT): rows with a NULL time first, as they are, then
    each partition's rows in time order with their gaps filled."""
    untimed = [r for r in rows if compiled.time(r) is None]
    partitions: dict[Row, list[Row]] = {}
    for row in rows:
        if compiled.time(row) is not None:
            partitions.setdefault(compiled.partition(row), []).append(row)
    out = untimed
    for members in partitions.values():
        out += compiled.fill_partition(sorted(members, key=compiled.order))
    return out


class GapFillPartition:
    """One partition under EOWC: its rows not released yet, in order, and the last row
    released (the start of the next gap)."""

    def __init__(self) -> None:
        self.keys: list[Any] = []
        self.pending: list[Row] = []
        self.last: Row | None = None

    def add(self, compiled: CompiledGapFill, row: Row) -> None:
        key = compiled.order(row)
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.pending.insert(at, row)

    def pop_final(self, compiled: CompiledGapFill, watermark: Watermark, convention: Convention
                  ) -> list[tuple[Any, Row]]:
        """The rows final at ``watermark`` (:func:`gap_row_is_final`), each with its place
        in the output: the pending rows whose time is complete, each after the filled rows
        of the gap it ends."""
        done = 0
        out: list[tuple[Any, Row]] = []
        for key, row in zip(self.keys, self.pending, strict=True):
            t = compiled.time(row)
            if t is not None and not gap_row_is_final(t, watermark, convention):
                break
            done += 1
            filled = compiled.filled_between(self.last, row) if self.last is not None else []
            out += [((key, k), f) for k, f in enumerate(filled)]
            out.append(((key, len(filled)), row))
            if t is not None:
                self.last = row
        del self.keys[:done], self.pending[:done]
        return out


class GapFillOperator(Partitioned):
    """The EOWC GapFill (RisingWave's ``StreamEowcSort`` + ``StreamEowcGapFill``): per
    partition, rows wait until their time is complete and are then released in order, each
    after the filled rows of the gap it ends. Emitted by the anchor's order key across
    partitions. The batch result of a partition (emit on update) is :func:`gap_fill_rows`."""

    def __init__(self, compiled: CompiledGapFill, convention: Convention, below: Stage | None,
                 clock: PortClock) -> None:
        super().__init__(below, clock)
        self.compiled, self.convention = compiled, convention

    def partition(self, row: Row) -> Row:
        return self.compiled.partition(row)

    def new_partition(self) -> GapFillPartition:
        return GapFillPartition()

    def add(self, partition: GapFillPartition, row: Row) -> None:
        partition.add(self.compiled, row)

    def finals(self, key: Row, partition: GapFillPartition, watermark: Watermark
               ) -> list[tuple[Any, Row]]:
        if not partition.pending:
            return []
        part = row_sort_key(key)
        return [((order, part), row) for order, row in
                partition.pop_final(self.compiled, watermark, self.convention)]

    def results(self, key: Row, rows: list[Row]) -> list[Row]:
        return gap_fill_rows(self.compiled, rows)
