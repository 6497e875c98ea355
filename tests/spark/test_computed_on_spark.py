"""Flink's watermark on a computed column on Spark: the arrival-log source gives each row its
computed columns (``ts AS TO_TIMESTAMP_LTZ(ts_ms, 3)``), so ``eowc run --engine spark`` (the
EOWC executors in Spark) and ``--engine spark-native`` (Spark's own operators) emit the rows
computed by hand in tests/test_computed_columns.py, with the late row judged by the computed
time (native: its sums of DECIMAL are doubles, compared rounded to the cent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from eowc.verify.cli.main import main
from tests.test_computed_columns import EVENTS, EXPECTED, TUMBLING, emitted


@pytest.mark.parametrize("engine", ["spark", "spark-native"])
def test_the_orders_example_on_spark(spark: SparkSession, tmp_path: Path, engine: str) -> None:
    query, events = tmp_path / "orders.sql", tmp_path / "orders.jsonl"
    query.write_text(TUMBLING, encoding="utf-8")
    events.write_text("".join(json.dumps(event) + "\n" for event in EVENTS), encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(query), str(events), "--engine", engine,
                                       "--convention", "spark", "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output
    rows = emitted(result.stdout)
    if engine == "spark-native":  # Spark's own SUM reads the DECIMAL prices as doubles
        rows = [(*row[:3], round(row[3], 2)) for row in rows]
    assert rows == EXPECTED
    late = "orders=1" if engine == "spark" else "native operator: 1"
    assert late in result.stderr  # the late row, by its computed time
