"""``eowc verify``: the built-in suite passes on the in-process executors with a table, a JSON
report and JUnit XML; bad input exits with 2 and names the file; every mutant is caught by
``run_suite`` with the property it breaks, shrunk, written as a transcript, and the transcript
replays the failure (and passes on the correct executor)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import QueryRefused
from eowc.verify.cli.main import main
from eowc.verify.cli.verify_command import _counterexample_writer, parse_duration
from eowc.verify.executors import InProcessExecutor
from eowc.verify.generators import LogShape
from eowc.verify.mutants import MutantExecutor, mutant_named
from eowc.verify.suite import INCOMPLETE, Target, builtin_targets, run_suite
from eowc.verify.transcripts import load_transcript, replay
from tests.mutants import (
    AssumesSortedEpochs,
    DropsEqualTimestamps,
    DuplicatesAfterRestart,
    EarlyByOneEpoch,
    Mutant,
    Unordered,
)

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
SORT = Target("sort", SOURCE + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE")


def test_the_builtin_suite_passes_with_a_table_a_json_report_and_junit(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "verify", "--cases", "6", "--seed", "3", "--report", str(tmp_path / "r.json"),
        "--junit", str(tmp_path / "j.xml"), "--out", str(tmp_path / "cx")])
    assert result.exit_code == 0, result.output
    names = {t.name for t in builtin_targets()}
    assert {"tumble_agg", "hop_agg", "cumulate_agg", "group_by_ts", "sort", "window_sort",
            "sort_agg", "over_window", "window_top_n", "dedup", "session", "count_window",
            "pattern", "interval_join", "window_join", "union", "window_join_aggregates",
            "join_over_window"} <= names
    for name in names:
        assert name in result.output
    assert f"every property held ({6 * len(names)} cases)" in result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["ok"] and report["cases"] == 6 * len(names)
    by = {(r["query"], r["property"]): r for r in report["results"]}
    assert by[("sort", "ordered")]["tried"] == 6 and ("tumble_agg", "ordered") not in by
    assert all(r["failed"] == 0 and r["passed"] == r["tried"] == 6 for r in report["results"])
    suites = ET.parse(tmp_path / "j.xml").getroot()
    assert {s.get("name") for s in suites} == names
    assert not list(suites.iter("failure"))
    assert not (tmp_path / "cx").exists()  # no counterexample


class RefusesUnder(InProcessExecutor):
    """The in-process executors, but for an engine that cannot run anything under the
    ``refused`` conventions."""

    def __init__(self, *refused: Convention) -> None:
        self.refused = refused

    def emissions(self, case):  # noqa: ANN001, ANN201
        if case.convention in self.refused:
            raise QueryRefused(f"no {case.convention.value} rules here")
        return super().emissions(case)


def test_a_target_refused_under_one_convention_runs_its_cases_under_the_others() -> None:
    """Each case falls to the next convention in turn; the report says which was not run,
    and the run is incomplete (exit 4)."""
    (sort,) = [t for t in builtin_targets() if t.name == "sort"]
    report = run_suite([sort], RefusesUnder(Convention.FLINK), list(Convention), 6, 0, False,
                       LogShape(), None)
    assert report.ok and report.cases == 6 and report.exit_code == INCOMPLETE
    assert report.skipped == {"sort under the flink convention": "inprocess refused it: no "
                                                                  "flink rules here"}
    assert report.tallies["sort"]["exact and timely"].tried == 6
    report = run_suite([sort], RefusesUnder(*Convention), list(Convention), 6, 0, False,
                       LogShape(), None)
    assert report.cases == 0 and set(report.skipped) == {"sort"} and "sort" not in report.tallies
    assert report.skipped["sort"].startswith("inprocess refused it: no risingwave rules here; ")


def test_the_same_seed_gives_the_same_cases() -> None:
    def run(seed: int) -> list:
        report = run_suite(builtin_targets(), InProcessExecutor(), list(Convention), 3, seed,
                           False, LogShape(), None)
        return [(t, p, x.tried) for t, ps in report.tallies.items() for p, x in ps.items()]
    assert run(5) == run(5)


@pytest.mark.parametrize(("args", "expected"), [
    (["missing.sql"], "missing.sql: cannot read the query"),
    (["update.sql"], "update.sql: the query does not end with EMIT ON WINDOW CLOSE"),
    (["broken.sql"], "broken.sql:"),
    (["--executor", "spark-native", "sort.sql"], "sort.sql: spark-native cannot run this query"),
    (["--executor", "spark-native", "--convention", "flink"], "follow the spark convention"),
    (["--executor", "spark-native", "--crash"], "spark-native cannot be crashed"),
    (["--time-budget", "soon"], "expected a duration"),
])
def test_bad_input_exits_with_2_and_says_what_is_wrong(tmp_path: Path, monkeypatch,
                                                      args: list[str], expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("update.sql").write_text(SOURCE + "SELECT auction, price, ts FROM bids")
    Path("broken.sql").write_text(SOURCE + "SELEC auction FROM bids EMIT ON WINDOW CLOSE")
    Path("sort.sql").write_text(SORT.script)
    result = CliRunner().invoke(main, ["verify", *args])
    assert result.exit_code == 2, result.output
    assert expected in result.output


def test_durations() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "5m", "1.5h")] == [90, 90, 300, 5400]


@pytest.mark.parametrize(("mutant", "prop"), [
    (EarlyByOneEpoch, "exact and timely"),
    (DropsEqualTimestamps, "exact and timely"),
    (DuplicatesAfterRestart, "consistent after recovery"),
    (Unordered, "ordered"),
    (AssumesSortedEpochs, "deterministic"),
], ids=lambda x: x.name if isinstance(x, Mutant) else x)
def test_a_mutant_is_caught_shrunk_and_replays_from_its_transcript(tmp_path: Path,
                                                                  mutant: Mutant, prop: str
                                                                  ) -> None:
    report = run_suite([SORT], mutant, list(Convention), 30, 0, False, LogShape(late=2), None,
                       on_failure=_counterexample_writer(tmp_path, mutant, 0))
    assert not report.ok
    tally = report.tallies["sort"][prop]
    assert tally.failed > 0 and tally.counterexamples, report.tallies["sort"]
    transcript = load_transcript(tally.counterexamples[0])
    assert len(transcript.case.log.events) <= 4  # shrunk from 20 events
    assert prop in transcript.description
    violations = replay(transcript, mutant)
    assert {prop, "expected"} & {v.prop for v in violations}, violations
    assert replay(transcript, InProcessExecutor()) == []


@pytest.mark.parametrize(("mutant", "target"), [
    ("over-ignores-frame", "over_window"), ("session-no-merge", "session"),
    ("top-n-first-arrivals", "window_top_n"), ("join-wrong-side", "interval_join"),
    ("join-wrong-side", "window_join_aggregates"),
])
def test_the_builtin_suite_catches_a_broken_partitioned_executor(mutant: str, target: str) -> None:
    """A bug inside an executor of eowc.executors.partitioned fails *exact and timely* on its
    built-in target, and the right executor passes the same cases."""
    targets = [t for t in builtin_targets() if t.name == target]
    report = run_suite(targets, MutantExecutor(mutant_named(mutant)), list(Convention), 20, 0,
                       False, LogShape(), None)
    assert report.tallies[target]["exact and timely"].failed > 0, report.tallies[target]
    assert run_suite(targets, InProcessExecutor(), list(Convention), 20, 0, False, LogShape(),
                     None).ok
