"""docs/engines-compared.md is what the campaign's runs say (docs/campaign/*.json, written by
benchmarks/engine_campaign.py), and every failure in a run is classified by a finding of
docs/campaign/findings.yaml; a failure nobody classified stops the page."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("engines_compared", ROOT / "docs" / "engines_compared.py")
assert SPEC is not None and SPEC.loader is not None
compared = importlib.util.module_from_spec(SPEC)
sys.modules["engines_compared"] = compared  # a dataclass looks its module up
SPEC.loader.exec_module(compared)
FINDINGS = yaml.safe_load((ROOT / "docs" / "campaign" / "findings.yaml").read_text(encoding="utf-8"))


def test_the_page_is_what_the_runs_say() -> None:
    runs = compared.load_runs()
    assert runs, "no campaign run in docs/campaign: the page would compare nothing"
    assert {run.engine for run in runs} == {"flink", "spark"}
    assert compared.unclassified(runs, FINDINGS) == []
    assert (ROOT / "docs" / "engines-compared.md").read_text(encoding="utf-8") == \
        compared.page(runs, FINDINGS)


def test_every_attribution_names_a_finding_and_every_finding_its_transcripts() -> None:
    names = set(FINDINGS["findings"])
    for engine, queries in FINDINGS["attributions"].items():
        assert engine.split("-")[0] in compared.ENGINE_NAMES  # an engine, or engine-release
        assert set(queries.values()) <= names, (engine, set(queries.values()) - names)
    for name, finding in FINDINGS["findings"].items():
        assert finding["class"] in compared.CLASSES, name
        for transcript in finding.get("transcripts", []):
            assert (ROOT / "docs" / "divergences" / f"{transcript}.yaml").exists(), transcript


def test_an_unclassified_failure_stops_the_page(tmp_path: Path) -> None:
    """A run with a failing query that no attribution explains is named, and main exits 1."""
    run = {"engine": "flink", "release": "9.9.9", "runner": "--executor flink-native",
           "cases_per_query": 1, "seed": 0, "date": "2026-12-02", "seconds": 1,
           "results": [{"corpus": "flink", "query": "made_up", "path": "x/query.sql",
                        "operators": ["window aggregation"], "exit": 1, "seconds": 1.0,
                        "verdict": "FAILED", "cases": 1, "failed": ["append-only"],
                        "not_run": "", "counterexamples": [], "transcripts": []}]}
    (tmp_path / "flink-9.9.9.json").write_text(json.dumps(run))
    runs = compared.load_runs(tmp_path)
    assert compared.unclassified(runs, FINDINGS) == ["Flink 9.9.9: made_up"]
    held = dict(run, results=[dict(run["results"][0], exit=0, failed=[])])
    (tmp_path / "flink-9.9.9.json").write_text(json.dumps(held))
    runs = compared.load_runs(tmp_path)
    assert compared.unclassified(runs, FINDINGS) == []
    assert "| Flink 9.9.9 | flink | 1 | 1 | 1 | 0 | 1 |" in compared.page(runs, FINDINGS)
