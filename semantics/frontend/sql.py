"""The SQL front end: a script of ``CREATE SOURCE``/``CREATE TABLE`` statements, views and a
query, parsed with sqlglot into a :class:`Script` whose query (a
:class:`~eowc.semantics.ir.plan.Query`) is the statement that is run.

Each statement is parsed in a dialect of :mod:`eowc.semantics.frontend.dialects` (RisingWave's
or Flink's streaming SQL), which reads the streaming extensions (``WATERMARK FOR``, ``APPEND
ONLY``, ``EMIT ON WINDOW CLOSE``, window table functions in both forms) into the tree; the
tree is checked for constructs eowc does not support (:data:`UNSUPPORTED`), rewritten by the
rules of :mod:`eowc.semantics.frontend.rewrites`, then planned. A node of the tree knows where
it is in the user's text, so an error names the line and column there and quotes that text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.tokens import Token, TokenType

from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.dialects import (
    DIALECTS,
    EMIT,
    OnConflictProperty,
    dialect_named,
    text_span,
)
from eowc.semantics.frontend.expressions import (
    DIALECT,
    decimal_shape,
    interval_micros,
    sql_type,
    translate,
)
from eowc.semantics.frontend.match_sql import match_recognize
from eowc.semantics.frontend.rewrites import Refused, rewrite
from eowc.semantics.ir.expr import (
    Binary,
    Column,
    ColumnRef,
    Expr,
    Literal,
    Schema,
    referenced_columns,
)
from eowc.semantics.ir.plan import (
    AGGREGATE_ALIASES,
    AGGREGATE_FUNCTIONS,
    DEFAULT_FRAME,
    FILL_STRATEGIES,
    FRAME_EXCLUSIONS,
    LISTAGG_SEPARATOR,
    TOP_N_FUNCTIONS,
    WINDOW_FUNCTIONS,
    AggCall,
    Aggregate,
    AsofJoin,
    CountTVF,
    Filter,
    Frame,
    GapFill,
    Join,
    OrderKey,
    OverWindow,
    Plan,
    Project,
    ProjectSet,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    Union,
    Unnest,
    WatermarkDecl,
    WindowCall,
    WindowTVF,
    computed_columns,
)
from eowc.semantics.ir.values import TYPE_NAMES, SqlType, ValueType, array_of, interval_text_micros
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.operators.asof_join import refuse_asof_under_eowc
from eowc.semantics.rules.emit_modes import emits_at_once, refused_by_flink, runs_as_eowc


@dataclass(frozen=True)
class Script:
    """A parsed SQL script: its sources by name, its query (the statement that is run: the
    last view or query of the script, or the view asked for), every view by name (each a
    query with its own emit mode; a statement that names a view reads the view's plan) and
    the tables that ``INSERT INTO`` writes (declared, never read)."""

    sources: dict[str, Source]
    query: Query
    views: dict[str, Query] = field(default_factory=dict)
    sinks: dict[str, Source] = field(default_factory=dict)


@dataclass(frozen=True)
class Statement:
    """One statement of a script, as written, and where it starts in the script."""

    text: str
    offset: int


class _SqlErrorAt(SqlError):
    """A :class:`SqlError` about one node of a statement's syntax tree: the script reader
    places it at the node's line and column and quotes the user's text of it."""

    def __init__(self, message: str, node: exp.Expression, fragment: str | None = None) -> None:
        super().__init__(message, fragment if fragment is not None else node.sql(dialect=DIALECT))
        self.node = node


#: The plan of a view named by a table reference, or None when no view has that name.
ViewLookup = Callable[[exp.Expression], Plan | None]


# ---------------------------------------------------------------------------------------------
# Reading statements in a dialect (:mod:`eowc.semantics.frontend.dialects`)


def script_statements(text: str, dialect: str = "risingwave") -> list[Statement]:
    """The statements of a script: a semicolon outside strings, comments and parentheses
    ends one. A semicolon inside parentheses ends nothing and is ignored (seed 004's job
    writes one after each subquery's GROUP BY); comments alone are no statement, and a
    statement starts at its first word (the comments before it are not part of it)."""
    statements, start, depth, words = [], 0, 0, 0
    for token in _tokens(text, dialect):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if token.token_type is TokenType.SEMICOLON and depth <= 0:
            if words:  # not only comments
                statements.append(Statement(text[start:token.start], start))
            start, words = token.end + 1, 0
        else:
            if not words:
                start = token.start
            words += 1
    if words:
        statements.append(Statement(text[start:], start))
    return [Statement(s.text.strip(), s.offset + len(s.text) - len(s.text.lstrip()))
            for s in statements]


class _ParseFailure(SqlError):
    """sqlglot could not read a statement: the error is at ``offset`` in the statement."""

    def __init__(self, message: str, fragment: str, offset: int, width: int) -> None:
        super().__init__(message, fragment)
        self.offset, self.width = offset, width


def _tokens(text: str, dialect: str) -> list[Token]:
    """The tokens of ``text``; an unterminated string, comment or quoted name is a
    :class:`_ParseFailure` at its start."""
    try:
        return list(DIALECTS[dialect]().tokenize(text))
    except Exception as error:  # sqlglot raises TokenError for unterminated strings etc.
        missing = re.search(r"Missing (\S+) from \d+:(\d+)", str(error.__cause__ or error))
        comment = text.rfind("/*")
        if missing is not None:
            delimiter, offset = missing.group(1), int(missing.group(2))
        elif comment >= 0 and "*/" not in text[comment:]:
            delimiter, offset = "the comment /*", comment
        else:
            raise SqlError(f"cannot read the SQL text as {dialect} SQL", str(error)) from None
        end = text.find("\n", offset)
        raise _ParseFailure(f"{delimiter} is never closed (read as {dialect} SQL)",
                            text[offset:end if end >= 0 else None].strip(), offset,
                            1) from None


def _readable(message: str) -> str:
    """A sqlglot parse message without its Python reprs."""
    message = re.sub(r"<Token token_type: TokenType\.SENTINEL[^>]*>", "the end of the statement",
                     message)
    message = re.sub(r"<Token token_type: [\w.]+, text: (.*?), line: [^>]*>", r"'\1'", message)
    return re.sub(r"<class '[\w.]+\.(\w+)'>", r"\1", message)


def _parse(statement: Statement, dialect: str, how: str) -> exp.Expression:
    """The syntax tree of one statement in ``dialect`` (``how``: how it was chosen, for the
    message), unquoted identifiers normalized as the dialect does, without its comments."""
    grammar = DIALECTS[dialect]()
    tokens = [t for t in _tokens(statement.text, dialect) if t.token_type is not TokenType.SEMICOLON]
    parser = grammar.parser(error_message_context=len(statement.text) + 1)
    try:
        trees = parser.parse(tokens, statement.text)
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        offset = len(detail.get("start_context") or "")
        message = _readable(str(detail.get("description") or error)).rstrip(".")
        line_end = statement.text.find("\n", offset)
        fragment = statement.text[offset:line_end if line_end >= 0 else None].strip()
        raise _ParseFailure(f"cannot parse the SQL: {message} (read as {dialect} SQL, {how}; "
                            f"choose with --dialect risingwave|flink)", fragment, offset,
                            len(detail.get("highlight") or "x")) from None
    if not trees or trees[0] is None:
        raise SqlError("empty statement")
    for node in trees[0].walk():  # comments mean nothing (the planner compares printed nodes)
        node.pop_comments()
    return normalize_identifiers(trees[0], dialect=grammar)


def _groups_frame(node: exp.Expression) -> str | None:
    return "GROUPS frames are not supported (ROWS, RANGE and SESSION are)" \
        if isinstance(node, exp.WindowSpec) and str(node.args.get("kind")).upper() == "GROUPS" \
        else None


def _on_conflict(node: exp.Expression) -> str | None:
    return f"ON CONFLICT {node.this.name} is not supported: an eowc table only receives inserts " \
        f"(write APPEND ONLY)" if isinstance(node, OnConflictProperty) else None


def _named(kind: type[exp.Expression], words: str) -> Callable[[exp.Expression], str | None]:
    return lambda node: words if isinstance(node, kind) else None


#: Constructs eowc does not support, each a test of a node of a statement's tree giving the
#: construct's name in the user's words. One place, checked before planning.
UNSUPPORTED: list[Callable[[exp.Expression], str | None]] = [
    _groups_frame,
    _named(exp.Lateral, "LATERAL is not supported"),
    _on_conflict,
]


def _refuse_unsupported(tree: exp.Expression) -> None:
    """Refuse the first construct of :data:`UNSUPPORTED` in ``tree``, by name."""
    for node in tree.walk():
        for test in UNSUPPORTED:
            words = test(node)
            if words is not None:
                raise _SqlErrorAt(words, node)


# ---------------------------------------------------------------------------------------------
# Sources


def _watermark(constraint: exp.WatermarkColumnConstraint, table: str,
               columns: tuple[Column, ...], processing_time: set[str]) -> WatermarkDecl:
    """``WATERMARK FOR column AS column - INTERVAL ...`` on a carried or computed column of
    ``columns`` (not on a ``PROCTIME()`` one)."""
    column_name = constraint.this.name
    node = constraint.expression
    shape = f"WATERMARK FOR {column_name} AS {column_name} - INTERVAL '...' <unit>"
    if isinstance(node, exp.Column) and node.name == column_name:
        delay = 0
    elif isinstance(node, exp.Sub) and isinstance(node.this, exp.Column) \
            and node.this.name == column_name:
        delay = interval_micros(node.expression)
    else:
        raise _SqlErrorAt(f"the watermark of {table} must have the form {shape}", constraint)
    if column_name in processing_time:
        raise _SqlErrorAt(f"WATERMARK FOR {column_name}: {PROCESSING_TIME} ({column_name} AS "
                          f"PROCTIME())", constraint.this)
    if column_name not in {c.name for c in columns}:
        raise _SqlErrorAt(f"WATERMARK FOR names an unknown column of {table}", constraint.this)
    return WatermarkDecl(column_name, delay)


#: The message for a query that reads a ``PROCTIME()`` column.
PROCESSING_TIME = ("PROCTIME() is processing time, which EOWC semantics does not define: a "
                   "window closes when the watermark (event time) passes its end, and the same "
                   "input must give the same output; use an event-time column with a WATERMARK")


def _column_type(kind: exp.DataType, fragment: str) -> ValueType:
    """A column's type; the time-zone timestamps (``TIMESTAMPTZ``, ``TIMESTAMP WITH TIME
    ZONE``, ``TIMESTAMP_LTZ(p)``) and ``TIMESTAMP(p)`` are read as TIMESTAMP where the value
    types have no own type for them. ``INT[]`` and Flink's ``ARRAY<INT>`` are arrays of their
    element type."""
    if kind.this == exp.DataType.Type.ARRAY:
        element = kind.expressions[0] if kind.expressions else None
        if not isinstance(element, exp.DataType):
            raise _SqlErrorAt("an ARRAY column needs its element type (INT[], ARRAY<INT>)", kind)
        try:
            return array_of(_column_type(element, fragment))
        except ValueError as error:
            raise _SqlErrorAt(str(error), kind) from None
    name = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
    if name in TYPE_NAMES:
        return TYPE_NAMES[name]
    if name in ("TIMESTAMPLTZ", "TIMESTAMPTZ", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMPNTZ"):
        return SqlType.TIMESTAMP
    try:
        return sql_type(kind, fragment)
    except SqlError as error:
        raise _SqlErrorAt(error.reason, kind) from None


def _declared_column(name: str, kind: exp.DataType, fragment: str) -> Column:
    """A column as its DDL declares it; a ``DECIMAL(p, s)`` keeps its precision and scale
    (``docs/sql/types.md``: Spark and Flink fit arriving values to them)."""
    column_type = _column_type(kind, fragment)
    if column_type is not SqlType.DECIMAL:
        return Column(name, column_type)
    precision, scale = decimal_shape(kind)
    if precision is not None and not (1 <= precision <= 38 and 0 <= (scale or 0) <= precision):
        raise _SqlErrorAt(f"DECIMAL({precision}, {scale}) of column {name}: the precision is "
                          f"1 to 38 and the scale 0 to the precision", kind)
    return Column(name, column_type, precision, scale)


def _source(tree: exp.Create, fragment: str) -> Source:
    """A ``CREATE TABLE``/``CREATE SOURCE``: its columns, primary key, watermark, and its
    computed columns (``name AS expr``, Flink), which follow the carried columns in its rows
    and are computed when a row arrives (a watermark may be on one); ``PROCTIME()`` columns
    are in no row."""
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise SqlError("CREATE SOURCE/TABLE needs a column list", fragment)
    name = schema.this.name
    columns: list[Column] = []
    primary_key: list[str] = []
    computed: dict[str, exp.Expression] = {}
    watermarks: list[exp.WatermarkColumnConstraint] = []
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            constraints = [c.args.get("kind") for c in item.args.get("constraints") or []]
            expression = next((c.this for c in constraints
                               if isinstance(c, exp.ComputedColumnConstraint)), None)
            if expression is not None:
                computed[item.name] = expression
                continue
            if item.args.get("kind") is None:
                raise _SqlErrorAt(f"column {item.name} of {name} needs a type", item)
            columns.append(_declared_column(item.name, item.args["kind"], fragment))
            if any(isinstance(c, exp.PrimaryKeyColumnConstraint) for c in constraints):
                primary_key.append(item.name)
        elif isinstance(item, exp.PrimaryKey):
            primary_key.extend(e.name for e in item.expressions)
        elif isinstance(item, exp.WatermarkColumnConstraint):
            watermarks.append(item)
        else:
            raise _SqlErrorAt("unsupported item in CREATE", item)
    if len(watermarks) > 1:
        raise _SqlErrorAt(f"{name} declares more than one watermark", watermarks[1])
    carried = tuple(columns)
    processing_time = {column for column, expression in computed.items()
                       if isinstance(expression, exp.Anonymous)
                       and expression.name.upper() == "PROCTIME"}
    derived: list[tuple[str, Expr]] = []
    for column, expression in computed.items():
        if column in processing_time:
            continue  # in no row, read by no query (see refuse_processing_time)
        try:
            derived.append((column, translate(expression)))
            computed_columns(carried, tuple(derived[-1:]))
        except PlanError as error:
            raise _SqlErrorAt(f"computed column {column}: {error}", expression) from None
    whole = carried + computed_columns(carried, tuple(derived))
    watermark = _watermark(watermarks[0], name, whole, processing_time) if watermarks else None
    try:
        return Source(name, whole, watermark, tuple(primary_key), tuple(derived),
                      tuple(c for c in computed if c in processing_time))
    except PlanError as error:
        raise SqlError(str(error), fragment) from None


# ---------------------------------------------------------------------------------------------
# Aggregates

_AGGREGATES = {
    exp.Count: "count", exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg",
    exp.FirstValue: "first_value", exp.LastValue: "last_value", exp.Median: "median",
    exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
    exp.Variance: "var_samp", exp.VariancePop: "var_pop", exp.GroupConcat: "string_agg",
    exp.ApproxDistinct: "approx_count_distinct",
}


def _aggregate_name(node: exp.Expression) -> str | None:
    """The aggregate ``node`` calls (its engine's spelling resolved: :data:`AGGREGATE_ALIASES`),
    or None."""
    if isinstance(node, exp.Anonymous):  # LISTAGG, and names the dialect does not know
        name = node.name.lower()
        name = AGGREGATE_ALIASES.get(name, name)
        return name if name in AGGREGATE_FUNCTIONS else None
    return _AGGREGATES.get(type(node))


def _is_aggregate(node: exp.Expression) -> bool:
    return isinstance(node, exp.WithinGroup) or _aggregate_name(node) is not None


def _separator(node: exp.Expression | None, fragment: str) -> str:
    """string_agg's separator: a constant string (LISTAGG without one: ',')."""
    if node is None:
        return LISTAGG_SEPARATOR
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise SqlError("the separator of string_agg/LISTAGG must be a constant string", fragment)
    return node.this


def _aggregate_call(node: exp.Expression, name: str) -> AggCall:
    fragment = node.sql(dialect=DIALECT)
    if isinstance(node, exp.WithinGroup):
        function = node.this
        if not isinstance(function, exp.PercentileCont):
            raise SqlError("only percentile_cont(...) WITHIN GROUP is supported", fragment)
        fraction = translate(function.this)
        if not isinstance(fraction, Literal) or not isinstance(fraction.value, int | float | Decimal):
            raise SqlError("percentile_cont needs a constant fraction", fragment)
        order = node.expression
        keys = order.expressions if isinstance(order, exp.Order) else []
        if len(keys) != 1 or keys[0].args.get("desc"):
            raise SqlError("percentile_cont needs WITHIN GROUP (ORDER BY one column ASC)", fragment)
        return AggCall("percentile_cont", translate(keys[0].this),
                       fraction=float(fraction.value), name=name)
    function = _aggregate_name(node)
    assert function is not None
    argument: Any = node.this
    extra = list(node.args.get("expressions") or [])
    separator = None
    if isinstance(node, exp.Anonymous):  # LISTAGG(x [, separator])
        argument, extra = (extra[0] if extra else None), extra[1:]
        if function == "string_agg":
            separator, extra = _separator(extra[0] if extra else None, fragment), extra[1:]
    elif function == "string_agg":
        separator = _separator(node.args.get("separator"), fragment)
    distinct = False
    order_by, descending = None, False
    if isinstance(argument, exp.Order):
        keys = argument.expressions
        if function not in ("first_value", "last_value", "string_agg") or len(keys) != 1 or \
                (function != "string_agg" and keys[0].args.get("desc")):
            raise SqlError("ORDER BY inside an aggregate is only supported as "
                           "first_value/last_value(x ORDER BY t) and string_agg(x, sep ORDER BY t "
                           "[DESC])", fragment)
        descending = bool(keys[0].args.get("desc"))
        if bool(keys[0].args.get("nulls_first")) != descending:
            raise SqlError("NULLS FIRST/LAST inside an aggregate is not supported (NULLs sort "
                           "last ascending, first descending)", fragment)
        order_by, argument = translate(keys[0].this), argument.this
    if isinstance(argument, exp.Distinct):
        if len(argument.expressions) != 1:
            raise SqlError("DISTINCT aggregates take one argument", fragment)
        distinct, argument = True, argument.expressions[0]
        if order_by is not None:
            raise SqlError("DISTINCT with ORDER BY inside an aggregate is not supported "
                           "(string_agg(DISTINCT x, sep) joins the values in value order)", fragment)
    if extra:
        raise SqlError(f"{function} takes one argument", fragment)
    if isinstance(argument, exp.Star):
        if function != "count":
            raise SqlError(f"{function}(*) is not defined", fragment)
        return AggCall("count", None, name=name)
    if argument is None:
        raise SqlError(f"{function} needs an argument", fragment)
    for inner in argument.walk():
        if _is_aggregate(inner):
            raise SqlError("aggregates cannot be nested", fragment)
    if function == "approx_count_distinct":
        distinct = False  # it counts distinct values already
    return AggCall(function, translate(argument), distinct, order_by, name=name,
                   separator=separator, order_descending=descending)


# ---------------------------------------------------------------------------------------------
# SELECT


def _unnested(node: exp.Expression) -> exp.Expression | None:
    """The array of ``unnest(array)`` (sqlglot reads it as EXPLODE) or of
    ``generate_series(a, b[, step])`` (its values, as an array), or None for another node;
    ``unnest`` of several arrays is refused by name."""
    if isinstance(node, exp.Explode):
        return node.this
    if isinstance(node, exp.ExplodingGenerateSeries):  # generate_series(a, b[, step]) rows
        return exp.GenerateSeries(**{k: v.copy() for k, v in node.args.items() if v is not None})
    if isinstance(node, exp.Unnest) or (isinstance(node, exp.Anonymous)
                                        and node.name.lower() == "unnest"):
        if len(node.expressions) != 1:
            raise SqlError("unnest of several arrays, unnest(a, b), is not supported: write "
                           "unnest(a), unnest(b) as two items", node.sql(dialect=DIALECT))
        return node.expressions[0]
    return None


def _output_name(item: exp.Expression, position: int) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name.rsplit(".", 1)[-1]  # a join's l.ts is named ts
    node = item.this if isinstance(item, exp.WithinGroup) else item
    if isinstance(node, exp.Explode):
        return "unnest"  # as PostgreSQL and RisingWave name it
    if isinstance(node, exp.Bracket) and isinstance(node.this, exp.Column):
        return node.this.name  # arr[1] is named arr (PostgreSQL)
    if isinstance(node, exp.Func):
        return node.sql_name().lower() if not isinstance(node, exp.Anonymous) else node.name.lower()
    return f"column{position + 1}"


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    result = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        result.append(name if count == 0 else f"{name}_{count}")
    return result


def _resolve(node: exp.Expression, names: set[str]) -> exp.Expression:
    """A column of a join's output: ``l.ts`` is ``l.ts`` where both sides have a ``ts`` (or
    in a chain of joins), else ``ts``; an unqualified name is ambiguous when more than one
    relation has it."""
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
        return node
    qualified = f"{node.table}.{node.name}"
    if node.table and qualified in names:
        return exp.Column(this=exp.to_identifier(qualified, quoted=True))
    if not node.table and node.name not in names:
        both = sorted(n for n in names if n.endswith(f".{node.name}"))
        if len(both) == 1:  # in a chain of joins, every column is qualified
            return exp.Column(this=exp.to_identifier(both[0], quoted=True))
        if both:
            raise _SqlErrorAt(f"column {node.name} is ambiguous: write {' or '.join(both)}", node)
    return exp.column(node.name) if node.table else node


_WINDOW_FUNCTIONS = {exp.RowNumber: "row_number", exp.Lag: "lag", exp.Lead: "lead",
                     exp.FirstValue: "first_value", exp.LastValue: "last_value"}


def _window_function(node: exp.Expression) -> tuple[str, tuple[Expr, ...]]:
    """The function an OVER clause applies, and its arguments."""
    fragment = node.sql(dialect=DIALECT)
    name = _WINDOW_FUNCTIONS.get(type(node)) or _aggregate_name(node) or (
        node.sql_name().lower() if isinstance(node, exp.Func) else "")
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
    if name not in WINDOW_FUNCTIONS and name not in AGGREGATE_FUNCTIONS:
        raise SqlError(f"unsupported window function {name or type(node).__name__}", fragment)
    if isinstance(node.this, exp.Star) or (name == "count" and node.this is None):
        return "count", ()
    if isinstance(node.this, exp.Order | exp.Distinct):
        raise SqlError(f"ORDER BY or DISTINCT inside {name} is not supported in an OVER window",
                       fragment)
    args = [a for a in (node.this, node.args.get("offset"), node.args.get("default"),
                        node.args.get("separator"))
            if isinstance(a, exp.Expression)] + list(node.expressions)
    return name, tuple(translate(a) for a in args)


def _frame(window: exp.Window) -> Frame:
    """The frame clause of an OVER window (:data:`DEFAULT_FRAME` without one)."""
    spec = window.args.get("spec")
    if spec is None:
        return DEFAULT_FRAME
    fragment = spec.sql(dialect=DIALECT)
    kind = str(spec.args.get("kind") or "").lower()
    if kind == "session":
        return _session_frame(spec, fragment)
    if kind not in ("rows", "range"):
        raise SqlError(f"only ROWS, RANGE and SESSION frames are supported, not {kind.upper()}",
                       fragment)

    def bound(node: Any, side: Any, is_start: bool) -> int | None:
        if node is None:
            return 0
        text = node.upper() if isinstance(node, str) else ""
        if text == "CURRENT ROW":
            return 0
        if text == "UNBOUNDED":
            if str(side).upper() != ("PRECEDING" if is_start else "FOLLOWING"):
                raise SqlError("a frame starts at UNBOUNDED PRECEDING and ends at UNBOUNDED "
                               "FOLLOWING", fragment)
            return None
        if isinstance(node, exp.Interval):
            if kind == "rows":
                raise SqlError("a ROWS frame counts rows: write n PRECEDING, not an interval",
                               fragment)
            amount = interval_micros(node)
        elif isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            amount = int(node.this)
        else:
            raise SqlError("a frame bound is UNBOUNDED, CURRENT ROW, or a constant PRECEDING or "
                           "FOLLOWING", fragment)
        return -amount if str(side).upper() == "PRECEDING" else amount

    start = bound(spec.args.get("start"), spec.args.get("start_side"), True)
    end = bound(spec.args.get("end"), spec.args.get("end_side"), False)
    exclude = _frame_exclusion(spec.args.get("exclude"), fragment)
    try:
        return Frame(kind, start, end, exclude)
    except PlanError as error:
        raise SqlError(str(error), fragment) from None


def _session_frame(spec: exp.WindowSpec, fragment: str) -> Frame:
    """RisingWave's ``SESSION WITH GAP gap`` (the dialects read it as a frame of kind SESSION
    whose ``start`` is the gap): an interval, or a constant for a numeric ORDER BY."""
    gap = spec.args.get("start")
    if isinstance(gap, exp.Literal) and gap.is_string:
        gap = exp.Interval(this=gap)
    if isinstance(gap, exp.Interval):
        amount = interval_micros(gap)
    elif isinstance(gap, exp.Literal) and not gap.is_string and gap.this.isdigit():
        amount = int(gap.this)
    else:
        raise SqlError("the gap of a SESSION frame is a constant interval", fragment)
    exclude = _frame_exclusion(spec.args.get("exclude"), fragment)
    try:
        return Frame("session", None, None, exclude, gap=amount)
    except PlanError as error:
        raise SqlError(str(error), fragment) from None


def _frame_exclusion(node: Any, fragment: str) -> str:
    """The EXCLUDE clause of a frame (where the parser puts it: the window spec's
    ``exclude``), as one of :data:`FRAME_EXCLUSIONS`."""
    if node is None:
        return "no others"
    text = " ".join((node.name if isinstance(node, exp.Expression) else str(node)).lower().split())
    if text not in FRAME_EXCLUSIONS:
        raise SqlError(f"EXCLUDE {text.upper()} is not supported (EXCLUDE CURRENT ROW, GROUP, "
                       f"TIES and NO OTHERS are)", fragment)
    return text


def _top_n(plan: Filter) -> Plan | None:
    """``WHERE rn <= N`` over ``ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) AS rn`` (or
    RANK(), DENSE_RANK()) as a :class:`TopN` (``rn < N`` and ``rn = 1`` too), or None."""
    condition, below = plan.predicate, plan.input
    if not (isinstance(condition, Binary) and condition.op in ("<=", "<", "=")
            and isinstance(condition.left, ColumnRef) and isinstance(condition.right, Literal)
            and isinstance(condition.right.value, int) and isinstance(below, Project)
            and isinstance(below.input, OverWindow) and len(below.input.calls) == 1):
        return None
    over, call = below.input, below.input.calls[0]
    items = dict(below.items)
    if call.function not in TOP_N_FUNCTIONS or call.frame != DEFAULT_FRAME or \
            items.get(condition.left.name) != ColumnRef(call.name):
        return None
    limit = condition.right.value - (condition.op == "<")
    if condition.op == "=" and limit != 1:
        return None
    return Project(TopN(over.input, over.partition_by, over.order_by, limit, call.name,
                        call.function), below.items)


def _qualified(plan: Plan, alias: str) -> Project:
    """``plan`` with every column named by ``alias`` (``a.ts``): a relation in a chain of
    joins."""
    return Project(plan, tuple((f"{alias}.{c.name}", ColumnRef(c.name)) for c in plan.schema))


def _unqualify(node: exp.Expression) -> exp.Expression:
    """``w.window_start`` to ``window_start``: a query reads one relation at a time."""
    if isinstance(node, exp.Column) and node.table and not isinstance(node.this, exp.Star):
        return exp.column(node.name)
    return node


def presentation_order(tree: exp.Expression, schema: Schema) -> tuple[OrderKey, ...]:
    """The keys of a query's trailing ``ORDER BY`` without LIMIT (none without one), each an
    output column (by name, alias or position). Such an ORDER BY changes no row of a stream or
    a changelog, whose order is the emission order (RisingWave ignores it in a materialized
    view; Flink's streaming ORDER BY must start with the time attribute ascending): it only
    orders a printed table of the result (a batch SELECT's, or ``eowc run --snapshot``)."""
    order = tree.args.get("order")
    if order is None or tree.args.get("limit") or tree.args.get("offset"):
        return ()
    columns = [c.name for c in schema]
    keys = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string and key.name.isdigit() \
                and 1 <= int(key.name) <= len(columns):
            name = columns[int(key.name) - 1]
        elif isinstance(key, exp.Column) and key.name in columns:
            name = key.name
        else:
            raise _SqlErrorAt(f"ORDER BY without LIMIT orders the query's result by its output "
                              f"columns ({', '.join(columns)}), not {key.sql(dialect=DIALECT)}",
                              key)
        keys.append(OrderKey(name, bool(ordered.args.get("desc")),
                             bool(ordered.args.get("nulls_first"))))
    return tuple(keys)


class _Planner:
    """Plans the queries of one statement over the script's tables and views."""

    def __init__(self, sources: dict[str, Source], views: ViewLookup,
                 view_names: tuple[str, ...]) -> None:
        self.sources = sources
        self.views = views
        self.view_names = view_names

    def relation(self, reference: exp.Expression, where: str = "",
                 fragment: str | None = None) -> Plan:
        """The relation a name in FROM, in a join or as a table function's table argument
        stands for: a declared table (a scan of it), a view (its plan, as if its query
        were written in its place) or a subquery (a CTE written in place)."""
        if isinstance(reference, exp.Subquery):
            return self.query(reference.this)
        name = reference.name
        if name in self.sources:
            return Scan(self.sources[name])
        view = self.views(reference)
        if view is not None:
            return view
        known = ", ".join(sorted(self.sources)) or "none"
        views = f"; views: {', '.join(self.view_names)}" if self.view_names else ""
        raise _SqlErrorAt(f"unknown table {name!r}{where} (declared: {known}{views})", reference,
                           fragment)

    def from_clause(self, node: exp.Expression) -> Plan:
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.Table):
            if isinstance(node.this, exp.GapFill) or (isinstance(node.this, exp.Anonymous)
                                                      and node.this.name.upper() == "GAP_FILL"):
                return self.gap_fill(node.this)
            if isinstance(node.this, exp.Anonymous):
                return self.window_tvf(node.this)
            return self.relation(node)
        raise SqlError("unsupported FROM item", node.sql(dialect=DIALECT))

    def window_tvf(self, call: exp.Anonymous) -> Plan:
        fragment = call.sql(dialect=DIALECT)
        kind_name = call.name.upper()
        if kind_name == "SESSION":
            return self.session(call)
        if kind_name in ("COUNT_TUMBLE", "COUNT_HOP"):
            return self.count_window(call)
        if kind_name not in ("TUMBLE", "HOP", "CUMULATE"):
            raise SqlError("unknown table function", fragment)
        kind = WindowKind[kind_name]
        args = call.expressions
        arity = (3, 4) if kind is WindowKind.TUMBLE else (4, 5)
        if len(args) not in arity:
            shape = {"TUMBLE": "TUMBLE(table, time_column, size [, offset])",
                     "HOP": "HOP(table, time_column, slide, size [, offset])",
                     "CUMULATE": "CUMULATE(table, time_column, step, size [, offset])"}[kind_name]
            raise SqlError(f"expected {shape}", fragment)
        table, time_column = args[0], args[1]
        if isinstance(table, exp.Subquery) and isinstance(time_column, exp.Column):
            below: Plan = self.query(table.this)  # a window over a union or a join
        elif not isinstance(table, exp.Column | exp.Table) or \
                not isinstance(time_column, exp.Column):
            raise SqlError(f"{kind_name} takes a table name (or a subquery) and a column name "
                           f"first", fragment)
        else:
            below = self.relation(table, f" in {kind_name}", fragment)
        intervals = [interval_micros(a) for a in args[2:]]
        if kind is WindowKind.TUMBLE:
            size, slide, offset = intervals[0], 0, (intervals[1] if len(intervals) > 1 else 0)
        else:
            slide, size = intervals[0], intervals[1]
            offset = intervals[2] if len(intervals) > 2 else 0
        try:
            spec = WindowSpec(kind, size, slide, offset)
        except ValueError as error:
            raise SqlError(str(error), fragment) from None
        return WindowTVF(below, time_column.name, spec)

    def query(self, tree: exp.Expression) -> Plan:
        """A SELECT, or a UNION ALL of them, and its ORDER BY ... LIMIT. An ORDER BY without
        LIMIT changes no row (:func:`presentation_order`)."""
        if isinstance(tree, exp.Query) and tree.args.get("order") and tree.args.get("limit") \
                and not tree.args.get("offset"):
            rest = tree.copy()
            rest.set("order", None)
            rest.set("limit", None)
            return self.limited(self.query(rest), tree.args["order"], tree.args["limit"])
        if isinstance(tree, exp.Query) and tree.args.get("order") and not tree.args.get("limit") \
                and not tree.args.get("offset"):
            rest = tree.copy()
            rest.set("order", None)
            plan = self.query(rest)
            presentation_order(tree, plan.schema)
            return plan
        if isinstance(tree, exp.Union):
            clause = next((c for c in ("offset", "limit", "order") if tree.args.get(c)), None)
            if clause is not None:
                raise SqlError(f"{clause.upper()} on a UNION ALL is not supported (ORDER BY ... "
                               f"LIMIT n is)", tree.args[clause].sql(dialect=DIALECT))
            if tree.args.get("distinct"):
                raise SqlError("UNION without ALL is not supported (write UNION ALL)",
                               tree.sql(dialect=DIALECT))
            inputs = [self.query(tree.this), self.query(tree.expression)]
            flat = tuple(p for i in inputs for p in (i.inputs if isinstance(i, Union) else (i,)))
            return Union(flat)
        if not isinstance(tree, exp.Select):
            raise SqlError("expected a SELECT query", tree.sql(dialect=DIALECT))
        return self.select(tree)

    def session(self, call: exp.Anonymous) -> Plan:
        """``SESSION(t, ts, gap [, partition key, ...])`` (the dialects read the Flink form as it)."""
        fragment = call.sql(dialect=DIALECT)
        args = call.expressions
        if len(args) < 3 or not isinstance(args[0], exp.Column | exp.Table | exp.Subquery) or not all(
                isinstance(a, exp.Column) for a in [args[1], *args[3:]]):
            raise SqlError("expected TABLE(SESSION(TABLE t [PARTITION BY key, ...], "
                           "DESCRIPTOR(time_column), gap))", fragment)
        below = self.relation(args[0], " in SESSION", fragment)
        try:
            return SessionTVF(below, args[1].name, interval_micros(args[2]),
                              tuple(a.name for a in args[3:]))
        except PlanError as error:
            raise SqlError(str(error), fragment) from None

    def count_window(self, call: exp.Anonymous) -> Plan:
        """``COUNT_TUMBLE(t, ts, size [, key, ...])`` and ``COUNT_HOP(t, ts, size, slide
        [, key, ...])``: sizes in rows (the dialects read the Flink form with PARTITION BY as
        it)."""
        fragment = call.sql(dialect=DIALECT)
        kind_name = call.name.upper()
        counts = 1 if kind_name == "COUNT_TUMBLE" else 2
        shape = ("TABLE(COUNT_TUMBLE(TABLE t [PARTITION BY key, ...], DESCRIPTOR(time_column), "
                 "size))" if counts == 1 else "TABLE(COUNT_HOP(TABLE t [PARTITION BY key, ...], "
                 "DESCRIPTOR(time_column), size, slide))")
        args = call.expressions
        if len(args) < 2 + counts or not isinstance(args[0], exp.Column | exp.Table | exp.Subquery) \
                or not isinstance(args[1], exp.Column) \
                or not all(isinstance(a, exp.Column) for a in args[2 + counts:]):
            raise SqlError(f"expected {shape}", fragment)
        sizes = args[2:2 + counts]
        if not all(isinstance(a, exp.Literal) and not a.is_string and a.name.isdigit()
                   for a in sizes):
            raise SqlError(f"{kind_name} sizes are row counts: whole numbers, not "
                           f"{', '.join(a.sql(dialect=DIALECT) for a in sizes)} (a time window "
                           f"is TUMBLE or HOP)", fragment)
        size = int(sizes[0].name)
        slide = int(sizes[1].name) if counts == 2 else size
        below = self.relation(args[0], f" in {kind_name}", fragment)
        try:
            return CountTVF(below, args[1].name, size, slide,
                            tuple(a.name for a in args[2 + counts:]))
        except PlanError as error:
            raise SqlError(str(error), fragment) from None

    def gap_fill(self, call: exp.Expression) -> Plan:
        """RisingWave's ``GAP_FILL(t, time_column, interval [, LOCF(c) | INTERPOLATE(c) |
        KEEPNULL(c) | PARTITION_BY(k, ...)] ...)``: the rows of ``t`` with each gap between
        consecutive rows of a partition filled at ``interval`` steps (sqlglot parses it as
        BigQuery's GAP_FILL, whose named arguments hold RisingWave's in order)."""
        fragment = call.sql(dialect=DIALECT)
        args = call.expressions if isinstance(call, exp.Anonymous) else \
            [call.args[k] for k in exp.GapFill.arg_types if call.args.get(k) is not None]
        if len(args) < 3 or not isinstance(args[0], exp.Column | exp.Table) \
                or not isinstance(args[1], exp.Column):
            raise SqlError("GAP_FILL requires at least 3 arguments: GAP_FILL(table, time_column, "
                           "interval [, LOCF(col) | INTERPOLATE(col) | KEEPNULL(col) | "
                           "PARTITION_BY(col, ...)] ...)", fragment)
        below = self.relation(args[0], " in GAP_FILL", fragment)
        fills: list[tuple[str, str]] = []
        partition_by: list[str] = []
        for arg in args[3:]:
            name = arg.name.lower() if isinstance(arg, exp.Anonymous) else ""
            columns = arg.expressions if isinstance(arg, exp.Anonymous) else []
            if not columns or not all(isinstance(c, exp.Column) for c in columns) or \
                    (name != "partition_by" and len(columns) != 1):
                raise SqlError("Fill strategy must be a function call like LOCF(col), "
                               "INTERPOLATE(col), KEEPNULL(col) or PARTITION_BY(col, ...)",
                               arg.sql(dialect=DIALECT))
            if name == "partition_by":
                partition_by += [c.name for c in columns if c.name not in partition_by]
            elif name in FILL_STRATEGIES:
                fills.append((columns[0].name, name))
            else:
                raise SqlError(f"Unsupported fill strategy: {name} (GAP_FILL takes "
                               f"LOCF, INTERPOLATE, KEEPNULL and PARTITION_BY)",
                               arg.sql(dialect=DIALECT))
        try:
            node = GapFill(below, args[1].name, interval_micros(args[2]), tuple(fills),
                           tuple(partition_by))
            _ = node.schema
        except PlanError as error:
            raise SqlError(str(error), fragment) from None
        return node

    def select(self, tree: exp.Select) -> Plan:
        for clause in ("offset", "limit", "order", "distinct", "with", "qualify", "windows"):
            value = tree.args.get(clause)
            if value:
                fragment = " ".join(v.sql(dialect=DIALECT) for v in value) \
                    if isinstance(value, list) else value.sql(dialect=DIALECT)
                if clause == "limit":
                    raise SqlError("LIMIT is not supported without ORDER BY (the first rows to "
                                   "arrive are no result of the query): write ORDER BY ts LIMIT n",
                                   fragment)
                raise SqlError(f"{clause.upper()} is not supported yet", fragment)
        from_key = "from_" if "from_" in tree.args else "from"
        from_ = tree.args.get(from_key)
        if from_ is None:
            raise SqlError("a query needs a FROM clause", tree.sql(dialect=DIALECT))
        joins = tree.args.get("joins") or []
        plan = self.joined(from_.this, joins) if joins else self.from_clause(from_.this)
        if tree.args.get("match") is not None:
            plan = self.match_recognize(plan, tree.args["match"])
        tree = tree.copy()
        tree.set(from_key, None)
        tree.set("joins", None)
        tree.set("match", None)
        names = {c.name for c in plan.schema}
        tree = tree.transform(lambda n: _resolve(n, names)) if joins else tree.transform(_unqualify)
        where = tree.args.get("where")
        if where is not None:
            plan = Filter(plan, self.scalar(where.this))
            plan = _top_n(plan) or plan
        items = self.expand_star(tree.expressions, plan)
        group = tree.args.get("group")
        having = tree.args.get("having")
        if any(item.find(exp.Window) for item in items):
            if group is not None or having is not None:
                raise SqlError("OVER windows cannot be combined with GROUP BY or HAVING yet",
                               tree.sql(dialect=DIALECT))
            plan, items = self.over_window(plan, items)
        has_aggregates = any(_is_aggregate(n) for item in items for n in item.walk())
        unnests = [item for item in items if _unnested(item.this if isinstance(item, exp.Alias)
                                                       else item) is not None]
        if unnests and (group is not None or having is not None or has_aggregates):
            raise SqlError("unnest in the SELECT list of a grouped query is not supported: "
                           "unnest in a subquery and group its rows", unnests[0].sql(dialect=DIALECT))
        if group is None and having is None and not has_aggregates:
            names = _unique([_output_name(item, i) for i, item in enumerate(items)])
            values = [item.this if isinstance(item, exp.Alias) else item for item in items]
            if unnests:
                return ProjectSet(plan, tuple((n, self.select_item(v))
                                              for n, v in zip(names, values, strict=True)))
            return Project(plan, tuple((n, self.scalar(v))
                                       for n, v in zip(names, values, strict=True)))
        return self.aggregate(plan, items, group.expressions if group else [],
                              having.this if having is not None else None)

    def limited(self, plan: Plan, order: exp.Order, limit: exp.Limit) -> Plan:
        """``query ORDER BY c LIMIT n``: the first ``n`` rows of the query's output in ORDER BY
        order, a TopN over one partition (RisingWave's streaming ``ORDER BY ... LIMIT``). Under
        EMIT ON WINDOW CLOSE, ordered by the event time ascending, a row is emitted once its
        time is complete and no earlier row can still come, as a deduplication is; ORDER BY
        names output columns."""
        fragment = f"{order.sql(dialect=DIALECT)} {limit.sql(dialect=DIALECT)}"
        count = limit.expression
        if not (isinstance(count, exp.Literal) and not count.is_string and count.name.isdigit()
                and int(count.name) > 0):
            raise SqlError("LIMIT takes a positive whole number", fragment)
        columns = [c.name for c in plan.schema]
        keys = []
        for ordered in order.expressions:
            key = ordered.this
            if not isinstance(key, exp.Column) or key.name not in columns:
                raise SqlError(f"ORDER BY ... LIMIT orders by the query's output columns "
                               f"({', '.join(columns)}), not {key.sql(dialect=DIALECT)}", fragment)
            keys.append((ColumnRef(key.name), bool(ordered.args.get("desc"))))
        rank = "_limit_rank"
        while rank in columns:
            rank += "_"
        top = TopN(plan, (), tuple(keys), int(count.name), rank)
        return Project(top, tuple((c, ColumnRef(c)) for c in columns))

    def scalar(self, node: exp.Expression) -> Expr:
        return translate(node)

    def select_item(self, node: exp.Expression) -> Expr:
        """An item of a SELECT list that may be ``unnest(array)`` (:class:`ProjectSet`)."""
        array = _unnested(node)
        if array is None:
            return translate(node)
        return Unnest(translate(array))

    def match_recognize(self, plan: Plan, node: exp.MatchRecognize) -> Plan:
        """``MATCH_RECOGNIZE (...)`` over ``plan`` (:mod:`eowc.semantics.frontend.match_sql`)."""
        return match_recognize(plan, node)

    def joined(self, first: exp.Expression, joins: list[exp.Join]) -> Plan:
        """``first JOIN ... ON ...``. One join names a column both sides have by its side's
        alias (``l.ts``, ``r.ts``). A chain ``a JOIN b ON ... JOIN c ON ...`` is left-deep,
        ``(a JOIN b) JOIN c``, and names every column by its relation's alias (``a.ts``), so
        an unqualified name is the one column of that name in any of the relations, or is
        ambiguous."""
        if len(joins) == 1:
            return self.join(self.from_clause(first), first.alias_or_name, joins[0],
                             self.from_clause(joins[0].this))
        aliases = [first.alias_or_name]
        plan: Plan = _qualified(self.from_clause(first), aliases[0])
        for join in joins:
            alias = join.this.alias_or_name
            if alias in aliases:
                raise _SqlErrorAt(f"two relations of the join are called {alias}: give them "
                                  f"aliases", join.this)
            plan = self.join(plan, "+".join(aliases), join,
                             _qualified(self.from_clause(join.this), alias))
            aliases.append(alias)
        return plan

    def join(self, left: Plan, left_alias: str, join: exp.Join, right: Plan) -> Join:
        """``left JOIN right ON ...``, the relation ``join`` names being ``right``."""
        fragment = join.sql(dialect=DIALECT)
        on = join.args.get("on")
        method = (join.args.get("method") or "").upper()
        if method and (method != "ASOF" or (join.side or "LEFT").upper() != "LEFT" or join.kind):
            side = f"{join.side.upper()} " if join.side else ""  # NATURAL, ASOF RIGHT, ...
            raise SqlError(f"{method} {side}JOIN is not supported yet", fragment)
        if on is None or join.args.get("using"):
            raise SqlError("a join needs an ON condition (comma, CROSS and USING joins are not "
                           "supported)", fragment)
        if (join.kind or "").upper() == "CROSS" or \
                ((join.kind or "").upper() in ("SEMI", "ANTI") and (join.side or "LEFT") != "LEFT"):
            raise SqlError(f"{join.side} {join.kind.upper()} JOIN is not supported (LEFT SEMI "
                           f"and LEFT ANTI are)", fragment)
        right_alias = join.this.alias_or_name
        if left_alias == right_alias:
            raise SqlError(f"both sides of the join are called {left_alias}: give them aliases",
                           fragment)
        kind = (join.kind if (join.kind or "").upper() in ("SEMI", "ANTI")
                else join.side or "inner").lower()
        sides = Join(left, right, kind, Literal(True, SqlType.BOOLEAN), left_alias, right_alias).sides
        names = set(sides[0] + sides[1])
        condition = translate(on.transform(lambda n: _resolve(n, names)))
        if method == "ASOF":
            return _asof_join(Join(left, right, kind, condition, left_alias, right_alias), on,
                              lambda node: translate(node.transform(lambda n: _resolve(n, names))))
        return Join(left, right, kind, condition, left_alias, right_alias)

    def over_window(self, plan: Plan, items: list[exp.Expression]
                    ) -> tuple[Plan, list[exp.Expression]]:
        """The OVER clauses of ``items`` as one :class:`OverWindow` over ``plan``, and the
        items reading its result columns instead."""
        items = [exp.alias_(item.copy(), _output_name(item.this, i)) if isinstance(item, exp.Window)
                 else item.copy() for i, item in enumerate(items)]  # named by its function
        windows = [w for item in items for w in item.find_all(exp.Window)]
        shapes = {(tuple(p.sql(dialect=DIALECT) for p in w.args.get("partition_by") or []),
                   w.args["order"].sql(dialect=DIALECT) if w.args.get("order") else "")
                  for w in windows}
        if len(shapes) > 1:
            raise SqlError("every OVER clause of a SELECT must have the same PARTITION BY and "
                           "ORDER BY", ", ".join(w.sql(dialect=DIALECT) for w in windows))
        first = windows[0]
        if not first.args.get("order"):
            raise SqlError("an OVER window needs ORDER BY", first.sql(dialect=DIALECT))
        partition = tuple(self.scalar(p) for p in first.args.get("partition_by") or [])
        order = tuple((self.scalar(o.this), bool(o.args.get("desc")))
                      for o in first.args["order"].expressions)
        calls = []
        for i, window in enumerate(windows):
            function, args = _window_function(window.this)
            calls.append(WindowCall(f"_over{i}", function, args, _frame(window)))
            window.replace(exp.column(f"_over{i}"))
        return OverWindow(plan, partition, order, tuple(calls)), items

    def expand_star(self, items: list[exp.Expression], plan: Plan) -> list[exp.Expression]:
        expanded: list[exp.Expression] = []
        for item in items:
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                              and isinstance(item.this, exp.Star)):
                expanded.extend(exp.column(c.name) for c in plan.schema)
            else:
                expanded.append(item)
        return expanded

    def aggregate(self, plan: Plan, items: list[exp.Expression], group: list[exp.Expression],
                  having: exp.Expression | None) -> Plan:
        values = [item.this if isinstance(item, exp.Alias) else item for item in items]
        names = _unique([_output_name(item, i) for i, item in enumerate(items)])
        aliases = {item.alias: value for item, value in zip(items, values, strict=True)
                   if isinstance(item, exp.Alias)}
        input_columns = {c.name for c in plan.schema}
        keys: list[tuple[str, exp.Expression]] = []
        for node in group:
            if isinstance(node, exp.Literal) and not node.is_string:
                position = int(node.name)
                if not 1 <= position <= len(values):
                    raise SqlError("GROUP BY position is out of range", node.sql())
                node = values[position - 1]
            elif isinstance(node, exp.Column) and node.name not in input_columns \
                    and node.name in aliases:
                node = aliases[node.name]
            if any(_is_aggregate(n) for n in node.walk()):
                raise SqlError("aggregates are not allowed in GROUP BY", node.sql())
            # An expression key is named by its SQL text, which is what messages should show.
            keys.append((node.name if isinstance(node, exp.Column) else node.sql(dialect=DIALECT), node))
        key_names = _unique([k for k, _ in keys])
        by_text = {node.sql(dialect=DIALECT): name
                   for name, (_, node) in zip(key_names, keys, strict=True)}
        calls: dict[str, AggCall] = {}

        def hook(node: exp.Expression) -> Expr | None:
            text = node.sql(dialect=DIALECT)
            if text in by_text:
                return ColumnRef(by_text[text])
            if _is_aggregate(node):
                if text not in calls:
                    calls[text] = _aggregate_call(node, f"_agg{len(calls)}")
                return ColumnRef(calls[text].name)
            if isinstance(node, exp.Column):
                call = node.find_ancestor(exp.Anonymous)
                unknown = f"{call.name}() is not an aggregate function, so " if call else ""
                raise SqlError(f"{unknown}column {node.name} must appear in GROUP BY or be used "
                               f"in an aggregate function", node.sql(dialect=DIALECT))
            return None

        outputs = [translate(v, hook) for v in values]
        condition = translate(having, hook) if having is not None else None
        aggregate = Aggregate(plan, tuple((n, translate(node))
                                          for n, (_, node) in zip(key_names, keys, strict=True)),
                              tuple(calls.values()))
        result: Plan = aggregate
        if condition is not None:
            result = Filter(result, condition)
        return Project(result, tuple(zip(names, outputs, strict=True)))


def _asof_join(join: Join, on: exp.Expression, scalar: Callable[[exp.Expression], Expr]
               ) -> AsofJoin:
    """RisingWave's ``ASOF [LEFT] JOIN``: its ON condition is equalities between an expression
    of each side (at least one) and exactly one inequality (``<``, ``<=``, ``>``, ``>=``)
    between an expression of each side, ANDed (RisingWave refuses any other condition:
    "AsOf join requires at least 1 equal condition", "... exactly 1 inequality condition")."""
    name = "ASOF LEFT JOIN" if join.kind == "left" else "ASOF JOIN"
    left_names, right_names = (set(names) for names in join.sides)
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
    keys: list[tuple[Expr, Expr]] = []
    inequalities: list[tuple[exp.Expression, Expr, str, Expr]] = []
    for node in (on.flatten() if isinstance(on, exp.And) else [on]):
        conjunct = scalar(node)
        sides = None
        if isinstance(conjunct, Binary) and conjunct.op in ("=", *flipped):
            reads = (referenced_columns(conjunct.left), referenced_columns(conjunct.right))
            if reads[0] and reads[1] and reads[0] <= left_names and reads[1] <= right_names:
                sides = (conjunct.left, conjunct.op, conjunct.right)
            elif reads[0] and reads[1] and reads[0] <= right_names and reads[1] <= left_names:
                sides = (conjunct.right, flipped.get(conjunct.op, "="), conjunct.left)
        if sides is None:
            raise _SqlErrorAt(f"{name}'s ON condition is equalities and one inequality (<, <=, "
                              f">, >=) between the two sides, ANDed: this is neither", node)
        if sides[1] == "=":
            keys.append((sides[0], sides[2]))
        else:
            inequalities.append((node, *sides))
    if not keys:
        raise _SqlErrorAt(f"{name} needs at least one equality between the two sides in its ON "
                          f"condition (as RisingWave: AsOf join requires at least 1 equal "
                          f"condition)", on)
    if len(inequalities) != 1:
        raise _SqlErrorAt(f"{name} needs exactly one inequality (<, <=, >, >=) between the two "
                          f"sides in its ON condition, found {len(inequalities)} (as RisingWave: "
                          f"AsOf join requires exactly 1 inequality condition)",
                          inequalities[1][0] if inequalities else on)
    (_, left_order, op, right_order), = inequalities
    return AsofJoin(join.left, join.right, join.kind, join.condition, join.left_alias,
                    join.right_alias, tuple(k for k, _ in keys), tuple(k for _, k in keys),
                    left_order, op, right_order)


# ---------------------------------------------------------------------------------------------
# Scripts


def parse_script(text: str, view: str | None = None, dialect: str = "auto") -> Script:
    """Parse a script: ``CREATE SOURCE``/``CREATE TABLE`` statements, views (``CREATE
    [TEMPORARY | MATERIALIZED] VIEW name [AS] query``) and at most one unnamed query
    (``SELECT ...`` or Flink's ``INSERT INTO table SELECT ...``), in any order, in
    ``dialect``: ``risingwave``, ``flink`` or ``auto`` (the one the text is written in,
    :func:`~eowc.semantics.frontend.dialects.detect_dialect`). A statement
    reads a view by its name, in FROM, in a join or as a table function's table, as if the
    view's query were written there; a view may be defined after the statement that reads
    it, but never read itself. The query that is run is ``view`` when given, else the last
    view or query of the script; its ``EMIT ON WINDOW CLOSE`` decides the emit mode of the
    whole plan (a view it reads may leave it out, but may not emit on window close when the
    statement run emits on update). Errors name the line and column in ``text`` and quote it."""
    return _ScriptReader(text, dialect).script(view)


def parse_query(text: str, dialect: str = "auto") -> Query:
    """The query of a script (see :func:`parse_script`)."""
    return parse_script(text, dialect=dialect).query


@dataclass(frozen=True, eq=False)
class _Definition:
    """A view or query statement, read but not yet planned: its name (the view's, or the
    table ``INSERT INTO`` writes, or None), its query, its emit mode, the statement as
    written and its whole syntax tree (``statement_tree``, where errors are looked up).
    Definitions are equal only to themselves."""

    name: str | None
    tree: exp.Expression
    emit_on_window_close: bool
    statement: Statement
    statement_tree: exp.Expression
    is_view: bool


def _line_column(text: str, offset: int) -> tuple[int, int]:
    """The line and column (both from 1) of ``offset`` in ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _node_span(node: exp.Expression) -> tuple[int, int] | None:
    """Where ``node`` is in its statement's text: its own span, else its identifiers'."""
    span = text_span(node)
    if span is not None:
        return span
    spans = [text_span(i) or ((i.meta["start"], i.meta["end"] + 1) if "start" in i.meta else None)
             for i in node.find_all(exp.Identifier, exp.Column, exp.Literal)]
    spans = [s for s in spans if s is not None]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None


def _node_named(tree: exp.Expression, fragment: str | None) -> exp.Expression | None:
    """The first node of ``tree``, in the order of the text, that prints as ``fragment``."""
    if not fragment:
        return None
    for node in tree.walk(bfs=False):
        try:
            if text_span(node) is not None and node.sql(dialect=DIALECT) == fragment:
                return node
        except Exception:  # noqa: BLE001 (a node sqlglot cannot print alone is not the one)
            continue
    return None


def _quoted_names(message: str) -> list[str]:
    return re.findall(r"'([^']+)'", message)


class _ScriptReader:
    """Reads a script's statements, then plans its views and its query; a view is planned
    once, when first read (or in statement order), and its plan is shared by every statement
    that reads it."""

    def __init__(self, text: str, dialect: str = "auto") -> None:
        self.text = text
        try:
            self.dialect, _ = dialect_named(dialect, text)
        except ValueError as error:
            raise SqlError(str(error)) from None
        self.how = "detected from the text" if dialect == "auto" else "as asked"
        self.sources: dict[str, Source] = {}
        self.views: dict[str, _Definition] = {}
        self.queries: list[_Definition] = []
        self.defined_at: dict[str, tuple[str, int]] = {}  # name -> ("table" or "view", line)
        self.targets: set[str] = set()
        self.planned: dict[str, Query] = {}
        self.planning: list[_Definition] = []
        self.reads: dict[_Definition, set[str]] = {}  # the views each reads, at any depth
        try:
            statements = script_statements(text, self.dialect)
        except SqlError as error:
            raise self.placed(error, Statement(text, 0), None) from None
        for statement in statements:
            self.read(statement)

    def script(self, view: str | None) -> Script:
        definitions = sorted([*self.views.values(), *self.queries], key=lambda d: d.statement.offset)
        if not definitions:
            raise SqlError("the script has no query (SELECT ..., INSERT INTO ... SELECT ... or "
                           "CREATE [MATERIALIZED] VIEW ... AS SELECT ...)")
        queries = {d: self.plan(d) for d in definitions}
        if view is None:
            run = definitions[-1]
        elif view in self.views:
            run = self.views[view]
        else:
            what = f"{view} is a table" if view in self.sources else "no view has that name"
            raise SqlError(f"cannot run view {view!r}: {what} (the script's views: "
                           f"{', '.join(self.views) or 'none'})")
        self.check_emit_mode(run)
        sinks = {name: self.sources[name] for name in self.targets if name in self.sources}
        return Script({n: s for n, s in self.sources.items() if n not in sinks}, queries[run],
                      {name: queries[d] for name, d in self.views.items()}, sinks)

    def at(self, error: SqlError, statement: Statement, offset: int, end: int | None = None,
           quote: bool = False) -> SqlError:
        """``error`` placed at ``offset`` of ``statement`` (to ``end``), with the line of the
        script there; ``quote``: its fragment becomes the user's text there."""
        start = statement.offset + offset
        line, column = _line_column(self.text, start)
        line_start = start - column + 1
        line_end = self.text.find("\n", start)
        line_end = len(self.text) if line_end < 0 else line_end
        stop = min(statement.offset + end, line_end) if end is not None else start + 1
        fragment = " ".join(statement.text[offset:end].split()) if quote and end is not None \
            else None
        return error.at(line, column, self.text[line_start:line_end].rstrip(), stop - start,
                        fragment)

    def placed(self, error: SqlError, statement: Statement,
               tree: exp.Expression | None) -> SqlError:
        """``error``, placed at its node in ``statement``: the node it names, else the node
        that prints as its fragment, else the column its message names; else at the
        statement's start."""
        if error.line is not None:
            return error
        if isinstance(error, _ParseFailure):
            return self.at(error, statement, error.offset, error.offset + error.width)
        node = error.node if isinstance(error, _SqlErrorAt | Refused) else None
        if node is None and tree is not None:
            node = _node_named(tree, error.fragment)
        if node is None and tree is not None:
            names = set(_quoted_names(error.reason))
            node = next((c for c in tree.find_all(exp.Column) if c.name in names), None)
        span = _node_span(node) if node is not None else None
        if span is None:
            return self.at(error if error.fragment else SqlError(error.reason, statement.text),
                           statement, 0)
        return self.at(error, statement, span[0], span[1], quote=True)

    def read(self, statement: Statement) -> None:
        tree = None
        try:
            tree = _parse(statement, self.dialect, self.how)
            emit = self.emit(tree)
            _refuse_unsupported(tree)
            tree = rewrite(tree, self.dialect)
            if isinstance(tree, exp.Create) and tree.args.get("kind") in ("TABLE", "SOURCE"):
                source = _source(tree, statement.text)
                self.define(source.name, "table", tree.this.this, statement)
                self.sources[source.name] = source
                return
            if tree.find(exp.WatermarkColumnConstraint) is not None:
                raise _SqlErrorAt("WATERMARK FOR is only allowed in CREATE SOURCE/TABLE",
                                  tree.find(exp.WatermarkColumnConstraint))
            definition = self.definition(tree, emit, statement)
            if definition.is_view:
                self.views[definition.name] = definition  # type: ignore[index]
            elif self.queries:
                first = _line_column(self.text, self.queries[0].statement.offset)[0]
                raise SqlError(f"a script holds exactly one query besides its views (the first "
                               f"is at line {first}): name the others with CREATE VIEW name AS",
                               statement.text)
            else:
                self.queries.append(definition)
        except SqlError as error:
            raise self.placed(error, statement, tree) from None

    @staticmethod
    def emit(tree: exp.Expression) -> bool:
        """Whether the statement ends with ``EMIT ON WINDOW CLOSE`` (the clause leaves the
        tree: the statement's emit mode is what it says)."""
        found = [node for node in tree.walk() if node.args.get(EMIT) is not None]
        for node in found:
            node.set(EMIT, None)
        if found and isinstance(tree, exp.Create) and tree.args.get("kind") in ("TABLE", "SOURCE"):
            raise _SqlErrorAt("EMIT ON WINDOW CLOSE belongs to a query, not to a table", tree)
        return bool(found)

    def definition(self, tree: exp.Expression, emit: bool, statement: Statement) -> _Definition:
        """A view (``CREATE ... VIEW``) or a query (``SELECT``, ``INSERT INTO t SELECT``)."""
        name, is_view, whole = None, False, tree
        if isinstance(tree, exp.Create) and tree.args.get("kind") == "VIEW":
            name_node = tree.this.this if isinstance(tree.this, exp.Table) else tree.this
            name, is_view, tree = name_node.name, True, tree.expression
            self.define(name, "view", name_node, statement)
        elif isinstance(tree, exp.Insert):
            target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
            name, tree = target.name, tree.expression
            self.targets.add(name)
        if not isinstance(tree, exp.Select | exp.Union):
            raise SqlError("expected CREATE SOURCE/TABLE, CREATE VIEW, INSERT INTO or a SELECT "
                           "query", statement.text)
        return _Definition(name, tree, emit, statement, whole, is_view)

    def define(self, name: str, kind: str, node: exp.Expression, statement: Statement) -> None:
        """Record that ``name`` (the identifier ``node``) names a table or a view; a name
        is defined once."""
        if name in self.defined_at:
            first, line = self.defined_at[name]
            raise _SqlErrorAt(f"table {name} is declared twice (first at line {line})"
                              if kind == first == "table" else
                              f"{name} is defined twice (first as a {first} at line {line})", node)
        span = _node_span(node)
        self.defined_at[name] = (kind, _line_column(self.text, statement.offset +
                                                    (span[0] if span else 0))[0])

    def plan(self, definition: _Definition) -> Query:
        """The query of a view or query statement (planned once)."""
        key = definition.name if definition.is_view else None
        if key is not None and key in self.planned:
            return self.planned[key]
        self.planning.append(definition)
        self.reads[definition] = set()
        try:
            self.refuse_processing_time(definition.tree)
            planner = _Planner(self.sources, self.view, tuple(self.views))
            plan = planner.query(definition.tree)
            _ = plan.schema  # check types now, so errors name the statement
        except PlanError as error:
            raise self.placed(SqlError(str(error)), definition.statement,
                              definition.statement_tree) from None
        except SqlError as error:
            raise self.placed(error, definition.statement, definition.statement_tree) from None
        finally:
            self.planning.pop()
        refusal = refused_by_flink(plan) if self.dialect == "flink" else None
        if refusal is not None:
            raise self.placed(SqlError(f"Flink refuses this query: {refusal}"), definition.statement,
                              definition.statement_tree) from None
        at_once = False
        if not definition.emit_on_window_close and self.dialect == "flink" and runs_as_eowc(plan):
            # Flink runs every stateful operator of the plan as eowc's EOWC plan does, without
            # an EMIT clause; the rows of an interval join on top are its rows, at once
            object.__setattr__(definition, "emit_on_window_close", True)
            at_once = emits_at_once(plan)
        query = Query(plan, emit_on_window_close=definition.emit_on_window_close, at_once=at_once,
                      name=definition.name, sources=tuple(s for n, s in self.sources.items()
                                                          if n not in self.targets),
                      order_by=presentation_order(definition.tree, plan.schema))
        if query.emit_on_window_close:
            self.refuse_asof(query, definition)
        if key is not None:
            self.planned[key] = query
        return query

    def refuse_asof(self, query: Query, definition: _Definition) -> None:
        """An ASOF join does not run under EMIT ON WINDOW CLOSE (``not_under_eowc``),
        placed at its ASOF keyword when the statement has it, else at the statement."""
        try:
            refuse_asof_under_eowc(query)
        except PlanError as error:
            asof = next((j for j in definition.tree.find_all(exp.Join)
                         if (j.args.get("method") or "").upper() == "ASOF"), None)
            raise self.placed(_SqlErrorAt(str(error), asof) if asof is not None else
                              SqlError(str(error)), definition.statement,
                              definition.statement_tree) from None

    def refuse_processing_time(self, tree: exp.Expression) -> None:
        """A query may not read a ``PROCTIME()`` column of a table it reads."""
        tables = {t.name for t in tree.find_all(exp.Table)}  # a window TVF's table too
        columns = {c for t in tables if t in self.sources for c in self.sources[t].processing_time}
        for column in tree.find_all(exp.Column):
            if column.name in columns:
                raise _SqlErrorAt(f"{PROCESSING_TIME} ({column.name} AS PROCTIME())", column)

    def view(self, reference: exp.Expression) -> Plan | None:
        """The plan of the view ``reference`` names (None if no view has that name), read
        by the statement being planned."""
        definition = self.views.get(reference.name)
        if definition is None:
            return None
        if definition in self.planning:
            cycle = [d.name for d in self.planning[self.planning.index(definition):]]
            raise _SqlErrorAt(f"view {definition.name} reads itself: "
                              f"{' -> '.join(str(n) for n in [*cycle, definition.name])}",
                              reference)
        plan = self.plan(definition).plan
        self.reads[self.planning[-1]].update({definition.name, *self.reads[definition]})  # type: ignore[arg-type]
        return plan

    def check_emit_mode(self, run: _Definition) -> None:
        """The statement run decides the emit mode of the whole plan: a view it reads that
        emits on window close cannot be read by a statement that emits on update (its
        append-only output would be replaced by the changelog of its query)."""
        if run.emit_on_window_close:
            return
        for name in sorted(self.reads[run]):
            if self.views[name].emit_on_window_close:
                what = f"view {run.name}" if run.is_view else "the query"
                raise self.at(SqlError(
                    f"view {name} emits on window close, but {what}, which reads it "
                    f"and is run, emits on update: a plan has the one emit mode of "
                    f"the statement run, so end that statement with EMIT ON WINDOW "
                    f"CLOSE, or drop the clause from view {name}"), run.statement, 0)


def parse_interval_text(text: str) -> int:
    """An interval given on the command line (``'5 seconds'``, ``'1 minute 30 seconds'``,
    ``'500 ms'``, ``'00:00:10'``, or ``0``) in microseconds, read as an SQL interval is."""
    if text.strip() in ("0", ""):
        return 0
    try:
        return interval_text_micros(text)
    except ValueError as error:
        raise SqlError(f"cannot read the interval {text!r}: {error}") from None
