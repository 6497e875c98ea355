"""The ``eowc_arrival_log`` source and the ``EpochSink`` writer on a real local Spark.

Every streaming query here runs with ``Trigger.AvailableNow``. The source implements
``SupportsTriggerAvailableNow``, so Spark runs one trigger after another with no waiting (its
``MultiBatchExecutor``); each trigger asks the source for ``latestOffset(start)``, which is one
epoch beyond ``start``, so each trigger is the batch of the next epoch. The query ends by itself
at the first trigger that constructs no batch: the offsets did not move (all epochs done) and no
stateful operator asks for a no-data batch. A processing-time trigger gives the same batches
(checked by hand) but never ends by itself, so a test would need ``processAllAvailable()`` and
``stop()``; AvailableNow needs neither polling nor sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eowc.executors.spark.arrival_source import arrival_stream
from eowc.executors.spark.session import (
    SparkSetupError,
    check_java,
    parse_java_major,
    pyspark_package,
    session_setting,
    spark_home,
)
from eowc.executors.spark.sink import (
    EpochSink,
    batch_file,
    committed_batches,
    offset_log,
    read_batches,
)

BIDS_SQL = """
CREATE SOURCE bid (
    bidtime TIMESTAMP, price DOUBLE, item VARCHAR, hot BOOLEAN, qty BIGINT,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '5' SECOND
);
CREATE TABLE ask (asktime TIMESTAMP, qty BIGINT);
SELECT item FROM bid;
"""

BARRIER: dict[str, Any] = {"barrier": True}

#: Five epochs: 0 (bids C and A), 1 (an ask only: no bid rows), 2 (bids B and D), 3 (nothing at
#: all: two barriers in a row) and 4 (bid E, no barrier after it). ``_seq`` counts every event.
BIDS_LOG: list[dict[str, Any]] = [
    {"table": "bid", "row": {"bidtime": "2020-04-15 08:00:01.123456", "price": 4.0, "item": "C",
                             "hot": True, "qty": 1}},                                    # seq 0
    {"table": "ask", "row": {"asktime": "2020-04-15 08:00:02", "qty": 7}},              # seq 1
    {"table": "bid", "row": {"bidtime": "2020-04-15 08:00:07.123456", "price": 2.5, "item": "A",
                             "hot": False}},                                             # seq 2
    BARRIER,
    {"table": "ask", "row": {"asktime": "2020-04-15 08:00:03", "qty": 8}},              # seq 3
    BARRIER,
    {"table": "bid", "row": {"bidtime": "2020-04-15 08:00:11", "price": 3.0, "item": "B",
                             "hot": True, "qty": 3}},                                    # seq 4
    {"table": "bid", "row": {"bidtime": "2020-04-15 08:00:09.999999", "price": None, "item": "D",
                             "hot": None, "qty": -4}},                                   # seq 5
    BARRIER,
    BARRIER,
    {"table": "bid", "row": {"bidtime": "2020-04-15 08:00:20.000001", "price": 1.0, "item": "E",
                             "hot": False, "qty": 2**62}},                               # seq 6
]

# 2020-04-15 08:00:00 UTC is 1586937600 seconds after the Unix epoch.
T0_US = 1_586_937_600_000_000


def _bid(bidtime: str, us: int, price: float | None, item: str, hot: bool | None, qty: int | None,
         epoch: int, seq: int) -> dict[str, Any]:
    return {"bidtime": bidtime, "price": price, "item": item, "hot": hot, "qty": qty,
            "_epoch": epoch, "_seq": seq, "us": us}


#: Batch id -> rows, written out by hand: one batch per epoch, empty epochs included. ``us`` is
#: Spark's own ``unix_micros(bidtime)``, so timestamps are checked inside Spark too.
EXPECTED_BATCHES: list[tuple[int, list[dict[str, Any]]]] = [
    (0, [_bid("2020-04-15 08:00:01.123456", T0_US + 1_123_456, 4.0, "C", True, 1, 0, 0),
         _bid("2020-04-15 08:00:07.123456", T0_US + 7_123_456, 2.5, "A", False, None, 0, 2)]),
    (1, []),
    (2, [_bid("2020-04-15 08:00:11", T0_US + 11_000_000, 3.0, "B", True, 3, 2, 4),
         _bid("2020-04-15 08:00:09.999999", T0_US + 9_999_999, None, "D", None, -4, 2, 5)]),
    (3, []),
    (4, [_bid("2020-04-15 08:00:20.000001", T0_US + 20_000_001, 1.0, "E", False, 2**62, 4, 6)]),
]


def write_case(directory: Path, sql: str, log: list[dict[str, Any]]) -> tuple[str, str]:
    """Write the script and the arrival log; return their paths (events, query)."""
    directory.mkdir(parents=True, exist_ok=True)
    query = directory / "query.sql"
    query.write_text(sql, encoding="utf-8")
    events = directory / "events.jsonl"
    events.write_text("".join(json.dumps(item) + "\n" for item in log), encoding="utf-8")
    return str(events), str(query)


def pass_through(frame: DataFrame) -> DataFrame:
    """The bids with a watermark and Spark's own microseconds of ``bidtime``."""
    return frame.withWatermark("bidtime", "5 seconds").withColumn("us", F.unix_micros("bidtime"))


def run_query(spark: SparkSession, events: str, query: str, work: Path, *,
              table: str | None = "bid", transform: Callable[[DataFrame], DataFrame] = pass_through,
              max_epochs: int | None = None, pacing: str = "epoch") -> EpochSink:
    """Run the query to its end with AvailableNow, output in ``work/out``, checkpoint in
    ``work/checkpoint``; return the sink (what it wrote and skipped)."""
    frame = transform(arrival_stream(spark, events, query, table, max_epochs=max_epochs,
                                     pacing=pacing))
    sink = EpochSink(work / "out", work / "checkpoint")
    running = (frame.writeStream.foreachBatch(sink).outputMode("append")
               .option("checkpointLocation", str(work / "checkpoint"))
               .trigger(availableNow=True).start())
    try:
        assert running.awaitTermination(120), "the query did not end within 120 s"
    finally:
        running.stop()
    return sink


@pytest.fixture(scope="module")
def bids_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_case(tmp_path_factory.mktemp("bids"), BIDS_SQL, BIDS_LOG)


@pytest.fixture(scope="module")
def uninterrupted(spark: SparkSession, bids_case: tuple[str, str],
                  tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted run over the whole bids log; its work directory."""
    work = tmp_path_factory.mktemp("uninterrupted")
    run_query(spark, *bids_case, work)
    return work


# ---------------------------------------------------------------------------------------------
# (a) one batch per epoch


def test_one_batch_per_epoch_with_exact_rows(uninterrupted: Path) -> None:
    assert [(b.batch_id, b.rows) for b in read_batches(uninterrupted / "out")] == EXPECTED_BATCHES


def test_each_batch_records_its_offsets_and_epoch(uninterrupted: Path) -> None:
    """The sink's record of each batch holds the offsets Spark logged for it, so the epoch
    follows from the sink's file alone."""
    entries = offset_log(uninterrupted / "checkpoint")
    assert [entry.offsets for entry in entries] == [({"epoch": n},) for n in range(1, 6)]
    batches = read_batches(uninterrupted / "out")
    assert [b.record.offsets for b in batches] == [entry.offsets for entry in entries]
    assert {b.batch_id: b.epoch for b in batches} == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}
    assert set(committed_batches(uninterrupted / "checkpoint")) == {0, 1, 2, 3, 4}
    assert all(entry.version == "v1" for entry in entries)
    assert entries[0].conf["spark.sql.streaming.stateStore.providerClass"].endswith(
        "RocksDBStateStoreProvider")


def test_offset_file_format(uninterrupted: Path) -> None:
    """What Spark 4 writes: version line, metadata JSON, the source's offset as our JSON, with no
    newline at the end."""
    lines = (uninterrupted / "checkpoint" / "offsets" / "2").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "v1"
    assert set(json.loads(lines[1])) >= {"batchWatermarkMs", "batchTimestampMs", "conf"}
    assert lines[2:] == ['{"epoch": 3}']


# ---------------------------------------------------------------------------------------------
# (c) the watermark Spark records per batch


def test_batch_watermarks(uninterrupted: Path) -> None:
    # Spark's watermark is max(event time) truncated to milliseconds minus the delay, and a batch
    # runs with the watermark computed from the batches before it (0 before any).
    #   batch 0 (epoch 0): nothing seen yet                                  -> 0
    #   batch 1 (epoch 1): max is A 08:00:07.123456 -> 08:00:07.123 - 5 s   -> 08:00:02.123
    #   batch 2 (epoch 2): epoch 1 had no bid rows                          -> 08:00:02.123
    #   batch 3 (epoch 3): max is B 08:00:11 (D at 08:00:09.999999 is lower) -> 08:00:06.000
    #   batch 4 (epoch 4): epoch 3 was empty                                -> 08:00:06.000
    # and after batch 4 (E at 08:00:20.000001 -> 08:00:20.000):            -> 08:00:15.000
    t0_ms = T0_US // 1000
    expected = {0: 0, 1: t0_ms + 2_123, 2: t0_ms + 2_123, 3: t0_ms + 6_000, 4: t0_ms + 6_000}
    assert {b.batch_id: b.record.watermark_ms for b in read_batches(uninterrupted / "out")} == \
        expected
    assert {e.batch_id: e.watermark_ms for e in offset_log(uninterrupted / "checkpoint")} == \
        expected
    assert committed_batches(uninterrupted / "checkpoint")[4] == t0_ms + 15_000


# ---------------------------------------------------------------------------------------------
# (b) restarts from the checkpoint


def test_restart_continues_where_it_stopped(spark: SparkSession, bids_case: tuple[str, str],
                                            uninterrupted: Path, tmp_path: Path) -> None:
    first = run_query(spark, *bids_case, tmp_path, max_epochs=2)
    assert first.written == [0, 1]
    second = run_query(spark, *bids_case, tmp_path)
    assert (second.written, second.skipped) == ([2, 3, 4], [])
    # the same rows, offsets and watermarks, batch by batch
    assert read_batches(tmp_path / "out") == read_batches(uninterrupted / "out")


def _forget_commit(checkpoint: Path, batch_id: int) -> None:
    """Make it look as if the query died after the offset log entry of ``batch_id`` (and maybe
    its sink) but before its commit."""
    for name in (str(batch_id), f".{batch_id}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)


def test_replay_of_an_uncommitted_batch_writes_nothing_twice(
        spark: SparkSession, bids_case: tuple[str, str], uninterrupted: Path, tmp_path: Path) -> None:
    first = run_query(spark, *bids_case, tmp_path, max_epochs=3)
    assert first.written == [0, 1, 2]
    # Died after the sink of batch 2 wrote its file: the replay of batch 2 is skipped.
    _forget_commit(tmp_path / "checkpoint", 2)
    second = run_query(spark, *bids_case, tmp_path, max_epochs=4)
    assert (second.written, second.skipped) == ([3], [2])
    # Died before the sink of batch 3 wrote anything: the replay writes it, with the same rows.
    _forget_commit(tmp_path / "checkpoint", 3)
    batch_file(tmp_path / "out", 3).unlink()
    third = run_query(spark, *bids_case, tmp_path)
    assert (third.written, third.skipped) == ([3, 4], [])
    assert read_batches(tmp_path / "out") == read_batches(uninterrupted / "out")


# ---------------------------------------------------------------------------------------------
# Pacing and Spark's late-row filter (SEMANTICS.md §3-4), on a window aggregation

WINDOW_SQL = """
CREATE SOURCE t (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);
SELECT v FROM t;
"""


def _t(second: int, v: int) -> dict[str, Any]:
    return {"table": "t", "row": {"ts": f"2020-01-01 00:00:{second:02d}", "v": v}}


#: Epochs: {1 s, 12 s}, {25 s}, {15 s: late for the model}, {40 s}. Watermark delay 0.
WINDOW_LOG = [_t(1, 1), _t(12, 2), BARRIER, _t(25, 3), BARRIER, _t(15, 4), BARRIER, _t(40, 5), BARRIER]


def ten_second_counts(frame: DataFrame) -> DataFrame:
    return (frame.withWatermark("ts", "0 seconds").groupBy(F.window("ts", "10 seconds"))
            .agg(F.count("*").alias("n"), F.sort_array(F.collect_list("v")).alias("vs"))
            .select(F.date_format("window.start", "ss").alias("start"), "n", "vs"))


def _emitted(work: Path) -> list[tuple[int, int, list[dict[str, Any]]]]:
    """(batch id, epoch, rows) of every batch."""
    return [(batch.batch_id, batch.epoch, batch.rows) for batch in read_batches(work / "out")]


def test_epoch_pacing_judges_late_rows_one_epoch_behind(
        spark: SparkSession, tmp_path: Path) -> None:
    """Back-to-back epochs: the late filter of the batch of epoch k uses the watermark after
    epoch k-2. Row 4 (15 s, epoch 2) is compared with W = 12 s (after epoch 0), so window [10, 20)
    is still open for it, although W = 25 s after epoch 1. After the last epoch Spark adds a
    no-data batch (same offsets), even with AvailableNow, to close [20, 30) at W = 40 s."""
    events, query = write_case(tmp_path / "case", WINDOW_SQL, WINDOW_LOG)
    run_query(spark, events, query, tmp_path, table=None, transform=ten_second_counts)
    assert _emitted(tmp_path) == [
        (0, 0, []),
        (1, 1, [{"start": "00", "n": 1, "vs": [1]}]),
        (2, 2, [{"start": "10", "n": 2, "vs": [2, 4]}]),
        (3, 3, []),
        (4, 3, [{"start": "20", "n": 1, "vs": [3]}]),  # the no-data batch
    ]
    offsets = [entry.offsets for entry in offset_log(tmp_path / "checkpoint")]
    assert offsets[3] == offsets[4] == ({"epoch": 4},)


#: (batch id, epoch, rows) of the window counts with settle pacing: data batch, settle batch.
SETTLED_WINDOWS = [
    (0, 0, []), (1, 0, [{"start": "00", "n": 1, "vs": [1]}]),
    (2, 1, []), (3, 1, [{"start": "10", "n": 1, "vs": [2]}]),
    (4, 2, []), (5, 2, []),
    (6, 3, []), (7, 3, [{"start": "20", "n": 1, "vs": [3]}]),
]


def test_settle_pacing_judges_late_rows_against_all_earlier_epochs(
        spark: SparkSession, tmp_path: Path) -> None:
    """Each epoch's batch is followed by an empty settle batch that runs with the new watermark,
    so windows close before the next epoch and row 4 (15 s) meets W = 25 s: dropped as late.
    Spark runs no no-data batch at all."""
    events, query = write_case(tmp_path / "case", WINDOW_SQL, WINDOW_LOG)
    run_query(spark, events, query, tmp_path, table=None, transform=ten_second_counts,
              pacing="settle")
    assert _emitted(tmp_path) == SETTLED_WINDOWS
    assert [entry.offsets[0]["settled"] for entry in offset_log(tmp_path / "checkpoint")] == \
        [False, True] * 4


def test_a_session_setting_holds_in_its_block_then_is_restored(spark: SparkSession) -> None:
    key, unset = "spark.sql.streaming.minBatchesToRetain", "spark.eowc.test.unsetSetting"
    before = spark.conf.get(key)
    with session_setting(spark, key, 7):
        assert spark.conf.get(key) == "7"
    assert spark.conf.get(key) == before
    with session_setting(spark, unset, "on"):
        assert spark.conf.get(unset) == "on"
    assert spark.conf.get(unset, None) is None  # unset again, not left at a value
    with session_setting(spark, key, None):  # None: the session's own
        assert spark.conf.get(key) == before


def test_spark_home_is_the_package_without_its_python_zips(tmp_path: Path) -> None:
    env = {"EOWC_SPARK_CDS_DIR": str(tmp_path / "cache")}
    home = spark_home(env)
    assert home.parent == tmp_path / "cache"
    assert (home / "bin" / "spark-class").is_file() and any((home / "jars").glob("spark-core*.jar"))
    assert (pyspark_package() / "python" / "lib" / "pyspark.zip").is_file()  # what it leaves out
    assert not (home / "python").exists()
    assert spark_home(env) == home and len(list(home.parent.iterdir())) == 1  # made once
    assert spark_home({**env, "SPARK_HOME": "/opt/spark"}) == Path("/opt/spark")  # the user's
    (tmp_path / "file").write_text("", encoding="utf-8")  # a cache directory that cannot be made
    assert spark_home({"EOWC_SPARK_CDS_DIR": str(tmp_path / "file" / "cache")}) == pyspark_package()


def test_python_workers_import_pyspark_compiled_not_from_a_zip(
        spark: SparkSession, spark_home_given: str | None) -> None:
    """Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on its Python processes' path;
    from there each compiled PySpark's modules anew (about 1 s of CPU for each source runner and
    state-schema runner a query starts). With the session's home they import the installed
    PySpark (unless ``SPARK_HOME`` was set to a Spark that has the zip: then from the zip)."""

    def where(frames: Any) -> Any:
        import pandas as pd
        import pyspark

        for _ in frames:
            yield pd.DataFrame({"file": [pyspark.__file__]})

    files = {row.file for row in spark.range(2).mapInPandas(where, "file string").collect()}
    if spark_home_given is None:  # the session's own home
        chosen = spark_home({k: v for k, v in os.environ.items() if k != "SPARK_HOME"})
        assert os.environ["SPARK_HOME"] == str(chosen) != str(pyspark_package())
        zipped = False
    else:
        zipped = (Path(spark_home_given) / "python" / "lib" / "pyspark.zip").is_file()
    assert files and all((".zip" in file) == zipped for file in files), files


def test_the_sink_records_outlive_the_offset_log(spark: SparkSession, tmp_path: Path) -> None:
    """Spark keeps only the last ``minBatchesToRetain`` offset and commit files (3 here, 100 by
    default); the sink's records still give every batch its epoch, purged ones included."""
    events, query = write_case(tmp_path / "case", WINDOW_SQL, WINDOW_LOG)
    with session_setting(spark, "spark.sql.streaming.minBatchesToRetain", 3):
        run_query(spark, events, query, tmp_path, table=None, transform=ten_second_counts,
                  pacing="settle")
    assert min(entry.batch_id for entry in offset_log(tmp_path / "checkpoint")) > 0  # purged
    assert min(committed_batches(tmp_path / "checkpoint")) > 0
    assert _emitted(tmp_path) == SETTLED_WINDOWS


def test_stopping_changes_epoch_pacing_but_not_settle_pacing(
        spark: SparkSession, tmp_path: Path) -> None:
    """Stopped after 2 epochs and restarted: with epoch pacing the first run ends with a no-data
    batch (W = 25 s) that the uninterrupted run does not have, so row 4 (15 s) is now late and
    window [10, 20) counts 1 instead of 2. With settle pacing the batches are those of the
    uninterrupted run (the previous test), batch for batch."""
    events, query = write_case(tmp_path / "case", WINDOW_SQL, WINDOW_LOG)
    for pacing in ("epoch", "settle"):
        work = tmp_path / pacing
        for max_epochs in (2, None):
            run_query(spark, events, query, work, table=None, transform=ten_second_counts,
                      max_epochs=max_epochs, pacing=pacing)
        emitted = _emitted(work)
        if pacing == "epoch":
            assert emitted == [
                (0, 0, []),
                (1, 1, [{"start": "00", "n": 1, "vs": [1]}]),
                (2, 1, [{"start": "10", "n": 1, "vs": [2]}]),  # the extra no-data batch
                (3, 2, []),
                (4, 3, []),
                (5, 3, [{"start": "20", "n": 1, "vs": [3]}]),
            ]
        else:
            assert emitted == SETTLED_WINDOWS


# ---------------------------------------------------------------------------------------------
# Errors


def test_unknown_table_is_reported_at_load(spark: SparkSession, bids_case: tuple[str, str]) -> None:
    message = r"table 'nope' is not declared in .*query\.sql \(declared: ask, bid\)"
    with pytest.raises(Exception, match=message):
        arrival_stream(spark, *bids_case, "nope")


def test_bad_log_line_fails_the_query_with_file_and_line(spark: SparkSession, tmp_path: Path) -> None:
    log = [_t(1, 1), {"table": "t", "row": {"ts": "2020-01-01 00:00:02", "v": "two"}}]
    events, query = write_case(tmp_path / "case", WINDOW_SQL, log)
    with pytest.raises(Exception, match=r"events\.jsonl:2: column t\.v: expected a BIGINT"):
        run_query(spark, events, query, tmp_path, table="t", transform=lambda frame: frame)
    assert not (tmp_path / "out").exists() or read_batches(tmp_path / "out") == []


def test_pacing_must_match_the_checkpoint(spark: SparkSession, bids_case: tuple[str, str],
                                          tmp_path: Path) -> None:
    run_query(spark, *bids_case, tmp_path, max_epochs=1)
    with pytest.raises(Exception, match=r"pacing=settle"):
        run_query(spark, *bids_case, tmp_path, pacing="settle")


# ---------------------------------------------------------------------------------------------
# (d) the Java check (no JVM needed)


def test_java_home_without_java(tmp_path: Path) -> None:
    env = {"JAVA_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    with pytest.raises(SparkSetupError, match=r"JAVA_HOME is set to .* but .*bin/java' is not an "
                                              r"executable file; point JAVA_HOME at a Java 17"):
        check_java(env)


def test_java_missing_from_path(tmp_path: Path) -> None:
    with pytest.raises(SparkSetupError, match=r"no `java` on PATH"):
        check_java({"PATH": str(tmp_path)})


def test_java_too_old(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'java version \"1.8.0_292\"' >&2\n", encoding="utf-8")
    java.chmod(0o755)
    with pytest.raises(SparkSetupError, match=r"needs Java 17 or newer, but .* is Java 8"):
        check_java({"JAVA_HOME": str(tmp_path), "PATH": ""})


def test_java_check_in_a_fresh_process(tmp_path: Path) -> None:
    """What a user sees: the message, from spark_session() itself, before any JVM starts."""
    code = ("from eowc.executors.spark.session import spark_session, SparkSetupError\n"
            "try:\n    spark_session()\nexcept SparkSetupError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "JAVA_HOME": str(tmp_path)}, check=True)
    assert f"JAVA_HOME is set to '{tmp_path}'" in result.stdout


@pytest.mark.parametrize(("output", "major"), [
    ('openjdk version "17.0.15" 2025-04-15', 17),
    ('java version "1.8.0_292"', 8),
    ('openjdk version "21-ea" 2023-09-19', 21),
    ('openjdk version "11.0.2" 2019-01-15', 11),
    ("no version here", None),
])
def test_parse_java_major(output: str, major: int | None) -> None:
    assert parse_java_major(output) == major


def test_java_here_is_new_enough() -> None:
    assert check_java() >= 17
