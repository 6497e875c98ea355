"""The properties every EOWC executor must have, each a named check with a precise failure
message, run against any executor behind :class:`~verify.executors.Executor`.

An executor's output is its emissions: each result row tagged with the epoch after which it
was emitted (:class:`~semantics.interpreter.Emission`), in emission order. The reference is
``Q'(INPUT, W)`` of :func:`semantics.interpreter.run_eowc`. Each check returns None when the
property holds, else a :class:`Violation`:

* :func:`append_only`: no result row is emitted more often than it exists (a row emitted
  twice, or again after a restart, is a retraction-free change of the result);
* :func:`exact_and_timely`: after every epoch the rows emitted so far are exactly the
  reference's, nothing missing (emitted later) and nothing extra (emitted sooner);
* :func:`ordered`: within an epoch, an EOWC sort's rows are non-decreasing in the watermark
  column;
* :func:`deterministic`: two runs (or two logs with the same INPUT) give the same output;
* :func:`consistent_after_recovery`: a run restarted after some epochs gives the
  uninterrupted run's output.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from semantics.arrival import ArrivalLog
from semantics.expr import Row
from semantics.interpreter import Emission, compile_query, run_eowc, watermark_sequence
from semantics.plan import Query
from semantics.triggers import Convention
from semantics.values import format_timestamp, row_sort_key

from .executors import Case, Executor


@dataclass(frozen=True)
class Violation:
    """A property that failed: which, at which epoch (None: not tied to one), and why."""

    prop: str
    epoch: int | None
    message: str

    def __str__(self) -> str:
        where = f" after epoch {self.epoch}" if self.epoch is not None else ""
        return f"{self.prop}{where}: {self.message}"


# ------------------------------------------------------------------------------ checks

def _rows(rows: Counter) -> str:
    listed = sorted(rows.elements(), key=row_sort_key)
    shown = ", ".join(str(row) for row in listed[:5])
    return shown + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")


def append_only(emissions: Sequence[Emission], reference: Sequence[Emission]) -> Violation | None:
    """No row is emitted more often than the reference ever emits it."""
    allowed = Counter(e.row for e in reference)
    seen: Counter = Counter()
    for emission in emissions:
        seen[emission.row] += 1
        if seen[emission.row] > allowed[emission.row]:
            times = "once" if allowed[emission.row] == 1 else f"{allowed[emission.row]} times"
            return Violation("append-only", emission.epoch,
                             f"row {emission.row} emitted again (the result holds it {times})"
                             if allowed[emission.row] else
                             f"row {emission.row} emitted, but it is not in the result")
    return None


def exact_and_timely(emissions: Sequence[Emission], reference: Sequence[Emission],
                     watermarks: Sequence[float]) -> Violation | None:
    """After every epoch the cumulative output equals the reference's; the first epoch where
    it does not is reported with the rows that differ and the watermark in force."""
    def by_epoch(stream: Sequence[Emission]) -> dict[int, list[Row]]:
        rows: dict[int, list[Row]] = {}
        for emission in stream:
            rows.setdefault(emission.epoch, []).append(emission.row)
        return rows
    got_at, want_at = by_epoch(emissions), by_epoch(reference)
    for epoch in sorted({*got_at, *want_at}):
        if Counter(got_at.get(epoch, [])) != Counter(want_at.get(epoch, [])):  # first to differ
            got = Counter(e.row for e in emissions if e.epoch <= epoch)
            want = Counter(e.row for e in reference if e.epoch <= epoch)
            missing, extra = want - got, got - want
            mark = watermarks[epoch] if epoch < len(watermarks) else math.inf
            parts = [f"watermark after the epoch "
                     f"{format_timestamp(int(mark)) if math.isfinite(mark) else mark}"]
            if missing:
                parts.append(f"missing (emitted later or never): {_rows(missing)}")
            if extra:
                parts.append(f"extra (emitted too soon or wrongly): {_rows(extra)}")
            return Violation("exact and timely", epoch, "; ".join(parts))
    return None


def ordered(query: Query, convention: Convention, emissions: Sequence[Emission]
            ) -> Violation | None:
    """Within each epoch an EOWC sort's rows come out non-decreasing in the watermark
    column (for other queries there is nothing to check)."""
    compiled = compile_query(query, convention, eowc=True)
    if compiled.aggregate is not None or compiled.rule is None:
        return None
    bound = compiled.rule.bound
    for previous, current in pairwise(emissions):
        if previous.epoch == current.epoch and bound(current.row) < bound(previous.row):
            return Violation("ordered", current.epoch,
                             f"row {current.row} emitted after {previous.row}, whose watermark "
                             "column is larger")
    return None


def deterministic(first: Sequence[Emission], second: Sequence[Emission], what: str
                  ) -> Violation | None:
    """Two runs that must agree (``what`` says which) emit the same rows in the same epochs."""
    a, b = Counter(first), Counter(second)
    if a == b:
        return None
    epoch = min(e.epoch for e in (a - b) + (b - a))
    only_first = Counter({e.row: n for e, n in (a - b).items() if e.epoch == epoch})
    only_second = Counter({e.row: n for e, n in (b - a).items() if e.epoch == epoch})
    return Violation("deterministic", epoch,
                     f"{what} differ: only in the first {_rows(only_first) or 'nothing'}; "
                     f"only in the second {_rows(only_second) or 'nothing'}")


def consistent_after_recovery(uninterrupted: Sequence[Emission], recovered: Sequence[Emission],
                              disruption: str) -> Violation | None:
    """A run disrupted as ``disruption`` says (restarted after some epochs, crashed) emits
    what the uninterrupted run does, in the same epochs: nothing lost, nothing duplicated."""
    violation = deterministic(uninterrupted, recovered,
                              f"the uninterrupted run and the run {disruption}")
    if violation is None:
        return None
    return Violation("consistent after recovery", violation.epoch, violation.message)


def check_all(executor: Executor, case: Case, same_input: ArrivalLog | None = None
              ) -> list[Violation]:
    """Every property of ``executor`` on ``case``.

    The uninterrupted run must be append-only, exact and timely, and ordered. A *challenger*
    run must then give the same output: :meth:`Executor.variant` (another configuration), on
    ``same_input`` when given (a log with the same INPUT), disrupted as ``case`` is (restarts,
    a crash). When it agrees, determinism and consistency after recovery hold at once; when it
    does not, one run per difference says which property failed."""
    plain = case.uninterrupted()
    reference = list(run_eowc(case.query, case.log, case.convention))
    watermarks = watermark_sequence(case.query, case.log, case.convention)
    output = executor.emissions(plain)
    found = [append_only(output, reference), exact_and_timely(output, reference, watermarks),
             ordered(case.query, case.convention, output)]
    again = executor.variant()
    challenger = case.with_log(same_input) if same_input is not None else case
    if deterministic(output, again.emissions(challenger), "") is not None:
        found.extend(_blame(executor, case, same_input, output, reference, watermarks))
    return [v for v in found if v is not None]


def _blame(executor: Executor, case: Case, same_input: ArrivalLog | None,
           output: list[Emission], reference: list[Emission], watermarks: Sequence[float]
           ) -> list[Violation]:
    """Which property the challenger run of :func:`check_all` broke, one run per candidate:
    the variant configuration, the same-INPUT log, the disruption."""
    plain, again = case.uninterrupted(), executor.variant()
    runs = "two runs" if again is executor else f"runs of {executor.name} and {again.name}"
    found = [deterministic(output, again.emissions(plain), runs)]
    if same_input is not None:
        found.append(deterministic(output, executor.emissions(plain.with_log(same_input)),
                                   "a log and its same-INPUT variant"))
    if case.disrupted:
        what = case.disruption()
        recovered = executor.emissions(case)
        violation = (consistent_after_recovery(output, recovered, what)
                     or append_only(recovered, reference)
                     or exact_and_timely(recovered, reference, watermarks))
        if violation is not None:
            found.append(Violation("consistent after recovery", violation.epoch,
                                   violation.message if violation.prop ==
                                   "consistent after recovery" else f"the run {what}: {violation}"))
    if not any(found):  # only the combination differs
        found.append(deterministic(output, again.emissions(
            case.with_log(same_input) if same_input is not None else case),
            f"{runs}, {case.disruption()}, on a same-INPUT variant"))
    return [v for v in found if v is not None]
