"""A second oracle (seed 001, Definition 5): an EOWC query answered by a plain batch SELECT on
INPUT with the watermark substituted, run by DuckDB.

``Q'(INPUT, W)`` is compiled to one DuckDB query over a table ``input`` (with joins or unions,
one table ``input_<source>`` per source) that holds INPUT, each row with ``_wm``, the watermark
in force when it arrived. The trigger of each stateful operator becomes a ``WHERE`` (or
``QUALIFY``) on the substituted ``W``; the per-window late check of a window aggregate under
Spark and Flink is a ``WHERE`` on each (row, window) against ``_wm``. Times are BIGINT
microseconds on both sides, so values compare exactly.

What it shares with the reference interpreter, and so does not check:

* the plan (:mod:`eowc.semantics.ir`: the front end's output, expressions' types);
* the trigger functions of each convention (:mod:`eowc.semantics.rules.triggers`: which
  comparison makes a time complete, a window's closing offset), restated here in SQL;
* the input loop (:func:`eowc.semantics.engines.inputs.arrived_input`): INPUT, which rows
  were late when they arrived, and the source watermarks;
* the watermark derivation through operators and the trigger columns
  (:mod:`eowc.semantics.analysis`), and the split of a query at its joins and unions
  (:func:`eowc.semantics.engines.multi_input.split_multi_input`);
* under ``--ties row-id`` over joins and unions, which source columns a row of the join or
  union still has (:func:`eowc.semantics.ir.plan.row_lineage`, the definition of its stream
  key); the positions they arrived at are looked up in SQL.

What it computes independently: the query's result, by DuckDB's SQL engine (grouping,
windows, OVER frames, top-N, joins, the trigger filters). It imports nothing from the
interpreter's operator code (:mod:`eowc.semantics.operators`,
:mod:`eowc.semantics.engines.dataflow`, :mod:`eowc.semantics.engines.interpreter`;
``tests/test_oracle.py`` checks) and runs none of it (the modules it reads load
``operators.protocol`` for its types and ``operators.join`` for the executors). A construct
the translation does not cover raises :class:`OracleUnsupported` naming it.
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from eowc.semantics.analysis.completion import (
    late_check_is_per_window,
    ties_to_latest_arrival,
    watermark_columns,
)
from eowc.semantics.analysis.operator_inputs import (
    per_window_tvf,
    refuse_join_judging_late_rows,
    window_join_input,
)
from eowc.semantics.analysis.watermark_derivation import (
    TimeBound,
    as_join_reads,
    derive,
    join_time_bounds,
    watermark_in_reading,
)
from eowc.semantics.engines.inputs import LateRow, arrived_input, never_late
from eowc.semantics.engines.multi_input import (
    MultiInputSplit,
    has_several_inputs,
    is_subquery,
    sources_of,
    split_multi_input,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import (
    Binary,
    Case,
    Cast,
    Column,
    ColumnRef,
    Expr,
    Func,
    InList,
    IsNull,
    Literal,
    Row,
    Schema,
    Unary,
    compile_expr,
    operand_shape,
    sql_of,
)
from eowc.semantics.ir.plan import (
    NEVER_ARRIVED,
    POSITIONAL_FUNCTIONS,
    AggCall,
    Aggregate,
    AsofJoin,
    CountTVF,
    Filter,
    Frame,
    GapFill,
    Join,
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
    WindowTVF,
    aggregate_call,
    row_lineage,
    walk,
)
from eowc.semantics.ir.values import (
    MAX_TIME,
    MICROS_PER_MILLI,
    MIN_TIME,
    ArrayType,
    DecimalShape,
    SqlType,
    ValueType,
    computing_under,
    decimal_digits,
    decimal_sum_shape,
    decimal_text,
    nulls_first,
    parse_date,
    parse_timestamp,
    value_rules,
)
from eowc.semantics.ir.windows import WindowKind
from eowc.semantics.rules.emit_modes import refuse_at_once
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    default_ties,
)

#: NO_WATERMARK in the ``_wm`` column (DuckDB BIGINT has no infinity).
NEGATIVE_INFINITY = -(2**62)
#: The DuckDB type of each column type: times, dates and intervals as BIGINT microseconds; a
#: DECIMAL column of the input as DECIMAL(38, s), ``s`` the largest scale of its values
#: (:func:`decimal_column_scales`), DECIMAL(38, 18) where the oracle makes one up.
_TYPES = {SqlType.BIGINT: "BIGINT", SqlType.DOUBLE: "DOUBLE", SqlType.VARCHAR: "VARCHAR",
          SqlType.BOOLEAN: "BOOLEAN", SqlType.TIMESTAMP: "BIGINT", SqlType.INTERVAL: "BIGINT",
          SqlType.TIMESTAMPTZ: "BIGINT", SqlType.TIMESTAMP_LTZ: "BIGINT", SqlType.DATE: "BIGINT",
          SqlType.DECIMAL: "DECIMAL(38, 18)"}
_DECIMAL_COLUMN_SCALE = 18


def _duckdb_type(sql_type: ValueType) -> str:
    """The DuckDB type of a column: :data:`_TYPES`; an ARRAY as a LIST of its element's."""
    if isinstance(sql_type, ArrayType):
        return f"{_TYPES[sql_type.element]}[]"
    return _TYPES[sql_type]


_DAY = 86_400_000_000
_FIXED = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000,
          "hour": 3_600_000_000, "day": 86_400_000_000}


class OracleUnsupported(PlanError):
    """The query uses something the DuckDB translation does not cover."""


def _name(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _floor_mod(x: str, unit: int) -> str:
    return f"((({x}) % {unit} + {unit}) % {unit})"


# ------------------------------------------------------------------------------ expressions

def sql_expression(expr: Expr, schema: Schema) -> str:
    """``expr`` in DuckDB SQL with the evaluator's semantics (:mod:`eowc.semantics.ir.expr`)."""
    def sub(e: Expr) -> str:
        return sql_expression(e, schema)

    if isinstance(expr, ColumnRef):
        return _name(expr.name)
    if isinstance(expr, Literal):
        value = expr.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int):
            return f"CAST({value} AS BIGINT)"
        if isinstance(value, float):
            return f"CAST('{value!r}' AS DOUBLE)"  # 'nan', 'inf' too
        if expr.type is SqlType.DECIMAL:
            precision, scale = decimal_digits(value)
            return f"CAST('{decimal_text(value)}' AS DECIMAL({max(precision, scale + 1)}, {scale}))"
        return _string(str(value))
    if isinstance(expr, Unary):
        if expr.op == "NOT":
            return f"(NOT {sub(expr.operand)})"
        negated = compile_expr(expr, schema).type
        if negated is SqlType.BIGINT:
            return _integer_result(f"(-{_wide(sub(expr.operand))})", negated)
        return f"(-{sub(expr.operand)})"
    if isinstance(expr, Binary):
        return _binary(expr, schema, sub)
    if isinstance(expr, IsNull):
        return f"({sub(expr.operand)} IS {'NOT ' if expr.negated else ''}NULL)"
    if isinstance(expr, InList):
        items = ", ".join(sub(i) for i in expr.items)
        return f"({sub(expr.operand)} {'NOT ' if expr.negated else ''}IN ({items}))"
    if isinstance(expr, Case):
        whens = " ".join(f"WHEN {sub(c)} THEN {sub(r)}" for c, r in expr.whens)
        default = f" ELSE {sub(expr.default)}" if expr.default is not None else ""
        return f"(CASE {whens}{default} END)"
    if isinstance(expr, Cast):
        source = compile_expr(expr.operand, schema).type
        if expr.type.is_time and isinstance(expr.operand, Literal) \
                and isinstance(expr.operand.value, str):
            return f"CAST({parse_timestamp(expr.operand.value)} AS BIGINT)"
        if expr.type is SqlType.DATE and isinstance(expr.operand, Literal) \
                and isinstance(expr.operand.value, str):
            return f"CAST({parse_date(expr.operand.value)} AS BIGINT)"
        if expr.type is SqlType.DECIMAL and source in (SqlType.BIGINT, SqlType.DECIMAL,
                                                       SqlType.VARCHAR):
            scale = _DECIMAL_COLUMN_SCALE if expr.scale is None else expr.scale
            return f"CAST({sub(expr.operand)} AS DECIMAL({expr.precision or 38}, {scale}))"
        if source is expr.type or (source in (SqlType.TIMESTAMP, SqlType.INTERVAL)
                                   and expr.type is SqlType.BIGINT):
            return sub(expr.operand)
        if expr.type is SqlType.DOUBLE and source is SqlType.BIGINT:
            return f"CAST({sub(expr.operand)} AS DOUBLE)"
        raise OracleUnsupported(f"the oracle does not translate {sql_of(expr)}")
    if isinstance(expr, Func):
        return _function(expr, schema, sub)
    raise OracleUnsupported(f"the oracle does not translate {sql_of(expr)}")


def _binary(expr: Binary, schema: Schema, sub: Any) -> str:
    left, right, op = sub(expr.left), sub(expr.right), expr.op
    if op in ("AND", "OR", "=", "<>", "<", "<=", ">", ">="):
        return f"({left} {op} {right})"
    types = compile_expr(expr.left, schema).type, compile_expr(expr.right, schema).type
    result = compile_expr(expr, schema).type
    if op == "||":
        if types != (SqlType.VARCHAR, SqlType.VARCHAR):
            raise OracleUnsupported(f"the oracle does not translate {sql_of(expr)}")
        return f"({left} || {right})"
    if op == "/":
        if result is SqlType.DECIMAL:  # DuckDB divides decimals as doubles: in integers here
            return _decimal_quotient(expr, schema, left, right)
        floats = SqlType.DOUBLE in types
        return f"({left} / {right})" if floats else _integer_result(f"({left} // {right})", result)
    if op == "%" and SqlType.DOUBLE in types:
        raise OracleUnsupported(f"the oracle does not translate {sql_of(expr)}")
    if SqlType.DATE in types and result is SqlType.BIGINT:  # date - date: days between
        return f"(({left} - {right}) // {_DAY})"
    if result is SqlType.DATE:  # date +/- days, days + date
        days = right if types[0] is SqlType.DATE else left
        date = left if types[0] is SqlType.DATE else right
        return _time_result(f"({date} {op} {days} * {_DAY})")
    if result.is_time and op in "+-":
        return _time_result(f"({left} {op} {right})")
    if result is SqlType.BIGINT and op in "+-*":
        return _integer_result(f"({_wide(left)} {op} {_wide(right)})", result)
    return f"({left} {op} {right})"


def _unscaled(sql: str, scale: int) -> str:
    """The DECIMAL (or integer) ``sql`` of scale ``scale`` as the HUGEINT of its digits."""
    return f"CAST({sql} AS HUGEINT)" if scale == 0 else f"CAST({sql} * {10 ** scale} AS HUGEINT)"


def _rounded_quotient(numerator: str, denominator: str, shape: DecimalShape) -> str:
    """The quotient ``q`` whose ``numerator / denominator`` (HUGEINTs) is ``q * 10^(k + 1)``,
    ``k`` the scale of ``shape``, as the DECIMAL ``shape``: its digits to one place past ``k``,
    truncated, then DuckDB's cast to the shape, which rounds half away from zero (the engines'
    HALF_UP: the dropped digit alone decides it) and fails out of range, or gives NULL where
    the engine's overflow is NULL (Flink)."""
    places = shape[1] + 1
    if places > 38:
        raise OracleUnsupported(f"the oracle computes decimal quotients to 37 places, not "
                                f"{shape[1]}")
    truncated = (f"CAST(sign({numerator}) * sign({denominator}) * "
                 f"(abs({numerator}) // abs({denominator})) AS DECIMAL(38, 0))")
    unit = f"CAST('{decimal_text(Decimal(1).scaleb(-places))}' AS DECIMAL(38, {places}))"
    return (f"(CASE WHEN {denominator} = 0 THEN NULL ELSE "
            f"{_decimal_cast(f'{truncated} * {unit}', shape)} END)")


def _decimal_cast(sql: str, shape: DecimalShape) -> str:
    """``sql`` as ``DECIMAL(p, s)``: an error out of range, or NULL under Flink's rules."""
    cast = "TRY_CAST" if value_rules().decimal_overflow == "null" else "CAST"
    return f"{cast}({sql} AS DECIMAL({shape[0]}, {shape[1]}))"


def _decimal_quotient(expr: Binary, schema: Schema, left: str, right: str) -> str:
    """``left / right`` of decimals at the engine's type (Spark's and Flink's division rule,
    :func:`~eowc.semantics.ir.expr.decimal_result_shape`), exactly: ``a / b`` is ``A * 10^(s2
    + k + 1) / (B * 10^s1)`` in integers for the digits ``A``, ``B`` of scales ``s1``, ``s2``."""
    rules = value_rules()
    shape = compile_expr(expr, schema).shape
    sides = [operand_shape(compile_expr(e, schema), e, rules) for e in (expr.left, expr.right)]
    if shape is None or sides[0] is None or sides[1] is None:
        raise OracleUnsupported(f"the oracle translates a decimal quotient where its type is "
                                f"known (columns declared DECIMAL(p, s), spark and flink "
                                f"conventions), not {sql_of(expr)}")
    (_, s1), (_, s2) = sides[0], sides[1]
    numerator = f"({_unscaled(left, s1)} * {10 ** (s2 + shape[1] + 1)})"
    denominator = _unscaled(right, s2) if s1 == 0 else f"({_unscaled(right, s2)} * {10 ** s1})"
    return _rounded_quotient(numerator, denominator, shape)


def _integer_average(total: str, count: str) -> str:
    """avg of integers where it is an integer (Flink): ``total / count`` toward zero, as Java
    divides longs."""
    return f"CAST(CASE WHEN {total} >= 0 THEN {total} // {count} ELSE -((-{total}) // {count}) END AS BIGINT)"


def _decimal_aggregate(call: AggCall, shape: DecimalShape | None, value: str) -> str:
    """sum or avg of decimals of type ``shape`` by the engine's rules: DuckDB's exact sum, cast
    to the sum's type where ``shape`` is known (out of range: an error, or NULL under Flink);
    the average as the integer quotient of the sum's digits by the count, at the engine's
    scale (Spark ``s + 4``, Flink ``max(6, s)``)."""
    rules = value_rules()
    distinct = "DISTINCT " if call.distinct else ""
    total = f"sum({distinct}{value})"
    if call.function == "sum":
        return total if shape is None else _decimal_cast(total, decimal_sum_shape(shape, rules))
    if shape is None or rules.decimal_avg_scale is None:
        raise OracleUnsupported("the oracle translates avg of decimals whose type is known "
                                "(columns declared DECIMAL(p, s), spark and flink conventions)")
    added, minimum = rules.decimal_avg_scale
    scale = min(rules.decimal_max_precision, max(minimum, shape[1] + added))
    numerator = f"({_unscaled(total, shape[1])} * {10 ** (scale + 1 - shape[1])})"
    return _rounded_quotient(numerator, f"count({distinct}{value})", (38, scale))


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _wide(sql: str) -> str:
    """An integer operand as HUGEINT, so that a BIGINT result is computed exactly first."""
    return f"CAST({sql} AS HUGEINT)"


def _integer_result(sql: str, result: SqlType) -> str:
    """An exact integer result as a BIGINT the convention's way: wrapped to 64 bits (Flink),
    else DuckDB's own BIGINT cast, which fails out of range."""
    if result is not SqlType.BIGINT:
        return sql
    if value_rules().integer_overflow == "wrap":
        return f"CAST((((CAST({sql} AS HUGEINT) + {2**63}) % {2**64} + {2**64}) % {2**64} " \
               f"- {2**63}) AS BIGINT)"
    return f"CAST({sql} AS BIGINT)"


def _time_result(sql: str) -> str:
    """A time in microseconds, failing outside years 1 to 9999 (the engines' range)."""
    low, high = MIN_TIME, MAX_TIME  # 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999
    return f"(CASE WHEN {sql} BETWEEN {low} AND {high} THEN {sql} " \
           f"ELSE error('timestamp out of range') END)"


def _function(expr: Func, schema: Schema, sub: Any) -> str:
    name, args = expr.name, expr.args
    if name in ("date_trunc", "tumble_start"):
        if name == "date_trunc":
            unit_name = str(args[0].value).lower()  # type: ignore[attr-defined]
            value = sub(args[1])
            if unit_name == "week":
                day = _FIXED["day"]
                days = f"(({value} - {_floor_mod(value, day)}) // {day})"
                return f"(({days} - {_floor_mod(days + ' + 3', 7)}) * {day})"
            if unit_name not in _FIXED:
                raise OracleUnsupported(f"the oracle does not translate {sql_of(expr)}")
            unit = _FIXED[unit_name]
        else:
            value, unit = sub(args[0]), args[1].value  # type: ignore[attr-defined]
        return f"({value} - {_floor_mod(value, unit)})"
    if name == "coalesce":
        return f"coalesce({', '.join(sub(a) for a in args)})"
    if name == "array":
        element = compile_expr(expr, schema).type.element  # type: ignore[union-attr]
        return f"CAST(list_value({', '.join(sub(a) for a in args)}) AS {_TYPES[element]}[])"
    if name == "array_element":  # DuckDB counts a negative index from the end
        index = sub(args[1])
        return f"(CASE WHEN {index} >= 1 THEN list_extract({sub(args[0])}, {index}) END)"
    if name in ("cardinality", "array_length"):
        return f"len({sub(args[0])})"
    if name == "generate_series":  # DuckDB's scalar generate_series: a list, both ends in
        return f"generate_series({', '.join(sub(a) for a in args)})"
    if name == "abs":
        return f"abs({sub(args[0])})"
    if name in _STRING_FUNCTIONS:
        return _STRING_FUNCTIONS[name]([sub(a) for a in args])
    if name == "substring":
        text, start = sub(args[0]), sub(args[1])
        begin = f"greatest({start}, 1)"
        if len(args) == 2:
            return f"substring({text}, {begin})"
        end = f"({start} + {sub(args[2])})"  # the first position not taken
        return f"substring({text}, {begin}, greatest({end} - {begin}, 0))"
    if name == "round":
        digits = f"CAST({sub(args[1])} AS INTEGER)" if len(args) == 2 else "0"
        value = sub(args[0])
        if compile_expr(args[0], schema).type is SqlType.DOUBLE:  # its shortest decimal form
            return f"CAST(round(CAST(CAST({value} AS VARCHAR) AS DECIMAL(38, 17)), {digits}) AS DOUBLE)"
        return f"round({value}, {digits})"
    if name == "sqrt":
        value = f"CAST({sub(args[0])} AS DOUBLE)"
        negative = "CAST('NaN' AS DOUBLE)" if value_rules().negative_sqrt == "nan" else \
            "error('cannot take square root of a negative number')"
        return f"(CASE WHEN {value} < 0 THEN {negative} ELSE sqrt({value}) END)"
    if name == "power":
        return f"power(CAST({sub(args[0])} AS DOUBLE), CAST({sub(args[1])} AS DOUBLE))"
    if name == "concat":
        parts = [f"CAST({sub(a)} AS VARCHAR)" for a in args]
        if value_rules().concat_skips_null:
            return f"concat({', '.join(parts)})"
        return "(" + " || ".join(parts) + ")"
    raise OracleUnsupported(f"the oracle does not translate {sql_of(expr)}")


_STRING_FUNCTIONS = {
    "like": lambda a: f"({a[0]} LIKE {a[1]} ESCAPE '\\')",
    "ilike": lambda a: f"({a[0]} ILIKE {a[1]} ESCAPE '\\')",
    "replace": lambda a: f"(CASE WHEN {a[1]} = '' THEN {a[0]} ELSE replace({a[0]}, {a[1]}, {a[2]}) END)",
    "btrim": lambda a: f"trim({a[0]}, {a[1] if len(a) > 1 else chr(39) + ' ' + chr(39)})",
    "ltrim": lambda a: f"ltrim({a[0]}, {a[1] if len(a) > 1 else chr(39) + ' ' + chr(39)})",
    "rtrim": lambda a: f"rtrim({a[0]}, {a[1] if len(a) > 1 else chr(39) + ' ' + chr(39)})",
}


# ------------------------------------------------------------------------------ plans

class _Compiler:
    """Each plan node as a subquery; every relation carries ``_wm`` (the watermark in force
    when its source row arrived)."""

    def __init__(self, query: Query, convention: Convention, watermark: Watermark,
                 split: MultiInputSplit | None = None,
                 marks: Mapping[str, Watermark] | None = None, by_arrival: bool = False) -> None:
        self.query, self.convention, self.watermark = query, convention, watermark
        #: ``--ties row-id``: the input rows carry ``_pos``, their position in the arrival log.
        self.by_arrival = by_arrival
        self.per_window = late_check_is_per_window(query.plan, convention)
        #: With joins or unions: ``query`` is the part above them, reading ``split.derived``,
        #: and ``marks`` are the source watermarks a join's outer rows are judged by.
        self.split, self.marks = split, marks
        #: The window TVFs over a source whose rows a window join judges per window by its
        #: own watermark (:func:`window_join_input`): their rows carry it as ``_wm``.
        lower = split.lower if split is not None else query.plan
        self.judged_windows = {id(judged.windows) for judged in (
            window_join_input(lower, s, convention) for s in sources_of(lower)) if judged}

    def columns(self, plan: Plan) -> str:
        return ", ".join(_name(c.name) for c in plan.schema)

    def complete(self, value: str) -> str:
        """``time_is_complete(value, W)`` in SQL."""
        w = self.watermark
        if w == CLOSED_WATERMARK:
            return "TRUE"
        if w == NO_WATERMARK:
            return "FALSE"
        return f"({value} {self.convention.late_comparison} {int(w)})"

    def closes(self, end: str) -> str:
        """``window_closes`` of a window ending at ``end``, in SQL."""
        w = self.watermark
        if w == CLOSED_WATERMARK:
            return "TRUE"
        if w == NO_WATERMARK:
            return "FALSE"
        return f"(({end} - {self.convention.closing_offset}) <= {int(w)})"

    def relation(self, plan: Plan, rule: bool) -> str:
        if isinstance(plan, Scan):
            if self.split is not None and plan.source == self.split.derived:
                return self.relation(self.split.lower, rule)
            table = "input" if self.split is None else _table(plan.source)
            return f"SELECT {self.columns(plan)}, {self.hidden(plan)} FROM {table}"
        if isinstance(plan, Union):  # by position: the first input names the columns
            return " UNION ALL ".join(f"SELECT {self.columns(p)}, _wm FROM ({self.input_of(p, rule)})"
                                      for p in plan.inputs)
        if isinstance(plan, AsofJoin):
            return self.asof_join(plan, rule)
        if isinstance(plan, Join):
            return self.join(plan, rule)
        below = self.relation(plan.input, rule)  # type: ignore[attr-defined]
        schema = plan.input.schema  # type: ignore[attr-defined]
        if isinstance(plan, Filter):
            return f"SELECT * FROM ({below}) WHERE {sql_expression(plan.predicate, schema)}"
        if isinstance(plan, Project):
            items = ", ".join(f"{sql_expression(e, schema)} AS {_name(n)}" for n, e in plan.items)
            return f"SELECT {items}, {self.hidden(plan)} FROM ({below})"
        if isinstance(plan, ProjectSet):  # DuckDB zips unnests as PostgreSQL does
            items = ", ".join(f"unnest({sql_expression(e.array, schema)}) AS {_name(n)}"
                              if isinstance(e, Unnest) else f"{sql_expression(e, schema)} AS {_name(n)}"
                              for n, e in plan.items)
            return f"SELECT {items}, {self.hidden(plan)} FROM ({below})"
        if isinstance(plan, WindowTVF):
            return self.window_tvf(plan, below)
        if isinstance(plan, SessionTVF):
            return self.session(plan, below, rule)
        if isinstance(plan, CountTVF):
            return self.count_window(plan, below)
        if isinstance(plan, Aggregate):
            return self.aggregate(plan, below, rule)
        if isinstance(plan, OverWindow):
            return self.over(plan, below, rule)
        if isinstance(plan, GapFill):
            return self.gap_fill(plan, below, rule)
        if isinstance(plan, TopN):
            return self.top_n(plan, below, rule)
        if type(plan).__name__ == "MatchRecognize":
            raise OracleUnsupported("the oracle does not translate MATCH_RECOGNIZE: DuckDB has "
                                    "no row pattern recognition (the interpreter is checked "
                                    "against the specification instead)")
        raise OracleUnsupported(f"the oracle does not translate {type(plan).__name__}")

    def input_of(self, plan: Plan, rule: bool) -> str:
        """An input of a join or a union; a subquery of one source with a stateful operator
        is compiled with its own trigger, at its source's watermark."""
        if not is_subquery(plan):
            return self.relation(plan, rule)
        (source,) = sources_of(plan)
        assert source.watermark is not None
        mark = (self.marks or {}).get(f"{source.name}.{source.watermark.column}", NO_WATERMARK)
        own = _Compiler(Query(plan, True, None, (source,)), self.convention, mark, self.split,
                        self.marks, self.by_arrival)
        return own.relation(plan, rule)

    def join(self, plan: Join, rule: bool) -> str:
        """The SQL join on the output names; an unmatched outer row is kept only once no row
        still to come can match it (``unmatched_row_is_final`` at ``marks``, in SQL)."""
        left_names, right_names = plan.sides
        sides = []
        for side, names, marker in ((plan.left, left_names, "_lm"), (plan.right, right_names, "_rm")):
            renamed = ", ".join(f"{_name(c.name)} AS {_name(n)}"
                                for c, n in zip(side.schema, names, strict=True))
            sides.append(f"SELECT {renamed}, 1 AS {marker} FROM ({self.input_of(side, rule)})")
        kind = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN",
                "full": "FULL JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN"}[plan.kind]
        condition = sql_expression(plan.condition, plan.joined_schema)
        joined = f"SELECT * FROM ({sides[0]}) AS _l {kind} ({sides[1]}) AS _r ON {condition}"
        bounds = join_time_bounds(plan)
        # a match needs every conjunct: a row is final once any bound in its direction says so
        left_side, right_side = derive(plan.left).columns, derive(plan.right).columns
        left_final = self.outer_final([(b.left, -b.lower, b.right, b) for b in bounds
                                       if b.lower is not None],
                                      (right_side, right_names), (left_side, left_names))
        right_final = self.outer_final([(b.right, b.upper, b.left, b) for b in bounds
                                        if b.upper is not None],
                                       (left_side, left_names), (right_side, right_names))
        keep = []
        if plan.kind == "anti":  # every row of an ANTI join is an unmatched left row
            keep.append(left_final)
        if plan.kind in ("left", "full"):
            keep.append(f"(_rm IS NOT NULL OR {left_final})")
        if plan.kind in ("right", "full"):
            keep.append(f"(_lm IS NOT NULL OR {right_final})")
        where = f" WHERE {' AND '.join(keep)}" if keep else ""
        return f"SELECT {self.columns(plan)}, 0 AS _wm FROM ({joined}){where}"

    def asof_join(self, plan: AsofJoin, rule: bool) -> str:
        """RisingWave's ASOF join in DuckDB's SQL, written out rather than DuckDB's own ASOF
        JOIN (whose choice among right rows of equal ordered value is not documented): each
        left row (numbered ``_lid``) LEFT JOINed with every right row satisfying the whole ON
        condition, ranked per left row by the right ordered value (ascending for ``<``/``<=``,
        descending for ``>``/``>=``) and then the right side's tie order (its primary key,
        then every column, NULLs first); the first is kept, and a left row without one only
        in ASOF LEFT JOIN."""
        left_names, right_names = plan.sides
        sides = []
        for side, names, extra in ((plan.left, left_names, "row_number() OVER () AS _lid"),
                                   (plan.right, right_names, "1 AS _rm")):
            renamed = ", ".join(f"{_name(c.name)} AS {_name(n)}"
                                for c, n in zip(side.schema, names, strict=True))
            sides.append(f"SELECT {renamed}, {extra} FROM ({self.input_of(side, rule)})")
        condition = sql_expression(plan.condition, plan.joined_schema)
        direction = "ASC" if plan.op in ("<", "<=") else "DESC"
        source = next(n.source for n in walk(plan.right) if isinstance(n, Scan))
        own = [c.name for c in plan.right.schema]
        ties = [right_names[own.index(k)] for k in source.primary_key if k in own] + list(right_names)
        order = ", ".join([f"{sql_expression(plan.right_order, plan.joined_schema)} {direction}",
                           *(f"{_name(n)} ASC NULLS FIRST" for n in ties)])
        ranked = (f"SELECT *, row_number() OVER (PARTITION BY _lid ORDER BY {order}) AS _rank "
                  f"FROM ({sides[0]}) AS _l LEFT JOIN ({sides[1]}) AS _r ON {condition}")
        keep = "_rank = 1" + ("" if plan.kind == "left" else " AND _rm IS NOT NULL")
        return f"SELECT {self.columns(plan)}, 0 AS _wm FROM ({ranked}) WHERE {keep}"

    def outer_final(self, bounds: list[tuple[str, int, str, TimeBound]],
                    other: tuple[Sequence[Any], Sequence[str]],
                    own: tuple[Sequence[Any], Sequence[str]]) -> str:
        """``unmatched_row_is_final(column + shift, W_other)`` in SQL for any of ``bounds``
        (this side's column, its shift, the other side's column, the bound; a NULL time:
        final), the other side read as the join reads it (``as_join_reads``); ``other`` and
        ``own``: each side's derivations and column names."""
        (other_side, other_names), (own_side, own_names) = other, own
        marks = self.marks or {}
        if all(w == CLOSED_WATERMARK for w in marks.values()):
            return "TRUE"
        finals = []
        for column, shift, other_column, bound in bounds:
            derivation = as_join_reads(other_side[list(other_names).index(other_column)], bound,
                                       own_side[list(own_names).index(column)], self.convention)
            w = NO_WATERMARK if derivation is None else \
                watermark_in_reading(derivation, marks, self.convention)
            finals.append(f"{_name(column)} IS NULL")
            if w != NO_WATERMARK:
                op = self.convention.late_comparison
                finals.append(f"{_name(column)} + {shift} {op} {int(w)}")
        return f"({' OR '.join(finals)})" if finals else "FALSE"

    def window_tvf(self, plan: WindowTVF, below: str) -> str:
        spec, t = plan.spec, _name(plan.time_column)
        if spec.kind is WindowKind.TUMBLE:
            start = f"({t} - {_floor_mod(f'{t} - {spec.offset}', spec.size)})"
            windows = (f"SELECT *, {start} AS _s, {start} + {spec.size} AS _e FROM ({below}) "
                       f"WHERE {t} IS NOT NULL")  # a NULL time (an outer join's) is in no window
        elif spec.kind is WindowKind.HOP:
            last = f"({t} - {_floor_mod(f'{t} - {spec.offset}', spec.slide)})"
            count = -(-spec.size // spec.slide)
            windows = (f"SELECT b.*, s AS _s, s + {spec.size} AS _e FROM ({below}) b, "
                       f"LATERAL (SELECT unnest(range({last} - {(count - 1) * spec.slide}, "
                       f"{last} + {spec.slide}, {spec.slide})) AS s) WHERE s + {spec.size} > {t}")
        else:  # CUMULATE: the period's start, ends every step up to the size
            period = f"({t} - {_floor_mod(f'{t} - {spec.offset}', spec.size)})"
            windows = (f"SELECT b.*, {period} AS _s, e AS _e FROM ({below}) b, "
                       f"LATERAL (SELECT unnest(range({period} + {spec.slide}, "
                       f"{period} + {spec.size} + {spec.slide}, {spec.slide})) AS e) "
                       f"WHERE e > {t}")
        accepts = ""
        if self.per_window or id(plan) in self.judged_windows:
            # window_accepts(window, W_before): W_before < closing watermark
            accepts = f" WHERE _wm < _e - {self.convention.closing_offset}"
        names = ", ".join(_name(c.name) for c in plan.input.schema)
        return (f"SELECT {names}, _s AS window_start, _e AS window_end, _e - {MICROS_PER_MILLI} "
                f"AS window_time, {self.hidden(plan)} FROM ({windows}){accepts}")

    def session(self, plan: SessionTVF, below: str, rule: bool) -> str:
        """Sessions by window functions: a row starts one when the previous row of its key is
        ``gap`` or more before it (more than ``gap``, where touching sessions merge, unless
        the first row at its time arrived once the session before had closed: under the
        convention's window close, ``_wm >= t - closing_offset``); a running sum numbers them.
        Under the trigger only the rows of closed sessions (``window_closes`` of
        ``[first, last + gap)``) are kept."""
        t, gap = _name(plan.time_column), plan.gap
        key = f"PARTITION BY {', '.join(_name(k) for k in plan.partition_by)} " \
            if plan.partition_by else ""
        by = f"({key}ORDER BY {t}, _wm)"  # of rows at one time, the first to arrive first
        after = f"{t} - lag({t}) OVER {by}"
        apart = f"{after} >= {gap}"
        if self.convention.merges_touching_sessions:
            apart = (f"{after} > {gap} OR ({after} = {gap} AND "
                     f"_wm >= {t} - {self.convention.closing_offset})")
        starts = (f"SELECT *, CASE WHEN lag({t}) OVER {by} IS NULL OR {apart} "
                  f"THEN 1 ELSE 0 END AS _new FROM ({below}) WHERE {t} IS NOT NULL")
        # the frame holds every row at the row's time: rows at one time share a session
        numbered = f"SELECT *, sum(_new) OVER ({key}ORDER BY {t}) AS _sid FROM ({starts})"
        same = ", ".join([*(_name(k) for k in plan.partition_by), "_sid"])
        spans = (f"SELECT *, min({t}) OVER (PARTITION BY {same}) AS _s, max({t}) OVER "
                 f"(PARTITION BY {same}) + {gap} AS _e FROM ({numbered})")
        names = ", ".join(_name(c.name) for c in plan.input.schema)
        closed = f" WHERE {self.closes('_e')}" if rule else ""
        return (f"SELECT {names}, _s AS window_start, _e AS window_end, _e - {MICROS_PER_MILLI} "
                f"AS window_time, {self.hidden(plan)} FROM ({spans}){closed}")

    def count_window(self, plan: CountTVF, below: str) -> str:
        """Count windows by window functions: ``row_number()`` numbers each key's rows in
        time order (ties as :func:`tie_break`), ``count(*)`` says how many there are; window
        ``k`` takes the rows numbered ``(k-1)*slide + 1 .. (k-1)*slide + size`` and exists
        only if the key has its last row."""
        t, size, slide = _name(plan.time_column), plan.size, plan.slide
        keys = ", ".join(_name(k) for k in plan.partition_by)
        key = f"PARTITION BY {keys} " if keys else ""
        ties = ", ".join(self.tie(plan.input.schema, plan.input))
        below = self.arrived(below, plan.input)
        numbered = (f"SELECT *, row_number() OVER ({key}ORDER BY {t} ASC, {ties}) - 1 AS _rn, "
                    f"count(*) OVER ({key.strip()}) AS _n FROM ({below}) WHERE {t} IS NOT NULL")
        # window k (from 1) holds 0-based positions (k-1)*slide .. (k-1)*slide + size - 1
        windows = (f"SELECT b.*, k AS _k FROM ({numbered}) b, LATERAL (SELECT unnest(range("
                   f"1, _rn // {slide} + 2)) AS k) WHERE _rn < (k - 1) * {slide} + {size} "
                   f"AND (k - 1) * {slide} + {size} <= _n")
        same = ", ".join([*(_name(k) for k in plan.partition_by), "_k"])
        spans = (f"SELECT *, min({t}) OVER (PARTITION BY {same}) AS _s, max({t}) OVER "
                 f"(PARTITION BY {same}) AS _e FROM ({windows})")
        names = ", ".join(_name(c.name) for c in plan.input.schema)
        return (f"SELECT {names}, _s AS window_start, _e AS window_end, _k AS window_ordinal, "
                f"{self.hidden(plan)} FROM ({spans})")

    def tie(self, schema: Schema, input: Plan | None = None, latest_first: bool = False
            ) -> list[str]:
        """The tie-break of :func:`tie_break`: the primary key, then every column, NULLs first;
        under ``--ties row-id`` the arrival ``_arr`` (:meth:`arrived`) first, where ``input``
        (the operator's input) has it, the latest first with ``latest_first``."""
        source = next(n.source for n in walk(self.query.plan) if isinstance(n, Scan))
        names = [c.name for c in schema]
        order = [k for k in source.primary_key if k in names] + names
        arrival = [f"_arr {'DESC' if latest_first else 'ASC'}"] if input is not None and (
            self.arrival_columns(input) or self.stream_key_origins(input)) else []
        return arrival + [f"{_name(n)} ASC NULLS FIRST" for n in order]

    def carries_position(self, plan: Plan) -> bool:
        """``plan``'s rows are its source's rows (or carry them: a filter, projection, window
        TVF, OVER or TopN over them), with their arrival ``_pos`` (``--ties row-id``)."""
        if isinstance(plan, Scan):
            return self.by_arrival and (self.split is None or plan.source != self.split.derived)
        if isinstance(plan, Filter | Project | ProjectSet | WindowTVF | SessionTVF | CountTVF
                      | OverWindow | TopN):
            return self.carries_position(plan.input)
        return False

    def hidden(self, plan: Plan) -> str:
        """The columns every relation carries: ``_wm``, and ``_pos`` where it has it."""
        return "_wm, _pos" if self.carries_position(plan) else "_wm"

    def arrival_columns(self, input: Plan) -> list[str]:
        """The columns by which rows of ``input`` are told apart under ``--ties row-id``: its
        source's columns it still has (none: the deterministic order; a source with a primary
        key is ordered by it, as RisingWave's stream key)."""
        source = next(n.source for n in walk(self.query.plan) if isinstance(n, Scan))
        if not self.carries_position(input) or source.primary_key:
            return []
        names = {c.name for c in source.columns}
        return [c.name for c in input.schema if c.name in names]

    def stream_key_origins(self, input: Plan) -> list[list[tuple[Source, list[tuple[str, str]]]]]:
        """Under ``--ties row-id``, for ``input`` reading the join or union below the query
        (through filters, projections, window TVFs, OVER windows and TopNs): per way its rows
        are made (one per input of a UNION ALL), per source row a row of it is made of (left
        before right), that source and the pairs (column of ``input``, column of the source) of
        the source's columns it still has, by name; a source row none of whose columns it
        still has is left out. Empty when nothing is left, or when ``input`` reads an
        aggregate (its rows have no source row)."""
        if not self.by_arrival or self.split is None:
            return []
        node = input
        while isinstance(node, Filter | Project | ProjectSet | WindowTVF | SessionTVF | CountTVF
                         | OverWindow | TopN):
            node = node.input
        if not (isinstance(node, Scan) and node.source == self.split.derived):
            return []
        names = {c.name for c in input.schema}
        lower = [c.name for c in self.split.lower.schema]
        ways = []
        for lineage in row_lineage(self.split.lower):
            kept = [(origin, [(lower[out], origin.columns[col].name) for out, col in columns
                              if lower[out] in names]) for origin, columns in lineage]
            kept = [(origin, pairs) for origin, pairs in kept if pairs]
            if kept:
                ways.append(kept)
        return ways

    def stream_key(self, below: str, input: Plan) -> str:
        """``below`` (the relation of ``input``, over a join or a union) with ``_arr``, its
        rows' stream key as a list: per source row it is made of (:meth:`stream_key_origins`),
        the first position in the arrival log (table ``arrivals_<source>``) of a row of that
        source equal to it on the columns it still has (NULLs equal), none (a NULL-padded
        side) after every row; over a UNION ALL the least of its inputs' lists (the input
        the row came from: the others find no row)."""
        joins, keys = [], []
        for w, way in enumerate(self.stream_key_origins(input)):
            parts = []
            for o, (origin, pairs) in enumerate(way):
                found = f"_f{w}_{o}"
                columns = ", ".join(f"{_name(col)} AS _c{j}" for j, (_, col) in enumerate(pairs))
                equal = " AND ".join(f"_b.{_name(name)} IS NOT DISTINCT FROM {found}._c{j}"
                                     for j, (name, _) in enumerate(pairs))
                joins.append(f" LEFT JOIN (SELECT {columns}, min(_pos) AS _first FROM "
                             f"{_arrivals(origin)} GROUP BY ALL) AS {found} ON {equal}")
                parts.append(f"coalesce({found}._first, {NEVER_ARRIVED})")
            keys.append(f"[{', '.join(parts)}]")
        key = keys[0] if len(keys) == 1 else f"least({', '.join(keys)})"
        return f"SELECT _b.*, {key} AS _arr FROM ({below}) AS _b{''.join(joins)}"

    def arrived(self, below: str, input: Plan) -> str:
        """``below`` (the relation of ``input``) with ``_arr``, each row's arrival: the first
        position at which a row equal to it on :meth:`arrival_columns` arrived; over a join or
        a union, its stream key (:meth:`stream_key`)."""
        if self.stream_key_origins(input):
            return self.stream_key(below, input)
        columns = self.arrival_columns(input)
        if not columns:
            return below
        return (f"SELECT *, min(_pos) OVER (PARTITION BY {', '.join(_name(c) for c in columns)}) "
                f"AS _arr FROM ({below})")

    def gap_fill(self, plan: GapFill, below: str, rule: bool) -> str:
        """RisingWave's GAP_FILL in SQL: each row's next row in its partition by ``lead``
        (time order, ties as :func:`tie_break`); per gap the number of filled rows
        ``(next - ts - 1) // interval`` and each INTERPOLATE column's step (floor division
        for BIGINT); the filled rows by a recursive CTE that adds the interval and the steps
        one row at a time (so doubles round as RisingWave's additions do). With ``rule``
        (EOWC) only the rows whose time is complete are filled between: a filled row comes
        with the row ending its gap. Rows with a NULL time pass through."""
        schema = plan.input.schema
        t, interval = _name(plan.time_column), plan.interval
        names = [c.name for c in schema]
        strategies = dict(plan.fills)
        key = f"PARTITION BY {', '.join(_name(k) for k in plan.partition_by)} " \
            if plan.partition_by else ""
        window = f"({key}ORDER BY {t} ASC, {', '.join(self.tie(schema))})"
        complete = f" AND {self.complete(t)}" if rule else ""
        real = f"SELECT * FROM ({below}) WHERE {t} IS NOT NULL{complete}"
        interpolated = [c for c in schema if strategies.get(c.name) == "interpolate"]
        leads = "".join(f", lead({_name(c.name)}) OVER {window} AS {_name('_next_' + c.name)}"
                        for c in interpolated)
        paired = f"SELECT *, lead({t}) OVER {window} AS _next_t{leads} FROM ({real})"
        counted = f"SELECT *, ((_next_t - {t} - 1) // {interval}) AS _n FROM ({paired}) " \
                  f"WHERE _next_t > {t}"

        def step(c: Column) -> str:
            a, b = _name(c.name), _name("_next_" + c.name)
            if c.type is SqlType.BIGINT:  # floor division, exact: subtract the floor remainder
                diff, parts = f"({b} - {a})", "(_n + 1)"
                return f"(({diff} - (({diff} % {parts} + {parts}) % {parts})) // {parts})"
            return f"(({b} - {a}) / (_n + 1))"
        steps = "".join(f", {step(c)} AS {_name('_step_' + c.name)}" for c in interpolated)
        gaps = f"SELECT *{steps} FROM ({counted}) WHERE _n >= 1"

        def first(c: Column) -> str:
            name = _name(c.name)
            if c.name == plan.time_column:
                return f"{name} + {interval}"
            if c.name in plan.partition_by or strategies.get(c.name) == "locf":
                return name
            if strategies.get(c.name) == "interpolate":
                return f"{name} + {_name('_step_' + c.name)}"
            return f"CAST(NULL AS {_duckdb_type(c.type)})"

        def following(c: Column) -> str:
            name = _name(c.name)
            if c.name == plan.time_column:
                return f"{name} + {interval}"
            if strategies.get(c.name) == "interpolate":
                return f"{name} + {_name('_step_' + c.name)}"
            return name
        carried = [_name("_step_" + c.name) for c in interpolated]
        fill_columns = ", ".join([*(_name(n) for n in names), "_wm", "_k", "_n", *carried])
        seed = ", ".join([*(f"{first(c)}" for c in schema), "_wm", "1", "_n", *carried])
        more = ", ".join([*(following(c) for c in schema), "_wm", "_k + 1", "_n", *carried])
        columns = ", ".join(_name(n) for n in names)
        return (f"WITH RECURSIVE _fill({fill_columns}) AS (SELECT {seed} FROM ({gaps}) "
                f"UNION ALL SELECT {more} FROM _fill WHERE _k < _n) "
                f"SELECT {columns}, _wm FROM ({real}) UNION ALL SELECT {columns}, _wm FROM _fill "
                f"UNION ALL SELECT {columns}, _wm FROM ({below}) WHERE {t} IS NULL")

    def aggregate(self, plan: Aggregate, below: str, rule: bool) -> str:
        schema = plan.input.schema
        below = self.arrived(below, plan.input)
        keys = [f"{sql_expression(e, schema)} AS {_name(n)}" for n, e in plan.group_by]
        event = watermark_columns(plan.input).event_time
        calls = []
        for call in plan.calls:
            function, argument = call.function, call.argument
            value = sql_expression(argument, schema) if argument is not None else "*"
            distinct = "DISTINCT " if call.distinct else ""
            if function in ("first_value", "last_value"):
                order_expr = call.order_by or (ColumnRef(schema[event].name) if event is not None
                                               else None)
                if order_expr is None or call.distinct:
                    raise OracleUnsupported(f"the oracle does not translate {function}")
                by = sql_expression(order_expr, schema)
                ties = ", ".join(self.tie(schema, plan.input))
                sql = (f"first({value} ORDER BY {by} ASC NULLS LAST, {ties})"
                       if function == "first_value" else
                       f"last({value} ORDER BY {by} ASC NULLS LAST, {ties})")
            elif function in ("median", "percentile_cont"):
                if call.distinct:
                    raise OracleUnsupported(f"the oracle does not translate DISTINCT {function}")
                fraction = 0.5 if function == "median" else call.fraction
                sql = f"quantile_cont({value}, {fraction})"
            elif function == "string_agg":
                sql = self.string_agg(call, value, schema, plan.input)
            elif function == "approx_count_distinct":
                sql = f"count(DISTINCT {value})"  # exact: what eowc's reference defines
            elif function in ("sum", "avg") and argument is not None and \
                    compile_expr(argument, schema).type is SqlType.DECIMAL:
                sql = _decimal_aggregate(call, compile_expr(argument, schema).shape, value)
            elif function == "avg" and not call.distinct and argument is not None and \
                    compile_expr(argument, schema).type is SqlType.BIGINT and \
                    value_rules().integer_avg == "integer":
                sql = _integer_average(f"sum({value})", f"count({value})")
            else:
                sql = f"{function}({distinct}{value})"
            calls.append(f"{sql} AS {_name(call.name)}")
        group = f" GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}" if keys else ""
        result = f"SELECT {', '.join(keys + calls)}, 0 AS _wm FROM ({below}){group}"
        if not rule:
            return result
        return f"SELECT * FROM ({result}) WHERE {self.bound_complete(plan)}"

    def string_agg(self, call: AggCall, value: str, schema: Schema, input: Plan) -> str:
        """string_agg in DuckDB: ordered by its ORDER BY, then the tie-break; without ORDER
        BY, or DISTINCT, in value order."""
        separator = "'" + (call.separator or "").replace("'", "''") + "'"
        distinct = "DISTINCT " if call.distinct else ""
        if call.distinct or call.order_by is None:
            return f"string_agg({distinct}{value}, {separator} ORDER BY {value})"
        key = (f"{sql_expression(call.order_by, schema)} "
               f"{'DESC NULLS FIRST' if call.order_descending else 'ASC NULLS LAST'}")
        return f"string_agg({value}, {separator} ORDER BY {', '.join([key, *self.tie(schema, input)])})"

    def bound_complete(self, plan: Plan) -> str:
        """The trigger on ``plan``'s output rows: its window closes, or its event time is
        complete."""
        columns = watermark_columns(plan)
        names = [c.name for c in plan.schema]
        if any(isinstance(n, SessionTVF) for n in walk(plan)) and "window_end" in names:
            return self.closes(_name("window_end"))
        if columns.has_window_column:
            assert columns.window is not None
            if columns.window_end is not None:
                end = _name(names[columns.window_end])
            elif columns.window_time is not None:
                end = f"({_name(names[columns.window_time])} + {MICROS_PER_MILLI})"
            else:
                assert columns.window_start is not None
                end = f"({_name(names[columns.window_start])} + {columns.window.size})"
            return self.closes(end)
        if columns.event_time is None:
            raise OracleUnsupported("the oracle found no column to trigger on")
        return self.complete(_name(names[columns.event_time]))

    def order(self, order_by: Sequence[tuple[Expr, bool]], input: Plan, ties: bool,
              latest_first: bool = False) -> str:
        schema = input.schema
        keys = [f"{sql_expression(e, schema)} {'DESC' if d else 'ASC'} "
                f"{'NULLS FIRST' if nulls_first(d) else 'NULLS LAST'}"
                for e, d in order_by]
        return ", ".join(keys + (self.tie(schema, input, latest_first) if ties else []))

    def over(self, plan: OverWindow, below: str, rule: bool) -> str:
        schema = plan.input.schema
        below = self.arrived(below, plan.input)
        partition = ", ".join(sql_expression(e, schema) for e in plan.partition_by)
        by = f"PARTITION BY {partition} " if partition else ""
        calls, needed = [], []
        first = sql_expression(plan.order_by[0][0], schema)
        for j, call in enumerate(plan.calls):
            if call.frame.kind == "session" and call.function not in POSITIONAL_FUNCTIONS:
                below = self.session_numbers(below, partition, first, call.frame, f"_sid{j}")
        for j, call in enumerate(plan.calls):
            peers = call.function in ("rank", "dense_rank") or (
                call.frame.kind == "range" and call.function not in POSITIONAL_FUNCTIONS)
            window = f"({by}ORDER BY {self.order(plan.order_by, plan.input, not peers)}"
            session = call.frame.kind == "session" and call.function not in POSITIONAL_FUNCTIONS
            if session:
                same = ", ".join(p for p in (partition, f"_sid{j}") if p)
                window = f"(PARTITION BY {same} ORDER BY {self.order(plan.order_by, plan.input, True)}"
            args = ", ".join(sql_expression(a, schema) for a in call.args)
            if call.function in POSITIONAL_FUNCTIONS:
                calls.append(f"{call.function}({args}) OVER {window}) AS {_name(call.name)}")
                if call.function == "lead":
                    k = call.args[1].value if len(call.args) > 1 else 1  # type: ignore[attr-defined]
                    needed.append(f"lead({first}, {k}) OVER {window})" if k else first)
                continue
            name = "count" if call.function == "count" else call.function
            argument = args or "*"
            if name in ("median", "percentile_cont"):
                raise OracleUnsupported(f"the oracle does not translate {name} OVER")
            if call.frame.kind in ("rows", "session") and call.frame.exclude in ("group", "ties"):
                raise OracleUnsupported(  # DuckDB's peers would be the rows equal on the tie too
                    f"the oracle does not translate a ROWS frame with EXCLUDE "
                    f"{call.frame.exclude.upper()}: its ORDER BY carries the tie-break")
            if name == "string_agg":
                aggregate = aggregate_call(call)
                function = self.string_agg(aggregate, sql_expression(call.args[0], schema),
                                           schema, plan.input)
            elif name == "approx_count_distinct":
                raise OracleUnsupported("DuckDB has no DISTINCT in a window aggregate: the "
                                        "oracle does not translate approx_count_distinct OVER")
            elif name == "avg" and value_rules().integer_avg == "integer" and \
                    compile_expr(call.args[0], schema).type is SqlType.BIGINT:
                over = f"OVER {window} {_frame_sql(call.frame)})"
                calls.append(f"{_integer_average(f'sum({argument}) {over}', f'count({argument}) {over}')}"
                             f" AS {_name(call.name)}")
                function = None
            else:
                function = f"{name}({argument})"
            if function is not None:
                calls.append(f"{function} OVER {window} {_frame_sql(call.frame)}) "
                             f"AS {_name(call.name)}")
            if session:  # the session closes: every time before its last row's + gap
                needed.append(f"(max({first}) OVER (PARTITION BY {same}) + {call.frame.gap} - 1)")
            else:
                needed.append(self.frame_end(call.frame, first, window))
        names = ", ".join(_name(c.name) for c in schema)
        need = "GREATEST(" + ", ".join([first, *needed]) + ")"
        missing = " OR ".join(f"({n}) IS NULL" for n in needed) or "FALSE"
        inner = (f"SELECT {names}, {', '.join(calls)}, CASE WHEN {missing} THEN NULL ELSE "
                 f"{need} END AS _needed, {self.hidden(plan)} FROM ({below})")
        outputs = f"{self.columns(plan)}, {self.hidden(plan)}"
        if not rule:
            return f"SELECT {outputs} FROM ({inner})"
        complete = "TRUE" if self.watermark == CLOSED_WATERMARK else \
            f"_needed IS NOT NULL AND {self.complete('_needed')}"
        return f"SELECT {outputs} FROM ({inner}) WHERE {complete}"

    @staticmethod
    def session_numbers(below: str, partition: str, first: str, frame: Frame, column: str) -> str:
        """``below`` with ``column`` numbering the sessions of a SESSION frame in each
        partition: a row starts one when it is the partition's first, or ``gap`` or more after
        the row before it (ORDER BY ``first``, NULLs last: the NULL rows start one of their
        own); a running sum over peers numbers them."""
        by = f"PARTITION BY {partition} " if partition else ""
        window = f"({by}ORDER BY {first} ASC NULLS LAST)"
        before = f"lag({first}) OVER {window}"
        starts = (f"SELECT *, CASE WHEN row_number() OVER {window} = 1 THEN 1 WHEN {first} IS NULL "
                  f"THEN (CASE WHEN {before} IS NULL THEN 0 ELSE 1 END) WHEN {first} - {before} "
                  f">= {frame.gap} THEN 1 ELSE 0 END AS {column}_new FROM ({below})")
        return (f"SELECT *, sum({column}_new) OVER ({by}ORDER BY {first} ASC NULLS LAST RANGE "
                f"UNBOUNDED PRECEDING) AS {column} FROM ({starts})")

    @staticmethod
    def frame_end(frame: Frame, first: str, window: str) -> str:
        """The last order value the frame reads (NULL: a row that has not arrived, or
        UNBOUNDED FOLLOWING)."""
        if frame.end is None:
            return "CAST(NULL AS BIGINT)"
        if frame.end <= 0:
            return first
        if frame.kind == "rows":
            return f"lead({first}, {frame.end}) OVER {window})"
        return f"({first} + {frame.end})"

    def top_n(self, plan: TopN, below: str, rule: bool) -> str:
        schema = plan.input.schema
        below = self.arrived(below, plan.input)
        partition = ", ".join(sql_expression(e, schema) for e in plan.partition_by)
        by = f"PARTITION BY {partition} " if partition else ""
        ties = plan.function == "row_number"  # RANK and DENSE_RANK give peers one rank
        order = self.order(plan.order_by, plan.input, ties,
                           ties_to_latest_arrival(plan, self.convention))
        rank = f"{plan.function}() OVER ({by}ORDER BY {order}) AS {_name(plan.rank_column)}"
        names = ", ".join(_name(c.name) for c in schema)
        ranked = (f"SELECT {names}, {rank}, {self.hidden(plan)} FROM ({below}) QUALIFY "
                  f"{_name(plan.rank_column)} <= {plan.limit}")
        if not rule:
            return ranked
        return f"SELECT * FROM ({ranked}) WHERE {self.bound_complete(plan)}"


def _frame_sql(frame: Frame) -> str:
    """The frame in DuckDB's words; a SESSION frame is the whole of its session's partition."""
    exclusion = "" if frame.exclude == "no others" else f" EXCLUDE {frame.exclude.upper()}"
    if frame.kind == "session":
        return f"ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING{exclusion}"

    def bound(offset: int | None, unbounded: str) -> str:
        if offset is None:
            return f"UNBOUNDED {unbounded}"
        if offset == 0:
            return "CURRENT ROW"
        return f"{abs(offset)} {'PRECEDING' if offset < 0 else 'FOLLOWING'}"
    return (f"{frame.kind.upper()} BETWEEN {bound(frame.start, 'PRECEDING')} AND "
            f"{bound(frame.end, 'FOLLOWING')}{exclusion}")


def eowc_sql(query: Query, convention: Convention, watermark: Watermark,
             split: MultiInputSplit | None = None,
             marks: Mapping[str, Watermark] | None = None, by_arrival: bool = False) -> str:
    """``Q'(INPUT, W)`` as one DuckDB query over the table ``input`` (with joins or unions:
    ``query`` is ``split.upper``, ``watermark`` its derived source's, over one table per
    source). With ``by_arrival`` (``--ties row-id``) ``input`` has ``_pos``, each row's
    position in the arrival log, and rows with equal ORDER BY values are ordered by it."""
    with computing_under(convention.values):
        return _eowc_sql(query, convention, watermark, split, marks, by_arrival)


def _eowc_sql(query: Query, convention: Convention, watermark: Watermark,
              split: MultiInputSplit | None, marks: Mapping[str, Watermark] | None,
              by_arrival: bool = False) -> str:
    compiler = _Compiler(query, convention, watermark, split, marks, by_arrival)
    relation = compiler.relation(query.plan, rule=True)
    stateful = any(isinstance(n, Aggregate | OverWindow | TopN | GapFill | SessionTVF)
                   for n in walk(query.plan))
    if not stateful:  # the EOWC sort: the output's event-time column is complete
        event = watermark_columns(query.plan).event_time
        if event is None:
            raise OracleUnsupported("the oracle found no event-time column to sort by")
        column = _name(query.schema[event].name)  # NULL: a join's outer row, final when made
        relation = f"SELECT * FROM ({relation}) WHERE {column} IS NULL OR " \
                   f"{compiler.complete(column)}"
    return f"SELECT {compiler.columns(query.plan)} FROM ({relation})"


def oracle_input(query: Query, log: ArrivalLog, convention: Convention
                 ) -> tuple[list[tuple[Row, Watermark]], list[LateRow], Watermark]:
    """INPUT (Definition 1) of the query's source, read from the one input loop
    (:func:`eowc.semantics.engines.inputs.arrived_input`): its rows, each with the watermark in
    force when it arrived, without those late under it (a window aggregate under Spark and
    Flink keeps every row here and checks per window, in SQL); the rows left out; and the
    watermark after the last epoch."""
    late: list[LateRow] = []
    per_window = late_check_is_per_window(query.plan, convention)
    arrived = arrived_input(query.source, log, convention, late.append,
                            never_late if per_window else None)
    return arrived.rows, late, arrived.watermark


@dataclass(frozen=True)
class OracleQuery:
    """Definition 5 ready to run on a batch engine: INPUT as ``tables`` (table name, source,
    rows with the watermark at their arrival) and ``sql``, ``Q'`` with the final watermarks
    substituted, in DuckDB's dialect."""

    tables: tuple[tuple[str, Source, list[tuple[Row, Watermark]]], ...]
    sql: str
    #: Under ``--ties row-id``: per table, each row's position in the arrival log (``_pos``).
    positions: tuple[list[int], ...] = ()


def oracle_query(query: Query, log: ArrivalLog, convention: Convention, close: bool = False,
                 late: list[LateRow] | None = None, ties: str | None = None) -> OracleQuery:
    """``query`` over ``log`` as an :class:`OracleQuery`; the rows left out of INPUT go to
    ``late``. A query with joins or unions gets one table per source (each source's rows not
    late under its own watermark); its joins' outer rows and the trigger above them are judged
    by the watermarks after the last epoch. ``ties`` (default: the convention's) orders rows
    with equal ORDER BY values; ``row-id`` gives INPUT its arrival positions (``_pos``), and
    over joins and unions each source's whole arrival log too (``arrivals_<source>``), where
    a joined row's stream key is looked up (:meth:`_Compiler.stream_key`)."""
    refuse_at_once(query.at_once, "the DuckDB oracle")
    refuse_join_judging_late_rows(query.plan, convention, "the DuckDB oracle")
    by_arrival = (ties or default_ties(convention)) == "row-id"
    if not has_several_inputs(query.plan):
        rows, left_out, last = oracle_input(query, log, convention)
        if late is not None:
            late.extend(left_out)
        return OracleQuery((("input", query.source, rows),),
                           eowc_sql(query, convention, CLOSED_WATERMARK if close else last,
                                    by_arrival=by_arrival),
                           (arrival_positions(query.source, log, left_out),) if by_arrival else ())
    sources = list(dict.fromkeys(n.source for n in walk(query.plan) if isinstance(n, Scan)))
    if by_arrival:
        refuse_row_id_over(query, sources)
    split = split_multi_input(query, convention)
    assert split is not None
    marks: dict[str, Watermark] = {}
    tables, positions = [], []
    for source in sources:
        dropped: list[LateRow] = []
        per_window = per_window_tvf(query.plan, source, convention) is not None
        judged = window_join_input(query.plan, source, convention)
        arrived = arrived_input(source, log, convention, dropped.append,
                                never_late if per_window else None, judged, sources)
        if late is not None:
            late.extend(dropped)
        if source.watermark is not None:
            marks[f"{source.name}.{source.watermark.column}"] = \
                CLOSED_WATERMARK if close else arrived.watermark
        tables.append((_table(source), source, arrived.rows))
        positions.append(arrival_positions(source, log, dropped))
    if by_arrival:  # the whole arrival log of each source, late rows too: what _row_id numbers
        for source in sources:
            logged = [(i, e.row) for i, e in enumerate(log.events) if e.table == source.name]
            tables.append((_arrivals(source), source, [(row, NO_WATERMARK) for _, row in logged]))
            positions.append([i for i, _ in logged])
    watermark = NO_WATERMARK if split.watermark is None else \
        watermark_in_reading(split.watermark, marks, convention)
    return OracleQuery(tuple(tables), eowc_sql(split.upper, convention, watermark, split, marks,
                                               by_arrival),
                       tuple(positions) if by_arrival else ())


def refuse_row_id_over(query: Query, sources: Sequence[Source]) -> None:
    """OracleUnsupported for ``--ties row-id`` over a join or a union of a source with a
    primary key (its rows' stream key is the key's values, ordered as the deterministic
    order orders rows, which the oracle does not restate in SQL), and over an ASOF join
    (whose choice among tied right rows the oracle makes in the deterministic order)."""
    keyed = [s.name for s in sources if s.primary_key]
    if keyed:
        raise OracleUnsupported(f"the DuckDB oracle orders ties by arrival (--ties row-id) over "
                                f"joins and unions of sources without a primary key only, not of "
                                f"{', '.join(keyed)} (its stream key is its primary key; the "
                                f"in-process executors are checked against the reference there)")
    if any(isinstance(n, AsofJoin) for n in walk(query.plan)):
        raise OracleUnsupported("the DuckDB oracle does not order an ASOF join's tied right rows "
                                "by arrival (--ties row-id): it chooses among them in the "
                                "deterministic order only")


def arrival_positions(source: Source, log: ArrivalLog, left_out: Sequence[LateRow]) -> list[int]:
    """The position in ``log`` (over every table, from 0) of each of ``source``'s rows of
    INPUT: its events but those ``left_out`` (late), in arrival order."""
    late = {id(row.event) for row in left_out}
    return [i for i, event in enumerate(log.events)
            if event.table == source.name and id(event) not in late]


def oracle_eowc(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE,
                close: bool = False, late: list[LateRow] | None = None, ties: str | None = None
                ) -> Counter[Row]:
    """The EOWC output after the last epoch of ``log`` (with ``close``: at the end of the
    input), computed by DuckDB from INPUT and the final watermark; the rows left out of INPUT
    go to ``late``. ``ties`` as :func:`oracle_query`'s."""
    prepared = oracle_query(query, log, convention, close, late, ties)
    return _result(query, duckdb_connection(prepared).execute(prepared.sql).fetchall())


def oracle_update(query: Query, log: ArrivalLog, convention: Convention = Convention.RISINGWAVE
                  ) -> Counter[Row]:
    """``Q(INPUT)`` after the last epoch of ``log`` (Definition 2, the final table of emit on
    update), computed by DuckDB from every source's rows not late under its own watermark:
    the whole plan as one batch query, without triggers, outer rows padded at the end of
    the input."""
    tables, marks = [], {}
    sources = list(dict.fromkeys(n.source for n in walk(query.plan) if isinstance(n, Scan)))
    for source in sources:
        tables.append((_table(source), source,
                       arrived_input(source, log, convention, None, along=sources).rows))
        if source.watermark is not None:
            marks[f"{source.name}.{source.watermark.column}"] = CLOSED_WATERMARK
    split = split_multi_input(query, convention) if has_several_inputs(query.plan) else None
    if split is None:  # one source: its table is called input
        tables = [("input", source, rows) for _, source, rows in tables]
    with computing_under(convention.values):
        compiler = _Compiler(query, convention, CLOSED_WATERMARK, split, marks)
        sql = f"SELECT {compiler.columns(query.plan)} FROM ({compiler.relation(query.plan, False)})"
    prepared = OracleQuery(tuple(tables), sql)
    return _result(query, duckdb_connection(prepared).execute(prepared.sql).fetchall())


@functools.cache
def _database(process: int) -> Any:
    """The in-memory DuckDB database of the process ``process`` (a forked child opens its
    own). Opening a database costs 30 to 50 ms, a new connection to it microseconds; each
    connection keeps its tables to itself (temporary tables, dropped when it closes)."""
    import duckdb

    return duckdb.connect()


def _new_connection() -> Any:
    """A new connection to this process's database: tables it creates are its own."""
    return _database(os.getpid()).cursor()


def duckdb_connection(prepared: OracleQuery) -> Any:
    """A new DuckDB connection holding ``prepared``'s tables."""
    connection = _new_connection()
    for i, (table, source, rows) in enumerate(prepared.tables):
        _load(connection, table, source, rows, prepared.positions[i] if prepared.positions else None)
    return connection


def _result(query: Query, rows: Sequence[Sequence[Any]]) -> Counter[Row]:
    return Counter(tuple(_internal(v, c.type) for v, c in zip(r, query.schema, strict=True))
                   for r in rows)


def _table(source: Source) -> str:
    return _name(f"input_{source.name}")


def _arrivals(source: Source) -> str:
    """The table of every row of ``source`` in the arrival log with its position ``_pos``."""
    return _name(f"arrivals_{source.name}")


def run_oracle(query: Query, rows: Sequence[tuple[Row, Watermark]], watermark: Watermark,
               convention: Convention) -> Counter[Row]:
    """``Q'(INPUT, W)`` by DuckDB, INPUT given as rows with the watermark at their arrival."""
    connection = load_input(query, rows)
    return _result(query, connection.execute(eowc_sql(query, convention, watermark)).fetchall())


def load_input(query: Query, rows: Sequence[tuple[Row, Watermark]]) -> Any:
    """A new DuckDB connection whose table ``input`` holds INPUT: the source's columns
    (times as BIGINT microseconds) and ``_wm``, the watermark at each row's arrival."""
    connection = _new_connection()
    _load(connection, "input", query.source, rows)
    return connection


def _load(connection: Any, table: str, source: Source,
          rows: Sequence[tuple[Row, Watermark]], positions: Sequence[int] | None = None) -> None:
    """Create ``table`` with ``source``'s columns and ``_wm`` (and ``_pos``, with
    ``positions``), and fill it with ``rows``."""
    scales = decimal_column_scales(source, rows)
    columns = ", ".join(f"{_name(c.name)} "
                        f"{f'DECIMAL(38, {scales[i]})' if i in scales else _duckdb_type(c.type)}"
                        for i, c in enumerate(source.columns))
    position = ", _pos BIGINT" if positions is not None else ""
    connection.execute(f"CREATE TEMPORARY TABLE {table} ({columns}, _wm BIGINT{position})")
    if rows:  # column by column through Arrow: row-by-row inserts are slow for large logs
        connection.register("loaded", arrow_table(source, rows, positions, scales))
        connection.execute(f"INSERT INTO {table} SELECT * FROM loaded")
        connection.unregister("loaded")


def arrow_table(source: Source, rows: Sequence[tuple[Row, Watermark]],
                positions: Sequence[int] | None = None, scales: dict[int, int] | None = None
                ) -> Any:
    """``rows`` as an Arrow table: ``source``'s columns (times as int64 microseconds, DECIMAL
    columns at ``scales``, :func:`decimal_column_scales` when not given) and ``_wm``, the
    watermark at each row's arrival (``-inf`` as :data:`NEGATIVE_INFINITY`); with
    ``positions``, ``_pos``, each row's position in the arrival log."""
    import pyarrow as pa

    arrow = {SqlType.DOUBLE: pa.float64(), SqlType.VARCHAR: pa.string(),
             SqlType.BOOLEAN: pa.bool_(), SqlType.DECIMAL: pa.decimal128(38, _DECIMAL_COLUMN_SCALE)}

    def arrow_type(sql_type: ValueType) -> Any:
        if isinstance(sql_type, ArrayType):
            return pa.list_(arrow_type(sql_type.element))
        return arrow.get(sql_type, pa.int64())
    if scales is None:
        scales = decimal_column_scales(source, rows)
    data = {c.name: pa.array([row[i] for row, _ in rows],
                             pa.decimal128(38, scales[i]) if i in scales else arrow_type(c.type))
            for i, c in enumerate(source.columns)}
    data["_wm"] = pa.array([NEGATIVE_INFINITY if math.isinf(w) else int(w) for _, w in rows],
                           pa.int64())
    if positions is not None:
        data["_pos"] = pa.array(positions, pa.int64())
    return pa.table(data)


def decimal_column_scales(source: Source, rows: Sequence[tuple[Row, Watermark]]) -> dict[int, int]:
    """The scale each DECIMAL column of ``source`` has in DuckDB, by position: the largest
    scale of its values (a column declared ``DECIMAL(p, s)`` holds them at ``s`` under Spark
    and Flink, so its digits print as the engines print them), at least the declared scale;
    18 for a column with no value and no declared scale."""
    scales = {}
    for i, column in enumerate(source.columns):
        if column.type is SqlType.DECIMAL:
            found = [decimal_digits(row[i])[1] for row, _ in rows if row[i] is not None]
            declared = [] if column.scale is None else [column.scale]
            scales[i] = max(found + declared) if found or declared else _DECIMAL_COLUMN_SCALE
    return scales


def _internal(value: Any, sql_type: ValueType) -> Any:
    if value is None:
        return None
    if isinstance(sql_type, ArrayType):
        return tuple(_internal(v, sql_type.element) for v in value)
    if sql_type in (SqlType.BIGINT, SqlType.INTERVAL, SqlType.DATE) or sql_type.is_time:
        return int(value)
    if sql_type is SqlType.DOUBLE:
        return float(value)
    return value
