"""The differential campaign: the reference against an engine's own operators, on every query
of Flink's documentation corpus (tests/docs_corpus/flink), on the query-aware generated logs of
``eowc verify`` (boundaries, late rows, ties, restarts).

    python benchmarks/engine_campaign.py --executor flink-native --cases 3 [--only NAME,...]
        [--json results.json]

Each query is one ``eowc verify QUERY --executor E --cases N --report ...`` run (its own
process, so a query that stops with a usage error is reported and the campaign goes on). It
prints, per query: the verdict (held / FAILED with the properties / NOT RUN with the reason),
the cases, the seconds per case, and the counterexamples' descriptions; then the agreement rate
and the campaign's time. Run it where the engine is installed (flink-native runs in process in
a Flink environment: ``~/.cache/eowc/engines/flink-2.3.0/bin/python benchmarks/...``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "docs_corpus" / "flink"


def run_one(query: Path, executor: str, cases: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as work:
        report, out = Path(work) / "report.json", Path(work) / "cx"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "eowc.verify.cli.main", "verify", str(query),
                               "--executor", executor, "--cases", str(cases), "--seed", str(seed),
                               "--report", str(report), "--out", str(out)],
                              capture_output=True, text=True, timeout=3600)
        seconds = time.monotonic() - started
        result = {"query": query.parent.name, "exit": done.returncode, "seconds": round(seconds, 1),
                  "verdict": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""}
        if report.exists():
            data = json.loads(report.read_text())
            result["cases"] = data.get("cases")
            result["failed"] = sorted({p for t in data.get("tallies", {}).values()
                                       for p, tally in t.items() if tally.get("failed")})
        result["counterexamples"] = [line.split("description: ", 1)[1][:600]
                                     for f in sorted(out.glob("*.yaml"))
                                     for line in f.read_text().splitlines()
                                     if line.startswith("description: ")]
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default="flink-native")
    parser.add_argument("--cases", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    queries = sorted(p for p in CORPUS.glob("*/query.sql") if not names or p.parent.name in names)
    started, results = time.monotonic(), []
    for query in queries:
        result = run_one(query, args.executor, args.cases, args.seed)
        results.append(result)
        per_case = f"{result['seconds'] / result['cases']:.1f} s/case" if result.get("cases") else ""
        print(f"{result['query']:34} exit {result['exit']}  {result.get('cases') or 0:>2} cases  "
              f"{per_case:>12}  {result['verdict'][:160]}", flush=True)
        for description in result["counterexamples"]:
            print(f"    {description}", flush=True)
    held = sum(1 for r in results if r["exit"] == 0)
    ran = sum(1 for r in results if r.get("cases"))
    print(f"\n{held} of {ran} queries run agree on every case ({len(results) - ran} not run); "
          f"campaign {time.monotonic() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
