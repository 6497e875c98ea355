"""RisingWave's ASOF JOIN / ASOF LEFT JOIN on the executors, emitting on update
(:class:`~eowc.semantics.ir.plan.AsofJoin`; docs/operators/joins.md).

**State.** Per equality key, the key's left rows and its right rows (a map state keyed by
``(side, key)``), and the joined rows the key shows now. The right rows are read as an index
sorted by ``(ordered value, tie order)`` (RisingWave's per-key ordered cache): a left row's
match is found by bisection, the nearest allowed value first, then the first row of that value
in the tie order. Nothing ever leaves the state: any right row still to come may be closer to
a left row than its match, so no row is final before the input ends (RisingWave keeps every
row too). The state grows with the input; there is no bound to give.

**Per batch** (one shard, as the composed executor, so that every batch brings it each
source's progress): each row is judged late against its own source's watermark before the
batch, the kept rows of the keys the batch touches are read, each of their left rows is
matched again, and the batch's changes are the shown rows that left (``-``) and the new ones
(``+``), netted over the batch, through the stateless steps above the join.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator
from typing import Any

from eowc.executors.interface import EowcProcessor
from eowc.executors.plan import Stateless, columns_of, stateless_part
from eowc.executors.protocol import Arrival, Output, Refusal, SourceProgress, Update
from eowc.executors.state import StateHandle
from eowc.semantics.analysis.operator_inputs import stateless_nodes
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row, compile_expr
from eowc.semantics.ir.plan import ArrivalOrder, AsofJoin, Plan, Query, Scan, Source, tie_break, walk
from eowc.semantics.ir.values import format_timestamp, row_sort_key
from eowc.semantics.rules.triggers import (
    NO_WATERMARK,
    Convention,
    Watermark,
    query_watermarks,
    row_is_late,
    source_watermark,
)


def has_asof_join(query: Query) -> bool:
    """Whether ``query`` has an ASOF join."""
    return any(isinstance(n, AsofJoin) for n in walk(query.plan))


def _side(plan: Plan) -> tuple[Source, Stateless]:
    """One side of the join: its source and the stateless steps over it."""
    chain, below = stateless_nodes(plan)
    if not isinstance(below, Scan):
        raise PlanError("the ASOF join executor runs joins of two sources (with filters and "
                        "projections over each); run this query on the reference "
                        "(eowc run --mode update)")
    return below.source, stateless_part(list(reversed(chain)))


class BoundAsof:
    """The executor's own binding of an ASOF join: each side's equality key and ordered value
    of one of its rows (the join's expressions over one side's columns, the other side's
    NULL), the inequality ``left OP right``, and the right rows' tie order."""

    def __init__(self, join: AsofJoin, arrival: ArrivalOrder | None) -> None:
        left_width, right_width = len(join.left.schema), len(join.right.schema)
        schema = join.joined_schema
        self.kind, self.op = join.kind, join.op
        self.padding: Row = (None,) * right_width
        left_keys = columns_of(list(join.left_keys), schema)
        right_keys = columns_of(list(join.right_keys), schema)
        left_order = compile_expr(join.left_order, schema).evaluate
        right_order = compile_expr(join.right_order, schema).evaluate
        before = (None,) * left_width
        self.left_key = lambda row: left_keys(row + self.padding)
        self.right_key = lambda row: right_keys(before + row)
        self.left_order = lambda row: left_order(row + self.padding)
        self.right_order = lambda row: right_order(before + row)
        source = next(n.source for n in walk(join.right) if isinstance(n, Scan))
        self.tie = tie_break(join.right.schema, source, arrival)


class AsofJoinExecutor(EowcProcessor):
    """Emit on update of ``[stateless] ASOF [LEFT] JOIN`` of two sources (module docs)."""

    progress_keys: tuple[Row, ...] = ((),)  # one shard

    def __init__(self, query: Query, convention: Convention, arrival: ArrivalOrder | None = None
                 ) -> None:
        if query.emit_on_window_close:
            raise PlanError("an ASOF join emits on update only")
        above, join = stateless_nodes(query.plan)
        if not isinstance(join, AsofJoin):
            raise PlanError("the ASOF join executor runs an ASOF join with filters and "
                            "projections above it, no other operator; run this query on the "
                            "reference (eowc run --mode update)")
        self.convention = convention
        self.asof = BoundAsof(join, arrival)
        self.above = stateless_part(list(reversed(above)))
        (left_source, self.left_stage), (right_source, self.right_stage) = (
            _side(join.left), _side(join.right))
        self.left_table, self.right_table = left_source.name, right_source.name
        self._sources = tuple(dict.fromkeys((left_source, right_source)))

    @property
    def sources(self) -> tuple[Source, ...]:
        return self._sources

    def init(self, handle: StateHandle) -> None:
        super().init(handle)
        self.rows = handle.map_state("asof_rows")  # (side, key) -> rows
        self.shown = handle.map_state("asof_shown")  # key -> joined rows shown now
        self.marks = handle.value_state("asof_watermarks")  # source -> watermark

    def stateless_of(self, table: str, row: Row) -> list[Row]:
        """A source row as ``(side, row)`` for each side it feeds (both for a self-join)."""
        out: list[Row] = []
        if table == self.left_table:
            out += [(0, r) for r in self.left_stage(row)]
        if table == self.right_table:
            out += [(1, r) for r in self.right_stage(row)]
        return out

    def key_of(self, row: Row) -> Row:
        return ()

    def handle_rows(self, key: Row, arrivals: list[Any], watermark: Watermark
                    ) -> Iterator[Output]:
        marks: dict[str, Watermark] = dict(self.marks.get() or {})
        sources = {s.name: s for s in self._sources}
        touched: dict[Row, None] = {}
        added: dict[tuple[int, Row], list[Row]] = {}
        judging = query_watermarks({name: marks.get(name, NO_WATERMARK)
                                    for name, s in sources.items() if s.watermark is not None},
                                   self.convention)
        for item in arrivals:
            if isinstance(item, SourceProgress):
                continue
            assert isinstance(item, Arrival)
            side, row = item.row
            table = self.left_table if side == 0 else self.right_table
            mark = judging.get(table, NO_WATERMARK)
            if sources[table].watermark is not None and row_is_late(item.time, mark,
                                                                    self.convention):
                yield Refusal(item.seq, item.fanout, f"event time {format_timestamp(item.time)} is "
                              f"late at the watermark {format_timestamp(mark)} of {table}")
                continue
            join_key = (self.asof.left_key if side == 0 else self.asof.right_key)(row)
            added.setdefault((side, join_key), []).append(row)
            touched[join_key] = None
        for item in arrivals:
            if isinstance(item, SourceProgress):
                declared = sources[item.table].watermark
                if declared is not None:
                    mark = source_watermark(item.time, declared.delay, self.convention)
                    marks[item.table] = max(marks.get(item.table, NO_WATERMARK), mark)
        self.marks.update(marks)
        for state_key, rows in added.items():
            self.rows.put(state_key, (self.rows.get(state_key) or []) + rows)
        delta: Counter[Row] = Counter()
        for join_key in touched:
            old = self.shown.get(join_key) or []
            new = self.joined(join_key)
            self.shown.put(join_key, new)
            delta.update(self.outputs(new))
            delta.subtract(self.outputs(old))
        yield from self.revisions(delta)

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        return iter(())

    def joined(self, join_key: Row) -> list[Row]:
        """The joined rows of one key now: each left row with its match, or NULL-padded."""
        lefts = self.rows.get((0, join_key)) or []
        rights = self.rows.get((1, join_key)) or []
        order, tie = self.asof.right_order, self.asof.tie
        index = sorted(((order(r), tie(r), r) for r in rights if order(r) is not None),
                       key=lambda entry: (entry[0], entry[1]))
        values = [entry[0] for entry in index]
        out = []
        for row in lefts:
            at = None if None in join_key else self.choose(values, self.asof.left_order(row))
            if at is not None:
                out.append(row + index[at][2])
            elif self.asof.kind == "left":
                out.append(row + self.asof.padding)
        return out

    def choose(self, values: list[Any], value: Any) -> int | None:
        """The position in ``values`` (sorted) of the match of a left row whose ordered value
        is ``value``: the nearest allowed value, the first of its equal values (the tie
        order); None if no value is allowed."""
        if value is None or not values:
            return None
        op = self.asof.op
        if op in ("<", "<="):  # the least value above (or at) the left row's
            at = (bisect.bisect_right if op == "<" else bisect.bisect_left)(values, value)
            return at if at < len(values) else None
        last = (bisect.bisect_left if op == ">" else bisect.bisect_right)(values, value) - 1
        if last < 0:
            return None
        return bisect.bisect_left(values, values[last])  # the first row of that value

    def outputs(self, joined: list[Row]) -> list[Row]:
        """Joined rows through the stateless steps above the join."""
        return [out for row in joined for out in self.above(row)]

    def revisions(self, delta: Counter[Row]) -> Iterator[Update]:
        """The batch's changes: the rows that left, then the new ones, each in row order."""
        for row, n in sorted(delta.items(), key=lambda item: row_sort_key(item[0])):
            if n < 0:
                for _ in range(-n):
                    yield Update("-", row, (0, row_sort_key(row)))
            elif n > 0:
                for _ in range(n):
                    yield Update("+", row, (1, row_sort_key(row)))


def asof_join_processor(query: Query, convention: Convention, arrival: ArrivalOrder | None = None
                        ) -> EowcProcessor | None:
    """The ASOF join executor for a query with an ASOF join (ties among equal right values
    broken by ``arrival`` when given), else None."""
    return AsofJoinExecutor(query, convention, arrival) if has_asof_join(query) else None


#: What the module offers.
__all__: list[str] = ["AsofJoinExecutor", "asof_join_processor", "has_asof_join"]
