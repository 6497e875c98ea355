"""Scale-out of the Spark EOWC executors: the share of the stateful stage's rows handled by its
busiest task, from Spark's task metrics, with 8 shuffle partitions and 100 keys.

The stateful stage of a query is the stage running its ``transformWithStateInPandas``: one task
per shuffle partition, each the state-store shard of the keys hashed to it. A task's rows are
the records it read from the shuffle (:mod:`eowc.executors.spark.task_metrics`), summed over
the micro-batches per partition (a row is one executor key's arrivals of one input frame; the
share of the bytes read, printed too, follows the arrivals themselves). The busiest task's
share is the largest partition's rows over all rows: 1/8 when the 8 partitions share the work
evenly, 1.0 when one task does it all (a query whose state is keyed by one value, e.g. the
window alone or the empty key). The goal (issue 19) is at most 2/8 for every operator.

The events: ``--events`` bids (default 20,000) of ``--keys`` auctions (default 100), a bid of
the next auction every 10 ms of event time with up to 1 s of disorder, in ``--epochs`` epochs
(default 20), and for the interval join an ask for every other bid. Each query runs on the
``eowc run --engine spark`` path (:func:`eowc.executors.spark.runner.start_query`: the
arrival-log source with settle pacing, the exactly-once sink) in one Spark session with
``spark.sql.shuffle.partitions`` set to ``--partitions`` (default 8).

Run: python3 benchmarks/scale_out.py [--events N] [--epochs E] [--keys K] [--master URL]
It prints figures; it is not a timed test. Spark keeps the last 1,000 jobs (one per
micro-batch) in its status store: keep ``2 * epochs + 2`` well below that.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from eowc.executors.spark.runner import start_query
from eowc.executors.spark.session import spark_session
from eowc.executors.spark.task_metrics import busiest_share, rows_by_partition, stateful_task_rows
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import Convention

BIDS = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
ASKS = ("CREATE SOURCE asks (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
#: Each operator's query and whether it reads the log with asks.
QUERIES: dict[str, tuple[str, bool]] = {
    "group agg": (BIDS + "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                         "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                         "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE", False),
    "sort": (BIDS + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE", False),
    "session": (BIDS + "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                       "FROM TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), "
                       "INTERVAL '3' SECOND)) GROUP BY auction, window_start, window_end "
                       "EMIT ON WINDOW CLOSE", False),
    "dedup": (BIDS + "SELECT ts, auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
                     "auction ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE",
              False),
    "interval join": (BIDS + ASKS + "SELECT b.ts AS bid_ts, a.ts AS ask_ts, b.auction, b.price, "
                                    "a.price AS ask FROM bids b LEFT JOIN asks a ON b.auction = "
                                    "a.auction AND b.ts BETWEEN a.ts - INTERVAL '2' SECOND AND "
                                    "a.ts + INTERVAL '2' SECOND EMIT ON WINDOW CLOSE", True),
}
CONVENTION = Convention.FLINK
START = 1_704_067_200_000_000  # 2024-01-01 00:00:00 in microseconds
STEP = 10_000  # 10 ms of event time per bid


def write_log(path: Path, events: int, epochs: int, keys: int, asks: bool, seed: int = 19) -> None:
    """The arrival log: ``events`` bids of ``keys`` auctions in turn, 10 ms apart with up to
    1 s of disorder (within the 5 s delay), in ``epochs`` epochs; with ``asks``, an ask of the
    same auction 500 ms after every other bid."""
    rng = random.Random(seed)
    per_epoch = max(1, events // epochs)
    lines = []
    for i in range(events):
        time_us = START + i * STEP + rng.randrange(0, 1_000) * 1_000  # whole milliseconds
        auction = i % keys
        lines.append(json.dumps({"table": "bids", "row": {
            "auction": auction, "price": rng.randrange(1, 1000), "ts": format_timestamp(time_us)}}))
        if asks and i % 2 == 0:
            lines.append(json.dumps({"table": "asks", "row": {
                "auction": auction, "price": rng.randrange(1, 1000),
                "ts": format_timestamp(time_us + 500_000)}}))
        if (i + 1) % per_epoch == 0 or i + 1 == events:
            lines.append('{"barrier": true}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    spark = spark_session(args.master)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    print(f"{args.events:,} events, {args.keys} keys, {args.epochs} epochs, "
          f"{args.partitions} shuffle partitions, {args.master}; even spread: "
          f"{1 / args.partitions:.3f}, goal: at most {2 / args.partitions:.3f}")
    print(f"{'operator':<14} {'busiest share':>13} {'of bytes':>9} {'stages':>7} {'rows':>9} "
          f"{'seconds':>8}  rows per partition")
    with tempfile.TemporaryDirectory(prefix="eowc-scale-out-") as work:
        directory = Path(work)
        logs = {}
        for asks in (False, True):
            logs[asks] = directory / f"events-{'asks' if asks else 'bids'}.jsonl"
            write_log(logs[asks], args.events, args.epochs, args.keys, asks)
        for name, (sql, asks) in QUERIES.items():
            slug = name.replace(" ", "_")
            query = directory / f"{slug}.sql"
            query.write_text(sql, encoding="utf-8")
            started = time.monotonic()
            start_query(spark, str(query), str(logs[asks]), CONVENTION, directory / slug, close=True)
            seconds = time.monotonic() - started
            metadata = directory / slug / "checkpoint" / "metadata"
            tasks = stateful_task_rows(spark, json.loads(metadata.read_text(encoding="utf-8"))["id"])
            per_partition = rows_by_partition(tasks)
            shown = " ".join(str(per_partition[p]) for p in range(args.partitions))
            print(f"{name:<14} {busiest_share(tasks):>13.3f} {busiest_share(tasks, 'bytes'):>9.3f} "
                  f"{len({t.stage for t in tasks}):>7} {sum(per_partition.values()):>9,} "
                  f"{seconds:>8.1f}  {shown}", flush=True)


if __name__ == "__main__":
    main()
