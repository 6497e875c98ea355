"""Scalar and aggregate conformance: eowc's values against an engine's own SQL in batch mode, on
generated rows.

Every oracle eowc has computes an expression with the same functions
(:func:`eowc.semantics.ir.expr.compile_expr` under a convention's
:class:`~eowc.semantics.ir.values.ValueRules`). Here the engine computes it itself, on the same
rows: each scalar expression and each aggregate call of a :class:`Catalog` (:data:`EOWC`, the
queries ``spark-native`` runs; :data:`FLINK`, Flink SQL) over the columns of its table, on
:func:`generated_rows` (NULLs, zeros, negatives, halves for rounding, times
before 1970, strings with case). A check gives every disagreement as a :class:`Difference`
(the expression, the row or group, both values and both types), never only a count.

:func:`reference_values` and :func:`reference_aggregates` are eowc's side; the engine's side is
the caller's (Spark: ``tests/spark/test_conformance.py``, through the same compiler to Spark
columns that ``spark-native`` uses, so that the compiler is checked too; Flink:
``tests/flink/test_flink_conformance.py``, the same Flink SQL text run by
:mod:`eowc.executors.flink.batch` in the Flink environment).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.expr import Compiled, Row, Schema, compile_expr
from eowc.semantics.ir.plan import Aggregate, Project, walk
from eowc.semantics.ir.values import MICROS_PER_SECOND, computing_under
from eowc.semantics.operators.aggregates import aggregate_value, compile_aggregate
from eowc.semantics.rules.triggers import Convention


@dataclass(frozen=True)
class Catalog:
    """What is checked in one dialect: the table every expression reads (its columns in the
    order of :func:`generated_rows`), the scalar expressions and the aggregate calls as that
    dialect writes them, and the GROUP BY key of the aggregates."""

    dialect: str
    table: str
    scalars: tuple[str, ...]
    aggregates: tuple[str, ...]
    group_key: str


#: eowc's own (RisingWave's) dialect, the queries ``spark-native`` runs.
EOWC = Catalog("risingwave", (
    "CREATE SOURCE t (i BIGINT, j BIGINT, d DOUBLE, m DECIMAL(10, 2), n DECIMAL(10, 2), "
    "s VARCHAR, ts TIMESTAMP, b BOOLEAN, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"), (
    "i + j", "i - j", "i * j", "i / j", "i % j", "-i", "abs(i)",
    "d + i", "d * d", "d / d", "i / d", "abs(d)", "floor(d)", "ceil(d)", "round(d)",
    "m + n", "m - n", "m * n", "m / n", "m + i", "m * 2", "m / 3", "abs(m)", "round(m)",
    "round(m, 1)", "CAST(i AS DOUBLE)", "CAST(d AS BIGINT)", "CAST(i AS VARCHAR)", "CAST(m AS DOUBLE)",
    "i = j", "i < j", "d >= i", "m <> n", "s = 'ab'", "s < 'b'",
    "b AND i > 0", "b OR i > 0", "NOT b", "i IS NULL", "s IS NOT NULL", "i IN (0, 1, 2)",
    "CASE WHEN i > j THEN i WHEN i < j THEN j END", "CASE WHEN b THEN m ELSE n END",
    "coalesce(i, j, 0)", "coalesce(s, 'none')",
    "lower(s)", "upper(s)", "length(s)", "s || 'x'", "s || CAST(i AS VARCHAR)",
    "date_trunc('minute', ts)", "date_trunc('hour', ts)", "date_trunc('day', ts)",
    "extract(year FROM ts)", "extract(month FROM ts)", "extract(day FROM ts)",
    "extract(hour FROM ts)", "extract(minute FROM ts)", "extract(second FROM ts)",
    "extract(dow FROM ts)", "extract(doy FROM ts)", "extract(epoch FROM ts)",
    "ts + INTERVAL '90' SECOND", "ts - INTERVAL '1' DAY", "ts < TIMESTAMP '1970-01-01 00:00:00'",
), ("count(*)", "count(j)", "sum(j)", "min(j)", "max(j)", "avg(j)", "sum(d)", "avg(d)",
    "min(d)", "max(s)", "min(s)", "sum(m)", "avg(m)", "min(m)", "max(ts)"), "i % 3")

#: Flink SQL, as Flink's documentation writes it (the flink dialect).
FLINK = Catalog("flink", (
    "CREATE TABLE t (i BIGINT, j BIGINT, d DOUBLE, m DECIMAL(10, 2), n DECIMAL(10, 2), "
    "s STRING, ts TIMESTAMP(3), b BOOLEAN, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
    "WITH ('connector' = 'datagen');\n"), (
    "i + j", "i - j", "i * j", "i / j", "MOD(i, j)", "-i", "ABS(i)",
    "d + i", "d * d", "d / d", "i / d", "ABS(d)", "FLOOR(d)", "CEIL(d)", "ROUND(d, 0)",
    "m + n", "m - n", "m * n", "m / n", "m + i", "m * 2", "m / 3", "ABS(m)", "ROUND(m, 1)",
    "ROUND(m, 0)",
    "CAST(i AS DOUBLE)", "CAST(d AS BIGINT)", "CAST(m AS BIGINT)", "CAST(i AS STRING)",
    "CAST(m AS DOUBLE)",
    "i = j", "i < j", "d >= i", "m <> n", "s = 'ab'", "s < 'b'",
    "b AND i > 0", "b OR i > 0", "NOT b", "i IS NULL", "s IS NOT NULL", "i IN (0, 1, 2)",
    "CASE WHEN i > j THEN i WHEN i < j THEN j END", "CASE WHEN b THEN m ELSE n END",
    "COALESCE(i, j, 0)", "COALESCE(s, 'none')",
    "LOWER(s)", "UPPER(s)", "CHAR_LENGTH(s)", "s || 'x'", "CONCAT(s, 'x')",
    "FLOOR(ts TO MINUTE)", "FLOOR(ts TO HOUR)", "FLOOR(ts TO DAY)",
    "EXTRACT(YEAR FROM ts)", "EXTRACT(MONTH FROM ts)", "EXTRACT(DAY FROM ts)",
    "EXTRACT(HOUR FROM ts)", "EXTRACT(MINUTE FROM ts)", "EXTRACT(SECOND FROM ts)",
    "ts + INTERVAL '90' SECOND", "ts - INTERVAL '1' DAY",
), ("COUNT(*)", "COUNT(j)", "SUM(j)", "MIN(j)", "MAX(j)", "AVG(j)", "SUM(d)", "AVG(d)",
    "MIN(d)", "MAX(s)", "MIN(s)", "SUM(m)", "AVG(m)", "MIN(m)", "MAX(ts)"), "MOD(i, 3)")

@dataclass(frozen=True)
class Difference:
    """One expression on which the engine and eowc disagree, on one row (or group)."""

    expression: str
    row: Row
    eowc: Any
    engine: Any
    eowc_type: str
    engine_type: str

    def __str__(self) -> str:
        return (f"{self.expression} on {self.row}: eowc {self.eowc!r} ({self.eowc_type}), "
                f"the engine {self.engine!r} ({self.engine_type})")


def generated_rows(seed: int, count: int) -> list[Row]:
    """``count`` rows of a catalog's table: small integers (zero and negatives), doubles with halves
    (rounding), decimals of two places, strings with case, times from 1969 to 1971, NULL in
    every column but the time now and then."""
    rng = random.Random(seed)
    base = -86_400 * 180  # 1969-07-05

    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value
    rows = []
    for _ in range(count):
        rows.append((
            maybe(rng.randint(-20, 20)), maybe(rng.choice([0, 0, *range(-9, 10)])),
            maybe(rng.choice([rng.randint(-40, 40) / 2, rng.uniform(-100, 100), 0.0])),
            maybe(Decimal(rng.randint(-99_999, 99_999)).scaleb(-2)),
            maybe(Decimal(rng.choice([0, *range(-500, 500, 7)])).scaleb(-2)),
            maybe(rng.choice(["ab", "Ab", "b", "", "zz", "Zürich"])),
            (base + rng.randint(0, 86_400 * 365)) * MICROS_PER_SECOND
            + rng.choice([0, 0, 500_000, rng.randint(0, 999) * 1000]),
            maybe(rng.choice([True, False])),
        ))
    return rows


def _projection(catalog: Catalog) -> tuple[Project, Schema]:
    listed = ", ".join(f"{e} AS c{k}" for k, e in enumerate(catalog.scalars))
    script = parse_script(catalog.table + f"SELECT {listed} FROM t;", dialect=catalog.dialect)
    project = next(n for n in walk(script.query.plan) if isinstance(n, Project))
    return project, next(iter(script.sources.values())).columns


def compiled_scalars(convention: Convention, catalog: Catalog = EOWC) -> list[tuple[str, Any, Schema]]:
    """Each scalar expression bound to the catalog's table under ``convention``'s value rules
    (the plan's expression, for an engine's compiler, and its schema)."""
    with computing_under(convention.values):
        project, schema = _projection(catalog)
        return [(text, expr, schema)
                for text, (_, expr) in zip(catalog.scalars, project.items, strict=True)]


def reference_values(rows: Sequence[Row], convention: Convention, catalog: Catalog = EOWC
                     ) -> dict[str, tuple[Compiled, list[Any]]]:
    """eowc's value of each scalar expression on each row (an exception's class name where
    eowc raises), and the compiled expression (its type and decimal shape)."""
    out = {}
    with computing_under(convention.values):
        for text, expr, schema in compiled_scalars(convention, catalog):
            compiled = compile_expr(expr, schema)
            values = []
            for row in rows:
                try:
                    values.append(compiled.evaluate(row))
                except Exception as error:  # noqa: BLE001 - an error is a value to compare
                    values.append(type(error).__name__)
            out[text] = (compiled, values)
    return out


def aggregate_plan(convention: Convention, catalog: Catalog = EOWC) -> Aggregate:
    """The GROUP BY of every aggregate call of the catalog, as eowc plans it."""
    with computing_under(convention.values):
        calls = ", ".join(f"{a} AS a{k}" for k, a in enumerate(catalog.aggregates))
        script = parse_script(catalog.table + f"SELECT {catalog.group_key} AS g, {calls} FROM t "
                              f"GROUP BY {catalog.group_key};", dialect=catalog.dialect)
        return next(n for n in walk(script.query.plan) if isinstance(n, Aggregate))


def reference_aggregates(rows: Sequence[Row], convention: Convention, catalog: Catalog = EOWC
                         ) -> dict[Any, Row]:
    """eowc's aggregates of the rows, by group (the interpreter's folds)."""
    with computing_under(convention.values):
        plan = aggregate_plan(convention, catalog)
        schema = plan.input.schema
        (_, key_expr), = plan.group_by
        key = compile_expr(key_expr, schema).evaluate
        groups: dict[Any, list[Row]] = {}
        for row in rows:
            groups.setdefault(key(row), []).append(row)
        functions = [compile_aggregate(c, schema, "ts", lambda row: row) for c in plan.calls]
        return {k: tuple(aggregate_value(f, members) for f in functions)
                for k, members in groups.items()}
