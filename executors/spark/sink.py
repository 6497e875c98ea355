"""An exactly-once ``foreachBatch`` writer that records each batch's place in the stream, and
readers of Spark's streaming checkpoint.

:class:`EpochSink` writes each micro-batch to ``<directory>/batch-<id:06d>.jsonl``, atomically, and
skips a batch id whose file exists. ``foreachBatch`` alone is at-least-once: after a crash between
the sink and the commit log, Spark re-runs the batch with the same id and offsets (SEMANTICS.md
§4), and the skip turns that into exactly-once output.

A batch file is JSON Lines: first the batch's *record* (:class:`BatchRecord`, one line, wrapped here),
then one line per row::

    {"_eowc_batch": {"batch_id": 5, "watermark_ms": 1586937602000,
                     "offsets": [{"epoch": 3, "settled": true}]}}
    {"window_start": "2020-04-15 08:00:00", ...}

The record says where the batch is in the stream: the watermark it ran with and its sources' end
offsets, from which the epoch of an ``eowc_arrival_log`` run follows (:attr:`BatchRecord.epoch`).
The sink copies them from the batch's offset file when it writes the batch, and the file holds
them from then on, so reading a run back never needs the offset log, which Spark purges beyond
``spark.sql.streaming.minBatchesToRetain`` (100) batches. :func:`batch_file`,
:meth:`EpochSink.__call__` and :func:`read_batches` are the one place that knows this format.

Spark's checkpoint directory holds ``offsets/<batch id>`` (written before a batch runs) and
``commits/<batch id>`` (written after its sink). An offset file is plain text (checked with
PySpark 4.3)::

    v1
    {"batchWatermarkMs":1586937602000,"batchTimestampMs":1795435087035,"conf":{...}}
    {"epoch": 2}

a version line, the batch metadata, then one line per source with that source's end offset in
source order (``-`` for a source with no offset yet), with no newline after the last line. For the
``eowc_arrival_log`` source, ``{"epoch": n}`` means epochs ``0 .. n-1`` have been made available,
so the batch belongs to epoch ``n - 1``. ``batchWatermarkMs`` is the watermark the batch runs with
(the eviction watermark of its stateful operators), in milliseconds since the Unix epoch; it is
computed from the data of the *earlier* batches, so it is 0 until a batch with rows has run.
A commit file ``commits/<batch id>`` is ``v1`` and ``{"nextBatchWatermarkMs": w}``: the watermark
after the batch (the one the next batch runs with). Only the last ``minBatchesToRetain`` of
each are kept: :func:`offset_log` and :func:`committed_batches` are for looking at Spark's own
bookkeeping, not for reading a run back.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eowc.executors.spark.crash_points import CrashPoint, checkpoint_reached
from eowc.semantics.ir.values import format_interval, format_timestamp, json_text, parse_json

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_BATCH_FILE = re.compile(r"^batch-(\d+)\.jsonl$")
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)


def json_value(value: Any) -> Any:
    """A value of a collected Spark row in the toolkit's external form (see
    :func:`eowc.semantics.ir.values.to_external`): a timestamp as ``YYYY-MM-DD HH:MM:SS[.ffffff]`` in UTC,
    a day-time interval as ``[-]HH:MM:SS[.ffffff]``; structs, maps and arrays element-wise."""
    if isinstance(value, dt.datetime):
        base = _EPOCH if value.tzinfo is None else _EPOCH_UTC
        return format_timestamp((value - base) // _MICRO)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return format_interval(value // _MICRO)
    if isinstance(value, Decimal):  # exact: json_text writes its digits, parse_json reads them
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(isinstance(item, tuple) and len(item) == 2 for item in value) and value:
            return {str(k): json_value(v) for k, v in value}  # an Arrow map: (key, value) pairs
        return [json_value(item) for item in value]
    return value


def dataframe_rows(frame: DataFrame) -> list[dict[str, Any]]:
    """The rows of a (batch) DataFrame as JSON-ready dicts, in the order Spark returns them.

    Rows travel through Arrow, so timestamps keep their microseconds and do not depend on the
    Python process's local time zone."""
    table = frame.toArrow()
    return [{k: json_value(v) for k, v in row.items()} for row in table.to_pylist()]


def _write_atomically(path: Path, lines: Iterable[str]) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line)
                handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


#: The key of a batch file's first line, the batch's :class:`BatchRecord`.
RECORD_KEY = "_eowc_batch"


class SinkFileError(ValueError):
    """A batch file that is not what :class:`EpochSink` writes (damaged, or not written by
    it); the message names the file, the line and what was expected."""


def epoch_of_offsets(offsets: tuple[Any, ...]) -> int | None:
    """The epoch of the ``eowc_arrival_log`` run a batch with these end offsets belongs to:
    ``n - 1`` for a first source at ``{"epoch": n}`` (``n`` epochs made available). A batch
    whose offsets did not move (a no-data batch, or a settle batch of ``pacing=settle``) has
    the same epoch as the batch before it, so the output after epoch ``e`` is that of every
    batch of epoch ``e`` or less. None before the first epoch (``{"epoch": 0}``, which Spark does
    not run) and for a first source of another kind."""
    first = offsets[0] if offsets else None
    if isinstance(first, dict) and isinstance(first.get("epoch"), int) and first["epoch"] > 0:
        return first["epoch"] - 1
    return None


@dataclass(frozen=True)
class BatchRecord:
    """Where micro-batch ``batch_id`` is in the stream, as its offset file said when the batch
    ran: ``watermark_ms``, the watermark it ran with (``batchWatermarkMs``, ms since the Unix
    epoch, 0 before any), and ``offsets``, its sources' end offsets in source order (None for
    a source with none yet)."""

    batch_id: int
    watermark_ms: int
    offsets: tuple[Any, ...]

    @property
    def epoch(self) -> int | None:
        """The epoch of the arrival log the batch belongs to (:func:`epoch_of_offsets`)."""
        return epoch_of_offsets(self.offsets)

    def line(self) -> str:
        """The record as the first line of its batch file."""
        return json.dumps({RECORD_KEY: {"batch_id": self.batch_id, "watermark_ms": self.watermark_ms,
                                        "offsets": list(self.offsets)}}, ensure_ascii=False)

    @classmethod
    def parse(cls, line: str, batch_id: int, path: Path) -> BatchRecord:
        """The record on the first line of ``path``, the file of batch ``batch_id``;
        :class:`SinkFileError` if the line is not one."""
        def wrong(what: str) -> SinkFileError:
            return SinkFileError(f"{path}:1: {what}; expected the batch record "
                                 f'{{"{RECORD_KEY}": {{"batch_id": {batch_id}, "watermark_ms": ..., '
                                 '"offsets": [...]}}')
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise wrong(f"malformed JSON ({error.msg} at column {error.colno})") from None
        record = data.get(RECORD_KEY) if isinstance(data, dict) and len(data) == 1 else None
        if not isinstance(record, dict):
            raise wrong("no batch record (a damaged file, or one written by an older eowc)")
        watermark, offsets = record.get("watermark_ms"), record.get("offsets")
        if record.get("batch_id") != batch_id:
            raise wrong(f"the record is of batch {record.get('batch_id')!r}")
        whole = isinstance(watermark, int) and not isinstance(watermark, bool)
        if not whole or not isinstance(offsets, list):
            raise wrong("the record has no whole watermark_ms or no offsets list")
        return cls(batch_id, watermark, tuple(offsets))


@dataclass(frozen=True)
class SinkBatch:
    """One batch an :class:`EpochSink` wrote (the file ``path``): its record and its rows, in
    the order written."""

    record: BatchRecord
    rows: list[dict[str, Any]]
    path: Path = field(compare=False)

    @property
    def batch_id(self) -> int:
        return self.record.batch_id

    @property
    def epoch(self) -> int:
        """The epoch of the arrival log the batch belongs to; :class:`SinkFileError` if its
        record has none (it is not a batch of an ``eowc_arrival_log`` run)."""
        epoch = self.record.epoch
        if epoch is None:
            raise SinkFileError(f"{self.path}:1: the batch record's offsets "
                                f"{json.dumps(list(self.record.offsets))} are not those of an "
                                'arrival log (a first source at {"epoch": n} with n >= 1)')
        return epoch


def batch_file(directory: str | os.PathLike[str], batch_id: int) -> Path:
    """The file of batch ``batch_id`` in the sink directory ``directory``."""
    return Path(directory) / f"batch-{batch_id:06d}.jsonl"


class EpochSink:
    """A ``foreachBatch`` function writing batch ``id`` to ``directory/batch-<id:06d>.jsonl``:
    its :class:`BatchRecord`, read from ``checkpoint/offsets/<id>`` (the query's checkpoint
    location on this machine's file system), then its rows.

    The file is written to a temporary name and renamed, so it is either absent or complete,
    record and rows together. A batch id whose file already exists is skipped: Spark re-runs a
    batch with the same id, offsets and watermark after a failure, so the existing file already
    holds its record and rows (the replayed batch is still executed, with output discarded, so
    that its state stores commit). Empty batches get a file with the record alone, so every
    batch that ran is visible. ``written`` lists the batch ids this object wrote and
    ``skipped`` those it found already written.
    """

    def __init__(self, directory: str | os.PathLike[str],
                 checkpoint: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.checkpoint = Path(checkpoint)
        self.written: list[int] = []
        self.skipped: list[int] = []

    def path(self, batch_id: int) -> Path:
        """The file of batch ``batch_id``."""
        return batch_file(self.directory, batch_id)

    def record(self, batch_id: int) -> BatchRecord:
        """The record of batch ``batch_id``: Spark writes ``offsets/<batch_id>`` before the
        batch runs and purges it only after at least 100 later batches, so it is there."""
        entry = offset_entry(self.checkpoint, batch_id)
        return BatchRecord(batch_id, entry.watermark_ms, entry.offsets)

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        target = self.path(batch_id)
        if target.exists():
            # Run the replayed batch all the same, writing nothing: Spark 4.x writes the commit
            # log only once every state store of the batch has committed ("Not all StateStores
            # committed for batch N" otherwise), and they commit only when the plan runs.
            batch_df.write.format("noop").mode("overwrite").save()
            self.skipped.append(batch_id)
            return
        record = self.record(batch_id)
        rows = dataframe_rows(batch_df)
        _write_atomically(target, [record.line(),
                                   *(json_text(row, ensure_ascii=False) for row in rows)])
        self.written.append(batch_id)
        checkpoint_reached(CrashPoint.AFTER_SINK, batch_id)


def read_batches(directory: str | os.PathLike[str]) -> list[SinkBatch]:
    """The batches an :class:`EpochSink` wrote to ``directory``, in batch-id order (temporary
    files of an interrupted write are ignored); :class:`SinkFileError` for a file that is not
    a batch record followed by JSON rows."""
    batches = []
    for entry in Path(directory).iterdir():
        match = _BATCH_FILE.match(entry.name)
        if match:
            batches.append(_read_batch(entry, int(match.group(1))))
    return sorted(batches, key=lambda batch: batch.batch_id)


def _read_batch(path: Path, batch_id: int) -> SinkBatch:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise SinkFileError(f"{path}: not UTF-8 text (byte {error.object[error.start]:#04x} at "
                            f"offset {error.start})") from None
    if not lines:
        raise SinkFileError(f"{path}: empty; expected at least the batch record")
    record = BatchRecord.parse(lines[0], batch_id, path)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            row = parse_json(line)
        except json.JSONDecodeError as error:
            raise SinkFileError(f"{path}:{number}: malformed JSON ({error.msg} at column "
                                f"{error.colno}); expected a row") from None
        if not isinstance(row, dict):
            raise SinkFileError(f"{path}:{number}: expected a row (a JSON object)")
        rows.append(row)
    return SinkBatch(record, rows, path)


@dataclass(frozen=True)
class OffsetLogEntry:
    """One file ``offsets/<batch_id>`` of a streaming checkpoint.

    ``offsets`` has one item per source of the query, in source order: the parsed JSON of its
    end offset, or None for a source that has none yet. ``watermark_ms`` is ``batchWatermarkMs``
    and ``timestamp_ms`` is ``batchTimestampMs`` (the trigger's wall-clock time)."""

    batch_id: int
    version: str
    watermark_ms: int
    timestamp_ms: int
    conf: dict[str, str]
    offsets: tuple[Any, ...]


def parse_offset_file(text: str, batch_id: int, path: str = "<offsets>") -> OffsetLogEntry:
    """Parse the text of one offset-log file; ValueError names ``path`` and what is wrong."""
    lines = text.split("\n")
    if len(lines) < 2 or not re.fullmatch(r"v\d+", lines[0].strip()):
        raise ValueError(f"{path}: expected a version line such as 'v1' and a metadata line")
    try:
        metadata = json.loads(lines[1])
        offsets = tuple(None if line.strip() == "-" else json.loads(line)
                        for line in lines[2:] if line.strip())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: malformed JSON ({error.msg})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: the metadata line is not a JSON object")
    return OffsetLogEntry(batch_id=batch_id, version=lines[0].strip(),
                          watermark_ms=int(metadata.get("batchWatermarkMs", 0)),
                          timestamp_ms=int(metadata.get("batchTimestampMs", 0)),
                          conf=dict(metadata.get("conf") or {}), offsets=offsets)


def _numbered_files(directory: Path) -> list[tuple[int, Path]]:
    if not directory.is_dir():
        return []
    files = [(int(entry.name), entry) for entry in directory.iterdir() if entry.name.isdigit()]
    return sorted(files)


def offset_entry(checkpoint_dir: str | os.PathLike[str], batch_id: int) -> OffsetLogEntry:
    """The file ``offsets/<batch_id>`` of a checkpoint (OSError if it is not there)."""
    path = Path(checkpoint_dir) / "offsets" / str(batch_id)
    return parse_offset_file(path.read_text(encoding="utf-8"), batch_id, str(path))


def offset_log(checkpoint_dir: str | os.PathLike[str]) -> list[OffsetLogEntry]:
    """Every ``offsets/<batch id>`` file of a checkpoint, in batch-id order. Spark keeps only
    the last ``spark.sql.streaming.minBatchesToRetain`` (default 100) of them."""
    return [offset_entry(checkpoint_dir, batch_id)
            for batch_id, _ in _numbered_files(Path(checkpoint_dir) / "offsets")]


def committed_batches(checkpoint_dir: str | os.PathLike[str]) -> dict[int, int]:
    """The batches whose sink finished (a ``commits/<batch id>`` file, written after the sink:
    ``v1`` then ``{"nextBatchWatermarkMs": w}``), each with ``w``: the watermark after that batch,
    i.e. the one the next batch runs with, in ms since the Unix epoch."""
    result = {}
    for batch_id, path in _numbered_files(Path(checkpoint_dir) / "commits"):
        lines = path.read_text(encoding="utf-8").split("\n")
        try:
            metadata = json.loads(lines[1]) if len(lines) > 1 else {}
        except json.JSONDecodeError:
            raise ValueError(f"{path}: malformed JSON on line 2") from None
        result[batch_id] = int(metadata.get("nextBatchWatermarkMs", 0))
    return result
