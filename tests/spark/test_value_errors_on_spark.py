"""A value the executors cannot compute inside a Spark worker fails ``eowc run --engine spark``
with eowc's own message and exit code 2 (``docs/sql/types.md``): BIGINT overflow is an error
under RisingWave and Spark's ANSI mode; under Flink it wraps, and the run succeeds with the
wrapped value (9223372036854775000 + 1000 - 2^64 = -9223372036854775616)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from eowc.verify.cli.main import main

QUERY = ("CREATE SOURCE t (n BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
         "SELECT n + 1000 AS m, ts FROM t EMIT ON WINDOW CLOSE;\n")
EVENTS = [{"table": "t", "row": {"n": 9223372036854775000, "ts": "2024-01-01 00:00:00"}},
          {"table": "t", "row": {"n": 1, "ts": "2024-01-01 00:00:05"}}]


def run(tmp_path: Path, convention: str, spark: object) -> object:
    (tmp_path / "q.sql").write_text(QUERY, encoding="utf-8")
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS),
                                      encoding="utf-8")
    return CliRunner().invoke(main, ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"),
                                     "--engine", "spark", "--convention", convention,
                                     "--workdir", str(tmp_path / "work")])


def test_bigint_overflow_on_spark_is_a_clear_error(tmp_path: Path, spark: object) -> None:
    result = run(tmp_path, "spark", spark)
    assert result.exit_code == 2
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("eowc: error: bigint out of range") and "(n + 1000)" in last
    assert "Traceback" not in last


def test_bigint_overflow_on_spark_wraps_under_flink(tmp_path: Path, spark: object) -> None:
    result = run(tmp_path, "flink", spark)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert rows[0] == {"m": -9223372036854775616, "ts": "2024-01-01 00:00:00"}


def test_decimals_and_timestamptz_on_spark_print_as_the_reference(spark: object) -> None:
    """The worked example of docs/sql/types.md: exact decimals (1.10 + 2.20 = 3.30, read from a
    JSON number and a string), a TIMESTAMPTZ event time from an offset, ``Z`` and epoch
    milliseconds, and NaN, through Spark's source, the executors and the sink."""
    root = Path(__file__).resolve().parents[2] / "docs" / "examples" / "types"
    args = ["run", str(root / "prices.sql"), str(root / "prices.jsonl"), "--close"]
    reference = CliRunner().invoke(main, args)
    on_spark = CliRunner().invoke(main, [*args, "--engine", "spark"])
    assert reference.exit_code == on_spark.exit_code == 0, on_spark.output
    rows = [line for line in on_spark.output.splitlines() if line.startswith("{")]
    assert rows == reference.output.splitlines()
    assert rows[0] == ('{"window_start": "2024-01-01 00:00:00+00:00", "total": 3.30, '
                       '"mean": 1.65, "not_a_number": "NaN"}')


def test_spark_native_overflow_in_ansi_mode_is_a_clear_error(tmp_path: Path, spark: object) -> None:
    """Spark's own SQL (``--engine spark-native``) raises [ARITHMETIC_OVERFLOW] in its ANSI mode
    (the default of Spark 4); eowc reports it in one line."""
    query = QUERY.replace("SELECT n + 1000 AS m, ts FROM t EMIT ON WINDOW CLOSE;",
                          "SELECT window_start, sum(n + 1000) AS s FROM TUMBLE(t, ts, INTERVAL '10' "
                          "SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;")
    (tmp_path / "q.sql").write_text(query, encoding="utf-8")
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS),
                                      encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(tmp_path / "q.sql"), str(tmp_path / "e.jsonl"),
                                       "--engine", "spark-native", "--close",
                                       "--workdir", str(tmp_path / "work")])
    assert result.exit_code == 2
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("eowc: error: overflow in Spark's ANSI mode ([ARITHMETIC_OVERFLOW]) "
                           "(the query ")
