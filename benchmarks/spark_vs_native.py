"""The eowc Spark executors against Spark's own streaming operators for the same queries: events
per second, the same output row counts, local[1] against local[2], state size over the stream,
and the peak memory of 10,000,000 events through the group aggregate.

The events: ``--events`` bids (default 1,000,000) of ``--keys`` auctions (each key count in
turn; default 100 and 100,000), event time 2 ms apart with up to 2 s of disorder (within every
watermark delay: no row is late), in ``--epochs`` epochs (one micro-batch each; default one per
50,000 events), read by the ``eowc_arrival_log`` source with ``close``: after the log, one row
at 2262-01-01 moves the watermark past everything, so every query emits all its rows. Each
side's output row count (``numOutputRows`` of the sink, summed over the batches; the eowc side
counts its ``emit`` rows) must equal the count computed from the events by hand (the script
checks and prints it: a benchmark of a wrong query means nothing). The queries (``--only``),
each on the eowc executor (``transformWithStateInPandas``, RocksDB state store) and on Spark's
own operator, to Spark's ``noop`` sink:

* ``group_agg``: count and sum per auction and 10 s TUMBLE window; Spark: ``groupBy(window,
  auction)`` in append mode (eowc's own compilation, :func:`eowc.executors.spark.native.native_stream`).
* ``sort``: ``SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE``. Spark cannot sort a
  stream, so two peers: *buffer*, ``groupBy(ts, _seq, auction, price)`` in append mode, Spark's
  own operator that holds each row in its state store until the watermark passes its event time
  and then emits it (what the EOWC sort does, without the order within a batch), the peer to
  judge it by; and *pass-through*, the watermarked rows straight to the sink (the floor: no
  state at all).
* ``session``: count and sum per auction and SESSION of gap 201 ms; Spark: ``groupBy(
  session_window(ts, 201 ms), auction)`` (eowc's own compilation). The gap is odd and event
  times are even milliseconds, so no two rows are exactly a gap apart: Spark merges sessions
  that touch, the semantics does not (docs/divergences.md), and with a gap of 200 ms the two
  sides' rows differ by about 1%.
* ``dedup``: the first bid of each auction by event time (``ROW_NUMBER() ... = 1``); Spark:
  ``withWatermark`` then ``dropDuplicates(auction)``, one row per auction as here. (Not
  ``dropDuplicatesWithinWatermark``: it forgets a key after the delay and emits it again, so its
  rows are not this query's: docs/divergences.md.)
* ``join``: a LEFT interval join of two sources ``a`` (delay 3 s) and ``b`` (delay 5 s), the
  events alternating between them, ``a.auction = b.auction AND a.ts BETWEEN b.ts - 2.001 s AND
  b.ts + 1.001 s``; Spark: the stream-stream ``left_outer`` join with that condition and both
  watermarks (eowc's own compilation; the close rows get auctions that match nothing, see
  :func:`stream_join`). The bounds are odd milliseconds, so no two rows are exactly on a bound
  (event times are even).

Beside them, each query's *API floor* (:func:`api_floor`): the same sources and watermarks,
keyed as the executor shards its rows (Spark's own hash, in the JVM), into a
``transformWithStateInPandas`` processor that only takes each key's rows and reads and writes
one value state: no executor work, only the API. And each query's *packed floor*
(:func:`packed_floor`): the same, but with the rows packed per key by a ``mapInPandas`` step
first, as eowc does (PySpark regroups a stateful input one row at a time in Python, so rows
packed per key can be cheaper than the raw rows, extra stage and all); the higher of the two
floors is the most an executor on that API could reach, and eowc's rate over the packed floor
says how much of the rest is eowc's own work. For the group aggregate, also the *combined
floor* (:func:`combined_floor`): each frame's rows folded into (window, auction) counts and
sums by pandas before the shuffle, as eowc's group aggregate folds them (in Python), into a
processor that only reads and writes one value per key: the most an executor that folds
before the shuffle could reach on that API.

Throughput is events per second of batch processing time: the sum over all the query's batches
(no-data batches too: they evict and emit) of ``durationMs.addBatch`` from the query's progress,
which leaves out planning and reading the log into the source; the wall time from start to end
is printed too. A small machine's batch costs (above all the state store's commit, an fsync)
vary a lot, so the queries run ``--rounds`` times (default 3), interleaved, in one Spark
session; the tables show each query's median throughput and the median of its per-round ratio
to its peer of the same round.

State (from the runs of part ``compare``, the last round): the stateful operator's ``numRowsTotal`` (state
entries of all its state variables and timers), ``memoryUsedBytes`` and the RocksDB store's
``rocksdbSstFileSize`` (bytes of its data files) from the progress of the batch in which 10%
of the events have been read and of the last batch of the log. They must stay flat: disorder
is fixed, and the state is bounded by the open windows (for dedup, by the auctions seen).

Parts (``--parts``, default ``compare,scaling``; ``--big`` adds ``big``):

* ``compare``: the tables above, on ``--master`` (default ``local[2]``);
* ``scaling``: the eowc executors, Spark's own operators and the floors on ``local[1]`` and
  on ``local[2]`` at ``--scaling-keys`` auctions (default 100); a Spark session's master is
  fixed, so the script runs itself once per master and round (``--child scaling``), the
  masters alternating; goal: local[2] at least 1.6x;
* ``big``: ``--big-events`` (default 10,000,000) at ``--scaling-keys`` auctions through the
  eowc group aggregate on ``local[2]``, in a process of its own (the log is written by this
  one), with its output rows against the log's (auction, window) pairs and the peak resident
  memory (``VmHWM`` of ``/proc/<pid>/status``, sampled every 0.5 s) of the driver JVM (in
  local mode also the executor), of that process's Python driver, of the largest Python
  worker (the processes below the JVM: ``pyspark.daemon`` and its forked workers), the largest
  sum of the Python workers' ``VmRSS`` over the samples, and of the data source's
  ``python_streaming_source_runner`` processes (they read the log once, keep each table's rows
  in a spill file on disk, and plan the batches; Spark's, not the executor's).

Run: python3 benchmarks/spark_vs_native.py [--events N] [--keys 100,100000] [--rounds R]
     [--only group_agg,sort,session,dedup,join] [--parts compare,scaling] [--big]
(JIT options: ``EOWC_SPARK_JAVA_OPTIONS`` defaults to the empty string here, the full JIT.)
"""

from __future__ import annotations

import argparse
import bisect
import functools
import itertools
import json
import os
import pickle
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

os.environ.setdefault("EOWC_SPARK_JAVA_OPTIONS", "")  # before Spark starts: full JIT

import pandas as pd  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.streaming.stateful_processor import (  # noqa: E402
    StatefulProcessor,
    StatefulProcessorHandle,
)

from eowc.executors.buckets import GROUP_BUCKETS  # noqa: E402
from eowc.executors.composed import JOIN_BUCKETS  # noqa: E402
from eowc.executors.partitioned import PARTITION_BUCKETS  # noqa: E402
from eowc.executors.plan import DEFAULT_OPTIONS  # noqa: E402
from eowc.executors.spark.adapter import eowc_streams, watermarked  # noqa: E402
from eowc.executors.spark.arrival_source import CLOSE_SEQ, SEQ_COLUMN, SOURCE_NAME, register  # noqa: E402
from eowc.executors.spark.native import native_stream  # noqa: E402
from eowc.executors.spark.session import spark_session  # noqa: E402
from eowc.semantics.frontend.sql import parse_script  # noqa: E402
from eowc.semantics.ir.values import format_timestamp  # noqa: E402
from eowc.semantics.rules.triggers import Convention  # noqa: E402

START = 1_704_067_200_000_000  # 2024-01-01 00:00:00 in microseconds
WINDOW_MICROS = 10_000_000  # the group aggregate's TUMBLE size
EVENTS_PER_EPOCH = 50_000
SESSION_GAP_MICROS = 201_000
JOIN_BEFORE_MICROS, JOIN_AFTER_MICROS = 1_001_000, 2_001_000  # b.ts - a.ts in [-1.001 s, 2.001 s]
BIDS = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
SIDES = ("CREATE SOURCE a (auction BIGINT, price BIGINT, ts TIMESTAMP, "
         "WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);\n"
         "CREATE SOURCE b (auction BIGINT, price BIGINT, ts TIMESTAMP, "
         "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")

Peer = Callable[[Mapping[str, DataFrame]], DataFrame]


@dataclass(frozen=True)
class Workload:
    """One EOWC query (its sources' DDL and the query), the tables its events go to, Spark's
    own operators for it (each compared with the executor), its output row count computed
    from the events by hand, and how the executor shards its rows (the columns its shard
    hashes and the number of buckets: the floor's keys, :func:`api_floor`)."""

    name: str
    sql: str
    tables: tuple[str, ...]
    peers: dict[str, Peer]
    expected_rows: Callable[[list[Bid]], int]
    shard_columns: tuple[str, ...]
    shard_buckets: int
    #: The floor of an executor that folds rows before the shuffle (:func:`combined_floor`),
    #: for a query whose executor can.
    combined_floor: Peer | None = None


def compiled_native(sql: str) -> Peer:
    """eowc's own compilation of the query to Spark's native operators."""
    return lambda sources: native_stream(sources, parse_script(sql).query)


class FloorProcessor(StatefulProcessor):
    """The least an executor on Spark's Python stateful API (``transformWithStateInPandas``)
    does: per key and micro-batch, take its rows (their count) and read and write one typed
    value state. No late check, no timer, no output."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.seen = handle.getValueState("seen", "seen long")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        before = self.seen.get()
        self.seen.update(((before[0] if before else 0) + self.count(rows),))
        return iter(())

    def count(self, frames: Iterator[pd.DataFrame]) -> int:
        """How many events the key's frames hold."""
        return sum(len(frame) for frame in frames)

    def close(self) -> None:
        pass


def api_floor(workload: Workload) -> Peer:
    """The floor of any executor built on ``transformWithStateInPandas``: the workload's
    sources, each with its watermark, keyed as the executor shards them (Spark's own hash of
    the shard columns into the executor's number of buckets, computed in the JVM: no
    ``mapInPandas`` step), into :class:`FloorProcessor`. Its rate over Spark's own operator's
    is the most any such executor could reach; it emits nothing (its rows are not checked)."""
    declared = parse_script(workload.sql).sources

    def build(sources: Mapping[str, DataFrame]) -> DataFrame:
        keyed = [watermarked(sources[table], declared[table]).withColumn(
                     "_shard", F.pmod(F.hash(*workload.shard_columns), F.lit(workload.shard_buckets)))
                 for table in workload.tables]
        union = functools.reduce(DataFrame.unionByName, keyed)
        return union.groupBy("_shard").transformWithStateInPandas(
            FloorProcessor(), "_shard int", "Append", "EventTime")
    return build


class PackedFloorProcessor(FloorProcessor):
    """:class:`FloorProcessor` over packed rows: a key's rows of each input frame come as one
    pickled list of row tuples (:func:`packed_floor`); it unpickles them and counts them."""

    def count(self, frames: Iterator[pd.DataFrame]) -> int:
        return sum(len(pickle.loads(b)) for frame in frames for b in frame.iloc[:, -1])


def packed_per_shard(frame: pd.DataFrame, columns: list[str], buckets: int) -> pd.DataFrame:
    """``(_shard, _rows)``: the frame's rows as Python tuples, pickled per shard (``columns``
    hashed by pandas, vectorised, into ``buckets``)."""
    shards = pd.util.hash_pandas_object(frame[columns], index=False).to_numpy() % buckets
    rows = zip(*(frame[c].tolist() for c in frame.columns), strict=True)
    by_shard: dict[int, list[Any]] = {}
    for shard, row in zip(shards.tolist(), rows, strict=True):
        by_shard.setdefault(shard, []).append(row)
    return pd.DataFrame([(s, pickle.dumps(r, protocol=5)) for s, r in by_shard.items()],
                        columns=["_shard", "_rows"])


def packed_floor(workload: Workload) -> Peer:
    """The floor of an executor that packs its rows per key before the shuffle, as eowc does
    (a ``mapInPandas`` step hands ``transformWithStateInPandas`` one row per key and input
    frame, not one per event, so that PySpark does not regroup every row in Python): the
    workload's sources with their watermarks, each frame's rows as Python tuples pickled per
    shard (the shard columns hashed by pandas, vectorised), into :class:`PackedFloorProcessor`.
    No plan, no key per row, no late check, no state beyond one value."""
    declared = parse_script(workload.sql).sources
    columns, buckets = list(workload.shard_columns), workload.shard_buckets

    def pack(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for frame in frames:
            yield packed_per_shard(frame, columns, buckets)

    def build(sources: Mapping[str, DataFrame]) -> DataFrame:
        packed = [watermarked(sources[table], declared[table]).mapInPandas(
                      pack, "_shard long, _rows binary") for table in workload.tables]
        union = functools.reduce(DataFrame.unionByName, packed)
        return union.groupBy("_shard").transformWithStateInPandas(
            PackedFloorProcessor(), "_shard long", "Append", "EventTime")
    return build


class CombinedFloorProcessor(FloorProcessor):
    """:class:`FloorProcessor` over rows folded before the shuffle: a key's groups of each
    input frame come as one pickled list of ``(window start, auction, count, sum)``."""

    def count(self, frames: Iterator[pd.DataFrame]) -> int:
        return sum(group[2] for frame in frames for b in frame.iloc[:, -1]
                   for group in pickle.loads(b))


def combined_floor(size_us: int) -> Peer:
    """The floor of an executor that aggregates before the shuffle, as eowc's group aggregate
    does where it can (``EowcGroupAgg.combine``), for the group aggregate over TUMBLE windows
    of ``size_us``: a ``mapInPandas`` step that folds each frame's rows into one (window,
    auction) count and sum by pandas (vectorised: no Python per row), pickled per shard, into
    :class:`CombinedFloorProcessor`. No late check, no state beyond one value, no output."""

    def fold(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for frame in frames:
            micros = frame["ts"].to_numpy(dtype="datetime64[us]").astype("int64")
            groups = pd.DataFrame({"start": micros - micros % size_us,
                                   "auction": frame["auction"].to_numpy(),
                                   "price": frame["price"].to_numpy()}).groupby(
                ["start", "auction"], sort=False)["price"].agg(["size", "sum"]).reset_index()
            yield packed_per_shard(groups, ["auction"], GROUP_BUCKETS)

    def build(sources: Mapping[str, DataFrame]) -> DataFrame:
        bids = watermarked(sources["bids"], parse_script(GROUP_AGG).sources["bids"])
        return bids.mapInPandas(fold, "_shard long, _rows binary").groupBy(
            "_shard").transformWithStateInPandas(CombinedFloorProcessor(), "_shard long",
                                                 "Append", "EventTime")
    return build


def without_close_row(frame: DataFrame) -> DataFrame:
    return frame.filter(F.col(SEQ_COLUMN) != F.lit(CLOSE_SEQ))


def stream_join(sources: Mapping[str, DataFrame]) -> DataFrame:
    """eowc's own compilation of the join to Spark's stream-stream join, each source's close
    row given an auction of its own (-1, -2) that matches nothing. Spark infers ``auction IS
    NOT NULL`` from the join's equality and pushes it below ``withWatermark``: the close rows,
    whose columns are NULL, would not reach it, the watermark would stop at the last rows,
    and the NULL-padded rows of the last seconds' unmatched ``a`` rows would never come."""
    keyed = {table: frame.withColumn("auction", F.coalesce(F.col("auction"), F.lit(-1 - i)))
             for i, (table, frame) in enumerate(sorted(sources.items()))}
    return native_stream(keyed, parse_script(JOIN).query)


def buffered_rows(sources: Mapping[str, DataFrame]) -> DataFrame:
    """Each row held in Spark's state store until the watermark passes its event time: an
    append-mode aggregation keyed by the event time and the row's position (one group per row)."""
    stamped = sources["bids"].withWatermark("ts", "5 seconds")
    grouped = stamped.groupBy("ts", SEQ_COLUMN, "auction", "price").agg(F.count(F.lit(1)).alias("n"))
    # No filter of the close row: one on the grouping column _seq would be pushed below the
    # aggregation and the watermark, and the close row would not move the watermark. Its group
    # (at 2262-01-01) is never emitted.
    return grouped.select("auction", "price", "ts")


def passed_rows(sources: Mapping[str, DataFrame]) -> DataFrame:
    """The watermarked rows, unchanged, in append mode (no state)."""
    stamped = sources["bids"].withWatermark("ts", "5 seconds")
    return without_close_row(stamped).select("auction", "price", "ts")


def first_bids(sources: Mapping[str, DataFrame]) -> DataFrame:
    """One row per auction, the first to arrive: ``dropDuplicates`` over the watermarked stream."""
    stamped = sources["bids"].withWatermark("ts", "5 seconds")
    return without_close_row(stamped.dropDuplicates(["auction"])).select("ts", "auction", "price")


GROUP_AGG = BIDS + ("SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                    "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                    "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
SORT = BIDS + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE"
SESSION = BIDS + ("SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s FROM "
                  "TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '0.201' "
                  "SECOND)) GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
DEDUP = BIDS + ("SELECT ts, auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction "
                "ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE")
JOIN = SIDES + ("SELECT a.ts AS ats, b.ts AS bts, a.auction, a.price AS ap, b.price AS bp FROM a "
                "LEFT JOIN b ON a.auction = b.auction AND a.ts BETWEEN b.ts - INTERVAL '2.001' SECOND "
                "AND b.ts + INTERVAL '1.001' SECOND EMIT ON WINDOW CLOSE")


# ---------------------------------------------------------------------------------------------
# The events


class Bid(NamedTuple):
    """One event of the log: its table, auction, price and event time (microseconds)."""

    table: str
    auction: int
    price: int
    ts: int


def bids(tables: tuple[str, ...], events: int, keys: int, seed: int = 11) -> Iterator[Bid]:
    """Event ``i`` of table ``tables[i % len(tables)]`` at ``2 i`` ms minus up to 2 s of
    disorder (even milliseconds), a random auction of ``keys`` and price."""
    rng = random.Random(seed)
    for i in range(events):
        ts = START + 2 * max(0, i - rng.randrange(1000)) * 1000
        yield Bid(tables[i % len(tables)], rng.randrange(keys), rng.randrange(1, 1000), ts)


def write_log(path: Path, events: Iterable[Bid], epochs: int, count: int) -> None:
    """The arrival log of ``count`` events in ``epochs`` equal epochs."""
    per_epoch = -(-count // epochs)
    with path.open("w", encoding="utf-8") as out:
        for i, bid in enumerate(events):
            out.write(json.dumps({"table": bid.table, "row": {
                "auction": bid.auction, "price": bid.price, "ts": format_timestamp(bid.ts)}}) + "\n")
            if (i + 1) % per_epoch == 0:
                out.write('{"barrier": true}\n')


# The output row count of each query, computed from the events by hand (no late row, and the
# close row at the end closes everything): an oracle independent of both sides.

def window_groups(events: Iterable[Bid]) -> int:
    """group_agg: one row per auction and 10 s window with a bid."""
    return len({(e.auction, e.ts // WINDOW_MICROS) for e in events})


def all_rows(events: list[Bid]) -> int:
    """sort: every row."""
    return len(events)


def by_auction(events: Iterable[Bid]) -> dict[int, list[int]]:
    times: dict[int, list[int]] = {}
    for e in events:
        times.setdefault(e.auction, []).append(e.ts)
    return {k: sorted(v) for k, v in times.items()}


def sessions(events: list[Bid]) -> int:
    """session: per auction, a new session where two consecutive bids are a gap or more apart."""
    return sum(1 + sum(1 for x, y in itertools.pairwise(ts) if y - x >= SESSION_GAP_MICROS)
               for ts in by_auction(events).values())


def auctions(events: list[Bid]) -> int:
    """dedup: one row per auction."""
    return len({e.auction for e in events})


def left_join_rows(events: list[Bid]) -> int:
    """join: per ``a`` row, its ``b`` rows of the same auction with ``b.ts`` in ``[a.ts - 1.001 s,
    a.ts + 2.001 s]`` (``a.ts BETWEEN b.ts - 2.001 s AND b.ts + 1.001 s``), or one NULL-padded row."""
    right = by_auction(e for e in events if e.table == "b")
    rows = 0
    for e in events:
        if e.table == "a":
            ts = right.get(e.auction, [])
            matches = (bisect.bisect_right(ts, e.ts + JOIN_AFTER_MICROS)
                       - bisect.bisect_left(ts, e.ts - JOIN_BEFORE_MICROS))
            rows += max(1, matches)
    return rows


WORKLOADS = {w.name: w for w in (
    Workload("group_agg", GROUP_AGG, ("bids",), {"groupBy(window)": compiled_native(GROUP_AGG)},
             window_groups, ("auction",), GROUP_BUCKETS, combined_floor(WINDOW_MICROS)),
    Workload("sort", SORT, ("bids",), {"buffer": buffered_rows, "pass-through": passed_rows},
             all_rows, ("auction", "price", "ts"), DEFAULT_OPTIONS.sort_partitions),
    Workload("session", SESSION, ("bids",), {"session_window": compiled_native(SESSION)}, sessions,
             ("auction",), PARTITION_BUCKETS),
    Workload("dedup", DEDUP, ("bids",), {"dropDuplicates": first_bids}, auctions, ("auction",),
             PARTITION_BUCKETS),
    Workload("join", JOIN, ("a", "b"), {"stream join": stream_join}, left_join_rows, ("auction",),
             JOIN_BUCKETS),
)}


# ---------------------------------------------------------------------------------------------
# Running a query and reading its progress


@dataclass(frozen=True)
class StateFigures:
    """The stateful operators' state after a batch (summed over the operators)."""

    events: int  # events read up to and including that batch
    rows: int  # numRowsTotal
    memory_bytes: int  # memoryUsedBytes
    sst_bytes: int  # the RocksDB store's rocksdbSstFileSize


@dataclass(frozen=True)
class Measured:
    """One query's run over the whole log."""

    name: str
    events: int
    output_rows: int
    busy: float  # seconds of addBatch, all batches
    wall: float
    at_tenth: StateFigures | None
    at_end: StateFigures | None

    @property
    def rate(self) -> float:
        return self.events / self.busy


def arrival_sources(spark: SparkSession, workload: Workload, query_path: Path, events: Path
                    ) -> dict[str, DataFrame]:
    """One ``eowc_arrival_log`` stream per table of the workload, closed after the log."""
    register(spark)
    return {table: (spark.readStream.format(SOURCE_NAME).option("events", str(events))
                    .option("query", str(query_path)).option("table", table)
                    .option("close", "true").load())
            for table in workload.tables}


def eowc_build(workload: Workload) -> Peer:
    """The eowc executor's emitted rows (its refusals and rejections left out: none is due)."""
    return lambda sources: (eowc_streams(dict(sources), workload.sql, Convention.SPARK)
                            .filter(F.col("_kind") == F.lit("emit")))


def run_query(spark: SparkSession, name: str, workload: Workload, build: Peer, query_path: Path,
              events: Path, expected_events: int, checkpoint: Path) -> Measured:
    """Run one query over the whole log to the ``noop`` sink and read its progress."""
    shutil.rmtree(checkpoint, ignore_errors=True)
    frame = build(arrival_sources(spark, workload, query_path, events))
    started = time.perf_counter()
    handle = (frame.writeStream.format("noop").outputMode("append")
              .option("checkpointLocation", str(checkpoint))
              .trigger(availableNow=True).start())
    handle.awaitTermination()
    wall = time.perf_counter() - started
    progress = list(handle.recentProgress)
    read = sum(p["numInputRows"] for p in progress) - len(workload.tables)  # the close rows
    if read != expected_events:
        raise SystemExit(f"{name}: read {read:,} events of {expected_events:,} (the progress of "
                         f"{len(progress)} batches; spark.sql.streaming.numRecentProgressUpdates?)")
    shutil.rmtree(checkpoint, ignore_errors=True)
    return Measured(
        name, read, sum(max(0, p["sink"]["numOutputRows"]) for p in progress),
        sum(p["durationMs"].get("addBatch", 0) for p in progress) / 1000, wall,
        state_after(progress, read // 10), state_after(progress, read))


def state_after(progress: list[Any], events: int) -> StateFigures | None:
    """The state after the first batch by which ``events`` events have been read."""
    seen = 0
    for p in progress:
        seen += p["numInputRows"]
        if seen >= events and p["stateOperators"]:
            operators = p["stateOperators"]
            return StateFigures(
                seen, sum(op["numRowsTotal"] for op in operators),
                sum(op["memoryUsedBytes"] for op in operators),
                sum(op["customMetrics"].get("rocksdbSstFileSize", 0) for op in operators))
    return None


@dataclass
class Bench:
    """A Spark session, a scratch directory and the logs written in it (by tables and key
    count), with their events."""

    spark: SparkSession
    directory: Path
    events: int
    epochs: int
    logs: dict[tuple[tuple[str, ...], int], tuple[Path, list[Bid]]] = field(default_factory=dict)

    def log(self, tables: tuple[str, ...], keys: int) -> tuple[Path, list[Bid]]:
        if (tables, keys) not in self.logs:
            path = self.directory / f"{'-'.join(tables)}-{keys}.jsonl"
            events = list(bids(tables, self.events, keys))
            write_log(path, events, self.epochs, self.events)
            self.logs[tables, keys] = path, events
        return self.logs[tables, keys]

    def close(self) -> None:
        """Stop Spark and remove the scratch directory."""
        self.spark.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def expected_rows(self, workload: Workload, keys: int) -> int:
        return workload.expected_rows(self.log(workload.tables, keys)[1])

    def query_file(self, workload: Workload) -> Path:
        path = self.directory / f"{workload.name}.sql"
        path.write_text(workload.sql, encoding="utf-8")
        return path

    def run(self, name: str, workload: Workload, build: Peer, keys: int) -> Measured:
        return run_query(self.spark, name, workload, build, self.query_file(workload),
                         self.log(workload.tables, keys)[0], self.events,
                         self.directory / "checkpoints" / name.replace(" ", "_"))


def open_bench(master: str, events: int, epochs: int) -> Bench:
    spark = spark_session(master, "eowc-benchmark")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000000")
    return Bench(spark, Path(tempfile.mkdtemp(prefix="eowc-bench-")), events, epochs)


def warm_up(bench: Bench, workloads: list[Workload], keys: int, events: int) -> None:
    """A first, unmeasured run of every query over ``events`` events (JIT, Python workers,
    Spark's caches)."""
    if events <= 0:
        return
    warm = Bench(bench.spark, bench.directory / "warm", events, 4)
    warm.directory.mkdir(exist_ok=True)
    for w in workloads:
        for label, build in measured_sides(w):
            warm.run(f"warm {w.name} {label}", w, build, keys)


#: The label of :func:`api_floor`'s side.
FLOOR = "API floor"
#: The label of :func:`packed_floor`'s side.
PACKED_FLOOR = "packed floor"
#: The label of :func:`combined_floor`'s side.
COMBINED_FLOOR = "combined floor"


def measured_sides(workload: Workload) -> list[tuple[str, Peer]]:
    """What part compare runs of a workload: the executor, Spark's own operators, the floors."""
    combined = [] if workload.combined_floor is None else [(COMBINED_FLOOR, workload.combined_floor)]
    return [("eowc", eowc_build(workload)), *workload.peers.items(), (FLOOR, api_floor(workload)),
            (PACKED_FLOOR, packed_floor(workload)), *combined]


def median(values: list[float]) -> float:
    return statistics.median(values)


# ---------------------------------------------------------------------------------------------
# Part compare (and state)


def compare(args: argparse.Namespace, workloads: list[Workload]) -> None:
    """eowc against Spark's own, interleaved rounds in one session; then the state figures."""
    bench = open_bench(args.master, args.events, args.epochs)
    warm_up(bench, workloads, args.keys[0], args.warmup)
    print(f"compare: {args.events:,} events, {args.epochs} epochs, keys {args.keys}, master "
          f"{args.master}, {args.rounds} rounds", flush=True)
    runs: dict[tuple[str, int, str], list[Measured]] = {}
    for i in range(args.rounds):
        for keys in args.keys:
            for w in workloads:
                for label, build in measured_sides(w):
                    result = bench.run(f"{w.name} {label}", w, build, keys)
                    runs.setdefault((w.name, keys, label), []).append(result)
                    print(f"  round {i + 1}, {keys:>7,} keys: {w.name:<10}{label:<16}"
                          f"{result.rate:>10,.0f} events/s ({result.busy:.1f} s busy, "
                          f"{result.wall:.1f} s wall, {result.output_rows:,} rows out)", flush=True)
    print(f"\n{'query':<10}{'keys':>8}  {'Spark peer':<16}{'eowc ev/s':>11}{'peer ev/s':>11}"
          f"{'ratio':>8}  {'per round':<22}{'wall s eowc/peer':>18}"
          f"{'floor ev/s':>12}{'floor/peer':>11}{'eowc/floor':>11}"
          f"{'packed ev/s':>12}{'packed/peer':>12}{'eowc/packed':>12}")
    for w in workloads:
        for keys in args.keys:
            mine, floor = runs[w.name, keys, "eowc"], runs[w.name, keys, FLOOR]
            packed = runs[w.name, keys, PACKED_FLOOR]
            for label in w.peers:
                theirs = runs[w.name, keys, label]
                print(f"{w.name:<10}{keys:>8,}  {label:<16}{median([m.rate for m in mine]):>11,.0f}"
                      f"{median([t.rate for t in theirs]):>11,.0f}{ratio(mine, theirs):>7.2f}x  "
                      f"{', '.join(f'{r:.2f}' for r in ratios(mine, theirs)):<22}"
                      f"{median([m.wall for m in mine]):>9.1f}/{median([t.wall for t in theirs]):<8.1f}"
                      f"{median([f.rate for f in floor]):>12,.0f}{ratio(floor, theirs):>10.2f}x"
                      f"{ratio(mine, floor):>10.2f}x"
                      f"{median([p.rate for p in packed]):>12,.0f}{ratio(packed, theirs):>11.2f}x"
                      f"{ratio(mine, packed):>11.2f}x")
    print(f"({FLOOR}: no work, the raw rows into Spark's Python stateful API; {PACKED_FLOOR}: no "
          "work, the rows packed per key by a mapInPandas step first, as eowc does. PySpark "
          "regroups a stateful input one row at a time, so either can be the lower; the higher "
          "of floor/peer and packed/peer is the most an executor on that API could reach)")
    for w in workloads:
        for keys in args.keys:
            combined = runs.get((w.name, keys, COMBINED_FLOOR))
            if combined:
                mine, theirs = runs[w.name, keys, "eowc"], runs[w.name, keys, next(iter(w.peers))]
                print(f"{COMBINED_FLOOR} ({w.name}, {keys:,} keys: rows folded by pandas before "
                      f"the shuffle): {median([c.rate for c in combined]):,.0f} events/s, "
                      f"{ratio(combined, theirs):.2f}x of Spark's own; eowc at "
                      f"{ratio(mine, combined):.2f}x of it")
    wrong = print_row_counts(bench, workloads, args.keys, runs)
    print_state(workloads, args.keys, runs)
    bench.close()
    if wrong:
        print("\nOUTPUT ROW COUNTS DIFFER from the log's (a ratio above that involves them compares "
              "different queries):\n  " + "\n  ".join(wrong))


def ratios(these: list[Measured], those: list[Measured]) -> list[float]:
    """The rate of ``these`` over ``those`` in each round, in increasing order."""
    return sorted(a.rate / b.rate for a, b in zip(these, those, strict=True))


def ratio(these: list[Measured], those: list[Measured]) -> float:
    """The median of :func:`ratios`."""
    return median(ratios(these, those))


def print_row_counts(bench: Bench, workloads: list[Workload], key_counts: list[int],
                     runs: Mapping[tuple[str, int, str], list[Measured]]) -> list[str]:
    """Each query's output rows (every round) beside the count computed from the log; the
    queries whose rows differ from it."""
    print(f"\n{'query':<10}{'keys':>8}  {'side':<16}{'output rows':>14}{'from the log':>14}")
    wrong = []
    for w in workloads:
        for keys in key_counts:
            expected = bench.expected_rows(w, keys)
            for label in ["eowc", *w.peers]:
                counts = sorted({m.output_rows for m in runs[w.name, keys, label]})
                verdict = "" if counts == [expected] else "  DIFFERENT"
                if verdict:
                    wrong.append(f"{w.name} at {keys:,} keys, {label}: {counts}, not {expected:,}")
                print(f"{w.name:<10}{keys:>8,}  {label:<16}{', '.join(f'{c:,}' for c in counts):>14}"
                      f"{expected:>14,}{verdict}")
    return wrong


def print_state(workloads: list[Workload], key_counts: list[int],
                runs: Mapping[tuple[str, int, str], list[Measured]]) -> None:
    """State entries and bytes after 10% of the events and after all of them (last round)."""
    print("\nstate after 10% -> 100% of the events (last round): numRowsTotal, "
          "memoryUsedBytes, rocksdbSstFileSize")
    for w in workloads:
        for keys in key_counts:
            for label in ["eowc", *w.peers]:
                last = runs[w.name, keys, label][-1]
                if last.at_tenth is None or last.at_end is None:
                    continue
                a, b = last.at_tenth, last.at_end
                print(f"  {w.name:<10}{keys:>8,} {label:<16} after {a.events:>10,}: "
                      f"{a.rows:>9,} rows {a.memory_bytes:>12,} B {a.sst_bytes:>12,} B sst   "
                      f"after {b.events:>10,}: {b.rows:>9,} rows {b.memory_bytes:>12,} B "
                      f"{b.sst_bytes:>12,} B sst ({growth(a.rows, b.rows)} rows)")


def growth(before: int, after: int) -> str:
    return f"{(after - before) / before * 100:+.0f}%" if before else "n/a"


# ---------------------------------------------------------------------------------------------
# Part scaling: local[1] against local[2], one process per master and round


def scaling_child(args: argparse.Namespace, workloads: list[Workload]) -> dict[str, float]:
    """This process's events/s of each eowc executor, of Spark's own operators for the query
    and of its floor (:func:`api_floor`; one measured run each, after a warm-up)."""
    bench = open_bench(args.master, args.events, args.epochs)
    warm_up(bench, workloads, args.scaling_keys, args.warmup)
    rates = {}
    for w in workloads:
        for label, build in measured_sides(w):
            name = w.name if label == "eowc" else f"{w.name} {label}"
            rates[name] = bench.run(f"{label} {w.name}", w, build, args.scaling_keys).rate
    bench.close()
    return rates


def rerun(args: argparse.Namespace, child: str, master: str, **options: Any) -> dict[str, Any]:
    """Run this script again as ``--child child`` on ``master``; its result (the last line of
    its output, JSON)."""
    command = [sys.executable, __file__, "--child", child, "--master", master,
               "--events", str(options.get("events", args.events)),
               "--epochs", str(options.get("epochs", args.epochs)),
               "--warmup", str(args.warmup), "--scaling-keys", str(args.scaling_keys),
               "--only", ",".join(options.get("only", args.only)), "--log", str(options.get("log", ""))]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def scaling(args: argparse.Namespace, workloads: list[Workload]) -> None:
    print(f"\nscaling: eowc executors, Spark's own operators and the {FLOOR}, {args.events:,} "
          f"events, {args.scaling_keys:,} keys, local[1] and local[2] alternating, "
          f"{args.rounds} rounds (one process each)", flush=True)
    rates: dict[str, dict[str, list[float]]] = {"local[1]": {}, "local[2]": {}}
    for i in range(args.rounds):
        for master in rates:
            for name, rate in rerun(args, "scaling", master).items():
                rates[master].setdefault(name, []).append(rate)
                print(f"  round {i + 1}: {master} {name:<10}{rate:>10,.0f} events/s", flush=True)
    print(f"{'query':<20}{'local[1] ev/s':>15}{'local[2] ev/s':>15}{'ratio':>8}  per round "
          f"(goal >= 1.6x; {FLOOR}: the same for no work on Spark's Python stateful API; "
          "the others: Spark's own operators)")
    for name in rates["local[1]"]:
        one, two = rates["local[1]"][name], rates["local[2]"][name]
        gains = sorted(b / a for a, b in zip(one, two, strict=True))
        print(f"{name:<20}{median(one):>15,.0f}{median(two):>15,.0f}{median(gains):>7.2f}x  "
              + ", ".join(f"{r:.2f}" for r in gains))


# ---------------------------------------------------------------------------------------------
# Part big: 10,000,000 events through the group aggregate, with peak memory


def status_kib(pid: int, field_name: str) -> int:
    """A ``/proc/<pid>/status`` field in KiB (0 once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(root: int) -> Iterator[int]:
    """The processes below ``root`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        yield pid
        stack.extend(children.get(pid, []))


#: The command line of the process that plans a Python data source's batches (it holds the
#: whole arrival log), as opposed to the Python workers that run the query's functions.
SOURCE_RUNNER = "python_streaming_source_runner"


def is_source_runner(pid: int) -> bool:
    try:
        return SOURCE_RUNNER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class PeakMemory:
    """Samples, every ``interval`` seconds, the peak resident memory (``VmHWM``, KiB) of the
    JVM and of each process below it (the Python workers and the source runners), and the
    largest sum of the Python workers' ``VmRSS`` over the samples."""

    def __init__(self, jvm: int, interval: float = 0.5) -> None:
        self.jvm, self.interval = jvm, interval
        self.peaks: dict[int, int] = {}
        self.source_runners: set[int] = set()
        self.workers_together = 0
        self.jvm_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self.jvm_peak = max(self.jvm_peak, status_kib(self.jvm, "VmHWM"))
            together = 0
            for pid in descendants(self.jvm):
                self.peaks[pid] = max(self.peaks.get(pid, 0), status_kib(pid, "VmHWM"))
                if pid in self.source_runners or is_source_runner(pid):
                    self.source_runners.add(pid)
                else:
                    together += status_kib(pid, "VmRSS")
            self.workers_together = max(self.workers_together, together)
            if self._stop.wait(self.interval):
                return

    def largest(self, source_runners: bool) -> tuple[int, int]:
        """How many processes of the kind, and the largest peak among them."""
        peaks = [kib for pid, kib in self.peaks.items() if (pid in self.source_runners) == source_runners]
        return len(peaks), max(peaks, default=0)


def big_child(args: argparse.Namespace) -> dict[str, Any]:
    """The eowc group aggregate over the log ``args.log`` (``args.events`` events) on
    ``args.master``: its throughput, output rows, state, and the processes' peak memory (KiB)."""
    workload = WORKLOADS["group_agg"]
    bench = open_bench(args.master, args.events, args.epochs)
    warm_up(bench, [workload], args.scaling_keys, args.warmup)
    bench.logs[workload.tables, args.scaling_keys] = Path(args.log), []
    jvm = bench.spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    with PeakMemory(int(jvm)) as memory:
        result = bench.run("eowc group_agg", workload, eowc_build(workload), args.scaling_keys)
    bench.close()
    workers, largest_worker = memory.largest(source_runners=False)
    runners, largest_runner = memory.largest(source_runners=True)
    return {"events": result.events, "rate": result.rate, "busy": result.busy, "wall": result.wall,
            "output_rows": result.output_rows,
            "state": [vars(s) if s else None for s in (result.at_tenth, result.at_end)],
            "jvm_kib": memory.jvm_peak, "driver_kib": status_kib(os.getpid(), "VmHWM"),
            "workers": workers, "largest_worker_kib": largest_worker,
            "workers_together_kib": memory.workers_together,
            "source_runners": runners, "largest_source_runner_kib": largest_runner}


def big(args: argparse.Namespace) -> None:
    """Part big: the log written here, the query run in a process of its own (whose driver
    memory is then the query's alone)."""
    epochs = max(4, args.big_events // EVENTS_PER_EPOCH)
    print(f"\nbig: {args.big_events:,} events, {epochs} epochs, {args.scaling_keys:,} keys, "
          "eowc group aggregate on local[2] (a process of its own)", flush=True)
    directory = Path(tempfile.mkdtemp(prefix="eowc-bench-big-"))
    log = directory / "big.jsonl"
    started = time.perf_counter()
    write_log(log, bids(("bids",), args.big_events, args.scaling_keys), epochs, args.big_events)
    expected = window_groups(bids(("bids",), args.big_events, args.scaling_keys))
    print(f"  log written and its (auction, window) pairs counted in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    r = rerun(args, "big", "local[2]", events=args.big_events, epochs=epochs, log=log)
    shutil.rmtree(directory, ignore_errors=True)
    mib = 1024
    same = "the same" if r["output_rows"] == expected else "DIFFERENT"
    print(f"  {r['rate']:,.0f} events/s ({r['busy']:.0f} s busy, {r['wall']:.0f} s wall); "
          f"{r['output_rows']:,} rows out, {same} as the log's {expected:,} (auction, window) pairs")
    for s, when in zip(r["state"], ("10%", "100%"), strict=True):
        if s:
            print(f"  state after {when} ({s['events']:,} events): {s['rows']:,} rows, "
                  f"{s['memory_bytes']:,} B memoryUsedBytes, {s['sst_bytes']:,} B sst")
    print(f"  peak resident memory (VmHWM): driver JVM {r['jvm_kib'] / mib:,.0f} MiB; driver Python "
          f"{r['driver_kib'] / mib:,.0f} MiB; largest of {r['workers']} Python workers "
          f"{r['largest_worker_kib'] / mib:,.0f} MiB, the Python workers together (VmRSS, largest "
          f"sample) {r['workers_together_kib'] / mib:,.0f} MiB; largest of {r['source_runners']} "
          f"source runners (the log's rows spilled to disk) "
          f"{r['largest_source_runner_kib'] / mib:,.0f} MiB")


# ---------------------------------------------------------------------------------------------


PARTS = ("compare", "scaling", "big")


def key_counts(text: str) -> list[int]:
    return [int(k) for k in text.split(",") if k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"micro-batches of events (default: one per {EVENTS_PER_EPOCH:,} events)")
    parser.add_argument("--keys", type=key_counts, default=[100, 100_000],
                        help="auction counts of part compare, comma-separated")
    parser.add_argument("--scaling-keys", type=int, default=100,
                        help="auctions of parts scaling and big")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20_000,
                        help="events of a first, unmeasured run of each query")
    parser.add_argument("--master", default="local[2]", help="Spark master of part compare")
    parser.add_argument("--only", type=lambda s: [n for n in s.split(",") if n],
                        default=list(WORKLOADS), help="queries, comma-separated: "
                        + ",".join(WORKLOADS))
    parser.add_argument("--parts", type=lambda s: [n for n in s.split(",") if n],
                        default=["compare", "scaling"], help=",".join(PARTS))
    parser.add_argument("--big", action="store_true", help="add part big")
    parser.add_argument("--big-events", type=int, default=10_000_000)
    parser.add_argument("--child", choices=["scaling", "big"], help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = [n for n in args.only if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown queries {unknown}; known: {', '.join(WORKLOADS)}")
    if not set(args.parts) <= set(PARTS):
        parser.error(f"unknown parts {sorted(set(args.parts) - set(PARTS))}; known: {', '.join(PARTS)} "
                     "(--parts '' for none)")
    if args.epochs is None:
        args.epochs = max(4, args.events // EVENTS_PER_EPOCH)
    workloads = [WORKLOADS[n] for n in args.only]
    if args.child == "scaling":
        print(json.dumps(scaling_child(args, workloads)))
        return
    if args.child == "big":
        print(json.dumps(big_child(args)))
        return
    started = time.perf_counter()
    if "compare" in args.parts:
        compare(args, workloads)
    if "scaling" in args.parts:
        scaling(args, workloads)
    if args.big or "big" in args.parts:
        big(args)
    print(f"\n(the whole run took {time.perf_counter() - started:,.0f} s)")


if __name__ == "__main__":
    main()
