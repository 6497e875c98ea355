"""How much of RisingWave's and Flink's documented SQL eowc takes (issue 18, "Measure and report").

For every case of tests/docs_corpus (docs/sql/corpus.md): does the script parse
(``parse_script``), does the reference interpreter run it over the docs' input (the engine of
``eowc run``), and is the result the table the docs print (a multiset; the final EOWC output,
or the final table of an emit-on-update query)? Prints the counts per engine and per category,
then every case that falls short with the first line of its error.

    python benchmarks/docs_corpus.py
"""

from __future__ import annotations

import logging
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.docs_corpus.cases import Case, Outcome, check_case, load_cases  # noqa: E402


def tally(results: list[tuple[Case, Outcome]], key: str) -> dict[str, list[int]]:
    """group -> [cases, parse, run, documented output]"""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for case, outcome in results:
        row = counts[getattr(case, key)]
        for i, passed in enumerate((True, outcome.parses, outcome.runs, outcome.documented)):
            row[i] += passed
    return dict(sorted(counts.items()))


def print_table(title: str, counts: dict[str, list[int]]) -> None:
    print(f"\n{title:<12} {'cases':>5} {'parse':>5} {'run':>5} {'documented':>10}")
    total = [0, 0, 0, 0]
    for group, row in counts.items():
        print(f"{group:<12} {row[0]:>5} {row[1]:>5} {row[2]:>5} {row[3]:>10}")
        total = [a + b for a, b in zip(total, row, strict=True)]
    print(f"{'all':<12} {total[0]:>5} {total[1]:>5} {total[2]:>5} {total[3]:>10}")


def main() -> None:
    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its fallback warnings are not results
    results = [(case, check_case(case)) for case in load_cases()]
    print(f"docs corpus: {len(results)} cases (tests/docs_corpus)")
    print_table("engine", tally(results, "engine"))
    print_table("category", tally(results, "category"))
    failures = [(case, outcome) for case, outcome in results if not outcome.documented]
    print(f"\nshort of the documented output: {len(failures)}")
    for case, outcome in failures:
        print(f"  {case.id:<42} [{outcome.stage}] {outcome.error}")


if __name__ == "__main__":
    main()
