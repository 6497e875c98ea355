"""How fast ``eowc verify`` checks cases: verified cases per second on the in-process executors
(target: at least 50 cases/s for 200-event logs on one core), and seconds per case on Spark.

A verified case is what ``eowc verify`` does for one case: generate a seeded 200-row log at the
query's time scale (up to two rows moved past the watermark and two on it), a log with the same
INPUT (reordered and re-batched) and a restart, then :func:`~eowc.verify.properties.check_all`: the
uninterrupted run and the challenger run (the same-INPUT log, restarted), each judged against
the reference of its log, and the coverage count of what the case exercised. The
process is pinned to one core. The peer measured in the same run is the reference
interpreter alone over the same logs (what the executors are checked against): the ratio says
how much of a case is the check rather than the executor.

With ``--spark``: seconds per case of the Spark executors (``local[2]``, 20-row logs) for an
uninterrupted case, a case with a restart and a case with a crash (a real SIGKILL).

Run: python3 benchmarks/verify_throughput.py [--cases N] [--rows R] [--spark]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.rules.triggers import Convention
from eowc.verify.coverage import Coverage
from eowc.verify.executors import Case, InProcessExecutor
from eowc.verify.generators import LogShape
from eowc.verify.properties import check_all
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, builtin_targets, default_shape, generate_case, nudged_for


def in_process(targets: list[Target], cases: int, rows: int) -> None:
    executor = InProcessExecutor()
    print(f"in-process, {cases} cases per query of {rows} rows, one core")
    print(f"{'query':<24}{'cases/s':>10}{'reference-only cases/s':>25}{'ratio':>8}")
    rates = []
    for target in targets:
        # what `eowc verify --rows R` generates for this query and executor
        shape = nudged_for(executor, default_shape(target, GeneratorSettings(rows=rows)))
        conventions = list(Convention)
        coverage = Coverage()
        started = time.perf_counter()
        for seed in range(cases):
            case, same_input = generate_case(target, conventions[seed % 3], seed, shape, False)
            assert check_all(executor, case, same_input) == [], (target.name, seed)
            coverage.add(case)
        rate = cases / (time.perf_counter() - started)
        started = time.perf_counter()
        for seed in range(cases):
            case, _ = generate_case(target, conventions[seed % 3], seed, shape, False)
            list(run_eowc(case.query, case.log, case.convention))
        peer = cases / (time.perf_counter() - started)
        rates.append(rate)
        print(f"{target.name:<24}{rate:>10.1f}{peer:>25.1f}{rate / peer:>8.2f}")
    print(f"{'median':<24}{statistics.median(rates):>10.1f}   (target: >= 50 cases/s)")


def on_spark(targets: list[Target]) -> None:
    from eowc.semantics.frontend.sql import parse_script
    from eowc.verify.crashes import reachable_crashes
    from eowc.verify.generators import random_arrival_log
    from eowc.verify.spark import SparkExecutor

    executor = SparkExecutor()
    target = next(t for t in targets if t.name == "tumble_agg")
    source = parse_script(target.script).query.source
    log = random_arrival_log(source, Convention.SPARK, 1, LogShape(rows=20, late=2))
    plain = Case(target.script, Convention.SPARK, log)
    executor.emissions(plain)  # warm up: Spark starts
    print(f"\nSpark (local[2]), {target.name}, {len(log.events)} rows in {len(log.epochs)} "
          "epochs: seconds per run")
    for what, case in [("uninterrupted", plain),
                       ("restart after epoch 1", Case(target.script, Convention.SPARK, log, (1,))),
                       ("crash (mid-batch, SIGKILL)",
                        Case(target.script, Convention.SPARK, log,
                             crash=next(c for c in reachable_crashes(plain) if c.point == "mid_batch"
                                        and c.epoch >= 1)))]:
        started = time.perf_counter()
        executor.emissions(case)
        print(f"  {what:<28}{time.perf_counter() - started:>8.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--spark", action="store_true")
    args = parser.parse_args()
    targets = builtin_targets()
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    in_process(targets, args.cases, args.rows)
    os.sched_setaffinity(0, cores)  # Spark gets both cores
    if args.spark:
        on_spark(targets)


if __name__ == "__main__":
    main()
