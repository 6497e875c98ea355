"""The logical plan: plain, immutable dataclasses that the SQL front end builds and the
interpreter evaluates. A plan can be written directly in Python too::

    bids = Source("bids", (Column("auction", BIGINT), Column("price", BIGINT),
                           Column("ts", TIMESTAMP)), WatermarkDecl("ts", 5 * SECOND))
    plan = Aggregate(WindowTVF(Scan(bids), "ts", WindowSpec(WindowKind.TUMBLE, 10 * SECOND)),
                     group_by=(("window_start", ColumnRef("window_start")),),
                     calls=(AggCall("count", name="n"),))
    query = Query(plan, emit_on_window_close=True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .errors import PlanError
from .expr import Column, Expr, Row, Schema, column_index, compile_expr
from .values import SqlType, row_sort_key
from .windows import WindowSpec


@dataclass(frozen=True)
class WatermarkDecl:
    """``WATERMARK FOR column AS column - INTERVAL delay`` (delay in microseconds)."""

    column: str
    delay: int


@dataclass(frozen=True)
class Source:
    """A named input relation (``CREATE SOURCE`` / ``CREATE TABLE``)."""

    name: str
    columns: Schema
    watermark: WatermarkDecl | None = None
    primary_key: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if self.watermark is not None:
            index = column_index(self.columns, self.watermark.column)
            if self.columns[index].type is not SqlType.TIMESTAMP:
                raise PlanError(f"watermark column {self.name}.{self.watermark.column} "
                                f"must be a TIMESTAMP")
        for key in self.primary_key:
            if key not in names:
                raise PlanError(f"primary key column {key!r} is not a column of {self.name}")

    @property
    def event_time_index(self) -> int | None:
        """Position of the watermark column, if the source declares one."""
        if self.watermark is None:
            return None
        return column_index(self.columns, self.watermark.column)

    @property
    def tie_break_indexes(self) -> tuple[int, ...]:
        """Columns that order rows with equal event time: the primary key, else the row."""
        if self.primary_key:
            return tuple(column_index(self.columns, k) for k in self.primary_key)
        return tuple(range(len(self.columns)))


def tie_break(schema: Schema, source: Source) -> Callable[[Row], Any]:
    """The deterministic total order on rows of ``schema`` with equal order keys
    (SEMANTICS.md §2): the source's primary key columns that ``schema`` still has, then the
    whole row. Never arrival order."""
    names = [c.name for c in schema]
    pk = [names.index(k) for k in source.primary_key if k in names]
    if not pk:
        return row_sort_key
    return lambda row: row_sort_key(tuple(row[i] for i in pk)) + row_sort_key(row)


class Plan:
    """A node of the logical plan; ``schema`` is its output schema."""

    @property
    def schema(self) -> Schema:  # pragma: no cover - every node overrides
        raise NotImplementedError

    @property
    def children(self) -> tuple[Plan, ...]:
        return ()


@dataclass(frozen=True)
class Scan(Plan):
    source: Source

    @property
    def schema(self) -> Schema:
        return self.source.columns


@dataclass(frozen=True)
class Filter(Plan):
    input: Plan
    predicate: Expr

    @cached_property
    def schema(self) -> Schema:
        compiled = compile_expr(self.predicate, self.input.schema)
        if compiled.type not in (SqlType.BOOLEAN, SqlType.NULL):
            raise PlanError(f"a filter condition must be BOOLEAN, got {compiled.type.value}")
        return self.input.schema

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


@dataclass(frozen=True)
class Project(Plan):
    input: Plan
    items: tuple[tuple[str, Expr], ...]

    @cached_property
    def schema(self) -> Schema:
        return tuple(Column(name, compile_expr(e, self.input.schema).type)
                     for name, e in self.items)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: Columns a window TVF appends to its input.
WINDOW_COLUMNS = ("window_start", "window_end", "window_time")


@dataclass(frozen=True)
class WindowTVF(Plan):
    """TUMBLE, HOP or CUMULATE over ``time_column``: one output row per (row, window)."""

    input: Plan
    time_column: str
    spec: WindowSpec

    @cached_property
    def schema(self) -> Schema:
        index = column_index(self.input.schema, self.time_column)
        if self.input.schema[index].type is not SqlType.TIMESTAMP:
            raise PlanError(f"{self.spec.kind.value} needs a TIMESTAMP time column, "
                            f"{self.time_column} is {self.input.schema[index].type.value}")
        clash = {c.name for c in self.input.schema} & set(WINDOW_COLUMNS)
        if clash:
            raise PlanError(f"{self.spec.kind.value} input already has column(s) {sorted(clash)}")
        return self.input.schema + tuple(Column(n, SqlType.TIMESTAMP) for n in WINDOW_COLUMNS)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


@dataclass(frozen=True)
class SessionTVF(Plan):
    """SESSION over ``time_column`` with ``gap``, per ``partition_by`` key (seed 004): the rows
    of a key whose times are less than ``gap`` apart form one session ``[first, last + gap)``;
    every row gets its session's window_start, window_end and window_time (end - 1 ms).
    Unlike the other TVFs a row's window depends on the other rows: a row can merge two
    sessions."""

    input: Plan
    time_column: str
    gap: int
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.gap <= 0:
            raise PlanError("a SESSION gap must be positive")

    @cached_property
    def schema(self) -> Schema:
        index = column_index(self.input.schema, self.time_column)
        if self.input.schema[index].type is not SqlType.TIMESTAMP:
            raise PlanError(f"SESSION needs a TIMESTAMP time column, {self.time_column} is "
                            f"{self.input.schema[index].type.value}")
        for name in self.partition_by:
            column_index(self.input.schema, name)
        clash = {c.name for c in self.input.schema} & set(WINDOW_COLUMNS)
        if clash:
            raise PlanError(f"SESSION input already has column(s) {sorted(clash)}")
        return self.input.schema + tuple(Column(n, SqlType.TIMESTAMP) for n in WINDOW_COLUMNS)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: Aggregate functions of the SQL subset.
AGGREGATE_FUNCTIONS = ("count", "sum", "min", "max", "avg", "first_value", "last_value",
                       "median", "percentile_cont")


@dataclass(frozen=True)
class AggCall:
    """One aggregate: ``function(argument)``; ``argument`` None means ``count(*)``.

    ``order_by`` orders first_value/last_value (default: the source's event time);
    ``fraction`` is percentile_cont's fraction.
    """

    function: str
    argument: Expr | None = None
    distinct: bool = False
    order_by: Expr | None = None
    fraction: float | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.function not in AGGREGATE_FUNCTIONS:
            raise PlanError(f"unsupported aggregate {self.function}")
        if self.argument is None and self.function != "count":
            raise PlanError(f"{self.function} needs an argument")


@dataclass(frozen=True)
class Aggregate(Plan):
    """GROUP BY ``group_by`` computing ``calls``; output is the keys, then the aggregates."""

    input: Plan
    group_by: tuple[tuple[str, Expr], ...]
    calls: tuple[AggCall, ...]

    @cached_property
    def schema(self) -> Schema:
        from .aggregates import result_type

        keys = tuple(Column(n, compile_expr(e, self.input.schema).type) for n, e in self.group_by)
        return keys + tuple(Column(c.name, result_type(c, self.input.schema)) for c in self.calls)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: Kinds of :class:`Join`.
JOIN_KINDS = ("inner", "left", "right", "full")


@dataclass(frozen=True)
class Join(Plan):
    """``left [kind] JOIN right ON condition``: the left columns, then the right ones. A
    column name both sides have is qualified by its side's alias (``l.ts``, ``r.ts``) in the
    output and in ``condition``."""

    left: Plan
    right: Plan
    kind: str
    condition: Expr
    left_alias: str
    right_alias: str

    def __post_init__(self) -> None:
        if self.kind not in JOIN_KINDS:
            raise PlanError(f"unsupported join kind {self.kind}")

    @cached_property
    def sides(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The output names of the left and of the right columns."""
        left = [c.name for c in self.left.schema]
        right = [c.name for c in self.right.schema]
        both = set(left) & set(right)
        return (tuple(f"{self.left_alias}.{n}" if n in both else n for n in left),
                tuple(f"{self.right_alias}.{n}" if n in both else n for n in right))

    @cached_property
    def schema(self) -> Schema:
        left, right = self.sides
        columns = tuple(Column(n, c.type) for n, c in zip(left, self.left.schema, strict=True)) + \
            tuple(Column(n, c.type) for n, c in zip(right, self.right.schema, strict=True))
        compiled = compile_expr(self.condition, columns)
        if compiled.type not in (SqlType.BOOLEAN, SqlType.NULL):
            raise PlanError(f"a join condition must be BOOLEAN, got {compiled.type.value}")
        return columns

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Union(Plan):
    """``UNION ALL``: the rows of every input, columns matched by position and named as the
    first input's."""

    inputs: tuple[Plan, ...]

    @cached_property
    def schema(self) -> Schema:
        first = self.inputs[0].schema
        for other in self.inputs[1:]:
            if len(other.schema) != len(first) or any(
                    a.type is not b.type and SqlType.NULL not in (a.type, b.type)
                    for a, b in zip(first, other.schema, strict=True)):
                raise PlanError("UNION ALL inputs must have the same column types, got "
                                f"({', '.join(c.type.value for c in first)}) and "
                                f"({', '.join(c.type.value for c in other.schema)})")
        return first

    @property
    def children(self) -> tuple[Plan, ...]:
        return self.inputs


#: Window functions an OVER clause may call (besides the aggregates).
WINDOW_FUNCTIONS = ("row_number", "rank", "dense_rank", "lag", "lead", "first_value",
                    "last_value")


@dataclass(frozen=True)
class Frame:
    """The rows of a partition a window function reads, around the current row: ``ROWS``
    (``start`` and ``end`` count rows) or ``RANGE`` (they are offsets of the ORDER BY value).
    A bound is negative for PRECEDING, 0 for CURRENT ROW, positive for FOLLOWING, None for
    UNBOUNDED (PRECEDING as ``start``, FOLLOWING as ``end``). ``RANGE`` with CURRENT ROW
    includes the row's peers (equal ORDER BY values)."""

    kind: str = "range"
    start: int | None = None
    end: int | None = 0

    def __post_init__(self) -> None:
        if self.kind not in ("rows", "range"):
            raise PlanError(f"unknown frame kind {self.kind}")
        if self.start is not None and self.end is not None and self.start > self.end:
            raise PlanError(f"frame starts after it ends: {self.sql()}")

    def sql(self) -> str:
        def bound(offset: int | None, unbounded: str) -> str:
            if offset is None:
                return f"UNBOUNDED {unbounded}"
            if offset == 0:
                return "CURRENT ROW"
            amount = abs(offset) if self.kind == "rows" else f"INTERVAL '{abs(offset)}' MICROSECOND"
            return f"{amount} {'PRECEDING' if offset < 0 else 'FOLLOWING'}"
        return (f"{self.kind.upper()} BETWEEN {bound(self.start, 'PRECEDING')} AND "
                f"{bound(self.end, 'FOLLOWING')}")


#: The frame of an OVER clause with ORDER BY and no frame clause (PostgreSQL, RisingWave):
#: from the partition's first row to the current row and its peers.
DEFAULT_FRAME = Frame("range", None, 0)
#: Functions that read no frame: they look at the row's position in its partition.
POSITIONAL_FUNCTIONS = ("row_number", "rank", "dense_rank", "lag", "lead")


@dataclass(frozen=True)
class WindowCall:
    """One window function of an OVER clause: ``function(args) OVER (... frame)`` named
    ``name``. ``lag``/``lead`` take ``(value, offset = 1, default = NULL)``."""

    name: str
    function: str
    args: tuple[Expr, ...] = ()
    frame: Frame = DEFAULT_FRAME


@dataclass(frozen=True)
class OverWindow(Plan):
    """``f(...) OVER (PARTITION BY partition_by ORDER BY order_by)``: every input row, with
    one more column per call. ``order_by`` holds (expression, descending) pairs."""

    input: Plan
    partition_by: tuple[Expr, ...]
    order_by: tuple[tuple[Expr, bool], ...]
    calls: tuple[WindowCall, ...]

    @cached_property
    def schema(self) -> Schema:
        schema = self.input.schema
        for expr in (*self.partition_by, *(e for e, _ in self.order_by)):
            compile_expr(expr, schema)

        def result(call: WindowCall) -> SqlType:
            from .aggregates import result_type

            if call.function in ("row_number", "rank", "dense_rank"):
                return SqlType.BIGINT
            if call.function in ("lag", "lead"):
                if not 1 <= len(call.args) <= 3:
                    raise PlanError(f"{call.function} takes (value [, offset [, default]])")
                offset = call.args[1] if len(call.args) > 1 else None
                if offset is not None and not (isinstance(getattr(offset, "value", None), int)
                                               and offset.value >= 0):  # type: ignore[attr-defined]
                    raise PlanError(f"{call.function}'s offset must be a constant >= 0")
                return compile_expr(call.args[0], schema).type
            if call.function in ("first_value", "last_value"):
                if len(call.args) != 1:
                    raise PlanError(f"{call.function} takes one argument")
                return compile_expr(call.args[0], schema).type
            return result_type(aggregate_call(call), schema)
        if any(c.frame.kind == "range" and c.frame != DEFAULT_FRAME and c.function not in
               POSITIONAL_FUNCTIONS for c in self.calls) and len(self.order_by) != 1:
            raise PlanError("a RANGE frame with an offset needs exactly one ORDER BY column")
        return schema + tuple(Column(c.name, result(c)) for c in self.calls)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


def aggregate_call(call: WindowCall) -> AggCall:
    """An aggregate window function as the :class:`AggCall` it folds over its frame."""
    if call.function not in AGGREGATE_FUNCTIONS:
        raise PlanError(f"unsupported window function {call.function}")
    if len(call.args) > 1:
        raise PlanError(f"{call.function} takes one argument")
    return AggCall(call.function, call.args[0] if call.args else None, name=call.name)


@dataclass(frozen=True)
class TopN(Plan):
    """The first ``limit`` rows of each partition in ``order_by`` order (``ROW_NUMBER() OVER
    (PARTITION BY ... ORDER BY ...) <= limit``): the input columns, then ``rank_column``."""

    input: Plan
    partition_by: tuple[Expr, ...]
    order_by: tuple[tuple[Expr, bool], ...]
    limit: int
    rank_column: str

    @cached_property
    def schema(self) -> Schema:
        for expr in (*self.partition_by, *(e for e, _ in self.order_by)):
            compile_expr(expr, self.input.schema)
        return self.input.schema + (Column(self.rank_column, SqlType.BIGINT),)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


@dataclass(frozen=True)
class Query:
    """A query plan with its emit mode (``EMIT ON WINDOW CLOSE`` or emit on update)."""

    plan: Plan
    emit_on_window_close: bool = False
    name: str | None = None
    sources: tuple[Source, ...] = field(default=())

    @property
    def schema(self) -> Schema:
        return self.plan.schema

    @property
    def source(self) -> Source:
        """The one source this query reads (joins and unions come with a later issue)."""
        scans = [n for n in walk(self.plan) if isinstance(n, Scan)]
        if len(scans) != 1:
            raise PlanError("the query reads more than one source: joins and unions are not "
                            "executed by the interpreter yet (eowc explain and eowc prove "
                            "analyse them)")
        return scans[0].source


def walk(plan: Plan) -> list[Plan]:
    """The plan's nodes, root first."""
    nodes = [plan]
    for child in plan.children:
        nodes.extend(walk(child))
    return nodes
