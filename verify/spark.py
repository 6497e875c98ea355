"""The Spark executors behind :class:`~eowc.verify.executors.Executor`: the eowc executors on Spark
(:class:`SparkExecutor`) and Spark's own operators (:class:`SparkNativeExecutor`).

A case runs in a fresh temporary work directory holding ``query.sql`` (the case's script),
``events.jsonl`` (its log, :func:`eowc.semantics.ir.arrival.log_lines`) and ``run/`` (the checkpoint
and the exactly-once sink of :mod:`eowc.executors.spark.runner`), on the shared Spark session of
this process, without ``close`` (the reference of :func:`eowc.verify.properties.check_all` is run
without it). The directory is removed after a successful run and kept after a failed one
(:class:`SparkCaseError` names it).

Disruptions (:class:`~eowc.verify.executors.Case`):

* a **restart** after epoch ``k`` stops the query once epoch ``k``'s output is committed and
  starts it again on the same checkpoint, in the same session: the source's ``max_epochs`` is
  ``k + 1`` (with ``pacing=settle`` that includes epoch ``k``'s settle batch, where the windows
  it completes close), then the rest. A restart after the last epoch has nothing to restart
  and is skipped;
* a **crash** is :func:`eowc.executors.spark.crash.run_with_crash`: a child process runs the query
  and is killed with SIGKILL (its whole process tree) at the crash point; the query recovers
  on the same checkpoint in this session. Restarts before the crash epoch run in this session
  before the crash run; with restarts at or after it, the crash run is given the log up to the
  first of them (the same batches as ``max_epochs``) and the remaining restarts run in this
  session. The child's session gets the executor's shuffle partition count through
  ``$EOWC_SPARK_CONF`` (:func:`eowc.executors.spark.session.extra_conf`) and its source
  partitions on its command line.

Which crash points a run is certain to reach: :func:`eowc.verify.crashes.reachable_crashes`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from eowc.executors.choice import processor_for
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.spark import NATIVE_CONVENTION
from eowc.executors.spark.crash_points import CrashPoint, CrashSchedule
from eowc.executors.spark.native import NoNativeOperator, check_native, collect_native, start_native
from eowc.executors.spark.session import session_setting
from eowc.semantics.engines.interpreter import Emission
from eowc.semantics.errors import EowcError, RunError
from eowc.semantics.ir.arrival import ArrivalLog, log_lines
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.emit_modes import not_final_in_spark
from eowc.verify.cases import Case, Crash, Executor, QueryRefused

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The shuffle partition count and source parallelism of :meth:`SparkExecutor.variant`.
VARIANT_SHUFFLE_PARTITIONS = 5
VARIANT_SOURCE_PARTITIONS = 3
#: The setting that fixes the number of state store partitions of a new checkpoint.
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
#: The environment variable with extra settings of a session (read by the crash run's children).
CONF_ENV_VAR = "EOWC_SPARK_CONF"


class SparkCaseError(RunError):
    """A Spark run of a case failed; ``workdir`` (named in the message) is kept: the script,
    the log, the checkpoint, the sink and, for a crash run, the children's logs."""

    def __init__(self, message: str, workdir: Path) -> None:
        self.workdir = workdir
        super().__init__(message)


class NotSparkConvention(EowcError, ValueError):
    """``spark-native`` was given a case under another convention than ``spark``."""


# ---------------------------------------------------------------------------------------------
# Shared plumbing


@contextlib.contextmanager
def _case_directory(executor: str, case: Case) -> Iterator[Path]:
    """A fresh temporary directory, removed when the block succeeds; when it fails, kept and
    named in a :class:`SparkCaseError` (chained to the failure)."""
    directory = Path(tempfile.mkdtemp(prefix=f"eowc-verify-{executor.split('[')[0]}-"))
    try:
        yield directory
    except Exception as error:
        raise SparkCaseError(f"{executor}: the run of the case ({case.convention.value} convention, "
                             f"{len(case.log.epochs)} epochs, {case.disruption()}) failed: {error}; "
                             f"its work directory {directory} is kept", directory) from error
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def _children_shuffle_partitions(count: int | None) -> Iterator[None]:
    """Child processes started in the block (the crash run's) start their sessions with
    ``count`` shuffle partitions: ``$EOWC_SPARK_CONF`` with the setting added (it overrides an
    earlier one), restored afterwards. This process's session is started already."""
    if count is None:
        yield
        return
    previous = os.environ.get(CONF_ENV_VAR)
    os.environ[CONF_ENV_VAR] = f"{previous or ''} {SHUFFLE_PARTITIONS}={count}".strip()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CONF_ENV_VAR, None)
        else:
            os.environ[CONF_ENV_VAR] = previous


def _write_events(path: Path, log: ArrivalLog, case: Case) -> str:
    path.write_text("".join(line + "\n" for line in log_lines(log, case.parsed.sources)),
                    encoding="utf-8")
    return str(path)


def _write_case(case: Case, directory: Path) -> tuple[str, str]:
    """``query.sql`` and ``events.jsonl`` of ``case`` in ``directory``; their paths."""
    query = directory / "query.sql"
    query.write_text(case.script, encoding="utf-8")
    return str(query), _write_events(directory / "events.jsonl", case.log, case)


def _stops(case: Case) -> list[int]:
    """The epochs after which the run stops and starts again (restarts after the last epoch,
    which leave nothing to restart, left out), in order."""
    last = len(case.log.epochs) - 1
    return sorted({k for k in case.restart_after if k < last})


def _settings_name(base: str, **settings: int | None) -> str:
    given = [f"{key}={value}" for key, value in settings.items() if value is not None]
    return f"{base}[{','.join(given)}]" if given else base


# ---------------------------------------------------------------------------------------------
# The eowc executors on Spark


class SparkExecutor:
    """The eowc executors on Spark (``master``): ``transformWithStateInPandas`` with RocksDB
    state and event-time timers over the ``eowc_arrival_log`` source (``pacing=settle``), read
    back epoch by epoch (:mod:`eowc.executors.spark.runner`).

    ``shuffle_partitions`` (``spark.sql.shuffle.partitions``, so the number of state store
    partitions) and ``source_partitions`` (the source's input partitions per batch) default to
    the session's (2) and the source's (2); in the child processes of a crash run the source
    reads with its default (see the module documentation). Spark keeps the watermark in
    milliseconds (``time_resolution``)."""

    time_resolution = MICROS_PER_MILLI
    #: The engine's choices the executors run with (``--sort-partitions``).
    options: ExecutorOptions = DEFAULT_OPTIONS

    def __init__(self, master: str = "local[2]", shuffle_partitions: int | None = None,
                 source_partitions: int | None = None) -> None:
        for what, value in (("shuffle_partitions", shuffle_partitions),
                            ("source_partitions", source_partitions)):
            if value is not None and value < 1:
                raise ValueError(f"{what} must be at least 1, got {value}")
        self.master = master
        self.shuffle_partitions = shuffle_partitions
        self.source_partitions = source_partitions
        self.name = _settings_name("spark", shuffle=shuffle_partitions, partitions=source_partitions)

    def __repr__(self) -> str:
        return f"SparkExecutor({self.master!r}, {self.shuffle_partitions}, {self.source_partitions})"

    def variant(self) -> Executor:
        """The same executor with :data:`VARIANT_SHUFFLE_PARTITIONS` shuffle partitions and
        :data:`VARIANT_SOURCE_PARTITIONS` source partitions (2 and 2 if it already has those)."""
        shuffle, source = VARIANT_SHUFFLE_PARTITIONS, VARIANT_SOURCE_PARTITIONS
        if (self.shuffle_partitions, self.source_partitions) == (shuffle, source):
            shuffle, source = 2, 2
        variant = SparkExecutor(self.master, shuffle, source)
        variant.options = self.options
        return variant

    def emissions(self, case: Case) -> list[Emission]:
        """Run ``case`` (its restarts and crash included) and read back what was emitted.
        A query the executors cannot run is the reference's PlanError, before Spark starts;
        a failed run is a :class:`SparkCaseError` naming the kept work directory."""
        from eowc.executors.spark.runner import collect_run, open_spark

        processor_for(case.query, case.convention, options=self.options)  # a PlanError here
        spark = open_spark(self.master)
        with _case_directory(self.name, case) as directory:
            query, events = _write_case(case, directory)
            run = directory / "run"
            # A new checkpoint keeps the count of its first start; a restart reads it back.
            with session_setting(spark, SHUFFLE_PARTITIONS, self.shuffle_partitions):
                if case.crash is None:
                    self._segments(spark, case, query, events, run, _stops(case), last=True)
                else:
                    self._crashed(spark, case, case.crash, query, directory, run)
            return collect_run(case.log, run).emissions

    def _segments(self, spark: SparkSession, case: Case, query: str, events: str, run: Path,
                  stops: list[int], last: bool) -> None:
        """Run to the end of each epoch of ``stops`` in turn, then (``last``) to the end."""
        from eowc.executors.spark.runner import start_query

        for stop in [*stops, *([None] if last else [])]:
            start_query(spark, query, events, case.convention, run,
                        max_epochs=None if stop is None else stop + 1,
                        partitions=self.source_partitions, options=self.options)

    def _crashed(self, spark: SparkSession, case: Case, crash: Crash, query: str, directory: Path,
                 run: Path) -> None:
        """Restarts before the crash epoch in this session; the crashed run in a child process,
        over the log up to the first later restart if there is one, recovered here; the rest
        here again."""
        from eowc.executors.spark.crash import run_with_crash

        stops = _stops(case)
        before = [k for k in stops if k < crash.epoch]
        after = [k for k in stops if k >= crash.epoch]
        events = str(directory / "events.jsonl")
        self._segments(spark, case, query, events, run, before, last=False)
        child_events = events
        if after:  # the child stops after epoch after[0], as max_epochs = after[0] + 1 would
            child_events = _write_events(directory / f"events-to-epoch-{after[0]}.jsonl",
                                         ArrivalLog(case.log.epochs[:after[0] + 1]), case)
        schedule = CrashSchedule.at_epoch(CrashPoint(crash.point), crash.epoch, crash.settle)
        with _children_shuffle_partitions(self.shuffle_partitions):
            run_with_crash(query, child_events, case.convention, run, schedule, master=self.master,
                           partitions=self.source_partitions, options=self.options,
                           recover_in=spark)
        if after:
            self._segments(spark, case, query, events, run, after[1:], last=True)


# ---------------------------------------------------------------------------------------------
# Spark's own operators


class SparkNativeExecutor:
    """Spark's own streaming operators (:mod:`eowc.executors.spark.native`: append-mode window
    aggregation), to judge Spark itself. It follows Spark's boundary rules, the ``spark``
    convention: a case under another convention is :class:`NotSparkConvention`. A query Spark
    has no operator for is :class:`~eowc.executors.spark.native.NoNativeOperator` (before Spark
    starts). Restarts run as for :class:`SparkExecutor`; a crash case is a ValueError (the
    crash runner runs the eowc executors)."""

    #: Spark's own operators follow Spark's boundary rules (see
    #: :func:`~eowc.verify.cases.bound_convention`).
    convention = NATIVE_CONVENTION

    def __init__(self, master: str = "local[2]", shuffle_partitions: int | None = None,
                 at_once: bool = False) -> None:
        if shuffle_partitions is not None and shuffle_partitions < 1:
            raise ValueError(f"shuffle_partitions must be at least 1, got {shuffle_partitions}")
        self.master = master
        self.shuffle_partitions = shuffle_partitions
        #: Also run a query whose rows Spark's append mode emits at once
        #: (:func:`~eowc.semantics.rules.emit_modes.not_final_in_spark`): its rows are Spark's
        #: own, not EOWC rows, for pinning what Spark does; refused otherwise.
        self.at_once = at_once
        self.name = _settings_name("spark-native", shuffle=shuffle_partitions)

    def __repr__(self) -> str:
        return f"SparkNativeExecutor({self.master!r}, {self.shuffle_partitions})"

    def variant(self) -> Executor:
        """The same executor with :data:`VARIANT_SHUFFLE_PARTITIONS` shuffle partitions (2 if
        it already has those)."""
        shuffle = VARIANT_SHUFFLE_PARTITIONS
        return SparkNativeExecutor(self.master, 2 if self.shuffle_partitions == shuffle else shuffle,
                                   self.at_once)

    def emissions(self, case: Case) -> list[Emission]:
        """Run ``case`` on Spark's operators (restarts included) and read back what they
        emitted, in the reference's order within an epoch."""
        from eowc.executors.spark.runner import open_spark

        if case.convention is not self.convention:
            raise NotSparkConvention(
                f"{self.name} follows Spark's own boundary rules, the {self.convention.value} "
                f"convention only; this case uses the {case.convention.value} convention (use the "
                f"{self.convention.value} convention, or "
                f"the spark or inprocess executor)")
        try:
            check_native(case.query)
        except NoNativeOperator as error:  # Spark has no operator for the query
            raise QueryRefused(str(error)) from None
        at_once = not_final_in_spark(case.query.plan)
        if at_once is not None and not self.at_once:
            raise QueryRefused(at_once)
        if case.crash is not None:
            raise ValueError(f"{self.name} cannot be crashed (the crash runner runs the eowc "
                             f"executors); this case {case.disruption()}")
        spark = open_spark(self.master)
        try:
            with _case_directory(self.name, case) as directory:
                query, events = _write_case(case, directory)
                run = directory / "run"
                with session_setting(spark, SHUFFLE_PARTITIONS, self.shuffle_partitions):
                    for stop in [*_stops(case), None]:
                        start_native(spark, query, events, run,
                                     max_epochs=None if stop is None else stop + 1)
                return collect_native(case.query, run).emissions
        except SparkCaseError as error:
            if isinstance(error.__cause__, NoNativeOperator):  # found while compiling
                raise QueryRefused(str(error.__cause__)) from None
            raise
