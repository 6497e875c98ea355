"""Throughput and state of the reference interpreter on an OVER window (seed 002's example 2
and three-function query), against DuckDB running the equivalent batch SQL on the same data
in the same run.

The log: N events over 10 partitions, 10 events per second of event time, disorder up to 4 s
within a 5 s watermark delay (1% late), cut into epochs of 1,000 events. The interpreter runs
Q'(INPUT, W) incrementally with --close (every row emitted once its frame is complete); DuckDB
runs the batch SELECT of Definition 5 (eowc.semantics.oracles.duckdb_oracle) over INPUT, loaded
beforehand (the
load is not timed). Both must give the same rows: the benchmark checks it on every run.

State: rows an OVER window keeps after 10% and after 100% of the events (it drops emitted rows
no future frame reads), which must stay flat.

Run: python3 benchmarks/over_window_throughput.py [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from eowc.semantics.engines.dataflow import compile_dataflow
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.operators.logical import OverWindowOperator
from eowc.semantics.oracles.duckdb_oracle import eowc_sql, load_input, oracle_input
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention

SOURCE = ("CREATE SOURCE orders (user_id BIGINT, amount BIGINT, ts TIMESTAMP, "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
QUERIES = {
    "recent-10 AVG": "SELECT user_id, ts, amount, AVG(amount) OVER (PARTITION BY user_id ORDER BY "
                     "ts ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) AS recent FROM orders "
                     "EMIT ON WINDOW CLOSE",
    "LAG/LEAD/SUM": "SELECT user_id, ts, amount, LAG(amount) OVER (PARTITION BY user_id ORDER BY "
                    "ts) AS prev, LEAD(amount) OVER (PARTITION BY user_id ORDER BY ts) AS next, "
                    "SUM(amount) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 1 PRECEDING "
                    "AND 1 FOLLOWING) AS around FROM orders EMIT ON WINDOW CLOSE",
}


def make_log(events: int, seed: int = 11, per_epoch: int = 1000) -> ArrivalLog:
    rng = random.Random(seed)
    base = 1_700_000_000 * MICROS_PER_SECOND
    rows = []
    for i in range(events):
        t = base + i * MICROS_PER_SECOND // 10 - rng.randrange(4 * MICROS_PER_SECOND)
        if rng.random() < 0.01:
            t -= 20 * MICROS_PER_SECOND  # late
        rows.append(Event("orders", (rng.randrange(10), rng.randrange(1000), t)))
    return ArrivalLog(tuple(tuple(rows[i:i + per_epoch]) for i in range(0, events, per_epoch)))


def interpreter_seconds(query, log: ArrivalLog) -> tuple[float, Counter]:  # noqa: ANN001
    started = time.process_time()
    out = Counter(e.row for e in run_eowc(query, log, Convention.RISINGWAVE, close=True))
    return time.process_time() - started, out


def duckdb_seconds(query, log: ArrivalLog) -> tuple[float, Counter]:  # noqa: ANN001
    rows, _, _ = oracle_input(query, log, Convention.RISINGWAVE)
    connection = load_input(query, rows)  # not timed
    connection.execute("SET threads TO 1")  # one core, as the interpreter
    sql = eowc_sql(query, Convention.RISINGWAVE, CLOSED_WATERMARK)
    started = time.perf_counter()
    result = connection.execute(sql).fetchall()
    seconds = time.perf_counter() - started
    return seconds, Counter(tuple(r) for r in result)


def kept_rows(query, log: ArrivalLog) -> int:  # noqa: ANN001
    """Rows the interpreter's OVER window keeps after the log (its partitions' lists)."""
    flow = compile_dataflow(query, Convention.RISINGWAVE, eowc=True)
    for _ in flow.epochs(log, Convention.RISINGWAVE):
        pass
    (over,) = [n.operator for n in flow.nodes if isinstance(n.operator, OverWindowOperator)]
    return sum(len(p.rows) for p in over.partitions.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    log = make_log(args.events)
    small = ArrivalLog(log.epochs[:max(1, len(log.epochs) // 10)])
    print(f"{args.events:,} events, {len(log.epochs):,} epochs, 10 partitions, delay 5 s")
    for name, sql in QUERIES.items():
        query = parse_script(SOURCE + sql).query
        mine = min((interpreter_seconds(query, log) for _ in range(args.repeat)),
                   key=lambda pair: pair[0])
        theirs = min((duckdb_seconds(query, log) for _ in range(args.repeat)),
                     key=lambda pair: pair[0])
        rounded = [Counter(tuple(round(v, 6) if isinstance(v, float) else v for v in r)
                           for r in out.elements()) for _, out in (mine, theirs)]
        same = "same rows" if rounded[0] == rounded[1] else "DIFFERENT ROWS"
        print(f"{name:>14}: interpreter {args.events / mine[0]:>10,.0f} events/s "
              f"({mine[0]:.1f} s CPU); DuckDB batch SELECT {theirs[0]:.2f} s "
              f"({args.events / theirs[0]:,.0f} events/s, 1 thread); interpreter / DuckDB time "
              f"{mine[0] / theirs[0]:.1f}x; {same}")
        print(f"{'':>14}  state: {kept_rows(query, small):,} rows kept after "
              f"{len(small.events):,} events, {kept_rows(query, log):,} after {args.events:,}")


if __name__ == "__main__":
    main()
