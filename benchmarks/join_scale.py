"""Interval and window joins at the scale users run: the join executors in-process
(``run_in_process``) beside the reference (``run_eowc``), the peer measured in the same run,
on the same arrival logs.

The queries are the built-in suite's ``interval_join.sql`` (a LEFT interval join, bids with
the asks of the same auction from 2 s before to 1 s after) and ``window_join.sql`` (a FULL
window join on 5-second tumbling windows), under the ``spark`` convention. Each log has
``--rows`` rows in ``--epochs`` epochs, under two shapes:

* ``uniform``: bids and asks alternate, the auction drawn uniformly from ``--keys`` keys,
  event time 1 ms apart per row with up to 1.5 s of disorder (within both delays: no late
  row): the output grows linearly with the rows, so any super-linear cost is the code's;
* ``verify``: case 0 of ``eowc verify --rows R --epochs E --keys K`` (the seeded generator):
  its keys are skewed (about 57% of a side's rows share one auction, whatever ``--keys``) and
  its event times fall on a few dozen instants of a 15-second span, so the join's output grows
  with the square of the rows (1.45 million rows from 10,000 at the default size).

Printed per query, shape and key count: the rows in and out, the CPU seconds of each side and
the ratio reference / executor (above 1: the executor is faster). The two outputs are
compared: a difference is reported, not timed over.

Run: python3 benchmarks/join_scale.py [--rows N] [--epochs E] [--keys K ...] [--shape S ...]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import Convention
from eowc.verify.executors import InProcessExecutor
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, generate_case, shape_of

SUITE = Path(__file__).resolve().parent.parent / "verify" / "suite"
QUERIES = ("interval_join", "window_join")
#: Every join of the suite reads the same two sources: any of them can be measured.
JOIN_QUERIES = (*QUERIES, "window_join_aggregates", "join_over_window", "union")
START = 1_704_067_200_000_000  # 2024-01-01 00:00:00 in microseconds
#: Disorder of the uniform logs: below both sources' delays (2 s and 3 s), so no row is late.
DISORDER_MS = 1500
CONVENTION = Convention.SPARK


def uniform_log(rows: int, epochs: int, keys: int, seed: int = 7) -> ArrivalLog:
    """``rows`` bids and asks (module documentation), in ``epochs`` epochs of equal size."""
    rng = random.Random(seed)
    events = []
    for i in range(rows):
        ts = START + max(0, i - rng.randrange(DISORDER_MS)) * MICROS_PER_MILLI
        auction = rng.randrange(keys)
        if i % 2 == 0:
            events.append(Event("bids", (auction, f"b{rng.randrange(100)}", float(rng.randrange(1000)), ts)))
        else:
            events.append(Event("asks", (auction, f"s{rng.randrange(100)}", float(rng.randrange(1000)), ts)))
    per_epoch = -(-rows // epochs)
    return ArrivalLog(tuple(tuple(events[at:at + per_epoch]) for at in range(0, rows, per_epoch)))


def verify_log(name: str, script: str, rows: int, epochs: int, keys: int) -> ArrivalLog:
    """Case 0 of ``eowc verify`` for the query, at this size."""
    target = Target(name, script, f"verify/suite/{name}.sql")
    shape = shape_of(target, InProcessExecutor(), GeneratorSettings(rows=rows, epochs=epochs, keys=keys))
    case, _ = generate_case(target, CONVENTION, 0, shape, crash=False, disrupt=False)
    return case.log


def timed(run: Callable[[], list[Any]]) -> tuple[float, list[Any]]:
    """CPU seconds of ``run`` (this process's: steadier than wall time on a shared machine)."""
    started = time.process_time()
    out = run()
    return time.process_time() - started, out


def measure(query: Query, log: ArrivalLog) -> tuple[float, float, int, bool]:
    """Seconds of the executor and of the reference, the rows out, and whether they agree."""
    executor_s, emitted = timed(lambda: run_in_process(query, log, CONVENTION).emissions)
    reference_s, expected = timed(lambda: list(run_eowc(query, log, CONVENTION)))
    return executor_s, reference_s, len(expected), [tuple(e) for e in emitted] == [tuple(e) for e in expected]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=1_500)
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--shape", choices=("uniform", "verify"), nargs="+", default=["uniform", "verify"])
    parser.add_argument("--query", choices=JOIN_QUERIES, nargs="+", default=list(QUERIES))
    args = parser.parse_args()
    print(f"{'query':22} {'shape':8} {'keys':>7} {'rows in':>8} {'rows out':>9} "
          f"{'executor s':>10} {'reference s':>11} {'ratio':>6}  agree")
    for name in args.query:
        script = (SUITE / f"{name}.sql").read_text(encoding="utf-8")
        query = parse_script(script).query
        for shape in args.shape:
            # the verify generator's keys are skewed: more keys change little, one size is enough
            for keys in args.keys if shape == "uniform" else args.keys[:1]:
                log = uniform_log(args.rows, args.epochs, keys) if shape == "uniform" else \
                    verify_log(name, script, args.rows, args.epochs, keys)
                executor_s, reference_s, out, agree = measure(query, log)
                print(f"{name:22} {shape:8} {keys:>7} {len(log.events):>8} {out:>9} {executor_s:>10.2f} "
                      f"{reference_s:>11.2f} {reference_s / executor_s:>6.2f}  {'yes' if agree else 'NO'}",
                      flush=True)


if __name__ == "__main__":
    main()
