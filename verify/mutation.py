"""``eowc verify --mutants``: the mutation score of the checks. Every mutant of the zoo
(:mod:`eowc.verify.mutants`) runs on the chosen targets with the cases a normal run of the in-process
executors draws (case ``i`` of target ``j``: :func:`~eowc.verify.suite.generate_case` of the
target's :func:`~eowc.verify.suite.shape_of` under ``conventions[(i + j) % n]`` with seed
``seed + i``), checked by :func:`~eowc.verify.properties.check_all`.

A mutant is **killed** on a target by the first case on which a property fails (or its run
raises: an executor's own assertion, ``crashed``), and its run on that target stops there (no
shrinking); the correct executor must pass that case, or the kill is a **false kill** (the
case, not the mutant, is wrong). It **survives** when every case passes, and is **not
applicable** when it has nothing to break in the target's query
(:meth:`~eowc.verify.mutants.Mutant.applies`). A run stopped by its time budget is not complete:
the mutants it did not reach are left out, and it does not pass.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.rules.triggers import Convention
from eowc.verify.executors import Case, InProcessExecutor, parsed
from eowc.verify.generators import LogShape
from eowc.verify.mutants import MUTANTS, Mutant, MutantExecutor, mutants_for
from eowc.verify.properties import check_all
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, convention_of_case, generate_case, shape_of

KILLED, SURVIVED, FALSE_KILL, NOT_APPLICABLE = "killed", "survived", "false kill", "not applicable"
#: What kills a mutant whose run raises (an assertion of the executor's own): no property.
CRASHED = "crashed"


@dataclass(frozen=True)
class Outcome:
    """One mutant on one target: its ``verdict``, the first property that failed (``by``),
    the number of cases it took (``cases``: to the kill, else how many passed) and the
    convention of the killing case."""

    verdict: str
    by: str | None = None
    cases: int = 0
    convention: str | None = None
    message: str | None = None


@dataclass
class MutationReport:
    """Outcomes per target and mutant, and the totals."""

    seed: int
    cases: int
    conventions: list[str]
    mutants: list[Mutant]
    #: The tie order of the cases (``--ties``; None: each convention's default).
    ties: str | None = None
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)
    #: Per target, the conventions the executors cannot run it under, and why: no case of it
    #: is drawn under them.
    not_run: dict[str, dict[str, str]] = field(default_factory=dict)
    seconds: float = 0.0
    out_of_time: bool = False

    def count(self, verdict: str, target: str | None = None) -> int:
        return sum(1 for t, by_mutant in self.outcomes.items() if target in (None, t)
                   for o in by_mutant.values() if o.verdict == verdict)

    def applicable(self, target: str | None = None) -> int:
        return sum(1 for t, by_mutant in self.outcomes.items() if target in (None, t)
                   for o in by_mutant.values() if o.verdict != NOT_APPLICABLE)

    @property
    def ok(self) -> bool:
        """Every applicable mutant killed, on every target."""
        return self.count(KILLED) == self.applicable() and not self.out_of_time

    @property
    def exit_code(self) -> int:
        """``eowc verify --mutants``'s exit code: 0 when :attr:`ok`, else 1."""
        return 0 if self.ok else 1

    def score(self, target: str | None = None) -> str:
        """``killed K of N applicable (P%)``."""
        killed, applicable = self.count(KILLED, target), self.applicable(target)
        share = "-" if not applicable else "100%" if killed == applicable else \
            f"{100 * killed / applicable:.1f}%"  # never rounded up to 100%
        return f"killed {killed} of {applicable} applicable ({share})"


def run_mutants(targets: list[Target], conventions: list[Convention], cases: int, seed: int,
                crash: bool, shape: LogShape | GeneratorSettings, budget_s: float | None,
                mutants: tuple[Mutant, ...] = MUTANTS,
                on_step: Callable[[Target, Mutant], None] = lambda target, mutant: None,
                disrupt: bool = True, ties: str | None = None) -> MutationReport:
    """Each of ``mutants`` against up to ``cases`` cases of each target (module
    documentation), until done or ``budget_s`` seconds have passed; without ``disrupt`` no
    case restarts (and the mutants of recovery survive). ``ties`` is the cases' tie order."""
    report = MutationReport(seed, cases, [c.value for c in conventions], list(mutants), ties)
    started = time.monotonic()
    correct = InProcessExecutor()
    for j, target in enumerate(targets):
        query = parsed(target.script).query
        refused = {c: why for c in conventions if (why := correct.refusal(query, c)) is not None}
        if refused:
            report.not_run[target.name] = {c.value: why for c, why in refused.items()}
        drawn = _Cases(target, j, conventions, seed, shape_of(target, correct, shape), crash,
                       disrupt, ties, set(refused))
        outcomes = report.outcomes.setdefault(target.name, {})
        for mutant in mutants:
            if budget_s is not None and time.monotonic() - started > budget_s:
                report.out_of_time = True
                break
            on_step(target, mutant)
            if len(refused) == len(conventions) or not mutant.applies(query):
                outcomes[mutant.name] = Outcome(NOT_APPLICABLE)
                continue
            outcomes[mutant.name] = _against(MutantExecutor(mutant), correct, drawn, cases)
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Cases:
    """The cases of target ``j`` of a run, drawn when first needed and shared by every mutant
    (the cases ``run_suite`` draws)."""

    target: Target
    j: int
    conventions: list[Convention]
    seed: int
    shape: LogShape
    crash: bool
    disrupt: bool
    ties: str | None = None
    #: The conventions the executors refuse the target under: no case is drawn under them.
    refused: set[Convention] = field(default_factory=set)
    drawn: list[tuple[Case, ArrivalLog]] = field(default_factory=list)

    def __getitem__(self, i: int) -> tuple[Case, ArrivalLog]:
        while len(self.drawn) <= i:
            k = len(self.drawn)
            convention = convention_of_case(self.conventions, k, self.j, self.refused)
            assert convention is not None  # a target refused under all has no case drawn
            self.drawn.append(generate_case(self.target, convention, self.seed + k, self.shape,
                                            self.crash, self.disrupt, self.ties))
        return self.drawn[i]


def _against(executor: MutantExecutor, correct: InProcessExecutor, drawn: _Cases, cases: int
             ) -> Outcome:
    """The mutant against the cases in turn, up to the first that kills it."""
    for i in range(cases):
        case, same_input = drawn[i]
        try:
            violations = check_all(executor, case, same_input)
            by, message = (violations[0].prop, str(violations[0])) if violations else (None, None)
        except Exception as error:  # noqa: BLE001 - a broken executor may break its own asserts
            by, message = CRASHED, f"{type(error).__name__}: {error}"
        if by is not None:
            verdict = FALSE_KILL if check_all(correct, case, same_input) else KILLED
            return Outcome(verdict, by, i + 1, case.convention.value, message)
    return Outcome(SURVIVED, cases=cases)


# ------------------------------------------------------------------------------ reports

def mutation_json(report: MutationReport) -> dict:
    """The mutation run as JSON: per target and mutant, the verdict, the property that
    killed it and the cases it took; the totals."""
    return {
        "mode": "mutants", "seed": report.seed, "cases": report.cases,
        "conventions": report.conventions, "ties": report.ties,
        "seconds": round(report.seconds, 3),
        "out_of_time": report.out_of_time, "ok": report.ok, "exit_code": report.exit_code,
        "not_run": report.not_run,
        "mutants": [{"name": m.name, "bug": m.bug, "injected": m.where, "applies to": m.scope}
                    for m in report.mutants],
        "results": [{"query": target, "mutant": name, "verdict": o.verdict, "killed_by": o.by,
                     "cases": o.cases, "convention": o.convention, "violation": o.message}
                    for target, by_mutant in report.outcomes.items()
                    for name, o in by_mutant.items()],
        "per_query": {target: {"killed": report.count(KILLED, target),
                               "applicable": report.applicable(target)}
                      for target in report.outcomes},
        "total": {"killed": report.count(KILLED), "applicable": report.applicable(),
                  "survived": report.count(SURVIVED), "false_kills": report.count(FALSE_KILL),
                  "not_applicable": report.count(NOT_APPLICABLE)},
    }


def mutation_junit(report: MutationReport) -> ET.ElementTree:
    """The mutation run as JUnit XML: a test suite per query, a test case per mutant (a
    survivor or a false kill fails, a mutant that does not apply is skipped)."""
    suites = ET.Element("testsuites", name="eowc verify --mutants", time=f"{report.seconds:.3f}")
    for target, by_mutant in report.outcomes.items():
        failed = [o for o in by_mutant.values() if o.verdict in (SURVIVED, FALSE_KILL)]
        skipped = [o for o in by_mutant.values() if o.verdict == NOT_APPLICABLE]
        suite = ET.SubElement(suites, "testsuite", name=target, tests=str(len(by_mutant)),
                              failures=str(len(failed)), skipped=str(len(skipped)))
        for name, o in by_mutant.items():
            case = ET.SubElement(suite, "testcase", classname=f"eowc.mutants.{target}", name=name)
            if o.verdict == NOT_APPLICABLE:
                ET.SubElement(case, "skipped", message="not applicable")
            elif o.verdict == KILLED:
                ET.SubElement(case, "system-out").text = (
                    f"killed by {o.by} after {o.cases} cases ({o.convention}): {o.message}")
            elif o.verdict == SURVIVED:
                ET.SubElement(case, "failure", message=f"survived {o.cases} cases")
            else:
                ET.SubElement(case, "failure", message=f"false kill: the correct executor also "
                                                       f"fails the case: {o.message}")
    return ET.ElementTree(suites)


def mutation_table(report: MutationReport) -> Table:
    """A row per target and applicable mutant: the verdict, the property that killed it, the
    cases it took; then the mutants that do not apply to the target, and its score."""
    table = Table(title=f"eowc verify --mutants: seed {report.seed}, up to {report.cases} cases "
                        f"per mutant, {report.seconds:.1f} s"
                        + (" (time budget reached)" if report.out_of_time else ""))
    for column in ("query", "mutant", "verdict", "killed by", "cases"):
        table.add_column(column, justify="right" if column == "cases" else "left")
    for target, by_mutant in report.outcomes.items():
        for name, o in by_mutant.items():
            if o.verdict != NOT_APPLICABLE:
                verdict = o.verdict if o.verdict == KILLED else f"[red]{o.verdict}[/red]"
                table.add_row(target, name, verdict, o.by or "", str(o.cases))
        idle = [name for name, o in by_mutant.items() if o.verdict == NOT_APPLICABLE]
        if idle:
            table.add_row(target, f"[dim]{', '.join(idle)}[/dim]", "[dim]not applicable[/dim]",
                          "", "")
        table.add_row(target, f"[bold]{report.score(target)}[/bold]", "", "", "",
                      end_section=True)
    return table


def mutation_command(targets: list[Target], skipped: dict[str, str],
                     conventions: list[Convention], cases: int, seed: int, crash: bool,
                     shape: LogShape | GeneratorSettings, budget_s: float | None, report_path: str | None,
                     junit_path: str | None, disrupt: bool = True, ties: str | None = None) -> int:
    """``eowc verify --mutants``: run, print the table and the total, write the reports;
    the exit code (0: every applicable mutant killed, else 1). Under ``--ties row-id`` the
    zoo is the mutants whose decision is a bug under it (:func:`~eowc.verify.mutants.mutants_for`)."""
    zoo = mutants_for(ties) if ties is not None else MUTANTS
    console = Console(stderr=True)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=True)
    with progress:
        task = progress.add_task("mutants", total=len(targets) * len(zoo))

        def on_step(target: Target, mutant: Mutant) -> None:
            progress.update(task, description=f"{target.name}: {mutant.name}")
            progress.advance(task)

        report = run_mutants(targets, conventions, cases, seed, crash, shape, budget_s, zoo,
                             on_step=on_step, disrupt=disrupt, ties=ties)
    Console(width=140).print(mutation_table(report))
    for target, why in skipped.items():
        click.echo(f"{target}: skipped ({why})")
    for target, refused in report.not_run.items():
        for convention, why in refused.items():
            click.echo(f"{target}: not run under the {convention} convention ({why})")
    if report_path:
        Path(report_path).write_text(json.dumps(mutation_json(report), indent=2) + "\n",
                                     encoding="utf-8")
    if junit_path:
        mutation_junit(report).write(junit_path, encoding="unicode", xml_declaration=True)
    left = [f"{t}: {n} {o.verdict}" for t, by in report.outcomes.items() for n, o in by.items()
            if o.verdict in (SURVIVED, FALSE_KILL)]
    click.echo(f"{report.score()}" + (f"; {'; '.join(left)}" if left else "")
               + (" (time budget reached)" if report.out_of_time else ""))
    return report.exit_code
