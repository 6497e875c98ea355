"""The EOWC executors on a real Spark standalone cluster: one master and two workers on
127.0.0.1 (:func:`eowc.executors.spark.cluster.local_standalone_cluster`), one core each, and
a driver in a child process (this test session's shared Spark session is ``local[2]``, and a
JVM has one SparkContext).

The child runs three queries in turn in one application, each over a log of many keys (30
auctions): a group aggregate (keyed by the group), an interval join (keyed by the join key)
and a session window (keyed by its partition key). ``spark.cores.max=2`` and
``spark.scheduler.minRegisteredResourcesRatio=1.0`` make the driver wait for both one-core
executors before the first batch; the stateful stage has two shuffle partitions (one task
each). Spark's task metrics (:mod:`eowc.executors.spark.task_metrics`) say which executor ran
each stateful task and how many rows it read; the workers' work directories
(``app-<id>/<executor id>``) say which worker launched which executor.

While the session query runs, the executor JVM of worker-0 is killed with SIGKILL (the driver
and the workers live on): Spark reruns the lost tasks on the other executor and on the one
the master launches to replace it, and the output must still be the reference's, nothing
lost and nothing twice.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from eowc.executors.spark.cluster import StandaloneCluster, local_standalone_cluster
from eowc.executors.spark.crash import CheckpointFiles, QueryRun, start_runs
from eowc.executors.spark.runner import collect_run
from eowc.executors.spark.sink import read_batches
from eowc.executors.spark.task_metrics import TaskRows, read_task_rows
from eowc.semantics.engines.interpreter import Emission, LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.rules.triggers import Convention

pytestmark = pytest.mark.slow

CONVENTION = Convention.FLINK
BIDS = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
ASKS = ("CREATE SOURCE asks (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
#: The queries, in the order the child runs them (the executor is killed during the last).
QUERIES = {
    "group_agg": BIDS + "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                        "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                        "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
    "interval_join": BIDS + ASKS + "SELECT b.ts AS bid_ts, a.ts AS ask_ts, b.auction, b.price, "
                                   "a.price AS ask FROM bids b LEFT JOIN asks a ON b.auction = "
                                   "a.auction AND b.ts BETWEEN a.ts - INTERVAL '2' SECOND AND "
                                   "a.ts + INTERVAL '2' SECOND EMIT ON WINDOW CLOSE",
    "session": BIDS + "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                      "FROM TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), "
                      "INTERVAL '3' SECOND)) GROUP BY auction, window_start, window_end "
                      "EMIT ON WINDOW CLOSE",
}
#: What a query needs before its stateful work can spread over the workers (on a branch where
#: its executor is still keyed by one value, its "both workers" check fails with this).
NEEDS = {
    "group_agg": "EowcGroupAgg keyed by (window, hash bucket of the group) (branch `keyed`); "
                 "keyed by the window alone, one task holds every group of a window",
    "interval_join": "the interval join keyed by join-key buckets (branch `join`); keyed by "
                     "the empty key, one task holds the whole join",
    "session": "",
}
AUCTIONS, EPOCHS = 30, 5
#: Spark settings of the child: wait for both one-core executors before the first batch.
SETTINGS = {"spark.cores.max": "2", "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s"}
#: The session query's sink batches before worker-0's executor is killed (of 12).
BATCHES_BEFORE_THE_KILL = 3


def _line(table: str, auction: int, price: int, second: int) -> str:
    return json.dumps({"table": table, "row": {
        "auction": auction, "price": price, "ts": f"2024-01-01 00:{second // 60:02d}:{second % 60:02d}"}})


def write_logs(directory: Path) -> dict[str, Path]:
    """Arrival logs of :data:`AUCTIONS` auctions over :data:`EPOCHS` epochs of 4 s of event
    time: a bid of every auction an epoch (out of order within the epoch), an ask of every
    other auction; in epoch 4, bids of two auctions 8 s behind the watermark (late: their
    windows and sessions are closed)."""
    bids, both = [], []
    for epoch in range(EPOCHS):
        lines = []
        for auction in range(AUCTIONS):
            second = 4 * epoch + (auction * 7) % 4
            lines.append(_line("bids", auction, (auction * 13 + epoch) % 50, second))
        if epoch == 4:
            lines += [_line("bids", 1, 99, 1), _line("bids", 2, 98, 2)]
        asks = [_line("asks", auction, (auction * 3 + epoch) % 40, 4 * epoch + (auction % 3))
                for auction in range(0, AUCTIONS, 2)]
        bids += [*lines, '{"barrier": true}']
        both += [*lines, *asks, '{"barrier": true}']
    paths = {"bids": directory / "bids.jsonl", "both": directory / "bids_and_asks.jsonl"}
    paths["bids"].write_text("\n".join(bids) + "\n", encoding="utf-8")
    paths["both"].write_text("\n".join(both) + "\n", encoding="utf-8")
    return paths


@dataclass(frozen=True)
class Case:
    """A query run on the cluster, and what the reference interpreter gives on its log."""

    name: str
    run: QueryRun
    expected: list[Emission]
    expected_late: Counter[tuple]
    #: The rows late for their own table: under flink an interval join keeps them and judges
    #: them itself (none is late), so the case proves something only if there are some.
    late_for_their_table: Counter[tuple]

    def query_id(self) -> str:
        """The streaming query's id (kept in its checkpoint)."""
        metadata = self.run.workdir / "checkpoint" / "metadata"
        return json.loads(metadata.read_text(encoding="utf-8"))["id"]

    def output(self) -> tuple[list[Emission], Counter[tuple]]:
        """The emissions and late rows the run wrote to its sink."""
        script = parse_script(Path(self.run.query).read_text(encoding="utf-8"))
        run = collect_run(load_arrival_log(self.run.events, script.sources).log, self.run.workdir)
        return run.emissions, Counter(r.event.row for r in run.late)


def make_case(directory: Path, name: str, events: Path) -> Case:
    query = directory / f"{name}.sql"
    query.write_text(QUERIES[name], encoding="utf-8")
    script = parse_script(QUERIES[name])
    late: list[LateRow] = []
    log = load_arrival_log(str(events), script.sources).log
    expected = list(run_eowc(script.query, log, CONVENTION, close=True, late=late.append))
    own: list[LateRow] = []  # RisingWave judges every row at its own table's watermark
    list(run_eowc(script.query, log, Convention.RISINGWAVE, close=True, late=own.append))
    return Case(name, QueryRun(str(query), str(events), directory / name), expected,
                Counter(r.event.row for r in late), Counter(r.event.row for r in own))


@dataclass(frozen=True)
class ClusterRun:
    """What the child did on the cluster: its cases, the application's stateful task rows,
    the worker of each executor, and the executor kill (its pid, the executors worker-0 ran
    and the session's sink batches at the time, and the session's batches at the end)."""

    cases: dict[str, Case]
    tasks: list[TaskRows]
    worker_of: dict[str, str]
    killed_pid: int
    executors_before_the_kill: list[int]
    batches_at_the_kill: tuple[int, ...]
    driver_log: str
    seconds: float


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two one-core workers; stopped (only these processes) after the module."""
    with local_standalone_cluster(workers=2, cores=1, memory="1g",
                                  directory=tmp_path_factory.mktemp("cluster")) as running:
        yield running
    for daemon in [running.master, *running.workers]:
        assert daemon.process.poll() is not None, f"{daemon.name} still runs"


@pytest.fixture(scope="module")
def cluster_run(cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory) -> ClusterRun:
    """The three queries in turn in one application on the cluster, worker-0's executor
    killed once the session query has written :data:`BATCHES_BEFORE_THE_KILL` batches."""
    directory = tmp_path_factory.mktemp("runs")
    logs = write_logs(directory)
    cases = {name: make_case(directory, name, logs["both" if name == "interval_join" else "bids"])
             for name in QUERIES}
    session = cases["session"].run.workdir
    worker = cluster.workers[0]
    started = time.monotonic()
    with start_runs([case.run for case in cases.values()], CONVENTION, cluster.master_url,
                    directory / "child", close=True, settings=SETTINGS) as child:
        child.wait_until(lambda: len(CheckpointFiles.of(session).sink) >= BATCHES_BEFORE_THE_KILL,
                         600, f"{BATCHES_BEFORE_THE_KILL} batches of the session query")
        executors = cluster.executor_pids(worker)
        killed = cluster.kill_executor(worker)
        at_kill = CheckpointFiles.of(session).sink
        child.finish(600)
    application, tasks = read_task_rows(child.task_rows)
    return ClusterRun(cases, tasks, cluster.workers_of_executors(application), killed, executors,
                      at_kill, child.log.read_text(encoding="utf-8", errors="replace"),
                      time.monotonic() - started)


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_query_on_the_cluster_gives_the_reference_output(cluster_run: ClusterRun, name: str
                                                          ) -> None:
    case = cluster_run.cases[name]
    assert case.expected and case.late_for_their_table, "the case would prove nothing"
    emissions, late = case.output()
    assert emissions == case.expected  # the same rows in the same epochs, in the same order
    assert late == case.expected_late
    batches = [batch.batch_id for batch in read_batches(case.run.workdir / "output")]
    assert batches == list(range(len(batches)))  # each batch once
    print(f"{name}: {len(emissions)} rows; the child took {cluster_run.seconds:.0f} s")


@pytest.mark.parametrize("name", list(QUERIES))
def test_both_workers_run_stateful_tasks(cluster_run: ClusterRun, name: str) -> None:
    """Each worker's executors ran stateful tasks of the query that read rows (Spark's task
    metrics), and no stateful task ran on the driver."""
    query = cluster_run.cases[name].query_id()
    tasks = [task for task in cluster_run.tasks if task.query == query]
    assert tasks, f"no stateful task of {name} in Spark's status store"
    rows: Counter[str] = Counter()
    for task in tasks:
        assert task.executor in cluster_run.worker_of, (task, cluster_run.worker_of)
        rows[cluster_run.worker_of[task.executor]] += task.rows
    print(f"{name}: stateful rows per worker {dict(rows)}")
    needs = f"; this needs {NEEDS[name]}" if NEEDS[name] else ""
    assert all(rows[worker] > 0 for worker in ("worker-0", "worker-1")), (
        f"{name}: the stateful rows per worker are {dict(rows)}: one worker did all the "
        f"stateful work{needs}")


def test_a_killed_executor_loses_and_duplicates_nothing(cluster_run: ClusterRun) -> None:
    case = cluster_run.cases["session"]
    # The kill hit worker-0's one executor of the application while the query ran, and the
    # driver lost it (the worker reported its exit code: 128 + SIGKILL) ...
    assert cluster_run.executors_before_the_kill == [cluster_run.killed_pid]
    total = len(read_batches(case.run.workdir / "output"))
    assert BATCHES_BEFORE_THE_KILL <= len(cluster_run.batches_at_the_kill) < total
    assert "exited with code 137" in cluster_run.driver_log
    # ... and the master replaced it there (worker-0 launched a second executor).
    on_worker_0 = [e for e, worker in cluster_run.worker_of.items() if worker == "worker-0"]
    assert len(on_worker_0) == 2, cluster_run.worker_of
    # Nothing lost, nothing twice: the rows, counted, are the reference's.
    emissions, late = case.output()
    assert Counter(emissions) == Counter(case.expected)
    assert emissions == case.expected and late == case.expected_late
