"""Spark's shard expression (``eowc.executors.spark.shard_key``) gives the bucket Python's
``bucket_of`` gives, for random keys of every type it takes, NULLs, extremes and non-ASCII
text included, and TUMBLE windows' bounds: were they to differ, one key's rows would reach two
shards. A run sharded in Spark and one through ``mapInPandas`` keep the same state: each
resumes the other's checkpoint."""

from __future__ import annotations

import datetime as dt
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType, TimestampType

from eowc.executors.buckets import GROUP_BUCKETS, bucket_of
from eowc.executors.choice import processor_for
from eowc.executors.partitioned import PARTITION_BUCKETS
from eowc.executors.plan import SourceShard, TumbleBound
from eowc.executors.spark import spark_shard
from eowc.executors.spark.runner import collect_run, start_query
from eowc.executors.spark.shard_key import shard_key
from eowc.executors.spark.typed_state import value_text
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.expr import Column
from eowc.semantics.ir.values import SqlType
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.rules.triggers import Convention

RW = Convention.RISINGWAVE

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

#: Each shardable type: its Spark type, values as Spark takes them, and as the reference holds them.
TYPES = {
    SqlType.BIGINT: (LongType(), st.integers(-(2**63), 2**63 - 1), lambda v: v),
    SqlType.BOOLEAN: (BooleanType(), st.booleans(), lambda v: v),
    SqlType.VARCHAR: (StringType(), st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
                      lambda v: v),
    SqlType.TIMESTAMP: (TimestampType(),
                        st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2262, 1, 1),
                                     timezones=st.just(dt.UTC)),
                        lambda v: (v - EPOCH) // dt.timedelta(microseconds=1)),
}

key_types = st.lists(st.sampled_from(sorted(TYPES, key=lambda t: t.value)), min_size=1, max_size=3)


@st.composite
def keyed_rows(draw: st.DrawFn) -> tuple[list[SqlType], list[tuple]]:
    types = draw(key_types)
    rows = draw(st.lists(st.tuples(*(st.none() | TYPES[t][1] for t in types)),
                         min_size=1, max_size=30))
    return types, rows


@pytest.mark.parametrize("buckets", [GROUP_BUCKETS, PARTITION_BUCKETS, 32, 1])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=keyed_rows())
def test_spark_gives_the_bucket_python_gives(spark, buckets: int, case) -> None:
    types, rows = case
    names = [f"c{i}" for i in range(len(types))]
    schema = StructType([StructField(n, TYPES[t][0], True) for n, t in zip(names, types, strict=True)])
    columns = tuple(Column(n, t) for n, t in zip(names, types, strict=True))
    column = shard_key(SourceShard(tuple(range(len(types))), buckets), columns)
    got = [r[0] for r in spark.createDataFrame(rows, schema).select(column).collect()]
    internal = [tuple(None if v is None else TYPES[t][2](v) for v, t in zip(row, types, strict=True))
                for row in rows]
    assert got == [value_text((bucket_of(key, buckets),)) for key in internal]


def test_the_bucket_of_one_key_step_by_step(spark) -> None:
    """``(42, 'ü')``: its bytes ``n42;s2:\\xc3\\xbc`` (ü is two bytes in UTF-8), their CRC-32,
    fmix32 written out, modulo 128: Spark's text is that bucket."""
    h = zlib.crc32(b"n42;s2:\xc3\xbc")
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) % 2**32
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) % 2**32
    h ^= h >> 16
    schema = StructType([StructField("a", LongType()), StructField("b", StringType())])
    frame = spark.createDataFrame([(42, "ü")], schema)
    columns = (Column("a", SqlType.BIGINT), Column("b", SqlType.VARCHAR))
    (row,) = frame.select(shard_key(SourceShard((0, 1), 128), columns)).collect()
    assert row[0] == f"[{h % 128}]" == value_text((bucket_of((42, "ü"), 128),))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(times=st.lists(st.none() | TYPES[SqlType.TIMESTAMP][1], min_size=1, max_size=30),
       size=st.sampled_from([1, 999, 1_000_000, 3_600_000_000, 86_400_000_000]),
       offset=st.integers(-10**11, 10**11))
def test_the_bounds_of_a_tumble_window(spark, times, size: int, offset: int) -> None:
    """A key of a TUMBLE window's start and end (any size and offset, times before 1970 too)
    against Python's window of the time (``WindowSpec.windows_of``)."""
    spec = WindowSpec(WindowKind.TUMBLE, size, offset=offset)
    shard = SourceShard((TumbleBound(0, size, offset, end=False), 1,
                         TumbleBound(0, size, offset, end=True)), GROUP_BUCKETS)
    schema = StructType([StructField("ts", TimestampType()), StructField("a", LongType())])
    rows = [(t, 7) for t in times]
    got = [r[0] for r in spark.createDataFrame(rows, schema).select(
        shard_key(shard, (Column("ts", SqlType.TIMESTAMP), Column("a", SqlType.BIGINT)))).collect()]
    micros = [None if t is None else TYPES[SqlType.TIMESTAMP][2](t) for t in times]
    windows = [(None, None) if t is None else tuple(spec.windows_of(t)[0]) for t in micros]
    assert got == [value_text((bucket_of((start, 7, end), GROUP_BUCKETS),))
                   for start, end in windows]


def test_other_types_are_not_sharded_by_spark() -> None:
    bids = ("CREATE SOURCE bids (auction BIGINT, price DOUBLE, ts TIMESTAMP, "
            "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
    by_price = parse_script(bids + "SELECT price, count(*) AS n FROM bids GROUP BY price, ts "
                            "EMIT ON WINDOW CLOSE").query
    by_auction = parse_script(bids + "SELECT auction, count(*) AS n FROM bids GROUP BY auction, "
                              "ts EMIT ON WINDOW CLOSE").query
    assert processor_for(by_price, RW).source_shard() is not None
    assert spark_shard(processor_for(by_price, RW)) is None
    assert spark_shard(processor_for(by_auction, RW)) == SourceShard((0, 2), GROUP_BUCKETS)


EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize("sharded_first", [False, True], ids=["mapInPandas first", "sharded first"])
def test_a_checkpoint_of_one_path_is_resumed_by_the_other(spark, tmp_path: Path,
                                                          sharded_first: bool) -> None:
    """docs/examples/tumble.sql (10-minute windows, keyed by their bounds, sharded in Spark)
    over bids.jsonl: two epochs through one path, stopped, the rest through the other from
    the same checkpoint; the reference's rows (one window emitted before the stop, two after,
    a late row refused)."""
    query, events = EXAMPLES / "tumble.sql", EXAMPLES / "bids.jsonl"
    script = parse_script(query.read_text(encoding="utf-8"))
    assert processor_for(script.query, RW).source_shard() is not None
    log = load_arrival_log(str(events), script.sources).log
    late: list = []
    expected = list(run_eowc(script.query, log, RW, close=True, late=late.append))
    assert [e.epoch for e in expected] == [1, 4, 5] and len(late) == 1
    run = tmp_path / "run"
    start_query(spark, str(query), str(events), RW, run, max_epochs=2, shard_in_spark=sharded_first)
    assert collect_run(log, run).emissions == expected[:1]
    start_query(spark, str(query), str(events), RW, run, close=True, shard_in_spark=not sharded_first)
    assert collect_run(log, run).emissions == expected
