"""Real crashes of a Spark run: stop the whole process tree with SIGKILL at a chosen point of a
chosen micro-batch, restart on the same checkpoint, and read back what the two runs wrote.

Crash points (see docs/executors.md, "Crash and recovery"), in the order Spark's micro-batch
protocol reaches them for batch ``N`` (SEMANTICS.md §4):

``BEFORE_BATCH``
    Spark is planning batch ``N``: the ``eowc_arrival_log`` source's ``latestOffset`` (in the
    driver's Python source-runner process) is computing the batch's end offset.
    ``offsets/N`` does not exist yet; ``commits/N-1`` does.
``MID_BATCH``
    The executor is processing batch ``N``: the Python worker running
    ``SparkProcessor.handleInputRows`` (a data batch with rows) or ``handleExpiredTimer`` (a
    settle batch in which windows close) has just handled one grouping key, so the task's
    state store holds uncommitted changes and some output may have reached the JVM.
    ``offsets/N`` exists, no sink file, no ``commits/N``.
``AFTER_SINK``
    :class:`~eowc.executors.spark.sink.EpochSink` has written ``batch-N.jsonl`` (end of its
    ``__call__``, in the driver's Python process) and Spark has not written ``commits/N``.

The hook :func:`checkpoint_reached` is called at those places. It reads the schedule from the
environment variable :data:`ENV_VAR`, which every process of a local Spark run inherits: the
driver's Python process sets it, the driver JVM is started with a copy of its environment, and
the Python workers and the source runner are started by the JVM (the worker daemon with
``ProcessBuilder``, which passes the JVM's environment on). When the variable is unset the hook
is one dictionary lookup. When the point and batch match, it writes a marker file and blocks
(until killed, or until the process that armed it is gone).

:func:`run_with_crash` runs a query in a child process with a schedule, waits for the marker,
SIGKILLs every process of the child's session (the driver's Python, the JVM, the Python worker
daemon and its workers, which PySpark puts in a process group of their own), checks that none
survives, runs a second child with no schedule on the same work directory, and reads the run
back with :func:`eowc.executors.spark.runner.collect_run`.

Batch ids: with ``pacing=settle`` epoch ``e`` of the log is batch ``2e`` (its rows, the *data*
batch) and batch ``2e + 1`` (no rows, the *settle* batch, where the windows the epoch completes
close): :func:`batch_of_epoch`, :func:`epoch_of_batch`, and :func:`batch_refs`, which reads the
same from the records of the sink's batch files (:mod:`eowc.executors.spark.sink`).
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eowc.semantics.rules.triggers import Convention

if TYPE_CHECKING:
    from eowc.executors.driver import DriverRun

#: The environment variable that arms the hook: JSON ``{"point": ..., "batch_id": ...,
#: "marker": path, "owner": pid, "hold_s": seconds}`` (see :meth:`CrashSchedule.arm`).
ENV_VAR = "EOWC_SPARK_CRASH"
#: The Spark local property that holds the id of the micro-batch a task belongs to.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: How long an armed hook blocks at most when nobody kills it (a guard against orphans).
DEFAULT_HOLD_S = 900.0

_ROOT = Path(__file__).resolve().parents[2]


class CrashPoint(enum.Enum):
    """Where in batch ``N`` the run is killed; see the module documentation."""

    BEFORE_BATCH = "before_batch"
    MID_BATCH = "mid_batch"
    AFTER_SINK = "after_sink"


class CrashError(Exception):
    """A crash run did not go as scheduled (the child failed, hung, or a process survived)."""


# ---------------------------------------------------------------------------------------------
# Batch ids and epochs (pacing=settle)


@dataclass(frozen=True)
class BatchRef:
    """What a micro-batch of a ``pacing=settle`` run is: epoch ``epoch``'s data batch (its rows)
    or its settle batch (no rows; timers up to the epoch's watermark fire)."""

    epoch: int
    settle: bool

    @property
    def batch_id(self) -> int:
        """The batch id Spark gives it: ``2 * epoch`` (data) or ``2 * epoch + 1`` (settle)."""
        return batch_of_epoch(self.epoch, self.settle)


def batch_of_epoch(epoch: int, settle: bool = False) -> int:
    """The id of epoch ``epoch``'s data batch (or, with ``settle``, its settle batch)."""
    if epoch < 0:
        raise ValueError(f"an epoch is >= 0, got {epoch}")
    return 2 * epoch + int(settle)


def epoch_of_batch(batch_id: int) -> BatchRef:
    """The inverse of :func:`batch_of_epoch`."""
    if batch_id < 0:
        raise ValueError(f"a batch id is >= 0, got {batch_id}")
    return BatchRef(batch_id // 2, batch_id % 2 == 1)


def batch_ref_of_offset(offset: Any) -> BatchRef | None:
    """The batch whose *end* offset is ``offset`` (an ``eowc_arrival_log`` offset with
    ``pacing=settle``): ``{"epoch": n, "settled": false}`` ends epoch ``n - 1``'s data batch,
    ``{"epoch": n, "settled": true}`` its settle batch. None for the initial offset or an
    offset of another shape."""
    if not isinstance(offset, dict) or set(offset) != {"epoch", "settled"}:
        return None
    epoch, settled = offset["epoch"], offset["settled"]
    if not isinstance(epoch, int) or not isinstance(settled, bool) or epoch < 1:
        return None
    return BatchRef(epoch - 1, settled)


def planned_batch(start: Any, available: int) -> int | None:
    """The id of the batch Spark plans when the source's ``latestOffset`` is asked for the
    offset after ``start`` and ``available`` epochs may be offered (None when there is none).
    With ``pacing=settle``: after a data batch comes its settle batch, after a settle batch the
    next epoch's data batch. With ``pacing=epoch`` (``{"epoch": n}``) batch ``n`` is epoch ``n``."""
    if not isinstance(start, dict) or not isinstance(start.get("epoch"), int):
        return None
    epoch = start["epoch"]
    if "settled" not in start:
        return epoch if epoch < available else None
    if not start["settled"]:
        return batch_of_epoch(epoch - 1, settle=True) if epoch >= 1 else None
    return batch_of_epoch(epoch) if epoch < available else None


def batch_refs(output_dir: str | os.PathLike[str]) -> dict[int, BatchRef]:
    """Batch id to :class:`BatchRef` for every batch the sink wrote to ``output_dir``: the
    first source's end offset in the batch's record (:class:`eowc.executors.spark.sink.BatchRecord`,
    kept however long the run; Spark's offset log keeps the last 100 batches only)."""
    from eowc.executors.spark.sink import read_batches

    refs = {}
    for batch in read_batches(output_dir):
        offsets = batch.record.offsets
        ref = batch_ref_of_offset(offsets[0] if offsets else None)
        if ref is not None:
            refs[batch.batch_id] = ref
    return refs


# ---------------------------------------------------------------------------------------------
# The schedule and the hook


@dataclass(frozen=True)
class CrashSchedule:
    """Kill the run when it reaches ``point`` in batch ``batch_id``."""

    point: CrashPoint
    batch_id: int

    @classmethod
    def at_epoch(cls, point: CrashPoint, epoch: int, settle: bool = False) -> CrashSchedule:
        """The schedule for epoch ``epoch``'s data batch (or settle batch)."""
        return cls(point, batch_of_epoch(epoch, settle))

    @classmethod
    def parse(cls, text: str) -> CrashSchedule:
        """``POINT:BATCH`` (``after_sink:3``), or ``POINT:EPOCHd`` / ``POINT:EPOCHs`` for an
        epoch's data / settle batch (``mid_batch:1s`` is batch 3). ValueError otherwise."""
        point_text, sep, where = text.partition(":")
        try:
            point = CrashPoint(point_text.strip().lower())
        except ValueError:
            names = ", ".join(p.value for p in CrashPoint)
            raise ValueError(f"unknown crash point {point_text!r} (one of {names})") from None
        where = where.strip().lower()
        if not sep or not where:
            raise ValueError(f"expected POINT:BATCH, got {text!r}")
        try:
            if where[-1] in "ds":
                return cls.at_epoch(point, int(where[:-1]), settle=where[-1] == "s")
            batch_id = int(where)
        except ValueError:
            raise ValueError(f"expected a batch id (3) or an epoch (1d, 1s), got {where!r}") from None
        if batch_id < 0:
            raise ValueError(f"a batch id is >= 0, got {batch_id}")
        return cls(point, batch_id)

    @property
    def ref(self) -> BatchRef:
        """The epoch and kind of the scheduled batch."""
        return epoch_of_batch(self.batch_id)

    def arm(self, marker: str | os.PathLike[str], owner: int | None = None,
            hold_s: float = DEFAULT_HOLD_S) -> str:
        """The value of :data:`ENV_VAR` that arms the hook: write ``marker`` and block when
        the point is reached, for at most ``hold_s`` seconds or until process ``owner`` (the
        one that will do the killing; default this process) is gone."""
        return json.dumps({"point": self.point.value, "batch_id": self.batch_id,
                           "marker": str(marker), "owner": os.getpid() if owner is None else owner,
                           "hold_s": hold_s})


@dataclass(frozen=True)
class _Armed:
    schedule: CrashSchedule
    marker: Path
    owner: int
    hold_s: float


@lru_cache(maxsize=4)
def _armed(spec: str) -> _Armed:
    data = json.loads(spec)
    return _Armed(CrashSchedule(CrashPoint(data["point"]), int(data["batch_id"])),
                  Path(data["marker"]), int(data["owner"]), float(data.get("hold_s", DEFAULT_HOLD_S)))


def current_batch_id() -> int | None:
    """The micro-batch id of the Spark task this Python worker runs (the local property
    ``streaming.sql.batchId``), or None outside a streaming task."""
    from pyspark.taskcontext import TaskContext

    context = TaskContext.get()
    value = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    return int(value) if value else None


def checkpoint_reached(point: CrashPoint, batch_id: int | None = None) -> None:
    """The crash hook: the run has reached ``point`` of batch ``batch_id`` (None: the batch of
    the current Spark task). Does nothing unless :data:`ENV_VAR` schedules this point and batch;
    then writes the marker file and blocks until the process is killed."""
    spec = os.environ.get(ENV_VAR)
    if spec:
        _reached(spec, point, batch_id)


def _reached(spec: str, point: CrashPoint, batch_id: int | None) -> None:
    armed = _armed(spec)
    if armed.schedule.point.value != point.value:
        return
    if batch_id is None:
        batch_id = current_batch_id()
    if batch_id != armed.schedule.batch_id:
        return
    record = {"point": point.value, "batch_id": batch_id, "pid": os.getpid(), "time": time.time()}
    fd, temporary = tempfile.mkstemp(dir=armed.marker.parent, prefix=f".{armed.marker.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    os.replace(temporary, armed.marker)
    deadline = time.monotonic() + armed.hold_s
    while time.monotonic() < deadline and _alive(armed.owner):
        time.sleep(0.2)
    os._exit(75)  # nobody came to kill us: fail loudly rather than continue the batch


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
        from eowc.executors.spark.sink import read_batches

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
                   close: bool, master: str, partitions: int | None) -> list[str]:
    command = [sys.executable, "-m", "eowc.executors.spark.crash", "run", query_path, events_path,
               "--convention", convention.value, "--workdir", str(workdir), "--master", master]
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
                   partitions: int | None = None) -> CrashRun:
    """Run the executor of ``query_path`` over ``events_path`` on Spark in a child process
    (its own session), SIGKILL its whole process tree when it reaches ``schedule``, then run a
    second child with no schedule on the same ``workdir`` (same checkpoint, same sink) to the
    end, and read back the output (:func:`eowc.executors.spark.runner.collect_run`).

    ``timeout`` bounds each child (reaching the point, finishing); ``partitions`` is the
    source's input partitions per batch (:func:`~eowc.executors.spark.runner.arrival_frame`).
    Raises :class:`CrashError` if the first child exits or hangs before the point, if a
    process survives the kill, or if the second child fails."""
    from eowc.executors.spark.runner import collect_run

    directory = Path(workdir)
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / f"crash-{schedule.point.value}-{schedule.batch_id}.marker"
    marker.unlink(missing_ok=True)
    command = _child_command(query_path, events_path, convention, directory, close, master,
                             partitions)
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
    _run_to_the_end(command, directory / "spark-local-2", logs[1], timeout, "the restarted child")
    run = collect_run(_log(query_path, events_path), directory)
    return CrashRun(run, schedule, record, first.returncode, tuple(killed), at_kill,
                    (first_seconds, time.monotonic() - started), logs)


def run_in_child(query_path: str, events_path: str, convention: Convention,
                 workdir: str | os.PathLike[str], close: bool = False, master: str = "local[2]",
                 timeout: float = 300.0) -> DriverRun:
    """The same run as :func:`run_with_crash` without a crash: one child process, no schedule,
    to the end; the baseline a crashed run is compared with (started and read back the same
    way, so both use the code on disk at the time). CrashError if it fails or hangs."""
    from eowc.executors.spark.runner import collect_run

    directory = Path(workdir)
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "child.log"
    command = _child_command(query_path, events_path, convention, directory, close, master, None)
    _run_to_the_end(command, directory / "spark-local", log, timeout, "the child")
    return collect_run(_log(query_path, events_path), directory)


def _run_to_the_end(command: list[str], local_dir: Path, log: Path, timeout: float,
                    who: str) -> None:
    """Run a child with no crash schedule until it exits; CrashError if it fails or hangs
    (then it is killed, with every process of its session)."""
    child = _start(command, _child_env(None, local_dir), log)
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


def _log(query_path: str, events_path: str):  # noqa: ANN202 - an ArrivalLog
    from eowc.semantics.frontend.sql import parse_script
    from eowc.semantics.ir.arrival import load_arrival_log

    script = parse_script(Path(query_path).read_text(encoding="utf-8"))
    return load_arrival_log(events_path, script.sources).log


# ---------------------------------------------------------------------------------------------
# The child


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m eowc.executors.spark.crash run QUERY EVENTS --convention C --workdir DIR
    [--master URL] [--partitions N] [--close]``: one run with
    :func:`eowc.executors.spark.runner.start_query` on the normal session
    (:func:`eowc.executors.spark.session.spark_session`), armed by :data:`ENV_VAR` if the
    environment sets it."""
    import argparse

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
    run.add_argument("--close", action="store_true")
    args = parser.parse_args(argv)

    from eowc.executors.spark.runner import start_query
    from eowc.executors.spark.session import spark_session

    spark = spark_session(args.master)
    start_query(spark, args.query, args.events, Convention(args.convention), Path(args.workdir),
                close=args.close, partitions=args.partitions)
    return 0


if __name__ == "__main__":
    from eowc.executors.spark.crash import main as _main  # the hook's module, not a second copy

    sys.exit(_main())
