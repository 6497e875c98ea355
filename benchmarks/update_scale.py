"""Emit on update (Definition 2) of composed plans at scale: CPU seconds of the interpreter's
changelog against the number of epochs, and a peer measured in the same run.

The logs are the throughput benchmark's (one event per epoch, 10 keys, disorder up to 4 s,
~1% late). Each operator consumes its input's changes and emits its own, so the time per epoch
stays flat as the log grows; re-evaluating ``Q(INPUT)`` after every epoch (the specification,
eowc.semantics.engines.spec.update_after_each_epoch, the peer) grows with the log, so its total
time is quadratic in the number of epochs.

Run: python3 benchmarks/update_scale.py [--epochs 500,1000,2000,4000] [--spec-epochs 250,500]
"""

from __future__ import annotations

import argparse
import time

from interpreter_throughput import SOURCE, make_log

from eowc.semantics.engines.interpreter import run_update
from eowc.semantics.engines.spec import update_after_each_epoch
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.plan import Query
from eowc.semantics.rules.triggers import Convention

PER_AUCTION = ("SELECT auction, window_start, window_end, window_time, count(*) AS n, "
               "sum(price) AS s FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
               "GROUP BY auction, window_start, window_end, window_time")
PER_AUCTION_AT = ("SELECT auction, window_time AS t, count(*) AS n, sum(price) AS s FROM "
                  "TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                  "GROUP BY auction, window_start, window_end, window_time")
PLANS = {
    "aggregate over aggregate": "SELECT window_start, sum(n) AS total, max(s) AS top FROM "
                                f"TUMBLE(({PER_AUCTION_AT}), t, INTERVAL '60' SECOND) "
                                "GROUP BY window_start",
    "TopN over aggregate": "SELECT * FROM (SELECT auction, window_start, s, ROW_NUMBER() OVER "
                           "(PARTITION BY window_start, window_end ORDER BY s DESC) AS rn FROM "
                           f"({PER_AUCTION})) WHERE rn <= 3",
}


def query_of(text: str) -> Query:
    return parse_script(SOURCE + text).query


def changelog_seconds(query: Query, log: ArrivalLog) -> tuple[float, int]:
    """(CPU seconds, changes) of the interpreter's changelog over ``log``."""
    start = time.process_time()
    changes = sum(1 for _ in run_update(query, log, Convention.RISINGWAVE))
    return time.process_time() - start, changes


def spec_seconds(query: Query, log: ArrivalLog) -> float:
    start = time.process_time()
    update_after_each_epoch(query, log, Convention.RISINGWAVE)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", default="500,1000,2000,4000")
    parser.add_argument("--spec-epochs", default="250,500")
    args = parser.parse_args()
    sizes = [int(n) for n in args.epochs.split(",")]
    spec_sizes = [int(n) for n in args.spec_epochs.split(",")]
    log = make_log(max(sizes + spec_sizes))
    print(f"{'plan':26} {'epochs':>7} {'seconds':>8} {'ms/epoch':>9} {'changes':>8}   peer: "
          f"Q(INPUT) re-evaluated after each epoch (spec)")
    for name, text in PLANS.items():
        query = query_of(text)
        for n in sizes:
            seconds, count = changelog_seconds(query, ArrivalLog(log.epochs[:n]))
            print(f"{name:26} {n:7,} {seconds:8.2f} {1000 * seconds / n:9.3f} {count:8,}")
        for n in spec_sizes:
            mine, _ = changelog_seconds(query, ArrivalLog(log.epochs[:n]))
            spec = spec_seconds(query, ArrivalLog(log.epochs[:n]))
            print(f"{'':26} {n:7,}   spec {spec:8.2f} s, {1000 * spec / n:9.3f} ms/epoch: "
                  f"{spec / mine:6.0f}x the changelog's time")


if __name__ == "__main__":
    main()
