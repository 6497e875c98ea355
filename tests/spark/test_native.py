"""``spark-native``: Spark's OWN window aggregation (executors/spark/native.py) against the
reference interpreter under the spark convention, epoch by epoch, on the hand-made log of
tests/spark/test_executors_on_spark.py; the plans Spark has no operator for; the count of late
rows Spark reports; and ``eowc run --engine spark-native``.

Where native Spark differs from the reference, the difference is pinned here with its reason;
the reference is not changed to match Spark.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eowc.executors.spark.native import (
    NoNativeOperator,
    check_native,
    collect_native,
    native_operator,
    start_native,
)
from eowc.semantics.engines.interpreter import Emission, LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from tests.spark.test_executors_on_spark import (
    EPOCHS,
    QUERIES,
    SOURCE,
    event_lines,
    log_of,
    write_case,
)

NATIVE_QUERIES = {
    "native_tumble": "SELECT window_start, window_end, count(*) AS n, count(auction) AS c, "
                     "sum(price) AS s, min(price) AS lo, max(price) AS hi, avg(price) AS a, "
                     "median(price) AS m, percentile_cont(0.25) WITHIN GROUP (ORDER BY price) AS p "
                     "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) WHERE price < 50 "
                     "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
    "native_hop": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s, "
                  "min(price) AS lo, max(price) AS hi, avg(price) AS a "
                  "FROM HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) "
                  "WHERE price < 50 GROUP BY auction, window_start, window_end "
                  "EMIT ON WINDOW CLOSE",
    # The WHERE removes the row that moves the watermark in epoch 4 (27 s, auction 2).
    "native_where": "SELECT window_start, window_end, count(*) AS n "
                    "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) WHERE auction = 1 "
                    "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
}


@pytest.fixture(autouse=True)
def _native_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this file's queries known to ``write_case`` (the helper of the executor tests)."""
    for name, sql in NATIVE_QUERIES.items():
        monkeypatch.setitem(QUERIES, name, sql)


def reference(query_path: str, events_path: str) -> tuple[list[Emission], list[LateRow]]:
    """The reference's emissions and late rows under the spark convention, with --close."""
    query = parse_script(Path(query_path).read_text(encoding="utf-8")).query
    late: list[LateRow] = []
    out = list(run_eowc(query, log_of(query_path, events_path), Convention.SPARK, close=True,
                        late=late.append))
    return out, late


def run_native_case(spark, directory: Path, name: str):  # noqa: ANN001, ANN201 - test helper
    query_path, events_path = write_case(directory, name)
    start_native(spark, query_path, events_path, directory / "run", close=True)
    query = parse_script(Path(query_path).read_text(encoding="utf-8")).query
    return query_path, events_path, collect_native(query, directory / "run")


def test_tumble_equals_the_reference(spark, tmp_path: Path) -> None:
    """TUMBLE + WHERE with count(*), count(x), sum, min, max, avg, median, percentile_cont:
    the same rows in the same epochs; Spark's drop count equals the reference's late rows
    (one row, 4 s in epoch 4 against W = 13 s: its only window [0, 10) is closed)."""
    query, events, run = run_native_case(spark, tmp_path, "native_tumble")
    out, late = reference(query, events)
    assert len(out) == 3 and {e.epoch for e in out} == {3, 4, 5}
    assert run.emissions == out
    assert run.complete and run.dropped == len(late) == 1


def test_hop_equals_the_reference_but_counts_drops_per_window(spark, tmp_path: Path) -> None:
    """HOP + WHERE grouped by auction and window: the same rows in the same epochs. The drop
    count differs, pinned: Spark counts rows reaching its state store, which are (row, window)
    pairs after the window TVF. The late row (4 s, epoch 4, W = 13 s) is late for both of its
    windows [-5, 5) and [0, 10), so Spark counts 2 where the reference has 1 late source row
    (SEMANTICS.md §3: Spark judges lateness on the operator's key, window.end)."""
    query, events, run = run_native_case(spark, tmp_path, "native_hop")
    out, late = reference(query, events)
    assert len(out) == 9
    assert run.emissions == out
    assert len(late) == 1
    assert run.complete and run.dropped == 2
    assert run.dropped_by_batch[8] == 2  # epoch 4's data batch (batches 2e and 2e + 1)


def test_a_where_clause_moves_below_the_watermark(spark, tmp_path: Path) -> None:
    """Pinned difference. Spark's optimizer pushes a WHERE that does not read the event-time
    column below ``withWatermark`` (PushPredicateThroughNonJoin), so Spark's watermark is the
    max over the rows the WHERE keeps. The reference's watermark is the source's, over all its
    rows (SEMANTICS.md §1). Here the WHERE drops (27 s, auction 2), the row that moves W to
    22 s in epoch 4: the reference closes [10, 20) in epoch 4, Spark (W stays 13 s) only at
    --close."""
    query, events, run = run_native_case(spark, tmp_path, "native_where")
    out, _ = reference(query, events)
    window_10_20 = next(e for e in out if e.epoch == 4)
    assert [e for e in run.emissions if e.row != window_10_20.row] == [
        e for e in out if e.row != window_10_20.row]
    assert Emission(len(EPOCHS), window_10_20.row) in run.emissions  # at --close, not epoch 4


def test_late_rows_are_counted_after_partial_aggregation(spark, tmp_path: Path) -> None:
    """Pinned difference: two late rows of one window in one batch are merged by Spark's
    partial aggregation before its state store operator drops them, so Spark reports 1 where
    the reference has 2 late rows. (The source reads a batch as one partition.)"""
    query_path = tmp_path / "q.sql"
    query_path.write_text(SOURCE + QUERIES["native_where"].replace("WHERE auction = 1 ", ""),
                          encoding="utf-8")
    events_path = tmp_path / "events.jsonl"
    lines = []
    for epoch in [[(20, 1, 1)], [(3, 1, 1), (4, 1, 2)]]:  # W = 15 s after epoch 0
        lines += [json.dumps({"table": "bids", "row": {
            "auction": a, "price": p, "ts": f"2024-01-01 00:00:{s:02d}"}}) for s, a, p in epoch]
        lines.append('{"barrier": true}')
    events_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    start_native(spark, str(query_path), str(events_path), tmp_path / "run", close=True)
    query = parse_script(query_path.read_text(encoding="utf-8")).query
    run = collect_native(query, tmp_path / "run")
    out, late = reference(str(query_path), str(events_path))
    assert run.emissions == out
    assert len(late) == 2
    assert run.complete and run.dropped == 1


CASCADE = ("CREATE VIEW per_five AS SELECT auction, window_time AS five_time, count(*) AS n "
           "FROM TUMBLE(bids, ts, INTERVAL '5' SECOND) "
           "GROUP BY auction, window_start, window_end, window_time;\n"
           "SELECT window_start, window_end, sum(n) AS bids, count(*) AS auction_windows "
           "FROM TUMBLE(per_five, five_time, INTERVAL '10' SECOND) "
           "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE")


def _by_epoch(emissions: list[Emission]) -> dict[int, list]:
    found: dict[int, list] = {}
    for emission in emissions:
        found.setdefault(emission.epoch, []).append(emission.row)
    return {epoch: sorted(rows, key=repr) for epoch, rows in found.items()}


def _at(second: int) -> int:
    return (1704067200 + second) * 1_000_000


def test_a_cascade_runs_as_chained_aggregations(spark, tmp_path: Path) -> None:
    """A cascade (a 10-second window over the 5-second windows' window_time) runs on Spark's
    own chained aggregations (``F.window`` over ``F.window_time``). By hand, on the log of
    :data:`EPOCHS` (W = 3, 7, 7, 13, 22 s): the 5-second windows per auction are [0, 5) a2
    (1 row), [5, 10) a1 (8, 9, 6 s) and a2 (9, 7 s), [10, 15) a1, [15, 20) a1, [25, 30) a2;
    [0, 10) closes in epoch 3 (W = 13 s, the 6 s row kept: its window is open), [10, 20) in
    epoch 4, [20, 30) at the close."""
    query_path = tmp_path / "q.sql"
    query_path.write_text(SOURCE + CASCADE, encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(event_lines()) + "\n", encoding="utf-8")
    query = parse_script(query_path.read_text(encoding="utf-8")).query
    assert native_operator(query) == "composed"
    start_native(spark, str(query_path), str(events), tmp_path / "run", close=True)
    run = collect_native(query, tmp_path / "run")
    assert _by_epoch(run.emissions) == {3: [(_at(0), _at(10), 6, 3)],
                                        4: [(_at(10), _at(20), 2, 2)],
                                        5: [(_at(20), _at(30), 1, 1)]}
    out, _ = reference(str(query_path), str(events))
    assert _by_epoch(run.emissions) == _by_epoch(out)


TWO_TABLES = ("CREATE SOURCE a (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' "
              "SECOND);\nCREATE SOURCE b (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - "
              "INTERVAL '1' SECOND);\n")
JOIN_OF_AGGREGATES = (
    "SELECT x.window_start, x.k, na, nb "
    "FROM (SELECT window_start, window_end, k, count(*) AS na FROM TUMBLE(a, ts, INTERVAL '10' "
    "SECOND) GROUP BY window_start, window_end, k) x "
    "JOIN (SELECT window_start, window_end, k, count(*) AS nb FROM TUMBLE(b, ts, INTERVAL '10' "
    "SECOND) GROUP BY window_start, window_end, k) y "
    "ON x.window_start = y.window_start AND x.window_end = y.window_end AND x.k = y.k "
    "EMIT ON WINDOW CLOSE")


def test_a_join_of_window_aggregations_joins_them_by_their_window(spark, tmp_path: Path) -> None:
    """Two window aggregations joined on their window and key run as Spark's aggregations
    feeding a stream-stream join on the two window structs. By hand (both tables' watermarks
    3, 11, 24 s): [0, 10) closes in epoch 1 (a: k1 twice; b: k1 once, k2 once: only k1 is in
    both), [10, 20) in epoch 2 (k1 and k2 once on each side); a's 5 s row of epoch 2 is late
    (its one window ended at 10 s <= 11 s), [20, 30) has no key on both sides."""
    epochs = [[("a", 1, 1), ("a", 1, 4), ("b", 1, 2), ("b", 2, 4)],
              [("a", 1, 12), ("b", 1, 12)],
              [("a", 2, 15), ("a", 1, 25), ("b", 2, 16), ("b", 2, 25), ("a", 1, 5)]]
    lines = []
    for epoch in epochs:
        lines += [json.dumps({"table": t, "row": {"k": k, "ts": f"2024-01-01 00:00:{s:02d}"}})
                  for t, k, s in epoch]
        lines.append('{"barrier": true}')
    query_path, events = tmp_path / "q.sql", tmp_path / "events.jsonl"
    query_path.write_text(TWO_TABLES + JOIN_OF_AGGREGATES, encoding="utf-8")
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")
    query = parse_script(query_path.read_text(encoding="utf-8")).query
    assert native_operator(query) == "composed"
    start_native(spark, str(query_path), str(events), tmp_path / "run", close=True)
    run = collect_native(query, tmp_path / "run")
    assert _by_epoch(run.emissions) == {1: [(_at(0), 1, 2, 1)],
                                        2: [(_at(10), 1, 1, 1), (_at(10), 2, 1, 1)]}
    out, _ = reference(str(query_path), str(events))
    assert _by_epoch(run.emissions) == _by_epoch(out)


@pytest.mark.parametrize(("sql", "what"), [
    ("SELECT window_start, count(*) AS n FROM CUMULATE(bids, ts, INTERVAL '5' SECOND, "
     "INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE", "CUMULATE windows"),
    (QUERIES["sort"], "an EOWC sort"),
    ("SELECT window_start, first_value(price) AS f FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
     "GROUP BY window_start EMIT ON WINDOW CLOSE", "the aggregate first_value"),
    ("SELECT ts, count(*) AS n FROM bids GROUP BY ts EMIT ON WINDOW CLOSE",
     "GROUP BY without a window TVF"),
    (QUERIES["top_n"], "a TopN other than a deduplication"),
    ("SELECT ts, auction FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY ts) "
     "AS rn FROM bids) WHERE rn <= 2 EMIT ON WINDOW CLOSE", "a TopN other than a deduplication"),
    ("SELECT window_start, window_end, count(*) AS n FROM TABLE(SESSION(TABLE bids PARTITION "
     "BY auction, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end "
     "EMIT ON WINDOW CLOSE", "a SESSION whose PARTITION BY"),
])
def test_plans_without_a_native_operator_are_refused(sql: str, what: str) -> None:
    query = parse_script(SOURCE + sql).query
    assert native_operator(parse_script(SOURCE + NATIVE_QUERIES["native_hop"]).query) \
        == "window_aggregate"
    assert native_operator(parse_script(SOURCE + QUERIES["session"]).query) == "session_window"
    assert native_operator(parse_script(SOURCE + QUERIES["dedup"]).query) == "deduplicate"
    join = Path(__file__).resolve().parents[2] / "docs" / "divergences" / "join-late-row-spark.yaml"
    from eowc.verify.transcripts import load_transcript
    assert native_operator(load_transcript(str(join)).case.query) == "interval_join"
    with pytest.raises(NoNativeOperator) as caught:
        check_native(query)  # on the driver, before Spark runs anything
    message = str(caught.value)
    assert message.startswith(f"Spark has no native operator for {what}")
    assert message.endswith("use --engine spark (the eowc executors)")


def test_a_join_spark_emits_at_once_is_not_judged_as_eowc_rows() -> None:
    """Spark's append mode emits an interval join's matches at once (finding S8): the
    spark-native executor refuses to judge them as EOWC rows, in those words, before Spark
    starts; with ``at_once`` it runs them (to pin Spark's own rows, as the divergence tests
    below do)."""
    from eowc.verify.cases import QueryRefused
    from eowc.verify.spark import SparkNativeExecutor
    from eowc.verify.transcripts import load_transcript

    join = load_transcript(str(DIVERGENCES / "join-late-row-spark.yaml")).case
    with pytest.raises(QueryRefused, match="Spark's append mode emits its interval join's rows "
                                           "at once .*, so its rows are not EOWC rows"):
        SparkNativeExecutor().emissions(join)
    assert SparkNativeExecutor(at_once=True).variant().at_once


def test_the_cli_refuses_without_a_stack_trace(tmp_path: Path) -> None:
    query, events = write_case(tmp_path, "sort")
    result = CliRunner().invoke(main, ["run", query, events, "--engine", "spark-native",
                                       "--with-epoch", "--close"])
    assert result.exit_code == 2
    assert "Spark has no native operator for an EOWC sort" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_eowc_run_engine_spark_native(spark, tmp_path: Path) -> None:
    """``eowc run --engine spark-native Q.sql E.jsonl --with-epoch --close`` prints what the
    reference prints under the spark convention, the drop count on stderr, and a note that
    the (default, risingwave) convention is not the one Spark follows. In-process, on the
    shared session."""
    query, events = write_case(tmp_path, "native_tumble")
    runner = CliRunner()
    expected = runner.invoke(main, ["run", query, events, "--with-epoch", "--close",
                                    "--convention", "spark"])
    native = runner.invoke(main, ["run", query, events, "--with-epoch", "--close",
                                  "--engine", "spark-native", "--workdir", str(tmp_path / "w")])
    assert native.exit_code == 0, native.stderr
    assert expected.stdout and native.stdout == expected.stdout
    assert "late rows dropped by Spark's native operator: 1 (Spark does not say which" \
        in native.stderr
    assert "note: Spark's native operators follow the spark convention" in native.stderr


# ---------------------------------------------------------------- documented divergences

DIVERGENCES = Path(__file__).resolve().parents[2] / "docs" / "divergences"
T = 1_704_067_200_000_000  # 2024-01-01 00:00:00
SEC = 1_000_000
#: What native Spark emits on each transcript of docs/divergences/ (epoch -> rows), where the
#: reference (the transcript's pins) differs; docs/divergences.md explains each.
NATIVE_OUTPUT = {
    "session-late-row-spark": {2: [(1, T + 4 * SEC, T + 7 * SEC, 1, 2),
                                   (1, T + 10 * SEC, T + 13 * SEC, 1, 1)]},
    "dedup-first-arrival-spark": {0: [(T + 10 * SEC, 1, 1)], 3: [(T + 40 * SEC, 1, 4)]},
    # Spark's stream-stream LEFT join: joined rows as soon as both are in (epochs 0 and 1,
    # not 2), and a's 15 s row, late for a's own watermark, joined under the global minimum.
    "join-late-row-spark": {0: [(T + 10 * SEC, T + 9 * SEC, 1, 1, 2)],
                            1: [(T + 10 * SEC, T + 12 * SEC, 1, 1, 5)],
                            2: [(T + 11 * SEC, None, 2, 3, None),
                                (T + 15 * SEC, T + 12 * SEC, 1, 6, 5),
                                (T + 20 * SEC, T + 19 * SEC, 1, 4, 7)]},
    # Restarted after epoch 0, Spark forgets b's watermark: a's 10 s row is never padded.
    "join-restart-watermark-spark": {},
    # The two windows [5 s, 10 s) whose auction is NULL match (S9): one joined row.
    "window-join-null-key-spark": {1: [(T + 5 * SEC, T + 10 * SEC, T + 10 * SEC, None, 1, 1.5,
                                        1)],
                                   2: [(T + 20 * SEC, T + 25 * SEC, T + 25 * SEC, 1, 1, 1.5, 1)]},
}


@pytest.mark.parametrize("name", sorted(NATIVE_OUTPUT))
def test_a_documented_divergence_of_native_spark_still_holds(spark, name: str) -> None:
    """The reference meets the transcript's pins; native Spark emits exactly what
    docs/divergences.md says it does, which is not that."""
    from eowc.verify.executors import ReferenceExecutor
    from eowc.verify.spark import SparkNativeExecutor
    from eowc.verify.transcripts import load_transcript, replay

    transcript = load_transcript(str(DIVERGENCES / f"{name}.yaml"))
    assert replay(transcript, ReferenceExecutor()) == []
    native: dict[int, list[tuple]] = {}
    for emission in SparkNativeExecutor(at_once=True).emissions(transcript.case):
        native.setdefault(emission.epoch, []).append(emission.row)
    assert native == NATIVE_OUTPUT[name]
    assert native != {k: list(rows) for k, rows in (transcript.expect or {}).items()}



#: Transcripts of findings that are now the spark convention's rules: the reference gives
#: native Spark's output. S1 (``join_state_margin``): Spark keeps a's 10 s row (it meets b up
#: to 12 s) until b's watermark is 12.001 s, not 12 s, and NULL-pads it after epoch 2.
#: Sessions that touch merge (``merges_touching_sessions``): 10 s and 13 s, gap 3 s, are one
#: session [10 s, 16 s), in one epoch or in two while the first session is still open.
MODELLED = {
    "join-outer-row-one-ms-spark": {2: [(T + 10 * SEC, None, 1, 1, None)]},
    "session-touching-spark": {1: [(1, T + 10 * SEC, T + 16 * SEC, 2, 3)]},
    "session-touching-open-spark": {2: [(1, T + 10 * SEC, T + 16 * SEC, 2, 4),
                                        (2, T + 17_999_000, T + 20_999_000, 1, 2)]},
}


@pytest.mark.parametrize("name", sorted(MODELLED))
def test_the_spark_convention_emits_what_native_spark_emits(spark, name: str) -> None:
    """Findings of docs/engines.md now modelled: native Spark emits the rows written here by
    hand, and the reference under the spark convention meets the same pins."""
    from eowc.verify.executors import ReferenceExecutor
    from eowc.verify.spark import SparkNativeExecutor
    from eowc.verify.transcripts import load_transcript, replay

    transcript = load_transcript(str(DIVERGENCES / f"{name}.yaml"))
    assert replay(transcript, ReferenceExecutor()) == []
    native: dict[int, list[tuple]] = {}
    for emission in SparkNativeExecutor(at_once=True).emissions(transcript.case):
        native.setdefault(emission.epoch, []).append(emission.row)
    assert {epoch: sorted(rows) for epoch, rows in native.items()} == MODELLED[name]
