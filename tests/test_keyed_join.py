"""A join alone keyed by its equality key (executors/composed.py, "Shards"): its rows spread
over hash buckets of the key, every bucket learns each source's watermark, and the output
still equals the reference epoch by epoch. By hand: an interval join whose two keys are in
different buckets, one of them quiet while the other's rows move the watermarks; at scale:
100 join keys over many shards; the plans that keep one shard; the bucket's stability across
processes; two realistic mutants (progress delivered to one bucket only, a bucket of the whole
row instead of the key) caught by the hand-computed case."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from eowc.executors.buckets import bucket_of
from eowc.executors.composed import JOIN_BUCKETS, ComposedExecutor
from eowc.executors.driver import DriverRun, run_in_process
from eowc.executors.protocol import Arrival
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Query
from eowc.semantics.rules.triggers import Convention, Watermark
from tests.test_joins import SOURCES, at, query

FULL = query("interval_FULL")  # a.k = b.k AND a.ts BETWEEN b.ts - 2 s AND b.ts + 4 s


def _by_hand_log() -> ArrivalLog:
    """Key 2 only in epoch 0, then quiet; key 1 moves both watermarks (delays: a 3 s, b 5 s)."""
    return ArrivalLog((
        (Event("a", (at(10), 2, 1)), Event("b", (at(10), 2, 5)), Event("b", (at(16), 2, 6))),
        (Event("a", (at(20), 1, 3)), Event("b", (at(20), 1, 3))),
        (Event("a", (at(30), 1, 4)), Event("b", (at(30), 1, 4))),
    ))


#: The FULL interval join of :func:`_by_hand_log` under Spark's rule (W = max - delay; a row
#: is final once its ``until`` is at most the other side's watermark), by epoch:
#: e0: W_a = 7 s, W_b = 11 s: a@10 (until 12 s under W_b) and b@10 (14 s under W_a) wait.
#: e1: W_a = 17 s, W_b = 15 s: key 2's shard gets no row, only the progress: a@10 is final,
#:     consumed with b@10: the pair; b@10 (14 s <= 17 s) is consumed, matched; b@16 (20 s) waits.
#: e2: W_a = 27 s, W_b = 25 s: b@16 is final and unmatched: NULL-padded (no time in the sort
#:     column: first in its epoch); key 1's a@20 meets b@20.
#: close (epoch 3): a@30 meets b@30.
BY_HAND = [(1, (at(10), at(10), 2, 1, 5)), (2, (None, at(16), None, None, 6)),
           (2, (at(20), at(20), 1, 3, 3)), (3, (at(30), at(30), 1, 4, 4))]


def _emitted(run: DriverRun) -> list[tuple[int, Row]]:
    return [(e.epoch, e.row) for e in run.emissions]


def test_the_two_keys_are_in_different_shards() -> None:
    executor = ComposedExecutor(FULL, Convention.SPARK)
    assert executor.sides is not None and len(executor.progress_keys) == JOIN_BUCKETS
    shards = {k: executor.key_of(("a", (at(10), k, 0), "join0.left")) for k in (1, 2)}
    assert shards[1] != shards[2]
    assert executor.key_of(("b", (at(10), 2, 0), "join0.right")) == shards[2]  # both sides


def test_a_quiet_keys_shard_consumes_and_expires_its_rows_as_the_watermarks_move() -> None:
    """:data:`BY_HAND`: key 2's shard emits its pair in epoch 1 and expires its unmatched
    b row in epoch 2 from the progress alone; the reference agrees."""
    log = _by_hand_log()
    assert _emitted(run_in_process(FULL, log, Convention.SPARK, close=True)) == BY_HAND
    assert [(e.epoch, e.row) for e in run_eowc(FULL, log, Convention.SPARK, close=True)] == BY_HAND


class _ProgressToOneShard(ComposedExecutor):
    """Each source's progress reaches the first bucket only (the old ``progress_key``)."""

    def __init__(self, query: Query, convention: Convention) -> None:
        super().__init__(query, convention)
        self.progress_keys = self.progress_keys[:1]


class _BucketOfTheRow(ComposedExecutor):
    """A row's shard is a bucket of the whole row the side made, not of its join key."""

    def key_of(self, row: Row) -> Row:
        return (bucket_of(row[1], JOIN_BUCKETS),)


MUTANTS: dict[str, type[ComposedExecutor]] = {
    "progress-to-one-shard": _ProgressToOneShard, "bucket-of-the-row": _BucketOfTheRow}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_mutant_of_the_keying_fails_the_hand_computed_rows(mutant: str) -> None:
    got = _emitted(run_in_process(FULL, _by_hand_log(), Convention.SPARK, close=True,
                                  processor=MUTANTS[mutant](FULL, Convention.SPARK)))
    assert got != BY_HAND
    if mutant == "progress-to-one-shard":  # the quiet shard emits only at the end of the input
        assert (3, (at(10), at(10), 2, 1, 5)) in got and (1, (at(10), at(10), 2, 1, 5)) not in got


class _Recording(ComposedExecutor):
    """Records, per shard, the join keys of the rows its sides were handed."""

    def __init__(self, query: Query, convention: Convention) -> None:
        super().__init__(query, convention)
        self.keys_in: dict[Row, set[Any]] = {}

    def handle_rows(self, key: Row, arrivals: list[Any], watermark: Watermark) -> Iterator[Any]:
        for item in arrivals:
            _, made, into = item.row if isinstance(item, Arrival) else (None, None, None)
            if into is not None:
                self.keys_in.setdefault(key, set()).add(self.side_key[into](made))
        return super().handle_rows(key, arrivals, watermark)


@pytest.mark.parametrize("name", ["interval_LEFT", "window_full"])
def test_a_join_of_100_keys_runs_in_many_shards(name: str) -> None:
    """2,000 rows of 100 keys (the join key, with the window for the window join), up to 4 s
    of disorder, 200 epochs: the rows go to more than half of the 128 buckets (about 70 are
    expected of 100 keys), each join key to one shard, and
    the output equals the reference, with the late rows, epoch by epoch and through restarts;
    the state does not grow with the log."""
    events = [Event("ab"[i % 2], (at(i / 10 - (i * 7919 % 40) / 10), i * 37 % 100, i % 17))
              for i in range(2_000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    late: list[LateRow] = []
    expected = list(run_eowc(query(name), log, Convention.RISINGWAVE, close=True,
                             late=late.append))
    executor = _Recording(query(name), Convention.RISINGWAVE)
    run = run_in_process(query(name), log, Convention.RISINGWAVE, close=True, processor=executor,
                         restart_after=set(range(0, 200, 37)))
    assert run.emissions == expected and len(expected) > 500
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    assert len(late) > 10
    assert len(executor.keys_in) > JOIN_BUCKETS // 2
    in_shards = [key for keys in executor.keys_in.values() for key in keys]
    assert len(in_shards) == len(set(in_shards)) >= 100  # each join key in one shard
    assert max(run.state_rows[150:190]) <= max(run.state_rows[20:60]) * 1.2


@pytest.mark.parametrize(("name", "convention"), [("interval_LEFT", Convention.RISINGWAVE),
                                                  ("window_full", Convention.FLINK)])
def test_a_join_of_5000_keys_over_1500_epochs_equals_the_reference(
        name: str, convention: Convention) -> None:
    """30,000 rows of 5,000 keys, up to 4 s of disorder, 1,500 epochs, a restart every 97:
    the output equals the reference's, epoch by epoch, and the state stays flat. (Nearly every
    joined row is complete when made and never goes through a SortBuffer's table.)"""
    events = [Event("ab"[i % 2], (at(i / 10 - (i * 7919 % 40) / 10), i * 7927 % 5_000, i % 17))
              for i in range(30_000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, len(events), 20)))
    expected = list(run_eowc(query(name), log, convention, close=True))
    run = run_in_process(query(name), log, convention, close=True,
                         restart_after=set(range(0, 1_500, 97)))
    assert run.emissions == expected and len(expected) > 10_000
    assert max(run.state_rows[1_300:1_400]) <= max(run.state_rows[100:200]) * 1.1


@pytest.mark.parametrize("name", ["aggregates_left", "union", "join_tumble", "union_tumble"])
def test_a_join_that_is_not_alone_keeps_one_shard(name: str) -> None:
    """An aggregate above or below the join, a union: one shard, which gets the progress."""
    executor = ComposedExecutor(query(name), Convention.SPARK)
    assert executor.sides is None and executor.progress_keys == ((),)
    assert executor.key_of(("a", (at(1), 1, 1), "a")) == ()


def test_a_join_without_an_equality_key_keeps_one_shard() -> None:
    sql = ("SELECT a.ts AS ats, b.ts AS bts, v, w FROM a JOIN b ON a.ts BETWEEN b.ts - "
           "INTERVAL '2' SECOND AND b.ts + INTERVAL '4' SECOND EMIT ON WINDOW CLOSE")
    executor = ComposedExecutor(parse_script(SOURCES + sql + ";").query, Convention.SPARK)
    assert executor.sides is None and executor.progress_keys == ((),)


def test_a_filtered_late_row_is_still_refused() -> None:
    """A row that no side takes (filtered below the join) reaches a shard only to be judged:
    a late one is reported late, as the reference does (a's watermark 27 s, a row at 5 s)."""
    sql = ("SELECT a.ts AS ats, b.ts AS bts, v, w FROM (SELECT * FROM a WHERE v > 0) a JOIN b "
           "ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '4' "
           "SECOND EMIT ON WINDOW CLOSE")
    q = parse_script(SOURCES + sql + ";").query
    assert ComposedExecutor(q, Convention.SPARK).sides is not None
    log = ArrivalLog(((Event("a", (at(30), 1, 1)), Event("b", (at(30), 1, 1))),
                      (Event("a", (at(5), 1, -1)),)))
    late: list[LateRow] = []
    expected = list(run_eowc(q, log, Convention.SPARK, close=True, late=late.append))
    run = run_in_process(q, log, Convention.SPARK, close=True)
    assert [r.event.row for r in late] == [(at(5), 1, -1)]
    assert [r.event.row for r in run.late] == [(at(5), 1, -1)] and run.emissions == expected
