"""Throughput and peak memory of the reference interpreter on 1,000,000 in-memory events.

Every event is its own epoch (the hardest case for per-epoch output). Prints events per CPU
second and peak traced memory for a TUMBLE and a HOP aggregation, and compares against a peer
measured in the same run: the declarative specification (semantics.spec), which re-evaluates
Q'(INPUT, W) after every epoch, on a prefix small enough for it to finish.

Memory: peak traced memory is measured at two log lengths; with the output consumed as a
stream it must not grow with the number of windows already closed (only the input log, held
in memory by the benchmark itself, grows).

Run: python3 benchmarks/interpreter_throughput.py [--events N]
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc

from semantics.arrival import ArrivalLog, Event
from semantics.interpreter import run_eowc
from semantics.spec import eowc_after_each_epoch
from semantics.sql import parse_script
from semantics.triggers import Convention
from semantics.values import MICROS_PER_SECOND

SOURCE = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
QUERIES = {
    "TUMBLE": "SELECT auction, window_start, count(*) AS n, sum(price) AS s FROM "
              "TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY auction, window_start "
              "EMIT ON WINDOW CLOSE",
    "HOP": "SELECT auction, window_start, count(*) AS n, sum(price) AS s FROM "
           "HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start "
           "EMIT ON WINDOW CLOSE",
}


def make_log(events: int, seed: int = 7) -> ArrivalLog:
    """One event per epoch; 10 events per second of event time, disorder up to 4 s, 1% late."""
    rng = random.Random(seed)
    base = 1_700_000_000 * MICROS_PER_SECOND
    out = []
    for i in range(events):
        t = base + i * MICROS_PER_SECOND // 10 - rng.randrange(4 * MICROS_PER_SECOND)
        if rng.random() < 0.01:
            t -= 20 * MICROS_PER_SECOND  # late
        out.append((Event("bids", (rng.randrange(10), rng.randrange(1000), t)),))
    return ArrivalLog(tuple(out))


def measure(query_text: str, log: ArrivalLog) -> tuple[float, int, int]:
    """(seconds, emitted rows, peak traced bytes during the run) with the output streamed."""
    query = parse_script(SOURCE + query_text).query
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    start = time.process_time()
    emitted = sum(1 for _ in run_eowc(query, log, Convention.RISINGWAVE, close=True))
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1] - baseline
    tracemalloc.stop()
    return seconds, emitted, peak


def timed(query_text: str, log: ArrivalLog) -> tuple[float, int]:
    query = parse_script(SOURCE + query_text).query
    start = time.process_time()
    emitted = sum(1 for _ in run_eowc(query, log, Convention.RISINGWAVE, close=True))
    return time.process_time() - start, emitted


def spec_seconds(query_text: str, log: ArrivalLog) -> float:
    query = parse_script(SOURCE + query_text).query
    start = time.process_time()
    eowc_after_each_epoch(query, log, Convention.RISINGWAVE, close=True)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--spec-events", type=int, default=1_000)
    args = parser.parse_args()
    log = make_log(args.events)
    small = ArrivalLog(log.epochs[:args.spec_events])
    tenth = ArrivalLog(log.epochs[:args.events // 10])
    print(f"{args.events:,} events, one epoch each, 10 keys, disorder <= 4 s, ~1% late\n")
    print(f"{'query':8} {'events/s':>12} {'emitted':>10} {'peak MiB (N/10)':>16} "
          f"{'peak MiB (N)':>13} {'spec events/s':>14} {'speedup':>8}")
    for name, text in QUERIES.items():
        seconds, emitted = timed(text, log)
        _, _, peak_tenth = measure(text, tenth)
        _, _, peak_full = measure(text, log)
        spec = spec_seconds(text, small)
        rate, spec_rate = args.events / seconds, len(small.epochs) / spec
        print(f"{name:8} {rate:12,.0f} {emitted:10,} {peak_tenth / 2**20:16.2f} "
              f"{peak_full / 2**20:13.2f} {spec_rate:14,.0f} {rate / spec_rate:7.0f}x")
    print("\npeak MiB: memory allocated by the interpreter while streaming its output, for the first "
          "N/10 events and for all N;\nequal figures mean memory does not grow with the number of "
          "windows already closed.\nspec: the declarative Q'(INPUT, W) re-evaluated after every "
          f"epoch, on the first {len(small.epochs):,} events.")


if __name__ == "__main__":
    main()
