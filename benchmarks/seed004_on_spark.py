"""Seed 004's job (docs/examples/seed004_job_fixed.sql: two CUMULATE aggregates of 10-minute
steps over a day, their LEFT window join, a window TopN 100) on Spark, run by the composed
executor in one ``transformWithStateInPandas`` shard, beside the reference interpreter and the
in-process driver on the same log, in the same run; Spark's output is checked against the
reference's.

The log: ``--epochs`` epochs (default 60) of ``--rows`` orders each (default 20), two minutes
of event time per epoch (a 10-minute step closes every fifth epoch), up to 3 s of disorder
within the 5 s delay (no late row), ``--items`` items (default 50) of ``--sellers`` sellers
(default 5). Every order falls in each CUMULATE window from its step to the end of the day, so
an order is up to 144 window rows of each aggregate.

Figures: seconds of each run; for Spark also seconds per epoch (each epoch a data batch and a
settle batch, paced) and the rows in and out per epoch; the ratio of Spark to the in-process
driver (the same executor without Spark).

Run: python3 benchmarks/seed004_on_spark.py [--epochs E] [--rows R] [--items I] [--sellers S]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from eowc.executors.driver import run_in_process
from eowc.executors.spark.runner import open_spark, run_on_spark
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.values import MICROS_PER_SECOND, format_timestamp, parse_timestamp
from eowc.semantics.rules.triggers import Convention

JOB = Path(__file__).resolve().parent.parent / "docs" / "examples" / "seed004_job_fixed.sql"


def event_lines(epochs: int, rows: int, items: int, sellers: int, seed: int = 4) -> list[str]:
    """The arrival log (module documentation) as JSON lines."""
    rng = random.Random(seed)
    start = parse_timestamp("2021-01-01 00:00:00")
    lines = []
    for epoch in range(epochs):
        for i in range(rows):
            t = start + (epoch * 120 + (i + 1) * 120 // rows - rng.randint(0, 3)) * MICROS_PER_SECOND
            item = rng.randint(1, items)
            lines.append(json.dumps({"table": "orders", "row": {
                "item_id": item, "seller_id": item % sellers, "user_id": rng.randint(1, 200),
                "price": float(rng.randint(1, 100)), "pay_time": format_timestamp(t)}}))
        lines.append('{"barrier": true}')
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--sellers", type=int, default=5)
    args = parser.parse_args()
    convention = Convention.FLINK
    events = Path(tempfile.mkdtemp(prefix="eowc-seed004-")) / "orders.jsonl"
    events.write_text("\n".join(event_lines(args.epochs, args.rows, args.items, args.sellers))
                      + "\n", encoding="utf-8")
    script = parse_script(JOB.read_text(encoding="utf-8"))
    log = load_arrival_log(str(events), script.sources).log

    started = time.perf_counter()
    expected = list(run_eowc(script.query, log, convention, close=True))
    reference_s = time.perf_counter() - started
    started = time.perf_counter()
    in_process = run_in_process(script.query, log, convention, close=True)
    in_process_s = time.perf_counter() - started
    assert in_process.emissions == expected
    started = time.perf_counter()
    open_spark("local[2]")  # the session's start is not the job's time
    startup_s = time.perf_counter() - started
    started = time.perf_counter()
    spark = run_on_spark(str(JOB), str(events), log, convention, close=True)
    spark_s = time.perf_counter() - started
    assert spark.emissions == expected, "Spark's output differs from the reference's"

    rows_in = sum(len(e) for e in log.epochs)
    print(f"seed 004's job, {args.epochs} epochs x {args.rows} orders ({rows_in} rows), "
          f"{len(expected)} rows out ({len(expected) / args.epochs:.1f} per epoch), "
          f"{convention.value} convention")
    print(f"reference interpreter: {reference_s:8.2f} s")
    print(f"in-process executors:  {in_process_s:8.2f} s")
    print(f"Spark (local[2]):      {spark_s:8.2f} s after {startup_s:.0f} s to start it, "
          f"{spark_s / args.epochs:.2f} s per epoch (data + settle batch), {rows_in / spark_s:.0f} rows/s; "
          f"{spark_s / in_process_s:.0f}x the in-process driver; same output as the reference")


if __name__ == "__main__":
    main()
