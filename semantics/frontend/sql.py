"""The SQL front end: a script of ``CREATE SOURCE``/``CREATE TABLE`` statements, views and a
query, parsed with sqlglot into a :class:`Script` whose query (a
:class:`~eowc.semantics.ir.plan.Query`) is the statement that is run.

sqlglot parses standard SQL; three streaming extensions are lifted out of the token stream
before it does, each by one small function:

* ``WATERMARK FOR c AS c - INTERVAL '5' SECOND`` inside a CREATE statement;
* a trailing ``EMIT ON WINDOW CLOSE``;
* Flink's ``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), ...))``, rewritten to RisingWave's
  ``TUMBLE(t, ts, ...)`` (the argument order is the same in both, SEMANTICS.md §2b).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.expressions import DIALECT, interval_micros, sql_type, translate
from eowc.semantics.frontend.match_sql import match_recognize
from eowc.semantics.ir.expr import (
    Binary,
    Column,
    ColumnRef,
    Expr,
    Literal,
)
from eowc.semantics.ir.plan import (
    AGGREGATE_FUNCTIONS,
    DEFAULT_FRAME,
    WINDOW_FUNCTIONS,
    AggCall,
    Aggregate,
    CountTVF,
    Filter,
    Frame,
    Join,
    OverWindow,
    Plan,
    Project,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    Union,
    WatermarkDecl,
    WindowCall,
    WindowTVF,
)
from eowc.semantics.ir.values import SqlType
from eowc.semantics.ir.windows import WindowKind, WindowSpec


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
    places it at the node's line and column."""

    def __init__(self, message: str, node: exp.Expression, fragment: str | None = None) -> None:
        super().__init__(message, fragment if fragment is not None else node.sql(dialect=DIALECT))
        self.node = node


#: The plan of a view named by a table reference, or None when no view has that name.
ViewLookup = Callable[[exp.Expression], Plan | None]


# ---------------------------------------------------------------------------------------------
# Lifting the streaming extensions out of the text


def _tokens(text: str) -> list[Token]:
    try:
        return list(sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text))
    except Exception as error:  # sqlglot raises TokenError for unterminated strings etc.
        raise SqlError("cannot read the SQL text", str(error)) from None


def script_statements(text: str) -> list[Statement]:
    """The statements of a script: a semicolon outside strings, comments and parentheses
    ends one. A semicolon inside parentheses ends nothing and is ignored (seed 004's job
    writes one after each subquery's GROUP BY)."""
    statements, start, depth = [], 0, 0
    for token in _tokens(text):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if token.token_type is TokenType.SEMICOLON and depth <= 0:
            statements.append(Statement(text[start:token.start], start))
            start = token.end + 1
    statements.append(Statement(text[start:], start))
    return [Statement(s.text.strip(), s.offset + len(s.text) - len(s.text.lstrip()))
            for s in statements if s.text.strip()]


def _word(token: Token) -> str:
    return token.text.upper()


def _matching_paren(tokens: list[Token], open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(tokens)):
        if tokens[i].token_type is TokenType.L_PAREN:
            depth += 1
        elif tokens[i].token_type is TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return i
    raise SqlError("unbalanced parentheses", "".join(t.text for t in tokens[open_index:]))


Edit = tuple[int, int, str]  # replace text[start:end] by the string


def _apply(text: str, edits: list[Edit]) -> str:
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def lift_watermark(text: str) -> tuple[str, str | None]:
    """Remove ``[,] WATERMARK FOR c AS <expr>`` from a CREATE statement; return the
    statement and the watermark clause ``c AS <expr>`` (or None)."""
    tokens = _tokens(text)
    for i, token in enumerate(tokens[:-1]):
        if _word(token) == "WATERMARK" and tokens[i + 1].token_type is TokenType.FOR:
            depth, j = 0, i + 2
            while j < len(tokens):
                kind = tokens[j].token_type
                if kind is TokenType.L_PAREN:
                    depth += 1
                elif kind is TokenType.R_PAREN:
                    if depth == 0:
                        break
                    depth -= 1
                elif kind is TokenType.COMMA and depth == 0:
                    break
                j += 1
            start = tokens[i - 1].start if tokens[i - 1].token_type is TokenType.COMMA \
                else token.start
            clause = text[tokens[i + 2].start:tokens[j - 1].end + 1]
            end = tokens[j - 1].end + 1
            if tokens[i - 1].token_type is not TokenType.COMMA and j < len(tokens) and \
                    tokens[j].token_type is TokenType.COMMA:
                end = tokens[j].end + 1
            return text[:start] + text[end:], clause
    return text, None


def lift_emit_on_window_close(text: str) -> tuple[str, bool]:
    """Remove a trailing ``EMIT ON WINDOW CLOSE``; say whether it was there."""
    tokens = _tokens(text)
    words = [_word(t) for t in tokens[-4:]]
    if words == ["EMIT", "ON", "WINDOW", "CLOSE"]:
        return text[:tokens[-4].start].rstrip(), True
    for i in range(len(tokens) - 1):
        if _word(tokens[i]) == "EMIT" and _word(tokens[i + 1]) == "ON":
            raise SqlError("EMIT ON WINDOW CLOSE must end the query",
                           text[tokens[i].start:].strip())
    return text, False


_TVF_NAMES = {"TUMBLE", "HOP", "CUMULATE", "SESSION_WINDOW", "COUNT_TUMBLE", "COUNT_HOP"}
_COUNT_TVFS = ("COUNT_TUMBLE", "COUNT_HOP")


def rewrite_flink_tvfs(text: str) -> str:
    """``TABLE(F(TABLE t, DESCRIPTOR(c), args))`` to ``F(t, c, args)``."""
    text = _session_window(_partition_last(text, ("SESSION", *_COUNT_TVFS)))
    tokens = _tokens(text)
    edits: list[Edit] = []
    for i in range(len(tokens) - 3):  # a TVF inside a TVF's subquery is rewritten too
        if (tokens[i].token_type is TokenType.TABLE and tokens[i + 1].token_type is TokenType.L_PAREN
                and _word(tokens[i + 2]) in _TVF_NAMES
                and tokens[i + 3].token_type is TokenType.L_PAREN):
            outer_close = _matching_paren(tokens, i + 1)
            inner_close = _matching_paren(tokens, i + 3)
            edits.append((tokens[i].start, tokens[i + 2].start, ""))
            edits.append((tokens[inner_close].end + 1, tokens[outer_close].end + 1, ""))
            depth = 0
            for j in range(i + 4, inner_close):  # the TVF's own arguments only
                if depth == 0 and tokens[j].token_type is TokenType.TABLE:
                    edits.append((tokens[j].start, tokens[j + 1].start, ""))
                if depth == 0 and _word(tokens[j]) == "DESCRIPTOR" \
                        and tokens[j + 1].token_type is TokenType.L_PAREN:
                    close = _matching_paren(tokens, j + 1)
                    edits.append((tokens[j].start, tokens[j + 2].start, ""))
                    edits.append((tokens[close].start, tokens[close].end + 1, ""))
                depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[j].token_type, 0)
    return _apply(text, edits)


def _partition_last(text: str, functions: tuple[str, ...]) -> str:
    """``F(TABLE t PARTITION BY k1, k2, DESCRIPTOR(ts), ...)`` for each table function ``F`` of
    ``functions`` (SESSION, COUNT_TUMBLE, COUNT_HOP) to ``F(TABLE t, DESCRIPTOR(ts), ..., k1,
    k2)``: the partition keys move to the end, after the constant arguments (a gap, row
    counts), which tells them apart."""
    tokens = _tokens(text)
    for i, token in enumerate(tokens[:-1]):
        if _word(token) not in functions or tokens[i + 1].token_type is not TokenType.L_PAREN:
            continue
        close = _matching_paren(tokens, i + 1)
        words = [_word(t) for t in tokens[i + 2:close]]
        if "PARTITION BY" not in words or "DESCRIPTOR" not in words:
            continue
        by = i + 2 + words.index("PARTITION BY")
        descriptor = i + 2 + words.index("DESCRIPTOR")
        keys = text[tokens[by].end + 1:tokens[descriptor].start].strip().rstrip(",").strip()
        rewritten = (text[:tokens[by].start].rstrip() + ", " + text[tokens[descriptor].start:
                     tokens[close].start].rstrip() + f", {keys}" + text[tokens[close].start:])
        return _partition_last(rewritten, functions)
    return text


def _session_window(text: str) -> str:
    """SESSION is a keyword to sqlglot: the table function is read as SESSION_WINDOW."""
    tokens = _tokens(text)
    for token in reversed(tokens[:-1]):
        at = tokens.index(token)
        if _word(token) == "SESSION" and tokens[at + 1].token_type is TokenType.L_PAREN:
            text = text[:token.start] + "SESSION_WINDOW" + text[token.end + 1:]
    return text


def _parse_one(text: str) -> exp.Expression | None:
    """``sqlglot.parse_one`` in the project's dialect, which also reads ``MATCH_RECOGNIZE``
    (sqlglot's parser has it; the RisingWave tokenizer does not mark the keyword). A statement
    holds no semicolon but inside parentheses, where it ends nothing
    (:func:`script_statements`)."""
    dialect = sqlglot.Dialect.get_or_raise(DIALECT)
    tokens = [t for t in dialect.tokenize(text) if t.token_type is not TokenType.SEMICOLON]
    for token in tokens:
        if token.text.upper() == "MATCH_RECOGNIZE" and token.token_type is TokenType.VAR:
            token.token_type = TokenType.MATCH_RECOGNIZE
    parsed = dialect.parser().parse(tokens, text)
    return parsed[0] if parsed else None


def _parse(text: str) -> exp.Expression:
    try:
        tree = _parse_one(text)
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        message = detail.get("description", str(error)) if isinstance(detail, dict) else str(error)
        line = detail.get("line") if isinstance(detail, dict) else None
        where = f" (line {line} of the statement)" if line else ""
        raise SqlError(f"cannot parse the SQL{where}: {message}", text.strip()) from None
    if tree is None:
        raise SqlError("empty statement")
    return tree


# ---------------------------------------------------------------------------------------------
# Sources


def _watermark(clause: str, table: str, columns: tuple[Column, ...]) -> WatermarkDecl:
    column_name, _, expression = clause.partition(" AS ")
    if not expression:
        column_name, _, expression = clause.partition(" as ")
    column_name = column_name.strip().strip('"')
    node = _parse(f"SELECT {expression}").expressions[0]
    shape = f"WATERMARK FOR {column_name} AS {column_name} - INTERVAL '...' <unit>"
    if isinstance(node, exp.Column) and node.name == column_name:
        delay = 0
    elif isinstance(node, exp.Sub) and isinstance(node.this, exp.Column) \
            and node.this.name == column_name:
        delay = interval_micros(node.expression)
    else:
        raise SqlError(f"the watermark of {table} must have the form {shape}",
                       f"WATERMARK FOR {clause}")
    if column_name not in {c.name for c in columns}:
        raise SqlError(f"WATERMARK FOR names an unknown column of {table}", column_name)
    return WatermarkDecl(column_name, delay)


def _source(tree: exp.Create, watermark_clause: str | None, fragment: str) -> Source:
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise SqlError("CREATE SOURCE/TABLE needs a column list", fragment)
    name = schema.this.name
    columns: list[Column] = []
    primary_key: list[str] = []
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            columns.append(Column(item.name, sql_type(item.args["kind"], fragment)))
            if any(isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint)
                   for c in item.args.get("constraints") or []):
                primary_key.append(item.name)
        elif isinstance(item, exp.PrimaryKey):
            primary_key.extend(e.name for e in item.expressions)
        else:
            raise SqlError("unsupported item in CREATE", item.sql(dialect=DIALECT))
    watermark = _watermark(watermark_clause, name, tuple(columns)) if watermark_clause else None
    try:
        return Source(name, tuple(columns), watermark, tuple(primary_key))
    except PlanError as error:
        raise SqlError(str(error), fragment) from None


# ---------------------------------------------------------------------------------------------
# Aggregates

_AGGREGATES = {
    exp.Count: "count", exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg",
    exp.FirstValue: "first_value", exp.LastValue: "last_value", exp.Median: "median",
}


def _is_aggregate(node: exp.Expression) -> bool:
    return isinstance(node, exp.WithinGroup) or type(node) in _AGGREGATES


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
    function = _AGGREGATES[type(node)]
    argument: Any = node.this
    distinct = False
    order_by = None
    if isinstance(argument, exp.Distinct):
        if len(argument.expressions) != 1:
            raise SqlError("DISTINCT aggregates take one argument", fragment)
        distinct, argument = True, argument.expressions[0]
    if isinstance(argument, exp.Order):
        keys = argument.expressions
        if function not in ("first_value", "last_value") or len(keys) != 1 \
                or keys[0].args.get("desc"):
            raise SqlError("ORDER BY inside an aggregate is only supported as "
                           "first_value/last_value(x ORDER BY t)", fragment)
        order_by, argument = translate(keys[0].this), argument.this
    if node.args.get("expressions"):
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
    return AggCall(function, translate(argument), distinct, order_by, name=name)


# ---------------------------------------------------------------------------------------------
# SELECT


def _output_name(item: exp.Expression, position: int) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name.rsplit(".", 1)[-1]  # a join's l.ts is named ts
    node = item.this if isinstance(item, exp.WithinGroup) else item
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
    name = _WINDOW_FUNCTIONS.get(type(node)) or _AGGREGATES.get(type(node)) or (
        node.sql_name().lower() if isinstance(node, exp.Func) else "")
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
    if name not in WINDOW_FUNCTIONS and name not in AGGREGATE_FUNCTIONS:
        raise SqlError(f"unsupported window function {name or type(node).__name__}", fragment)
    if isinstance(node.this, exp.Star) or (name == "count" and node.this is None):
        return "count", ()
    args = [a for a in (node.this, node.args.get("offset"), node.args.get("default"))
            if isinstance(a, exp.Expression)] + list(node.expressions)
    return name, tuple(translate(a) for a in args)


def _frame(window: exp.Window) -> Frame:
    """The frame clause of an OVER window (:data:`DEFAULT_FRAME` without one)."""
    spec = window.args.get("spec")
    if spec is None:
        return DEFAULT_FRAME
    fragment = spec.sql(dialect=DIALECT)
    kind = str(spec.args.get("kind") or "").lower()
    if kind not in ("rows", "range"):
        raise SqlError(f"only ROWS and RANGE frames are supported, not {kind.upper()}", fragment)

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
    try:
        return Frame(kind, start, end)
    except PlanError as error:
        raise SqlError(str(error), fragment) from None


def _top_n(plan: Filter) -> Plan | None:
    """``WHERE rn <= N`` over ``ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) AS rn`` as
    a :class:`TopN` (``rn < N`` and ``rn = 1`` too), or None."""
    condition, below = plan.predicate, plan.input
    if not (isinstance(condition, Binary) and condition.op in ("<=", "<", "=")
            and isinstance(condition.left, ColumnRef) and isinstance(condition.right, Literal)
            and isinstance(condition.right.value, int) and isinstance(below, Project)
            and isinstance(below.input, OverWindow) and len(below.input.calls) == 1):
        return None
    over, call = below.input, below.input.calls[0]
    items = dict(below.items)
    if call.function != "row_number" or call.frame != DEFAULT_FRAME or \
            items.get(condition.left.name) != ColumnRef(call.name):
        return None
    limit = condition.right.value - (condition.op == "<")
    if condition.op == "=" and limit != 1:
        return None
    return Project(TopN(over.input, over.partition_by, over.order_by, limit, call.name),
                   below.items)


def _qualified(plan: Plan, alias: str) -> Project:
    """``plan`` with every column named by ``alias`` (``a.ts``): a relation in a chain of
    joins."""
    return Project(plan, tuple((f"{alias}.{c.name}", ColumnRef(c.name)) for c in plan.schema))


def _unqualify(node: exp.Expression) -> exp.Expression:
    """``w.window_start`` to ``window_start``: a query reads one relation at a time."""
    if isinstance(node, exp.Column) and node.table and not isinstance(node.this, exp.Star):
        return exp.column(node.name)
    return node


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
        stands for: a declared table (a scan of it) or a view (its plan, as if its query
        were written in its place)."""
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
            if isinstance(node.this, exp.Anonymous):
                return self.window_tvf(node.this)
            return self.relation(node)
        raise SqlError("unsupported FROM item", node.sql(dialect=DIALECT))

    def window_tvf(self, call: exp.Anonymous) -> Plan:
        fragment = call.sql(dialect=DIALECT)
        kind_name = call.name.upper()
        if kind_name == "SESSION_WINDOW":
            return self.session(call)
        if kind_name in _COUNT_TVFS:
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
        """A SELECT, or a UNION ALL of them."""
        if isinstance(tree, exp.Union):
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
        """``SESSION(t, ts, gap [, partition key, ...])`` (the Flink form is rewritten to it)."""
        fragment = call.sql(dialect=DIALECT)
        args = call.expressions
        if len(args) < 3 or not isinstance(args[0], exp.Column | exp.Table) or not all(
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
        [, key, ...])``: sizes in rows (the Flink form with PARTITION BY is rewritten to it)."""
        fragment = call.sql(dialect=DIALECT)
        kind_name = call.name.upper()
        counts = 1 if kind_name == "COUNT_TUMBLE" else 2
        shape = ("TABLE(COUNT_TUMBLE(TABLE t [PARTITION BY key, ...], DESCRIPTOR(time_column), "
                 "size))" if counts == 1 else "TABLE(COUNT_HOP(TABLE t [PARTITION BY key, ...], "
                 "DESCRIPTOR(time_column), size, slide))")
        args = call.expressions
        if len(args) < 2 + counts or not isinstance(args[0], exp.Column | exp.Table) \
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

    def select(self, tree: exp.Select) -> Plan:
        for clause in ("order", "limit", "offset", "distinct", "with", "qualify", "windows"):
            value = tree.args.get(clause)
            if value:
                fragment = " ".join(v.sql(dialect=DIALECT) for v in value) \
                    if isinstance(value, list) else value.sql(dialect=DIALECT)
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
        if group is None and having is None and not has_aggregates:
            names = _unique([_output_name(item, i) for i, item in enumerate(items)])
            values = [item.this if isinstance(item, exp.Alias) else item for item in items]
            return Project(plan, tuple((n, self.scalar(v))
                                       for n, v in zip(names, values, strict=True)))
        return self.aggregate(plan, items, group.expressions if group else [],
                              having.this if having is not None else None)

    def scalar(self, node: exp.Expression) -> Expr:
        return translate(node)

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
        return Join(left, right, kind, condition, left_alias, right_alias)

    def over_window(self, plan: Plan, items: list[exp.Expression]
                    ) -> tuple[Plan, list[exp.Expression]]:
        """The OVER clauses of ``items`` as one :class:`OverWindow` over ``plan``, and the
        items reading its result columns instead."""
        items = [item.copy() for item in items]
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


# ---------------------------------------------------------------------------------------------
# Scripts


def parse_script(text: str, view: str | None = None) -> Script:
    """Parse a script: ``CREATE SOURCE``/``CREATE TABLE`` statements, views (``CREATE
    [TEMPORARY | MATERIALIZED] VIEW name [AS] query``) and at most one unnamed query
    (``SELECT ...`` or Flink's ``INSERT INTO table SELECT ...``), in any order. A statement
    reads a view by its name, in FROM, in a join or as a table function's table, as if the
    view's query were written there; a view may be defined after the statement that reads
    it, but never read itself. The query that is run is ``view`` when given, else the last
    view or query of the script; its ``EMIT ON WINDOW CLOSE`` decides the emit mode of the
    whole plan (a view it reads may leave it out, but may not emit on window close when the
    statement run emits on update). Errors name the line and column in ``text``."""
    return _ScriptReader(text).script(view)


def parse_query(text: str) -> Query:
    """The query of a script (see :func:`parse_script`)."""
    return parse_script(text).query


@dataclass(frozen=True, eq=False)
class _Definition:
    """A view or query statement, read but not yet planned: its name (the view's, or the
    table ``INSERT INTO`` writes, or None), its query, its emit mode, the statement as
    written and as sqlglot read it (``body``, after the streaming extensions were lifted).
    Definitions are equal only to themselves."""

    name: str | None
    tree: exp.Expression
    emit_on_window_close: bool
    statement: Statement
    body: str
    is_view: bool


def _line_column(text: str, offset: int) -> tuple[int, int]:
    """The line and column (both from 1) of ``offset`` in ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _node_start(node: exp.Expression) -> int | None:
    """Where ``node`` starts in the text sqlglot read: its first identifier's position."""
    starts = [i.meta["start"] for i in node.find_all(exp.Identifier) if "start" in i.meta]
    return min(starts) if starts else None


def _offset_as_written(written: str, body: str, offset: int) -> int:
    """Where the word at ``offset`` of ``body`` is in ``written`` (the statement before its
    streaming extensions were lifted): at the same occurrence of the same word, since lifting
    removes keywords and parentheses but keeps the user's names in their order. The
    statement's start when the word cannot be found."""
    body_tokens = _tokens(body)
    found = next((t for t in body_tokens if t.start <= offset <= t.end), None)
    if found is None:
        return 0
    word = found.text.upper()
    nth = sum(1 for t in body_tokens if t.start < found.start and t.text.upper() == word)
    same = [t for t in _tokens(written) if t.text.upper() == word]
    return same[nth].start if nth < len(same) else 0


class _ScriptReader:
    """Reads a script's statements, then plans its views and its query; a view is planned
    once, when first read (or in statement order), and its plan is shared by every statement
    that reads it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sources: dict[str, Source] = {}
        self.views: dict[str, _Definition] = {}
        self.queries: list[_Definition] = []
        self.defined_at: dict[str, tuple[str, int]] = {}  # name -> ("table" or "view", line)
        self.targets: set[str] = set()
        self.planned: dict[str, Query] = {}
        self.planning: list[_Definition] = []
        self.reads: dict[_Definition, set[str]] = {}  # the views each reads, at any depth
        for statement in script_statements(text):
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

    def placed(self, error: SqlError, statement: Statement, body: str | None) -> SqlError:
        """``error``, placed at its node in ``statement`` (else at the statement's start)."""
        if error.line is not None:
            return error
        offset = 0
        if isinstance(error, _SqlErrorAt) and body is not None:
            start = _node_start(error.node)
            offset = _offset_as_written(statement.text, body, start) if start is not None else 0
        return error.at(*_line_column(self.text, statement.offset + offset))

    def read(self, statement: Statement) -> None:
        body = None
        try:
            body, tree, emit, watermark = self.lifted(statement.text)
            if isinstance(tree, exp.Create) and tree.args.get("kind") == "TABLE":
                if emit:
                    raise SqlError("EMIT ON WINDOW CLOSE belongs to a query, not to a table",
                                   statement.text)
                source = _source(tree, watermark, statement.text)
                self.define(source.name, "table", tree.this.this, statement, body)
                self.sources[source.name] = source
                return
            if watermark is not None:
                raise SqlError("WATERMARK FOR is only allowed in CREATE SOURCE/TABLE",
                               statement.text)
            definition = self.definition(tree, emit, statement, body)
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
            raise self.placed(error, statement, body) from None

    def lifted(self, text: str) -> tuple[str, exp.Expression, bool, str | None]:
        """The statement as sqlglot reads it, its syntax tree, whether it ends with EMIT ON
        WINDOW CLOSE, and its WATERMARK FOR clause."""
        body, emit = lift_emit_on_window_close(text)
        body = rewrite_flink_tvfs(body)
        tokens = _tokens(body)
        if len(tokens) > 1 and tokens[0].token_type is TokenType.CREATE \
                and _word(tokens[1]) == "SOURCE":
            body = body[:tokens[1].start] + "TABLE" + body[tokens[1].end + 1:]
        body, watermark = lift_watermark(body)
        return body, _parse(body), emit, watermark

    def definition(self, tree: exp.Expression, emit: bool, statement: Statement,
                   body: str) -> _Definition:
        """A view (``CREATE ... VIEW``) or a query (``SELECT``, ``INSERT INTO t SELECT``)."""
        name, is_view = None, False
        if isinstance(tree, exp.Create) and tree.args.get("kind") == "VIEW":
            name_node = tree.this.this if isinstance(tree.this, exp.Table) else tree.this
            name, is_view, tree = name_node.name, True, tree.expression
            self.define(name, "view", name_node, statement, body)
        elif isinstance(tree, exp.Insert):
            target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
            name, tree = target.name, tree.expression
            self.targets.add(name)
        if not isinstance(tree, exp.Select | exp.Union):
            raise SqlError("expected CREATE SOURCE/TABLE, CREATE VIEW, INSERT INTO or a SELECT "
                           "query", statement.text)
        return _Definition(name, tree, emit, statement, body, is_view)

    def define(self, name: str, kind: str, node: exp.Expression, statement: Statement,
               body: str) -> None:
        """Record that ``name`` (the identifier ``node``) names a table or a view; a name
        is defined once."""
        if name in self.defined_at:
            first, line = self.defined_at[name]
            raise _SqlErrorAt(f"table {name} is declared twice (first at line {line})"
                              if kind == first == "table" else
                              f"{name} is defined twice (first as a {first} at line {line})", node)
        offset = _offset_as_written(statement.text, body, _node_start(node) or 0)
        self.defined_at[name] = (kind, _line_column(self.text, statement.offset + offset)[0])

    def plan(self, definition: _Definition) -> Query:
        """The query of a view or query statement (planned once)."""
        key = definition.name if definition.is_view else None
        if key is not None and key in self.planned:
            return self.planned[key]
        self.planning.append(definition)
        self.reads[definition] = set()
        try:
            planner = _Planner(self.sources, self.view, tuple(self.views))
            plan = planner.query(definition.tree)
            _ = plan.schema  # check types now, so errors name the statement
        except PlanError as error:
            raise SqlError(str(error), definition.statement.text).at(
                *_line_column(self.text, definition.statement.offset)) from None
        except SqlError as error:
            raise self.placed(error, definition.statement, definition.body) from None
        finally:
            self.planning.pop()
        query = Query(plan, emit_on_window_close=definition.emit_on_window_close,
                      name=definition.name, sources=tuple(s for n, s in self.sources.items()
                                                          if n not in self.targets))
        if key is not None:
            self.planned[key] = query
        return query

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
                raise SqlError(f"view {name} emits on window close, but {what}, which reads it "
                               f"and is run, emits on update: a plan has the one emit mode of "
                               f"the statement run, so end that statement with EMIT ON WINDOW "
                               f"CLOSE, or drop the clause from view {name}").at(
                    *_line_column(self.text, run.statement.offset))


def parse_interval_text(text: str) -> int:
    """``'5 seconds'``, ``'1 minute'``, ``'500 ms'``-style text (or ``0``) in microseconds."""
    if text.strip() in ("0", ""):
        return 0
    words = text.strip().replace("ms", "millisecond").replace("us", "microsecond")
    try:
        node = sqlglot.parse_one(f"INTERVAL '{words}'", read="risingwave")
    except sqlglot.errors.ParseError:
        raise SqlError(f"cannot read the interval {text!r} (write e.g. '5 seconds')") from None
    return interval_micros(node)
