"""Scalar and aggregate conformance on Spark (verify/conformance.py): every scalar expression and
aggregate call, compiled to Spark's own columns by the compiler ``spark-native`` uses
(executors/spark/native.py), computed by Spark SQL in batch mode on generated rows, equals what
eowc computes under the spark convention, value and type, on every row and group."""

from __future__ import annotations

from typing import Any

from eowc.executors.spark.native import (
    NoNativeOperator,
    spark_aggregate,
    spark_column,
    spark_column_type,
    spark_compiled_type,
    sql_function,
)
from eowc.semantics.ir.expr import compile_expr
from eowc.semantics.ir.values import SqlType, computing_under
from eowc.semantics.rules.triggers import Convention
from eowc.verify.conformance import (
    EOWC,
    Difference,
    aggregate_plan,
    compiled_scalars,
    generated_rows,
    reference_aggregates,
    reference_values,
)

SPARK = Convention.SPARK
ROWS = generated_rows(seed=38, count=300)


def _frame(spark: Any, rows: list) -> Any:
    """The rows as a Spark DataFrame of TABLE's columns (times through microseconds)."""
    from pyspark.sql import functions as F

    schema = compiled_scalars(SPARK)[0][2]
    types = ", ".join(f"{c.name} {'bigint' if c.type.is_time else spark_column_type(c)}"
                      for c in schema)
    frame = spark.createDataFrame(rows, types)
    return frame.select(*(sql_function("timestamp_micros", F.col(c.name)).alias(c.name)
                          if c.type.is_time else F.col(c.name) for c in schema))


def _collected(column: Any, sql_type: SqlType) -> Any:
    """A result column as Spark computes it, times as microseconds (never Python's clock)."""
    return sql_function("unix_micros", column) if sql_type.is_time else column


def _spark_type(frame: Any) -> str:
    return frame.schema.fields[0].dataType.simpleString()


def _eowc_type(compiled: Any) -> str:
    return spark_compiled_type(compiled).replace(", ", ",")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN
    return a == b and type(a is None) is type(b is None)


def test_every_scalar_expression_computes_as_spark_computes_it(spark) -> None:
    frame = _frame(spark, ROWS)
    expected = reference_values(ROWS, SPARK)
    differences: list[Difference] = []
    unmapped, checked = [], 0
    with computing_under(SPARK.values):
        for text, expr, schema in compiled_scalars(SPARK):
            compiled = compile_expr(expr, schema)
            try:
                column = spark_column(expr, schema)
            except NoNativeOperator:
                unmapped.append(text)
                continue
            result = frame.select(_collected(column, compiled.type).alias("v"))
            engine_type = "timestamp" if compiled.type.is_time else _spark_type(result)
            values = [r.v for r in result.collect()]
            checked += 1
            eowc_type, eowc_values = _eowc_type(compiled), expected[text][1]
            for row, ours, theirs in zip(ROWS, eowc_values, values, strict=True):
                if engine_type != eowc_type or not _same(ours, theirs):
                    differences.append(Difference(text, row, ours, theirs, eowc_type, engine_type))
                    break
    assert checked >= 55, (checked, unmapped)
    assert not differences, "\n".join(map(str, differences))


def test_every_aggregate_computes_as_spark_computes_it(spark) -> None:
    from pyspark.sql import functions as F

    frame = _frame(spark, ROWS)
    expected = reference_aggregates(ROWS, SPARK)
    with computing_under(SPARK.values):
        plan = aggregate_plan(SPARK)
        schema = plan.input.schema
        calls = [spark_aggregate(call, schema) for call in plan.calls]
        (_, key), = plan.group_by
        grouped = frame.groupBy(spark_column(key, schema).alias("g")).agg(*calls)
        ts_call = [c.name for c in plan.calls
                   if c.argument is not None and compile_expr(c.argument, schema).type.is_time]
        rows = grouped.select("g", *(sql_function("unix_micros", F.col(c.name)).alias(c.name)
                                     if c.name in ts_call else F.col(c.name) for c in plan.calls))
        got = {r.g: tuple(r)[1:] for r in rows.collect()}
    differences = []
    assert set(got) == set(expected)
    for group, ours in expected.items():
        for text, mine, theirs in zip(EOWC.aggregates, ours, got[group], strict=True):
            if not _same(mine, theirs) and not (isinstance(mine, float) and isinstance(theirs, float)
                                                and abs(mine - theirs) <= 1e-9 * max(1, abs(mine))):
                differences.append(Difference(text, (group,), mine, theirs, "", ""))
    assert len(expected) == 6  # the groups -2..2 of i % 3 (the sign of i) and NULL
    assert not differences, "\n".join(map(str, differences))
