"""Deliberately broken output (output mutants): the in-process executors' output changed the
way a real bug would change it, to check each property check and ``eowc verify``'s shrinking
on a known failure. They assume the query's last output column is the event time. The bugs
injected into the executors' own logic are the zoo of :mod:`eowc.verify.mutants`."""

from __future__ import annotations

from collections.abc import Callable

from eowc.semantics.engines.interpreter import Emission
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.verify.executors import Case, InProcessExecutor

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
    """Each epoch's rows latest event time first, as one stream (the partitions an EOWC sort
    names are dropped: each is ordered on its own, and reversing an epoch reorders only those
    with two rows in it)."""
    return [Emission(e.epoch, e.row) for e in sorted(out, key=lambda e: (e.epoch, -e.row[-1]))]


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
