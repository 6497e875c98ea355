"""The ``eowc_arrival_log`` reader plans batches from an index of the log (where each table's
events are), not from the events, and reads each batch's lines from the file: its batches
hold exactly the rows the reference reads, and its planner keeps a few bytes per event.

The reader's methods are called here as Spark calls them (``latestOffset``, ``partitions``,
``read``), without Spark: tests/spark/test_source_and_sink.py runs it in Spark."""

from __future__ import annotations

import json
import pickle
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    parts = source.partitions(source.initialOffset(), {"epoch": 1})
    assert [(list(p.epochs), list(p.seqs)) for p in parts] == [([0, 0, 0], [0, 1, 2]),
                                                              ([0, 0], [3, 4])]
    parts = source.partitions({"epoch": 1}, {"epoch": 2})
    assert [(list(p.epochs), list(p.seqs)) for p in parts] == [([1], [5])]


def test_a_bad_line_is_refused_at_the_first_plan_with_file_and_line(tmp_path: Path) -> None:
    log = write(tmp_path / "log.jsonl", [bid(1, 0), BARRIER, '{"table": "bid", "row": {"auction": 2}}'])
    with pytest.raises(InputError) as error:
        reader(tmp_path, log).latestOffset({"epoch": 0}, None)
    assert str(log) in str(error.value) and ":3" in str(error.value)
    assert "event-time column bid.ts is missing" in str(error.value)


def test_a_log_changed_after_it_was_indexed_is_refused_by_name(tmp_path: Path) -> None:
    log = write(tmp_path / "log.jsonl", [bid(1, 0), BARRIER, bid(2, 1)])
    source = reader(tmp_path, log)
    parts = source.partitions({"epoch": 1}, {"epoch": 2})
    write(log, [ask(1), BARRIER, ask(2), ask(3)])
    with pytest.raises(ValueError, match="changed while the query ran"):
        list(source.read(parts[0]))


def test_the_planner_keeps_a_few_bytes_per_event(tmp_path: Path) -> None:
    """20,000 events in 20 epochs: the index the planner keeps for the whole run is under 32
    bytes per event (the rows the reference reads are over 400 bytes per event)."""
    events = 20_000
    log = write(tmp_path / "log.jsonl", [line for i in range(events) for line in
                                         ([bid(i % 100, i // 10)] + ([BARRIER] if i % 1000 == 999 else []))])
    query = _query(tmp_path)
    tracemalloc.start()
    index = index_table_log(str(log), query, "bid")
    kept, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(index.seqs) == events and index.epochs == 20
    assert kept < 32 * events, kept


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
