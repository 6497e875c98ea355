"""Definition 5 on Spark: the oracle's batch SELECT (:mod:`eowc.semantics.oracles.duckdb_oracle`),
   transpiled by
sqlglot from DuckDB's dialect to Spark SQL and run by Spark on INPUT, for logs larger than one
process holds comfortably (``eowc run --oracle spark [--master URL]``).

The plan is compiled once, to DuckDB SQL; sqlglot rewrites what Spark writes differently
(``QUALIFY`` becomes a filter over a subquery, quoted names become back-quoted). INPUT is the
same rows, handed to Spark as Arrow tables and registered as temporary views under the names
the SQL reads (``input``, or ``input_<source>`` with joins and unions).
"""

from __future__ import annotations

from collections import Counter

import sqlglot
from sqlglot import exp

from eowc.executors.spark.session import spark_session
from eowc.semantics.engines.inputs import LateRow
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.plan import Query
from eowc.semantics.oracles.duckdb_oracle import _result, arrow_table, oracle_query
from eowc.semantics.rules.triggers import Convention


def spark_sql(duckdb_sql: str) -> str:
    """The oracle's DuckDB query in Spark SQL. Besides sqlglot's own rewriting: DuckDB's
    ``quantile_cont(x, p)`` is Spark's ``percentile(x, p)`` (exact, interpolated),
    ``lead``/``lag`` take their offset as a plain integer literal, and DuckDB's ``error(msg)``
    is Spark's ``raise_error(msg)``."""
    def spark_only(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.PercentileCont) and node.expression is not None:
            return exp.Anonymous(this="percentile", expressions=[node.this, node.expression])
        if isinstance(node, exp.Lead | exp.Lag) and isinstance(node.args.get("offset"), exp.Cast):
            node.set("offset", node.args["offset"].this)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "error":
            return exp.Anonymous(this="raise_error", expressions=node.expressions)
        return node

    tree = sqlglot.parse_one(duckdb_sql, read="duckdb").transform(spark_only)
    return tree.sql(dialect="spark")


def spark_oracle_eowc(query: Query, log: ArrivalLog,
                      convention: Convention = Convention.RISINGWAVE, close: bool = False,
                      late: list[LateRow] | None = None, master: str = "local[2]"
                      ) -> Counter[tuple]:
    """The EOWC output after the last epoch of ``log`` (with ``close``: at the end of the
    input), computed by Spark from INPUT and the final watermark; rows left out of INPUT go to
    ``late``. Uses this process's Spark session (started on ``master`` if there is none)."""
    prepared = oracle_query(query, log, convention, close, late)
    spark = spark_session(master)
    views = []
    for table, source, rows in prepared.tables:
        name = table.strip('"')
        spark.createDataFrame(arrow_table(source, rows)).createOrReplaceTempView(name)
        views.append(name)
    try:
        result = spark.sql(spark_sql(prepared.sql)).collect()
    finally:
        for name in views:
            spark.catalog.dropTempView(name)
    return _result(query, [tuple(row) for row in result])
