"""The partitioned executors keyed by hash buckets of the partition key
(:class:`~eowc.executors.partitioned.PartitionBuckets`): 100 partitions land in many shards,
several partitions share a shard, and each executor still equals the reference (same rows,
same epochs, same order), through restarts. A bucket's partitions open and close sessions
at different watermarks, so its one timer must be at the earliest: a mutant whose timer is at
one partition's close is caught."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.partitioned import PARTITION_BUCKETS, EowcSession
from eowc.semantics.engines.dataflow import run_eowc
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.rules.triggers import Convention
from tests.strategies import BASE, script

RW = Convention.RISINGWAVE
S = 1_000_000
AUCTIONS = 100

QUERIES = {
    "session": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s FROM "
               "TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' "
               "SECOND)) GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE",
    "session_rows": "SELECT auction, ts, window_end FROM TABLE(SESSION(TABLE bids PARTITION BY "
                    "auction, DESCRIPTOR(ts), INTERVAL '3' SECOND)) EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction "
             "ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE",
    "top_2": "SELECT ts, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "auction ORDER BY ts) AS rn FROM bids) WHERE rn <= 2 EMIT ON WINDOW CLOSE",
    "over": "SELECT auction, ts, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN "
            "2 PRECEDING AND 1 FOLLOWING) AS s FROM bids EMIT ON WINDOW CLOSE",
    "pattern": "SELECT * FROM bids MATCH_RECOGNIZE (PARTITION BY auction ORDER BY ts MEASURES "
               "LAST(B.price) AS top ONE ROW PER MATCH PATTERN (A B+) DEFINE B AS B.price > "
               "PREV(B.price)) AS m EMIT ON WINDOW CLOSE",
}


def bursts() -> ArrivalLog:
    """An epoch per second for 30 s: auction ``a`` bids in the seconds ``s`` with ``(s + a) %
    10 < 4`` (bursts of 4 s, 6 s apart, shifted by the auction), at a price that rises and
    falls with the auction and the second: the partitions of a bucket open and close sessions
    at different watermarks (gap 3 s, delay 5 s), many of them at the same one."""
    return ArrivalLog(tuple(
        tuple(Event("bids", (a, (a * 7 + second * 3) % 11, BASE + second * S))
              for a in range(AUCTIONS) if (second + a) % 10 < 4)
        for second in range(30)))


def shards_of(name: str) -> Counter[Row]:
    """How many of the 100 partitions each shard of the executor holds."""
    processor = processor_for(script(QUERIES[name]).query, RW)
    shards: dict[Row, set[int]] = {}
    for a in range(AUCTIONS):
        for row in processor.stateless_of("bids", (a, 1, BASE)):
            shards.setdefault(processor.key_of(row), set()).add(a)
    return Counter({shard: len(parts) for shard, parts in shards.items()})


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_100_partitions_in_many_buckets_equal_the_reference(name: str) -> None:
    """100 partitions spread over more than 50 of the :data:`PARTITION_BUCKETS` shards, some
    shards holding several; the emissions equal the reference's (rows, epochs, order), and
    again through restarts after every fourth epoch."""
    shards = shards_of(name)
    assert sum(shards.values()) == AUCTIONS
    assert len(shards) > 50 and max(shards.values()) >= 2, shards
    assert all(len(shard) == 1 and 0 <= shard[0] < PARTITION_BUCKETS for shard in shards)
    query, log = script(QUERIES[name]).query, bursts()
    expected = list(run_eowc(query, log, RW, close=True))
    assert len({e.row for e in expected}) >= AUCTIONS  # every partition emitted
    assert run_in_process(query, log, RW, close=True).emissions == expected
    restarts = set(range(0, len(log.epochs), 4))
    assert run_in_process(query, log, RW, close=True, restart_after=restarts).emissions == expected


class FirstPartitionsTimer(EowcSession):
    """A mutant: the bucket's timer is at the first partition's next close (in the order the
    bucket holds them), not the earliest of all its partitions'."""

    def next_timer(self, partitions: dict[Row, Any]) -> int | None:
        return next((w for w in map(self.wakes_at, partitions.values()) if w is not None), None)


def test_a_bucket_timer_at_one_partitions_close_is_caught() -> None:
    """The mutant differs from the reference on the bursts (a bucket's sessions emitted late,
    or at the end of the input), while the executor equals it."""
    query, log = script(QUERIES["session"]).query, bursts()
    expected = list(run_eowc(query, log, RW, close=True))
    mutant = FirstPartitionsTimer(processor_for(query, RW).plan)
    run = run_in_process(query, log, RW, close=True, processor=mutant)
    assert Counter(e.row for e in run.emissions) == Counter(e.row for e in expected)  # late only
    assert run.emissions != expected
    assert run_in_process(query, log, RW, close=True).emissions == expected
