"""Throughput and state size of the Spark EOWC executors against Spark's own window
aggregation, on the same events, in the same run, on the same Spark session.

The events: ``--events`` bids (default 1,000,000) of ``--auctions`` auctions, event time
advancing 1 ms per event with up to 2 s of disorder (within the 5 s watermark delay, so no
row is late), in ``--epochs`` epochs (one micro-batch each), read by the ``eowc_arrival_log``
source. Three streaming queries run over them, each to Spark's ``noop`` sink:

* native: ``groupBy(window(ts, 10 s), auction).agg(count, sum)`` in append mode (Spark's
  own stateful window aggregation, state in the RocksDB state store);
* eowc group agg: the same query as ``SELECT ... FROM TUMBLE(...) GROUP BY ... EMIT ON WINDOW
  CLOSE`` on the EowcGroupAgg executor (``transformWithStateInPandas``);
* eowc sort: ``SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE`` on EowcSort.

Throughput is events per second of batch processing time (the sum of the batches'
``addBatch`` durations, which leaves out reading the log into the source); the wall time of
each query is printed too. The ratio to native is the figure to watch. A batch's fixed costs
(above all the state store's commit, an fsync) vary a lot on a small machine, so the three
queries run ``--rounds`` times (default 3), interleaved; each round's ratio compares a query
with the native run of the same round, and the table shows each query's median throughput and
median ratio. Every round is printed as well.

State size: rows in the state store (``numRowsTotal`` of the stateful operator: entries, of
all its state variables and timers) after the batch that ends at 10% of the events and after
the last one. With the same disorder it must stay bounded by the open windows, not grow with
the stream. The group-agg executor keeps one entry per open window (its groups, in one value,
plus its timer); the sort executor one entry per sorted run (a micro-batch's rows still waiting, see
docs/executors.md), so its figure counts runs, not rows.

Run: python3 benchmarks/executor_throughput.py [--events N] [--epochs E] [--master URL]
(JIT options: ``EOWC_SPARK_JAVA_OPTIONS`` defaults to the empty string here, the full JIT.)
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

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from eowc.executors.spark.adapter import eowc_stream  # noqa: E402
from eowc.executors.spark.arrival_source import EPOCH_COLUMN, SEQ_COLUMN, arrival_stream  # noqa: E402
from eowc.executors.spark.session import spark_session  # noqa: E402
from eowc.semantics.ir.values import format_timestamp  # noqa: E402
from eowc.semantics.rules.triggers import Convention  # noqa: E402

SOURCE = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
GROUP_AGG = ("SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
             "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
             "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
SORT = "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE"
START = 1_704_067_200_000_000  # 2024-01-01 00:00:00 in microseconds


def write_events(path: Path, events: int, epochs: int, auctions: int, seed: int = 11) -> None:
    """The arrival log: event ``i`` at ``i`` ms minus up to 2 s of disorder, in ``epochs``
    epochs of equal size."""
    rng = random.Random(seed)
    per_epoch = -(-events // epochs)
    with path.open("w", encoding="utf-8") as out:
        for i in range(events):
            ts = START + max(0, i - rng.randrange(2000)) * 1000
            out.write(json.dumps({"table": "bids", "row": {
                "auction": rng.randrange(auctions), "price": rng.randrange(1, 1000),
                "ts": format_timestamp(ts)}}) + "\n")
            if (i + 1) % per_epoch == 0:
                out.write('{"barrier": true}\n')


def native(source: DataFrame) -> DataFrame:
    return (source.drop(EPOCH_COLUMN, SEQ_COLUMN).withWatermark("ts", "5 seconds")
            .groupBy(F.window("ts", "10 seconds"), "auction")
            .agg(F.count("*").alias("n"), F.sum("price").alias("s")))


def run(spark: SparkSession, name: str, build: Callable[[DataFrame], DataFrame], query: Path,
        events: Path, workdir: Path) -> dict[str, Any]:
    """Run one query over the whole log; its processing time, wall time and state sizes."""
    source = arrival_stream(spark, str(events), str(query))
    started = time.perf_counter()
    handle = (build(source).writeStream.format("noop").outputMode("append")
              .option("checkpointLocation", str(workdir / name))
              .trigger(availableNow=True).start())
    handle.awaitTermination()
    return {"name": name, **measured(handle, time.perf_counter() - started)}


def measured(handle: Any, wall: float) -> dict[str, Any]:
    """A finished query's events, batch processing time (``addBatch``), wall time, and state
    rows (``numRowsTotal``) after 10% of the events and at the end."""
    progress = [p for p in handle.recentProgress if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in progress)
    busy = sum(p["durationMs"].get("addBatch", 0) for p in progress) / 1000

    def state_rows(p: dict[str, Any]) -> int:
        return sum(op["numRowsTotal"] for op in p["stateOperators"])
    seen, at_tenth = 0, None
    for p in progress:
        seen += p["numInputRows"]
        if at_tenth is None and seen >= rows // 10:
            at_tenth = (seen, state_rows(p))
    return {"rows": rows, "busy": busy, "wall": wall,
            "at_tenth": at_tenth, "at_end": (seen, state_rows(progress[-1]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--auctions", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--warmup", type=int, default=20_000,
                        help="events of a first, unmeasured round (JIT, Python workers)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="measured rounds of the three queries, interleaved")
    args = parser.parse_args()
    spark = spark_session(args.master, "eowc-benchmark")
    directory = Path(tempfile.mkdtemp(prefix="eowc-bench-"))
    queries = {"native": (GROUP_AGG, native),
               "eowc group agg": (GROUP_AGG, lambda s: eowc_stream(s, SOURCE + GROUP_AGG,
                                                                    Convention.SPARK)),
               "eowc sort": (SORT, lambda s: eowc_stream(s, SOURCE + SORT, Convention.SPARK))}
    for name, (text, _) in queries.items():
        (directory / f"{name}.sql").write_text(SOURCE + text, encoding="utf-8")
    if args.warmup:
        warm = directory / "warmup.jsonl"
        write_events(warm, args.warmup, 4, args.auctions)
        for name, (_, build) in queries.items():
            run(spark, name, build, directory / f"{name}.sql", warm, directory / "warm")
    events = directory / "events.jsonl"
    write_events(events, args.events, args.epochs, args.auctions)
    print(f"{args.events:,} events, {args.epochs} epochs, {args.auctions} auctions, "
          f"master {args.master}, {args.rounds} rounds")
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in queries}
    for i in range(args.rounds):
        for name, (_, build) in queries.items():
            result = run(spark, name, build, directory / f"{name}.sql", events,
                         directory / f"round-{i}")
            rounds[name].append(result)
            print(f"  round {i + 1}: {name:<16}{result['rows'] / result['busy']:>10,.0f} events/s")
    def rate(r: dict[str, Any]) -> float:
        return r["rows"] / r["busy"]
    results = [sorted(rs, key=rate)[len(rs) // 2] for rs in rounds.values()]
    natives = rounds["native"]
    ratios = {name: sorted(rate(r) / rate(n) for r, n in zip(rs, natives, strict=True))
              for name, rs in rounds.items()}
    for name, rs in ratios.items():
        print(f"  {name:<16} ratio per round: " + ", ".join(f"{x:.3f}" for x in rs))
    print(f"{'query':<16}{'events/s':>12}{'vs native':>11}{'wall s':>9}"
          f"{'state rows (events)':>40}")
    for r in results:
        (n1, s1), (n2, s2) = r["at_tenth"], r["at_end"]
        growth = (s2 - s1) / s1 * 100 if s1 else float("nan")
        ratio = ratios[r["name"]][len(ratios[r["name"]]) // 2]
        print(f"{r['name']:<16}{rate(r):>12,.0f}{ratio:>10.3f}x{r['wall']:>9.1f}"
              f"{f'{s1:,} ({n1:,}) -> {s2:,} ({n2:,}), {growth:+.1f}%':>40}")


if __name__ == "__main__":
    main()
