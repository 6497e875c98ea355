"""Throughput and state of the reference interpreter on an interval join (LEFT OUTER, two
sources) and a session window aggregate, against DuckDB running the equivalent batch SQL of
Definition 5 on the same data in the same run.

The logs: N events in all, 10 keys, 10 events per second of event time, disorder up to 4 s
within a 5 s watermark delay (1% late), cut into epochs of 1,000 events; the join's events
alternate between its two sources. The interpreter runs Q'(INPUT, W) incrementally with
--close; DuckDB runs the batch SELECT (eowc.semantics.oracles.duckdb_oracle) over INPUT loaded beforehand (the
load is not timed). Both must give the same rows: the benchmark checks it on every run.

State: rows the join keeps (both sides) after 10% and after 100% of the events, which must
stay flat.

Run: python3 benchmarks/join_session_throughput.py [--events N]
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
from eowc.semantics.operators.logical import StreamJoin
from eowc.semantics.oracles.duckdb_oracle import duckdb_connection, oracle_query
from eowc.semantics.rules.triggers import Convention

CONVENTION = Convention.RISINGWAVE
JOIN = """
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, page BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT, ad BIGINT,
                     WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
SELECT c.ts AS click_ts, v.ts AS view_ts, c.user_id, page, ad
FROM clicks c LEFT JOIN views v
  ON c.user_id = v.user_id AND c.ts BETWEEN v.ts - INTERVAL '2' SECOND AND v.ts + INTERVAL '1' SECOND
EMIT ON WINDOW CLOSE;
"""
SESSION = """
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, page BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
SELECT user_id, window_start, window_end, COUNT(*) AS n, SUM(page) AS pages
FROM TABLE(SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL '2' SECOND))
GROUP BY user_id, window_start, window_end
EMIT ON WINDOW CLOSE;
"""


def make_log(events: int, tables: tuple[str, ...], seed: int = 11,
             per_epoch: int = 1000) -> ArrivalLog:
    """Events of ``tables`` in turn; a user's clicks come in bursts (sessions)."""
    rng = random.Random(seed)
    base = 1_700_000_000 * MICROS_PER_SECOND
    rows = []
    for i in range(events):
        t = base + i * MICROS_PER_SECOND // 10 - rng.randrange(4 * MICROS_PER_SECOND)
        if rng.random() < 0.01:
            t -= 20 * MICROS_PER_SECOND  # late
        user = (i // 50 + rng.randrange(3)) % 10  # bursts: sessions of a few seconds
        rows.append(Event(tables[i % len(tables)], (t, user, rng.randrange(1000))))
    return ArrivalLog(tuple(tuple(rows[i:i + per_epoch]) for i in range(0, events, per_epoch)))


def interpreter_seconds(query, log: ArrivalLog) -> tuple[float, Counter]:  # noqa: ANN001
    started = time.process_time()
    out = Counter(e.row for e in run_eowc(query, log, CONVENTION, close=True))
    return time.process_time() - started, out


def duckdb_seconds(query, log: ArrivalLog) -> tuple[float, Counter]:  # noqa: ANN001
    prepared = oracle_query(query, log, CONVENTION, close=True)
    connection = duckdb_connection(prepared)  # not timed
    connection.execute("SET threads TO 1")  # one core, as the interpreter
    started = time.perf_counter()
    result = connection.execute(prepared.sql).fetchall()
    seconds = time.perf_counter() - started
    return seconds, Counter(tuple(r) for r in result)


def join_state_rows(query, log: ArrivalLog) -> int:  # noqa: ANN001
    """Rows the join keeps (both sides) after the log."""
    flow = compile_dataflow(query, CONVENTION, eowc=True)
    (join,) = [n.operator for n in flow.nodes if isinstance(n.operator, StreamJoin)]
    for _ in flow.epochs(log, CONVENTION):
        pass
    return join.state_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    for name, sql, tables in (("interval join", JOIN, ("clicks", "views")),
                              ("session window", SESSION, ("clicks",))):
        query = parse_script(sql).query
        log = make_log(args.events, tables)
        mine = interpreter_seconds(query, log)
        theirs = duckdb_seconds(query, log)
        same = "same rows" if mine[1] == theirs[1] else "DIFFERENT ROWS"
        print(f"{name:>14}: {args.events:,} events, {len(log.epochs):,} epochs; interpreter "
              f"{args.events / mine[0]:>9,.0f} events/s ({mine[0]:.1f} s CPU); DuckDB batch "
              f"SELECT {theirs[0]:.2f} s ({args.events / theirs[0]:,.0f} events/s, 1 thread); "
              f"interpreter / DuckDB time {mine[0] / theirs[0]:.1f}x; {len(mine[1]):,} result "
              f"rows, {same}")
        if len(tables) > 1:
            small = ArrivalLog(log.epochs[:max(1, len(log.epochs) // 10)])
            print(f"{'':>14}  join state: {join_state_rows(query, small):,} rows after "
                  f"{len(small.events):,} events, {join_state_rows(query, log):,} after "
                  f"{args.events:,}")


if __name__ == "__main__":
    main()
