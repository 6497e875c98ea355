"""What is verified: a :class:`Case` (a query, a convention, an arrival log and the run's
disruptions), and :class:`Executor`, the one small protocol every backend implements to run
one (the backends are in :mod:`eowc.verify.executors`).

Disruptions of a run:

* a **restart** after epoch ``k``: the executor stops once epoch ``k``'s output is committed and
  starts again from its state, every in-memory cache lost (``Case.restart_after``);
* a **crash** (:class:`Crash`): the run is killed at a point of one epoch's batch, the work of
  that batch not committed, and restarted from its last committed state. On Spark it is a real
  SIGKILL of the driver, the JVM and the Python workers (:mod:`eowc.executors.spark.crash`); an
  executor without a process to kill treats it as a restart after the epoch before.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from eowc.semantics.engines.interpreter import Emission, LateRow, run_eowc
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.plan import Query
from eowc.semantics.rules.triggers import Convention

#: Where in an epoch's batch a crash can happen (the points of :mod:`eowc.executors.spark.crash`).
CRASH_POINTS = ("before_batch", "mid_batch", "after_sink")


@dataclass(frozen=True)
class Crash:
    """Kill the run at ``point`` (one of :data:`CRASH_POINTS`) of epoch ``epoch``'s data batch
    (its rows) or, with ``settle``, its settle batch (where the windows it completes close)."""

    epoch: int
    point: str = "mid_batch"
    settle: bool = False

    def __post_init__(self) -> None:
        if self.point not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {self.point!r} (one of {', '.join(CRASH_POINTS)})")
        if self.epoch < 0:
            raise ValueError(f"a crash epoch is >= 0, got {self.epoch}")

    def __str__(self) -> str:
        return f"{self.point} of epoch {self.epoch}'s {'settle' if self.settle else 'data'} batch"


@dataclass(frozen=True)
class Case:
    """One run to verify: ``script`` (the sources and one EOWC query, as SQL text), the
    ``convention``, the arrival ``log``, and the run's disruptions; ``ties`` orders rows with
    equal ORDER BY values (``--ties``; None: the convention's default)."""

    script: str
    convention: Convention
    log: ArrivalLog
    restart_after: tuple[int, ...] = field(default=())
    crash: Crash | None = None
    ties: str | None = None

    @property
    def parsed(self) -> Script:
        return parsed(self.script)

    @property
    def query(self) -> Query:
        return self.parsed.query

    @property
    def disrupted(self) -> bool:
        return bool(self.restart_after) or self.crash is not None

    def disruption(self) -> str:
        """The disruptions in words: ``restarted after epochs [1, 3] and crashed at ...``."""
        parts = ([f"restarted after epochs {list(self.restart_after)}"] if self.restart_after
                 else []) + ([f"crashed at {self.crash}"] if self.crash else [])
        return " and ".join(parts) or "not disrupted"

    def uninterrupted(self) -> Case:
        """The same case with no restart and no crash."""
        return replace(self, restart_after=(), crash=None)

    def with_log(self, log: ArrivalLog) -> Case:
        return replace(self, log=log)

    def restarts(self) -> tuple[int, ...]:
        """The epochs after which the run starts again from committed state, a crash in epoch
        ``e`` counted as a restart after ``e - 1`` (nothing of epoch ``e`` was committed)."""
        crashed = () if self.crash is None or self.crash.epoch == 0 else (self.crash.epoch - 1,)
        return tuple(sorted({*self.restart_after, *crashed}))


@lru_cache(maxsize=256)
def parsed(script: str) -> Script:
    """The parsed script (cases of one query share it: parsing costs more than a run)."""
    return parse_script(script)


@dataclass(frozen=True)
class ReferenceRun:
    """What the reference makes of a case's log: ``Q'(INPUT, W)``'s emissions, and the rows
    left out of INPUT as late. Disruptions do not change it."""

    emissions: tuple[Emission, ...]
    late: tuple[LateRow, ...]


def reference_run(case: Case) -> ReferenceRun:
    """The reference's run of ``case``'s log (:class:`ReferenceRun`), made once for the
    checks and the coverage of a case and its disrupted variants."""
    return _reference_run(case.script, case.convention, case.log, case.ties)


def forget_reference_runs() -> None:
    """Drop the cached reference runs (a test that injects a bug into the reference)."""
    _reference_run.cache_clear()


@lru_cache(maxsize=4)
def _reference_run(script: str, convention: Convention, log: ArrivalLog, ties: str | None = None
                   ) -> ReferenceRun:
    late: list[LateRow] = []
    emitted = tuple(run_eowc(parsed(script).query, log, convention, late=late.append, ties=ties))
    return ReferenceRun(emitted, tuple(late))


class QueryRefused(EowcError):
    """An executor cannot run a case's query at all (an engine without the operator, a
    release without the API): ``reason`` says why, in the executor's own words. A verify run
    reports the query as not run, with the reason, and goes on with the others."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Executor(Protocol):
    """Anything that runs an EOWC case: its emissions (each row tagged with the epoch after
    which it was emitted), in emission order, after the whole log. Internal rows: your own
    engine speaks the protocol of :mod:`eowc.verify.external` instead (rows as ``eowc run`` prints
    them), and :class:`~eowc.verify.external.ExternalExecutor` makes it one of these.

    An executor may say, as ``time_resolution``, the finest step of event time (microseconds)
    it keeps exactly; generated cases then nudge rows off boundaries by that much, not by the
    convention's unit (see :attr:`~eowc.semantics.rules.triggers.Convention.unit`)."""

    name: str

    def emissions(self, case: Case) -> list[Emission]:
        """The case's emissions; :class:`QueryRefused` if it cannot run the query at all."""
        ...

    def variant(self) -> Executor:
        """The same executor configured differently in ways that must not change its output
        (Spark: another shuffle partition count and source parallelism); itself if none."""
        ...


def time_resolution(executor: Executor) -> int:
    """The finest step of event time ``executor`` keeps exactly (a microsecond unless it says
    otherwise)."""
    return getattr(executor, "time_resolution", 1)


def bound_convention(executor: Executor) -> Convention | None:
    """The one convention ``executor`` follows, if it is bound to one engine's boundary rules
    (Spark's own operators follow the spark convention), else None: it follows the case's."""
    return getattr(executor, "convention", None)
