"""z3 proofs about projection expressions over a watermark column.

:mod:`eowc.semantics.analysis.watermark_derivation` keeps a watermark through a projection only for
expressions it
treats as non-decreasing (``c + INTERVAL``, ``c - INTERVAL``, ``tumble_start``,
``date_trunc``), mapping the watermark by their
:class:`~eowc.semantics.analysis.watermark_derivation.Step` s. Here
each such expression is translated into z3 integer arithmetic *with the evaluator's
semantics* (:mod:`eowc.semantics.ir.expr`) and three claims are proved, in the RisingWave reading
(``x < X``: every value below the watermark ``X`` is complete):

- **monotonicity**: for two rows, ``x <= y`` implies ``f(x) <= f(y)`` (their other columns
  are free: a later row may have any of them);
- **soundness of the map**: ``x >= X`` implies ``f(x) >= D(X)``, where ``D`` applies the
  expression's steps to ``X``: no row that can still arrive gives a value the derived watermark
  ``D(X)`` calls complete;
- **exactness of the map**: ``f(x) >= D(X)`` implies some ``x' >= X`` has ``f(x') = f(x)``:
  ``D(X)`` calls every value complete that no future row can give.

An expression the derivation rejects gets one *advisory* obligation, a witness that it is not
non-decreasing: z3's model is the counterexample, confirmed by running the real evaluator on
it. If z3 instead proves the expression non-decreasing (``CAST(ts AS BIGINT) * 2``), the
rejection is only conservative (no watermark map is implemented for it); an advisory result
never fails ``eowc prove``.

**Integer division.** SQL's ``/`` on BIGINT truncates towards zero and ``%`` takes the sign of
the dividend (:func:`eowc.semantics.ir.expr._int_div`); Python's ``//`` floors; z3's ``/`` and ``%``
are Euclidean (the remainder is never negative). All three agree only when both operands are
non-negative, so the translation builds SQL's truncating division out of z3's on absolute
values, and ``%`` from it; :func:`~eowc.semantics.analysis.watermark_maps.floor_div` is used only for positive
divisors, where floor and Euclidean division agree. The tests check the translation against
the evaluator on random integers of both signs.

NULL is not modelled: a claim is about rows whose columns are not NULL (NULL never carries
a watermark). DOUBLE, text and calendar units (month, year) are not modelled: an obligation
over them is ``unknown`` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import z3

from eowc.semantics.analysis.watermark_derivation import (
    FIXED_UNITS,
    Derivation,
    Lost,
    Step,
    derive,
    expression_derivation,
    monotone_step,
)
from eowc.semantics.ir.expr import (
    Binary,
    Case,
    Cast,
    ColumnRef,
    Expr,
    Func,
    Literal,
    Unary,
    column_index,
    compile_expr,
    referenced_columns,
    sql_of,
)
from eowc.semantics.ir.plan import Aggregate, Plan, Project, Query, Schema
from eowc.semantics.ir.values import SqlType, parse_timestamp, to_external
from eowc.semantics.proofs.trigger_proofs import Obligation, Values

#: Types whose values are integers (microseconds for the times, DATE and INTERVAL). The
#: model's integers are unbounded: a BIGINT result beyond 64 bits (an error, or Flink's
#: wrap-around, ``docs/sql/types.md``) is not modelled.
INTEGER_TYPES = (SqlType.TIMESTAMP, SqlType.TIMESTAMPTZ, SqlType.TIMESTAMP_LTZ, SqlType.DATE,
                 SqlType.INTERVAL, SqlType.BIGINT)
DAY = FIXED_UNITS["day"]
#: The second copy of a column in a monotonicity claim (``ts`` and ``ts_2``).
SECOND = "_2"


class Unmodelled(Exception):
    """The expression uses something the integer translation does not model."""


# --- translation ---------------------------------------------------------------------------

def sql_division(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    """SQL's BIGINT ``a / b`` (``b != 0``): the quotient truncated towards zero."""
    quotient = z3.Abs(a) / z3.Abs(b)
    return z3.If((a >= 0) == (b > 0), quotient, -quotient)


def sql_remainder(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    """SQL's BIGINT ``a % b`` (``b != 0``): ``a - b * (a / b)``, with the sign of ``a``."""
    return a - b * sql_division(a, b)


def integer_term(expr: Expr, schema: Schema, columns: Mapping[str, z3.ArithRef]) -> z3.ExprRef:
    """``expr`` over ``schema`` as a z3 term, each column read from ``columns``, with the
    semantics of :func:`eowc.semantics.ir.expr.compile_expr` on non-NULL integer values."""
    def term(e: Expr) -> z3.ExprRef:
        return integer_term(e, schema, columns)

    if isinstance(expr, ColumnRef):
        kind = schema[column_index(schema, expr.name)].type
        if kind not in INTEGER_TYPES:
            raise Unmodelled(f"column {expr.name} is {kind.value}, not an integer time")
        return columns[expr.name]
    if isinstance(expr, Literal):
        if isinstance(expr.value, bool) or not isinstance(expr.value, int):
            raise Unmodelled(f"the constant {sql_of(expr)} is not an integer")
        return z3.IntVal(expr.value)
    if isinstance(expr, Unary):
        if expr.op == "NOT":
            return z3.Not(term(expr.operand))
        return -term(expr.operand)
    if isinstance(expr, Cast):
        return _cast_term(expr, schema, term)
    if isinstance(expr, Binary):
        return _binary_term(expr, term)
    if isinstance(expr, Case):
        result: z3.ExprRef | None = term(expr.default) if expr.default is not None else None
        if result is None:
            raise Unmodelled("CASE without ELSE gives NULL")
        for condition, value in reversed(expr.whens):
            result = z3.If(term(condition), term(value), result)
        return result
    if isinstance(expr, Func):
        return _function_term(expr, term)
    raise Unmodelled(f"{sql_of(expr)} is not modelled")


def _cast_term(expr: Cast, schema: Schema, term: Callable[[Expr], z3.ExprRef]) -> z3.ExprRef:
    operand = expr.operand
    if expr.type.is_time and isinstance(operand, Literal) and isinstance(operand.value, str):
        return z3.IntVal(parse_timestamp(operand.value))
    source = compile_expr(operand, schema).type
    if expr.type in INTEGER_TYPES and source in INTEGER_TYPES:
        return term(operand)  # TIMESTAMP to BIGINT is its microseconds
    raise Unmodelled(f"CAST from {source.value} to {expr.type.value} is not modelled "
                     f"in integer arithmetic")


_COMPARE: dict[str, Callable[[z3.ArithRef, z3.ArithRef], z3.BoolRef]] = {
    "=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _binary_term(expr: Binary, term: Callable[[Expr], z3.ExprRef]) -> z3.ExprRef:
    left, right, op = term(expr.left), term(expr.right), expr.op
    if op in _COMPARE:
        return _COMPARE[op](left, right)
    if op in ("AND", "OR"):
        return (z3.And if op == "AND" else z3.Or)(left, right)
    if op in ("+", "-", "*"):
        return {"+": left + right, "-": left - right, "*": left * right}[op]
    if op in ("/", "%"):
        divisor = z3.simplify(right)
        if z3.is_int_value(divisor) and divisor.as_long() == 0:
            raise Unmodelled(f"{sql_of(expr)} divides by zero (NULL)")
        if not z3.is_int_value(divisor):
            raise Unmodelled(f"{sql_of(expr)} divides by a column")
        return sql_division(left, right) if op == "/" else sql_remainder(left, right)
    raise Unmodelled(f"operator {op} is not modelled")


def _function_term(expr: Func, term: Callable[[Expr], z3.ExprRef]) -> z3.ExprRef:
    """``tumble_start`` and ``date_trunc`` to a fixed unit or a week, as
    :func:`eowc.semantics.ir.expr.date_trunc` computes them (floor remainders of positive units)."""
    if expr.name == "tumble_start" and isinstance(expr.args[1], Literal):
        value = term(expr.args[0])
        return value - value % expr.args[1].value  # z3's % is Python's for a positive divisor
    if expr.name == "date_trunc" and isinstance(expr.args[0], Literal):
        unit, value = str(expr.args[0].value).lower(), term(expr.args[1])
        if unit == "week":  # 1970-01-01 was a Thursday; weeks start on Monday
            days = value / DAY  # floor: the divisor is positive
            return (days - (days + 3) % 7) * DAY
        if unit in FIXED_UNITS:
            return value - value % FIXED_UNITS[unit]
        raise Unmodelled(f"date_trunc('{unit}', ...): calendar units vary in length")
    raise Unmodelled(f"{expr.name}() is not modelled")


# --- the projection expressions of a query ---------------------------------------------------

@dataclass(frozen=True)
class ProjectedColumn:
    """An output column of a projection or a GROUP BY key computed from a watermark column:
    ``expr`` over the operator's input ``schema``, the input columns that carry a watermark
    (``carried``), and what the derivation made of it (kept, or lost)."""

    operator: str
    column: str
    expr: Expr
    schema: Schema
    carried: frozenset[str]
    derivation: Derivation | Lost

    @property
    def kept(self) -> bool:
        return isinstance(self.derivation, Derivation)

    @property
    def label(self) -> str:
        return f"{self.column} = {sql_of(self.expr)}"


def projected_columns(query: Query) -> list[ProjectedColumn]:
    """Every computed column of ``query``'s plan that reads a watermark column (a plain
    reference of one is not computed), root first."""
    found: list[ProjectedColumn] = []

    def visit(node: Plan) -> None:
        if isinstance(node, Project | Aggregate):
            items = node.items if isinstance(node, Project) else node.group_by
            below = derive(node.input)
            carried = frozenset(c.name for c, d in zip(node.input.schema, below.columns, strict=True)
                                if d is not None)
            for name, expr in items:
                made = expression_derivation(expr, name, node.input.schema, below)
                if made is not None and not isinstance(expr, ColumnRef):
                    found.append(ProjectedColumn(type(node).__name__, name, expr, node.input.schema,
                                                 carried, made))
        for child in node.children:
            visit(child)
    visit(query.plan)
    return found


def local_steps(expr: Expr) -> tuple[str, tuple[Step, ...]]:
    """The column a kept expression maps, and its steps in the order they apply."""
    steps: list[Step] = []
    while not isinstance(expr, ColumnRef):
        found = monotone_step(expr)
        assert not isinstance(found, str), found
        step, expr = found
        steps.insert(0, step)
    return expr.name, tuple(steps)


def _apply(steps: tuple[Step, ...], watermark: Values | int | z3.ArithRef) -> z3.ArithRef | int:
    for step in steps:
        watermark = step.apply(watermark)  # type: ignore[arg-type]
    return watermark  # type: ignore[return-value]


# --- obligations -------------------------------------------------------------------------------

def _terms(column: ProjectedColumn, values: Values, second: bool = False) -> z3.ExprRef:
    """The expression with every column read from ``values`` (from the second row's copies
    with ``second``)."""
    columns = {n: values[n + SECOND if second else n] for n in referenced_columns(column.expr)}
    return integer_term(column.expr, column.schema, columns)


def _evaluate(column: ProjectedColumn, values: Mapping[str, int], second: bool = False) -> int:
    """The expression at ``values``, by the evaluator the interpreter runs."""
    row = [None] * len(column.schema)
    for name in referenced_columns(column.expr):
        row[column_index(column.schema, name)] = values[name + SECOND if second else name]
    return compile_expr(column.expr, column.schema).evaluate(tuple(row))


def _shown(value: int, sql_type: SqlType) -> str:
    return str(to_external(value, sql_type)) if sql_type in INTEGER_TYPES[:4] else str(value)


def _variables(column: ProjectedColumn, second: bool = False, *extra: str) -> tuple[str, ...]:
    names = sorted(referenced_columns(column.expr))
    return (*names, *(n + SECOND for n in names if second), *extra)


def _pair_text(column: ProjectedColumn, values: Mapping[str, int]) -> str:
    result = compile_expr(column.expr, column.schema).type
    inputs = {n: column.schema[column_index(column.schema, n)].type
              for n in sorted(referenced_columns(column.expr))}
    def side(second: bool) -> str:
        read = ", ".join(f"{n} = {_shown(values[n + SECOND if second else n], t)}"
                         for n, t in inputs.items())
        return f"{read} gives {_shown(_evaluate(column, values, second), result)}"
    return f"{side(False)}; {side(True)}"


def _non_decreasing(column: ProjectedColumn, values: Values) -> z3.BoolRef:
    return _terms(column, values) <= _terms(column, values, second=True)


def _ordered_inputs(column: ProjectedColumn, values: Values) -> z3.BoolRef:
    return z3.And(*(values[n] <= values[n + SECOND]
                    for n in referenced_columns(column.expr) if n in column.carried))


def _unmodelled(column: ProjectedColumn) -> str:
    """Why ``column``'s expression cannot be translated ("" when it can)."""
    try:
        _terms(column, {n: z3.Int(n) for n in _variables(column, True)}, second=True)
    except Unmodelled as why:
        return f"{column.label}: {why}"
    return ""


def monotonicity(column: ProjectedColumn) -> Obligation:
    """A kept expression is non-decreasing in the watermark columns it reads."""
    return Obligation(
        "projection", (), f"monotonicity: {column.label}",
        f"{column.label} is non-decreasing: x <= x' implies f(x) <= f(x')",
        _variables(column, True), lambda v: _ordered_inputs(column, v),
        lambda v: _non_decreasing(column, v), unmodelled=_unmodelled(column),
        confirm=lambda m: _evaluate(column, m) <= _evaluate(column, m, True),
        explain=lambda m: _pair_text(column, m))


def _map_text(steps: tuple[Step, ...]) -> str:
    text = "W"
    for step in steps:
        text = step.describe(text)
    return text


def map_soundness(column: ProjectedColumn, steps: tuple[Step, ...] | None = None) -> Obligation:
    """No row that can still arrive gives a value below the derived watermark (``steps``:
    the map, by default the derivation's)."""
    source, found = local_steps(column.expr)
    steps = found if steps is None else steps
    return Obligation(
        "projection", (), f"soundness: {column.label}",
        f"{source} >= W implies {column.column} >= D(W) = {_map_text(steps)}",
        _variables(column, False, "W"),
        lambda v: v[source] >= v["W"], lambda v: _terms(column, v) >= _apply(steps, v["W"]),
        unmodelled=_unmodelled(column),
        confirm=lambda m: m[source] < m["W"] or _evaluate(column, m) >= _apply(steps, m["W"]))


def map_exactness(column: ProjectedColumn, steps: tuple[Step, ...] | None = None) -> Obligation:
    """Every value not yet below the derived watermark can still be given by a future row."""
    source, found = local_steps(column.expr)
    steps = found if steps is None else steps
    later = z3.Int(f"{source}_later")

    def still_possible(v: Values) -> z3.BoolRef:
        at_later = {**v, source: later}
        return z3.Exists([later], z3.And(later >= v["W"],
                                         _terms(column, at_later) == _terms(column, v)))
    return Obligation(
        "projection", (), f"exactness: {column.label}",
        f"{column.column} >= D(W) = {_map_text(steps)} implies some {source}' >= W gives the "
        f"same {column.column}",
        _variables(column, False, "W"),
        lambda v: _terms(column, v) >= _apply(steps, v["W"]), still_possible,
        unmodelled=_unmodelled(column))


def rejection(column: ProjectedColumn) -> Obligation:
    """Advisory: a rejected expression is not non-decreasing (the witness is the
    counterexample), or the rejection is only conservative."""
    assert isinstance(column.derivation, Lost)
    return Obligation(
        "projection", (), f"rejected: {column.label}",
        f"some rows x <= x' have f(x) > f(x') (the derivation: {column.derivation.reason})",
        _variables(column, True), lambda v: _ordered_inputs(column, v),
        lambda v: z3.Not(_non_decreasing(column, v)), witness=True, advisory=True,
        unmodelled=_unmodelled(column),
        confirm=lambda m: _evaluate(column, m) > _evaluate(column, m, True),
        explain=lambda m: _pair_text(column, m))


def expression_obligations(query: Query) -> list[Obligation]:
    """The obligations of every computed column of ``query`` that reads a watermark column."""
    found: list[Obligation] = []
    for column in projected_columns(query):
        if column.kept:
            found += [monotonicity(column), map_soundness(column), map_exactness(column)]
        else:
            found.append(rejection(column))
    return found


#: The expressions ``eowc prove`` checks by default: each rule of :func:`monotone_step`, and
#: one rejected expression of each kind (with SQL's truncating division of a negative divisor).
BUILT_IN = """
CREATE SOURCE readings (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
SELECT ts + INTERVAL '1' HOUR AS shifted_later,
       ts - INTERVAL '30' SECOND AS shifted_earlier,
       INTERVAL '1' DAY + ts AS shifted_left,
       tumble_start(ts, INTERVAL '5' MINUTE) AS bucket,
       date_trunc('second', ts) AS second_start,
       date_trunc('minute', ts) AS minute_start,
       date_trunc('day', ts) AS day_start,
       date_trunc('week', ts) AS week_start,
       date_trunc('minute', ts) + INTERVAL '30' SECOND AS half_minute,
       CAST(ts AS BIGINT) * -1 AS negated_product,
       -CAST(ts AS BIGINT) AS negated,
       CAST(ts AS BIGINT) / -1000 AS negative_quotient,
       CAST(ts AS BIGINT) / 1000 AS millis,
       CAST(ts AS BIGINT) % 60000000 AS micros_in_minute,
       CASE WHEN v > 0 THEN ts - INTERVAL '1' HOUR ELSE ts END AS chosen
FROM readings
EMIT ON WINDOW CLOSE;
"""
