"""``spark-native`` with declared decimals: Spark's own ``decimal(p, s)`` columns, sums, averages
(``DECIMAL(p + 4, s + 4)``) and quotients (scale ``max(6, s1 + p2 + 1)``), exact and equal to
the reference under the spark convention (``docs/sql/types.md``). The expected digits are
computed by hand in the docstring."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from eowc.executors.spark.native import collect_native, start_native
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.values import computing_under, decimal_text
from eowc.semantics.rules.triggers import Convention

QUERY = """CREATE TABLE t (ts TIMESTAMP, p DECIMAL(10, 2), q DECIMAL(5, 1),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT window_start, sum(p) AS s, avg(p) AS a, sum(p / q) AS d, max(p / 3) AS third
FROM TUMBLE(t, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;
"""


def test_native_spark_sums_averages_and_divides_declared_decimals_exactly(
        spark, tmp_path: Path) -> None:  # noqa: ANN001 - the session fixture
    """p DECIMAL(10, 2) arrives as 1.10, 2.20 (from 1.1 and 2.195, half up), q DECIMAL(5, 1)
    as 3.0 and 0.3 (from 0.25). sum(p) 3.30 (DECIMAL(20, 2)); avg(p) 1.65 at scale 6:
    1.650000; p / q at scale max(6, 2 + 5 + 1) = 8: 1.10 / 3.0 = 0.36666667, 2.20 / 0.3 =
    7.33333333, sum 7.70000000; p / 3 (Spark types the literal by its digits, DECIMAL(1,
    0)): scale max(6, 2 + 1 + 1) = 6: 2.20 / 3 = 0.733333. Doubles would print
    3.3000000000000003 and 1.65."""
    (tmp_path / "q.sql").write_text(QUERY, encoding="utf-8")
    rows = [("00:00:01", "1.1", "3"), ("00:00:02", "2.195", "0.25"), ("00:00:30", "1", "1")]
    (tmp_path / "e.jsonl").write_text("".join(
        json.dumps({"table": "t", "row": {"ts": f"2024-01-01 {ts}", "p": p, "q": q}}) + "\n"
        for ts, p, q in rows), encoding="utf-8")
    start_native(spark, str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"), tmp_path / "run",
                 close=True)
    script = parse_script(QUERY)
    run = collect_native(script.query, tmp_path / "run")
    first = [decimal_text(v) for v in run.emissions[0].row[1:]]
    assert first == ["3.30", "1.650000", "7.70000000", "0.733333"]
    with computing_under(Convention.SPARK.values):
        log = load_arrival_log(str(tmp_path / "e.jsonl"), script.sources).log
    reference = [e.row for e in run_eowc(script.query, log, Convention.SPARK, close=True)]
    assert [e.row for e in run.emissions] == reference
    assert [[decimal_text(v) for v in row[1:]] for row in reference] == \
        [[decimal_text(v) if isinstance(v, Decimal) else v for v in e.row[1:]]
         for e in run.emissions]
