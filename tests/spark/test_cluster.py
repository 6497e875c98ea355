"""The EOWC executors on a real Spark standalone cluster: one master and two workers on
127.0.0.1 (:func:`eowc.executors.spark.cluster.local_standalone_cluster`), one core each.

``eowc run --engine spark --master spark://...`` runs in a process of its own (this test
session's shared Spark session is ``local[2]``, and a JVM has one SparkContext) and must print
what ``--engine reference`` prints, with the stateful tasks spread over executors on both
workers: ``spark.cores.max=2`` and ``spark.scheduler.minRegisteredResourcesRatio=1.0`` make the
driver wait for both one-core executors before the first batch, and the two shuffle partitions of
the session (one stateful task each) then run one on each. Spark's event log (uncompressed, not
rolled) records which executor ran each task; the workers' work directories
(``app-<id>/<executor id>``) record which worker launched which executor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from eowc.executors.spark.cluster import StandaloneCluster, local_standalone_cluster
from tests.spark.test_executors_on_spark import write_case

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two one-core workers; stopped (only these processes) after the module."""
    with local_standalone_cluster(workers=2, cores=1, memory="1g",
                                  directory=tmp_path_factory.mktemp("cluster")) as running:
        yield running
    for daemon in [running.master, *running.workers]:
        assert daemon.process.poll() is not None, f"{daemon.name} still runs"


def eowc(*args: str, env: dict[str, str] | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``eowc`` in a subprocess run from the project root (its Python workers import the project
    from there in local mode)."""
    return subprocess.run([sys.executable, "-m", "eowc.verify.cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def tasks_per_executor(event_dir: Path) -> Counter[str]:
    """Successful tasks per executor id, from the (uncompressed) event log of the one
    application that wrote to ``event_dir``."""
    logs = [path for path in event_dir.iterdir() if path.is_file() and not path.name.startswith(".")]
    assert len(logs) == 1, logs
    counts: Counter[str] = Counter()
    with logs[0].open(encoding="utf-8") as handle:
        for line in handle:
            event = json.loads(line)
            if (event["Event"] == "SparkListenerTaskEnd"
                    and event["Task End Reason"]["Reason"] == "Success"):
                counts[event["Task Info"]["Executor ID"]] += 1
    return counts


def test_group_agg_on_a_standalone_cluster_equals_the_reference(cluster: StandaloneCluster,
                                                                 tmp_path: Path) -> None:
    query, events = write_case(tmp_path, "group_agg")
    common = ["run", query, events, "--with-epoch", "--close"]
    reference = eowc(*common, "--engine", "reference")
    assert reference.returncode == 0, reference.stderr

    event_dir = tmp_path / "events"
    event_dir.mkdir()
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, EOWC_SPARK_CONF=" ".join([
        "spark.cores.max=2", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime=300s",
        "spark.eventLog.enabled=true", f"spark.eventLog.dir=file:{event_dir}",
        "spark.eventLog.compress=false", "spark.eventLog.rolling.enabled=false"]))
    started = time.monotonic()
    on_cluster = eowc(*common, "--engine", "spark", "--master", cluster.master_url,
                      "--workdir", str(tmp_path / "work"), env=env, timeout=900)
    elapsed = time.monotonic() - started
    assert on_cluster.returncode == 0, on_cluster.stderr[-4000:]
    assert reference.stdout.strip(), "the case emits nothing: it would prove nothing"
    assert on_cluster.stdout == reference.stdout  # same rows, same epochs, same order
    assert reference.stderr.strip().splitlines()[-1] in on_cluster.stderr  # same late rows
    print(f"eowc run on the standalone cluster: {elapsed:.0f} s")

    # The application ran on the cluster, with one executor on each worker ...
    apps = cluster.state()["completedapps"] + cluster.state()["activeapps"]
    assert [app["name"] for app in apps] == ["eowc"], apps
    executors = {worker: [path.name for path in paths]
                 for worker, paths in cluster.executor_dirs().items()}
    assert all(len(ids) == 1 for ids in executors.values()), executors
    # ... and each of those executors ran tasks.
    tasks = tasks_per_executor(event_dir)
    for worker, (executor_id,) in executors.items():
        assert tasks[executor_id] > 0, (worker, executor_id, tasks)
    assert "driver" not in tasks
