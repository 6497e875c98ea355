"""A join alone keyed by its equality key on real Spark (executors/composed.py, "Shards"): each
hash bucket of the key is a grouping key of ``transformWithStateInPandas``, each source's
progress reaches every bucket (executors/spark/adapter.py), and the output equals the reference
epoch by epoch. Two runs: tests/test_keyed_join.py's hand-computed FULL interval join (key 2's
shard, quiet after epoch 0, emits and expires its rows from the progress alone), and a LEFT
interval join of 24 keys whose state, read back with Spark's state data source, lies under
many grouping keys spread over both shuffle partitions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from eowc.executors.buckets import bucket_of
from eowc.executors.composed import JOIN_BUCKETS
from eowc.executors.spark.runner import collect_run, start_query
from eowc.executors.spark.typed_state import value_of_text
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import Convention
from tests.test_joins import QUERIES, SOURCES, at
from tests.test_keyed_join import BY_HAND, _by_hand_log


def _write(tmp_path: Path, sql: str, log: ArrivalLog) -> tuple[str, str]:
    query_path, events_path = tmp_path / "join.sql", tmp_path / "join.jsonl"
    query_path.write_text(SOURCES + sql + ";", encoding="utf-8")
    lines = []
    for epoch in log.epochs:
        for event in epoch:
            ts, k, value = event.row
            lines.append(json.dumps({"table": event.table, "row": {
                "ts": format_timestamp(ts), "k": k, "v" if event.table == "a" else "w": value}}))
        lines.append('{"barrier": true}')
    events_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(query_path), str(events_path)


def _run(spark, tmp_path: Path, name: str, log: ArrivalLog, convention: Convention):  # noqa: ANN001, ANN202
    query_path, events_path = _write(tmp_path, QUERIES[name], log)
    start_query(spark, query_path, events_path, convention, tmp_path / "run", close=True)
    script = parse_script(Path(query_path).read_text(encoding="utf-8"))
    read = load_arrival_log(events_path, script.sources).log
    assert [[(e.table, e.row) for e in epoch] for epoch in read.epochs] == \
        [[(e.table, e.row) for e in epoch] for epoch in log.epochs]
    return script.query, collect_run(read, tmp_path / "run")


def test_a_quiet_keys_shard_on_spark_emits_as_the_watermarks_move(spark, tmp_path: Path) -> None:
    _, run = _run(spark, tmp_path, "interval_FULL", _by_hand_log(), Convention.SPARK)
    assert [(e.epoch, e.row) for e in run.emissions] == BY_HAND


def test_a_join_of_keys_in_several_shards_on_spark_equals_the_reference(spark, tmp_path: Path
                                                                         ) -> None:
    """24 keys, 240 rows in 12 epochs with up to 7 s of disorder (some late): the same rows in
    the same epochs and order, and the same late rows, as the reference; the left side's state
    table has entries under at least 6 grouping keys (the buckets of the 24 keys), in both
    shuffle partitions."""
    events = [Event("ab"[i % 2], (at(i / 4 - (i * 7919 % 29) / 4), i // 2 * 5 % 24, i % 7))
              for i in range(240)]
    log = ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, len(events), 20)))
    buckets = {bucket_of((k,), JOIN_BUCKETS) for k in range(24)}
    # Spark places the shards (their key texts) by its own hash: 24 keys fall in both of its
    # two shuffle partitions (12 happened to fall in one).
    assert len(buckets) >= 10
    query, run = _run(spark, tmp_path, "interval_LEFT", log, Convention.RISINGWAVE)
    late: list[LateRow] = []
    expected = list(run_eowc(query, log, Convention.RISINGWAVE, close=True, late=late.append))
    assert run.emissions == expected and len(expected) > 100
    assert len(late) > 0
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    took = _state(spark, tmp_path, "join0.left.pk")  # a side's row count, per shard with rows
    assert {key for key, _ in took} == {(b,) for b in buckets}
    assert len({partition for _, partition in took}) == 2
    learned = _state(spark, tmp_path, "max_times")  # each source's progress, per shard
    assert {key for key, _ in learned} == {(b,) for b in range(JOIN_BUCKETS)}


def _state(spark, tmp_path: Path, name: str) -> list[tuple[object, int]]:  # noqa: ANN001
    """The grouping keys (shards) and partitions under which the value state ``name`` is
    held after the run, read with Spark's state data source."""
    rows = spark.read.format("statestore").option("stateVarName", name) \
        .load(str(tmp_path / "run" / "checkpoint")).collect()
    return [(value_of_text(row["key"][0]), row["partition_id"]) for row in rows]
