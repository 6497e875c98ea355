"""``--executor flink-native``: Apache Flink's own operators (:mod:`eowc.executors.flink.engine`)
behind the protocol of :mod:`eowc.verify.external`, under the flink convention only.

Where PyFlink is installed in this environment, the engine runs in process (one JVM for the
whole verify run, a job per case; a crash cancels the job and restores the last epoch's
savepoint). Elsewhere (PyFlink pins older pandas, pyarrow and protobuf than eowc's other
extras, so it lives in an environment of its own) it is the program ``eowc engine flink`` of the
Flink environment :func:`flink_environment` finds, over the line protocol (a JVM per run; a
crash is a real SIGKILL of its process group)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from eowc.executors.flink.engine import FlinkSession
from eowc.semantics.rules.triggers import Convention
from eowc.verify.external import (
    CommandEngine,
    ExecutorFailed,
    ExternalExecutor,
    Header,
    Session,
    python_session,
)

#: The environment variable that names a Flink environment (a virtual environment with eowc
#: and apache-flink), and where ``eowc engine env`` makes them.
FLINK_ENV_VARIABLE = "EOWC_FLINK_ENV"
ENGINES_HOME = Path(os.environ.get("EOWC_ENGINES_HOME", Path.home() / ".cache" / "eowc" / "engines"))


def flink_environment() -> Path | None:
    """The Flink environment to run: ``$EOWC_FLINK_ENV``, else the newest release's under
    :data:`ENGINES_HOME` (``flink-2.3.0``, ...); None without one."""
    named = os.environ.get(FLINK_ENV_VARIABLE)
    if named:
        return Path(named)
    found = sorted(ENGINES_HOME.glob("flink-*/bin/eowc"),
                   key=lambda p: tuple(int(x) for x in p.parent.parent.name[6:].split(".")
                                       if x.isdigit()))
    return found[-1].parent.parent if found else None


class _InProcessFlink:
    """Flink's own operators in this process: a session is a :class:`FlinkSession`."""

    name = "flink-native"

    def open(self, header: Header) -> Session:
        return python_session(self.name, lambda: FlinkSession(**header.message()))


class FlinkNativeExecutor(ExternalExecutor):
    """Flink's own operators, under the flink convention only
    (:func:`~eowc.verify.cases.bound_convention`)."""

    convention = Convention.FLINK
    #: Flink ranks rows with equal ORDER BY values in arrival order (its window Top-N on
    #: generated logs with ties: docs/engines.md), as ``--ties row-id`` orders them.
    ties = "row-id"

    def __init__(self) -> None:
        if importlib.util.find_spec("pyflink") is not None:
            super().__init__(_InProcessFlink())
            return
        environment = flink_environment()
        if environment is None:
            raise ExecutorFailed(
                "flink-native needs Apache Flink: PyFlink is not installed here, and no Flink "
                f"environment was found (${FLINK_ENV_VARIABLE}, or {ENGINES_HOME}/flink-*). "
                "Make one with: eowc engine env flink 2.3.0")
        engine = CommandEngine(f"{environment / 'bin' / 'eowc'} engine flink")
        engine.name = "flink-native"
        super().__init__(engine)
