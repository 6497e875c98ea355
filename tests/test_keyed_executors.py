"""The executors keyed as the semantics keys them (issue 19): a group aggregate by (window, hash
bucket of the group), many keys per window; the EOWC sort hash-partitioned by the primary key
(or the whole row), ordered by the watermark column within each partition and interleaved
across them, one total order with ``--sort-partitions 1``; the ``ordered`` property judging
each partition on the order the executor emitted in, and failing on a sort that drains a
partition in insertion order."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from eowc.executors.buckets import GROUP_BUCKETS, bucket_of
from eowc.executors.choice import processor_for
from eowc.executors.driver import PartitionEmission, emission_order, run_in_process
from eowc.executors.plan import ExecutorOptions
from eowc.executors.processors import (
    Arrival,
    Emit,
    EowcGroupAgg,
    EowcSort,
    SortAgg,
    closing_timer_ms,
)
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.engines.interpreter import Emission, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import parse_arrival_log
from eowc.semantics.ir.windows import Window
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.executors import InProcessExecutor
from eowc.verify.mutants import MutantExecutor, mutant_named
from eowc.verify.properties import OrderedExtent, ordered
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import builtin_targets, run_suite

RW = Convention.RISINGWAVE
S = 1_000_000
BASE = 1_700_000_000 * S  # 2023-11-14 22:13:20 UTC, a whole 10 s
ORDERS = ("CREATE SOURCE orders (id BIGINT, ts TIMESTAMP, PRIMARY KEY (id), "
          "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);\n")
SORT = ORDERS + "SELECT id, ts FROM orders EMIT ON WINDOW CLOSE"
SUITE = Path(__file__).parent.parent / "verify" / "suite"


def _time(seconds: int) -> str:
    """The timestamp ``seconds`` after BASE, as an event gives it."""
    return (dt.datetime(2023, 11, 14, 22, 13, 20) + dt.timedelta(seconds=seconds)).isoformat(" ")


def _script_and_log(sql: str, epochs: list[list[dict]]):
    parsed = parse_script(sql)
    lines = []
    for epoch in epochs:
        lines += [json.dumps({"table": "orders", "row": row}) for row in epoch]
        lines.append('{"barrier": true}')
    return parsed.query, parse_arrival_log(lines, parsed.sources).log


# ------------------------------------------------------------------ emission order, by hand

def _emit(t: int, partition: int | None) -> Emit:
    return Emit(("row", t), (t, ()), partition)


def test_emission_order_keeps_each_partitions_order_and_merges_them_by_order() -> None:
    # partition 0 emitted 3 then 5, partition 1 emitted 1 then 4: merged 1, 3, 4, 5
    emitted = [_emit(3, 0), _emit(5, 0), _emit(1, 1), _emit(4, 1)]
    assert [e.row[1] for e in emission_order(emitted)] == [1, 3, 4, 5]
    # a partition that emitted 5 before 3 keeps that order (a check must see it)
    wrong = [_emit(5, 0), _emit(3, 0), _emit(1, 1), _emit(4, 1)]
    merged = [e.row[1] for e in emission_order(wrong)]
    assert merged.index(5) < merged.index(3)
    # rows of no partition are put in place by their order, as the reference's
    assert [e.row[1] for e in emission_order([_emit(5, None), _emit(3, None), _emit(4, None)])] \
        == [3, 4, 5]


def _sort_rows(*times: int) -> list[Emission]:
    return [Emission(0, (i, BASE + t * S)) for i, t in enumerate(times)]


def test_ordered_judges_each_partition_on_its_own() -> None:
    query = parse_script(SORT).query
    p = [PartitionEmission(e.epoch, e.row, part) for e, part in zip(
        _sort_rows(3, 1, 5, 4), [0, 1, 0, 1], strict=True)]
    extent = OrderedExtent()
    assert ordered(query, RW, p, extent) is None  # 3, 5 in 0; 1, 4 in 1: interleaved across
    assert (extent.rows, len(extent.partitions), extent.compared) == (4, 2, 2)
    swapped = [p[2], p[1], p[0], p[3]]  # 5 before 3 in partition 0
    violation = ordered(query, RW, swapped)
    assert violation is not None and "in partition 0" in violation.message
    # without partitions the epoch is one: 3 then 1 is out of order
    assert ordered(query, RW, _sort_rows(3, 1)) is not None
    assert ordered(query, RW, [PartitionEmission(0, r.row, k) for r, k in
                               zip(_sort_rows(3, 1), [0, 1], strict=True)]) is None


# -------------------------------------------------------------- the sort, over two partitions

#: ids and event times (seconds after BASE) of epoch 0; id 7 at 20 s moves the watermark to
#: 20 s (delay 0), which completes every other row; epoch 1 moves it to 40 s.
EPOCH_0 = [(1, 5), (2, 3), (3, 4), (4, 1), (5, 2), (6, 6), (7, 20)]
EPOCH_1 = [(8, 40)]


def _orders() -> tuple:
    return _script_and_log(SORT, [[{"id": i, "ts": _time(t)} for i, t in EPOCH_0],
                                  [{"id": i, "ts": _time(t)} for i, t in EPOCH_1]])


def _raw_emits(sort: EowcSort, epoch: list[tuple[int, int]], watermark_ms: int) -> list[Emit]:
    """What the executor emits for one epoch, in the order it emits it: the rows handed key by
    key, then the timers fired in (expiry, key) order, as Spark and the driver do."""
    store = MemoryStore()
    sort.init(memory_handle(store))
    by_key: dict = {}
    for seq, (i, t) in enumerate(epoch):
        row = (i, BASE + t * S)
        by_key.setdefault(sort.key_of(row), []).append(Arrival(seq, 1, row[1], row))
    out = []
    for key in sorted(by_key):
        store.current_key = key
        out += sort.handle_rows(key, by_key[key], 0)
    while (timer := store.pop_due_timer(watermark_ms)) is not None:
        store.current_key = timer[1]
        out += sort.handle_timer(timer[1], timer[0], watermark_ms * 1000)
    return [o for o in out if isinstance(o, Emit)]


def test_a_sort_over_two_partitions_is_ordered_within_each_and_interleaved_across() -> None:
    query, log = _orders()
    sort = processor_for(query, RW, options=ExecutorOptions(sort_partitions=2))
    assert isinstance(sort, EowcSort)
    part = {i: bucket_of((i,), 2) for i, _ in EPOCH_0}  # partitioned by the primary key, id
    assert sorted(Counter(part.values())) == [0, 1], "both partitions hold rows"
    raw = _raw_emits(sort, EPOCH_0, (BASE + 20 * S) // 1000)
    # by hand: every row but id 7 is complete at W = 20 s; the partition of id 4 (1 s, the
    # earliest) fires first and emits its rows by time, then the other partition its own
    first = part[4]
    want = [i for i, t in sorted(EPOCH_0[:-1], key=lambda r: r[1]) if part[i] == first] + \
           [i for i, t in sorted(EPOCH_0[:-1], key=lambda r: r[1]) if part[i] != first]
    assert [e.row[0] for e in raw] == want
    assert [e.partition for e in raw] == [part[i] for i in want]
    times = [e.row[1] for e in raw]
    assert times != sorted(times), "across partitions the rows interleave"
    # the driver records each partition's order and merges them: here the reference's order
    run = run_in_process(query, log, RW, options=ExecutorOptions(sort_partitions=2))
    assert [(e.epoch, e.row[0]) for e in run.emissions] == [(0, 4), (0, 5), (0, 2), (0, 3),
                                                              (0, 1), (0, 6), (1, 7)]
    assert [e.partition for e in run.emissions] == [part[i] for i in (4, 5, 2, 3, 1, 6, 7)]
    assert ordered(query, RW, run.emissions) is None


def test_one_sort_partition_gives_one_total_order() -> None:
    query, _ = _orders()
    sort = processor_for(query, RW, options=ExecutorOptions(sort_partitions=1))
    raw = _raw_emits(sort, EPOCH_0, (BASE + 20 * S) // 1000)
    assert [e.row[0] for e in raw] == [4, 5, 2, 3, 1, 6]  # by time, 1 s to 6 s
    assert {e.partition for e in raw} == {0}


def test_rows_of_one_time_in_one_partition_leave_in_the_tie_break_order() -> None:
    """Two rows at the same event time in the one partition, the larger first: the partition
    emits (3, 1.0) before (3, 3.0), the deterministic tie-break (no primary key: the whole
    row), as the reference does. (Hypothesis found this once the driver stopped re-sorting an
    epoch: the buffer's insertion order had leaked out.)"""
    sql = AUCTIONS + "SELECT auction, price, ts FROM orders EMIT ON WINDOW CLOSE"
    rows = [{"auction": 3, "price": 3.0, "ts": _time(1)}, {"auction": 3, "price": 1.0, "ts": _time(1)}]
    query, log = _script_and_log(sql, [rows])
    run = run_in_process(query, log, RW, close=True, options=ExecutorOptions(sort_partitions=1))
    assert [e.row[:2] for e in run.emissions] == [(3, 1.0), (3, 3.0)]
    assert run.emissions == list(run_eowc(query, log, RW, close=True))
    assert ordered(query, RW, run.emissions) is None


def test_a_sort_partitions_by_the_whole_row_without_a_primary_key() -> None:
    query = parse_script(SORT.replace(", PRIMARY KEY (id)", "")).query
    sort = processor_for(query, RW, options=ExecutorOptions(sort_partitions=8))
    row = (3, BASE)
    assert sort.key_of(row) == (bucket_of(row, 8),)
    keyed = processor_for(parse_script(SORT).query, RW, options=ExecutorOptions(sort_partitions=8))
    assert keyed.key_of(row) == (bucket_of((3,), 8),)


def test_sort_partitions_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1 partition"):
        ExecutorOptions(sort_partitions=0)


# --------------------------------------------------- the group aggregate: many keys per window

AUCTIONS = ("CREATE SOURCE orders (auction BIGINT, price DOUBLE, ts TIMESTAMP, "
            "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);\n")


@pytest.mark.parametrize(("aggregate", "executor"), [("sum(price)", EowcGroupAgg),
                                                     ("median(price)", SortAgg)])
def test_a_group_aggregate_of_100_groups_keeps_a_window_under_many_keys(
        aggregate: str, executor: type) -> None:
    sql = AUCTIONS + (f"SELECT auction, window_start, count(*) AS n, {aggregate} AS a FROM "
                      "TUMBLE(orders, ts, INTERVAL '10' SECOND) GROUP BY auction, window_start, "
                      "window_end EMIT ON WINDOW CLOSE")
    rows = [{"auction": a, "price": float(a % 7), "ts": _time(k)} for k in range(3)
            for a in range(100)]
    query, log = _script_and_log(sql, [rows])
    processor = processor_for(query, RW)
    assert isinstance(processor, executor)
    run = run_in_process(query, log, RW, processor=processor)  # the window [0, 10 s) stays open
    store = processor.handle.store
    keys = [key for name, key in store.values if name == "groups"]
    assert len(keys) >= 40, f"a window's 100 groups under {len(keys)} keys"
    assert all(len(key) == 1 and 0 <= key[0] < GROUP_BUCKETS for key in keys)
    # each key's one open window, each group in the bucket of its key, its three rows in it
    window = Window(BASE, BASE + 10 * S)
    for key in keys:
        assert list(store.values["groups", key]) == [window]
        for group in store.values["groups", key][window]:
            assert bucket_of(group, GROUP_BUCKETS) == key[0]
    assert sum(len(store.values["groups", key][window]) for key in keys) == 100
    closes = closing_timer_ms(processor.rule.is_complete, window)  # the window's close (ms)
    assert closes in range((BASE + 10 * S) // 1000, (BASE + 10 * S) // 1000 + 2)
    assert store.timer_set == {(closes, key) for key in keys}  # a timer per key, at the close
    assert run.emissions == []
    closed = run_in_process(query, log, RW, close=True)
    assert closed.emissions == list(run_eowc(query, log, RW, close=True))
    assert len(closed.emissions) == 100 and {e.row[2] for e in closed.emissions} == {3}


# ------------------------------------------------------------- eowc verify and the mutant

def test_verify_reports_the_partitions_and_rows_ordered_checked(tmp_path: Path) -> None:
    reports = {}
    for partitions in (None, 1):
        out = tmp_path / f"r{partitions}.json"
        extra = [] if partitions is None else ["--sort-partitions", str(partitions)]
        result = CliRunner().invoke(main, ["verify", str(SUITE / "window_sort.sql"), "--cases",
                                           "6", "--report", str(out), "--out",
                                           str(tmp_path / "cx"), *extra])
        assert result.exit_code == 0, result.output
        assert "checked" in result.output and "partition" in result.output
        reports[partitions] = json.loads(out.read_text())["ordered"]["window_sort"]
    assert reports[1]["partitions"] == 1 and reports[1]["rows"] > 50
    assert reports[None]["partitions"] > 8 and reports[None]["rows"] == reports[1]["rows"]
    # one partition compares more rows with the row before them than sixteen
    assert reports[1]["compared"] > reports[None]["compared"] > 0


def test_a_sort_draining_a_partition_in_insertion_order_fails_ordered_only() -> None:
    """The bug the driver's sort by ``Emit.order`` would hide (each row carries its right
    order): only the order the rows come out in is wrong, and *ordered* sees it."""
    target = next(t for t in builtin_targets() if t.name == "window_sort")
    mutant = MutantExecutor(mutant_named("sort-drained-in-insertion-order"))
    report = run_suite([target], mutant, list(Convention), 12, 0, False, GeneratorSettings(),
                       None, shrink_budget_s=5.0)
    tallies = report.tallies["window_sort"]
    assert tallies["ordered"].failed >= 1
    assert "emitted in partition" in (tallies["ordered"].first_failure or "")
    # the rows are right and on time (a failed challenger run is blamed on determinism or
    # recovery, as ordered's failure on a log of the same INPUT or a restarted run)
    assert tallies["append-only"].failed == tallies["exact and timely"].failed == 0
    correct = run_suite([target], InProcessExecutor(), list(Convention), 12, 0, False,
                        GeneratorSettings(), None)
    assert correct.ok and correct.ordered["window_sort"].rows > 0


def test_eowc_verify_mutants_kills_it_by_ordered(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = CliRunner().invoke(main, ["verify", "--mutants", str(SUITE / "window_sort.sql"),
                                       "--cases", "12", "--report", str(out)])
    assert result.exit_code == 0, result.output
    found = {r["mutant"]: r for r in json.loads(out.read_text())["results"]}
    assert found["sort-drained-in-insertion-order"]["verdict"] == "killed"
    assert found["sort-drained-in-insertion-order"]["killed_by"] == "ordered"
