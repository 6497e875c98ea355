"""Throughput of RisingWave's GAP_FILL under EMIT ON WINDOW CLOSE: the reference interpreter
and the in-process executor (restarted every 100 epochs), against DuckDB running the
oracle's batch SQL (a recursive CTE of the filled rows) on the same INPUT in the same run.

The log: D devices, each reporting every 1 to 9 minutes of event time (so most output rows
are filled ones), epochs of 10 s, one reading in 50 arriving up to 2 minutes late; the query
interpolates the reading per device at one-minute steps. All three must give the same rows:
the benchmark checks it on every run.

Run: python3 benchmarks/gap_fill_throughput.py [--epochs N] [--devices D]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.oracles.duckdb_oracle import duckdb_connection, oracle_query
from eowc.semantics.rules.triggers import Convention

QUERY = """
CREATE SOURCE sensors (device BIGINT, reading BIGINT, ts TIMESTAMP,
                       WATERMARK FOR ts AS ts - INTERVAL '30' SECOND);
SELECT * FROM GAP_FILL(sensors, ts, INTERVAL '1' MINUTE, INTERPOLATE(reading),
                       PARTITION_BY(device))
EMIT ON WINDOW CLOSE;
"""
MINUTE = 60 * MICROS_PER_SECOND
EPOCH = 10 * MICROS_PER_SECOND


def readings(epochs: int, devices: int, seed: int = 7) -> ArrivalLog:
    """The benchmark's arrival log (see the module docstring)."""
    rng = random.Random(seed)
    due = [rng.randrange(9 * MINUTE) for _ in range(devices)]
    held: list[tuple[int, Event]] = []
    log = []
    for epoch in range(epochs):
        end = (epoch + 1) * EPOCH
        batch = [event for arrives, event in held if arrives <= end]
        held = [(arrives, event) for arrives, event in held if arrives > end]
        for device in range(devices):
            while due[device] <= end:
                event = Event("sensors", (device, rng.randrange(1_000), due[device]))
                if rng.random() < 0.02:
                    held.append((end + rng.randrange(2 * MINUTE), event))
                else:
                    batch.append(event)
                due[device] += MINUTE + rng.randrange(8 * MINUTE)
        log.append(tuple(batch))
    return ArrivalLog(tuple(log))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5_000)
    parser.add_argument("--devices", type=int, default=500)
    args = parser.parse_args()
    query = parse_script(QUERY).query
    log = readings(args.epochs, args.devices)
    events = sum(len(e) for e in log.epochs)
    convention = Convention.RISINGWAVE

    started = time.process_time()
    reference = Counter(e.row for e in run_eowc(query, log, convention, close=True))
    interpreter = time.process_time() - started

    started = time.process_time()
    run = run_in_process(query, log, convention, close=True,
                         restart_after=set(range(99, args.epochs, 100)))
    executor = time.process_time() - started

    prepared = oracle_query(query, log, convention, close=True)
    connection = duckdb_connection(prepared)
    started = time.perf_counter()
    rows = connection.execute(prepared.sql).fetchall()
    duckdb = time.perf_counter() - started

    assert Counter(e.row for e in run.emissions) == reference, "the executor differs"
    assert len(rows) == sum(reference.values()), "DuckDB gives another number of rows"
    out, late = sum(reference.values()), len(run.late)
    print(f"GAP_FILL: {events:,} readings ({late:,} late) of {args.devices} devices over "
          f"{args.epochs:,} epochs, {out:,} output rows ({out - events + late:,} filled)")
    print(f"  reference interpreter: {interpreter:.2f} s CPU, {events / interpreter:,.0f} readings/s")
    print(f"  in-process executor:   {executor:.2f} s CPU, {events / executor:,.0f} readings/s "
          f"({executor / interpreter:.1f}x the interpreter's time)")
    print(f"  DuckDB batch SQL:      {duckdb:.2f} s wall (INPUT loaded beforehand), "
          f"{interpreter / duckdb:.1f}x faster than the interpreter")


if __name__ == "__main__":
    main()
