"""How much `eowc verify`'s generated cases exercise: for each query of the built-in suite and of
docs/examples/ (those `eowc verify` accepts), the fraction of cases whose reference output is not
empty, with the expected rows per case, as `eowc verify` generates them at its default size.

    python3 benchmarks/verify_coverage.py [--cases 60] [--seed 0]

A case whose reference emits nothing cannot tell a correct executor from one that emits
nothing; the goal is at least 90% of cases with expected output for every query.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.errors import EowcError
from eowc.semantics.rules.triggers import Convention
from eowc.verify.suite import Target, builtin_targets, default_shape, generate_case, load_target

ROOT = Path(__file__).resolve().parent.parent


def example_targets() -> list[Target]:
    """The queries of docs/examples/ (and its analysis/ folder) that `eowc verify` accepts."""
    targets = []
    for path in sorted([*ROOT.glob("docs/examples/*.sql"), *ROOT.glob("docs/examples/analysis/*.sql")]):
        try:
            targets.append(load_target(str(path)))
        except EowcError:
            continue  # not an EOWC query with watermarks (an example of a refusal)
    return targets


def coverage(target: Target, cases: int, seed: int) -> tuple[float, float]:
    """The fraction of ``cases`` cases of ``target`` with expected output, and the median
    number of expected rows per case."""
    conventions = list(Convention)
    with_output, rows = 0, []
    for i in range(cases):
        convention = conventions[i % len(conventions)]
        case, _ = generate_case(target, convention, seed + i, default_shape(target), crash=False)
        expected = sum(1 for _ in run_eowc(case.query, case.log, case.convention))
        with_output += expected > 0
        rows.append(expected)
    return with_output / cases, statistics.median(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{'query':<42} {'cases with output':>18} {'median rows':>12}")
    fractions = []
    for label, targets in (("suite", builtin_targets()), ("docs/examples", example_targets())):
        for target in targets:
            try:
                fraction, median = coverage(target, args.cases, args.seed)
            except EowcError as error:  # eowc verify refuses it too
                print(f"{label + '/' + target.name:<42} refused: {str(error)[:60]}...")
                continue
            fractions.append(fraction)
            print(f"{label + '/' + target.name:<42} {fraction:>17.0%} {median:>12}")
    below = sum(1 for f in fractions if f < 0.9)
    print(f"\n{len(fractions)} queries, {args.cases} cases each: lowest {min(fractions):.0%}, "
          f"median {statistics.median(fractions):.0%}; {below} below the 90% goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
