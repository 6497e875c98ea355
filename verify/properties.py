"""The properties every EOWC executor must have, each a named check with a precise failure
message, run against any executor behind :class:`~eowc.verify.executors.Executor`.

An executor's output is its emissions: each result row tagged with the epoch after which it
was emitted (:class:`~eowc.semantics.engines.interpreter.Emission`), in emission order. The reference is
``Q'(INPUT, W)`` of :func:`eowc.semantics.engines.interpreter.run_eowc`. Each check returns None when the
property holds, else a :class:`Violation`:

* :func:`append_only`: no result row is emitted more often than it exists (a row emitted
  twice, or again after a restart, is a retraction-free change of the result);
* :func:`exact_and_timely`: after every epoch the rows emitted so far are exactly the
  reference's, nothing missing (emitted later) and nothing extra (emitted sooner);
* :func:`ordered`: within an epoch and a partition of the executor, an EOWC sort's rows come
  out non-decreasing in the watermark column, in the order they were emitted;
* :func:`deterministic`: two runs (or two logs with the same INPUT) give the same output.

:func:`check_all` runs them on a :class:`~eowc.verify.executors.Case` and its challenger (another
configuration, a log with the same INPUT, the case's restarts and crash), which adds the
properties *deterministic* and *consistent after recovery* (a disrupted run gives the
uninterrupted output: nothing lost, nothing duplicated, exact epoch by epoch).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from eowc.semantics.analysis.completion import CompletionRule, completion_rule
from eowc.semantics.analysis.operator_inputs import STATELESS
from eowc.semantics.engines.interpreter import Emission, watermark_sequence
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row, Schema
from eowc.semantics.ir.plan import Query, Scan, walk
from eowc.semantics.ir.values import format_timestamp, row_sort_key, to_external
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import Case, Executor, reference_run


@dataclass(frozen=True)
class Violation:
    """A property that failed: which, at which epoch (None: not tied to one), and why; with
    the case whose run shows it and the executor that ran it (a counterexample to replay)."""

    prop: str
    epoch: int | None
    message: str
    case: Case | None = field(default=None, compare=False, repr=False)
    executor: str | None = field(default=None, compare=False)
    #: The property the run itself broke (``exact and timely`` for a ``deterministic``
    #: violation shown by a run on a same-INPUT log); what shrinking preserves.
    observed: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        where = f" after epoch {self.epoch}" if self.epoch is not None else ""
        return f"{self.prop}{where}: {self.message}"


# ------------------------------------------------------------------------------ checks

def shown(row: Row, schema: Schema | None) -> str:
    """A row as a user reads it: its values in external form (timestamps as text), when the
    ``schema`` is known."""
    if schema is None:
        return str(row)
    return str(tuple(to_external(v, c.type) for c, v in zip(schema, row, strict=True)))


def _rows(rows: Counter, schema: Schema | None = None) -> str:
    listed = sorted(rows.elements(), key=row_sort_key)
    text = ", ".join(shown(row, schema) for row in listed[:5])
    return text + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")


def append_only(emissions: Sequence[Emission], reference: Sequence[Emission],
                schema: Schema | None = None) -> Violation | None:
    """No row is emitted more often than the reference ever emits it (rows shown in
    ``schema``'s external form when given, as in every check)."""
    allowed = Counter(e.row for e in reference)
    seen: Counter = Counter()
    for emission in emissions:
        seen[emission.row] += 1
        if seen[emission.row] > allowed[emission.row]:
            times = "once" if allowed[emission.row] == 1 else f"{allowed[emission.row]} times"
            return Violation("append-only", emission.epoch,
                             f"row {shown(emission.row, schema)} emitted again (the result holds "
                             f"it {times})"
                             if allowed[emission.row] else
                             f"row {shown(emission.row, schema)} emitted, but it is not in the result")
    return None


def exact_and_timely(emissions: Sequence[Emission], reference: Sequence[Emission],
                     watermarks: Sequence[float] | Callable[[], Sequence[float]],
                     schema: Schema | None = None) -> Violation | None:
    """After every epoch the cumulative output equals the reference's; the first epoch where
    it does not is reported with the rows that differ and the watermark in force
    (``watermarks``: after each epoch, or a function that computes them when needed)."""
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
            after = watermarks() if callable(watermarks) else watermarks
            mark = after[epoch] if epoch < len(after) else math.inf
            parts = [f"watermark after the epoch "
                     f"{format_timestamp(int(mark)) if math.isfinite(mark) else mark}"]
            if missing:
                parts.append(f"missing (emitted later or never): {_rows(missing, schema)}")
            if extra:
                parts.append(f"extra (emitted too soon or wrongly): {_rows(extra, schema)}")
            return Violation("exact and timely", epoch, "; ".join(parts))
    return None


@dataclass
class OrderedExtent:
    """What :func:`ordered` checked, over every run it was given: the rows, and the distinct
    (epoch, partition) runs of rows it compared (a partition that emits in several epochs
    counts once per epoch) and partitions."""

    rows: int = 0
    runs: int = 0
    partitions: set = field(default_factory=set)

    @property
    def compared(self) -> int:
        """The rows compared with one before them (of their epoch and partition): where the
        check can fail."""
        return self.rows - self.runs

    def __str__(self) -> str:
        return (f"{self.rows} rows in {len(self.partitions)} partition"
                f"{'' if len(self.partitions) == 1 else 's'}, {self.compared} of them after "
                f"a row of their partition and epoch")


def partition_of(emission: Emission) -> object:
    """The partition an executor says ``emission`` came from (``PartitionEmission.partition``
    of :mod:`eowc.executors.driver`), None where it names none: its whole output is one
    partition."""
    return getattr(emission, "partition", None)


def ordered(query: Query, convention: Convention, emissions: Sequence[Emission],
            extent: OrderedExtent | None = None) -> Violation | None:
    """Within each epoch, within each partition, an EOWC sort's rows come out non-decreasing
    in the watermark column, in the order the executor emitted them (the whole epoch is one
    partition for an executor that names none). For other queries there is nothing to check.
    What was checked is added to ``extent`` when given."""
    rule = sort_rule(query, convention)
    if rule is None:
        return None
    bound = rule.bound
    last: dict[tuple[int, object], Emission] = {}
    violation = None
    for current in emissions:
        where = (current.epoch, partition_of(current))
        previous = last.get(where)
        if previous is not None and violation is None and bound(current.row) < bound(previous.row):
            within = "" if where[1] is None else f" in partition {where[1]}"
            violation = Violation("ordered", current.epoch,
                                  f"row {shown(current.row, query.schema)} emitted{within} after "
                                  f"{shown(previous.row, query.schema)}, whose watermark "
                                  "column is larger")
        last[where] = current
    if extent is not None:
        extent.rows += len(emissions)
        extent.runs += len(last)
        extent.partitions.update(partition for _, partition in last)
    return violation


def sort_rule(query: Query, convention: Convention) -> CompletionRule | None:
    """The trigger of ``query`` if it is an EOWC sort (stateless steps over one source, no
    stateful operator, join or union), whose bound is the watermark column its rows come out
    ordered by; None for any other query."""
    if not all(isinstance(node, (Scan, *STATELESS)) for node in walk(query.plan)):
        return None
    return completion_rule(query, convention)


def deterministic(first: Sequence[Emission], second: Sequence[Emission], what: str,
                  schema: Schema | None = None) -> Violation | None:
    """Two runs that must agree (``what`` says which) emit the same rows in the same epochs."""
    a, b = Counter(first), Counter(second)
    if a == b:
        return None
    epoch = min(e.epoch for e in (a - b) + (b - a))
    only_first = Counter({e.row: n for e, n in (a - b).items() if e.epoch == epoch})
    only_second = Counter({e.row: n for e, n in (b - a).items() if e.epoch == epoch})
    return Violation("deterministic", epoch,
                     f"{what} differ: only in the first {_rows(only_first, schema) or 'nothing'}; "
                     f"only in the second {_rows(only_second, schema) or 'nothing'}")


def check_run(executor: Executor, case: Case, extent: OrderedExtent | None = None
              ) -> list[Violation]:
    """The properties one run of ``case`` (disruptions included) shows against the reference
    of its log: append-only, exact and timely, ordered (what it checked added to ``extent``).
    Each violation carries the case."""
    reference = list(reference_run(case).emissions)
    output = executor.emissions(case)
    schema = case.query.schema
    found = [append_only(output, reference, schema),
             ordered(case.query, case.convention, output, extent),
             exact_and_timely(output, reference,
                              lambda: watermark_sequence(case.query, case.log, case.convention),
                              schema)]
    return [replace(v, case=case, executor=executor.name, observed=v.prop)
            for v in found if v is not None]


def check_all(executor: Executor, case: Case, same_input: ArrivalLog | None = None,
              extent: OrderedExtent | None = None) -> list[Violation]:
    """Every property of ``executor`` on ``case``.

    The uninterrupted run must be append-only, exact and timely, and ordered
    (:func:`check_run`; what *ordered* checked on it and on the challenger is added to
    ``extent``). Then a *challenger* run must be too: :meth:`Executor.variant`
    (another configuration), on ``same_input`` when given (a log with the same INPUT), disrupted
    as ``case`` is (restarts, a crash). Every run is judged against the reference of its own
    log, and logs with the same INPUT have the same reference, so a challenger that passes
    proves determinism and consistency after recovery at once; one that fails is blamed by
    one run per difference (:func:`_blame`)."""
    plain = case.uninterrupted()
    found = check_run(executor, plain, extent)
    if found:
        return found
    challenger = case.with_log(same_input) if same_input is not None else case
    if not check_run(executor.variant(), challenger, extent):
        return []
    return _blame(executor, case, same_input)


def _blame(executor: Executor, case: Case, same_input: ArrivalLog | None) -> list[Violation]:
    """The properties a failed challenger of :func:`check_all` breaks: each difference from
    the passing uninterrupted run tried alone (another configuration or a second run, the
    same-INPUT log, the disruption), else the combination."""
    plain, again = case.uninterrupted(), executor.variant()
    candidates = [("deterministic", f"{again.name} (another configuration)" if again is not
                   executor else "a second run of the same log", again, plain)]
    if same_input is not None:
        candidates.append(("deterministic", "a log with the same INPUT", executor,
                           plain.with_log(same_input)))
    if case.disrupted:
        candidates.append(("consistent after recovery", f"the run {case.disruption()}",
                           executor, case))
    found = []
    for prop, what, runner, candidate in candidates:
        found += [Violation(prop, v.epoch, f"{what}: {v}", candidate, runner.name, v.prop)
                  for v in check_run(runner, candidate)[:1]]
    if found:
        return found
    combined = case.with_log(same_input) if same_input is not None else case
    prop = "consistent after recovery" if case.disrupted else "deterministic"
    return [Violation(prop, v.epoch, f"{again.name}, {case.disruption()}, on a log with the "
                      f"same INPUT: {v}", combined, again.name, v.prop)
            for v in check_run(again, combined)[:1]]
