"""``eowc engine spark``: Spark's own operators fed one epoch at a time through its file source
(every release from 3.4 has it), behind the line protocol: rows worked by hand through a
restart, the reference and Spark on generated logs with real SIGKILLs, and what a release or
Spark lacks refused by name."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from eowc.executors.spark.engine import SparkNativeSession
from eowc.executors.spark.native import NoNativeOperator, check_release
from eowc.verify.external import serve_line_protocol

SCRIPT = """CREATE SOURCE bids (auction BIGINT, price DECIMAL(10, 2), ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, window_start, window_end, COUNT(*) AS n, SUM(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '10' SECOND)
GROUP BY auction, window_start, window_end
EMIT ON WINDOW CLOSE;
"""


def _bid(second: float, price: str, auction: int = 1) -> dict:
    whole, _, fraction = f"{second:.3f}".partition(".")
    return {"table": "bids", "row": {"auction": auction, "price": price,
                                     "ts": f"2024-01-01 00:00:{int(whole):02d}.{fraction}"}}


@pytest.mark.spark
def test_spark_closes_a_window_when_the_watermark_reaches_its_end_across_a_restart(tmp_path: Path
                                                                                   ) -> None:
    """Epoch 0: 00:01 (1.00), 00:03 (2.00), 00:09.999 (4.00); W = 00:07.999, [00:00, 00:10) open.
    Epoch 1: 00:12 (0.70); W = 00:10 = the window's end: Spark closes it (end <= W) with three
    rows, 7.00. Epoch 2, after a restart: 00:08 (late: its window's end <= W of the epochs
    before, so Spark drops it) and 00:25 (0.01); W = 00:23 closes [00:10, 00:20): 0.70."""
    state = str(tmp_path / "state")
    session = SparkNativeSession(SCRIPT, "spark", state)
    out = [session.epoch(0, [_bid(1, "1.00"), _bid(3, "2.00"), _bid(9.999, "4.00")]),
           session.epoch(1, [_bid(12, "0.70")])]
    session.close()
    session = SparkNativeSession(SCRIPT, "spark", state)  # resumes from Spark's checkpoint
    out.append(session.epoch(2, [_bid(8, "100.00"), _bid(25, "0.01")]))
    session.close()
    assert out == [
        [],
        [{"row": {"auction": 1, "window_start": "2024-01-01 00:00:00",
                  "window_end": "2024-01-01 00:00:10", "n": 3, "total": _decimal("7.00")}}],
        [{"row": {"auction": 1, "window_start": "2024-01-01 00:00:10",
                  "window_end": "2024-01-01 00:00:20", "n": 1, "total": _decimal("0.70")}}]]


def _decimal(text: str) -> object:
    from decimal import Decimal
    return Decimal(text)


@pytest.mark.spark
def test_the_reference_and_spark_agree_on_generated_logs_with_real_sigkills(tmp_path: Path) -> None:
    query = tmp_path / "hop.sql"
    query.write_text(SCRIPT.replace("TUMBLE(bids, ts, INTERVAL '10' SECOND)",
                                    "HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)"))
    command = f"{sys.executable} -m eowc.verify.cli.main engine spark"
    done = subprocess.run([sys.executable, "-m", "eowc.verify.cli.main", "verify", str(query),
                           "--executor-cmd", command, "--convention", "spark", "--cases", "1",
                           "--crash", "--epoch-timeout", "180s", "--out", str(tmp_path / "cx")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every property held (1 cases; the engine restarted 0 times and crashed 1 times)" \
        in done.stderr, done.stderr[-2000:]


def test_a_query_spark_has_no_operator_for_is_refused_in_the_protocol(tmp_path: Path) -> None:
    """Refused before Spark starts, as the protocol's refusal message: the engine ends."""
    cumulate = SCRIPT.replace("TUMBLE(bids, ts, INTERVAL '10' SECOND)",
                              "CUMULATE(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)")
    header = {"script": cumulate, "convention": "spark", "state_dir": str(tmp_path)}
    out = io.StringIO()
    serve_line_protocol(SparkNativeSession, io.StringIO(json.dumps(header) + "\n"), out)
    assert json.loads(out.getvalue()) == {
        "refused": "Spark has no native operator for CUMULATE windows (F.window has tumbling and "
                   "sliding windows only); use --engine spark (the eowc executors)"}


def test_a_release_without_the_api_an_operator_needs_is_named() -> None:
    check_release("deduplicate", "3.5.3")
    check_release("window_aggregate", "3.4.4")
    with pytest.raises(NoNativeOperator, match=r"deduplicate in Spark 3\.4\.4 \(DataFrame\."
                                               r"dropDuplicatesWithinWatermark came with Spark 3\.5\)"):
        check_release("deduplicate", "3.4.4")


def test_another_convention_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="follow the spark convention only"):
        SparkNativeSession(SCRIPT, "flink", str(tmp_path))
