"""An exactly-once ``foreachBatch`` writer and readers of Spark's streaming checkpoint.

:class:`EpochSink` writes each micro-batch to ``<directory>/batch-<id:06d>.jsonl``, atomically, and
skips a batch id whose file exists. ``foreachBatch`` alone is at-least-once: after a crash between
the sink and the commit log, Spark re-runs the batch with the same id and offsets (SEMANTICS.md
§4), and the skip turns that into exactly-once output.

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
after the batch (the one the next batch runs with).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from semantics.values import format_interval, format_timestamp

from .crash import CrashPoint, checkpoint_reached

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_BATCH_FILE = re.compile(r"^batch-(\d+)\.jsonl$")
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)


def json_value(value: Any) -> Any:
    """A value of a collected Spark row in the toolkit's external form (see
    :func:`semantics.values.to_external`): a timestamp as ``YYYY-MM-DD HH:MM:SS[.ffffff]`` in UTC,
    a day-time interval as ``[-]HH:MM:SS[.ffffff]``; structs, maps and arrays element-wise."""
    if isinstance(value, dt.datetime):
        base = _EPOCH if value.tzinfo is None else _EPOCH_UTC
        return format_timestamp((value - base) // _MICRO)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return format_interval(value // _MICRO)
    if isinstance(value, Decimal):
        return float(value)
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


class EpochSink:
    """A ``foreachBatch`` function writing batch ``id`` to ``directory/batch-<id:06d>.jsonl``.

    The file is written to a temporary name and renamed, so it is either absent or complete. A
    batch id whose file already exists is skipped: Spark re-runs a batch with the same id, offsets
    and watermark after a failure, so the existing file already holds its rows (the replayed
    batch is still executed, with output discarded, so that its state stores commit). Empty batches
    get an empty file, so every batch that ran is visible. ``written`` lists the batch ids this
    object wrote and ``skipped`` those it found already written.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.written: list[int] = []
        self.skipped: list[int] = []

    def path(self, batch_id: int) -> Path:
        """The file of batch ``batch_id``."""
        return self.directory / f"batch-{batch_id:06d}.jsonl"

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        target = self.path(batch_id)
        if target.exists():
            # Run the replayed batch all the same, writing nothing: Spark 4.x writes the commit
            # log only once every state store of the batch has committed ("Not all StateStores
            # committed for batch N" otherwise), and they commit only when the plan runs.
            batch_df.write.format("noop").mode("overwrite").save()
            self.skipped.append(batch_id)
            return
        rows = dataframe_rows(batch_df)
        _write_atomically(target, (json.dumps(row, ensure_ascii=False) for row in rows))
        self.written.append(batch_id)
        checkpoint_reached(CrashPoint.AFTER_SINK, batch_id)


def read_batches(directory: str | os.PathLike[str]) -> list[tuple[int, list[dict[str, Any]]]]:
    """The batches an :class:`EpochSink` wrote, as ``(batch id, rows)`` in batch-id order
    (temporary files of an interrupted write are ignored)."""
    batches = []
    for entry in Path(directory).iterdir():
        match = _BATCH_FILE.match(entry.name)
        if match:
            with entry.open(encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
            batches.append((int(match.group(1)), rows))
    return sorted(batches, key=lambda batch: batch[0])


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

    @property
    def epochs_available(self) -> int | None:
        """``n`` of the first source's ``{"epoch": n}`` offset (None if it has none)."""
        first = self.offsets[0] if self.offsets else None
        if isinstance(first, dict) and isinstance(first.get("epoch"), int):
            return first["epoch"]
        return None


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


def offset_log(checkpoint_dir: str | os.PathLike[str]) -> list[OffsetLogEntry]:
    """Every ``offsets/<batch id>`` file of a checkpoint, in batch-id order. Spark keeps only
    the last ``spark.sql.streaming.minBatchesToRetain`` (default 100) of them."""
    entries = []
    for batch_id, path in _numbered_files(Path(checkpoint_dir) / "offsets"):
        entries.append(parse_offset_file(path.read_text(encoding="utf-8"), batch_id, str(path)))
    return entries


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


def epoch_of_batches(checkpoint_dir: str | os.PathLike[str]) -> dict[int, int]:
    """Batch id to the epoch of the arrival log it belongs to: ``n - 1`` for an end offset
    ``{"epoch": n}`` of the first source. A batch whose offsets did not move (a no-data batch, or
    a settle batch of ``pacing=settle``) maps to the same epoch as the batch before it, so the
    output after epoch ``e`` is that of every batch mapped to ``e`` or less. Batches before the
    first epoch (``{"epoch": 0}``, which Spark does not run) are left out."""
    result = {}
    for entry in offset_log(checkpoint_dir):
        available = entry.epochs_available
        if available is not None and available > 0:
            result[entry.batch_id] = available - 1
    return result


def batch_watermarks(checkpoint_dir: str | os.PathLike[str]) -> dict[int, int]:
    """Batch id to the watermark it ran with (``batchWatermarkMs``, ms since the Unix epoch;
    0 before any watermark exists)."""
    return {entry.batch_id: entry.watermark_ms for entry in offset_log(checkpoint_dir)}
