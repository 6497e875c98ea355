"""The work directory of a Spark run (``eowc run --engine spark --workdir DIR``): which run it
belongs to, and turning Spark's failures on a damaged checkpoint into one clear message.

A work directory holds ``checkpoint/`` (Spark's streaming checkpoint), ``output/`` (the
:class:`~eowc.executors.spark.sink.EpochSink` files) and ``eowc-run.json``: the *fingerprint* of the
run that made them, written before Spark first writes the checkpoint. Running again on the same
directory resumes that run, which is only correct for the same query over the same input:
:func:`claim_workdir` compares the fingerprint before Spark starts and refuses a directory that
holds another run (other SQL text, convention, events file, or an events file changed since),
or a checkpoint or output without a fingerprint (made by something else, so nobody can tell
what it belongs to). The fingerprint also records the checkpoint's state format
(:data:`~eowc.executors.spark.typed_state.STATE_FORMAT`): a checkpoint of another format, or one
from before typed state (pickled, no format recorded), is refused before Spark reads it.

:func:`checkpoint_failures` wraps the start of a streaming query and its run: when the query
resumes from an existing checkpoint and Spark fails (``StreamingQueryException``,
``AnalysisException``, a ``Py4JJavaError``, ...), the failure is reported as a
:class:`~eowc.semantics.errors.RunError` saying the checkpoint is corrupted or unreadable, with the
first line of Spark's message (or the executor's own line for a state value or grouping key
that does not decode: :class:`~eowc.executors.spark.typed_state.StateFormatError`). A failure
of a fresh run is not about the checkpoint and is
raised unchanged. A batch file of ``output/`` that cannot be read back is
:func:`damaged_output`; nothing else of reading a run back is called corrupted (the run's epochs
and watermarks come from the sink's files, not from the checkpoint, whose old offset and commit
files Spark purges).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eowc.executors.spark.typed_state import STATE_FORMAT
from eowc.semantics.errors import RunError
from eowc.semantics.rules.triggers import Convention

#: The fingerprint file in a work directory.
FINGERPRINT_FILE = "eowc-run.json"
#: Version of the fingerprint's format.
FINGERPRINT_FORMAT = 1
_HINT = "remove the directory to start over"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_fingerprint(query_path: str, events_path: str, convention: Convention) -> dict[str, Any]:
    """What a checkpoint depends on: the SHA-256 of the SQL text (not its path), the convention,
    the events file's absolute path, size and SHA-256, and the format of the state it holds."""
    events = Path(events_path).resolve()
    return {"format": FINGERPRINT_FORMAT, "state_format": STATE_FORMAT,
            "query_sha256": hashlib.sha256(Path(query_path).read_bytes()).hexdigest(),
            "convention": convention.value,
            "events": str(events), "events_size": events.stat().st_size,
            "events_sha256": _sha256(events)}


def _differences(found: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs between the fingerprint ``found`` in a directory and this run's."""
    reasons = []
    if found.get("query_sha256") != wanted["query_sha256"]:
        reasons.append("its SQL text is not this query's")
    if found.get("convention") != wanted["convention"]:
        reasons.append(f"it ran under the {found.get('convention')!r} convention, not "
                       f"{wanted['convention']!r}")
    if found.get("events") != wanted["events"]:
        reasons.append(f"it read the events file {found.get('events')!r}, not {wanted['events']!r}")
    elif (found.get("events_size"), found.get("events_sha256")) != (wanted["events_size"],
                                                                   wanted["events_sha256"]):
        reasons.append(f"the events file {wanted['events']!r} has changed since "
                       f"(size {found.get('events_size')} then, {wanted['events_size']} now)")
    return reasons


def _foreign_format(found: dict[str, Any]) -> str | None:
    """Why the state of the checkpoint whose fingerprint is ``found`` cannot be read by this
    version, or None if it can."""
    state_format = found.get("state_format")
    if state_format == STATE_FORMAT:
        return None
    written = ("pickled Python objects (made before typed state)" if state_format is None
               else f"state format {state_format!r}")
    return f"its state is {written}; this version reads state format {STATE_FORMAT} only"


def _holds_a_run(directory: Path) -> bool:
    """Whether ``directory`` has a non-empty ``checkpoint/`` or ``output/``."""
    return any((directory / name).is_dir() and any((directory / name).iterdir())
               for name in ("checkpoint", "output"))


def write_fingerprint(directory: Path, fingerprint: dict[str, Any]) -> None:
    """Write ``fingerprint`` to ``directory/eowc-run.json`` atomically (creating the directory)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{FINGERPRINT_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(fingerprint, handle, indent=1)
            handle.write("\n")
        os.replace(temporary, directory / FINGERPRINT_FILE)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def claim_workdir(directory: Path, query_path: str, events_path: str,
                  convention: Convention) -> None:
    """Make ``directory`` the work directory of this run, or refuse it with a
    :class:`~eowc.semantics.errors.RunError` naming the directory and what is wrong.

    A directory without a checkpoint or output is claimed (its fingerprint written). One with a
    fingerprint equal to this run's is resumed. One with another run's fingerprint, with an
    unreadable fingerprint, or with a checkpoint or output but no fingerprint, is refused."""
    if directory.exists() and not directory.is_dir():
        raise RunError(f"{directory}: the work directory is not a directory")
    wanted = run_fingerprint(query_path, events_path, convention)
    marker = directory / FINGERPRINT_FILE
    holds_a_run = directory.is_dir() and _holds_a_run(directory)
    if marker.exists():
        try:
            found = json.loads(marker.read_text(encoding="utf-8"))
            if not isinstance(found, dict):
                raise ValueError("not a JSON object")
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise RunError(f"{marker}: cannot read the fingerprint of the run in this work "
                           f"directory ({error}); {_HINT}") from None
        foreign = _foreign_format(found)
        if foreign is not None and holds_a_run:
            raise RunError(f"{directory / 'checkpoint'}: the checkpoint cannot be resumed: "
                           f"{foreign}; {_HINT}")
        reasons = _differences(found, wanted)
        if reasons and holds_a_run:
            raise RunError(f"{directory}: the work directory holds the checkpoint of another "
                           f"run: {'; '.join(reasons)}; use another --workdir or {_HINT}")
        if not reasons and foreign is None:
            return
    elif holds_a_run:
        raise RunError(f"{directory}: the work directory holds a checkpoint or output but no "
                       f"{FINGERPRINT_FILE}, so which query it belongs to is unknown (it was not "
                       f"made by `eowc run`); use another --workdir or {_HINT}")
    write_fingerprint(directory, wanted)


#: A Spark error class and the rest of its line, e.g. ``[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] ...``.
_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\][^\n]*")
#: Error classes that only wrap the cause: a failed query, an error raised in ``foreachBatch``.
_WRAPPERS = frozenset({"STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR"})
#: A state value or key that does not decode, as the Python worker's traceback names it.
_STATE_FORMAT_ERROR = re.compile(r"StateFormatError: ([^\n]+)")
_STREAM_FAILED = re.compile(r"^\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: ")


def spark_message(error: BaseException) -> str:
    """One line saying why Spark failed: the first Spark error class in the message (or in the
    nested messages it carries, e.g. the Python traceback of a ``foreachBatch`` function) that
    is not a mere wrapper (``STREAM_FAILED``, ``FOREACH_BATCH_USER_FUNCTION_ERROR``), else the
    first line of the message without the ``[STREAM_FAILED] Query [...] terminated with
    exception:`` prefix; for a ``Py4JJavaError`` (whose first line only names the Py4J call)
    the Java exception's own text. At most 400 characters."""
    text = str(error)
    java = getattr(error, "java_exception", None)
    if java is not None:
        with contextlib.suppress(Exception):
            text = str(java.toString())
    causes = [match.group(0).strip() for match in _ERROR_CLASS.finditer(text)
              if match.group(1) not in _WRAPPERS]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = causes[0] if causes else _STREAM_FAILED.sub("", lines[0]) if lines else ""
    first = " ".join(first.split()) or type(error).__name__
    return first if len(first) <= 400 else first[:400] + "..."


def corrupted(checkpoint: Path, detail: str) -> RunError:
    """The error for an unusable checkpoint: names it, says why, and how to start over."""
    return RunError(f"{checkpoint}: the checkpoint is corrupted or unreadable: {detail}; {_HINT}")


def damaged_output(output: Path, error: Exception) -> RunError:
    """The error for a sink directory holding a batch file that cannot be read back (``error``
    names the file and line): names the directory and how to start over."""
    return RunError(f"{output}: the sink's output is damaged: {error}; {_HINT}")


@contextlib.contextmanager
def checkpoint_failures(checkpoint: Path) -> Iterator[None]:
    """Around the start and run of a streaming query on ``checkpoint``: if the checkpoint
    existed (a resumed run) and Spark fails, raise :func:`corrupted` with the first line of
    Spark's message instead; otherwise let the failure through."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    resuming = checkpoint.is_dir() and any(checkpoint.iterdir())
    try:
        yield
    except (PySparkException, Py4JJavaError) as error:
        if not resuming:
            raise
        undecodable = _STATE_FORMAT_ERROR.search(str(error))
        detail = undecodable.group(1).strip() if undecodable else spark_message(error)
        raise corrupted(checkpoint, detail) from error


#: Where Spark's operator metadata names a state schema file: an absolute URI into the
#: checkpoint it was written in.
_SCHEMA_FILE = re.compile(r'"file:(/[^"]*?)/state/(\d+)/_stateSchema/')


def relocate_checkpoint(checkpoint: Path) -> int:
    """Make a checkpoint that was moved or copied to ``checkpoint`` readable there: Spark's
    operator metadata (``state/<op>/_metadata/v2/<batch>``) names the state schema files by
    absolute path, so a moved checkpoint would look for them where it was written. Those paths
    are pointed into ``checkpoint`` (and the files' stale checksums removed); the number of
    files rewritten is returned."""
    target = str(checkpoint.resolve())
    rewritten = 0
    for metadata in checkpoint.glob("state/*/_metadata/v2/*"):
        if metadata.name.startswith("."):
            continue
        text = metadata.read_text(encoding="utf-8")
        moved = _SCHEMA_FILE.sub(lambda m: f'"file:{target}/state/{m.group(2)}/_stateSchema/', text)
        if moved != text:
            metadata.write_text(moved, encoding="utf-8")
            metadata.with_name(f".{metadata.name}.crc").unlink(missing_ok=True)
            rewritten += 1
    return rewritten
