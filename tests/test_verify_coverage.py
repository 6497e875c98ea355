"""``eowc verify`` says what its cases exercised, and a verification that exercised nothing
fails: a target whose cases mostly expect no output is *vacuous* (exit 3), a built-in target
the executor cannot run makes the run *incomplete* (exit 4), and an executor that emits nothing
fails on every built-in target and every query of docs/examples/."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from eowc.semantics.engines.interpreter import Emission, check_runs_under_eowc
from eowc.semantics.errors import EowcError
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.coverage import Coverage
from eowc.verify.executors import Case, InProcessExecutor, parsed
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import FAILED, INCOMPLETE, VACUOUS, Report, builtin_targets, load_target, run_suite

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted([*ROOT.glob("docs/examples/*.sql"), *ROOT.glob("docs/examples/analysis/*.sql")])


class EmitsNothing:
    """An executor that never emits a row."""

    name = "emits-nothing"

    def emissions(self, case: Case) -> list[Emission]:
        return []

    def variant(self) -> EmitsNothing:
        return self


def runnable_examples() -> list[Path]:
    """The queries of docs/examples/ that `eowc verify` accepts and the interpreter runs."""
    kept = []
    for path in EXAMPLES:
        try:
            target = load_target(str(path))
            check_runs_under_eowc(parsed(target.script).query, Convention.SPARK)
        except EowcError:
            continue
        kept.append(path)
    return kept


@pytest.mark.parametrize("target", builtin_targets(), ids=lambda t: t.name)
def test_an_executor_that_emits_nothing_fails_every_builtin_target(target) -> None:  # noqa: ANN001
    report = run_suite([target], EmitsNothing(), list(Convention), 20, 0, False,
                       GeneratorSettings(), None)
    assert report.tallies[target.name]["exact and timely"].failed >= 15  # most cases
    assert report.exit_code == FAILED


@pytest.mark.parametrize("path", runnable_examples(), ids=lambda p: p.stem)
def test_an_executor_that_emits_nothing_fails_every_docs_example(path: Path) -> None:
    target = load_target(str(path))
    report = run_suite([target], EmitsNothing(), list(Convention), 20, 0, False,
                       GeneratorSettings(), None)
    assert report.tallies[target.name]["exact and timely"].failed >= 15, path
    assert not report.coverage[target.name].vacuous


def test_the_examples_left_out_are_the_refused_ones() -> None:
    """Every example runs but those that `eowc verify` refuses: invalid under EOWC (a join
    without a time bound, GROUP BY keys without a watermark column), emit on update, and seed
    004's job as written (an ambiguous column). Its fixed job, a composed plan, runs."""
    runnable = {p.name for p in runnable_examples()}
    assert {p.name for p in EXAMPLES} - runnable == {
        "unbounded_join.sql", "bad_group_key.sql", "lost_watermark.sql", "over_window_update.sql",
        "seed004_job.sql", "asof_join.sql"}
    assert "seed004_job_fixed.sql" in runnable


def test_coverage_counts_what_a_case_exercises() -> None:
    """A hand-made case of a 10-second TUMBLE with a 5-second delay: rows at 1 s and 9 s (a
    tie at 9 s), then 15 s, which moves the watermark to exactly 10 s, the window's end;
    then a row at 3 s, late; a restart after epoch 0."""
    from eowc.semantics.ir.arrival import ArrivalLog, Event
    script = (ROOT / "docs/examples/window_end.sql").read_text()
    base = 1_700_000_000_000_000 - 1_700_000_000_000_000 % 10_000_000

    def row(seconds: int) -> Event:
        return Event("readings", (base + seconds * 1_000_000, "a", 1))
    log = ArrivalLog(((row(1), row(9), row(9)), (row(15),), (row(3),)))
    coverage = Coverage()
    coverage.add(Case(script, Convention.SPARK, log, restart_after=(0,)))
    assert coverage.as_dict() == {"cases": 1, "cases_with_output": 1, "expected_rows": 1,
                                  "at_boundary": 1, "late_rows": 1, "ties": 2, "restarts": 1,
                                  "crashes": 0, "vacuous": False}



@pytest.mark.parametrize("convention", list(Convention))
def test_a_cascade_counts_the_boundaries_of_its_sources(convention: Convention) -> None:
    """docs/examples/composed/cascade.sql (5-minute sums, then 10-minute windows of them,
    delay 1 minute): a row at 08:01, then one at 08:11 moves the source watermark to exactly
    08:10, the end of the last 5-minute window of [08:00, 08:10), which closes that window
    (one output row, at a boundary: a microsecond lower, [08:05, 08:10) would still be open;
    Flink closes it 1 ms earlier, at 08:09:59.999, so there the row comes at 08:10:59.999).
    A row at 08:12 instead moves it past: the same row, not at a boundary. (Judged by the
    derived watermark of the 10-minute window's input, trunc(W, 5min) + 5min - 1ms, the
    row is never at a boundary.)"""
    script = (ROOT / "docs/examples/composed/cascade.sql").read_text()

    def bid(at: int) -> Event:
        return Event("bid", (at, 1.0, "A"))
    exact = parse_timestamp("2020-04-15 08:11:00") - convention.closing_offset
    for last, boundary in ((exact, 1), (parse_timestamp("2020-04-15 08:12:00"), 0)):
        coverage = Coverage()
        first = bid(parse_timestamp("2020-04-15 08:01:00"))
        coverage.add(Case(script, convention, ArrivalLog(((first,), (bid(last),)))))
        assert (coverage.expected_rows, coverage.at_boundary) == (1, boundary), (last, convention)

def test_a_vacuous_verification_exits_3_and_says_what_to_change(tmp_path: Path) -> None:
    """10-minute windows over 20 seconds of event time: nothing ever closes."""
    result = CliRunner().invoke(main, [
        "verify", str(ROOT / "docs/examples/tumble.sql"), "--cases", "6", "--span", "20 seconds",
        "--report", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml")])
    assert result.exit_code == VACUOUS == 3, result.output
    assert "VACUOUS: tumble: only 0 of 6 cases expect any output" in result.output
    assert "--span" in result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["vacuous"] == ["tumble"] and report["exit_code"] == 3
    assert report["coverage"]["tumble"]["cases_with_output"] == 0
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1"
    assert suite.find("testcase[@name='cases expect output']/failure") is not None


def test_the_default_scale_makes_the_same_query_exercised(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "verify", str(ROOT / "docs/examples/tumble.sql"), "--cases", "6",
        "--report", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    coverage = json.loads((tmp_path / "r.json").read_text())["coverage"]["tumble"]
    assert coverage["cases_with_output"] == 6 and coverage["restarts"] == 6
    assert coverage["at_boundary"] > 0 and coverage["late_rows"] > 0 and coverage["ties"] > 0
    assert "what the cases exercised" in result.output


def test_an_incomplete_run_exits_4() -> None:
    report = Report("x", 0, ["spark"], skipped={"sort": "cannot run it"})
    assert report.exit_code == INCOMPLETE == 4


def test_generator_settings_come_from_the_command_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "verify", str(ROOT / "docs/examples/tumble.sql"), "--cases", "3", "--rows", "40",
        "--keys", "2", "--null-rate", "0", "--late", "0", "--epochs", "50",
        "--report", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    coverage = json.loads((tmp_path / "r.json").read_text())["coverage"]["tumble"]
    assert coverage["late_rows"] == 0
    bad = CliRunner().invoke(main, ["verify", "--span", "soon"])
    assert bad.exit_code == 2 and "--span" in bad.output


def test_the_in_process_executors_pass_with_query_aware_cases() -> None:
    report = run_suite(builtin_targets(), InProcessExecutor(), list(Convention), 20, 0, False,
                       GeneratorSettings(), None)
    assert report.ok and not report.vacuous, report.tallies
