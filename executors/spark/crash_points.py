"""Crash points of a Spark run, the schedule that names one, and the hook that stops the run
there (the killing and the restart are :mod:`eowc.executors.spark.crash`).

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

Batch ids: with ``pacing=settle`` epoch ``e`` of the log is batch ``2e`` (its rows, the *data*
batch) and batch ``2e + 1`` (no rows, the *settle* batch, where the windows the epoch completes
close): :func:`batch_of_epoch`, :func:`epoch_of_batch`, and
:func:`eowc.executors.spark.crash.batch_refs`, which reads the same from the records of the
sink's batch files (:mod:`eowc.executors.spark.sink`).

Imports neither PySpark (the hook asks for the task's batch id only when a schedule is armed)
nor the runner: the source, the processor and the sink call the hook.
"""

from __future__ import annotations

import enum
import json
import os
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: "marker": path, "owner": pid, "hold_s": seconds}`` (see :meth:`CrashSchedule.arm`).
ENV_VAR = "EOWC_SPARK_CRASH"
#: The Spark local property that holds the id of the micro-batch a task belongs to.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: How long an armed hook blocks at most when nobody kills it (a guard against orphans).
DEFAULT_HOLD_S = 900.0


class CrashPoint(enum.Enum):
    """Where in batch ``N`` the run is killed; see the module documentation."""

    BEFORE_BATCH = "before_batch"
    MID_BATCH = "mid_batch"
    AFTER_SINK = "after_sink"



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
