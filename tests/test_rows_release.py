"""A key that takes rows emits what is final at the watermark they are handed with, and moves
its timer past it (docs/executors.md, *The micro-batch protocol*). On Spark a batch's rows and
its timers see one watermark, the timers after the rows: what a key's timer would have emitted
later in the batch comes out with its rows, and a key that takes no rows still emits by its
timer. Each case drives an executor as Spark drives it, two batches, by hand: rows key by key,
then the due timers, at the batch's watermark; the expected rows are computed by hand."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from eowc.executors.buckets import GROUP_BUCKETS, bucket_of
from eowc.executors.choice import processor_for
from eowc.executors.interface import EowcProcessor
from eowc.executors.partitioned import PARTITION_BUCKETS
from eowc.executors.plan import ExecutorOptions
from eowc.executors.protocol import Arrival, Emit
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.rules.triggers import Convention

S = 1_000_000
BASE = 1_700_000_000 * S  # a whole 10 s
BIDS = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);\n")
GROUP_AGG = BIDS + ("SELECT auction, window_start, window_end, count(*) AS n "
                    "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                    "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
SORT = BIDS + "SELECT auction, ts FROM bids EMIT ON WINDOW CLOSE"
SESSION = BIDS + ("SELECT auction, window_start, window_end, count(*) AS n FROM "
                  "TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '1' "
                  "SECOND)) GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
DEDUP = BIDS + ("SELECT auction, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction "
                "ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE")

#: The auction that takes no rows in the second batch (auction 1 does); every executor below
#: keeps it in another shard than auction 1's.
APART = 2


def _batch(processor: EowcProcessor, store: MemoryStore, bids: Iterable[tuple[int, int]],
           watermark_s: int) -> tuple[list[tuple], list[tuple]]:
    """One batch of ``bids`` (auction, seconds after BASE) at watermark ``watermark_s``: the
    rows the keys emitted as they took their rows, and those their timers emitted after."""
    by_key: dict[Any, list[Arrival]] = {}
    for seq, (auction, t) in enumerate(bids):
        (row,) = processor.stateless_of("bids", (auction, 7, BASE + t * S))
        by_key.setdefault(processor.key_of(row), []).append(Arrival(seq, 1, BASE + t * S, row))
    watermark_ms = (BASE + watermark_s * S) // 1000
    from_rows = []
    for key in sorted(by_key):
        store.current_key = key
        from_rows += processor.handle_rows(key, by_key[key], watermark_ms * 1000)
    from_timers = []
    while (timer := store.pop_due_timer(watermark_ms)) is not None:
        store.current_key = timer[1]
        from_timers += processor.handle_timer(timer[1], timer[0], watermark_ms * 1000)
    return ([o.row for o in from_rows if isinstance(o, Emit)],
            [o.row for o in from_timers if isinstance(o, Emit)])


def _window(auction: int, start_s: int, end_s: int, n: int) -> tuple:
    return (auction, BASE + start_s * S, BASE + end_s * S, n)


def _group_bucket(auction: int, t: int) -> int:
    """The group aggregate's shard of a row: the bucket of its group (auction and 10 s window)."""
    start = BASE + t // 10 * 10 * S
    return bucket_of((auction, start, start + 10 * S), GROUP_BUCKETS)


def _sort_partition(auction: int, t: int) -> int:
    """The EOWC sort's shard of a row: the bucket of the whole row (the source has no primary
    key), one of 32."""
    return bucket_of((auction, BASE + t * S), 32)


def _partition_bucket(auction: int, t: int) -> int:
    """A session window's or a deduplication's shard of a row: the bucket of its auction."""
    return bucket_of((auction,), PARTITION_BUCKETS)


#: Per query: the executor's shard of a row (auction, t seconds); the bids (auction, t) of
#: batch 1, at watermark 0 (batch 2, at watermark 10 s, is auction 1's one bid at the first
#: time after 10 s in its shard of batch 1); then, by hand, what batch 2 emits with that row,
#: and what auction APART's timer emits.
CASES = {
    # the windows [0 s, 10 s) close at 10 s
    "group aggregate": (GROUP_AGG, _group_bucket, [(1, 1), (1, 2), (APART, 3)],
                        [_window(1, 0, 10, 2)], [_window(APART, 0, 10, 1)]),
    # the rows at 1 s are complete at 10 s; the later one is not
    "sort": (SORT, _sort_partition, [(1, 1), (APART, 1)],
             [(1, BASE + 1 * S)], [(APART, BASE + 1 * S)]),
    # the sessions [1 s, 2 s) (gap 1 s) close at 2 s; the later row opens another
    "session": (SESSION, _partition_bucket, [(1, 1), (1, 1), (APART, 1)],
                [_window(1, 1, 2, 2)], [_window(APART, 1, 2, 1)]),
    # each auction's first bid by time, complete at 10 s (the later one ranks third)
    "dedup": (DEDUP, _partition_bucket, [(1, 2), (1, 1), (APART, 1)],
              [(1, BASE + 1 * S)], [(APART, BASE + 1 * S)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_key_that_takes_rows_emits_what_its_timer_would_at_their_watermark(name: str) -> None:
    sql, shard, first, with_rows, by_timer = CASES[name]
    assert shard(1, 1) != shard(APART, 1), "auctions 1 and APART share a shard"
    later = next(t for t in range(11, 10_000) if shard(1, t) == shard(1, 1))
    processor = processor_for(parse_script(sql).query, Convention.RISINGWAVE,
                              options=ExecutorOptions(sort_partitions=32))
    store = MemoryStore()
    processor.init(memory_handle(store))
    assert _batch(processor, store, first, 0) == ([], [])
    from_rows, from_timers = _batch(processor, store, [(1, later)], 10)
    assert from_rows == with_rows  # not left for the timer, which Spark fires after the rows
    assert from_timers == by_timer  # a key without rows: its timer, as before
    # Every timer left is past the watermark: what was final was emitted once, not again.
    assert store.pop_due_timer((BASE + 10 * S) // 1000) is None
