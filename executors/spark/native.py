"""``spark-native``: run an EOWC query on Spark's OWN streaming operators, to judge Spark itself.

The same plans as the reference interpreter (:class:`eowc.semantics.ir.plan.Query`) are compiled to
Spark's Structured Streaming operators, not to the eowc executors of :mod:`.adapter`:

==============================================  =================================================
plan                                            Spark
==============================================  =================================================
source with ``WATERMARK FOR c AS c - d``        ``withWatermark(c, "<d ms> milliseconds")``
``Filter`` / ``Project`` (WHERE, SELECT list)   ``filter`` / ``select`` of Spark Columns
                                                (:func:`spark_column`)
``TUMBLE`` / ``HOP`` window TVF                 ``F.window(c, size, slide, offset)``
``GROUP BY window_start/window_end, keys``      ``groupBy(window, keys).agg(...)``, append mode
count/sum/min/max/avg/median/percentile_cont    ``F.count``/``sum``/``min``/``max``/``avg``/
                                                ``median``/``percentile``
``HAVING``, the outer SELECT list               ``filter`` / ``select`` after the aggregation
``SESSION`` TVF + ``GROUP BY`` its partition    ``groupBy(F.session_window(c, gap), keys)``
``ROW_NUMBER() OVER (PARTITION BY k ORDER BY    ``dropDuplicatesWithinWatermark(k)``
c) = 1`` over the source (deduplication)
a window TVF over an earlier window's           ``F.window(F.window_time(window), ...)``: chained
``window_time`` (a cascade)                     aggregations (Spark 3.4 and later)
a join of windowed inputs (window TVFs or       a stream-stream join whose window equalities are
window aggregations) on their window columns    one equality of the two window structs
==============================================  =================================================

The compiler is a table of *native operators* (:data:`NATIVE_OPERATORS`): :func:`native_operator`
names the stateful shape of a plan, and one function per name builds its Spark query; a join
of two sources under a plain SELECT is Spark's stream-stream join, and a plan of several
stateful operators (``composed``) is compiled node by node (:func:`_visit`), each under Spark's
one global watermark. Where sessions,
deduplication and joins differ from the seed semantics is recorded in
``docs/divergences.md``. Shapes Spark has no operator for (CUMULATE windows, the EOWC sort,
GROUP BY without a window, ``first_value``/``last_value``, DISTINCT aggregates, a TopN other
than a deduplication, a LEFT ANTI join, expressions without a faithful Spark equivalent)
raise :class:`NoNativeOperator` on the driver, before Spark runs.

Native Spark follows its own boundary rule (the ``spark`` convention of ``SEMANTICS.md`` §3):
a window ``[s, e)`` closes when ``e <= W`` and a (row, window) pair is late when
``e <= W`` of the previous batch. The run is paced like :mod:`.runner`'s (``pacing=settle``,
``Trigger.AvailableNow``, a checkpoint, the exactly-once :class:`.sink.EpochSink`), so each epoch
is a data batch judged against the watermark of all earlier epochs, then a settle batch in
which the windows that epoch closed are emitted.

Late rows: Spark drops them inside its stateful operator and says only how many, per batch, in
``StreamingQueryProgress.stateOperators[i].numRowsDroppedByWatermark``. That number is the
count of rows *reaching the state store operator*: after the window TVF (one row per row and
window, so a HOP row counts once per window it is too late for) and after Spark's partial
aggregation (rows of one group and one batch and one partition are merged first). It is not
a count of source rows, and Spark does not say which rows they were. :func:`run_native`
reports the sum over the batches of the run (:class:`NativeRun`) and says when some batch's
progress was not available (``complete`` False), never a silent zero.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eowc.executors.spark import CLOSE_SEQ, NATIVE_CONVENTION
from eowc.executors.spark.session import session_setting
from eowc.executors.spark.sink import read_batches
from eowc.semantics.analysis.completion import completion_rule
from eowc.semantics.analysis.watermark_derivation import conjuncts
from eowc.semantics.engines.interpreter import Emission, check_runs_under_eowc
from eowc.semantics.engines.multi_input import sources_of, split_multi_input
from eowc.semantics.errors import PlanError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.expr import (
    Binary,
    Case,
    Cast,
    Column,
    ColumnRef,
    Compiled,
    Expr,
    Func,
    InList,
    IsNull,
    Literal,
    Row,
    Schema,
    Unary,
    compile_expr,
    referenced_columns,
)
from eowc.semantics.ir.plan import (
    WINDOW_COLUMNS,
    AggCall,
    Aggregate,
    Filter,
    Join,
    Plan,
    Project,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    WindowTVF,
    tie_break,
    walk,
)
from eowc.semantics.ir.values import (
    MICROS_PER_MILLI,
    SqlType,
    computing_under,
    from_external,
    row_sort_key,
)
from eowc.semantics.ir.windows import WindowKind

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

#: What the CLI and the errors tell a user to run instead.
ALTERNATIVE = "use --engine spark (the eowc executors)"

#: Hidden columns the compiled query carries to the sink, to order an epoch's rows as the
#: reference does (by window end, then by group key) and dropped when read back.
BOUND_COLUMN = "_bound"
KEY_PREFIX = "_key"
_WINDOW = "_window"  # Spark's window struct, carried through the plan under this name
SEQ = "_seq"  # the source's position column, carried up to the aggregation
LEFT_SEQ, RIGHT_SEQ = "_lseq", "_rseq"  # a join's two sides' _seq, carried to the sink

#: File in the work directory with the per-batch ``numRowsDroppedByWatermark`` of every run.
DROPPED_FILE = "native-dropped-by-watermark.json"

#: How many batches' progress a streaming query keeps (Spark's default: 100).
PROGRESS_KEPT = "spark.sql.streaming.numRecentProgressUpdates"


class NoNativeOperator(PlanError):
    """Spark has no native streaming operator for (part of) the plan."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"Spark has no native operator for {what}; {ALTERNATIVE}")


# ---------------------------------------------------------------------------------------------
# Types and expressions


def spark_type_name(sql_type: SqlType) -> str:
    """The Spark SQL type of a plan type (``INTERVAL`` is a day-time interval)."""
    names = {SqlType.BIGINT: "bigint", SqlType.DOUBLE: "double", SqlType.VARCHAR: "string",
             SqlType.BOOLEAN: "boolean", SqlType.TIMESTAMP: "timestamp",
             SqlType.TIMESTAMPTZ: "timestamp", SqlType.TIMESTAMP_LTZ: "timestamp",  # UTC
             SqlType.INTERVAL: "interval day to second", SqlType.NULL: "string",
             SqlType.DECIMAL: "decimal(38, 18)"}
    return names[sql_type]


def spark_column_type(column: Column) -> str:
    """The Spark SQL type of a source column: a column declared ``DECIMAL(p, s)`` is Spark's
    ``decimal(p, s)`` (Spark's own decimal rules then type sums, averages and quotients)."""
    if column.type is SqlType.DECIMAL and column.precision is not None:
        return f"decimal({column.precision}, {column.scale or 0})"
    return spark_type_name(column.type)


def spark_compiled_type(compiled: Compiled) -> str:
    """The Spark SQL type of a compiled expression: a DECIMAL of known shape is Spark's
    ``decimal(p, s)``."""
    if compiled.type is SqlType.DECIMAL and compiled.shape is not None:
        return f"decimal({compiled.shape[0]}, {compiled.shape[1]})"
    return spark_type_name(compiled.type)


def _typed_output(column: Column) -> SparkColumn:
    """An output column as the plan types it; a DECIMAL keeps the type Spark's rules gave it
    (its scale is the engine's: an avg's ``s + 4``, a quotient's ``max(6, s1 + p2 + 1)``)."""
    from pyspark.sql import functions as F

    named = F.col(f"`{column.name}`")
    if column.type is SqlType.DECIMAL:
        return named.alias(column.name)
    return named.cast(spark_type_name(column.type)).alias(column.name)


def sql_function(name: str, *arguments: SparkColumn) -> SparkColumn:
    """A call of Spark SQL's built-in function ``name`` (``call_function`` from Spark 3.5;
    before, ``call_udf``, which resolves a built-in by its name too)."""
    from pyspark.sql import functions as F

    call = getattr(F, "call_function", None) or F.call_udf
    return call(name, *arguments)


def _literal(expr: Literal) -> SparkColumn:
    from pyspark.sql import functions as F

    if expr.value is None:
        return F.lit(None).cast(spark_type_name(expr.type))
    if expr.type.is_time:  # microseconds; never through Python's local time
        return sql_function("timestamp_micros", F.lit(int(expr.value)))
    if expr.type is SqlType.INTERVAL:
        return F.lit(dt.timedelta(microseconds=int(expr.value)))
    if expr.type is SqlType.BIGINT:  # Spark types an integer literal beside a decimal by its
        return F.lit(int(expr.value))  # own digits (DecimalPrecision), as the reference does
    if expr.type is SqlType.DOUBLE:
        return F.lit(float(expr.value)).cast("double")
    return F.lit(expr.value)


_COMPARISON_OPS = ("=", "<>", "<", "<=", ">", ">=")


def _binary(expr: Binary, schema: Schema) -> SparkColumn:
    from pyspark.sql import functions as F

    left, right = spark_column(expr.left, schema), spark_column(expr.right, schema)
    op = expr.op
    if op == "AND":
        return left & right  # three-valued in both
    if op == "OR":
        return left | right
    if op in _COMPARISON_OPS:
        return {"=": left == right, "<>": left != right, "<": left < right,
                "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    left_type = compile_expr(expr.left, schema).type
    right_type = compile_expr(expr.right, schema).type
    if op == "||":
        if {left_type, right_type} & {SqlType.DOUBLE, SqlType.TIMESTAMP, SqlType.INTERVAL}:
            raise NoNativeOperator(f"the expression {_show(expr)} (Spark formats numbers and "
                                   f"times as text differently)")
        return F.concat(left.cast("string"), right.cast("string"))
    result = compile_expr(expr, schema).type
    if result is SqlType.INTERVAL and op in "*/":
        raise NoNativeOperator(f"the expression {_show(expr)} (interval arithmetic by a number)")
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    zero = right == F.lit(0)
    if op == "/" and result is SqlType.DECIMAL:
        if compile_expr(expr, schema).shape is None:
            raise NoNativeOperator(f"the expression {_show(expr)} (Spark fixes a decimal "
                                   f"quotient's scale by the declared types: declare the "
                                   f"columns DECIMAL(p, s))")
        return F.when(zero, F.lit(None)).otherwise(left / right)
    if op == "/":
        if result is SqlType.BIGINT:  # integer division truncating toward zero, NULL on zero
            return F.when(zero, F.lit(None).cast("bigint")).otherwise(
                sql_function("div", left, right))
        if SqlType.DOUBLE not in (left_type, right_type):
            left = left.cast("double")
        return F.when(zero, F.lit(None).cast("double")).otherwise(left / right)
    if op == "%":  # Spark's % takes the dividend's sign, as the reference's does
        return F.when(zero, F.lit(None).cast(spark_type_name(result))).otherwise(left % right)
    raise NoNativeOperator(f"the operator {op}")


_DATE_TRUNC_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week",
                     "month", "year")


def _func(expr: Func, schema: Schema) -> SparkColumn:
    from pyspark.sql import functions as F

    name, args = expr.name, expr.args
    compile_expr(expr, schema)  # the reference's own checks (units, arity, types)
    if name == "date_trunc":
        unit = str(args[0].value).lower() if isinstance(args[0], Literal) else ""
        if unit in _DATE_TRUNC_UNITS:
            return F.date_trunc(unit, spark_column(args[1], schema))
    elif name == "extract":
        field_name = str(args[0].value).lower() if isinstance(args[0], Literal) else ""
        ts = spark_column(args[1], schema)
        fields: dict[str, Callable[[SparkColumn], SparkColumn]] = {
            "year": F.year, "month": F.month, "day": F.dayofmonth, "hour": F.hour,
            "minute": F.minute, "second": F.second,
            "dow": lambda c: F.dayofweek(c) - 1, "doy": F.dayofyear,
            "epoch": lambda c: sql_function("unix_micros", c) / F.lit(1_000_000.0),
        }
        if field_name in fields:
            result = fields[field_name](ts)
            return result if field_name == "epoch" else result.cast("bigint")
    elif name == "tumble_start":
        size = args[1].value if isinstance(args[1], Literal) else None
        if isinstance(size, int):
            micros = sql_function("unix_micros", spark_column(args[0], schema))
            return sql_function("timestamp_micros", micros - F.pmod(micros, F.lit(size)))
    elif name == "coalesce":
        return F.coalesce(*(spark_column(a, schema) for a in args))
    elif len(args) == 1:
        arg = spark_column(args[0], schema)
        unary: dict[str, Callable[[SparkColumn], SparkColumn]] = {
            "abs": F.abs, "lower": F.lower, "upper": F.upper,
            "length": lambda c: F.length(c).cast("bigint"),
            "floor": lambda c: F.floor(c).cast("bigint"),
            "ceil": lambda c: F.ceil(c).cast("bigint"),
            "round": lambda c: F.round(c, 0),  # half away from zero, of the argument's type
        }
        if name in unary:
            return unary[name](arg)
    raise NoNativeOperator(f"the function call {_show(expr)} (no Spark function with the "
                           f"reference's semantics is mapped)")


def _show(expr: Expr) -> str:
    text = repr(expr)
    return text if len(text) <= 120 else text[:117] + "..."


def spark_column(expr: Expr, schema: Schema) -> SparkColumn:
    """``expr`` (bound to ``schema``) as a Spark Column with the reference's SQL semantics:
    NULL propagation, three-valued AND/OR/NOT, integer division truncating toward zero, NULL
    on division by zero. :class:`NoNativeOperator` for what has no faithful translation."""
    from pyspark.sql import functions as F

    if isinstance(expr, ColumnRef):
        compile_expr(expr, schema)  # a PlanError for an unknown column
        return F.col(f"`{expr.name}`")
    if isinstance(expr, Literal):
        return _literal(expr)
    if isinstance(expr, Unary):
        operand = spark_column(expr.operand, schema)
        return ~operand if expr.op == "NOT" else -operand
    if isinstance(expr, Binary):
        return _binary(expr, schema)
    if isinstance(expr, IsNull):
        operand = spark_column(expr.operand, schema)
        return operand.isNotNull() if expr.negated else operand.isNull()
    if isinstance(expr, InList):
        operand = spark_column(expr.operand, schema)
        found = operand.isin(*(spark_column(i, schema) for i in expr.items))
        return ~found if expr.negated else found
    if isinstance(expr, Case):
        result_type = spark_compiled_type(compile_expr(expr, schema))
        column: Any = F
        for condition, value in expr.whens:
            column = column.when(spark_column(condition, schema) == F.lit(True),
                                 spark_column(value, schema).cast(result_type))
        if expr.default is not None:
            column = column.otherwise(spark_column(expr.default, schema).cast(result_type))
        return column
    if isinstance(expr, Cast):
        source = compile_expr(expr.operand, schema).type
        operand = spark_column(expr.operand, schema)
        if expr.type is SqlType.BIGINT and source is SqlType.DOUBLE:
            return F.round(operand, 0).cast("bigint")  # the reference rounds, Spark truncates
        if expr.type is SqlType.VARCHAR and source in (SqlType.DOUBLE, SqlType.TIMESTAMP):
            raise NoNativeOperator(f"the expression {_show(expr)} (Spark formats "
                                   f"{source.value} as text differently)")
        return operand.cast(spark_type_name(expr.type))
    if isinstance(expr, Func):
        return _func(expr, schema)
    raise NoNativeOperator(f"the expression {_show(expr)}")


#: The aggregates with a Spark aggregate of the same semantics (median and percentile_cont:
#: Spark's exact ``median``/``percentile``, linear interpolation like the reference's).
NATIVE_AGGREGATES = ("count", "sum", "min", "max", "avg", "median", "percentile_cont")


def check_aggregate(call: AggCall) -> None:
    """:class:`NoNativeOperator` unless Spark's streaming aggregation can compute ``call``."""
    if call.function not in NATIVE_AGGREGATES:
        raise NoNativeOperator(f"the aggregate {call.function} (Spark's first/last depend on "
                               f"the order rows arrive in, not on event time)")
    if call.distinct:
        raise NoNativeOperator(f"{call.function}(DISTINCT ...) (Spark's streaming aggregation "
                               f"does not support distinct aggregates)")


def spark_aggregate(call: AggCall, schema: Schema) -> SparkColumn:
    """One aggregate call as a Spark aggregate expression (named ``call.name``)."""
    from pyspark.sql import functions as F

    check_aggregate(call)
    if call.function == "count" and call.argument is None:
        return F.count(F.lit(1)).alias(call.name)
    assert call.argument is not None
    argument = spark_column(call.argument, schema)
    functions: dict[str, Callable[[SparkColumn], SparkColumn]] = {
        "count": F.count, "sum": F.sum, "min": F.min, "max": F.max,
        "avg": _average(compile_expr(call.argument, schema)),
        "median": lambda c: F.median(c.cast("double")),
        "percentile_cont": lambda c: sql_function("percentile", c.cast("double"),
                                                  F.lit(call.fraction)),
    }
    return functions[call.function](argument).alias(call.name)


def _average(argument: Compiled) -> Callable[[SparkColumn], SparkColumn]:
    """Spark's avg: of a declared decimal, Spark's exact ``DECIMAL(p + 4, s + 4)``; of other
    numbers, of doubles (:class:`NoNativeOperator` for a decimal of unknown type, whose
    scale Spark could not know)."""
    from pyspark.sql import functions as F

    if argument.type is not SqlType.DECIMAL:
        return lambda c: F.avg(c.cast("double"))
    if argument.shape is None:
        raise NoNativeOperator("avg of a DECIMAL without a declared precision and scale "
                               "(Spark's avg takes its scale from the type: declare the "
                               "column DECIMAL(p, s))")
    return F.avg


# ---------------------------------------------------------------------------------------------
# The plan's shape and the native operators


def _chain(plan: Plan) -> list[Plan]:
    """The plan's nodes, bottom (the scan) first; NoNativeOperator unless it is one chain."""
    nodes = walk(plan)
    if any(len(n.children) > 1 for n in nodes):
        raise NoNativeOperator("a plan with several inputs")
    return list(reversed(nodes))


#: Spark's stream-stream join types, by the plan's join kind (no LEFT ANTI between streams).
SPARK_JOIN_TYPES = {"inner": "inner", "left": "left_outer", "right": "right_outer",
                    "full": "full_outer", "semi": "left_semi"}


def _join_shape(query: Query) -> tuple[list[Plan], Join]:
    """A join of two sources (filters and projections on each) under stateless nodes: the
    nodes above the join, bottom first, and the join; NoNativeOperator otherwise."""
    above: list[Plan] = []
    node = query.plan
    while len(node.children) == 1:
        above.append(node)
        node = node.children[0]
    if not isinstance(node, Join) or any(not isinstance(n, Filter | Project) for n in above):
        raise NoNativeOperator("this plan with several inputs (Spark's streaming joins are "
                               "compiled for a join of two sources under a plain SELECT)")
    if node.kind not in SPARK_JOIN_TYPES:
        raise NoNativeOperator(f"a {node.kind.upper()} join (Spark has no stream-stream "
                               f"{node.kind} join)")
    for side in (node.left, node.right):
        if any(not isinstance(n, Filter | Project | Scan) for n in walk(side)):
            raise NoNativeOperator("a join input other than a source with filters and "
                                   "projections")
    return list(reversed(above)), node


def native_operator(query: Query) -> str:
    """The name of the Spark operator that runs ``query``'s stateful part (a key of
    :data:`NATIVE_OPERATORS`), or :class:`NoNativeOperator` saying what Spark lacks."""
    if _is_composed(query):
        return _check_composed(query)
    if any(len(n.children) > 1 for n in walk(query.plan)):
        _join_shape(query)
        return "interval_join"
    nodes = _chain(query.plan)
    tops = [n for n in nodes if isinstance(n, TopN)]
    if tops:
        return _check_deduplicate(tops[0], query)
    aggregates = [n for n in nodes if isinstance(n, Aggregate)]
    windows = [n for n in nodes if isinstance(n, WindowTVF | SessionTVF)]
    if not aggregates:
        raise NoNativeOperator("an EOWC sort (SELECT ... EMIT ON WINDOW CLOSE without GROUP BY: "
                               "Spark does not sort a stream by event time)")
    if not windows or nodes.index(windows[0]) > nodes.index(aggregates[0]):
        raise NoNativeOperator("GROUP BY without a window TVF (Spark's append mode needs a "
                               "window or the event-time column in the key, and keeps the "
                               "groups' state forever without one)")
    for call in aggregates[0].calls:
        check_aggregate(call)
    if isinstance(windows[0], SessionTVF):
        keys = {e.name for _, e in aggregates[0].group_by
                if isinstance(e, ColumnRef) and e.name not in WINDOW_COLUMNS}
        if keys != set(windows[0].partition_by) or any(
                not isinstance(e, ColumnRef) for _, e in aggregates[0].group_by):
            raise NoNativeOperator("a SESSION whose PARTITION BY columns are not exactly the "
                                   "GROUP BY's other keys (F.session_window makes the sessions "
                                   "of each group)")
        return "session_window"
    if windows[0].spec.kind is WindowKind.CUMULATE:
        raise NoNativeOperator("CUMULATE windows (F.window has tumbling and sliding windows "
                               "only)")
    return "window_aggregate"


def _check_deduplicate(top: TopN, query: Query) -> str:
    """A TopN Spark runs natively: the first row per key by event time, which
    ``dropDuplicatesWithinWatermark`` is meant for (it keeps the first row to *arrive*)."""
    src = query.source
    time_name = src.columns[src.event_time_index].name if src.event_time_index is not None else None
    if top.limit != 1 or len(top.order_by) != 1 or top.order_by[0] != (ColumnRef(time_name), False) \
            or not all(isinstance(e, ColumnRef) for e in top.partition_by) \
            or not isinstance(top.input, Scan):
        raise NoNativeOperator("a TopN other than a deduplication of the source (ROW_NUMBER() "
                               "OVER (PARTITION BY columns ORDER BY the event time) = 1 over "
                               "the source: dropDuplicatesWithinWatermark)")
    return "deduplicate"


@dataclass(frozen=True)
class _Frame:
    """A DataFrame under construction with the plan schema its visible columns have."""

    frame: DataFrame
    schema: Schema


def _stateless(current: _Frame, node: Plan, carry: list[str]) -> _Frame:
    """Apply a Filter or Project node; ``carry`` are hidden columns kept through projections."""
    from pyspark.sql import functions as F

    if isinstance(node, Filter):
        condition = spark_column(node.predicate, current.schema)
        if SEQ in carry:  # below the aggregation: let the close row through
            condition = condition | (F.col(SEQ) == F.lit(CLOSE_SEQ))
        return _Frame(current.frame.filter(condition), current.schema)
    if isinstance(node, Project):
        items = [spark_column(e, current.schema).alias(name) for name, e in node.items]
        return _Frame(current.frame.select(*items, *(F.col(c) for c in carry)), node.schema)
    raise NoNativeOperator(f"a {type(node).__name__} node in this position")


def _window_aggregate(sources: Mapping[str, DataFrame], query: Query) -> DataFrame:
    """TUMBLE/HOP + GROUP BY in append mode: ``withWatermark``, ``F.window``,
    ``groupBy(window, keys).agg(...)``. Output: the plan's columns, named and typed as in
    ``query.schema``, then :data:`BOUND_COLUMN` (the window end) and the group keys as
    ``_key0, _key1, ...`` (for the reference's order within an epoch)."""
    from pyspark.sql import functions as F

    source = sources[query.source.name]
    nodes = _chain(query.plan)
    window_at = next(i for i, n in enumerate(nodes) if isinstance(n, WindowTVF | SessionTVF))
    aggregate_at = next(i for i, n in enumerate(nodes) if isinstance(n, Aggregate))
    tvf, aggregate = nodes[window_at], nodes[aggregate_at]
    assert isinstance(tvf, WindowTVF | SessionTVF) and isinstance(aggregate, Aggregate)
    stamped = _watermarked(source, query)
    src = query.source
    # The close row (``_seq`` -1) only moves the watermark, so it must pass every WHERE:
    # Spark's optimizer pushes a condition that does not read the event-time column below
    # withWatermark (``PushPredicateThroughNonJoin``), and would even push a filter that drops
    # the close row. So the close row is kept: it lands in a window of 2262-01-01 that never
    # closes (its end is beyond the watermark it makes), one group of state, never emitted.
    current = _Frame(stamped.select(*(F.col(f"`{c.name}`") for c in src.columns), SEQ),
                     src.columns)
    for node in nodes[1:window_at]:
        current = _stateless(current, node, [SEQ])
    if isinstance(tvf, SessionTVF):
        window = F.session_window(F.col(f"`{tvf.time_column}`"), f"{tvf.gap} microseconds")
    else:
        spec = tvf.spec
        slide = spec.size if spec.kind is WindowKind.TUMBLE else spec.slide
        window = F.window(F.col(f"`{tvf.time_column}`"), f"{spec.size} microseconds",
                          f"{slide} microseconds", f"{spec.offset % slide} microseconds")
    windowed = current.frame.select("*", window.alias(_WINDOW))
    one_ms = dt.timedelta(milliseconds=1)
    windowed = windowed.select(
        *(F.col(f"`{c.name}`") for c in current.schema), F.col(_WINDOW).start.alias("window_start"),
        F.col(_WINDOW).end.alias("window_end"),
        (F.col(_WINDOW).end - F.lit(one_ms)).alias("window_time"), F.col(SEQ), F.col(_WINDOW))
    current = _Frame(windowed, tvf.schema)
    for node in nodes[window_at + 1:aggregate_at]:
        current = _stateless(current, node, [SEQ, _WINDOW])

    # GROUP BY: the window columns come from Spark's window struct (grouping by it is what
    # makes Spark's aggregation follow the watermark); other keys are plan expressions.
    group: list[SparkColumn] = [F.col(_WINDOW)]
    keys_after: list[SparkColumn] = []
    # Sessions of one end are ordered by their start (as the reference does): it leads the key.
    order_keys = [F.col(_WINDOW).start] if isinstance(tvf, SessionTVF) else []
    for name, expr in aggregate.group_by:
        if isinstance(expr, ColumnRef) and expr.name in WINDOW_COLUMNS:
            part = {"window_start": F.col(_WINDOW).start, "window_end": F.col(_WINDOW).end,
                    "window_time": F.col(_WINDOW).end - F.lit(one_ms)}[expr.name]
            keys_after.append(part.alias(name))
        else:
            if referenced_columns(expr) & set(WINDOW_COLUMNS):
                raise NoNativeOperator("a window column inside a GROUP BY expression")
            group.append(spark_column(expr, current.schema).alias(name))
            keys_after.append(F.col(f"`{name}`"))
    calls = [spark_aggregate(call, current.schema) for call in aggregate.calls]
    if not calls:
        calls = [F.count(F.lit(1)).alias("_rows")]  # Spark needs an aggregate expression
    grouped = current.frame.groupBy(*group).agg(*calls)
    order_keys += keys_after
    hidden = [BOUND_COLUMN, *(f"{KEY_PREFIX}{i}" for i in range(len(order_keys)))]
    result = grouped.select(
        *keys_after, *(F.col(f"`{c.name}`") for c in aggregate.calls),
        F.col(_WINDOW).end.alias(BOUND_COLUMN),
        *(key.alias(f"{KEY_PREFIX}{i}") for i, key in enumerate(order_keys)))
    # keys_after[i] refers to the window struct or a grouped column, both still there
    current = _Frame(result, aggregate.schema)
    return _above(current, nodes[aggregate_at + 1:], query, hidden)


def _watermarked(source: DataFrame, query: Query, src: Source | None = None) -> DataFrame:
    """``source`` with Spark's watermark on the event-time column of ``src`` (the query's
    source when None) and its delay."""
    from pyspark.sql import functions as F

    src = src or query.source
    assert src.watermark is not None and src.event_time_index is not None
    delay_ms = src.watermark.delay // MICROS_PER_MILLI
    for column in src.columns:  # a DECIMAL arrives as its digits (a string column)
        if column.type is SqlType.DECIMAL:
            source = source.withColumn(column.name, F.col(f"`{column.name}`")
                                       .cast(spark_column_type(column)))
    return source.withWatermark(src.columns[src.event_time_index].name, f"{delay_ms} milliseconds")


def _above(current: _Frame, nodes: list[Plan], query: Query, hidden: list[str]) -> DataFrame:
    """The stateless nodes above the stateful operator, then the plan's columns, named and
    typed as in ``query.schema``, followed by the ``hidden`` ordering columns."""
    from pyspark.sql import functions as F

    for node in nodes:
        current = _stateless(current, node, hidden)
    return current.frame.select(*(_typed_output(c) for c in query.schema),
                                *(F.col(h) for h in hidden))


def _deduplicate(sources: Mapping[str, DataFrame], query: Query) -> DataFrame:
    """Deduplication: ``dropDuplicatesWithinWatermark(keys)`` over the watermarked source,
    the rank column (always 1), the part above. Spark keeps the first row of a key to
    *arrive* and emits it in the batch it arrives in; it forgets the key once the watermark
    passes that row's time plus the delay. Hidden ordering columns: the event time, then the
    key (the reference's order)."""
    from pyspark.sql import functions as F

    source = sources[query.source.name]
    nodes = _chain(query.plan)
    top_at = next(i for i, n in enumerate(nodes) if isinstance(n, TopN))
    top = nodes[top_at]
    assert isinstance(top, TopN)
    src = query.source
    assert src.event_time_index is not None
    time_name = src.columns[src.event_time_index].name
    keys = [e.name for e in top.partition_by if isinstance(e, ColumnRef)]
    stamped = _watermarked(source, query).select(
        *(F.col(f"`{c.name}`") for c in src.columns), SEQ)
    kept = stamped.dropDuplicatesWithinWatermark(keys).filter(F.col(SEQ) != F.lit(CLOSE_SEQ))
    hidden = [BOUND_COLUMN, *(f"{KEY_PREFIX}{i}" for i in range(len(keys)))]
    ranked = kept.select(*(F.col(f"`{c.name}`") for c in src.columns),
                         F.lit(1).cast("bigint").alias(top.rank_column),
                         F.col(f"`{time_name}`").alias(BOUND_COLUMN),
                         *(F.col(f"`{k}`").alias(f"{KEY_PREFIX}{i}") for i, k in enumerate(keys)))
    return _above(_Frame(ranked, top.schema), nodes[top_at + 1:], query, hidden)


def _interval_join(sources: Mapping[str, DataFrame], query: Query) -> DataFrame:
    """A stream-stream join of two sources: each with its watermark and stateless nodes, its
    columns renamed to the join's names (``l.ts``, ...), joined on the plan's condition with
    Spark's join type; then the nodes above. Spark emits a joined row at once and an outer
    row when its global watermark (the minimum) passes the row's time bound; it does not
    sort. Hidden columns: the output's watermark column (the reference's order), and the two
    sides' ``_seq`` (the close rows, which only move the watermark, are left out when read
    back: a filter would be pushed below the watermark and keep them from moving it)."""
    from pyspark.sql import functions as F

    above, join = _join_shape(query)
    sides = []
    for side, names, seq in ((join.left, join.sides[0], LEFT_SEQ),
                             (join.right, join.sides[1], RIGHT_SEQ)):
        nodes = list(reversed(walk(side)))
        scan = nodes[0]
        assert isinstance(scan, Scan)
        src = scan.source
        current = _Frame(_watermarked(sources[src.name], query, src).select(
            *(F.col(f"`{c.name}`") for c in src.columns), SEQ), src.columns)
        for node in nodes[1:]:
            current = _stateless(current, node, [SEQ])
        sides.append(current.frame.select(
            *(F.col(f"`{c.name}`").alias(name) for c, name in zip(current.schema, names,
                                                                   strict=True)),
            F.col(SEQ).alias(seq)))
    condition = spark_column(join.condition, join.joined_schema)
    joined = sides[0].join(sides[1], condition, SPARK_JOIN_TYPES[join.kind])
    hidden = [LEFT_SEQ] + ([RIGHT_SEQ] if join.kind != "semi" else [])
    current = _Frame(joined, join.schema)
    for node in above:
        current = _stateless(current, node, hidden)
    return current.frame.select(*(_typed_output(c) for c in query.schema),
                                *(F.col(h) for h in hidden))


def _sort_order(query: Query) -> Callable[[Row], Any]:
    """The reference's order of an EOWC sort over a join within an epoch: rows without a
    watermark value (NULL-padded outer rows) first, then by watermark value and tie-break."""
    split = split_multi_input(query, NATIVE_CONVENTION)
    assert split is not None
    rule = completion_rule(split.upper, NATIVE_CONVENTION)
    tie = tie_break(split.upper.schema, split.derived)

    def order(row: Row) -> Any:
        bound = rule.bound(row)
        return (0, tie(row)) if bound is None else (1, bound, tie(row))
    return order


def _order_key_types(query: Query) -> list[SqlType]:
    """The types of the hidden ``_key<i>`` columns of a native query (see the compilers)."""
    nodes = walk(query.plan)
    top = next((n for n in nodes if isinstance(n, TopN)), None)
    if top is not None:
        return [compile_expr(e, top.input.schema).type for e in top.partition_by]
    aggregate = next(n for n in nodes if isinstance(n, Aggregate))
    session = [SqlType.TIMESTAMP] if any(isinstance(n, SessionTVF) for n in nodes) else []
    return session + [c.type for c in aggregate.schema[:len(aggregate.group_by)]]


# ---------------------------------------------------------------------------------------------
# Composed plans: several stateful operators, or a join of windowed inputs


#: The plan nodes a composed native plan is made of (each compiled by :func:`_visit`).
COMPOSED_NODES = (Scan, Filter, Project, WindowTVF, Aggregate, Join)


def _is_composed(query: Query) -> bool:
    """Whether ``query`` has more than one stateful operator, or a join whose inputs are
    windowed (a window TVF or an aggregation under it): Spark runs such plans as chained
    stateful operators (Spark 3.4 and later), all under one global watermark."""
    nodes = walk(query.plan)
    stateful = [n for n in nodes if isinstance(n, Aggregate | TopN | Join)]
    joins = [n for n in nodes if isinstance(n, Join)]
    return len(stateful) > 1 or any(isinstance(m, WindowTVF | Aggregate)
                                    for j in joins for m in walk(j)[1:])


def _check_composed(query: Query) -> str:
    """``composed`` when Spark has a streaming operator for every node of ``query``; else
    :class:`NoNativeOperator` naming the first that it lacks."""
    for node in walk(query.plan):
        if isinstance(node, TopN):
            raise NoNativeOperator("a TopN over a join or an aggregation (Spark has no "
                                   "streaming TopN)")
        if not isinstance(node, COMPOSED_NODES):
            raise NoNativeOperator(f"a {type(node).__name__} node in a plan of several "
                                   f"stateful operators")
        if isinstance(node, WindowTVF) and node.spec.kind is WindowKind.CUMULATE:
            raise NoNativeOperator("CUMULATE windows (F.window has tumbling and sliding "
                                   "windows only)")
        if isinstance(node, Join) and node.kind not in SPARK_JOIN_TYPES:
            raise NoNativeOperator(f"a {node.kind.upper()} join (Spark has no stream-stream "
                                   f"{node.kind} join)")
        if isinstance(node, Aggregate):
            for call in node.calls:
                check_aggregate(call)
    return "composed"


@dataclass(frozen=True)
class _Composed:
    """A composed plan's DataFrame under construction: its visible columns (``schema``), the
    hidden columns it carries (``hidden``: each source's ``_seq``, each window's struct), and
    for each visible window column, the hidden window struct it comes from and its part
    (``start``, ``end``, ``time``; ``event`` for a source's watermark column itself)."""

    frame: DataFrame
    schema: Schema
    hidden: tuple[str, ...]
    times: Mapping[str, tuple[str, str]]


_WINDOW_PARTS = {"window_start": "start", "window_end": "end", "window_time": "time"}


def _window_part(struct: str, part: str) -> SparkColumn:
    """A part of the window struct ``struct`` as the plan's window column (window_time: the
    end less 1 ms, as the reference's)."""
    from pyspark.sql import functions as F

    if part == "event":
        return F.col(f"`{struct}`")
    end = F.col(struct).end
    return {"start": F.col(struct).start, "end": end,
            "time": end - F.lit(dt.timedelta(milliseconds=1))}[part]


def _composed(sources: Mapping[str, DataFrame], query: Query) -> DataFrame:
    """A plan of chained stateful operators on Spark's own: window TVFs as ``F.window`` (over
    ``F.window_time`` of an earlier window, for a cascade), aggregations as ``groupBy(window,
    keys)``, a join of windowed inputs as a stream-stream join whose equalities of window
    columns are one equality of the two window structs (what Spark's join state is evicted
    by). Output: the plan's columns, then every source's ``_seq`` that reaches the top."""
    from pyspark.sql import functions as F

    counter = iter(range(1_000_000))
    top = _visit(query.plan, sources, query, counter)
    seqs = [h for h in top.hidden if h.startswith(SEQ)]
    return top.frame.select(*(_typed_output(c) for c in query.schema), *(F.col(h) for h in seqs))


def _visit(plan: Plan, sources: Mapping[str, DataFrame], query: Query,
           counter: Iterator[int]) -> _Composed:
    from pyspark.sql import functions as F

    if isinstance(plan, Scan):
        src = plan.source
        seq = f"{SEQ}{next(counter)}"
        frame = _watermarked(sources[src.name], query, src).select(
            *(F.col(f"`{c.name}`") for c in src.columns), F.col(SEQ).alias(seq))
        assert src.event_time_index is not None
        time = src.columns[src.event_time_index].name
        return _Composed(frame, src.columns, (seq,), {time: (time, "event")})
    if isinstance(plan, Join):
        return _visit_join(plan, sources, query, counter)
    below = _visit(plan.children[0], sources, query, counter)
    hidden = [F.col(h) for h in below.hidden]
    if isinstance(plan, Filter):
        condition = spark_column(plan.predicate, below.schema)
        for seq in (h for h in below.hidden if h.startswith(SEQ)):  # the close row passes
            condition = condition | (F.col(seq) == F.lit(CLOSE_SEQ))
        return dataclass_replace(below, frame=below.frame.filter(condition))
    if isinstance(plan, Project):
        items = [spark_column(e, below.schema).alias(name) for name, e in plan.items]
        times = {name: below.times[e.name] for name, e in plan.items
                 if isinstance(e, ColumnRef) and e.name in below.times}
        return _Composed(below.frame.select(*items, *hidden), plan.schema, below.hidden, times)
    if isinstance(plan, WindowTVF):
        struct, part = below.times.get(plan.time_column, ("", ""))
        if part not in ("event", "time"):
            raise NoNativeOperator(f"a window TVF over {plan.time_column}, which is not a "
                                   f"source's watermark column or a window's window_time")
        time = F.col(f"`{struct}`") if part == "event" else F.window_time(F.col(struct))
        spec = plan.spec
        slide = spec.size if spec.kind is WindowKind.TUMBLE else spec.slide
        window = f"{_WINDOW}{next(counter)}"
        frame = below.frame.select(
            *(F.col(f"`{c.name}`") for c in below.schema), *hidden,
            F.window(time, f"{spec.size} microseconds", f"{slide} microseconds",
                     f"{spec.offset % slide} microseconds").alias(window))
        frame = frame.select(*(F.col(f"`{c.name}`") for c in below.schema),
                             *(_window_part(window, part).alias(name)
                               for name, part in _WINDOW_PARTS.items()), *hidden, F.col(window))
        times = {**below.times, **{name: (window, part) for name, part in _WINDOW_PARTS.items()}}
        return _Composed(frame, plan.schema, (*below.hidden, window), times)
    if isinstance(plan, Aggregate):
        return _visit_aggregate(plan, below)
    raise NoNativeOperator(f"a {type(plan).__name__} node in this position")


def _visit_aggregate(plan: Aggregate, below: _Composed) -> _Composed:
    """``groupBy(window struct, keys)``: the window the GROUP BY's window columns come from
    (or a source's watermark column itself), so Spark's aggregation follows the watermark."""
    from pyspark.sql import functions as F

    structs = {below.times[e.name][0] for _, e in plan.group_by
               if isinstance(e, ColumnRef) and e.name in below.times}
    if len(structs) != 1:
        raise NoNativeOperator("a GROUP BY without exactly one window (or the watermark "
                               "column itself) among its keys (Spark's append mode needs one)")
    (struct,) = structs
    group, keys, times = [F.col(f"`{struct}`")], [], {}
    for name, expr in plan.group_by:
        if isinstance(expr, ColumnRef) and expr.name in below.times:
            part = below.times[expr.name][1]
            keys.append(_window_part(struct, part).alias(name))
            times[name] = (struct, part)
        else:
            if referenced_columns(expr) & set(below.times):
                raise NoNativeOperator("a window column inside a GROUP BY expression")
            group.append(spark_column(expr, below.schema).alias(name))
            keys.append(F.col(f"`{name}`"))
    calls = [spark_aggregate(call, below.schema) for call in plan.calls] or \
        [F.count(F.lit(1)).alias("_rows")]
    grouped = below.frame.groupBy(*group).agg(*calls)
    hidden = () if struct in {c.name for c in below.schema} else (struct,)  # else a window's
    frame = grouped.select(*keys, *(F.col(f"`{c.name}`") for c in plan.calls),
                           *(F.col(h) for h in hidden))
    return _Composed(frame, plan.schema, hidden, times)


def _visit_join(plan: Join, sources: Mapping[str, DataFrame], query: Query,
                counter: Iterator[int]) -> _Composed:
    """A stream-stream join: each side's columns renamed to the join's names, the
    equalities of the two sides' window columns (of one part) as one equality of their
    window structs, the other conjuncts as Spark Columns."""
    from pyspark.sql import functions as F

    sides, hidden, times = [], [], {}
    for side, names in ((plan.left, plan.sides[0]), (plan.right, plan.sides[1])):
        made = _visit(side, sources, query, counter)
        sides.append(made.frame.select(
            *(F.col(f"`{c.name}`").alias(name) for c, name in zip(made.schema, names,
                                                                   strict=True)),
            *(F.col(h) for h in made.hidden)))
        hidden.append(made.hidden)
        times.update({name: made.times[c.name] for c, name in zip(made.schema, names,
                                                                  strict=True)
                      if c.name in made.times})
    struct_pairs, rest = set(), []
    for conjunct in conjuncts(plan.condition):
        if isinstance(conjunct, Binary) and conjunct.op == "=" and \
                isinstance(conjunct.left, ColumnRef) and isinstance(conjunct.right, ColumnRef):
            one, other = (times.get(c.name) for c in (conjunct.left, conjunct.right))
            if one is not None and other is not None and one[1] == other[1] != "event":
                struct_pairs.add((one[0], other[0]))
                continue
        rest.append(conjunct)
    condition = None
    for one, other in sorted(struct_pairs):
        equal = F.col(one) == F.col(other)
        condition = equal if condition is None else condition & equal
    for conjunct in rest:
        column = spark_column(conjunct, plan.joined_schema)
        condition = column if condition is None else condition & column
    joined = sides[0].join(sides[1], condition, SPARK_JOIN_TYPES[plan.kind])
    if plan.kind == "semi":  # the left side's columns only
        times = {name: times[name] for name in plan.sides[0] if name in times}
        return _Composed(joined, plan.schema, hidden[0], times)
    return _Composed(joined, plan.schema, (*hidden[0], *hidden[1]), times)


#: Native operator name -> compiler ``(source DataFrames by name, each with the source's
#: columns and _seq; query) -> streaming DataFrame`` of the plan's columns plus the hidden
#: ordering columns.
NATIVE_OPERATORS: dict[str, Callable[[Mapping[str, DataFrame], Query], DataFrame]] = {
    "window_aggregate": _window_aggregate,
    "session_window": _window_aggregate,
    "deduplicate": _deduplicate,
    "interval_join": _interval_join,
    "composed": _composed,
}


#: Native operators built on an API later than the oldest Spark supported (3.4): the
#: operator, then the API and the first release that has it.
OPERATOR_RELEASES: dict[str, tuple[str, tuple[int, int]]] = {
    "deduplicate": ("DataFrame.dropDuplicatesWithinWatermark", (3, 5)),
}


def spark_release() -> str | None:
    """The release of the PySpark installed here, None without one."""
    try:
        from pyspark import __version__
    except ImportError:
        return None
    return __version__


def check_release(operator: str, release: str | None) -> None:
    """:class:`NoNativeOperator` when Spark ``release`` predates the API ``operator`` is built
    on (:data:`OPERATOR_RELEASES`), naming both."""
    if operator not in OPERATOR_RELEASES or release is None:
        return
    api, first = OPERATOR_RELEASES[operator]
    major, minor = (int(part) for part in release.split(".")[:2])
    if (major, minor) < first:
        raise NoNativeOperator(f"{operator.replace('_', ' ')} in Spark {release} ({api} came "
                               f"with Spark {first[0]}.{first[1]})")


def check_native(query: Query) -> str:
    """Check on the driver that ``query`` is a valid EOWC query (the reference's PlanError
    otherwise) and that the installed Spark has a native operator for it; return the
    operator's name."""
    if not query.emit_on_window_close:
        raise NoNativeOperator("an emit-on-update query (only EMIT ON WINDOW CLOSE is compiled)")
    check_runs_under_eowc(query, NATIVE_CONVENTION)
    _ = query.schema
    operator = native_operator(query)
    check_release(operator, spark_release())
    return operator


def native_stream(sources: Mapping[str, DataFrame], query: Query) -> DataFrame:
    """Compile ``query`` to Spark's own streaming operators over ``sources`` (by name, each a
    streaming DataFrame of the source's columns plus ``_seq``, e.g. the ``eowc_arrival_log``
    source)."""
    return NATIVE_OPERATORS[check_native(query)](sources, query)


# ---------------------------------------------------------------------------------------------
# Running it and reading it back


@dataclass
class NativeRun:
    """What a run of native Spark gave: the emissions, tagged with their epoch and in the
    reference's order within an epoch, and Spark's count of rows dropped by the watermark
    (``dropped``; see the module documentation for what Spark counts). ``complete`` is False
    when the progress of some batch was not available, so ``dropped`` is a lower bound."""

    emissions: list[Emission] = field(default_factory=list)
    dropped: int = 0
    complete: bool = True
    dropped_by_batch: dict[int, int] = field(default_factory=dict)


def _progress_drops(query: StreamingQuery) -> dict[int, int]:
    """Batch id -> the sum of ``numRowsDroppedByWatermark`` over the stateful operators, for
    every batch whose progress Spark still holds (``recentProgress``)."""
    drops: dict[int, int] = {}
    for progress in query.recentProgress:
        batch_id = int(progress["batchId"] if isinstance(progress, dict) else progress.batchId)
        operators = (progress.get("stateOperators") if isinstance(progress, dict)
                     else progress.stateOperators) or []
        drops[batch_id] = sum(int(op["numRowsDroppedByWatermark"] if isinstance(op, dict)
                                  else op.numRowsDroppedByWatermark) for op in operators)
    return drops


def _record_drops(workdir: Path, drops: dict[int, int]) -> None:
    path = workdir / DROPPED_FILE
    known = {int(k): v for k, v in json.loads(path.read_text(encoding="utf-8")).items()} \
        if path.exists() else {}
    known.update(drops)
    path.write_text(json.dumps({str(k): v for k, v in sorted(known.items())}), encoding="utf-8")


def start_native(spark: SparkSession, query_path: str, events_path: str, workdir: Path,
                 max_epochs: int | None = None, close: bool = False) -> None:
    """Run ``query_path`` on Spark's native operators over ``events_path`` until the log (or
    its first ``max_epochs`` epochs) is processed; with ``close``, then move the watermark
    past every window. The per-batch drop counts are kept in ``workdir/`` :data:`DROPPED_FILE`
    (a restart on the same work directory adds to them)."""
    from eowc.executors.spark.runner import arrival_frame, start_epoch_sink, value_failures

    query = parse_script(Path(query_path).read_text(encoding="utf-8")).query
    check_native(query)
    frames = {source.name: arrival_frame(spark, query_path, events_path, source.name,
                                         max_epochs, close, convention=NATIVE_CONVENTION)
              for source in sources_of(query.plan)}
    with computing_under(NATIVE_CONVENTION.values):  # the decimal types Spark's rules give
        frame = native_stream(frames, query)
    # The query keeps the progress of every batch of the run, not only Spark's last 100 (the
    # session's setting is read as the query runs, and restored after it).
    with value_failures(), session_setting(spark, PROGRESS_KEPT, 100_000):
        running = start_epoch_sink(frame, workdir)
        running.awaitTermination()
        _record_drops(workdir, _progress_drops(running))


def _internal(value: Any, sql_type: SqlType) -> Any:
    """A sink value (the external form of :func:`.sink.json_value`) as the reference's."""
    if value is None:
        return None
    if sql_type is SqlType.INTERVAL:
        sign = -1 if value.startswith("-") else 1
        hours, minutes, seconds = value.lstrip("-").split(":")
        whole, _, fraction = seconds.partition(".")
        return sign * ((int(hours) * 3600 + int(minutes) * 60 + int(whole)) * 1_000_000
                       + int(fraction.ljust(6, "0") or 0))
    if sql_type is SqlType.DOUBLE and isinstance(value, int):
        return float(value)
    if sql_type is SqlType.BIGINT and isinstance(value, float):
        return int(value)
    return from_external(value, sql_type)


def epoch_order(query: Query) -> Callable[[Mapping[str, Any]], tuple[Any, Row] | None]:
    """A sink record of a native query (its columns in the external form of
    :func:`.sink.json_value`, the hidden ones included) -> its sort key within its epoch (the
    reference's order: window end, then group key; over a join, the reference's EOWC sort
    order) and its row in internal form; None for a close row (it only moved the watermark)."""
    schema = query.schema
    operator = native_operator(query)
    joined = operator == "interval_join"
    order_of = _sort_order(query) if joined else None
    key_types = [] if joined or operator == "composed" else _order_key_types(query)

    def order(record: Mapping[str, Any]) -> tuple[Any, Row] | None:
        row = tuple(_internal(record[c.name], c.type) for c in schema)
        if operator == "composed":  # no order within an epoch is Spark's: the row's own
            if any(k.startswith(SEQ) and v == CLOSE_SEQ for k, v in record.items()):
                return None
            return row_sort_key(row), row
        if order_of is not None:
            if CLOSE_SEQ in (record.get(LEFT_SEQ), record.get(RIGHT_SEQ)):
                return None  # a close row, NULL-padded by an outer join
            return order_of(row), row
        key = tuple(_internal(record[f"{KEY_PREFIX}{i}"], t) for i, t in enumerate(key_types))
        return (_internal(record[BOUND_COLUMN], SqlType.TIMESTAMP), row_sort_key(key)), row
    return order


def collect_native(query: Query, workdir: Path) -> NativeRun:
    """The emissions and the drop count of a finished run in ``workdir``: each sink batch's
    rows tagged with the batch's epoch (from the batch's record, see :mod:`.sink`), ordered
    within an epoch by :func:`epoch_order`. The drop count is complete when Spark's progress
    of every batch that reached the sink was kept."""
    order = epoch_order(query)
    batches = read_batches(workdir / "output")
    per_epoch: dict[int, list[tuple[Any, Row]]] = {}
    for batch in batches:
        ordered = (order(record) for record in batch.rows)
        per_epoch.setdefault(batch.epoch, []).extend(o for o in ordered if o is not None)
    run = NativeRun()
    for epoch in sorted(per_epoch):
        run.emissions += [Emission(epoch, row) for _, row in
                          sorted(per_epoch[epoch], key=lambda item: item[0])]
    path = workdir / DROPPED_FILE
    drops = {int(k): int(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()} \
        if path.exists() else {}
    ran = {batch.batch_id for batch in batches}
    run.dropped_by_batch = drops
    run.dropped = sum(drops.values())
    run.complete = ran <= set(drops)
    return run


def run_native(query_path: str, events_path: str, close: bool = False,
               master: str = "local[2]", workdir: str | None = None) -> NativeRun:
    """Run ``query_path`` on Spark's native operators (``master``) over ``events_path`` and
    read back what it emitted (Spark names no late row, so unlike ``run_on_spark`` the parsed
    log is not needed). A new temporary work directory
    unless ``workdir`` is given (an earlier run's directory resumes from its checkpoint)."""
    from eowc.executors.spark.runner import open_spark

    query = parse_script(Path(query_path).read_text(encoding="utf-8")).query
    with computing_under(NATIVE_CONVENTION.values):
        check_native(query)  # refuse before starting Spark
    spark = open_spark(master)
    directory = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="eowc-native-"))
    start_native(spark, query_path, events_path, directory, close=close)
    return collect_native(query, directory)


def dropped_message(run: NativeRun) -> str:
    """The line the CLI prints about the rows Spark dropped as late."""
    count = f"{run.dropped}" if run.complete else f"at least {run.dropped}"
    return (f"late rows dropped by Spark's native operator: {count} (Spark does not say which; "
            f"it counts rows reaching its state store, per window and after partial "
            f"aggregation)")

