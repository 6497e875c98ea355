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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import (
    Column,
    ColumnRef,
    Evaluator,
    Expr,
    Literal,
    Row,
    Schema,
    column_index,
    compile_expr,
    sql_of,
)
from eowc.semantics.ir.values import ArrayType, SqlType, ValueRules, row_sort_key, value_rules
from eowc.semantics.ir.windows import WindowSpec


@dataclass(frozen=True)
class WatermarkDecl:
    """``WATERMARK FOR column AS column - INTERVAL delay`` (delay in microseconds)."""

    column: str
    delay: int


def computed_columns(carried: Schema, computed: tuple[tuple[str, Expr], ...]) -> Schema:
    """The columns ``computed`` (``name AS expr``) adds to rows of ``carried``: each named,
    typed as its expression over the carried columns; PlanError for an expression that does
    not type over them (a computed column reads carried columns only, as in Flink)."""
    return tuple(Column(name, compile_expr(expr, carried).type) for name, expr in computed)


@dataclass(frozen=True)
class Source:
    """A named input relation (``CREATE SOURCE`` / ``CREATE TABLE``). Its rows are
    ``columns``: first the columns an event carries (:attr:`carried`), then its computed
    columns (Flink's ``name AS expr`` over the carried ones), which take their values when
    the row arrives (:meth:`arrived`), as in Flink's source: a watermark may be declared on
    one. ``processing_time`` names its ``PROCTIME()`` columns, which are in no row: a query
    may not read them, and an event may not give them."""

    name: str
    columns: Schema
    watermark: WatermarkDecl | None = None
    primary_key: tuple[str, ...] = ()
    computed: tuple[tuple[str, Expr], ...] = ()
    processing_time: tuple[str, ...] = ()
    #: A derived source's plan (the output of a join, a union or an operator, read by the
    #: operator above it): what its rows' arrival is traced through (:class:`ArrivalOrder`).
    derived_from: Plan | None = None

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if self.computed and computed_columns(self.carried, self.computed) != \
                self.columns[len(self.carried):]:
            raise PlanError(f"the last columns of {self.name} must be its computed columns "
                            f"({', '.join(name for name, _ in self.computed)}), typed as their "
                            f"expressions")
        if self.watermark is not None:
            index = column_index(self.columns, self.watermark.column)
            if not self.columns[index].type.is_time:
                raise PlanError(f"watermark column {self.name}.{self.watermark.column} "
                                f"must be a TIMESTAMP (or TIMESTAMPTZ, TIMESTAMP_LTZ)")
        for key in self.primary_key:
            if key not in names:
                raise PlanError(f"primary key column {key!r} is not a column of {self.name}")

    def __getstate__(self) -> dict[str, Any]:
        """The fields, without the compiled computed columns (functions do not pickle)."""
        return {k: v for k, v in self.__dict__.items() if k != "_computers"}

    @property
    def carried(self) -> Schema:
        """The columns an event of this source gives: its row but the computed columns."""
        return self.columns[:len(self.columns) - len(self.computed)]

    @cached_property
    def _computers(self) -> dict[ValueRules, tuple[Evaluator, ...]]:
        return {}

    def arrived(self, carried: Row) -> Row:
        """The row an event carrying ``carried`` (values of :attr:`carried`) becomes: those
        values, then each computed column evaluated over them, under the value rules in
        force (:func:`~eowc.semantics.ir.values.computing_under`). ValueError names a
        computed column whose value cannot be computed (the row is bad input)."""
        if not self.computed:
            return carried
        rules = value_rules()
        computers = self._computers.get(rules)
        if computers is None:
            computers = tuple(compile_expr(expr, self.carried).evaluate for _, expr in self.computed)
            self._computers[rules] = computers
        values = list(carried)
        for (name, _), compute in zip(self.computed, computers, strict=True):
            try:
                values.append(compute(carried))
            except (ValueError, ArithmeticError) as error:
                raise ValueError(f"computed column {self.name}.{name}: {error}") from None
        return tuple(values)

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


#: How rows with equal ORDER BY values are ordered (``--ties``): ``deterministic``, the
#: total order on whole rows of :func:`tie_break` (SEMANTICS.md §2); ``row-id``, their order
#: of arrival, as RisingWave's hidden ``_row_id`` (its stream key of an append-only table
#: without a primary key) orders them.
TIES = ("deterministic", "row-id")


#: The arrival position of a row not in the input (after every row that is).
NEVER_ARRIVED = 2**62


class ArrivalOrder:
    """The position at which each row of each source first arrived (in the whole input, from
    0): what RisingWave's ``_row_id`` records. Rows are told apart by their values: rows
    equal in every column share the first one's position, so a row that arrives between two
    equal rows is ordered after both (RisingWave's ``_row_id`` would put it between them).

    A row of a *derived source* (``Source.derived_from``: the output of a join, a union or
    an operator) is ordered by its **stream key**, as RisingWave orders it: the stream keys of
    the source rows it is made of (:func:`row_lineage`), left before right: a join's row by
    (its left row's position, its right row's), lexicographically, a NULL-padded side after
    every row (:data:`NEVER_ARRIVED`, NULLS LAST); a row of a UNION ALL by its input row's;
    a row an OVER window or a TopN passes on by its own; a source row with a primary key by
    that key (RisingWave's stream key of such a table). An aggregate's row has no source row
    (its stream key is its group key): the deterministic order alone breaks its ties."""

    def __init__(self, events: Iterable[tuple[str, Row]]) -> None:
        self.positions: dict[str, dict[Row, int]] = {}
        for position, (table, row) in enumerate(events):
            self.positions.setdefault(table, {}).setdefault(row, position)
        self._of: dict[tuple[Source, Schema], Callable[[Row], Any] | None] = {}

    def of(self, source: Source, schema: Schema) -> Callable[[Row], Any] | None:
        """The arrival position of a row of ``schema`` made from a row of ``source``: that of
        the first source row that agrees with it on the source's columns ``schema`` still
        has (by name; rows that agree on all of them are interchangeable in its results), or
        None when ``schema`` has none of them (an aggregate's output). Over a derived source,
        the tuple of its source rows' stream keys (the class documentation)."""
        if (source, schema) not in self._of:
            self._of[source, schema] = self._derived(source, schema) \
                if source.derived_from is not None else self._position(source, schema)
        return self._of[source, schema]

    def _position(self, source: Source, schema: Schema) -> Callable[[Row], int] | None:
        names = [c.name for c in schema]
        kept = [(names.index(c.name), i) for i, c in enumerate(source.columns) if c.name in names]
        if source.name not in self.positions or not kept:
            return None
        positions: dict[Row, int] = {}
        for row, position in self.positions[source.name].items():
            positions.setdefault(tuple(row[i] for _, i in kept), position)
        return lambda row: positions.get(tuple(row[j] for j, _ in kept), NEVER_ARRIVED)

    def _derived(self, source: Source, schema: Schema) -> Callable[[Row], Any] | None:
        """The stream key of a row of ``schema`` read over the derived ``source``: per
        alternative of :func:`row_lineage` (a union's inputs) the tuple of its source rows'
        keys; the least of them (the alternative the row came from: the others find no
        row)."""
        assert source.derived_from is not None
        names = [c.name for c in schema]
        at = {i: names.index(c.name) for i, c in enumerate(source.columns) if c.name in names}
        alternatives = []
        for lineage in row_lineage(source.derived_from):
            keys = [self._source_key(origin, [(at[out], col) for out, col in columns if out in at])
                    for origin, columns in lineage]
            keys = [k for k in keys if k is not None]
            if keys:
                alternatives.append(keys)
        if not alternatives:
            return None
        if len(alternatives) == 1:
            (only,) = alternatives
            return lambda row: tuple(key(row) for key in only)
        return lambda row: min(tuple(key(row) for key in keys) for keys in alternatives)

    def _source_key(self, origin: Source, columns: list[tuple[int, int]]
                    ) -> Callable[[Row], Any] | None:
        """The stream key of ``origin``'s row inside a row (``columns``: the row's column and
        the source's, for the source columns the row still has): ``(1, primary key)`` for a
        source with one (None if the row lost part of it), else ``(0, arrival position)``."""
        if origin.primary_key:
            names = [c.name for c in origin.columns]
            at = dict((col, out) for out, col in columns)
            pk = [at.get(names.index(k)) for k in origin.primary_key]
            if any(i is None for i in pk):
                return None
            return lambda row: (1, row_sort_key(tuple(row[i] for i in pk)))  # type: ignore[index]
        if not columns:
            return None
        positions: dict[Row, int] = {}
        for source_row, position in self.positions.get(origin.name, {}).items():
            positions.setdefault(tuple(source_row[col] for _, col in columns), position)
        return lambda row: (0, positions.get(tuple(row[out] for out, _ in columns), NEVER_ARRIVED))


class EveryArrival:
    """Every position at which a row of a source arrived (in the whole input, from 0, in
    order), for an operator that takes its inputs' rows in arrival order (Flink's interval
    join, :func:`~eowc.semantics.analysis.operator_inputs.join_judges_late_rows`). Unlike
    :class:`ArrivalOrder`, rows equal in every column keep their own positions: the k-th
    time an input sees a row is its k-th arrival."""

    def __init__(self, events: Iterable[tuple[str, Row]]) -> None:
        self.positions: dict[str, dict[Row, list[int]]] = {}
        for position, (table, row) in enumerate(events):
            self.positions.setdefault(table, {}).setdefault(row, []).append(position)

    def of(self, source: Source, schema: Schema) -> Callable[[Row], list[int]] | None:
        """The positions, in order, of the source rows a row of ``schema`` made from a row
        of ``source`` agrees with on the source's columns ``schema`` still has (a window
        TVF's rows of one source row share its positions); None when it has none of them."""
        names = [c.name for c in schema]
        kept = [(names.index(c.name), i) for i, c in enumerate(source.columns) if c.name in names]
        if not kept:
            return None
        by: dict[Row, list[int]] = {}
        for row, positions in self.positions.get(source.name, {}).items():
            by.setdefault(tuple(row[i] for _, i in kept), []).extend(positions)
        for positions in by.values():
            positions.sort()
        return lambda row: by.get(tuple(row[j] for j, _ in kept), [])


#: A row's origin in a plan: per source row it is made of, the source and the pairs (the
#: plan's column, the source's column) of the source columns it still has.
Lineage = tuple[tuple[Source, tuple[tuple[int, int], ...]], ...]


def row_lineage(plan: Plan) -> tuple[Lineage, ...]:
    """Where a row of ``plan`` comes from, as the alternatives a row may have been made by
    (one per input of a UNION ALL, else one): a Scan's row is its source row; a filter, a
    window TVF, an OVER window and a TopN pass their input row on (their columns first); a
    projection (with or without unnest items) keeps the columns it selects as they are (the
    rows an unnest makes from one row share its origin); a join's row is its left row's
    and its right row's (a SEMI or ANTI join's, its left row's). An aggregate, GAP_FILL or
    MATCH_RECOGNIZE makes new rows: none. A derived source's rows are traced through its
    plan."""
    if isinstance(plan, Scan):
        if plan.source.derived_from is not None:
            return row_lineage(plan.source.derived_from)
        everything = tuple((i, i) for i in range(len(plan.source.columns)))
        return (((plan.source, everything),),)
    if isinstance(plan, Union):
        return tuple(lineage for p in plan.inputs for lineage in row_lineage(p))
    if isinstance(plan, Join):
        width = len(plan.left.schema)
        rights = row_lineage(plan.right) if plan.kind not in ("semi", "anti") else ((),)
        return tuple(left + tuple((origin, tuple((out + width, col) for out, col in columns))
                                  for origin, columns in right)
                     for left in row_lineage(plan.left) for right in rights)
    if isinstance(plan, Project | ProjectSet):
        picks = [(j, column_index(plan.input.schema, e.name)) for j, (_, e) in enumerate(plan.items)
                 if isinstance(e, ColumnRef)]
        return tuple(tuple((origin, tuple((j, col) for j, i in picks for out, col in columns
                                          if out == i))
                           for origin, columns in lineage)
                     for lineage in row_lineage(plan.input))
    if isinstance(plan, Filter | WindowTVF | SessionTVF | CountTVF | OverWindow | TopN):
        return row_lineage(plan.input)
    return ()


def arrival_ties(events: Iterable[tuple[str, Row]], ties: str) -> ArrivalOrder | None:
    """What breaks ties under ``ties`` (:data:`TIES`) for an input of ``events`` (table, row)
    in arrival order: their :class:`ArrivalOrder` for ``row-id``, None for the deterministic
    order."""
    if ties not in TIES:
        raise PlanError(f"unknown tie order {ties!r}: use {' or '.join(TIES)}")
    return ArrivalOrder(events) if ties == "row-id" else None


def tie_break(schema: Schema, source: Source, arrival: ArrivalOrder | None = None,
              latest_first: bool = False) -> Callable[[Row], Any]:
    """The order of rows of ``schema`` with equal order keys (SEMANTICS.md §2). By default
    (``--ties deterministic``) a total order never depending on arrival: the source's
    primary key columns that ``schema`` still has, then the whole row. With ``arrival``
    (``--ties row-id``) the rows' arrival positions (:meth:`ArrivalOrder.of`) come first for
    a source without a primary key (RisingWave's stream key is the primary key where there is
    one, its ``_row_id`` where not), where ``schema`` still has columns of the source (else
    the deterministic order alone); ``latest_first`` puts the last of them to arrive first
    (Flink's deduplication keeping the last row:
    :func:`~eowc.semantics.analysis.completion.ties_to_latest_arrival`)."""
    names = [c.name for c in schema]
    pk = [names.index(k) for k in source.primary_key if k in names]
    position = None if arrival is None or source.primary_key else arrival.of(source, schema)
    if position is not None and latest_first:
        return lambda row: (-position(row), row_sort_key(row))
    if position is not None:
        return lambda row: (position(row), row_sort_key(row))
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


def _projected(name: str, expr: Expr, schema: Schema) -> Column:
    """The output column ``name`` of ``expr``: a column read as it is keeps its declared
    ``DECIMAL(p, s)`` (``docs/sql/types.md``)."""
    column_type = compile_expr(expr, schema).type
    if isinstance(expr, ColumnRef):
        return replace(schema[column_index(schema, expr.name)], name=name)
    return Column(name, column_type)


@dataclass(frozen=True)
class Project(Plan):
    input: Plan
    items: tuple[tuple[str, Expr], ...]

    @cached_property
    def schema(self) -> Schema:
        return tuple(_projected(name, e, self.input.schema) for name, e in self.items)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


@dataclass(frozen=True, repr=False)
class Unnest(Expr):
    """``unnest(array)``, a set-returning item of a :class:`ProjectSet`: one value per element
    of the array (no value for an empty or NULL array)."""

    array: Expr

    def __repr__(self) -> str:
        return f"unnest({sql_of(self.array)})"


@dataclass(frozen=True)
class ProjectSet(Plan):
    """A SELECT list with ``unnest`` items (RisingWave's ProjectSet, PostgreSQL's set-returning
    functions in the select list): each input row gives ``n`` rows, ``n`` the length of its
    longest unnested array (a NULL array has none); the ``i``-th holds every unnest item's
    ``i``-th element (NULL past the end of a shorter array) and the other items' values,
    repeated. A row whose arrays are all empty or NULL gives no row. Stateless: it passes a
    watermark on a repeated column."""

    input: Plan
    items: tuple[tuple[str, Expr], ...]

    def __post_init__(self) -> None:
        if not any(isinstance(e, Unnest) for _, e in self.items):
            raise PlanError("a ProjectSet needs an unnest item (else it is a Project)")

    @cached_property
    def schema(self) -> Schema:
        columns = []
        for name, e in self.items:
            compiled = compile_expr(e.array if isinstance(e, Unnest) else e, self.input.schema)
            if isinstance(e, Unnest):
                if not isinstance(compiled.type, ArrayType):
                    raise PlanError(f"unnest takes an ARRAY, got {compiled.type.value} "
                                    f"({sql_of(e.array)})")
                columns.append(Column(name, compiled.type.element))
            else:
                columns.append(Column(name, compiled.type))
        return tuple(columns)

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
        if not self.input.schema[index].type.is_time:
            raise PlanError(f"{self.spec.kind.value} needs a TIMESTAMP time column, "
                            f"{self.time_column} is {self.input.schema[index].type.value}")
        clash = {c.name for c in self.input.schema} & set(WINDOW_COLUMNS)
        if clash:
            raise PlanError(f"{self.spec.kind.value} input already has column(s) {sorted(clash)}")
        return self.input.schema + tuple(Column(n, self.input.schema[index].type)
                                         for n in WINDOW_COLUMNS)

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
        if not self.input.schema[index].type.is_time:
            raise PlanError(f"SESSION needs a TIMESTAMP time column, {self.time_column} is "
                            f"{self.input.schema[index].type.value}")
        for name in self.partition_by:
            column_index(self.input.schema, name)
        clash = {c.name for c in self.input.schema} & set(WINDOW_COLUMNS)
        if clash:
            raise PlanError(f"SESSION input already has column(s) {sorted(clash)}")
        return self.input.schema + tuple(Column(n, self.input.schema[index].type)
                                         for n in WINDOW_COLUMNS)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: Columns a count window TVF appends to its input.
COUNT_WINDOW_COLUMNS = ("window_start", "window_end", "window_ordinal")


@dataclass(frozen=True)
class CountTVF(Plan):
    """COUNT_TUMBLE / COUNT_HOP (seed 003's tuple-based windows): per ``partition_by`` key, the
    rows in ``time_column`` order (ties broken by :func:`tie_break`, never arrival order) are
    numbered 1, 2, ...; window ``k`` (``window_ordinal``, from 1) holds the rows numbered
    ``(k - 1) * slide + 1`` to ``(k - 1) * slide + size``. Only *full* windows exist: a row is
    in a window only once the window has all its ``size`` rows (as Flink's countWindow, no
    partial window is ever emitted). Every output row is an input row with its window's
    ``window_start`` and ``window_end`` (the times of its first and of its last row, both
    inside the window, unlike a time window's exclusive end) and ``window_ordinal``. A
    COUNT_TUMBLE has ``slide == size``. Like SESSION, a row's window depends on other rows:
    a row with an earlier time shifts every later window of its key."""

    input: Plan
    time_column: str
    size: int
    slide: int
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.size <= 0 or self.slide <= 0:
            raise PlanError(f"a count window's size and slide must be positive row counts, "
                            f"got size {self.size}, slide {self.slide}")

    @property
    def kind(self) -> str:
        """``COUNT_TUMBLE`` or ``COUNT_HOP``."""
        return "COUNT_TUMBLE" if self.slide == self.size else "COUNT_HOP"

    @cached_property
    def schema(self) -> Schema:
        index = column_index(self.input.schema, self.time_column)
        if not self.input.schema[index].type.is_time:
            raise PlanError(f"{self.kind} needs a TIMESTAMP time column, {self.time_column} is "
                            f"{self.input.schema[index].type.value}")
        for name in self.partition_by:
            column_index(self.input.schema, name)
        clash = {c.name for c in self.input.schema} & set(COUNT_WINDOW_COLUMNS + WINDOW_COLUMNS)
        if clash:
            raise PlanError(f"{self.kind} input already has column(s) {sorted(clash)}")
        time_type = self.input.schema[index].type
        return self.input.schema + (Column("window_start", time_type),
                                    Column("window_end", time_type),
                                    Column("window_ordinal", SqlType.BIGINT))

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: Aggregate functions of the SQL subset (each engine's other spellings are aliases:
#: :data:`AGGREGATE_ALIASES`).
AGGREGATE_FUNCTIONS = ("count", "sum", "min", "max", "avg", "first_value", "last_value",
                       "median", "percentile_cont", "stddev_samp", "stddev_pop", "var_samp",
                       "var_pop", "string_agg", "approx_count_distinct")
#: Other names of the aggregates, as RisingWave and Flink spell them: ``stddev`` and
#: ``variance`` are the sample statistics in both engines; Flink's ``LISTAGG(x [, sep])`` is
#: ``string_agg`` with ``','`` as its default separator.
AGGREGATE_ALIASES = {"stddev": "stddev_samp", "variance": "var_samp", "listagg": "string_agg"}
#: The statistical aggregates (a DOUBLE of a numeric argument, computed by Welford's method).
STATISTICAL_FUNCTIONS = ("stddev_samp", "stddev_pop", "var_samp", "var_pop")
#: LISTAGG's separator when none is given (Flink).
LISTAGG_SEPARATOR = ","


@dataclass(frozen=True)
class AggCall:
    """One aggregate: ``function(argument)``; ``argument`` None means ``count(*)``.

    ``order_by`` orders first_value/last_value (default: the source's event time) and the
    values string_agg concatenates (``order_descending`` for ``ORDER BY ... DESC``);
    ``fraction`` is percentile_cont's fraction; ``separator`` string_agg's.
    """

    function: str
    argument: Expr | None = None
    distinct: bool = False
    order_by: Expr | None = None
    fraction: float | None = None
    name: str = ""
    separator: str | None = None
    order_descending: bool = False

    def __post_init__(self) -> None:
        if self.function not in AGGREGATE_FUNCTIONS:
            raise PlanError(f"unsupported aggregate {self.function}")
        if self.argument is None and self.function != "count":
            raise PlanError(f"{self.function} needs an argument")
        if self.function == "string_agg" and self.separator is None:
            raise PlanError("string_agg needs a separator: string_agg(value, separator)")

    def sql(self) -> str:
        """The call as SQL: ``count(DISTINCT x)``, ``string_agg(x, ',' ORDER BY t)``."""
        if self.function == "percentile_cont":
            return (f"percentile_cont({self.fraction}) WITHIN GROUP (ORDER BY "
                    f"{sql_of(self.argument) if self.argument is not None else '*'})")
        argument = "*" if self.argument is None else sql_of(self.argument)
        text = ("DISTINCT " if self.distinct else "") + argument
        if self.separator is not None:
            text += ", '" + self.separator.replace("'", "''") + "'"
        if self.order_by is not None:
            text += f" ORDER BY {sql_of(self.order_by)}{' DESC' if self.order_descending else ''}"
        return f"{self.function}({text})"


@dataclass(frozen=True)
class Aggregate(Plan):
    """GROUP BY ``group_by`` computing ``calls``; output is the keys, then the aggregates."""

    input: Plan
    group_by: tuple[tuple[str, Expr], ...]
    calls: tuple[AggCall, ...]

    @cached_property
    def schema(self) -> Schema:
        keys = tuple(Column(n, compile_expr(e, self.input.schema).type) for n, e in self.group_by)
        return keys + tuple(Column(c.name, result_type(c, self.input.schema)) for c in self.calls)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: Kinds of :class:`Join`: ``semi`` keeps each left row that has a match (once), ``anti``
#: each left row that has none; both output the left columns only.
JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti")


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
    def joined_schema(self) -> Schema:
        """Both sides' columns: what the condition reads."""
        left, right = self.sides
        columns = tuple(replace(c, name=n) for n, c in zip(left, self.left.schema, strict=True)) + \
            tuple(replace(c, name=n) for n, c in zip(right, self.right.schema, strict=True))
        compiled = compile_expr(self.condition, columns)
        if compiled.type not in (SqlType.BOOLEAN, SqlType.NULL):
            raise PlanError(f"a join condition must be BOOLEAN, got {compiled.type.value}")
        return columns

    @cached_property
    def schema(self) -> Schema:
        joined = self.joined_schema
        return joined[:len(self.left.schema)] if self.kind in ("semi", "anti") else joined

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.left, self.right)


#: The inequalities of an ASOF join, ``left OP right``.
ASOF_INEQUALITIES = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class AsofJoin(Join):
    """RisingWave's ``left ASOF [LEFT] JOIN right ON k = k' AND ... AND a OP b`` (``kind``
    ``inner`` or ``left``): each left row joins the one right row with equal keys
    (``left_keys[i] = right_keys[i]``, a NULL key matching nothing) that satisfies
    ``left_order OP right_order`` and whose ``right_order`` is the closest to the left row's
    ``left_order`` (for ``<``/``<=`` the least, for ``>``/``>=`` the greatest); among right
    rows of equal ``right_order``, the first in the tie order of the right side
    (:func:`tie_break`: the primary key, then the whole row). ASOF LEFT JOIN pads a left row
    without one with NULLs. ``condition`` is the whole ON condition; every expression reads
    the joined schema, ``left_*`` only left columns and ``right_*`` only right ones."""

    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    left_order: Expr
    op: str
    right_order: Expr

    def __post_init__(self) -> None:
        if self.kind not in ("inner", "left"):
            raise PlanError(f"an ASOF join is inner or left, not {self.kind}")
        if self.op not in ASOF_INEQUALITIES or not self.left_keys or \
                len(self.left_keys) != len(self.right_keys):
            raise PlanError("an ASOF join needs at least one equality and one inequality "
                            "(<, <=, >, >=) between its two sides")

    @property
    def name(self) -> str:
        """The join as its SQL names it."""
        return "ASOF LEFT JOIN" if self.kind == "left" else "ASOF JOIN"

    @property
    def not_under_eowc(self) -> str:
        """Why it does not run under EMIT ON WINDOW CLOSE (as in RisingWave)."""
        return (f"{self.name} is not supported with EMIT ON WINDOW CLOSE: a left row's match is "
                f"revised whenever a closer right row arrives, so no joined row is final before "
                f"the input ends (RisingWave's ASOF join is an emit-on-update operator: its "
                f"StreamAsOfJoin never emits on window close). Drop EMIT ON WINDOW CLOSE to get "
                f"its changelog")


@dataclass(frozen=True)
class Union(Plan):
    """``UNION ALL``: the rows of every input, columns matched by position and named as the
    first input's. A column is of the one type its inputs give it, a NULL column of an input
    (``NULL AS k``) taking the others' type."""

    inputs: tuple[Plan, ...]

    @cached_property
    def schema(self) -> Schema:
        first = self.inputs[0].schema
        types = [c.type for c in first]
        for other in self.inputs[1:]:
            if len(other.schema) != len(first) or any(
                    a is not b.type and SqlType.NULL not in (a, b.type)
                    for a, b in zip(types, other.schema, strict=True)):
                raise PlanError("UNION ALL inputs must have the same column types, got "
                                f"({', '.join(t.value for t in types)}) and "
                                f"({', '.join(c.type.value for c in other.schema)})")
            types = [b.type if a is SqlType.NULL else a for a, b in zip(types, other.schema, strict=True)]
        return tuple(Column(c.name, t) for c, t in zip(first, types, strict=True))

    @property
    def children(self) -> tuple[Plan, ...]:
        return self.inputs


#: Window functions an OVER clause may call (besides the aggregates).
WINDOW_FUNCTIONS = ("row_number", "rank", "dense_rank", "lag", "lead", "first_value",
                    "last_value")


#: A frame's EXCLUDE clause: which rows around the current one leave its frame.
FRAME_EXCLUSIONS = ("no others", "current row", "group", "ties")


@dataclass(frozen=True)
class Frame:
    """The rows of a partition a window function reads, around the current row: ``ROWS``
    (``start`` and ``end`` count rows) or ``RANGE`` (they are offsets of the ORDER BY value).
    A bound is negative for PRECEDING, 0 for CURRENT ROW, positive for FOLLOWING, None for
    UNBOUNDED (PRECEDING as ``start``, FOLLOWING as ``end``). ``RANGE`` with CURRENT ROW
    includes the row's peers (equal ORDER BY values).

    ``SESSION`` (RisingWave's ``SESSION WITH GAP gap``) is the row's session: the rows of the
    partition whose consecutive ORDER BY values are less than ``gap`` apart, around the row
    (:func:`eowc.semantics.operators.over.frame_rows`); ``start`` and ``end`` are None (the
    frame reaches as far as the session does) and ``gap`` is positive. Rows with a NULL
    ORDER BY value form one session.

    ``exclude`` (SQL:2011, PostgreSQL, RisingWave) then takes rows out of the frame:
    ``current row`` the row itself, ``group`` the row and its peers, ``ties`` its peers but
    not the row, ``no others`` (the default) none."""

    kind: str = "range"
    start: int | None = None
    end: int | None = 0
    exclude: str = "no others"
    gap: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("rows", "range", "session"):
            raise PlanError(f"unknown frame kind {self.kind}")
        if (self.kind == "session") != (self.gap is not None):
            raise PlanError("a SESSION frame, and only it, has a gap")
        if self.kind == "session" and (self.gap is None or self.gap <= 0
                                       or self.start is not None or self.end is not None):
            raise PlanError("a SESSION frame's gap must be positive")
        if self.start is not None and self.end is not None and self.start > self.end:
            raise PlanError(f"frame starts after it ends: {self.sql()}")
        if self.exclude not in FRAME_EXCLUSIONS:
            raise PlanError(f"EXCLUDE {self.exclude.upper()} is not supported (EXCLUDE CURRENT "
                            f"ROW, GROUP, TIES and NO OTHERS are)")

    def sql(self) -> str:
        exclusion = "" if self.exclude == "no others" else f" EXCLUDE {self.exclude.upper()}"
        if self.kind == "session":
            return f"SESSION WITH GAP INTERVAL '{self.gap}' MICROSECOND{exclusion}"

        def bound(offset: int | None, unbounded: str) -> str:
            if offset is None:
                return f"UNBOUNDED {unbounded}"
            if offset == 0:
                return "CURRENT ROW"
            amount = abs(offset) if self.kind == "rows" else f"INTERVAL '{abs(offset)}' MICROSECOND"
            return f"{amount} {'PRECEDING' if offset < 0 else 'FOLLOWING'}"
        return (f"{self.kind.upper()} BETWEEN {bound(self.start, 'PRECEDING')} AND "
                f"{bound(self.end, 'FOLLOWING')}{exclusion}")


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
        if any(c.frame.kind == "session" and c.function not in POSITIONAL_FUNCTIONS
               for c in self.calls) and (len(self.order_by) != 1 or self.order_by[0][1]):
            raise PlanError("a SESSION frame needs exactly one ORDER BY column, ascending")
        return schema + tuple(Column(c.name, result(c)) for c in self.calls)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


def aggregate_call(call: WindowCall) -> AggCall:
    """An aggregate window function as the :class:`AggCall` it folds over its frame."""
    if call.function not in AGGREGATE_FUNCTIONS:
        raise PlanError(f"unsupported window function {call.function}")
    if call.function == "string_agg":
        if not 1 <= len(call.args) <= 2:
            raise PlanError("string_agg takes (value, separator)")
        separator = call.args[1] if len(call.args) > 1 else Literal(LISTAGG_SEPARATOR, SqlType.VARCHAR)
        if not (isinstance(separator, Literal) and isinstance(separator.value, str)):
            raise PlanError("the separator of string_agg/LISTAGG must be a constant string")
        return AggCall(call.function, call.args[0], name=call.name, separator=separator.value)
    if len(call.args) > 1:
        raise PlanError(f"{call.function} takes one argument")
    return AggCall(call.function, call.args[0] if call.args else None, name=call.name)


#: The ranking functions a TopN filters on.
TOP_N_FUNCTIONS = ("row_number", "rank", "dense_rank")


@dataclass(frozen=True)
class TopN(Plan):
    """The rows of each partition whose ``function`` (``ROW_NUMBER() / RANK() / DENSE_RANK()
    OVER (PARTITION BY ... ORDER BY ...) <= limit``) is at most ``limit``: the input columns,
    then ``rank_column``. With ``row_number`` that is the first ``limit`` rows in ``order_by``
    order (ties broken by :func:`tie_break`); ``rank`` and ``dense_rank`` give rows with
    equal ORDER BY values (peers) the same rank, so every peer of the last row within the
    limit comes out too (``rank``: one more than the rows ordered strictly before;
    ``dense_rank``: the number of distinct ORDER BY values up to the row's)."""

    input: Plan
    partition_by: tuple[Expr, ...]
    order_by: tuple[tuple[Expr, bool], ...]
    limit: int
    rank_column: str
    function: str = "row_number"

    def __post_init__(self) -> None:
        if self.function not in TOP_N_FUNCTIONS:
            raise PlanError(f"a TopN ranks by ROW_NUMBER, RANK or DENSE_RANK, not {self.function}")

    @cached_property
    def schema(self) -> Schema:
        for expr in (*self.partition_by, *(e for e, _ in self.order_by)):
            compile_expr(expr, self.input.schema)
        return self.input.schema + (Column(self.rank_column, SqlType.BIGINT),)

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


#: AFTER MATCH SKIP policies of MATCH_RECOGNIZE.
SKIP_POLICIES = ("past last row", "to next row")
#: Functions of a MATCH_RECOGNIZE measure over the rows of a match (:class:`MatchAggregate`).
MATCH_FUNCTIONS = ("first", "last", "count", "sum", "avg", "min", "max", "match_number")


@dataclass(frozen=True, repr=False)
class PatternRef(Expr):
    """A column of a row a MATCH_RECOGNIZE expression points at: ``variable.column`` (the row
    being classified when ``variable`` is the one being defined, or has no name; otherwise the
    last row mapped to ``variable`` so far), ``back`` rows earlier in the partition for
    ``PREV(..., back)``. In MEASURES (``back`` 0 only) it is ``LAST(variable.column)``."""

    variable: str | None
    column: str
    back: int = 0

    def __repr__(self) -> str:
        ref = f"{self.variable}.{self.column}" if self.variable else self.column
        if self.back == 0:
            return ref
        return f"PREV({ref})" if self.back == 1 else f"PREV({ref}, {self.back})"


@dataclass(frozen=True, repr=False)
class MatchAggregate(Expr):
    """A MEASURES function over the rows of a match mapped to ``variable`` (every row of the
    match when None): FIRST/LAST (``column`` of the first/last such row), COUNT (rows, or
    non-NULL ``column`` values), SUM/AVG/MIN/MAX of ``column``, or MATCH_NUMBER()."""

    function: str
    variable: str | None = None
    column: str | None = None

    def __post_init__(self) -> None:
        if self.function not in MATCH_FUNCTIONS:
            raise PlanError(f"unsupported MATCH_RECOGNIZE measure function {self.function}")
        if self.column is None and self.function not in ("count", "match_number"):
            raise PlanError(f"{self.function.upper()} in MEASURES needs a column")

    def __repr__(self) -> str:
        if self.function == "match_number":
            return "MATCH_NUMBER()"
        what = "*" if self.column is None else self.column
        ref = f"{self.variable}.{what}" if self.variable else what
        return f"{self.function.upper()}({ref})"


@dataclass(frozen=True)
class PatternTerm:
    """One pattern variable with its greedy quantifier ``{low, high}`` (``high`` None:
    unbounded): ``A`` is ``{1, 1}``, ``A+`` ``{1, None}``, ``A*`` ``{0, None}``, ``A?``
    ``{0, 1}``."""

    variable: str
    low: int = 1
    high: int | None = 1

    def __post_init__(self) -> None:
        if self.low < 0 or (self.high is not None and (self.high < self.low or self.high == 0)):
            raise PlanError(f"invalid quantifier {{{self.low},{self.high}}} on {self.variable}")

    def sql(self) -> str:
        quantifier = {(1, 1): "", (1, None): "+", (0, None): "*", (0, 1): "?"}.get(
            (self.low, self.high))
        if quantifier is None:
            quantifier = f"{{{self.low}}}" if self.low == self.high else \
                f"{{{self.low},{'' if self.high is None else self.high}}}"
        return self.variable + quantifier


@dataclass(frozen=True)
class MatchRecognize(Plan):
    """``MATCH_RECOGNIZE (PARTITION BY ... ORDER BY ... MEASURES ... ONE ROW PER MATCH AFTER
    MATCH SKIP ... PATTERN (...) DEFINE ...)``: per partition, the rows in ORDER BY order
    (ties broken by :func:`tie_break`) are matched against ``pattern`` (a concatenation of
    greedy quantified variables; a variable without DEFINE matches any row); each match gives
    one row: the partition columns, then the ``measures``. ``order_by`` holds (column,
    descending) pairs; ``skip`` is one of :data:`SKIP_POLICIES`. Matching is in
    :mod:`eowc.semantics.operators.pattern`."""

    input: Plan
    partition_by: tuple[str, ...]
    order_by: tuple[tuple[str, bool], ...]
    measures: tuple[tuple[str, Expr], ...]
    pattern: tuple[PatternTerm, ...]
    define: tuple[tuple[str, Expr], ...] = ()
    skip: str = "past last row"

    def __post_init__(self) -> None:
        variables = {t.variable for t in self.pattern}
        if not self.pattern:
            raise PlanError("MATCH_RECOGNIZE needs a PATTERN")
        if all(t.low == 0 for t in self.pattern):
            raise PlanError(f"PATTERN ({self.pattern_sql()}) can match no rows (an empty "
                            f"match): not supported, give one variable at least one row")
        if self.skip not in SKIP_POLICIES:
            raise PlanError(f"AFTER MATCH SKIP {self.skip.upper()} is not supported (only SKIP "
                            f"PAST LAST ROW and SKIP TO NEXT ROW)")
        if not self.order_by:
            raise PlanError("MATCH_RECOGNIZE needs ORDER BY")
        for name, _ in self.define:
            if name not in variables:
                raise PlanError(f"DEFINE {name}: {name} is not a variable of PATTERN "
                                f"({self.pattern_sql()})")
        if len({n for n, _ in self.define}) != len(self.define):
            raise PlanError("a pattern variable is defined twice in DEFINE")

    def pattern_sql(self) -> str:
        return " ".join(t.sql() for t in self.pattern)

    @cached_property
    def schema(self) -> Schema:
        schema = self.input.schema
        for name in (*self.partition_by, *(c for c, _ in self.order_by)):
            column_index(schema, name)
        keys = tuple(schema[column_index(schema, k)] for k in self.partition_by)
        return keys + tuple(Column(name, t) for name, t in measure_types(self))

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)


@dataclass(frozen=True)
class OrderKey:
    """One key of a query's trailing ``ORDER BY``: an output column, ascending or descending,
    NULLs before or after the values."""

    column: str
    descending: bool = False
    nulls_first: bool = False


@dataclass(frozen=True)
class Query:
    """A query plan with its emit mode (``EMIT ON WINDOW CLOSE`` or emit on update), and the
    order its trailing ``ORDER BY`` (without LIMIT) prints a table of its result in: the
    query's output is a stream or a changelog in emission order, so that ORDER BY changes no
    row of it (docs/sql/rewrites.md)."""

    plan: Plan
    emit_on_window_close: bool = False
    name: str | None = None
    sources: tuple[Source, ...] = field(default=())
    order_by: tuple[OrderKey, ...] = ()
    #: Under EOWC, the rows of the plan's top operator are the query's rows as the operator
    #: makes them, not held until their time is complete by an EOWC sort above it: an
    #: engine's operator that emits at once (Flink's interval join, written without an EMIT
    #: clause: each match when its second row comes, an outer row once no match can come).
    at_once: bool = False

    @property
    def schema(self) -> Schema:
        return self.plan.schema

    def in_order(self, rows: Iterable[Row]) -> list[Row]:
        """A table of the query's result (a snapshot) in its ORDER BY order, ties (and a query
        without ORDER BY) in the deterministic order of whole rows."""
        ordered = sorted(rows, key=row_sort_key)
        names = [c.name for c in self.schema]
        for key in reversed(self.order_by):
            position = names.index(key.column)
            nulls = [r for r in ordered if r[position] is None]
            values = sorted((r for r in ordered if r[position] is not None),
                            key=lambda r: r[position], reverse=key.descending)  # noqa: B023
            ordered = nulls + values if key.nulls_first else values + nulls
        return ordered

    @property
    def source(self) -> Source:
        """The one source this query reads (a query with joins or unions has several: see
        :mod:`eowc.semantics.engines.multi_input`)."""
        scans = [n for n in walk(self.plan) if isinstance(n, Scan)]
        if len(scans) != 1:
            raise PlanError("the query reads more than one source: this command runs queries "
                            "over one source only (the reference interpreter, eowc explain and "
                            "eowc prove take joins and unions)")
        return scans[0].source


def walk(plan: Plan) -> list[Plan]:
    """The plan's nodes, root first."""
    nodes = [plan]
    for child in plan.children:
        nodes.extend(walk(child))
    return nodes


# --------------------------------------------------------------------------- type rules
# The SQL types of the plan's computed columns (aggregate calls, MATCH_RECOGNIZE measures):
# the plan's schemas need them, and the operators compile against them.

def result_type(call: AggCall, schema: Schema) -> SqlType:
    """The SQL type of ``call`` over rows of ``schema``."""
    if call.function == "count":
        if call.argument is not None:
            compile_expr(call.argument, schema)
        return SqlType.BIGINT
    assert call.argument is not None
    argument = compile_expr(call.argument, schema).type
    if isinstance(argument, ArrayType) and call.function not in ("first_value", "last_value"):
        raise PlanError(f"{call.function} of an ARRAY ({argument.value}) is not supported: "
                        f"unnest it in a subquery and aggregate its elements")
    if call.function == "approx_count_distinct":
        return SqlType.BIGINT
    if call.function == "string_agg":
        if argument not in (SqlType.VARCHAR, SqlType.NULL):
            raise PlanError(f"string_agg concatenates VARCHAR values, got {argument.value}: "
                            f"cast it, string_agg(CAST(x AS VARCHAR), ...)")
        return SqlType.VARCHAR
    if call.function in ("avg", "median", "percentile_cont", *STATISTICAL_FUNCTIONS):
        if not argument.is_numeric:
            raise PlanError(f"{call.function} needs a numeric argument, got {argument.value}")
        exact = call.function == "avg" and argument is SqlType.DECIMAL  # avg of decimals: exact
        if call.function == "avg" and argument is SqlType.BIGINT and value_rules().integer_avg == "integer":
            return SqlType.BIGINT
        return SqlType.DECIMAL if exact else SqlType.DOUBLE
    if call.function == "sum" and not (argument.is_numeric or argument is SqlType.INTERVAL):
        raise PlanError(f"sum needs a numeric argument, got {argument.value}")
    return argument


def substitute(expr: Expr, replace_node: Callable[[Expr], Expr | None]) -> Expr:
    """``expr`` with every subtree for which ``replace_node`` gives an expression replaced."""
    replaced = replace_node(expr)
    if replaced is not None:
        return replaced

    def sub(value: Any) -> Any:
        if isinstance(value, Expr):
            return substitute(value, replace_node)
        if isinstance(value, tuple):
            return tuple(sub(v) for v in value)
        return value
    return replace(expr, **{f.name: sub(getattr(expr, f.name)) for f in fields(expr)})  # type: ignore[call-overload]


def pattern_references(expr: Expr) -> tuple[Expr, list[Any]]:
    """``expr`` with each PatternRef/MatchAggregate (and plain column) replaced by a column
    ``_ref{i}``, and the replaced nodes in order."""
    nodes: list[Any] = []

    def visit(node: Expr) -> Expr | None:
        if isinstance(node, ColumnRef):
            node = PatternRef(None, node.name)
        if isinstance(node, PatternRef | MatchAggregate):
            if node not in nodes:
                nodes.append(node)
            return ColumnRef(f"_ref{nodes.index(node)}")
        return None
    return substitute(expr, visit), nodes


def check_pattern_variable(node: MatchRecognize, variable: str | None, where: str) -> None:
    """A PlanError unless ``variable`` (None: any row) is a variable of the node's PATTERN."""
    if variable is not None and variable not in {t.variable for t in node.pattern}:
        raise PlanError(f"{where}: {variable} is not a variable of PATTERN "
                        f"({node.pattern_sql()})")


def measure_type(node: MatchRecognize, ref: Any) -> SqlType:
    """The SQL type of one reference of a measure (``var.col``, ``FIRST``/``LAST``, an aggregate
    over a variable's rows, ``MATCH_NUMBER()``)."""
    schema = node.input.schema
    if isinstance(ref, PatternRef):
        if ref.back:
            raise PlanError(f"{ref!r} in MEASURES is not supported (PREV only in DEFINE)")
        check_pattern_variable(node, ref.variable, f"MEASURES {ref!r}")
        return schema[column_index(schema, ref.column)].type
    check_pattern_variable(node, ref.variable, f"MEASURES {ref!r}")
    if ref.function == "match_number":
        return SqlType.BIGINT
    if ref.function in ("first", "last"):
        assert ref.column is not None
        return schema[column_index(schema, ref.column)].type
    argument = None if ref.column is None else ColumnRef(ref.column)
    return result_type(AggCall(ref.function, argument), schema)


def measure_types(node: MatchRecognize) -> list[tuple[str, SqlType]]:
    """Each measure's name and SQL type (checking its references)."""
    out = []
    for name, expr in node.measures:
        body, refs = pattern_references(expr)
        schema = tuple(Column(f"_ref{i}", measure_type(node, r)) for i, r in enumerate(refs))
        out.append((name, compile_expr(body, schema).type))
    return out


#: RisingWave's fill strategies of GAP_FILL, by the name its SQL gives them.
FILL_STRATEGIES = ("locf", "interpolate", "keepnull")


@dataclass(frozen=True)
class GapFill(Plan):
    """RisingWave's ``GAP_FILL(t, time_column, interval, strategy(col)..., PARTITION_BY(...))``:
    the input rows, and between two consecutive rows of a partition (by ``time_column``) one
    filled row at each ``prev + k * interval`` before the next row's time. A filled row copies
    the partition columns, takes ``LOCF`` columns from the row before, ``INTERPOLATE`` columns
    on the line between the two rows, and NULL elsewhere (``KEEPNULL`` and unlisted columns).
    ``fills`` are ``(column, strategy)`` pairs; ``interval`` is in microseconds."""

    input: Plan
    time_column: str
    interval: int
    fills: tuple[tuple[str, str], ...] = ()
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise PlanError("The gap fill interval must be positive")

    @cached_property
    def schema(self) -> Schema:
        schema = self.input.schema
        time = schema[column_index(schema, self.time_column)]
        if time.type is not SqlType.TIMESTAMP:
            raise PlanError(f"The 2nd arg of GAP_FILL should be a column of type timestamp, "
                            f"{self.time_column} is {time.type.value}")
        for name in self.partition_by:
            column_index(schema, name)
            if name == self.time_column:
                raise PlanError("PARTITION_BY cannot include the time column")
        seen: set[str] = set()
        for name, strategy in self.fills:
            column = schema[column_index(schema, name)]
            if strategy not in FILL_STRATEGIES:
                raise PlanError(f"Unsupported fill strategy: {strategy}")
            if name == self.time_column:
                raise PlanError("Cannot apply a fill strategy to the time column")
            if name in self.partition_by:
                raise PlanError("Cannot apply a fill strategy to a PARTITION_BY column")
            if name in seen:
                raise PlanError(f"GAP_FILL gives column {name} two fill strategies")
            seen.add(name)
            if strategy == "interpolate" and not column.type.is_numeric:
                raise PlanError(f"INTERPOLATE only supports numeric types, got "
                                f"{column.type.value} ({name})")
        return schema

    @property
    def children(self) -> tuple[Plan, ...]:
        return (self.input,)
