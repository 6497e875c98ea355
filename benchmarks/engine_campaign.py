"""The differential campaign: the reference against an engine's own operators, on the query-aware
generated logs of ``eowc verify`` (boundaries, late rows, ties, several sources at different
rates, restarts), over a corpus of queries:

- ``flink``: Flink's documentation's queries (tests/docs_corpus/flink), as Flink's docs write them;
- ``suite``: eowc's built-in suite (verify/suite, one query per operator, RisingWave's dialect);
- ``examples``: the EOWC queries of docs/examples.

    python benchmarks/engine_campaign.py --engine flink --corpus flink --cases 2
    python benchmarks/engine_campaign.py --engine spark --corpus suite \\
        --executor-cmd '~/.cache/eowc/engines/spark-3.5.3/bin/eowc engine spark' --release 3.5.3

Each query is one ``eowc verify QUERY --cases N --report ...`` run in its own process (a query
that stops with a usage error is reported and the campaign goes on). It prints, per query, the
operators (Flink's documentation's words), the verdict (held / FAILED with the properties / NOT
RUN with the engine's reason), the cases, the seconds per case and the counterexamples'
descriptions; then the agreement and the campaign's time. ``--json`` writes it all, with the
engine and release, for docs/engines_compared.py (docs/campaign/ holds the runs the page is made
of). ``flink-native`` and ``spark-native`` run in process with the installed release: run the
script with the Python of the engine's environment
(``~/.cache/eowc/engines/flink-2.3.0/bin/python benchmarks/engine_campaign.py ...``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {
    "flink": lambda: sorted((ROOT / "tests" / "docs_corpus" / "flink").glob("*/query.sql")),
    "suite": lambda: sorted((ROOT / "verify" / "suite").glob("*.sql")),
    "examples": lambda: sorted(p for p in (ROOT / "docs" / "examples").glob("*.sql")
                               if "EMIT ON WINDOW CLOSE" in p.read_text(encoding="utf-8").upper()),
}
#: The Python distribution of each engine, for the release of an in-process run.
DISTRIBUTIONS = {"flink": "apache-flink", "spark": "pyspark"}


def query_name(query: Path) -> str:
    return query.parent.name if query.name == "query.sql" else query.stem


def operators_of(query: Path) -> list[str]:
    """The query's stateful operators, root first, in Flink's documentation's words (eowc's
    reading of the query; empty for rows passed on one by one)."""
    from eowc.semantics.frontend.sql import parse_script
    from eowc.semantics.rules.emit_modes import operator_kinds

    try:
        plan = parse_script(query.read_text(encoding="utf-8")).query.plan
    except Exception as error:  # noqa: BLE001 - reported, not raised: the campaign goes on
        return [f"(not read: {str(error).splitlines()[0][:120]})"]
    return [kind for _, kind in operator_kinds(plan)] or ["rows (window TVF or sort)"]


def run_one(query: Path, runner: list[str], cases: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as work:
        report, out = Path(work) / "report.json", Path(work) / "cx"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "eowc.verify.cli.main", "verify", str(query),
                               *runner, "--cases", str(cases), "--seed", str(seed),
                               "--report", str(report), "--out", str(out)],
                              capture_output=True, text=True, timeout=3600)
        seconds = time.monotonic() - started
        lines = done.stderr.strip().splitlines()
        result = {"query": query_name(query), "path": str(query.relative_to(ROOT)),
                  "operators": operators_of(query), "exit": done.returncode,
                  "seconds": round(seconds, 1), "verdict": lines[-1] if lines else "",
                  "cases": 0, "failed": [], "not_run": ""}
        if report.exists():
            data = json.loads(report.read_text())
            result["cases"] = data.get("cases") or 0
            result["failed"] = sorted({r["property"] for r in data.get("results", [])
                                       if r.get("failed")})
        if not result["cases"]:
            result["not_run"] = next((line for line in reversed(lines) if "refused" in line
                                      or "not run" in line.lower() or "error" in line.lower()),
                                     result["verdict"])[:400]
        transcripts = [f.read_text(encoding="utf-8") for f in sorted(out.glob("*.yaml"))]
        result["counterexamples"] = [line.split("description: ", 1)[1][:600]
                                     for text in transcripts for line in text.splitlines()
                                     if line.startswith("description: ")]
        # the shrunk transcripts themselves, for classifying the failure (eowc replay)
        result["transcripts"] = [text[:6000] for text in transcripts]
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(DISTRIBUTIONS), default="flink")
    parser.add_argument("--corpus", default="flink",
                        help=f"comma-separated, of: {', '.join(CORPORA)}")
    parser.add_argument("--executor-cmd", default="",
                        help="an engine of another environment (eowc engine spark|flink)")
    parser.add_argument("--release", default="", help="the engine's release, for --executor-cmd")
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated query names")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    if args.executor_cmd:
        runner, release = ["--executor-cmd", args.executor_cmd], args.release or "unknown"
        runner += ["--convention", args.engine]
    else:
        runner = ["--executor", f"{args.engine}-native"]
        release = metadata.version(DISTRIBUTIONS[args.engine])
    names = {n for n in args.only.split(",") if n}
    queries = [(corpus, q) for corpus in args.corpus.split(",") for q in CORPORA[corpus]()
               if not names or query_name(q) in names]
    started, results = time.monotonic(), []
    for corpus, query in queries:
        result = {"corpus": corpus, **run_one(query, runner, args.cases, args.seed)}
        results.append(result)
        per_case = f"{result['seconds'] / result['cases']:.1f} s/case" if result["cases"] else ""
        print(f"{result['query']:30} {' + '.join(result['operators'])[:40]:40} exit "
              f"{result['exit']} {result['cases']:>2} cases {per_case:>12}  "
              f"{(result['not_run'] or result['verdict'])[:140]}", flush=True)
        for description in result["counterexamples"]:
            print(f"    {description}", flush=True)
    held = sum(1 for r in results if r["cases"] and not r["failed"] and r["exit"] == 0)
    ran = sum(1 for r in results if r["cases"])
    total = time.monotonic() - started
    print(f"\n{args.engine} {release}: {held} of {ran} queries run agree on every case "
          f"({len(results) - ran} not run); campaign {total:.0f} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(
            {"engine": args.engine, "release": release, "runner": " ".join(runner),
             "cases_per_query": args.cases, "seed": args.seed,
             "date": datetime.now(UTC).strftime("%Y-%m-%d"),
             "seconds": round(total), "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
