"""An executor's key read off its source row (:meth:`EowcProcessor.source_shard`): where it
says the source's columns alone decide the key, every row the stateless part makes of a source
row has exactly the bucket of those columns' values (a Spark job then shards source rows by
it: ``eowc.executors.spark.shard_key``); where the stateless part computes the key (an
expression, a window bound) it says nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.buckets import GROUP_BUCKETS, bucket_of
from eowc.executors.choice import processor_for
from eowc.executors.partitioned import PARTITION_BUCKETS
from eowc.executors.plan import SORT_PARTITIONS, ExecutorOptions, SourceShard, TumbleBound
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.rules.triggers import Convention
from eowc.verify.generators import LogShape, rows_of

BIDS = ("CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
S = 1_000_000
KEYED = ("CREATE SOURCE bids (id BIGINT, auction BIGINT, price BIGINT, ts TIMESTAMP, "
         "PRIMARY KEY (id), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")

#: Queries whose key is columns of the source (or bounds of a TUMBLE window of one), with those
#: terms (columns by index) and the buckets.
SHARDED = {
    "session": (BIDS + "SELECT auction, window_start, window_end, count(*) AS n FROM TABLE(SESSION("
                "TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY "
                "auction, window_start, window_end EMIT ON WINDOW CLOSE", (0,), PARTITION_BUCKETS),
    "dedup through a filter and a renaming projection": (
        BIDS + "SELECT t, a FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY t) AS rn "
        "FROM (SELECT ts AS t, auction AS a, price FROM bids WHERE price > 3)) WHERE rn = 1 "
        "EMIT ON WINDOW CLOSE", (0,), PARTITION_BUCKETS),
    "over, two partition columns in another order": (
        BIDS + "SELECT auction, ts, sum(price) OVER (PARTITION BY bidder, auction ORDER BY ts ROWS "
        "BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM bids EMIT ON WINDOW CLOSE",
        (1, 0), PARTITION_BUCKETS),
    "group aggregate of a column": (
        BIDS + "SELECT bidder, count(*) AS n FROM bids GROUP BY bidder, ts EMIT ON WINDOW CLOSE",
        (1, 3), GROUP_BUCKETS),
    "group aggregate of a TUMBLE window": (
        BIDS + "SELECT auction, window_start, window_end, count(*) AS n FROM TABLE(TUMBLE(TABLE "
        "bids, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '3' SECOND)) GROUP BY auction, "
        "window_start, window_end EMIT ON WINDOW CLOSE",
        (0, TumbleBound(3, 10 * S, 3 * S, end=False), TumbleBound(3, 10 * S, 3 * S, end=True)),
        GROUP_BUCKETS),
    "group aggregate of a renamed TUMBLE window's end": (
        BIDS + "SELECT e, count(*) AS n FROM (SELECT window_end AS e, price FROM TABLE(TUMBLE("
        "TABLE bids, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) WHERE price > 2) GROUP BY e "
        "EMIT ON WINDOW CLOSE", (TumbleBound(3, 60 * S, 0, end=True),), GROUP_BUCKETS),
    "sort by the whole row": (BIDS + "SELECT price, ts FROM bids EMIT ON WINDOW CLOSE",
                              (2, 3), SORT_PARTITIONS),
    "sort by the primary key": (KEYED + "SELECT id, ts FROM bids WHERE price > 1 EMIT ON WINDOW CLOSE",
                                (0,), SORT_PARTITIONS),
}

#: Queries whose key the stateless part computes.
COMPUTED = {
    "a HOP window": BIDS + ("SELECT auction, window_start, count(*) AS n FROM TABLE(HOP(TABLE "
                            "bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
                            "GROUP BY auction, window_start EMIT ON WINDOW CLOSE"),
    "an expression": BIDS + ("SELECT ts, a FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER "
                             "BY ts) AS rn FROM (SELECT ts, auction % 10 AS a FROM bids)) WHERE "
                             "rn = 1 EMIT ON WINDOW CLOSE"),
    "a sort's computed column": BIDS + "SELECT price + 1 AS p, ts FROM bids EMIT ON WINDOW CLOSE",
}


def _executor(sql: str, partitions: int = SORT_PARTITIONS):
    return processor_for(parse_script(sql).query, Convention.RISINGWAVE,
                         options=ExecutorOptions(sort_partitions=partitions))


@pytest.mark.parametrize("name", SHARDED)
def test_the_columns_that_are_the_key(name: str) -> None:
    sql, columns, buckets = SHARDED[name]
    assert _executor(sql).source_shard() == SourceShard(columns, buckets)


def test_a_single_partition_sort_is_one_bucket() -> None:
    sql = SHARDED["sort by the whole row"][0]
    assert _executor(sql, partitions=1).source_shard() == SourceShard((2, 3), 1)


@pytest.mark.parametrize("name", COMPUTED)
def test_a_computed_key_is_not_read_off_the_source(name: str) -> None:
    assert _executor(COMPUTED[name]).source_shard() is None


@pytest.mark.parametrize("name", SHARDED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_row_made_has_the_bucket_of_its_source_columns(name: str, data: st.DataObject) -> None:
    executor = _executor(SHARDED[name][0])
    shard = executor.source_shard()
    assert shard is not None
    source = executor.sources[0]
    row = data.draw(rows_of(source, LogShape(keys=6, null_rate=0.2)))
    expected = (bucket_of(shard.values(row), shard.buckets),)
    for made in executor.stateless_of(source.name, row):
        assert executor.key_of(made) == expected
