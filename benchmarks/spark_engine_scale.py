"""``eowc engine spark`` (Spark's own operators, fed epoch by epoch) at user scale: EPOCHS epochs
(default 1,000) of 100 rows, a minute of event time each, rows up to 8 minutes late (some beyond
the 5-minute watermark delay), 1-hour tumbling windows over 20,000 keys. Prints the seconds per
epoch, and whether every epoch's rows equal the reference's (the peer, timed in the same run).

Run: python3 benchmarks/spark_engine_scale.py [EPOCHS]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections import Counter

from eowc.executors.spark.engine import SparkNativeSession
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, output_row_from_json
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import Convention

SCRIPT = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
  WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE);
SELECT auction, window_start, window_end, COUNT(*) AS n, SUM(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '1' HOUR) GROUP BY auction, window_start, window_end
EMIT ON WINDOW CLOSE;"""
PER_EPOCH, KEYS, MINUTE = 100, 20_000, 60_000_000
BASE = 1_700_000_000_000_000


def arrival_epochs(count: int) -> list[list[tuple[int, int, int]]]:
    """``count`` epochs of (auction, price, ts) rows, seeded."""
    rng = random.Random(7)
    epochs = []
    for k in range(count):
        now, rows = (k + 1) * MINUTE, []
        for _ in range(PER_EPOCH):
            t = now - rng.randint(0, 8 * MINUTE)
            rows.append((rng.randrange(KEYS), rng.randint(1, 100), BASE + t - t % 1000))
        epochs.append(rows)
    return epochs


def main(count: int) -> None:
    epochs = arrival_epochs(count)
    query = parse_script(SCRIPT).query
    log = ArrivalLog(tuple(tuple(Event("bids", r) for r in e) for e in epochs))
    started = time.time()
    expected = Counter((e.epoch, e.row) for e in run_eowc(query, log, Convention.SPARK))
    reference_s = time.time() - started
    session = SparkNativeSession(SCRIPT, "spark", tempfile.mkdtemp(prefix="eowc-scale-"))
    got: Counter = Counter()
    started = time.time()
    for k, rows in enumerate(epochs):
        events = [{"table": "bids", "row": {"auction": a, "price": p, "ts": format_timestamp(ts)}}
                  for a, p, ts in rows]
        got.update((k, output_row_from_json(query.schema, m["row"])) for m in session.epoch(k, events))
    spark_s = time.time() - started
    session.close()
    print(f"{count} epochs, {count * PER_EPOCH} rows, {KEYS} keys: {sum(expected.values())} rows "
          f"expected, {sum(got.values())} emitted by Spark; the reference {reference_s:.1f} s, "
          f"Spark {spark_s:.0f} s ({spark_s / count:.2f} s an epoch, "
          f"{spark_s / max(reference_s, 1e-9):.0f} times the reference); the same per epoch: "
          f"{expected == got}")
    if expected != got:
        print("missing:", list((expected - got).items())[:3], "extra:", list((got - expected).items())[:3])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
