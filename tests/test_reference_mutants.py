"""Bugs injected into the REFERENCE interpreter's operator logic must be caught by the
differential tests of the executors against the reference.

The executors implement their operators themselves (``executors/over_window.py``,
``pattern.py``, ``session.py``, ...), so a bug in the reference's session merging, RANGE
frame bounds or ``PREV`` makes the two disagree. Each test injects one bug into the reference
at a stable seam (:data:`SEAMS`, the only place that names the reference's internals: repoint
it when they move), runs the differential check on the built-in target of the operator, and
asserts that it fails with the bug and passes without it, reporting how many cases it took.

Two differential checks are run: ``eowc verify``'s properties (*exact and timely* against the
reference, :func:`eowc.verify.properties.check_run`) on the built-in suite's target, and the
in-process executor test's comparison of every epoch's rows
(``tests/test_executors_in_process.py``) on its queries.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from eowc.executors.driver import run_in_process
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.windows import Window
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import forget_reference_runs
from eowc.verify.executors import InProcessExecutor
from eowc.verify.properties import check_run
from eowc.verify.suite import Target, builtin_targets, default_shape, generate_case, shape_of
from tests.strategies import SOURCE, script
from tests.test_executors_in_process import QUERIES, reference

# --------------------------------------------------------------------- the seams
#: Where each bug goes in the reference: (module, attribute). The `dataflow` rewrite of
#: ``semantics/operators`` may move them; this table is the one place to repoint.
SEAMS: dict[str, tuple[str, str]] = {
    "session merging": ("eowc.semantics.operators.session", "CompiledSession.sessions"),
    "RANGE frame bounds": ("eowc.semantics.operators.over", "frame_rows"),
    "PREV": ("eowc.semantics.operators.pattern", "_resolver"),
}


def _sessions_merged_at_the_gap(original: Callable[..., Any]) -> Callable[..., Any]:
    """Session merging: two rows exactly ``gap`` apart end up in one session (``t - last <=
    gap`` merges instead of ``t - last < gap``); the window is still ``[first, last + gap)``."""
    def sessions(self: Any, rows: Sequence[Row]) -> Iterator[tuple[Window, list[Row]]]:
        timed = sorted((r for r in rows if self.time(r) is not None), key=self.time)
        members: list[Row] = []
        first = last = 0
        for row in timed:
            t = self.time(row)
            if members and t > last + self.gap:  # the bug: ">" where ">=" belongs
                yield Window(first, last + self.gap), members
                members = []
            if not members:
                first = t
            members.append(row)
            last = t
        if members:
            yield Window(first, last + self.gap), members
    return sessions


def _range_bounds_exclusive(original: Callable[..., Any]) -> Callable[..., Any]:
    """RANGE frame bounds: ``RANGE BETWEEN a PRECEDING AND b FOLLOWING`` leaves out the rows
    whose ORDER BY value is exactly ``v - a`` or ``v + b`` (inclusive bounds made exclusive)."""
    def frame_rows(frame: Any, rows: Sequence[Row], keys: list[Any], i: int,
                   value_of: Callable[[Row], Any], descending: bool) -> tuple[int, int]:
        lo, hi = original(frame, rows, keys, i, value_of, descending)
        if frame.kind != "range" or descending:
            return lo, hi
        v = value_of(rows[i])
        if frame.start not in (None, 0):
            while lo <= hi and value_of(rows[lo]) == v + frame.start:
                lo += 1
        if frame.end not in (None, 0):
            while hi >= lo and value_of(rows[hi]) == v + frame.end:
                hi -= 1
        return lo, hi
    return frame_rows


def _prev_one_row_further(original: Callable[..., Any]) -> Callable[..., Any]:
    """PREV off by one: ``PREV(x, n)`` reads the row ``n + 1`` positions back."""
    def resolver(ref: Any, defining: str, index: int) -> Any:
        if ref.back:
            ref = type(ref)(ref.variable, ref.column, ref.back + 1)
        return original(ref, defining, index)
    return resolver


BUGS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "session merging": _sessions_merged_at_the_gap,
    "RANGE frame bounds": _range_bounds_exclusive,
    "PREV": _prev_one_row_further,
}


@contextmanager
def injected(bug: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The reference with ``bug`` injected at its seam, for the duration of the block."""
    module_name, path = SEAMS[bug]
    owner: Any = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    original = getattr(owner, name)
    with monkeypatch.context() as patch:  # the dataflow binds its operators anew on every run
        patch.setattr(owner, name, BUGS[bug](original))
        forget_reference_runs()  # verify's checks must run the buggy reference
        try:
            yield
        finally:
            forget_reference_runs()


# --------------------------------------------------- eowc verify's exact-and-timely check

#: The built-in target of each operator, and how many cases the check may take to kill it.
TARGETS = {"session merging": "session", "RANGE frame bounds": "over_window", "PREV": "pattern"}
MAX_CASES = 60
CONVENTIONS = list(Convention)


def _target(name: str) -> Target:
    return next(t for t in builtin_targets() if t.name == name)


def _failing_case(target: Target, cases: int) -> int | None:
    """The number of the first of ``cases`` seeded cases on which the in-process executors
    break a property against the reference (None: none)."""
    executor = InProcessExecutor()
    shape = shape_of(target, executor, default_shape(target))
    for seed in range(cases):
        convention = CONVENTIONS[seed % len(CONVENTIONS)]
        case, _ = generate_case(target, convention, seed, shape, crash=False, disrupt=False)
        if check_run(executor, case):
            return seed + 1
    return None


@pytest.mark.parametrize("bug", sorted(SEAMS))
def test_verify_catches_the_bug_injected_into_the_reference(bug: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    target = _target(TARGETS[bug])
    with injected(bug, monkeypatch):
        killed_at = _failing_case(target, MAX_CASES)
    assert killed_at is not None, f"{bug}: no case of {target.name} failed in {MAX_CASES}"
    print(f"{bug}: killed by case {killed_at} of {target.name}")
    assert _failing_case(target, max(killed_at, 10)) is None  # and the same cases pass without it


# ------------------------------------------- the in-process test's every-epoch comparison

#: The in-process executor test's queries that exercise each bug.
IN_PROCESS_QUERIES = {"session merging": "session_keyed", "RANGE frame bounds": "over_range",
                      "PREV": "pattern"}


def _logs(name: str, count: int) -> Iterator[tuple[Convention, ArrivalLog]]:
    """Seeded logs of the in-process tests' source, as ``eowc verify`` draws them for the
    query ``name``."""
    target = Target(name, SOURCE.format(delay=5) + QUERIES[name])
    shape = shape_of(target, InProcessExecutor(), default_shape(target))
    for seed in range(count):
        convention = CONVENTIONS[seed % len(CONVENTIONS)]
        case, _ = generate_case(target, convention, seed, shape, crash=False, disrupt=False)
        yield convention, case.log


def _differs(name: str, convention: Convention, log: ArrivalLog) -> bool:
    expected, _ = reference(name, convention, log)
    return run_in_process(script(QUERIES[name]).query, log, convention, close=True).emissions \
        != expected


@pytest.mark.parametrize("bug", sorted(SEAMS))
def test_the_in_process_comparison_catches_the_bug(bug: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    name = IN_PROCESS_QUERIES[bug]
    logs = list(_logs(name, MAX_CASES))
    with injected(bug, monkeypatch):
        killed_at = next((i + 1 for i, (c, log) in enumerate(logs) if _differs(name, c, log)), None)
    assert killed_at is not None, f"{bug}: no log of {name} told the two apart"
    print(f"{bug}: killed by log {killed_at} of {name}")
    assert not any(_differs(name, c, log) for c, log in logs[:max(killed_at, 10)])
