"""The ``eowc_arrival_log`` reader reads and checks the log once and keeps each table's rows in
a spill file, not in memory: its batches hold exactly the rows the reference reads, and its
planner keeps a few bytes per epoch.

The reader's methods are called here as Spark calls them (``latestOffset``, ``partitions``,
``read``), without Spark: tests/spark/test_source_and_sink.py runs it in Spark."""

from __future__ import annotations

import json
import pickle
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.spark import arrival_source
from eowc.executors.spark.arrival_source import (
    CLOSE_SEQ,
    CLOSE_TIME,
    ArrivalLogStreamReader,
    SourceOptions,
    index_table_log,
    spark_schema,
)
from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.values import format_timestamp

SQL = """
CREATE SOURCE bid (auction BIGINT, price DECIMAL(10, 2), tags VARCHAR[], ts TIMESTAMP,
                   WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE TABLE ask (auction BIGINT, ts TIMESTAMP);
SELECT auction FROM bid EMIT ON WINDOW CLOSE;
"""
T0 = 1_704_067_200_000_000  # 2024-01-01


def bid(auction: int, second: int, price: str = "1.50") -> dict[str, Any]:
    return {"table": "bid", "row": {"auction": auction, "price": price, "tags": ["a", None],
                                    "ts": format_timestamp(T0 + second * 1_000_000)}}


def ask(auction: int) -> dict[str, Any]:
    return {"table": "ASK", "row": {"auction": auction, "ts": "2024-01-01 00:00:00"}}  # case folded


BARRIER = {"barrier": True}


def write(path: Path, lines: list[dict[str, Any] | str]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                            for line in lines), encoding="utf-8")
    return path


def reader(tmp_path: Path, log: Path, table: str = "bid", **options: str) -> ArrivalLogStreamReader:
    parsed = SourceOptions.parse({"events": str(log), "query": _query(tmp_path), "table": table,
                                  **options})
    return ArrivalLogStreamReader(parsed, spark_schema(parse_script(SQL).sources[table]))


def batches(source: ArrivalLogStreamReader) -> list[list[dict[str, Any]]]:
    """Every batch the reader offers, as Spark plans them, each as its rows (dicts of the
    Arrow batches of its partitions), the reader pickled as Spark ships it to the executors."""
    shipped = pickle.loads(pickle.dumps(source))
    offset, out = source.initialOffset(), []
    while (end := source.latestOffset(offset, None)) != offset:
        parts = source.partitions(offset, end)
        out.append([row for part in parts for batch in shipped.read(part)
                    for row in batch.to_pylist()])
        offset = end
    return out


def test_the_batches_are_the_epochs_of_the_table_by_hand(tmp_path: Path) -> None:
    log = write(tmp_path / "log.jsonl", [
        bid(1, 0, "2.25"), ask(9), bid(2, 3), BARRIER,  # epoch 0: seq 0 (bid), 1 (ask), 2 (bid)
        ask(8), BARRIER,  # epoch 1: no bid
        "", bid(3, 7), BARRIER,  # epoch 2: seq 4 (a blank line before it)
        BARRIER,  # epoch 3: nothing
        bid(4, 9)])  # epoch 4: seq 5, no barrier after it
    got = batches(reader(tmp_path, log, partitions="2"))
    assert [[(r["_epoch"], r["_seq"], r["auction"], r["price"]) for r in b] for b in got] == [
        [(0, 0, 1, "2.25"), (0, 2, 2, "1.50")], [], [(2, 4, 3, "1.50")], [], [(4, 5, 4, "1.50")]]
    assert got[0][0]["tags"] == ["a", None]
    asks = batches(reader(tmp_path, log, table="ask"))
    assert [[(r["_epoch"], r["_seq"], r["auction"]) for r in b] for b in asks] == [
        [(0, 1, 9)], [(1, 3, 8)], [], [], []]


def test_a_log_without_barriers_is_an_epoch_per_event_and_close_adds_one(tmp_path: Path) -> None:
    log = write(tmp_path / "log.jsonl", [bid(1, 0), ask(9), bid(2, 1)])
    got = batches(reader(tmp_path, log, close="true"))
    assert [[(r["_epoch"], r["_seq"]) for r in b] for b in got] == [
        [(0, 0)], [], [(2, 2)], [(3, CLOSE_SEQ)]]
    (close,) = got[-1]
    assert close["auction"] is None and close["ts"].timestamp() * 1_000_000 == CLOSE_TIME


def test_partitions_split_a_batch_into_consecutive_rows(tmp_path: Path) -> None:
    log = write(tmp_path / "log.jsonl", [bid(i, i) for i in range(5)] + [BARRIER, bid(5, 5)])
    source = reader(tmp_path, log, partitions="2")

    def split(start: dict[str, Any], end: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
        return [(p.rows.column("_epoch").to_pylist(), p.rows.column("_seq").to_pylist())
                for p in source.partitions(start, end)]
    assert split(source.initialOffset(), {"epoch": 1}) == [([0, 0, 0], [0, 1, 2]), ([0, 0], [3, 4])]
    assert split({"epoch": 1}, {"epoch": 2}) == [([1], [5])]


def test_a_bad_line_is_refused_at_the_first_plan_with_file_and_line(tmp_path: Path) -> None:
    log = write(tmp_path / "log.jsonl", [bid(1, 0), BARRIER, '{"table": "bid", "row": {"auction": 2}}'])
    with pytest.raises(InputError) as error:
        reader(tmp_path, log).latestOffset({"epoch": 0}, None)
    assert str(log) in str(error.value) and ":3" in str(error.value)
    assert "event-time column bid.ts is missing" in str(error.value)


def test_rows_across_spill_batches_keep_their_order_and_epochs(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Spill batches of 3 rows: the batches of epochs of 4, 1 and 5 rows cut across them."""
    monkeypatch.setattr(arrival_source, "SPILL_BATCH_ROWS", 3)
    sizes = [4, 1, 5]
    lines: list[dict[str, Any]] = []
    for size in sizes:
        lines += [bid(len(lines) + i, len(lines) + i) for i in range(size)] + [BARRIER]
    got = batches(reader(tmp_path, write(tmp_path / "log.jsonl", lines), partitions="2"))
    seqs = [[r["_seq"] for r in b] for b in got]
    assert seqs == [[0, 1, 2, 3], [4], [5, 6, 7, 8, 9]]  # events only: barriers are not counted
    assert [{r["_epoch"] for r in b} for b in got] == [{0}, {1}, {2}]
    # auction = the line's position in the file (from 0; barriers are lines 4 and 6)
    assert [[r["auction"] for r in b] for b in got] == [[0, 1, 2, 3], [5], [7, 8, 9, 10, 11]]


def test_the_planner_keeps_the_rows_on_disk(tmp_path: Path) -> None:
    """20,000 events in 20 epochs: once indexed, the planner holds 8 bytes per epoch and a
    reader of the spill file, not the rows (in Python objects or Arrow buffers). (What it
    keeps of Python's is a fixed 0.2 MB, mostly CPython's free list of tuples.)"""
    events = 20_000
    log = write(tmp_path / "log.jsonl", [line for i in range(events) for line in
                                         ([bid(i % 100, i // 10)] + ([BARRIER] if i % 1000 == 999 else []))])
    query = _query(tmp_path)
    arrow_before = pa.total_allocated_bytes()
    tracemalloc.start()
    index = index_table_log(str(log), query, "bid")
    kept, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert index.bounds[-1] == events and index.epochs == 20
    assert kept < 1_000_000, kept  # the rows as Python objects: about 8 MB
    assert pa.total_allocated_bytes() - arrow_before < 100_000  # as Arrow buffers: about 1 MB
    assert index.rows(19_990, 20_000).column("auction").to_pylist() == [
        i % 100 for i in range(19_990, 20_000)]


def _query(tmp_path: Path) -> str:
    query = tmp_path / "query.sql"
    query.write_text(SQL, encoding="utf-8")
    return str(query)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["barrier", "blank", *["bid"] * 4, *["ask"] * 2]),
                          st.integers(0, 20)), max_size=30),
       st.integers(1, 3), st.booleans())
def test_every_batch_holds_the_tables_rows_the_reference_reads(
        tmp_path_factory: pytest.TempPathFactory, lines: list[Any], partitions: int, close: bool
) -> None:
    tmp_path = tmp_path_factory.mktemp("log")
    made = {"blank": lambda _: "", "barrier": lambda _: BARRIER, "bid": lambda a: bid(a, a),
            "ask": ask}
    written = [made[kind](auction) for kind, auction in lines]
    log = write(tmp_path / "log.jsonl", written)
    sources = parse_script(SQL).sources
    epochs = load_arrival_log(str(log), sources).log.epochs
    for table in ("bid", "ask") if not close else ("bid",):  # close needs a watermark: bid's
        got = batches(reader(tmp_path, log, table=table, partitions=str(partitions),
                             close=str(close).lower()))
        seq, expected = 0, []
        for epoch in epochs:
            mine = []
            for event in epoch:
                if event.table == table:
                    mine.append((seq, event.row[0]))
                seq += 1
            expected.append(mine)
        if close:
            expected.append([(CLOSE_SEQ, None)])
        assert [[(r["_seq"], r["auction"]) for r in b] for b in got] == expected
