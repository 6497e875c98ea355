"""The backends that run a verification :class:`~eowc.verify.cases.Case` behind the
:class:`~eowc.verify.cases.Executor` protocol (both defined in :mod:`eowc.verify.cases` and
re-exported here).

Backends: :class:`ReferenceExecutor` (the reference itself: it must pass every property, a check
on the checks), :class:`InProcessExecutor` (the executors on the in-process driver), the
Spark executors of :mod:`eowc.verify.spark`, and your own engine (:mod:`eowc.verify.external`: a Python
object or any program, speaking rows as ``eowc run`` prints them); :func:`executor_named` picks
one by name.
"""

from __future__ import annotations

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.semantics.engines.interpreter import Emission, run_eowc
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import (
    CRASH_POINTS,
    Case,
    Crash,
    Executor,
    QueryRefused,
    bound_convention,
    parsed,
    time_resolution,
)
from eowc.verify.external import CommandEngine, ExternalExecutor, PythonEngine
from eowc.verify.flink import FlinkNativeExecutor
from eowc.verify.spark import SparkExecutor, SparkNativeExecutor

__all__ = ["CRASH_POINTS", "EXECUTORS", "PYTHON_PREFIX", "Case", "Crash", "Executor", "InProcessExecutor",
           "ReferenceExecutor", "bound_convention", "chosen_executor", "command_executor",
           "executor_named", "parsed", "time_resolution"]


class ReferenceExecutor:
    """The reference ``Q'(INPUT, W)`` itself: every property must hold for it."""

    name = "reference"

    def emissions(self, case: Case) -> list[Emission]:
        return list(run_eowc(case.query, case.log, case.convention, ties=case.ties))

    def variant(self) -> Executor:
        return self


class InProcessExecutor:
    """The executors of :mod:`eowc.executors.processors` on the in-process driver; a crash is a
    restart after the epoch before it. Like Spark, whose batches it plays, it keeps the
    watermark in milliseconds."""

    name = "inprocess"
    time_resolution = MICROS_PER_MILLI
    #: The engine's choices the executors run with (``--sort-partitions``).
    options: ExecutorOptions = DEFAULT_OPTIONS

    def emissions(self, case: Case) -> list[Emission]:
        try:
            return run_in_process(case.query, case.log, case.convention,
                                  restart_after=case.restarts(), ties=case.ties,
                                  options=self.options).emissions
        except PlanError as error:  # the executors cannot run it under this convention
            raise QueryRefused(str(error)) from None

    def variant(self) -> Executor:
        return self

    @staticmethod
    def refusal(query: Query, convention: Convention) -> str | None:
        """Why the executors cannot run ``query`` under ``convention`` (None: they can)."""
        try:
            processor_for(query, convention)
        except PlanError as error:
            return str(error)
        return None


#: The executors ``eowc verify --executor`` knows by name (and ``python:MODULE:ATTR``).
EXECUTORS = ("inprocess", "spark", "spark-native", "flink-native", "reference")
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
        return SparkExecutor(master) if name == "spark" else SparkNativeExecutor(master)
    if name == "flink-native":
        return FlinkNativeExecutor()
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
