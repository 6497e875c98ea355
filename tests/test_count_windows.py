"""Count windows (seed 003's tuple-based windows: COUNT_TUMBLE, COUNT_HOP) in the reference
interpreter: hand-computed examples per convention, a late-but-not-late row shifting later
windows, the interpreter against the declarative specification and DuckDB on random logs,
prefix-closed output, independence of order and batching within the delay, refusals."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.analysis.derivation_graph import analyze
from eowc.semantics.engines.interpreter import run_eowc, run_update
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log, parse_arrival_log
from eowc.semantics.ir.plan import CountTVF, Scan, tie_break
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.operators.count_window import compile_count, count_rows, full_windows
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import NO_WATERMARK, Convention, count_window_closes
from eowc.verify.cli.main import main
from tests.disorder import bounded_disorder, events_of, in_order_rows, max_lag
from tests.strategies import arrival_logs, script
from tests.test_interpreter_vs_spec import cumulative_by_epoch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
QUERIES = {
    "tumble-keyed": "SELECT auction, window_ordinal, window_start, window_end, count(*) AS n, "
                    "sum(price) AS s FROM TABLE(COUNT_TUMBLE(TABLE bids PARTITION BY auction, "
                    "DESCRIPTOR(ts), 3)) GROUP BY auction, window_ordinal, window_start, "
                    "window_end EMIT ON WINDOW CLOSE",
    "hop-global": "SELECT window_ordinal, window_end, max(price) AS m, min(auction) AS a FROM "
                  "COUNT_HOP(bids, ts, 3, 2) WHERE price IS NULL OR price > 1 GROUP BY "
                  "window_ordinal, window_end HAVING count(*) > 1 EMIT ON WINDOW CLOSE",
    "hop-sparse": "SELECT auction, window_end, count(*) AS n, sum(price) AS s FROM "
                  "TABLE(COUNT_HOP(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), 2, 3)) "
                  "GROUP BY auction, window_end EMIT ON WINDOW CLOSE",
}
SMALL = ("CREATE SOURCE s (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '{d}' "
         "SECOND);\n")


def clock(micros: int) -> str:
    return format_timestamp(micros)[11:19]


def small_log(parsed_sources: dict, epochs: list[list[tuple[int, int]]]) -> ArrivalLog:
    """Rows (second of 10:00, v) of table s, one list per epoch."""
    lines = []
    for epoch in epochs:
        lines += [json.dumps({"table": "s", "row": {"ts": f"2024-01-01 10:00:{sec:02d}", "v": v}})
                  for sec, v in epoch]
        lines.append('{"barrier": true}')
    return parse_arrival_log(lines, parsed_sources).log


def test_count_windows_close_by_hand_on_the_docs_example() -> None:
    """docs/examples/count_window.sql over bids.jsonl, 2 rows per window, delay 1 min: [C 08:05,
    A 08:07] closes at W = 08:10 (epoch 1), [D 08:09, B 08:11] at W = 08:12 (epoch 2); H 08:08
    is late; [E 08:13, F 08:17] closes at W = 08:20 (epoch 4); G alone is a partial window,
    never emitted, not even at the close. The same under every convention (no time equals W)."""
    parsed = parse_script((EXAMPLES / "count_window.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "bids.jsonl"), parsed.sources).log
    for convention in Convention:
        got = [(e.epoch, e.row[0], clock(e.row[1])[:5], clock(e.row[2])[:5], e.row[3], e.row[4])
               for e in run_eowc(parsed.query, log, convention, close=True)]
        assert got == [(1, 1, "08:05", "08:07", 2, 6.0), (2, 2, "08:09", "08:11", 2, 8.0),
                       (4, 3, "08:13", "08:17", 2, 7.0)], convention


@pytest.mark.parametrize("convention", list(Convention))
def test_the_boundary_rule_decides_membership_and_emission(convention: Convention) -> None:
    """Delay 2 s. Epoch 0: a 10:00:00 (v 1), b 10:00:02 (v 2); W = 10:00:00. Epoch 1: x at
    10:00:00 (v 10), c 10:00:04 (v 4); W = 10:00:02. Epoch 2: d 10:00:05 (v 8); W = 10:00:03.

    risingwave keeps x (t = W is not late): windows [a, x] (last 10:00:00 < W after epoch 1,
    emitted then) and [b, c] (last 10:00:04, complete only at the close). spark and flink drop
    x: [a, b] closes at epoch 1 (10:00:02 <= W) and [c, d] at the close. d (risingwave) is a
    partial window, never emitted."""
    parsed = parse_script(SMALL.format(d=2) +
                          "SELECT window_ordinal, window_start, window_end, count(*) AS n, "
                          "sum(v) AS s FROM TABLE(COUNT_TUMBLE(TABLE s, DESCRIPTOR(ts), 2)) "
                          "GROUP BY window_ordinal, window_start, window_end EMIT ON WINDOW "
                          "CLOSE;")
    log = small_log(parsed.sources, [[(0, 1), (2, 2)], [(0, 10), (4, 4)], [(5, 8)]])
    got = [(e.epoch, e.row[0], clock(e.row[1]), clock(e.row[2]), e.row[3], e.row[4])
           for e in run_eowc(parsed.query, log, convention, close=True)]
    if convention is Convention.RISINGWAVE:
        assert got == [(1, 1, "10:00:00", "10:00:00", 2, 11), (3, 2, "10:00:02", "10:00:04", 2, 6)]
    else:
        assert got == [(1, 1, "10:00:00", "10:00:02", 2, 3), (3, 2, "10:00:04", "10:00:05", 2, 12)]


def test_a_row_older_than_the_newest_shifts_later_windows_in_update_mode() -> None:
    """Delay 10 s, COUNT_TUMBLE of 2: 10:00:00, :02, :04 make [00, 02]; 10:00:01 (not late)
    arrives next and shifts every window after it: [00, 01] and [02, 04]."""
    parsed = parse_script(SMALL.format(d=10) +
                          "SELECT window_ordinal, window_start, window_end, count(*) AS n, "
                          "sum(v) AS s FROM COUNT_TUMBLE(s, ts, 2) GROUP BY window_ordinal, "
                          "window_start, window_end;")
    log = small_log(parsed.sources, [[(0, 1), (2, 2), (4, 4)], [(1, 8)]])
    changes = [(c.epoch, c.op, c.row[0], clock(c.row[1]), clock(c.row[2]), c.row[4])
               for c in run_update(parsed.query, log)]
    assert changes == [(0, "+", 1, "10:00:00", "10:00:02", 3),
                       (1, "-", 1, "10:00:00", "10:00:02", 3),
                       (1, "+", 1, "10:00:00", "10:00:01", 9),
                       (1, "+", 2, "10:00:02", "10:00:04", 6)]
    assert [Counter(c) for c in update_after_each_epoch(parsed.query, log, Convention.RISINGWAVE)]


def test_window_membership_of_the_batch_tvf() -> None:
    """Rows 1..5 of one key: COUNT_HOP(3, 2) has windows {1, 2, 3} and {3, 4, 5}; COUNT_HOP(2, 3)
    has {1, 2} and {4, 5} (row 3 is in none); COUNT_TUMBLE(2) has {1, 2}, {3, 4} (5 is partial).
    Ties on time are broken by the row, never by arrival order."""
    parsed = parse_script(SMALL.format(d=1) + "SELECT * FROM s;")
    source = parsed.sources["s"]
    rows = [(t * 1_000_000, v) for t, v in ((5, 5), (1, 1), (3, 3), (2, 2), (4, 4))]

    def windows(size: int, slide: int, given: list[tuple[int, int]]) -> list[tuple[int, int]]:
        node = CountTVF(Scan(source), "ts", size, slide)
        count = compile_count(node, tie_break(node.input.schema, source))
        return [(row[4], row[1]) for row in count_rows(count, given)]
    assert windows(3, 2, rows) == [(1, 1), (1, 2), (1, 3), (2, 3), (2, 4), (2, 5)]
    assert windows(2, 3, rows) == [(1, 1), (1, 2), (2, 4), (2, 5)]
    assert windows(2, 2, rows) == [(1, 1), (1, 2), (2, 3), (2, 4)]
    ties = [(0, 9), (0, 7), (0, 8)]
    assert windows(2, 2, ties) == windows(2, 2, list(reversed(ties))) == [(1, 7), (1, 8)]
    assert [full_windows(n, 3, 2) for n in range(7)] == [0, 0, 0, 1, 1, 2, 2]


def test_the_trigger_needs_a_full_window_and_a_complete_last_row() -> None:
    assert not count_window_closes(None, 10**12, Convention.RISINGWAVE)  # partial: never
    assert not count_window_closes(5, 5, Convention.RISINGWAVE)
    assert count_window_closes(5, 5, Convention.SPARK)
    assert count_window_closes(5, 5, Convention.FLINK)
    assert not count_window_closes(5, NO_WATERMARK, Convention.FLINK)


def test_what_is_refused() -> None:
    source = SMALL.format(d=1)
    with pytest.raises(PlanError, match="GROUP BY that has window_end"):
        run_eowc(parse_script(source + "SELECT window_ordinal, count(*) FROM COUNT_TUMBLE(s, ts, "
                                       "2) GROUP BY window_ordinal EMIT ON WINDOW CLOSE;").query,
                 ArrivalLog(()))
    with pytest.raises(PlanError, match="emitted by a GROUP BY window_end"):
        run_eowc(parse_script(source + "SELECT * FROM COUNT_TUMBLE(s, ts, 2) EMIT ON WINDOW "
                                       "CLOSE;").query, ArrivalLog(()))
    with pytest.raises(SqlError, match="must be positive row counts"):
        parse_script(source + "SELECT * FROM COUNT_HOP(s, ts, 2, 0);")
    with pytest.raises(SqlError, match="sizes are row counts"):
        parse_script(source + "SELECT * FROM COUNT_TUMBLE(s, ts, INTERVAL '2' SECOND);")
    with pytest.raises(SqlError, match="expected TABLE\\(COUNT_HOP"):
        parse_script(source + "SELECT * FROM COUNT_HOP(s, ts, 2);")
    with pytest.raises(SqlError, match="needs a TIMESTAMP"):
        parse_script(source + "SELECT * FROM COUNT_TUMBLE(s, v, 2);")


def test_the_executor_prints_what_the_reference_prints() -> None:
    """The page's worked example on the in-process executor (EowcCountWindow): the same
    lines as the reference, the late row included."""
    paths = [str(EXAMPLES / "count_window.sql"), str(EXAMPLES / "bids.jsonl"), "--with-epoch",
             "--close"]
    reference = CliRunner().invoke(main, ["run", *paths])
    executor = CliRunner().invoke(main, ["run", *paths, "--engine", "in-process"])
    assert reference.exit_code == executor.exit_code == 0, executor.output
    assert executor.output == reference.output and '"_epoch": 4' in executor.output


def test_explain_names_the_trigger_and_the_carried_watermark() -> None:
    assert analyze(script(QUERIES["tumble-keyed"]).query, Convention.SPARK).error is None
    result = CliRunner().invoke(main, ["explain", str(EXAMPLES / "count_window.sql")])
    assert result.exit_code == 0, result.output
    assert "COUNT_TUMBLE(2 rows) ON bidtime" in result.output
    assert "window_end < W" in result.output
    assert "no watermark: window_start" in result.output


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs())
def test_count_windows_equal_the_specification_and_duckdb(name: str, log: ArrivalLog) -> None:
    query = script(QUERIES[name]).query
    for convention in Convention:
        emissions = list(run_eowc(query, log, convention, close=True))
        expected = eowc_after_each_epoch(query, log, convention, close=True)
        assert cumulative_by_epoch(emissions, len(expected)) == expected, convention
        for close in (False, True):
            got = Counter(e.row for e in emissions if close or e.epoch < len(log.epochs))
            assert got == oracle_eowc(query, log, convention, close), (convention, close)
        changes = list(run_update(query, log, convention))
        snapshots = update_after_each_epoch(query, log, convention)
        current: Counter = Counter()
        for epoch, snapshot in enumerate(snapshots):
            for change in changes:
                if change.epoch == epoch:
                    current[change.row] += 1 if change.op == "+" else -1
            assert +current == snapshot, (convention, epoch)


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=30, deadline=None)
@given(log=arrival_logs(), cut=st.integers(0, 30))
def test_eowc_output_is_prefix_closed(name: str, log: ArrivalLog, cut: int) -> None:
    """What was emitted after epoch ``e`` is exactly what a run on the first ``e + 1`` epochs
    emits: a later epoch never retracts or reorders it."""
    query = script(QUERIES[name]).query
    cut = min(cut, len(log.epochs) - 1)
    prefix = ArrivalLog(log.epochs[:cut + 1])
    for convention in Convention:
        full = [e for e in run_eowc(query, log, convention) if e.epoch <= cut]
        assert full == list(run_eowc(query, prefix, convention)), convention


@pytest.mark.parametrize("convention", list(Convention))
@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_order_and_batching_within_the_delay_do_not_matter(name: str, convention: Convention,
                                                          data: st.DataObject) -> None:
    """A re-arrival of an in-order log where every row lags by at most the delay (so none is
    late) emits the same windows by the end of the input: membership follows event time and
    the tie-break, never arrival order or epoch boundaries."""
    query = script(QUERIES[name]).query
    in_order = events_of(data.draw(in_order_rows()))
    reference = Counter(e.row for e in run_eowc(query, ArrivalLog((tuple(in_order),)),
                                                convention, close=True))
    lag = max_lag(5, convention is Convention.RISINGWAVE)
    variant = data.draw(bounded_disorder(in_order, lag))
    late: list = []
    got = Counter(e.row for e in run_eowc(query, variant, convention, close=True, late=late.append))
    assert late == []
    assert got == reference
