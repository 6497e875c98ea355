"""What ``eowc verify`` runs: seeded cases of EOWC queries against an executor, every property
tallied per query, and each failure shrunk to a small counterexample.

A *target* is one EOWC query (a SQL script); the built-in suite (``verify/suite/*.sql``) has
one per operator the executors support. Case ``i`` of target ``j`` uses the convention
``conventions[(i + j) % len(conventions)]`` and the seed ``seed + i``: a seeded log
(:func:`~eowc.verify.generators.random_arrival_log`, late rows included), a log with the same INPUT
(reordered and re-batched), and a disruption (a restart, or with ``crash`` a crash), all
checked at once by :func:`~eowc.verify.properties.check_all`. The same seed gives the same cases.

A failing case is shrunk (:func:`shrink`): epochs, events and disruptions are removed and
epochs merged as long as the same run still breaks the same property, and the result is
written as a transcript that ``eowc replay`` runs again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.errors import EowcError, InputError, PlanError
from eowc.semantics.frontend.dialects import detect_dialect
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.rules.emit_modes import not_final_in_flink
from eowc.semantics.rules.triggers import Convention, default_ties
from eowc.verify.cases import Case, Executor, QueryRefused, parsed, time_resolution
from eowc.verify.coverage import Coverage
from eowc.verify.crashes import common_crashes, reachable_crashes
from eowc.verify.generators import (
    LogShape,
    random_arrival_log,
    random_disruption,
    random_multi_source_log,
    random_reordering,
    random_same_input_variant,
)
from eowc.verify.properties import OrderedExtent, Violation, check_all, check_run, sort_rule
from eowc.verify.query_scale import GeneratorSettings

#: The properties tallied, in the order of the report.
PROPERTIES = ("append-only", "exact and timely", "ordered", "deterministic",
              "consistent after recovery")


@dataclass(frozen=True)
class Target:
    """One EOWC query to verify: its name (the file's stem), SQL script and file."""

    name: str
    script: str
    path: str | None = None


def builtin_targets() -> list[Target]:
    """The built-in suite: one query per operator the executors support."""
    folder = resources.files("eowc.verify") / "suite"
    return [Target(entry.name.removesuffix(".sql"), entry.read_text(encoding="utf-8"),
                   f"verify/suite/{entry.name}")
            for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".sql")]


def load_target(path: str) -> Target:
    """The query in ``path``; an :class:`EowcError` naming the file when it cannot be read or
    parsed, is not ``EMIT ON WINDOW CLOSE``, or its source declares no watermark."""
    try:
        script = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, None, f"cannot read the query: {error}") from None
    try:
        query = parse_script(script).query
    except EowcError as error:
        raise EowcError(f"{path}: {error}") from None
    if not query.emit_on_window_close:
        if detect_dialect(script) == "flink":
            raise PlanError(f"{path}: {not_final_in_flink(query.plan)}: only queries whose rows "
                            f"are final (EOWC) are verified")
        raise PlanError(f"{path}: the query does not end with EMIT ON WINDOW CLOSE: only EOWC "
                        "queries are verified")
    for source in sources_of(query.plan):
        if source.watermark is None:
            raise PlanError(f"{path}: source {source.name} declares no watermark (add "
                            "WATERMARK FOR <column> AS <column> - INTERVAL ...)")
    return Target(Path(path).stem, script, path)


@dataclass
class Tally:
    """One property of one target: cases tried, passed, failed, and the counterexamples."""

    tried: int = 0
    passed: int = 0
    failed: int = 0
    counterexamples: list[str] = field(default_factory=list)
    first_failure: str | None = None


@dataclass
class Report:
    """What a verification run found, per target and property."""

    executor: str
    seed: int
    conventions: list[str]
    #: The order of rows with equal ORDER BY values the cases were checked under (``--ties``).
    ties: str = "deterministic"
    tallies: dict[str, dict[str, Tally]] = field(default_factory=dict)
    coverage: dict[str, Coverage] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: Properties no case checked, and why (``consistent after recovery`` when no case is
    #: disrupted): the run does not say they hold.
    not_checked: dict[str, str] = field(default_factory=dict)
    #: What *ordered* checked per target (an EOWC sort): rows and partitions of the executor.
    ordered: dict[str, OrderedExtent] = field(default_factory=dict)
    #: What an external executor played: its restarts and crashes (``ExternalExecutor``).
    exercised: dict[str, int] = field(default_factory=dict)
    cases: int = 0
    seconds: float = 0.0
    out_of_time: bool = False

    @property
    def ok(self) -> bool:
        """No property failed."""
        return all(t.failed == 0 for props in self.tallies.values() for t in props.values())

    @property
    def vacuous(self) -> list[str]:
        """The targets whose cases mostly expect nothing (:attr:`Coverage.vacuous`)."""
        return [name for name, c in self.coverage.items() if c.vacuous]

    @property
    def exit_code(self) -> int:
        """:data:`FAILED` when a property failed, else :data:`VACUOUS` when a target's cases
        mostly expect nothing, else :data:`INCOMPLETE` when a target could not be run or a
        property was not checked, else :data:`HELD`."""
        if not self.ok:
            return FAILED
        if self.vacuous:
            return VACUOUS
        return INCOMPLETE if self.skipped or self.not_checked else HELD


def ties_checked(ties: str | None, conventions: list[Convention]) -> str:
    """The tie order of a run's cases in words: ``ties``, else the conventions' defaults."""
    return ties or "/".join(dict.fromkeys(default_ties(c) for c in conventions))


#: Exit codes of ``eowc verify`` (2 is bad usage or input).
HELD, FAILED, VACUOUS, INCOMPLETE = 0, 1, 3, 4


def applies(prop: str, case: Case) -> bool:
    """Whether ``prop`` says anything about ``case``: *ordered* about a sort without GROUP
    BY, *consistent after recovery* about a case with a restart or a crash."""
    if prop == "ordered":
        return sort_rule(case.query, case.convention) is not None
    if prop == "consistent after recovery":
        return case.disrupted
    return True


def default_shape(target: Target, settings: GeneratorSettings | None = None) -> LogShape:
    """The shape of ``target``'s logs: the query-aware defaults of :mod:`eowc.verify.query_scale`,
    with what ``settings`` sets."""
    return (settings or GeneratorSettings()).shape_for(parsed(target.script).query)


def generate_case(target: Target, convention: Convention, seed: int, shape: LogShape,
                  crash: bool, disrupt: bool = True, ties: str | None = None
                  ) -> tuple[Case, ArrivalLog]:
    """Case ``seed`` of ``target``: a seeded log, its disruption, and a log with the same
    INPUT. With ``crash`` every case crashes once (else it restarts once), at a point a run
    reaches on both logs (the challenger of :func:`~eowc.verify.properties.check_all` is crashed
    on the second); without ``disrupt`` it is not disrupted. ``ties`` is the case's tie order
    (:attr:`Case.ties`)."""
    sources = sources_of(parsed(target.script).query.plan)
    if len(sources) == 1:
        log = random_arrival_log(sources[0], convention, seed, shape)
        same_input = random_same_input_variant(log, sources[0], convention, seed)
    else:
        log = random_multi_source_log(sources, convention, seed, shape)
        same_input = random_reordering(log, seed)
    plain = Case(target.script, convention, log, ties=ties)
    if not disrupt:
        return plain, same_input
    crashes = common_crashes(plain, [same_input]) if crash else []
    restarts, crashed = random_disruption(log, seed, crashes)
    return replace(plain, restart_after=restarts, crash=crashed), same_input


@dataclass(frozen=True)
class Found:
    """One failed case: the target, the violations, and each shrunk (the same property broken
    by the same run on a smaller case)."""

    target: Target
    case: Case
    violations: list[Violation]
    shrunk: list[Violation]


def run_suite(targets: list[Target], executor: Executor, conventions: list[Convention],
              cases: int, seed: int, crash: bool, shape: LogShape | GeneratorSettings,
              budget_s: float | None,
              on_case: Callable[[Target, int], None] = lambda target, i: None,
              on_failure: Callable[[Found], list[str]] = lambda found: [],
              shrink_budget_s: float = 30.0, disrupt: bool = True, ties: str | None = None
              ) -> Report:
    """Run ``cases`` cases of every target (case ``i`` of target ``j`` under
    ``conventions[(i + j) % n]`` with seed ``seed + i``) until done or ``budget_s`` seconds
    have passed, each target's logs of ``shape`` (or of :func:`default_shape` with these
    settings), nudged by the executor's time resolution where no unit is set; what each case
    exercised is counted in the report's coverage. Each failure is shrunk (up to
    ``shrink_budget_s`` seconds) and handed to ``on_failure``, which returns the paths of the
    counterexamples it wrote. Without ``disrupt`` no case restarts or crashes, and the report
    says that *consistent after recovery* was not checked. ``ties`` orders rows with equal
    ORDER BY values in every case and its reference (None: each convention's default); the
    report names the order checked."""
    report = Report(executor.name, seed, [c.value for c in conventions],
                    ties=ties_checked(ties, conventions))
    if not disrupt:
        report.not_checked["consistent after recovery"] = \
            "no case was disrupted (no restart, no crash): recovery was not checked"
    started = time.monotonic()
    shapes = {target.name: shape_of(target, executor, shape) for target in targets}
    for target in targets:
        report.tallies[target.name] = {prop: Tally() for prop in PROPERTIES}
        report.coverage[target.name] = Coverage()
    refused: dict[str, dict[Convention, str]] = {}  # per target, the conventions it cannot run
    for i, j, target in _schedule(targets, cases):
        if budget_s is not None and time.monotonic() - started > budget_s:
            report.out_of_time = True
            break
        if target.name in report.skipped:
            continue
        on_case(target, i)
        while (convention := convention_of_case(conventions, i, j,
                                                refused.get(target.name, {}))) is not None:
            case, same_input = generate_case(target, convention, seed + i, shapes[target.name],
                                             crash, disrupt, ties)
            extent = report.ordered.setdefault(target.name, OrderedExtent()) \
                if applies("ordered", case) else None
            try:
                violations = check_all(executor, case, same_input, extent)
                break
            except QueryRefused as refusal:  # not under this convention: say so, try the next
                refused.setdefault(target.name, {})[convention] = refusal.reason
                _report_refusal(report, executor, target, conventions, refused[target.name])
        else:
            continue
        report.cases += 1
        report.coverage[target.name].add(case)
        broken = {v.prop for v in violations}
        tallies = report.tallies[target.name]
        for prop in PROPERTIES:
            if not applies(prop, case):
                continue
            tally = tallies[prop]
            tally.tried += 1
            if prop in broken:
                tally.failed += 1
            else:
                tally.passed += 1
        new = [v for v in violations if tallies[v.prop].first_failure is None]
        if new:
            shrunk = [shrink(v, executor, shrink_budget_s) for v in new]
            paths = on_failure(Found(target, case, new, shrunk))
            for v, path in zip(new, paths or [None] * len(new), strict=True):
                tallies[v.prop].first_failure = str(v)
                if path:
                    tallies[v.prop].counterexamples.append(path)
    report.seconds = time.monotonic() - started
    return report


def convention_of_case(conventions: list[Convention], i: int, j: int,
                       refused: Collection[Convention] = ()) -> Convention | None:
    """The convention of case ``i`` of target ``j``: ``conventions[(i + j) % n]``, or the next
    in turn that the executor does not refuse (None: it refuses them all)."""
    turns = (conventions[(i + j + k) % len(conventions)] for k in range(len(conventions)))
    return next((c for c in turns if c not in refused), None)


def _report_refusal(report: Report, executor: Executor, target: Target,
                    conventions: list[Convention], refused: dict[Convention, str]) -> None:
    """Record that ``executor`` refused ``target`` under the conventions ``refused`` (each with
    its reason): the target is not run under those, or not at all if under none of
    ``conventions``."""
    if len(refused) < len(conventions):
        for convention, reason in refused.items():
            report.skipped[f"{target.name} under the {convention.value} convention"] = \
                f"{executor.name} refused it: {reason}"
        return
    for convention in refused:
        report.skipped.pop(f"{target.name} under the {convention.value} convention", None)
    reasons = list(dict.fromkeys(refused.values()))
    report.skipped[target.name] = f"{executor.name} refused it: {'; '.join(reasons)}"
    if not report.coverage[target.name].cases:
        del report.tallies[target.name], report.coverage[target.name]
        report.ordered.pop(target.name, None)


def shape_of(target: Target, executor: Executor, shape: LogShape | GeneratorSettings) -> LogShape:
    """The shape of ``target``'s logs as :func:`run_suite` draws them for ``executor``."""
    return nudged_for(executor, shape if isinstance(shape, LogShape)
                      else default_shape(target, shape))


def nudged_for(executor: Executor, shape: LogShape) -> LogShape:
    """``shape`` with rows nudged off boundaries by ``executor``'s time resolution when it is
    coarser than a microsecond and no unit was set."""
    resolution = time_resolution(executor)
    return replace(shape, unit=resolution) if shape.unit is None and resolution > 1 else shape


def _schedule(targets: list[Target], cases: int) -> Iterator[tuple[int, int, Target]]:
    """Case by case across targets (every target gets its first case first)."""
    for i in range(cases):
        for j, target in enumerate(targets):
            yield i, j, target


# ------------------------------------------------------------------------------ shrinking

def shrink(violation: Violation, executor: Executor, budget_s: float) -> Violation:
    """``violation`` on the smallest case found (greedily, within ``budget_s`` seconds) on
    which the run that showed it still breaks the same property: without the crash or a
    restart, without an epoch or an event, with two epochs merged."""
    assert violation.case is not None
    runner = executor.variant() if violation.executor != executor.name else executor
    wanted = violation.observed or violation.prop
    deadline = time.monotonic() + budget_s

    def failure(candidate: Case) -> Violation | None:
        try:
            return next((v for v in check_run(runner, candidate) if v.prop == wanted), None)
        except (EowcError, ValueError):  # e.g. a crash point the smaller log never reaches
            return None

    best = violation
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for candidate in _smaller(best.case):
            if time.monotonic() >= deadline:
                break
            smaller = failure(candidate)
            if smaller is not None:
                best, improved = _labelled(smaller, violation.prop), True
                break
    return best


def _labelled(violation: Violation, prop: str) -> Violation:
    """``violation`` (what a run broke) reported as the property ``prop`` it shows."""
    if violation.prop == prop:
        return violation
    return replace(violation, prop=prop, message=f"the run is not {violation.prop}: "
                                                 f"{violation.message}")


def _smaller(case: Case) -> Iterator[Case]:
    """Cases one step smaller than ``case``, the biggest steps first."""
    epochs = case.log.epochs
    if case.crash is not None:
        yield replace(case, crash=None)
    for k in case.restart_after:
        yield replace(case, restart_after=tuple(r for r in case.restart_after if r != k))
    for k in range(len(epochs)):  # without epoch k
        yield _with_epochs(case, epochs[:k] + epochs[k + 1:], lambda e, k=k: e - (e > k))
    for k in range(len(epochs) - 1):  # epochs k and k + 1 merged
        merged = epochs[:k] + (epochs[k] + epochs[k + 1],) + epochs[k + 2:]
        yield _with_epochs(case, merged, lambda e, k=k: e - (e > k))
    for k, epoch in enumerate(epochs):
        for i in range(len(epoch)):  # without one event
            yield _with_epochs(case, epochs[:k] + (epoch[:i] + epoch[i + 1:],) + epochs[k + 1:],
                               lambda e: e)


def _with_epochs(case: Case, epochs: tuple, renumber: Callable[[int], int]) -> Case:
    """``case`` over ``epochs``, its restarts and crash renumbered (and dropped when outside
    the log or, for the crash, no longer reached)."""
    log = ArrivalLog(epochs)
    restarts = tuple(sorted({renumber(k) for k in case.restart_after
                             if 0 <= renumber(k) < len(epochs)}))
    smaller = replace(case, log=log, restart_after=restarts, crash=None)
    if case.crash is None:
        return smaller
    crash = replace(case.crash, epoch=renumber(case.crash.epoch))
    return replace(smaller, crash=crash) if crash in reachable_crashes(smaller) else smaller
