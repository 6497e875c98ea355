"""Deliberately broken executors (mutants): the in-process executors with their output changed
the way a real bug would change it. The property checks and ``eowc verify`` must catch each
with the property it breaks. They assume the query's last output column is the event time."""

from __future__ import annotations

from collections.abc import Callable

from semantics.arrival import ArrivalLog
from semantics.interpreter import Emission
from verify.executors import Case, InProcessExecutor

Change = Callable[[list[Emission], ArrivalLog, tuple[int, ...]], list[Emission]]


class Mutant(InProcessExecutor):
    """The in-process executors with their output broken by ``change(emissions, log,
    restarts)``."""

    def __init__(self, name: str, change: Change) -> None:
        self.name, self.change = name, change

    def emissions(self, case: Case) -> list[Emission]:
        return self.change(super().emissions(case), case.log, case.restarts())


def _early(out: list[Emission], log: ArrivalLog, restarts: tuple[int, ...]) -> list[Emission]:
    """Every row one epoch before it may be emitted."""
    return [Emission(max(e.epoch - 1, 0), e.row) for e in out]


def _drops_ties(out: list[Emission], log: ArrivalLog, restarts: tuple[int, ...]
                ) -> list[Emission]:
    """One row per event time (a cache that resumes after the last drained key)."""
    seen: set[int] = set()
    kept = []
    for e in out:
        if e.row[-1] not in seen:
            seen.add(e.row[-1])
            kept.append(e)
    return kept


def _duplicates(out: list[Emission], log: ArrivalLog, restarts: tuple[int, ...]
                ) -> list[Emission]:
    """The epoch before a restart emitted again after it."""
    for k in restarts:
        out = out + [Emission(k + 1, e.row) for e in out if e.epoch == k]
    return out


def _unordered(out: list[Emission], log: ArrivalLog, restarts: tuple[int, ...]
               ) -> list[Emission]:
    """Each epoch's rows latest event time first."""
    return sorted(out, key=lambda e: (e.epoch, -e.row[-1]))


def _assumes_sorted_epochs(out: list[Emission], log: ArrivalLog, restarts: tuple[int, ...]
                          ) -> list[Emission]:
    """Drops a row that arrives before a row with a smaller event time of its epoch (an
    executor that assumes each epoch arrives sorted): right on sorted epochs only."""
    dropped = {event.row for epoch in log.epochs for i, event in enumerate(epoch)
               if any(later.row[-1] < event.row[-1] for later in epoch[i + 1:])}
    return [e for e in out if e.row not in dropped]


EarlyByOneEpoch = Mutant("early", _early)
DropsEqualTimestamps = Mutant("drops-ties", _drops_ties)
DuplicatesAfterRestart = Mutant("duplicates", _duplicates)
Unordered = Mutant("unordered", _unordered)
AssumesSortedEpochs = Mutant("assumes-sorted", _assumes_sorted_epochs)




# ------------------------------------------------------- broken partitioned executors
# Bugs inside the executors of executors.partitioned (not in their output): each subclass
# changes one decision the way a plausible bug would.

class _ProcessorMutant(InProcessExecutor):
    """The in-process driver running ``make(plan)`` (``make(query, convention)`` when
    ``of_query``) instead of the right executor."""

    def __init__(self, name: str, make: Callable[..., object], of_query: bool = False) -> None:
        self.name, self.make, self.of_query = name, make, of_query

    def emissions(self, case: Case) -> list[Emission]:
        from executors.driver import run_in_process
        from executors.processors import executor_plan
        if self.of_query:
            processor = self.make(case.query, case.convention)
        else:
            processor = self.make(executor_plan(case.query, case.convention))
        return run_in_process(case.query, case.log, case.convention,
                              restart_after=case.restarts(), processor=processor).emissions


def _over_ignoring_the_frame(plan):  # noqa: ANN001, ANN202
    """An OverWindow that emits a row once its own ORDER BY value is complete, without waiting
    for the last row of its frame (LEAD's, ``1 FOLLOWING``'s)."""
    from executors.partitioned import EowcOverWindow
    from executors.processors import Emit
    from semantics.triggers import time_is_complete

    class Mutated(EowcOverWindow):
        def release(self, partitions, watermark):  # noqa: ANN001, ANN202
            over = self.operator
            for p in partitions.values():
                while p.pending and time_is_complete(over.order_value(p.rows[p.emitted]),
                                                     watermark, self.plan.convention):
                    i = p.emitted
                    row = p.rows[i] + over.results(p.rows, p.keys, i, (p.dropped, p.dropped_keys))
                    p.emitted += 1
                    yield Emit(self.plan.compiled.above(row),
                               (p.sort_keys[i], over.partition(p.rows[i])))
    return Mutated(plan)


def _session_without_merging(plan):  # noqa: ANN001, ANN202
    """A session executor that closes a session when its *first* row plus the gap is complete
    (it forgets to extend the session by its later rows)."""
    from executors.partitioned import EowcSession
    from semantics.windows import Window

    class Mutated(EowcSession):
        def init(self, handle):  # noqa: ANN001, ANN202
            super().init(handle)
            rule = self.rule
            gap = self.session.gap
            self.rule = type(rule)(rule.bound, lambda w, wm: rule.is_complete(
                Window(w.start, w.start + gap), wm), rule.describe)
    return Mutated(plan)


def _top_n_on_first_rows(plan):  # noqa: ANN001, ANN202
    """A TopN that keeps the first ``limit`` rows to arrive rather than the top ones."""
    from executors.partitioned import EowcTopN
    from semantics.top_n import TopNPartition

    class FirstRows(TopNPartition):
        def add(self, compiled, row):  # noqa: ANN001, ANN202
            if len(self.rows) < compiled.limit:
                self.rows.append(row)
                self.keys.append(compiled.sort_key(row))

    class Mutated(EowcTopN):
        def handle_rows(self, key, arrivals, watermark):  # noqa: ANN001, ANN202
            if self.partition.get() is None:
                self.partition.update(FirstRows())
            yield from super().handle_rows(key, arrivals, watermark)
    return Mutated(plan)


def _join_judged_by_the_wrong_side(query, convention):  # noqa: ANN001, ANN202
    """A four-step join that decides whether a row can still meet a partner by the watermark
    of its own side's column instead of the other side's."""
    from executors.interval_join import IntervalJoin
    from executors.joins import EowcJoin

    class SidesSwapped(IntervalJoin):
        def bind(self, handle):  # noqa: ANN001, ANN202
            super().bind(handle)
            self.left.other, self.right.other = self.right.other, self.left.other

    class Mutated(EowcJoin):
        def _join(self, plan, left, right):  # noqa: ANN001, ANN202
            join = SidesSwapped(plan, left, right, self.convention, f"join{len(self.joins)}")
            self.joins.append(join)
            return join
    return Mutated(query, convention)


OverIgnoresItsFrame = _ProcessorMutant("over-ignores-frame", _over_ignoring_the_frame)
SessionWithoutMerging = _ProcessorMutant("session-no-merge", _session_without_merging)
TopNOfFirstArrivals = _ProcessorMutant("top-n-first-arrivals", _top_n_on_first_rows)
JoinJudgedByTheWrongSide = _ProcessorMutant("join-wrong-side", _join_judged_by_the_wrong_side,
                                            of_query=True)
