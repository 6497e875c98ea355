"""Your own engine as an :class:`~eowc.verify.executors.Executor`: verified through what it reads and
writes in the words of ``eowc run``, never through eowc's internal rows.

One protocol, two transports:

* ``--executor python:MODULE:ATTR`` (:class:`PythonEngine`): ``ATTR(script=..., convention=...,
  state_dir=...)`` opens a *session*, an object with ``epoch(number, events)``, which returns
  the messages the engine writes for that epoch, and optionally ``close()``;
* ``--executor-cmd 'COMMAND'`` (:class:`CommandEngine`): any program, reading and writing the
  same messages as JSON lines on its stdin and stdout.

The messages (one JSON object each; for Python the same objects as dicts):

* the header, when a session opens: ``{"script": SQL, "convention": "risingwave|spark|flink",
  "state_dir": DIR}`` (for Python: the three keyword arguments). ``DIR`` belongs to the engine;
  it is the same across the restarts of one run and fresh for every run;
* an epoch: its events in the arrival-log format of ``eowc run`` (``{"table": T, "row":
  {...}}``), then ``{"barrier": true, "epoch": k}``, epochs numbered from 0;
* the engine's answer: the rows it emits, each ``{"row": {...}}`` with every output column of the
  query as ``eowc run --format jsonl`` prints it, optionally ``{"late": {"table": T, "row":
  {...}}}`` for an event it refused as late (checked for form only), then the acknowledgment
  ``{"barrier": true, "epoch": k}``. The rows written before an acknowledgment are that epoch's
  output (for Python: what ``epoch`` returns; returning is the acknowledgment);
* instead, an engine that cannot run the script at all (an operator or a release it lacks)
  answers ``{"refused": "why, in its words"}`` and exits (for Python: the session's opener
  raises an :class:`~eowc.semantics.errors.EowcError`). ``eowc verify`` reports the query as not
  run, with the reason (:class:`~eowc.verify.cases.QueryRefused`), and goes on.

A run (:meth:`ExternalExecutor.emissions`, the one loop both transports share) opens a session,
hands it the epochs in order, and:

* a **restart** after epoch ``k`` (``Case.restart_after``): once ``k`` is acknowledged the
  session is closed (the program's stdin is closed and it must exit 0), and a new one opens with
  the same header; it resumes from its own state in ``state_dir`` and gets epoch ``k + 1`` next;
* a **crash** in epoch ``e`` (``Case.crash``): the session is killed (the program's process group
  gets a real SIGKILL; a Python session is dropped without ``close``) while epoch ``e`` is under
  way (once the program has read what was sent and done what it can with it: its stdin pipe is
  empty and, where Linux's ``/proc`` tells, none of its threads runs), before its barrier,
  so nothing of ``e`` can have been acknowledged; rows it wrote for ``e`` are discarded, a new
  session opens and gets epoch ``e`` again. Where in ``e``
  (:func:`events_before_kill`): ``before_batch`` of the data batch right after the
  acknowledgment of ``e - 1``; ``mid_batch`` of the data batch after the first half (rounded
  up) of ``e``'s events; any other point after all of them. A Python call cannot be cut in
  half: a Python session is dropped before ``e`` whatever the point.

Whatever the engine does wrong in the protocol is an :class:`ExecutorFailed` naming what, in
these words: a line that is not JSON or not a message (quoted), an unknown or missing column, a
value that does not parse, an acknowledgment of the wrong epoch, a program that exits (with its
status and the end of its stderr) or does not acknowledge within the timeout of an epoch.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.util
import json
import os
import queue
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from eowc.semantics.engines.interpreter import Emission
from eowc.semantics.errors import EowcError
from eowc.semantics.ir.arrival import Event, output_row_from_json, row_from_json, row_to_json
from eowc.semantics.ir.expr import Row, Schema
from eowc.semantics.ir.plan import Source
from eowc.semantics.ir.values import json_text, parse_json
from eowc.verify.cases import Case, Crash, QueryRefused

#: Seconds an engine may take over one epoch (from its first event to its acknowledgment).
EPOCH_TIMEOUT_S = 60.0
#: Seconds a killed program may take over the events it read before the kill, at most.
SETTLE_S = 5.0
#: Lines of an engine's stderr shown when it fails.
STDERR_LINES = 20


class ExecutorFailed(EowcError):
    """An external engine broke the protocol or failed; the message says what, quoting it."""


# ------------------------------------------------------------------------------ messages

@dataclass(frozen=True)
class Header:
    """What a session is opened with: the SQL script (sources and query), the convention, and
    the engine's own directory for its state."""

    script: str
    convention: str
    state_dir: str

    def message(self) -> dict[str, str]:
        return {"script": self.script, "convention": self.convention, "state_dir": self.state_dir}


def event_message(event: Event, sources: dict[str, Source]) -> dict[str, Any]:
    """An event in the arrival-log format of ``eowc run``."""
    return {"table": event.table, "row": row_to_json(sources[event.table], event.row)}


def barrier_message(epoch: int) -> dict[str, Any]:
    """The end of epoch ``epoch``, and the engine's acknowledgment of it."""
    return {"barrier": True, "epoch": epoch}


def refusal_message(reason: str) -> dict[str, str]:
    """An engine's answer when it cannot run the script at all (then it exits)."""
    return {"refused": reason}


def is_refusal(message: Any) -> bool:
    return isinstance(message, dict) and set(message) == {"refused"} \
        and isinstance(message["refused"], str)


def is_barrier(message: Any) -> bool:
    return isinstance(message, dict) and set(message) == {"barrier", "epoch"} \
        and message["barrier"] is True


#: What an engine wrote: the message, and how to quote it (the line, or the object's repr).
Written = tuple[Any, str]


def emitted_row(written: Written, epoch: int, schema: Schema, sources: dict[str, Source],
                who: str) -> Row | None:
    """The internal row of a ``{"row": ...}`` message; None for a well-formed ``{"late": ...}``;
    :class:`ExecutorFailed` quoting anything else."""
    message, quoted = written

    def failed(why: str) -> ExecutorFailed:
        return ExecutorFailed(f"{who} wrote, in epoch {epoch}: {quoted}\n  {why}")
    if not isinstance(message, dict) or len(message) != 1 or set(message) - {"row", "late"}:
        raise failed('expected {"row": {...}} (a row it emits), {"late": {"table": ..., "row": '
                     '{...}}} (an event it refused as late) or {"barrier": true, "epoch": '
                     f'{epoch}}} (the acknowledgment of epoch {epoch})')
    try:
        if "row" in message:
            return output_row_from_json(schema, message["row"])
        late = message["late"]
        if not isinstance(late, dict) or set(late) != {"table", "row"}:
            raise ValueError('a late event is {"table": ..., "row": {...}}')
        if late["table"] not in sources:
            raise ValueError(f"unknown table {late['table']!r} (declared: "
                             f"{', '.join(sorted(sources))})")
        row_from_json(sources[late["table"]], late["row"])
        return None
    except ValueError as error:
        raise failed(str(error)) from None


# ------------------------------------------------------------------------------ sessions

class Session(Protocol):
    """One start of an engine, until it is closed or killed."""

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[Written]:
        """Hand over epoch ``number``; what the engine wrote for it, once it acknowledged it."""
        ...

    def close(self) -> None:
        """The end of its input: the engine stops cleanly (a restart, or the end of the run)."""
        ...

    def kill(self, events: list[dict[str, Any]]) -> None:
        """A crash: the engine is killed after ``events`` of an epoch (not its barrier)."""
        ...


class Engine(Protocol):
    """How to start an engine: ``name`` says how it was named on the command line."""

    name: str

    def open(self, header: Header) -> Session: ...


def events_before_kill(crash: Crash, events: int) -> int:
    """How many of the crashed epoch's ``events`` are handed over before the kill."""
    if crash.settle or crash.point == "after_sink":
        return events
    return 0 if crash.point == "before_batch" else (events + 1) // 2


class ExternalExecutor:
    """An :class:`~eowc.verify.executors.Executor` driving an :class:`Engine` through the protocol;
    ``exercised`` counts the restarts and crashes it has played (``restart``, ``crash``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine, self.name = engine, engine.name
        self.exercised: Counter[str] = Counter()

    def emissions(self, case: Case) -> list[Emission]:
        sources = case.parsed.sources
        epochs = [[event_message(e, sources) for e in epoch] for epoch in case.log.epochs]
        schema = case.query.schema
        with tempfile.TemporaryDirectory(prefix="eowc-state-") as state_dir:
            header = Header(case.script, case.convention.value, state_dir)
            session = self.engine.open(header)
            crash, out, k = case.crash, [], 0
            try:
                while k < len(epochs):
                    if crash is not None and crash.epoch == k:
                        session.kill(epochs[k][:events_before_kill(crash, len(epochs[k]))])
                        self.exercised["crash"] += 1
                        crash, session = None, self.engine.open(header)
                        continue
                    for written in session.epoch(k, epochs[k]):
                        row = emitted_row(written, k, schema, sources, self.name)
                        if row is not None:
                            out.append(Emission(k, row))
                    if k in case.restart_after:
                        session.close()
                        self.exercised["restart"] += 1
                        session = self.engine.open(header)
                    k += 1
                session.close()
            except BaseException:
                session.kill([])
                raise
        return out

    def variant(self) -> ExternalExecutor:
        """Itself: an external engine has no other configuration (determinism is checked on a
        log with the same INPUT)."""
        return self


# ------------------------------------------------------------------------------ Python objects

class PythonEngine:
    """``python:MODULE:ATTR``: ATTR of the module (or ``.py`` file) MODULE, called with the
    header's ``script``, ``convention`` and ``state_dir`` as keywords, opens a session with
    ``epoch(number, events)`` (returns the messages of the epoch: ``{"row": {...}}``, ``{"late":
    ...}``) and optionally ``close()``. The current directory is searched first."""

    def __init__(self, spec: str) -> None:
        self.name = spec
        _, _, rest = spec.partition(":")
        module_name, _, attr = rest.rpartition(":")
        if not module_name or not attr:
            raise ExecutorFailed("expected python:MODULE:ATTR (a module or .py file, and a class "
                                 "or function in it)")
        module = _import(module_name)
        if not hasattr(module, attr):
            public = sorted(n for n in vars(module) if not n.startswith("_"))
            raise ExecutorFailed(f"module {module_name} has no attribute {attr!r} (it "
                                 f"has: {', '.join(public) or 'nothing'})")
        self.opener = getattr(module, attr)
        if not callable(self.opener) or (isinstance(self.opener, type)
                                         and not callable(getattr(self.opener, "epoch", None))):
            raise ExecutorFailed(f"{module_name}.{attr} is not an engine: expected a class "
                                 "or function that takes script, convention and state_dir and "
                                 "returns an object with epoch(number, events)")

    def open(self, header: Header) -> Session:
        return python_session(self.name, lambda: self.opener(**header.message()))


def python_session(name: str, opener: Callable[[], Any]) -> Session:
    """The session of the Python object ``opener()`` returns (``name`` says whose it is)."""
    try:
        engine = opener()
    except EowcError as error:  # an engine's refusal, in its own words
        raise QueryRefused(str(error)) from None
    except Exception as error:  # noqa: BLE001 - the user's code: any error is reported
        raise ExecutorFailed(f"{name} failed to open: {_traceback(error)}") from None
    if not callable(getattr(engine, "epoch", None)):
        raise ExecutorFailed(f"{name} returned {engine!r}, which has no method "
                             "epoch(number, events)")
    return _PythonSession(name, engine)


def _import(module_name: str) -> Any:
    """The module ``module_name`` (a dotted name, or a path ending in ``.py``)."""
    try:
        if module_name.endswith(".py"):
            location = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if location is None or location.loader is None or not Path(module_name).is_file():
                raise FileNotFoundError(f"no file {module_name}")
            module = importlib.util.module_from_spec(location)
            location.loader.exec_module(module)
            return module
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - the user's module: any error is reported
        raise ExecutorFailed(f"cannot import {module_name}: "
                             f"{type(error).__name__}: {error}") from None


def _traceback(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)[-STDERR_LINES:]).rstrip()


class _PythonSession:
    def __init__(self, name: str, engine: Any) -> None:
        self.name, self.engine = name, engine

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[Written]:
        try:
            written = self.engine.epoch(number, events)
            return [(message, repr(message)) for message in _listed(written)]
        except ExecutorFailed:
            raise
        except Exception as error:  # noqa: BLE001 - the user's code: any error is reported
            raise ExecutorFailed(f"{self.name} raised in epoch {number}: {_traceback(error)}"
                                 ) from None

    def close(self) -> None:
        closer = getattr(self.engine, "close", None)
        if callable(closer):
            try:
                closer()
            except Exception as error:  # noqa: BLE001 - the user's code: any error is reported
                raise ExecutorFailed(f"{self.name} raised in close(): {_traceback(error)}"
                                     ) from None

    def kill(self, events: list[dict[str, Any]]) -> None:
        self.engine = None  # dropped, never closed: only its state_dir survives


def _listed(written: Iterable[Any] | None) -> list[Any]:
    if written is None:
        return []
    if isinstance(written, dict | str | bytes) or not isinstance(written, Iterable):
        raise ExecutorFailed(f"epoch() returned {written!r}: expected a list of messages "
                             '({"row": {...}} or {"late": {...}})')
    return list(written)


# ------------------------------------------------------------------------------ programs

def _busy_threads(group: int) -> int | None:
    """How many threads of the processes in process group ``group`` run or wait on a disk (Linux
    ``/proc``); None where ``/proc`` cannot tell."""
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    busy = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
                if int(file.read().rpartition(")")[2].split()[2]) != group:  # its pgrp
                    continue
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/stat", encoding="ascii",
                          errors="replace") as file:
                    busy += file.read().rpartition(")")[2].split()[0] in ("R", "D")
    return busy


def _wait_until_idle(group: int, at_most_s: float) -> None:
    """Wait (up to ``at_most_s``) until no thread of the program's process group runs twice in a
    row: it has done all it can with what it read, and waits for more."""
    deadline, idle = time.monotonic() + at_most_s, 0
    while idle < 2 and time.monotonic() < deadline:
        busy = _busy_threads(group)
        if busy is None:
            return
        idle = idle + 1 if busy == 0 else 0
        time.sleep(0.002)


class CommandEngine:
    """``--executor-cmd COMMAND``: the program ``COMMAND`` (run by ``/bin/sh -c``, in a process
    group of its own), speaking the protocol as JSON lines on stdin and stdout; ``timeout_s``
    per epoch. Its stderr is kept and shown when it fails."""

    def __init__(self, command: str, timeout_s: float = EPOCH_TIMEOUT_S) -> None:
        self.command, self.timeout_s = command, timeout_s
        self.name = f"--executor-cmd {shlex.quote(command)}"

    def open(self, header: Header) -> Session:
        return _ProgramSession(self, header)


class _ProgramSession:
    def __init__(self, engine: CommandEngine, header: Header) -> None:
        self.command, self.timeout_s = engine.command, engine.timeout_s
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - kept while it runs
        try:
            self.process = subprocess.Popen(
                self.command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self.stderr, text=True, encoding="utf-8", errors="replace", bufsize=1,
                start_new_session=True)
        except OSError as error:
            raise ExecutorFailed(f"cannot start {self.command!r}: {error}") from None
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._send([header.message()], "the header")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def _failed(self, what: str) -> ExecutorFailed:
        """``what`` happened to the program: an error with the end of its stderr."""
        self.stderr.seek(0)
        tail = self.stderr.read().decode("utf-8", "replace").splitlines()[-STDERR_LINES:]
        shown = "\n".join(f"  | {line}" for line in tail)
        return ExecutorFailed(f"{self.command!r} {what}"
                              + (f"; its stderr ends:\n{shown}" if tail else "; its stderr is empty"))

    def _exited(self, when: str) -> ExecutorFailed:
        status = self.process.wait()
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        return self._failed(f"{how} {when}")

    def _send(self, messages: list[dict[str, Any]], what: str) -> None:
        """Write ``messages``, one line each; a program that does not read them within the
        timeout (its stdin pipe full) is killed."""
        stdin = self.process.stdin
        assert stdin is not None
        text = "".join(json_text(message) + "\n" for message in messages)
        broken: list[OSError] = []

        def write() -> None:
            try:
                stdin.write(text)
                stdin.flush()
            except OSError as error:  # a broken pipe: the program is gone
                broken.append(error)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(self.timeout_s)
        if writer.is_alive():
            self.kill([])
            raise self._failed(f"did not read {what} within {self.timeout_s:g} s (killed)")
        if broken:
            raise self._exited(f"while eowc wrote {what}")

    def _line(self, deadline: float, late: str) -> str | None:
        """The program's next line, None at the end of its output; if none comes by
        ``deadline`` it is killed, and the error says it ``late`` (what it did not do)."""
        try:
            return self.lines.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            self.kill([])
            raise self._failed(f"{late} within {self.timeout_s:g} s (killed)") from None

    def _drained(self) -> None:
        """Wait (up to the epoch's timeout) until the program has read all eowc wrote: no byte
        left in its stdin pipe (``FIONREAD``), or it is gone."""
        assert self.process.stdin is not None
        deadline = time.monotonic() + self.timeout_s
        while self.process.poll() is None and time.monotonic() < deadline:
            left = fcntl.ioctl(self.process.stdin.fileno(), termios.FIONREAD, b"\0\0\0\0")
            if struct.unpack("i", left)[0] == 0:
                return
            time.sleep(0.001)

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[Written]:
        deadline = time.monotonic() + self.timeout_s
        self._send([*events, barrier_message(number)], f"epoch {number}")
        written: list[Written] = []
        while True:
            line = self._line(deadline, f"did not acknowledge epoch {number}")
            if line is None:
                raise self._exited(f"before acknowledging epoch {number} (the rows it wrote for "
                                   "it are discarded)")
            if not line.strip():
                continue
            try:
                message = parse_json(line)
            except json.JSONDecodeError as error:
                raise self._failed(f"wrote, in epoch {number}, a line that is not JSON "
                                   f"({error.msg} at column {error.colno}): {line}") from None
            if is_refusal(message):
                self.kill([])
                raise QueryRefused(message["refused"])
            if is_barrier(message):
                if message["epoch"] != number:
                    raise self._failed(f"acknowledged epoch {message['epoch']!r} where eowc "
                                       f"waits for epoch {number}: {line}")
                return written
            written.append((message, line))

    def close(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        deadline = time.monotonic() + self.timeout_s
        while (line := self._line(deadline, "did not exit at the end of its input")) is not None:
            if line.strip():
                self.kill([])
                raise self._failed(f"wrote after its last acknowledgment, once its input "
                                   f"ended: {line}")
        try:
            status = self.process.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:  # its output ended, but it runs on
            self.kill([])
            raise self._failed(f"did not exit at the end of its input within "
                               f"{self.timeout_s:g} s (killed)") from None
        if status != 0:
            raise self._failed(f"exited with status {status} at the end of its input "
                               "(expected 0)")
        self.stderr.close()

    def kill(self, events: list[dict[str, Any]]) -> None:
        if events and self.process.poll() is None:
            with contextlib.suppress(ExecutorFailed):  # it is being killed anyway
                self._send(events, "the events before the crash")
                self._drained()
                _wait_until_idle(self.process.pid, SETTLE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the program and what it started
        self.process.wait()
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()


# ------------------------------------------------------------------------------ serving

def serve_line_protocol(opener: Any, stdin: IO[str], stdout: IO[str]) -> None:
    """The program side of the line protocol: ``opener(script=..., convention=...,
    state_dir=...)`` opens a session (an object with ``epoch(number, events)`` and ``close()``)
    from the header on ``stdin``; each epoch's events are handed over at its barrier, and the
    messages ``epoch`` returns are written to ``stdout``, then the acknowledgment. At the end
    of ``stdin`` the session is closed. An opener that refuses the script (an EowcError) is
    answered with the refusal message. A line that is not a message is a ValueError."""
    header = _next_message(stdin)
    if header is None:
        return
    if not isinstance(header, dict) or set(header) != {"script", "convention", "state_dir"}:
        raise ValueError(f"expected the header {{\"script\": ..., \"convention\": ..., "
                         f"\"state_dir\": ...}} first, got {header!r}")
    try:
        session = opener(**header)
    except EowcError as error:  # the engine cannot run this script: say why, and end
        stdout.write(json_text(refusal_message(str(error))) + "\n")
        stdout.flush()
        return
    events: list[dict[str, Any]] = []
    while (message := _next_message(stdin)) is not None:
        if is_barrier(message):
            for written in session.epoch(message["epoch"], events):
                stdout.write(json_text(written) + "\n")
            stdout.write(json_text(barrier_message(message["epoch"])) + "\n")
            stdout.flush()
            events = []
        elif isinstance(message, dict) and set(message) == {"table", "row"}:
            events.append(message)
        else:
            raise ValueError(f"expected an event {{\"table\": ..., \"row\": {{...}}}} or a "
                             f"barrier, got {message!r}")
    session.close()


def _next_message(stdin: IO[str]) -> Any:
    """The next non-empty line of ``stdin`` as JSON; None at its end."""
    for line in stdin:
        if line.strip():
            return parse_json(line)
    return None
