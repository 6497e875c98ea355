"""Write docs/engines-compared.md from the differential campaign's runs (docs/campaign/*.json,
written by ``benchmarks/engine_campaign.py --json``) and the classified findings
(docs/campaign/findings.yaml).

    python3 docs/engines_compared.py            # write the page
    python3 docs/engines_compared.py --check    # exit 1 if the page is not what the runs say

Every query that failed in a run must be classified in findings.yaml (``attributions``: the
finding that explains it): an unclassified failure stops the script with exit 1, naming the
run and the query, and the page is not written. Nothing on the page is typed by hand except
the findings' and RisingWave's words in findings.yaml.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DOCS = Path(__file__).resolve().parent
CAMPAIGN = DOCS / "campaign"
PAGE = DOCS / "engines-compared.md"
ENGINE_NAMES = {"flink": "Flink", "spark": "Spark"}
CLASSES = {1: "eowc was wrong", 2: "a rule of the engine eowc did not model",
           3: "an engine bug or undocumented behaviour",
           4: "a limit of eowc's harness for the engine"}


@dataclass(frozen=True)
class Run:
    """One campaign run: an engine release over a corpus."""

    engine: str
    release: str
    data: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{ENGINE_NAMES[self.engine]} {self.release}"

    @property
    def results(self) -> list[dict[str, Any]]:
        return self.data["results"]


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in release.split("."))


def load_runs(folder: Path = CAMPAIGN) -> list[Run]:
    runs = [Run(d["engine"], d["release"], d) for d in
            (json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json")))]
    return sorted(runs, key=lambda r: (r.engine, [-k for k in _release_key(r.release)]))


def verdict(result: dict[str, Any]) -> str:
    """held, failed or not run."""
    if not result["cases"]:
        return "not run"
    return "failed" if result["failed"] or result["exit"] not in (0,) else "held"


def unclassified(runs: list[Run], findings: dict[str, Any]) -> list[str]:
    """Each failing query of a run that no attribution explains, as ``run: query``."""
    attributions = findings.get("attributions") or {}
    return [f"{run.label}: {r['query']}" for run in runs for r in run.results
            if verdict(r) == "failed" and attributed(attributions, run, r["query"]) is None]


def attributed(attributions: dict[str, Any], run: Run, query: str) -> str | None:
    """The finding that explains ``query``'s failures in ``run``: the release's own
    attribution (``spark-3.5.3``) if it has one, else the engine's."""
    for key in (f"{run.engine}-{run.release}", run.engine):
        finding = (attributions.get(key) or {}).get(query)
        if finding is not None:
            return finding
    return None


def _cell(result: dict[str, Any] | None, finding: str | None) -> str:
    if result is None:
        return ""
    state = verdict(result)
    if state == "held":
        return f"held ({result['cases']})"
    if state == "failed":
        return f"**failed** ({result['cases']}): {finding}"
    return "not run"


def page(runs: list[Run], findings: dict[str, Any]) -> str:
    attributions = findings.get("attributions") or {}
    out = ["# Engines compared: the campaign's results",
           "",
           "<!-- Written by docs/engines_compared.py from docs/campaign/*.json and "
           "docs/campaign/findings.yaml: do not edit by hand. -->",
           "",
           "The reference against each engine's own operators, on the query-aware generated logs "
           "of `eowc verify` (boundaries, late rows, ties, several sources at different rates, "
           "a restart per case), query by query: `benchmarks/engine_campaign.py` ran each "
           "query of a corpus as `eowc verify QUERY --executor flink-native` (or "
           "`spark-native`, or `--executor-cmd` of another release's environment) and kept "
           "the result in `docs/campaign/`. How the engines are driven, and the findings in "
           "words: [engines.md](engines.md).",
           "",
           "## The runs",
           "",
           "| engine | corpus | queries | run | agree on every case | not run | cases | seconds a "
           "case (median) | campaign | date |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        ran = [r for r in run.results if r["cases"]]
        per_case = [r["seconds"] / r["cases"] for r in ran]
        corpora = ", ".join(sorted({r["corpus"] for r in run.results}))
        out.append(f"| {run.label} | {corpora} | {len(run.results)} | {len(ran)} | "
                   f"{sum(verdict(r) == 'held' for r in ran)} | "
                   f"{len(run.results) - len(ran)} | {sum(r['cases'] for r in ran)} | "
                   f"{statistics.median(per_case):.1f} | " if per_case else
                   f"| {run.label} | {corpora} | {len(run.results)} | 0 | 0 | "
                   f"{len(run.results)} | 0 | | ")
        out[-1] += f"{run.data['seconds']} s | {run.data['date']} |"
    out += ["", "## Agreement per operator", "",
            "An operator's row counts the queries that have it (a query with two operators "
            "counts for both). RisingWave's engine does not run here: its column is what its "
            "documentation and tests say, which is the reference's `risingwave` convention.",
            ""]
    labels = [run.label for run in runs]
    out.append("| operator | " + " | ".join(labels) + " | RisingWave (documented) |")
    out.append("|---|" + "---|" * (len(labels) + 1))
    per_operator: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for r in run.results:
            for kind in dict.fromkeys(r["operators"]):
                per_operator[kind][run.label].append(verdict(r))
    risingwave = findings.get("risingwave") or {}
    for kind in sorted(per_operator):
        cells = []
        for label in labels:
            states = per_operator[kind].get(label, [])
            ran = [s for s in states if s != "not run"]
            not_run = len(states) - len(ran)
            agreed = f"{sum(s == 'held' for s in ran)} of {len(ran)}" if ran else ""
            cells.append(", ".join(p for p in (agreed, f"{not_run} not run" if not_run else "")
                                   if p))
        out.append(f"| {kind} | " + " | ".join(cells) + f" | {risingwave.get(kind, '')} |")
    out += ["", "## Query by query", "",
            "`held (n)`: every property held on n cases; `failed`: the finding that explains "
            "it; `not run`: the engine or eowc refused the query, with its reason below.", "",
            "| query | corpus | operators | " + " | ".join(labels) + " |",
            "|---|---|---|" + "---|" * len(labels)]
    queries: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    operators: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        for r in run.results:
            queries[(r["corpus"], r["query"])][run.label] = r
            operators[(r["corpus"], r["query"])] = r["operators"]
    reasons: dict[str, set[str]] = defaultdict(set)
    for (corpus, name), by_run in sorted(queries.items()):
        cells = []
        for run in runs:
            result = by_run.get(run.label)
            cells.append(_cell(result, attributed(attributions, run, name)))
            if result is not None and verdict(result) == "not run":
                reasons[_reason(result)].add(f"{name} ({run.label})")
        out.append(f"| `{name}` | {corpus} | {' + '.join(operators[(corpus, name)])} | "
                   + " | ".join(cells) + " |")
    out += ["", "Why a query was not run:", ""]
    out += [f"- {reason}: {', '.join(sorted(names))}" for reason, names in sorted(reasons.items())]
    out += ["", "## Findings", "",
            "Each failure above is explained by one of these; *now* says what eowc does about "
            "it (fixed, made a rule of the convention, or recorded), *pinned* where a test "
            "holds the engine's output, with the minimal transcripts in "
            "[divergences/](divergences/). *Seen in* lists the runs above whose failures it "
            "explains and the releases its transcripts were replayed on.", "",
            "| finding | engine | what the engine does | class | now | pinned | seen in | "
            "transcripts |",
            "|---|---|---|---|---|---|---|---|"]
    seen: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        for r in run.results:
            finding = attributed(attributions, run, r["query"])
            if finding and verdict(r) == "failed":
                seen[finding].add(run.release)
    for name, finding in (findings.get("findings") or {}).items():
        releases = sorted(seen[name] | set(finding.get("releases", [])), key=_release_key)
        transcripts = ", ".join(f"[`{t}`](divergences/{t}.yaml)"
                                for t in finding.get("transcripts", []))
        out.append(f"| {name} | {ENGINE_NAMES[finding['engine']]} | {finding['what']} | "
                   f"{finding['class']}: {CLASSES[finding['class']]} | {finding['now']} | "
                   f"{finding.get('pinned', '')} | {', '.join(releases)} | {transcripts} |")
    return "\n".join(out) + "\n"


def _reason(result: dict[str, Any]) -> str:
    """The reason a query was not run, in the engine's or eowc's words, without the query's
    path or the runner's command."""
    text = result["not_run"] or result["verdict"]
    for marker in ("refused it: ", "cannot run this query: "):
        if marker in text:
            text = text.split(marker, 1)[1]
            break
    else:
        text = text.removeprefix("eowc verify: error: ")
        if result["path"] in text:
            text = text.split(result["path"], 1)[1].lstrip(": ")
    text = text.split("; use --e", 1)[0]
    return text.split(" (", 1)[0].rstrip(".:") if len(text) > 160 else text.rstrip(".")


def main(argv: list[str]) -> int:
    runs = load_runs()
    findings = yaml.safe_load((CAMPAIGN / "findings.yaml").read_text(encoding="utf-8"))
    missing = unclassified(runs, findings)
    if missing:
        print("docs/engines_compared.py: failures no finding explains (classify them in "
              "docs/campaign/findings.yaml, attributions):\n  " + "\n  ".join(missing),
              file=sys.stderr)
        return 1
    text = page(runs, findings)
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is not what the runs say: run python3 docs/engines_compared.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE} from {len(runs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
