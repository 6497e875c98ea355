"""Throughput and state size of the join executor (executors/composed.py) on Spark, beside
Spark's own stream-stream interval join, on the same events, in the same run.

The events: ``--events`` rows (default 1,000,000), alternately of ``a`` and ``b`` (``k`` one
of ``--keys`` keys, default 100), event time 1 ms apart per row with up to 2 s of disorder
(within both delays, 3 s and 5 s: no late row), in ``--epochs`` epochs of one micro-batch
each, one ``eowc_arrival_log`` stream per table. The query: a LEFT interval join,
``a.k = b.k AND a.ts BETWEEN b.ts - 2 s AND b.ts + 1 s``, under an EOWC sort, on ComposedExecutor; the
peer: Spark's ``a.join(b, ..., "leftOuter")`` with the same condition and watermarks, to the
``noop`` sink (Spark emits joined rows at once and NULL-padded ones when its global watermark
passes them; it does not sort).

Throughput: events per second of batch processing time (``addBatch``); the ratio compares the
executor with Spark in the same run. State: Spark's ``numRowsTotal`` after 10% of the events
and at the end (the join executor's entries are its state tables' keys, one per join key and
side holding that key's rows, its sort tables' runs and a few values; Spark's join keeps a
row per kept input row), and the executor's state in bytes on the in-process driver after
the same events (``DriverRun.state_bytes``): both must stay flat.

Run: python3 benchmarks/join_executor_throughput.py [--events N] [--epochs E] [--keys K]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("EOWC_SPARK_JAVA_OPTIONS", "")  # before Spark starts: full JIT

from executor_throughput import measured  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from eowc.executors.driver import run_in_process  # noqa: E402
from eowc.executors.spark.adapter import eowc_streams  # noqa: E402
from eowc.executors.spark.arrival_source import EPOCH_COLUMN, SEQ_COLUMN, arrival_stream  # noqa: E402
from eowc.executors.spark.session import spark_session  # noqa: E402
from eowc.semantics.frontend.sql import parse_script  # noqa: E402
from eowc.semantics.ir.arrival import load_arrival_log  # noqa: E402
from eowc.semantics.ir.values import format_timestamp  # noqa: E402
from eowc.semantics.rules.triggers import Convention  # noqa: E402

SOURCES = ("CREATE SOURCE a (ts TIMESTAMP, k BIGINT, v BIGINT, WATERMARK FOR ts AS ts - "
           "INTERVAL '3' SECOND);\nCREATE SOURCE b (ts TIMESTAMP, k BIGINT, w BIGINT, "
           "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
JOIN = ("SELECT a.ts AS ats, b.ts AS bts, a.k, v, w FROM a LEFT JOIN b ON a.k = b.k AND a.ts "
        "BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '1' SECOND EMIT ON WINDOW CLOSE;")
START = 1_704_067_200_000_000  # 2024-01-01 00:00:00 in microseconds


def write_events(path: Path, events: int, epochs: int, keys: int, seed: int = 5) -> None:
    rng = random.Random(seed)
    per_epoch = -(-events // epochs)
    with path.open("w", encoding="utf-8") as out:
        for i in range(events):
            table, value = ("a", "v") if i % 2 == 0 else ("b", "w")
            ts = START + max(0, i - rng.randrange(2000)) * 1000
            out.write(json.dumps({"table": table, "row": {
                "ts": format_timestamp(ts), "k": rng.randrange(keys),
                value: rng.randrange(1000)}}) + "\n")
            if (i + 1) % per_epoch == 0:
                out.write('{"barrier": true}\n')


def native(a: DataFrame, b: DataFrame) -> DataFrame:
    left = a.drop(EPOCH_COLUMN, SEQ_COLUMN).withWatermark("ts", "3 seconds").alias("a")
    right = b.drop(EPOCH_COLUMN, SEQ_COLUMN).withWatermark("ts", "5 seconds").alias("b")
    condition = F.expr("a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL 2 SECONDS AND "
                       "b.ts + INTERVAL 1 SECOND")
    return left.join(right, condition, "leftOuter")


def run(spark: SparkSession, name: str, build: Callable[[DataFrame, DataFrame], DataFrame],
        query: Path, events: Path, workdir: Path) -> dict[str, Any]:
    a = arrival_stream(spark, str(events), str(query), "a", pacing="settle")
    b = arrival_stream(spark, str(events), str(query), "b", pacing="settle")
    started = time.perf_counter()
    handle = (build(a, b).writeStream.format("noop").outputMode("append")
              .option("checkpointLocation", str(workdir / name))
              .trigger(availableNow=True).start())
    handle.awaitTermination()
    return measured(handle, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--warmup", type=int, default=20_000)
    args = parser.parse_args()
    spark = spark_session(args.master, "eowc-benchmark")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    directory = Path(tempfile.mkdtemp(prefix="eowc-bench-"))
    query = directory / "join.sql"
    query.write_text(SOURCES + JOIN, encoding="utf-8")
    sql = SOURCES + JOIN
    jobs = {"eowc join": lambda a, b: eowc_streams({"a": a, "b": b}, sql, Convention.SPARK),
            "native join": native}
    if args.warmup:
        warm = directory / "warmup.jsonl"
        write_events(warm, args.warmup, 4, args.keys)
        for name, build in jobs.items():
            run(spark, name, build, query, warm, directory / "warm")
    events = directory / "events.jsonl"
    write_events(events, args.events, args.epochs, args.keys)
    print(f"{args.events:,} events, {args.epochs} epochs, {args.keys} keys, master {args.master}")
    results = {name: run(spark, name, build, query, events, directory / "run")
               for name, build in jobs.items()}
    script = parse_script(sql)
    sizes = run_in_process(script.query, load_arrival_log(str(events), script.sources).log,
                           Convention.SPARK, measure_bytes=True).state_bytes
    native_rate = results["native join"]["rows"] / results["native join"]["busy"]
    print(f"{'query':<13}{'events/s':>10}{'vs native':>11}{'wall s':>8}"
          f"{'Spark state entries (events)':>40}")
    for name, r in results.items():
        (n1, s1), (n2, s2) = r["at_tenth"], r["at_end"]
        rate = r["rows"] / r["busy"]
        print(f"{name:<13}{rate:>10,.0f}{rate / native_rate:>10.3f}x{r['wall']:>8.1f}"
              f"{f'{s1:,} ({n1:,}) -> {s2:,} ({n2:,})':>40}")
    b1, b2 = sizes[max(0, len(sizes) // 10 - 1)], sizes[-1]
    print(f"eowc join state on the in-process driver: {b1:,} bytes after 10% of the events, "
          f"{b2:,} at the end ({(b2 - b1) / b1 * 100:+.1f}%)")


if __name__ == "__main__":
    main()
