"""The mutant zoo (verify/mutants.py) and ``eowc verify --mutants``: every mutant is a bug in
the executors' logic that the checks catch on a built-in target at the default size, with the
correct executor passing the killing case; a mutant with nothing to break in a query is not
applicable to it; boundary bugs are shown on hand-computed logs; the command's table, JSON,
JUnit and exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from eowc.semantics.engines.interpreter import Emission, run_eowc
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.executors import Case, InProcessExecutor
from eowc.verify.generators import BASE_TIME
from eowc.verify.mutants import MUTANTS, MutantExecutor, mutant_named
from eowc.verify.mutation import FALSE_KILL, KILLED, NOT_APPLICABLE, MutationReport, run_mutants
from eowc.verify.properties import check_all
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import builtin_targets, generate_case, run_suite, shape_of

S = 1_000_000


@pytest.fixture(scope="module")
def default_run() -> MutationReport:
    """The zoo against the built-in suite at the default size (60 cases, seed 0)."""
    return run_mutants(builtin_targets(), list(Convention), 60, 0, False, GeneratorSettings(),
                       None)


def test_the_zoo_has_at_least_15_named_realistic_mutants() -> None:
    assert len(MUTANTS) >= 15
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    assert all(m.bug and m.where for m in MUTANTS)


@pytest.mark.parametrize("mutant", [m.name for m in MUTANTS])
def test_each_mutant_is_killed_on_a_builtin_target_at_the_default_size(
        default_run: MutationReport, mutant: str) -> None:
    killed = {t: o for t, by in default_run.outcomes.items() for n, o in by.items()
              if n == mutant and o.verdict == KILLED}
    assert killed, {t: by[mutant] for t, by in default_run.outcomes.items()}
    assert all(o.by and o.cases >= 1 for o in killed.values())


def test_no_kill_is_false_the_correct_executor_passes_every_killing_case(
        default_run: MutationReport) -> None:
    assert default_run.count(FALSE_KILL) == 0


def test_the_correct_executor_passes_every_case_the_mutants_see() -> None:
    """The mutation run draws the cases ``eowc verify`` draws for the in-process executors,
    and on them every property of the correct executor holds."""
    report = run_suite(builtin_targets(), InProcessExecutor(), list(Convention), 60, 0, False,
                       GeneratorSettings(), None)
    assert report.ok and report.cases == 60 * len(builtin_targets())


def test_every_applicable_mutant_is_killed_on_every_target_at_the_default_size(
        default_run: MutationReport) -> None:
    """The goal of issue 16: 100% at the default size (a survivor names a target and a
    mutant whose bug the generated cases no longer reach)."""
    survivors = [(t, n) for t, by in default_run.outcomes.items() for n, o in by.items()
                 if o.verdict not in (KILLED, NOT_APPLICABLE)]
    assert survivors == [] and default_run.ok


def test_the_correct_executor_passes_the_cases_that_kill(default_run: MutationReport) -> None:
    """Independently of the run's own false-kill check: the first killing case of a few
    mutants, drawn again, passes on the correct executor and fails on the mutant."""
    targets = {t.name: (j, t) for j, t in enumerate(builtin_targets())}
    conventions = list(Convention)
    for mutant in ("watermark-of-last-row", "emits-on-update", "null-keys-dropped",
                   "emitted-twice-after-restart"):
        target, outcome = next((t, by[mutant]) for t, by in default_run.outcomes.items()
                               if by[mutant].verdict == KILLED)
        j, chosen = targets[target]
        i = outcome.cases - 1
        shape = shape_of(chosen, InProcessExecutor(), GeneratorSettings())
        case, same_input = generate_case(chosen, conventions[(i + j) % 3], i, shape, False)
        assert check_all(InProcessExecutor(), case, same_input) == []
        assert check_all(MutantExecutor(mutant_named(mutant)), case, same_input) != []


def test_a_mutant_that_does_not_apply_is_reported_as_such(default_run: MutationReport) -> None:
    outcomes = default_run.outcomes
    assert outcomes["sort"]["join-wrong-side"].verdict == NOT_APPLICABLE
    assert outcomes["sort"]["emits-on-update"].verdict == NOT_APPLICABLE
    assert outcomes["tumble_agg"]["sort-in-arrival-order"].verdict == NOT_APPLICABLE
    assert outcomes["sort"]["per-row-late-check"].verdict == NOT_APPLICABLE
    assert outcomes["union"]["join-wrong-side"].verdict == NOT_APPLICABLE  # a union has no join
    assert outcomes["hop_agg"]["null-keys-dropped"].verdict == NOT_APPLICABLE  # windows only
    sort = next(t for t in builtin_targets() if t.name == "sort")
    case = Case(sort.script, Convention.SPARK, ArrivalLog(((),)))
    with pytest.raises(ValueError, match="does not apply"):
        MutantExecutor(mutant_named("emits-on-update")).emissions(case)


# ------------------------------------------------------------- boundary bugs, by hand

def _bid(auction: int | None, seconds: float, price: float = 1.0) -> Event:
    return Event("bids", (auction, "a", price, BASE_TIME + round(seconds * S)))


def _script(name: str) -> str:
    return next(t.script for t in builtin_targets() if t.name == name)


def test_a_row_equal_to_the_watermark_kills_the_flipped_late_check() -> None:
    """RisingWave keeps a row equal to the watermark: after a bid at 10 s (W = 8 s) a bid at
    8 s is on time and the sort emits it once W passes it; the flipped check drops it."""
    log = ArrivalLog(((_bid(1, 10),), (_bid(2, 8),), (_bid(3, 30),)))
    case = Case(_script("sort"), Convention.RISINGWAVE, log)
    eight = (BASE_TIME + 8 * S, 2, "a", 1.0)
    ten = (BASE_TIME + 10 * S, 1, "a", 1.0)
    assert list(run_eowc(case.query, log, case.convention)) == [Emission(2, eight),
                                                                Emission(2, ten)]
    assert check_all(InProcessExecutor(), case) == []
    [violation] = check_all(MutantExecutor(mutant_named("late-check-flipped")), case)
    assert violation.prop == "exact and timely" and "missing" in violation.message


@pytest.mark.parametrize(("convention", "mutant", "last", "epoch"), [
    # window [20 s, 25 s) of tumble_agg closes at W = 25 s (RisingWave, Spark) and at
    # W = 24.999 s under Flink; W is the largest time minus 2 s
    (Convention.RISINGWAVE, "closes-one-unit-early", 26.999, 1),  # W = 24.999 s: one ms short
    (Convention.SPARK, "closes-one-unit-late", 27, 1),  # W = 25 s: closes now, not later
    (Convention.FLINK, "closes-one-unit-early", 26.998, 1),  # W = 24.998 s: one ms short
])
def test_a_watermark_one_unit_from_a_window_end_kills_the_off_by_one_trigger(
        convention: Convention, mutant: str, last: float, epoch: int) -> None:
    log = ArrivalLog(((_bid(1, 21),), (_bid(1, last),), (_bid(1, 40),)))
    case = Case(_script("tumble_agg"), convention, log)
    window = [e for e in run_eowc(case.query, log, convention) if e.row[1] == BASE_TIME + 20 * S]
    closes = 2 if mutant == "closes-one-unit-early" else 1  # by hand: the epoch it closes after
    assert [e.epoch for e in window] == [closes]
    assert check_all(InProcessExecutor(), case) == []
    [violation] = check_all(MutantExecutor(mutant_named(mutant)), case)
    assert violation.prop == "exact and timely" and violation.epoch == epoch


def test_an_epoch_replayed_after_a_restart_is_emitted_twice() -> None:
    """Bids at 1 s, 5 s, 10 s in three epochs (delay 2 s): the sort emits the 1 s bid after
    epoch 1 (W = 3 s) and the 5 s bid after epoch 2 (W = 8 s). Restarted after epoch 1, an
    engine that delivers epoch 1 again takes the 5 s bid twice (5 s is not late at 3 s)."""
    log = ArrivalLog(((_bid(1, 1),), (_bid(2, 5),), (_bid(3, 10),)))
    case = Case(_script("sort"), Convention.RISINGWAVE, log, restart_after=(1,))
    one, five = (BASE_TIME + 1 * S, 1, "a", 1.0), (BASE_TIME + 5 * S, 2, "a", 1.0)
    assert list(run_eowc(case.query, log, case.convention)) == [Emission(1, one),
                                                                Emission(2, five)]
    assert check_all(InProcessExecutor(), case) == []
    replayed = MutantExecutor(mutant_named("epoch-replayed-after-restart"))
    assert replayed.emissions(case) == [Emission(1, one), Emission(2, five), Emission(2, five)]
    [violation] = check_all(replayed, case)
    assert violation.prop == "consistent after recovery"


# ------------------------------------------------------------------------- the command

def test_verify_mutants_reports_a_table_json_junit_and_exit_code(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sort.sql").write_text(_script("sort"))
    result = CliRunner().invoke(main, ["verify", "--mutants", "sort.sql", "--report", "r.json",
                                       "--junit", "j.xml"])
    assert result.exit_code == 0, result.output
    assert "sort-in-arrival-order" in result.output and "killed by" in result.output
    report = json.loads(Path("r.json").read_text())
    assert report["mode"] == "mutants" and report["ok"] and report["exit_code"] == 0
    total = report["total"]
    assert total["killed"] == total["applicable"] >= 10 and total["survived"] == 0
    assert f"killed {total['killed']} of {total['applicable']} applicable (100%)" in result.output
    by = {r["mutant"]: r for r in report["results"]}
    assert by["sort-in-arrival-order"]["killed_by"] in ("ordered", "deterministic")
    assert by["join-wrong-side"]["verdict"] == NOT_APPLICABLE
    assert all(r["cases"] >= 1 for r in report["results"] if r["verdict"] == KILLED)
    suite = ET.parse("j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "sort" and suite.get("failures") == "0"
    assert len(suite.findall("testcase")) == len(MUTANTS)


def test_verify_mutants_exits_with_1_when_a_mutant_survives(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sort.sql").write_text(_script("sort"))
    result = CliRunner().invoke(main, ["verify", "--mutants", "sort.sql", "--cases", "1",
                                       "--junit", "j.xml"])
    assert result.exit_code == 1, result.output
    assert "survived" in result.output
    assert ET.parse("j.xml").getroot().find("testsuite/testcase/failure") is not None


def test_verify_mutants_breaks_only_the_in_process_executors() -> None:
    result = CliRunner().invoke(main, ["verify", "--mutants", "--executor", "spark"])
    assert result.exit_code == 2
    assert "--mutants breaks the in-process executors" in result.output
