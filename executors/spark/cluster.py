"""A Spark standalone cluster on this machine, from the pip-installed PySpark: one master and
``n`` workers, each a JVM started with ``<pyspark>/bin/spark-class`` and bound to 127.0.0.1.

Usage::

    with local_standalone_cluster(workers=2) as cluster:
        subprocess.run(["eowc", "run", "--engine", "spark", "--master", cluster.master_url, ...])

:func:`local_standalone_cluster` starts the master, then the workers (each with ``cores`` cores,
``memory`` of executor memory, and its own work directory ``<directory>/worker-<i>``, where the
executors of every application keep their files under ``app-<id>/<executor id>/``), waits until
the master's web UI (``<webui_url>/json/``) lists every worker as ``ALIVE``, and on exit stops
the processes it started (SIGTERM, then SIGKILL after a grace period) and nothing else. Logs
of the daemons go to ``<directory>/logs``. ``SPARK_HOME`` is the one the session uses
(:func:`~eowc.executors.spark.session.spark_home`).

The executors the workers start run the Python of the driver (``PYSPARK_PYTHON``, which
:func:`eowc.executors.spark.session.spark_session` sets) and find this project through the
``PYTHONPATH`` that the session gives its executors, so a cluster on this machine (or one that
sees the same file system) runs the EOWC executors as ``local`` mode does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eowc.executors.spark.session import SparkSetupError, check_java, spark_home

#: Spark's class of the standalone master and of a worker.
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"
#: The main class of an executor JVM that a worker launches for an application.
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (another process may take it before it is used;
    the start-up then fails and says so)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass
class Daemon:
    """A master or worker JVM that :func:`local_standalone_cluster` started."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    webui_port: int
    work_dir: Path | None = None

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the daemon's log (standard output and error)."""
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return "(no log)"


@dataclass
class StandaloneCluster:
    """A running cluster: ``master_url`` is what ``--master`` takes; ``webui_url`` is the
    master's web UI; ``workers`` are the worker daemons, in start order."""

    master_url: str
    webui_url: str
    directory: Path
    master: Daemon
    workers: list[Daemon] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        """The master's state as its web UI reports it (``<webui_url>/json/``): ``workers``
        (each with ``id``, ``host``, ``port``, ``webuiaddress``, ``state``, ``cores``,
        ``coresused``), ``aliveworkers``, ``activeapps`` and ``completedapps``."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=10) as response:
            return json.loads(response.read().decode("utf-8"))

    def alive_workers(self) -> int:
        """How many workers the master lists as ``ALIVE``."""
        return sum(1 for worker in self.state().get("workers", []) if worker.get("state") == "ALIVE")

    def executor_dirs(self) -> dict[str, list[Path]]:
        """Per worker (by name), the executor directories ``app-<id>/<executor id>`` in its work
        directory: one per executor that worker launched."""
        result: dict[str, list[Path]] = {}
        for worker in self.workers:
            assert worker.work_dir is not None
            result[worker.name] = sorted(path for app in worker.work_dir.glob("app-*")
                                         for path in app.iterdir() if path.is_dir())
        return result

    def workers_of_executors(self, application: str) -> dict[str, str]:
        """Executor id to the name of the worker that launched it, for the executors of
        ``application`` (its id, e.g. ``app-20261126163700-0000``): every executor it ever
        had, those that died included."""
        return {path.name: worker for worker, paths in self.executor_dirs().items()
                for path in paths if path.parent.name == application}

    def executor_pids(self, worker: Daemon) -> list[int]:
        """The live executor JVMs (``CoarseGrainedExecutorBackend``) that ``worker`` launched:
        its descendant processes running that class."""
        return [pid for pid in _descendants(worker.process.pid)
                if EXECUTOR_CLASS in _command_line(pid)]

    def kill_executor(self, worker: Daemon, timeout: float = 30.0) -> int:
        """SIGKILL the one executor JVM that ``worker`` runs (the driver and the worker live
        on; the worker reports the loss and the master may launch a new executor there) and
        wait until it is gone; its pid. SparkSetupError if the worker runs not exactly one
        executor or the process survives ``timeout`` seconds."""
        pids = self.executor_pids(worker)
        if len(pids) != 1:
            raise SparkSetupError(f"{worker.name} runs {len(pids)} executors ({pids}), not one")
        (pid,) = pids
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while _is_alive(pid):
            if time.monotonic() > deadline:
                raise SparkSetupError(f"the executor {pid} of {worker.name} survived SIGKILL")
            time.sleep(0.1)
        return pid


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                continue
            parent = int(text[text.rindex(")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(entry))
    return children


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` in the process tree (children, their children, ...)."""
    children = _children_by_parent()
    found, pending = [], list(children.get(pid, []))
    while pending:
        child = pending.pop()
        found.append(child)
        pending.extend(children.get(child, []))
    return found


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", errors="replace")
    except OSError:
        return ""


def _is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return False
    return text[text.rindex(")") + 2:].split()[0] not in ("Z", "X")


def _start(name: str, arguments: list[str], directory: Path, env: Mapping[str, str],
           webui_port: int, work_dir: Path | None = None) -> Daemon:
    log = directory / "logs" / f"{name}.log"
    with log.open("wb") as handle:
        process = subprocess.Popen([str(Path(env["SPARK_HOME"]) / "bin" / "spark-class"), *arguments],
                                   stdin=subprocess.DEVNULL, stdout=handle,
                                   stderr=subprocess.STDOUT, env=dict(env), cwd=directory)
    return Daemon(name, process, log, webui_port, work_dir)


def _stop(daemons: list[Daemon], grace: float) -> None:
    """SIGTERM each daemon (workers first, so they stop their executors), wait, then SIGKILL
    those still running. Only these processes are signalled."""
    for daemon in daemons:
        if daemon.process.poll() is None:
            daemon.process.terminate()
    deadline = time.monotonic() + grace
    for daemon in daemons:
        try:
            daemon.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            daemon.process.kill()
            daemon.process.wait(timeout=30)


def _wait_until_ready(cluster: StandaloneCluster, workers: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    alive = 0
    while time.monotonic() < deadline:
        for daemon in [cluster.master, *cluster.workers]:
            if daemon.process.poll() is not None:
                raise SparkSetupError(
                    f"the Spark {daemon.name} exited with code {daemon.process.returncode} while "
                    f"the cluster started; its log {daemon.log} ends with:\n{daemon.log_tail()}")
        with contextlib.suppress(OSError, ValueError, urllib.error.URLError):
            alive = cluster.alive_workers()
            if alive >= workers:
                return
        time.sleep(0.5)
    raise SparkSetupError(
        f"the Spark standalone cluster did not get {workers} ALIVE workers within {timeout:.0f} s "
        f"({alive} alive); logs in {cluster.directory / 'logs'}:\n{cluster.master.log_tail()}")


@contextlib.contextmanager
def local_standalone_cluster(workers: int = 2, cores: int = 1, memory: str = "1g",
                             directory: str | os.PathLike[str] | None = None,
                             timeout: float = 180.0, grace: float = 30.0,
                             env: Mapping[str, str] | None = None) -> Iterator[StandaloneCluster]:
    """Start a standalone master and ``workers`` workers on 127.0.0.1 (free ports for the RPC
    and web UIs), yield the cluster once every worker is ALIVE, and stop them on exit.

    ``cores`` and ``memory`` are what each worker offers to applications. ``directory`` (default:
    a new temporary directory, removed afterwards) holds ``logs/`` and the workers' work
    directories. ``env`` (default ``os.environ``) is the daemons' environment, with
    ``SPARK_HOME`` set to :func:`~eowc.executors.spark.session.spark_home`'s. Raises
    :class:`SparkSetupError` when Java is missing or too old, or a daemon exits or the workers
    do not register within ``timeout`` seconds (the message has the end of the log)."""
    base = dict(os.environ if env is None else env)
    check_java(base)
    base["SPARK_HOME"] = str(spark_home(base))
    base.setdefault("SPARK_DAEMON_JAVA_OPTS", "-XX:TieredStopAtLevel=1")
    with contextlib.ExitStack() as stack:
        if directory is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="eowc-cluster-")))
        else:
            root = Path(directory)
            root.mkdir(parents=True, exist_ok=True)
        (root / "logs").mkdir(exist_ok=True)
        base["SPARK_LOG_DIR"] = str(root / "logs")
        port, webui = free_port(), free_port()
        master = _start("master", [MASTER_CLASS, "--host", HOST, "--port", str(port),
                                   "--webui-port", str(webui)], root, base, webui)
        cluster = StandaloneCluster(f"spark://{HOST}:{port}", f"http://{HOST}:{webui}", root, master)
        try:
            for index in range(workers):
                work_dir = root / f"worker-{index}"
                work_dir.mkdir(exist_ok=True)
                worker_webui = free_port()
                cluster.workers.append(_start(
                    f"worker-{index}",
                    [WORKER_CLASS, "--host", HOST, "--cores", str(cores), "--memory", memory,
                     "--webui-port", str(worker_webui), "--work-dir", str(work_dir),
                     cluster.master_url],
                    root, base, worker_webui, work_dir))
            _wait_until_ready(cluster, workers, timeout)
            yield cluster
        finally:
            _stop([*cluster.workers, cluster.master], grace)
