"""Throughput and state size of the partitioned EOWC executors (executors/partitioned.py) on
Spark, beside Spark's own session window and deduplication, on the same events, in the same run.

The events are those of ``executor_throughput.py``: ``--events`` bids (default 1,000,000) of
``--auctions`` auctions (default 100), event time 1 ms apart with up to 2 s of disorder
(within the 5 s delay: no late row), in ``--epochs`` epochs of one micro-batch each, read by
the ``eowc_arrival_log`` source, each query to Spark's ``noop`` sink. The queries:

* ``over``: ``sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND
  1 FOLLOWING)`` and ``lag(price)``, on EowcOverWindow;
* ``pattern``: MATCH_RECOGNIZE ``PATTERN (A B+)``, rising prices per auction, on EowcPattern;
* ``count``: ``COUNT_TUMBLE`` of 10 rows per auction with ``sum``, on EowcCountWindow;
* ``session``: ``SESSION`` per auction, gap 200 ms, ``count`` and ``sum``, on EowcSession,
  and Spark's ``groupBy(session_window(ts, 200 ms), auction)`` (*native session*);
* ``top_n``: the top 3 prices of each 10 s window, on EowcTopN;
* ``dedup``: the first bid of each auction, on EowcTopN, and Spark's
  ``dropDuplicatesWithinWatermark(auction)`` (*native dedup*; it keeps the first bid to
  arrive and forgets it after the delay: docs/divergences.md).

Throughput: events per second of batch processing time (``addBatch``), as in
``executor_throughput.py``; the ratio compares an executor with its native peer of the same run.
State: Spark's ``numRowsTotal`` (state entries: one value holds a partition's rows, so this
counts partitions and timers) after 10% of the events and at the end; and, since an entry
can hold many rows, the bytes of the same executor's state after the same events on the
in-process driver (``DriverRun.state_bytes``, the state pickled as Spark stores it). Both must
stay flat from 10% to 100% of the events: disorder and key count are fixed.

Run: python3 benchmarks/partitioned_throughput.py [--events N] [--epochs E] [--only over,...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("EOWC_SPARK_JAVA_OPTIONS", "")  # before Spark starts: full JIT

from executor_throughput import SOURCE, run, write_events  # noqa: E402
from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from eowc.executors.driver import run_in_process  # noqa: E402
from eowc.executors.spark.adapter import eowc_stream  # noqa: E402
from eowc.executors.spark.arrival_source import EPOCH_COLUMN, SEQ_COLUMN  # noqa: E402
from eowc.executors.spark.session import spark_session  # noqa: E402
from eowc.semantics.frontend.sql import parse_script  # noqa: E402
from eowc.semantics.ir.arrival import load_arrival_log  # noqa: E402
from eowc.semantics.rules.triggers import Convention  # noqa: E402

QUERIES = {
    "over": "SELECT auction, ts, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN "
            "2 PRECEDING AND 1 FOLLOWING) AS s, lag(price) OVER (PARTITION BY auction ORDER BY "
            "ts) AS p FROM bids EMIT ON WINDOW CLOSE",
    "pattern": "SELECT * FROM bids MATCH_RECOGNIZE (PARTITION BY auction ORDER BY ts MEASURES "
               "FIRST(A.ts) AS t, LAST(B.price) AS top ONE ROW PER MATCH PATTERN (A B+) DEFINE "
               "B AS B.price > PREV(B.price)) AS m EMIT ON WINDOW CLOSE",
    "count": "SELECT auction, window_ordinal, window_end, sum(price) AS s FROM TABLE(COUNT_TUMBLE("
             "TABLE bids PARTITION BY auction, DESCRIPTOR(ts), 10)) GROUP BY auction, "
             "window_ordinal, window_end EMIT ON WINDOW CLOSE",
    "session": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s FROM "
               "TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '0.2' "
               "SECOND)) GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
    "top_n": "SELECT window_start, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER "
             "(PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM "
             "TUMBLE(bids, ts, INTERVAL '10' SECOND)) WHERE rn <= 3 EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction "
             "ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE",
}


def native_session(source: DataFrame) -> DataFrame:
    return (source.drop(EPOCH_COLUMN, SEQ_COLUMN).withWatermark("ts", "5 seconds")
            .groupBy(F.session_window("ts", "200 milliseconds"), "auction")
            .agg(F.count("*").alias("n"), F.sum("price").alias("s")))


def native_dedup(source: DataFrame) -> DataFrame:
    return (source.drop(EPOCH_COLUMN, SEQ_COLUMN).withWatermark("ts", "5 seconds")
            .dropDuplicatesWithinWatermark(["auction"]))


NATIVE = {"session": native_session, "dedup": native_dedup}


def in_process_state(sql: str, events: Path) -> tuple[int, int]:
    """The executor's state in bytes on the in-process driver after 10% of the epochs and at
    the end."""
    script = parse_script(sql)
    log = load_arrival_log(str(events), script.sources).log
    sizes = run_in_process(script.query, log, Convention.SPARK, measure_bytes=True).state_bytes
    return sizes[max(0, len(sizes) // 10 - 1)], sizes[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--auctions", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--warmup", type=int, default=20_000)
    parser.add_argument("--only", default=",".join(QUERIES),
                        help="comma-separated queries to run (default: all)")
    args = parser.parse_args()
    chosen = [name for name in args.only.split(",") if name]
    spark = spark_session(args.master, "eowc-benchmark")
    directory = Path(tempfile.mkdtemp(prefix="eowc-bench-"))
    for name in chosen:
        (directory / f"{name}.sql").write_text(SOURCE + QUERIES[name], encoding="utf-8")
    jobs: list[tuple[str, str, Any]] = []
    for name in chosen:
        sql = SOURCE + QUERIES[name]
        jobs.append((name, name, lambda s, sql=sql: eowc_stream(s, sql, Convention.SPARK)))
        if name in NATIVE:
            jobs.append((f"native {name}", name, NATIVE[name]))
    if args.warmup:
        warm = directory / "warmup.jsonl"
        write_events(warm, args.warmup, 4, args.auctions)
        for label, name, build in jobs:
            run(spark, label, build, directory / f"{name}.sql", warm, directory / "warm")
    events = directory / "events.jsonl"
    write_events(events, args.events, args.epochs, args.auctions)
    print(f"{args.events:,} events, {args.epochs} epochs, {args.auctions} auctions, "
          f"master {args.master}")
    results = {label: run(spark, label, build, directory / f"{name}.sql", events,
                          directory / "run")
               for label, name, build in jobs}

    def rate(r: dict[str, Any]) -> float:
        return r["rows"] / r["busy"]
    print(f"{'query':<16}{'events/s':>10}{'vs native':>11}{'wall s':>8}"
          f"{'Spark state entries (events)':>40}{'in-process state bytes':>28}")
    for label, name, _ in jobs:
        r = results[label]
        (n1, s1), (n2, s2) = r["at_tenth"], r["at_end"]
        peer = results.get(f"native {name}")
        ratio = f"{rate(r) / rate(peer):.3f}x" if peer is not None and peer is not r else ""
        line = (f"{label:<16}{rate(r):>10,.0f}{ratio:>11}{r['wall']:>8.1f}"
                f"{f'{s1:,} ({n1:,}) -> {s2:,} ({n2:,})':>40}")
        if not label.startswith("native"):
            b1, b2 = in_process_state(SOURCE + QUERIES[name], events)
            line += f"{f'{b1:,} -> {b2:,} ({(b2 - b1) / b1 * 100:+.1f}%)':>28}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
