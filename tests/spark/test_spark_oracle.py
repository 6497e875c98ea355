"""The second oracle on Spark (eowc.executors.spark.oracle): the DuckDB oracle's batch SELECT,
transpiled by sqlglot to Spark SQL, gives the same rows as DuckDB and as the interpreter on
every worked example under every convention, and through ``eowc run --oracle spark``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eowc.executors.spark.oracle import spark_oracle_eowc, spark_sql
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.verify.cli.main import main
from tests.strategies import judged_at_sources
from tests.test_oracle import EXAMPLES, example_pairs, interpreter_final, rounded

PAIRS = example_pairs() + [("analysis/interval_join.sql", "interval_join.jsonl"),
                           ("analysis/union.sql", "union.jsonl"),
                           ("analysis/window_join.sql", "window_join.jsonl")]


@pytest.mark.parametrize(("sql", "events"), PAIRS)
def test_spark_agrees_with_duckdb_and_the_interpreter(spark, sql: str, events: str) -> None:  # noqa: ANN001
    parsed = parse_script((EXAMPLES / sql).read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / events), parsed.sources).log
    for convention in judged_at_sources(parsed.query):  # as DuckDB's, over all of INPUT
        on_spark = spark_oracle_eowc(parsed.query, log, convention, close=True)
        assert on_spark == oracle_eowc(parsed.query, log, convention, close=True), convention
        assert rounded(on_spark) == interpreter_final(parsed.query, log, convention, True)


def test_spark_sql_rewrites_what_spark_writes_differently() -> None:
    assert "percentile(`x`, 0.5)" in spark_sql("SELECT quantile_cont(\"x\", 0.5) FROM t").lower()
    assert "LEAD(`x`, 2)" in spark_sql("SELECT lead(\"x\", CAST(2 AS BIGINT)) OVER (ORDER BY y) "
                                       "FROM t")


def test_eowc_run_with_the_spark_oracle(spark) -> None:  # noqa: ANN001
    args = [str(EXAMPLES / "tumble.sql"), str(EXAMPLES / "bids.jsonl"), "--close"]
    runner = CliRunner()
    on_spark = runner.invoke(main, ["run", *args, "--oracle", "spark"])
    duck = runner.invoke(main, ["run", *args, "--oracle", "duckdb"])
    assert on_spark.exit_code == 0, on_spark.output
    assert on_spark.stdout == duck.stdout
    assert [json.loads(line)["total_price"] for line in on_spark.stdout.splitlines()] == [11.0, 10.0, 7.0]
