"""The mutation score of `eowc verify`'s checks, as docs/verification.md reports it: the zoo of
verify/mutants.py against the built-in suite, per target at the default size and with fewer
cases, and the cases each mutant needed over several seeds (Markdown tables).

    python3 benchmarks/mutation_score.py [--cases 60] [--fewer 20] [--seeds 0 100 200 300 400 500]

The goal is every applicable mutant killed on every target at the default size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eowc.semantics.rules.triggers import Convention  # noqa: E402
from eowc.verify.mutation import KILLED, NOT_APPLICABLE, MutationReport, run_mutants  # noqa: E402
from eowc.verify.query_scale import GeneratorSettings  # noqa: E402
from eowc.verify.suite import builtin_targets  # noqa: E402


def run(cases: int, seed: int) -> MutationReport:
    return run_mutants(builtin_targets(), list(Convention), cases, seed, False,
                       GeneratorSettings(), None)


def needed(report: MutationReport) -> int:
    """The cases it took to kill every killed mutant on every target."""
    return max((o.cases for by in report.outcomes.values() for o in by.values()
                if o.verdict == KILLED), default=0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--fewer", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 100, 200, 300, 400, 500])
    args = parser.parse_args()
    started = time.monotonic()
    default, fewer = run(args.cases, args.seeds[0]), run(args.fewer, args.seeds[0])
    print(f"| query | default ({args.cases} cases) | `--cases {args.fewer}` |\n|---|---|---|")
    for target in default.outcomes:
        print(f"| {target} | {default.count(KILLED, target)} of {default.applicable(target)} | "
              f"{fewer.count(KILLED, target)} of {fewer.applicable(target)} |")
    print(f"| **total** | **{default.score()}** | **{fewer.score()}** |\n")
    left = [f"{t}: {n} ({o.verdict})" for t, by in fewer.outcomes.items() for n, o in by.items()
            if o.verdict not in (KILLED, NOT_APPLICABLE)]
    print(f"with --cases {args.fewer}, not killed: {'; '.join(left) or 'none'}")
    others = {seed: run(args.cases, seed) for seed in args.seeds[1:]}
    reports = {args.seeds[0]: default, **others}
    print("cases needed to kill everything, per seed: "
          + ", ".join(f"{seed}: {needed(r)} ({r.score()})" for seed, r in reports.items()) + "\n")
    print(f"| mutant | killed on (seed {args.seeds[0]}) | cases (median, max) | max over "
          f"{len(reports)} seeds | first property that failed |\n|---|---|---|---|---|")
    for mutant in default.mutants:
        outcomes = [by[mutant.name] for by in default.outcomes.values()
                    if by[mutant.name].verdict != NOT_APPLICABLE]
        killed = [o for o in outcomes if o.verdict == KILLED]
        cases = [o.cases for o in killed]
        worst = max((by[mutant.name].cases for r in reports.values() for by in r.outcomes.values()
                     if by[mutant.name].verdict == KILLED), default=0)
        by_property = Counter(o.by for o in killed)
        print(f"| `{mutant.name}` | {len(killed)} of {len(outcomes)} | "
              f"{statistics.median(cases):g}, {max(cases)} | {worst} | "
              + ", ".join(f"{p} ({n})" for p, n in by_property.most_common()) + " |")
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0 if all(r.ok for r in reports.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
