"""Real crashes of a Spark run: stop the whole process tree with SIGKILL at a chosen point of a
chosen micro-batch, restart on the same checkpoint, and read back what the two runs wrote.

The crash points, the schedule and the hook the run calls at each point are
:mod:`eowc.executors.spark.crash_points` (re-exported here).

:func:`run_with_crash` runs a query in a child process with a schedule, waits for the marker,
SIGKILLs every process of the child's session (the driver's Python, the JVM, the Python worker
daemon and its workers, which PySpark puts in a process group of their own), checks that none
survives, runs the query again with no schedule on the same work directory (in a second child,
or in a session of the calling process), and reads the run back with
:func:`eowc.executors.spark.runner.collect_run`.

:func:`start_runs` runs queries in turn in one child with no schedule, for a crash that
leaves the driver alive (e.g. an executor JVM of a standalone cluster killed alone, see
:meth:`eowc.executors.spark.cluster.StandaloneCluster.kill_executor`), and reports where their
stateful tasks ran (:mod:`eowc.executors.spark.task_metrics`).

:func:`batch_refs` reads the batches of a ``pacing=settle`` run back from the records of the
sink's batch files (:mod:`eowc.executors.spark.sink`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from eowc.executors.driver import DriverRun
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.spark.crash_points import (
    BATCH_ID_PROPERTY,
    DEFAULT_HOLD_S,
    ENV_VAR,
    BatchRef,
    CrashPoint,
    CrashSchedule,
    batch_of_epoch,
    batch_ref_of_offset,
    checkpoint_reached,
    current_batch_id,
    epoch_of_batch,
    planned_batch,
)
from eowc.executors.spark.runner import collect_run, start_query
from eowc.executors.spark.session import spark_session
from eowc.executors.spark.sink import read_batches
from eowc.executors.spark.task_metrics import stateful_task_rows, write_task_rows
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import computing_under
from eowc.semantics.rules.triggers import Convention

__all__ = ["BATCH_ID_PROPERTY", "DEFAULT_HOLD_S", "ENV_VAR", "BatchRef", "CheckpointFiles", "CrashError",
           "CrashPoint", "CrashRun", "CrashSchedule", "QueryRun", "SparkChild", "batch_of_epoch",
           "batch_ref_of_offset", "batch_refs",
           "checkpoint_reached", "current_batch_id", "epoch_of_batch", "kill_session", "main",
           "planned_batch", "run_with_crash", "session_processes", "start_runs"]

_ROOT = Path(__file__).resolve().parents[2]


class CrashError(Exception):
    """A crash run did not go as scheduled (the child failed, hung, or a process survived)."""



def batch_refs(output_dir: str | os.PathLike[str]) -> dict[int, BatchRef]:
    """Batch id to :class:`BatchRef` for every batch the sink wrote to ``output_dir``: the
    first source's end offset in the batch's record (:class:`eowc.executors.spark.sink.BatchRecord`,
    kept however long the run; Spark's offset log keeps the last 100 batches only)."""
    refs = {}
    for batch in read_batches(output_dir):
        offsets = batch.record.offsets
        ref = batch_ref_of_offset(offsets[0] if offsets else None)
        if ref is not None:
            refs[batch.batch_id] = ref
    return refs


# ---------------------------------------------------------------------------------------------
# Processes: a child's session, killed as a whole


@dataclass(frozen=True)
class Proc:
    """One process as ``/proc/<pid>/stat`` describes it."""

    pid: int
    comm: str
    state: str
    pgid: int
    sid: int


def _processes() -> list[Proc]:
    result = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        result.append(Proc(int(entry), comm, fields[0], int(fields[2]), int(fields[3])))
    return result


def session_processes(sid: int) -> list[Proc]:
    """The live (not zombie) processes of session ``sid``. A child started with
    ``start_new_session=True`` leads a session that holds its whole tree: the driver JVM, the
    Python worker daemon (PySpark's daemon calls ``setpgid(0, 0)``, so it leads a process group
    of its own, but it stays in the session) and every worker."""
    return [p for p in _processes() if p.sid == sid and p.state not in ("Z", "X")]


def kill_session(sid: int, timeout: float = 60.0) -> list[Proc]:
    """SIGKILL every process group of session ``sid`` (the child's own group first) and every
    process left in it, until none is alive; returns the processes it found. CrashError if
    some survive ``timeout`` seconds."""
    seen: dict[int, Proc] = {}
    deadline = time.monotonic() + timeout
    while True:
        alive = session_processes(sid)
        if not alive:
            return sorted(seen.values(), key=lambda p: p.pid)
        if time.monotonic() > deadline:
            raise CrashError(f"processes of session {sid} survived SIGKILL: {alive}")
        for proc in alive:
            seen.setdefault(proc.pid, proc)
        for pgid in sorted({p.pgid for p in alive}, key=lambda g: g != sid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        for proc in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
        time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# The parent side


@dataclass(frozen=True)
class CheckpointFiles:
    """Which batches have an offset file, a commit file and a sink file; ``sink_inodes`` maps
    each sink file's batch id to its inode (a rewritten file gets a new one)."""

    offsets: tuple[int, ...]
    commits: tuple[int, ...]
    sink: tuple[int, ...]
    sink_inodes: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, workdir: Path) -> CheckpointFiles:
        """Read the listing of ``workdir``'s checkpoint and sink directories."""
        def numbered(directory: Path) -> tuple[int, ...]:
            if not directory.is_dir():
                return ()
            return tuple(sorted(int(e.name) for e in directory.iterdir() if e.name.isdigit()))

        output = workdir / "output"
        batches = read_batches(output) if output.is_dir() else []
        sink = tuple(batch.batch_id for batch in batches)
        inodes = {batch.batch_id: os.stat(batch.path).st_ino for batch in batches}
        return cls(numbered(workdir / "checkpoint" / "offsets"),
                   numbered(workdir / "checkpoint" / "commits"), sink, inodes)


@dataclass(frozen=True)
class CrashRun:
    """What :func:`run_with_crash` saw: ``run`` is the output read back after recovery.

    ``killed_returncode`` is the first child's return code (``-9``: SIGKILL), ``killed`` the
    processes of its session that were killed (``java`` among them), ``marker`` the record the
    hook wrote (point, batch id, pid of the process that reached it), ``at_kill`` the checkpoint
    and sink files right after the kill, ``seconds`` the wall-clock time of the two children."""

    run: DriverRun
    schedule: CrashSchedule
    marker: dict[str, Any]
    killed_returncode: int
    killed: tuple[Proc, ...]
    at_kill: CheckpointFiles
    seconds: tuple[float, float]
    logs: tuple[Path, Path] = field(default=(Path(), Path()))


def _child_command(query_path: str, events_path: str, convention: Convention, workdir: Path,
                   close: bool, master: str, partitions: int | None,
                   options: ExecutorOptions = DEFAULT_OPTIONS) -> list[str]:
    command = [sys.executable, "-m", "eowc.executors.spark.crash", "run", query_path, events_path,
               "--convention", convention.value, "--workdir", str(workdir), "--master", master,
               "--sort-partitions", str(options.sort_partitions)]
    if partitions is not None:
        command += ["--partitions", str(partitions)]
    return [*command, "--close"] if close else command


def _child_env(spec: str | None, local_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(ENV_VAR, None)
    if spec is not None:
        env[ENV_VAR] = spec
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    # Spark's scratch space (block manager, RocksDB working copies): a killed JVM cannot clean
    # it up, so keep it in the work directory instead of the system's temporary directory.
    env["SPARK_LOCAL_DIRS"] = str(local_dir)
    return env


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def _start(command: Sequence[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        return subprocess.Popen(list(command), env=env, cwd=str(_ROOT), stdin=subprocess.DEVNULL,
                                stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(condition: Callable[[], bool], child: subprocess.Popen[bytes], timeout: float,
              log: Path, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if child.poll() is not None:
            raise CrashError(f"the child exited with code {child.returncode} before {what}; "
                             f"its log ({log}) ends:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise CrashError(f"the child did not reach {what} within {timeout:.0f} s "
                             f"(killed); its log ({log}) ends:\n{_tail(log)}")
        time.sleep(0.2)


def run_with_crash(query_path: str, events_path: str, convention: Convention,
                   workdir: str | os.PathLike[str], schedule: CrashSchedule, close: bool = False,
                   master: str = "local[2]", timeout: float = 300.0,
                   partitions: int | None = None, options: ExecutorOptions = DEFAULT_OPTIONS,
                   recover_in: SparkSession | None = None) -> CrashRun:
    """Run the executor of ``query_path`` over ``events_path`` on Spark in a child process
    (its own session), SIGKILL its whole process tree when it reaches ``schedule``, then
    recover: run the query with no schedule on the same ``workdir`` (same checkpoint, same
    sink) to the end, and read back the output
    (:func:`eowc.executors.spark.runner.collect_run`).

    The recovery runs in a second child, or, given ``recover_in``, in that session of this
    process: a driver that did not crash (another JVM) takes the query over from the
    checkpoint, as a supervisor's restart would, without starting Spark again (about a third
    of a small crash test's time). ``timeout`` bounds each child (reaching the point,
    finishing); ``partitions`` is the source's input partitions per batch
    (:func:`~eowc.executors.spark.runner.arrival_frame`); both runs use ``options``.
    Raises :class:`CrashError` if the first child exits or hangs before the point, if a
    process survives the kill, or if the second child fails (a recovery in ``recover_in``
    raises what :func:`~eowc.executors.spark.runner.start_query` raises)."""
    directory = Path(workdir)
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / f"crash-{schedule.point.value}-{schedule.batch_id}.marker"
    marker.unlink(missing_ok=True)
    command = _child_command(query_path, events_path, convention, directory, close, master,
                             partitions, options)
    logs = (directory / "crash-child-1.log", directory / "crash-child-2.log")

    started = time.monotonic()
    first = _start(command, _child_env(schedule.arm(marker), directory / "spark-local-1"),
                   logs[0])
    try:
        _wait_for(marker.exists, first, timeout, logs[0],
                  f"{schedule.point.value} of batch {schedule.batch_id}")
    finally:
        killed = kill_session(first.pid)
        first.wait(timeout=60)
    first_seconds = time.monotonic() - started
    record = json.loads(marker.read_text(encoding="utf-8"))
    at_kill = CheckpointFiles.of(directory)

    started = time.monotonic()
    if recover_in is None:
        _run_to_the_end(command, directory / "spark-local-2", logs[1], timeout,
                        "the restarted child")
    else:
        start_query(recover_in, query_path, events_path, convention, directory, close=close,
                    partitions=partitions, options=options)
    run = collect_run(_log(query_path, events_path, convention), directory)
    return CrashRun(run, schedule, record, first.returncode, tuple(killed), at_kill,
                    (first_seconds, time.monotonic() - started), logs)


@dataclass(frozen=True)
class QueryRun:
    """A query to run on Spark over an arrival log, with its work directory (checkpoint and
    sink: read it back with :func:`eowc.executors.spark.runner.collect_run`)."""

    query: str
    events: str
    workdir: Path


class SparkChild:
    """A child process (a session of its own) running queries in turn in one Spark
    application, with no crash schedule: :func:`start_runs` starts it; use it as a context
    manager, which kills whatever is left of its session on exit."""

    def __init__(self, runs: Sequence[QueryRun], convention: Convention, master: str,
                 directory: Path, close: bool, settings: Mapping[str, str]) -> None:
        first, *others = runs
        command = _child_command(first.query, first.events, convention, first.workdir, close,
                                 master, None)
        for run in others:
            command += ["--then", run.query, run.events, str(run.workdir)]
        self.task_rows = directory / "task-rows.json"
        command += ["--task-rows", str(self.task_rows)]
        env = _child_env(None, directory / "spark-local")
        conf = " ".join(f"{key}={value}" for key, value in settings.items())
        env["EOWC_SPARK_CONF"] = " ".join(filter(None, [env.get("EOWC_SPARK_CONF"), conf]))
        self.log = directory / "child.log"
        self.process = _start(command, env, self.log)

    def __enter__(self) -> SparkChild:
        return self

    def __exit__(self, *exc: object) -> None:
        kill_session(self.process.pid)
        self.process.wait(timeout=60)

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``condition`` holds; CrashError if the child exits or ``timeout``
        seconds pass first."""
        _wait_for(condition, self.process, timeout, self.log, what)

    def finish(self, timeout: float) -> None:
        """Wait for the child to end; CrashError if it fails or does not end in ``timeout``
        seconds."""
        _wait_to_the_end(self.process, self.log, timeout, "the child")


def start_runs(runs: Sequence[QueryRun], convention: Convention, master: str,
               directory: str | os.PathLike[str], close: bool = False,
               settings: Mapping[str, str] | None = None) -> SparkChild:
    """Start a child process that runs ``runs`` in turn (each to its end, ``close`` moving the
    watermark past every window) in one Spark application on ``master`` with the extra Spark
    ``settings`` (as ``$EOWC_SPARK_CONF`` takes them), then writes the application's id and
    stateful task rows (:mod:`eowc.executors.spark.task_metrics`) to ``<directory>/task-rows.json``
    (read it with :func:`~eowc.executors.spark.task_metrics.read_task_rows`). Its log is
    ``<directory>/child.log``."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    return SparkChild(runs, convention, master, folder, close, settings or {})


def _run_to_the_end(command: list[str], local_dir: Path, log: Path, timeout: float,
                    who: str) -> None:
    """Run a child with no crash schedule until it exits; CrashError if it fails or hangs
    (then it is killed, with every process of its session)."""
    _wait_to_the_end(_start(command, _child_env(None, local_dir), log), log, timeout, who)


def _wait_to_the_end(child: subprocess.Popen[bytes], log: Path, timeout: float, who: str) -> None:
    """Wait for a child to exit, then kill what is left of its session; CrashError if it fails
    or hangs (then it is killed)."""
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CrashError(f"{who} did not finish within {timeout:.0f} s (killed); its log "
                         f"({log}) ends:\n{_tail(log)}") from None
    finally:
        kill_session(child.pid)
        child.wait(timeout=60)
    if child.returncode != 0:
        raise CrashError(f"{who} failed with code {child.returncode}; its log ({log}) "
                         f"ends:\n{_tail(log)}")


def _log(query_path: str, events_path: str, convention: Convention) -> ArrivalLog:
    """The run's arrival log, computed columns computed under ``convention``."""
    script = parse_script(Path(query_path).read_text(encoding="utf-8"))
    with computing_under(convention.values):
        return load_arrival_log(events_path, script.sources).log


# ---------------------------------------------------------------------------------------------
# The child


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m eowc.executors.spark.crash run QUERY EVENTS --convention C --workdir DIR
    [--master URL] [--partitions N] [--sort-partitions N] [--close] [--then QUERY EVENTS
    WORKDIR]... [--task-rows FILE]``: one run (and one more per ``--then``, in the same application) with
    :func:`eowc.executors.spark.runner.start_query` on the normal session
    (:func:`eowc.executors.spark.session.spark_session`), armed by :data:`ENV_VAR` if the
    environment sets it; then, with ``--task-rows``, the application's id and stateful task
    rows to FILE (:func:`eowc.executors.spark.task_metrics.write_task_rows`)."""
    parser = argparse.ArgumentParser(prog="python -m eowc.executors.spark.crash")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a query on Spark (the child of run_with_crash)")
    run.add_argument("query")
    run.add_argument("events")
    run.add_argument("--convention", default=Convention.RISINGWAVE.value,
                     choices=[c.value for c in Convention])
    run.add_argument("--workdir", required=True)
    run.add_argument("--master", default="local[2]")
    run.add_argument("--partitions", type=int, default=None)
    run.add_argument("--sort-partitions", type=int, default=DEFAULT_OPTIONS.sort_partitions)
    run.add_argument("--close", action="store_true")
    run.add_argument("--then", nargs=3, action="append", default=[],
                     metavar=("QUERY", "EVENTS", "WORKDIR"),
                     help="then run this query too, in the same Spark application")
    run.add_argument("--task-rows", default=None,
                     help="at the end, write the application's stateful task rows to this file")
    args = parser.parse_args(argv)

    spark = spark_session(args.master)
    for query, events, workdir in [(args.query, args.events, args.workdir), *args.then]:
        start_query(spark, query, events, Convention(args.convention), Path(workdir),
                    close=args.close, partitions=args.partitions,
                    options=ExecutorOptions(sort_partitions=args.sort_partitions))
    if args.task_rows is not None:
        write_task_rows(args.task_rows, spark.sparkContext.applicationId, stateful_task_rows(spark))
    return 0


if __name__ == "__main__":
    sys.exit(main())
