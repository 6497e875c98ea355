"""What is verified: a :class:`Case` (a query, a convention, an arrival log and the run's
disruptions), run by any :class:`Executor`, the one small protocol every backend implements.

Disruptions of a run:

* a **restart** after epoch ``k``: the executor stops once epoch ``k``'s output is committed and
  starts again from its state, every in-memory cache lost (``Case.restart_after``);
* a **crash** (:class:`Crash`): the run is killed at a point of one epoch's batch, the work of
  that batch not committed, and restarted from its last committed state. On Spark it is a real
  SIGKILL of the driver, the JVM and the Python workers (:mod:`eowc.executors.spark.crash`); an
  executor without a process to kill treats it as a restart after the epoch before.

Backends: :class:`ReferenceExecutor` (the reference itself: it must pass every property, a check
on the checks), :class:`InProcessExecutor` (the executors on the in-process driver), the
Spark executors of :mod:`eowc.verify.spark`, and your own engine (:mod:`eowc.verify.external`: a Python
object or any program, speaking rows as ``eowc run`` prints them); :func:`executor_named` picks
one by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from eowc.semantics.engines.interpreter import Emission, run_eowc
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import Convention
from eowc.verify.external import CommandEngine, ExternalExecutor, PythonEngine

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
    ``convention``, the arrival ``log``, and the run's disruptions."""

    script: str
    convention: Convention
    log: ArrivalLog
    restart_after: tuple[int, ...] = field(default=())
    crash: Crash | None = None

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


class Executor(Protocol):
    """Anything that runs an EOWC case: its emissions (each row tagged with the epoch after
    which it was emitted), in emission order, after the whole log. Internal rows: your own
    engine speaks the protocol of :mod:`eowc.verify.external` instead (rows as ``eowc run`` prints
    them), and :class:`~eowc.verify.external.ExternalExecutor` makes it one of these.

    An executor may say, as ``time_resolution``, the finest step of event time (microseconds)
    it keeps exactly; generated cases then nudge rows off boundaries by that much, not by the
    convention's unit (see :attr:`~eowc.semantics.rules.triggers.Convention.unit`)."""

    name: str

    def emissions(self, case: Case) -> list[Emission]: ...

    def variant(self) -> Executor:
        """The same executor configured differently in ways that must not change its output
        (Spark: another shuffle partition count and source parallelism); itself if none."""
        ...


class ReferenceExecutor:
    """The reference ``Q'(INPUT, W)`` itself: every property must hold for it."""

    name = "reference"

    def emissions(self, case: Case) -> list[Emission]:
        return list(run_eowc(case.query, case.log, case.convention))

    def variant(self) -> Executor:
        return self


class InProcessExecutor:
    """The executors of :mod:`eowc.executors.processors` on the in-process driver; a crash is a
    restart after the epoch before it. Like Spark, whose batches it plays, it keeps the
    watermark in milliseconds."""

    name = "inprocess"
    time_resolution = MICROS_PER_MILLI

    def emissions(self, case: Case) -> list[Emission]:
        from eowc.executors.driver import run_in_process
        return run_in_process(case.query, case.log, case.convention,
                              restart_after=case.restarts()).emissions

    def variant(self) -> Executor:
        return self


def time_resolution(executor: Executor) -> int:
    """The finest step of event time ``executor`` keeps exactly (a microsecond unless it says
    otherwise)."""
    return getattr(executor, "time_resolution", 1)


#: The executors ``eowc verify --executor`` knows by name (and ``python:MODULE:ATTR``).
EXECUTORS = ("inprocess", "spark", "spark-native", "reference")
#: How ``--executor`` names a Python object with the protocol of :mod:`eowc.verify.external`.
PYTHON_PREFIX = "python:"


def executor_named(name: str, master: str = "local[2]") -> Executor:
    """The executor called ``name``: one of :data:`EXECUTORS` (Spark ones on ``master``), or
    ``python:MODULE:ATTR``, your own engine in Python (:class:`~eowc.verify.external.PythonEngine`).
    A ValueError for another name; :class:`~eowc.verify.external.ExecutorFailed` naming what is
    wrong with a ``python:`` one (its module, its attribute)."""
    if name == "reference":
        return ReferenceExecutor()
    if name == "inprocess":
        return InProcessExecutor()
    if name in ("spark", "spark-native"):
        from eowc.verify.spark import SparkExecutor, SparkNativeExecutor
        return SparkExecutor(master) if name == "spark" else SparkNativeExecutor(master)
    if name.startswith(PYTHON_PREFIX):
        return ExternalExecutor(PythonEngine(name))
    raise ValueError(f"unknown executor {name!r}: expected one of {', '.join(EXECUTORS)}, or "
                     "python:MODULE:ATTR for your own engine in Python (or --executor-cmd "
                     "'COMMAND' for a program in any language)")


def chosen_executor(name: str | None, command: str | None, master: str = "local[2]",
                    epoch_timeout_s: float | None = None) -> Executor:
    """The executor of the command-line options ``--executor NAME`` (default ``inprocess``) or
    ``--executor-cmd COMMAND``, not both (a ValueError)."""
    if command is not None:
        if name is not None:
            raise ValueError(f"--executor {name} and --executor-cmd name two executors: give one")
        if not command.strip():
            raise ValueError("--executor-cmd: the command is empty")
        return command_executor(command, epoch_timeout_s)
    return executor_named(name or "inprocess", master)


def command_executor(command: str, epoch_timeout_s: float | None = None) -> Executor:
    """The program ``command`` speaking the line protocol of :mod:`eowc.verify.external`, allowed
    ``epoch_timeout_s`` seconds per epoch (default
    :data:`~eowc.verify.external.EPOCH_TIMEOUT_S`)."""
    engine = CommandEngine(command) if epoch_timeout_s is None \
        else CommandEngine(command, epoch_timeout_s)
    return ExternalExecutor(engine)
