"""Pattern recognition (MATCH_RECOGNIZE) in the reference interpreter: hand-computed matches
(each quantifier, backtracking, both skip policies, a greedy tail that waits for one more
row), the worked example under every convention, the interpreter against the declarative
specification on random logs, prefix-closed EOWC output, independence of arrival order and
epoch boundaries within the delay, and what is refused."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.match_sql import parse_pattern
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log
from eowc.semantics.ir.plan import PatternTerm
from eowc.semantics.ir.values import MICROS_PER_SECOND, format_timestamp
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention, match_is_final
from tests.disorder import bounded_disorder, events_of, max_lag
from tests.strategies import BASE, arrival_logs, price_walk_logs, script
from tests.test_interpreter_vs_spec import cumulative_by_epoch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
S = MICROS_PER_SECOND


def match_query(body: str, partition: str = "PARTITION BY auction", order: str = "ts",
                emit: bool = True) -> str:
    return (f"SELECT * FROM bids MATCH_RECOGNIZE ({partition} ORDER BY {order} {body}) AS m"
            f"{' EMIT ON WINDOW CLOSE' if emit else ''};")


def one_partition_log(prices: list[int | None], per_epoch: int = 1) -> ArrivalLog:
    """Auction 1, one row per second from BASE, ``per_epoch`` rows per epoch, in order."""
    events = [Event("bids", (1, p, BASE + i * S)) for i, p in enumerate(prices)]
    return ArrivalLog(tuple(tuple(events[i:i + per_epoch])
                            for i in range(0, len(events), per_epoch)))


def matched(body: str, prices: list[int | None]) -> list[tuple]:
    """The EOWC output at the end of the input, without the partition column, checked equal
    to the batch result Q(INPUT) (emit on update, last epoch)."""
    query = script(match_query(body)).query
    log = one_partition_log(prices)
    got = [e.row for e in run_eowc(query, log, close=True)]
    batch = snapshots(list(run_update(replace(query, emit_on_window_close=False), log)),
                      len(log.epochs))[-1]
    assert Counter(got) == Counter(batch)
    return [row[1:] for row in got]


# ------------------------------------------------------------------------------ by hand

def test_the_v_shape_by_hand() -> None:
    """PATTERN (A B C) with B+ falling and C rising: 5 4 3 6 | 2 1 7. From row 0: A=5,
    B=4,3, C=6; past it, from row 4: A=2, B=1, C=7."""
    body = ("MEASURES FIRST(A.price) AS a, COUNT(B.*) AS nb, LAST(C.price) AS c, "
            "MATCH_NUMBER() AS m ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (A B+ C) DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price)")
    assert matched(body, [5, 4, 3, 6, 2, 1, 7]) == [(5, 2, 6, 1), (2, 1, 7, 2)]


@pytest.mark.parametrize(("pattern", "define", "prices", "expected"), [
    # B* takes no row (9 is not a B), then C=9; from row 2: A=0, B*=1,2, C=9.
    ("A B* C", "A AS price = 0, B AS price > 0 AND price < 9, C AS price = 9",
     [0, 9, 0, 1, 2, 9], [(0, 1, 0, 2), (2, 5, 2, 4)]),
    # B? greedy: rows 0-2; from 3: B?=1 then C needs 0 (fails): backtrack, B? empty, C=1;
    # from 5: B? cannot take 5, C=5.
    ("A B? C", "A AS price = 0, B AS price = 1, C AS price >= 1",
     [0, 1, 1, 0, 1, 0, 5], [(0, 2, 1, 3), (3, 4, 0, 2), (5, 6, 0, 2)]),
    # A{2,3} greedy takes 1,2,3, then B needs >= 5 at 4 (fails); A{2}=1,2 and B at 3 fails:
    # nothing starts at row 0. From row 1: A=2,3,4, B=9.
    ("A{2,3} B", "A AS price < 5, B AS price >= 5", [1, 2, 3, 4, 9], [(1, 4, 1, 4)]),
    # A{2,} takes 1..4, B{2} finds no two rows after it: backtrack to A=1,2, B=3,4.
    ("A{2,} B{2}", "A AS price < 5", [1, 2, 3, 4], [(0, 3, 2, 4)]),
    # {n}: exactly three rows, then B? (a 0) or none: 7 8 9 | 1 2 3 0.
    ("A{3} B?", "A AS price > 0, B AS price = 0", [7, 8, 9, 1, 2, 3, 0],
     [(0, 2, 0, 3), (3, 6, 1, 4)]),
])
def test_each_quantifier_by_hand(pattern: str, define: str, prices: list[int],
                                 expected: list[tuple]) -> None:
    """Each quantifier, with backtracking; measures: first and last second of the match, the
    rows mapped to B, all rows."""
    body = (f"MEASURES FIRST(A.ts) AS first_ts, LAST(ts) AS last_ts, COUNT(B.*) AS nb, "
            f"COUNT(*) AS n PATTERN ({pattern}) DEFINE {define}")
    got = [((f - BASE) // S, (last - BASE) // S, nb, n)
           for f, last, nb, n in matched(body, prices)]
    assert got == expected


@pytest.mark.parametrize(("skip", "expected"), [
    ("PAST LAST ROW", [(0, 2, 3)]),  # 1 2 3 | 1: from row 3, B+ finds nothing
    ("TO NEXT ROW", [(0, 2, 3), (1, 2, 3)]),  # from row 1: A=2, B=3; rows 2, 3 start none
])
def test_both_skip_policies(skip: str, expected: list[tuple]) -> None:
    body = (f"MEASURES FIRST(A.ts) AS first_ts, LAST(B.ts) AS last_ts, MAX(price) AS top "
            f"AFTER MATCH SKIP {skip} PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)")
    assert [((f - BASE) // S, (last - BASE) // S, top)
            for f, last, top in matched(body, [1, 2, 3, 1])] == expected


def test_define_reads_another_variables_last_row_and_prev_n() -> None:
    """``B.price <= A.price`` reads A's row; ``PREV(price, 2)`` two rows back (NULL before the
    partition's first row, so a condition on it fails there)."""
    body = ("MEASURES FIRST(A.price) AS a, SUM(B.price) AS s, AVG(B.price) AS avg_b, "
            "MIN(B.price) AS lo PATTERN (A B+) DEFINE A AS PREV(price, 2) IS NOT NULL, "
            "B AS B.price <= A.price")
    # rows 0, 1 cannot be A (no row two before); A=5 (row 2), B=4, 5; 6 > 5 ends it.
    # From row 5: A=6, B=1.
    assert matched(body, [9, 9, 5, 4, 5, 6, 1]) == [(5, 9, 4.5, 4), (6, 1, 1.0, 1)]


def test_a_greedy_tail_waits_for_the_row_after_it() -> None:
    """Delay 5 s. ``A B+`` over 1 (0 s), 2 (1 s) | 3 (3 s) | 0 (9 s) | 0 (15 s): after epoch 2
    (W = 4 s) the match 0-3 s is known, but B+ read the 9 s row to end it, and 9 s is
    complete only under W = 10 s (epoch 3). ``A B{1,2}`` is full at 3 s and does not read
    on: emitted after epoch 2, when 3 s is complete."""
    events = [Event("bids", (1, p, BASE + t * S)) for t, p in ((0, 1), (1, 2), (3, 3), (9, 0),
                                                                (15, 0))]
    log = ArrivalLog(((events[0], events[1]), (events[2],), (events[3],), (events[4],)))
    for quantifier, epoch in (("+", 3), ("{1,2}", 2)):
        body = (f"MEASURES FIRST(A.ts) AS first_ts, LAST(B.ts) AS last_ts PATTERN "
                f"(A B{quantifier}) DEFINE B AS B.price > PREV(B.price)")
        for convention in Convention:
            got = [(e.epoch, (e.row[1] - BASE) // S, (e.row[2] - BASE) // S)
                   for e in run_eowc(script(match_query(body)).query, log, convention,
                                     close=True)]
            assert got == [(epoch, 0, 3)], (quantifier, convention)


@pytest.mark.parametrize("convention", list(Convention))
def test_the_worked_example(convention: Convention) -> None:
    """docs/examples/pattern.sql over ticks.jsonl (delay 1 min; docs/operators/
    pattern-recognition.md). Sorted: 12 (10:00), 10, 8, 9, 10, 11 (10:05), 7 (10:06); the
    10:02 price 1 of epoch 3 is late (W = 10:04). The first V, 10:00-10:05, is decided by
    reading 10:06 (7 is not > 11), which is complete once W = 10:06 (epoch 4) under spark
    and flink (ts <= W), W = 10:07 (epoch 5) under risingwave (ts < W). The second, 10:06-
    10:10, waits for a row after 10:10: none comes, so the end of the input emits it."""
    parsed = parse_script((EXAMPLES / "pattern.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "ticks.jsonl"), parsed.sources).log
    got = [(e.epoch, format_timestamp(e.row[1])[11:16], format_timestamp(e.row[3])[11:16],
            e.row[4], e.row[5], e.row[6], e.row[7])
           for e in run_eowc(parsed.query, log, convention, close=True)]
    first = 5 if convention is Convention.RISINGWAVE else 4
    assert got == [(first, "10:00", "10:05", 12, 8, 11, 6), (7, "10:06", "10:10", 7, 6, 9, 4)]
    changes = [(c.epoch, c.op, c.row[-1]) for c in run_update(
        replace(parsed.query, emit_on_window_close=False), log, convention)]
    assert changes == [(1, "+", 4), (2, "-", 4), (2, "+", 6), (5, "+", 3), (6, "-", 3),
                       (6, "+", 4)]


def test_the_trigger_and_the_pattern_text() -> None:
    assert match_is_final(None, CLOSED_WATERMARK, Convention.SPARK)
    assert not match_is_final(None, 10**18, Convention.SPARK)
    assert match_is_final(5, 5, Convention.SPARK) and not match_is_final(5, 5,
                                                                         Convention.RISINGWAVE)
    assert parse_pattern("a B+ C* D? E{2} F{2,} G{1,3}") == (
        PatternTerm("A"), PatternTerm("B", 1, None), PatternTerm("C", 0, None),
        PatternTerm("D", 0, 1), PatternTerm("E", 2, 2), PatternTerm("F", 2, None),
        PatternTerm("G", 1, 3))


def test_emit_on_update_may_order_by_any_column() -> None:
    """Without EOWC, ORDER BY price DESC is a batch query: 3 2 1 falls in price order."""
    body = ("MEASURES COUNT(*) AS n, FIRST(A.price) AS top PATTERN (A B+) DEFINE "
            "B AS B.price < PREV(B.price)")
    query = script(match_query(body, order="price DESC", emit=False)).query
    log = one_partition_log([1, 3, 2])
    assert snapshots(list(run_update(query, log)), 3)[-1] == [(1, 3, 3)]


# ------------------------------------------------------------------------------ refused

@pytest.mark.parametrize(("body", "message"), [
    ("MEASURES COUNT(*) AS n ALL ROWS PER MATCH PATTERN (A)",
     "ALL ROWS PER MATCH is not supported"),
    ("MEASURES COUNT(*) AS n AFTER MATCH SKIP TO FIRST B PATTERN (A B)",
     "AFTER MATCH SKIP TO FIRST B is not supported"),
    ("MEASURES COUNT(*) AS n AFTER MATCH SKIP TO LAST B PATTERN (A B)",
     "AFTER MATCH SKIP TO LAST B is not supported"),
    ("MEASURES COUNT(*) AS n PATTERN (A B{,3})", r"the quantifier \{,3\} \(no lower bound\)"),
    ("MEASURES COUNT(*) AS n PATTERN (A B+?)", r"the reluctant quantifier \+\? is not"),
    ("MEASURES COUNT(*) AS n PATTERN (A | B)", r"alternation \| in PATTERN is not supported"),
    ("MEASURES COUNT(*) AS n PATTERN ((A B)+)", r"grouping \( \) in PATTERN is not supported"),
    ("MEASURES COUNT(*) AS n PATTERN (PERMUTE(A, B))", "PERMUTE in PATTERN is not supported"),
    ("MEASURES COUNT(*) AS n PATTERN (A* B?)", "can match no rows"),
    ("MEASURES COUNT(*) AS n PATTERN (A) DEFINE X AS price > 1",
     "DEFINE X: not a variable of the PATTERN"),
    ("MEASURES COUNT(*) AS n PATTERN (A B) DEFINE B AS price > NEXT(price)",
     r"NEXT\(\) is not supported in DEFINE"),
    ("MEASURES COUNT(*) AS n PATTERN (A B) DEFINE B AS COUNT(A.*) > 1",
     "aggregates and FIRST/LAST are not supported in DEFINE"),
    ("MEASURES PREV(A.price) AS p PATTERN (A)", r"PREV\(\) is not supported in MEASURES"),
    ("MEASURES RUNNING COUNT(*) AS n PATTERN (A)", "RUNNING measures are not supported"),
    ("MEASURES Z.price AS p PATTERN (A)", "Z is not a variable of the PATTERN"),
])
def test_unsupported_fragments_are_named(body: str, message: str) -> None:
    with pytest.raises(SqlError, match=message):
        script(match_query(body))


@pytest.mark.parametrize(("order", "written"), [("price", "price"), ("ts DESC", "ts DESC"),
                                                ("ts, price", "ts, price")])
def test_eowc_needs_order_by_the_watermark_column(order: str, written: str) -> None:
    query = script(match_query("MEASURES COUNT(*) AS n PATTERN (A)", order=order)).query
    with pytest.raises(PlanError, match=f"MATCH_RECOGNIZE must ORDER BY the watermark column "
                                        f"bids.ts ascending .* not ORDER BY {written}$"):
        list(run_eowc(query, one_partition_log([1])))


# ------------------------------------------------------------------------------ properties

PATTERNS = {
    "v-shape": match_query(
        "MEASURES FIRST(A.ts) AS first_ts, LAST(ts) AS last_ts, COUNT(B.*) AS nb, "
        "LAST(C.price) AS c, MATCH_NUMBER() AS m AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (A B+ C+) DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price)"),
    "bounded": match_query(
        "MEASURES FIRST(A.ts) AS first_ts, SUM(B.price) AS s, AVG(price) AS a, MIN(B.price) "
        "AS lo, MAX(C.price) AS hi, MATCH_NUMBER() AS m AFTER MATCH SKIP TO NEXT ROW "
        "PATTERN (A B{1,2} C?) DEFINE A AS price > 5, B AS B.price <= A.price, "
        "C AS C.price > PREV(C.price, 2)"),
    "unpartitioned": match_query(
        "MEASURES FIRST(A.ts) AS first_ts, LAST(B.ts) AS last_ts, COUNT(A.price) AS na, "
        "MATCH_NUMBER() AS m PATTERN (A* B{2,}) DEFINE A AS price IS NULL OR price < 6, "
        "B AS price >= 6", partition=""),
}


def by_partition(rows: Counter, partitioned: bool) -> dict:
    """Rows per partition in match order (MATCH_NUMBER is the last column)."""
    found: dict = {}
    for row in sorted(rows.elements(), key=lambda r: r[-1]):
        found.setdefault(row[0] if partitioned else (), []).append(row)
    return found


@pytest.mark.parametrize("name", sorted(PATTERNS))
@settings(max_examples=40, deadline=None)
@given(log=st.one_of(price_walk_logs(), arrival_logs()))
def test_the_interpreter_equals_the_specification(name: str, log: ArrivalLog) -> None:
    """After every epoch and at the end: the EOWC output equals ``Q'(INPUT, W)`` of the
    specification (the matcher over each partition's complete prefix), the emit-on-update
    result equals ``Q(INPUT)``, the EOWC output is a prefix of each partition's final
    matches, and at the end it is ``Q(INPUT)``."""
    query = script(PATTERNS[name]).query
    update = replace(query, emit_on_window_close=False)
    for convention in Convention:
        emissions = list(run_eowc(query, log, convention, close=True))
        expected = eowc_after_each_epoch(query, log, convention, close=True)
        cumulative = cumulative_by_epoch(emissions, len(expected))
        assert cumulative == expected, convention
        batches = update_after_each_epoch(update, log, convention)
        changes = list(run_update(update, log, convention))
        assert [Counter(s) for s in snapshots(changes, len(log.epochs))] == batches
        final = batches[-1] if batches else Counter()
        assert cumulative[-1] == final, convention
        whole = by_partition(final, name != "unpartitioned")
        for so_far in cumulative:
            for key, rows in by_partition(so_far, name != "unpartitioned").items():
                assert rows == whole[key][:len(rows)], (convention, key)


@pytest.mark.parametrize("name", sorted(PATTERNS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_order_and_epochs_within_the_delay_do_not_matter(name: str, data: st.DataObject
                                                         ) -> None:
    """Rows re-arrived with a lag of at most the delay (none late) and re-cut into epochs
    give the same final EOWC output as the in-order log, and every prefix of it stays a
    prefix of that output."""
    query = script(PATTERNS[name]).query
    drawn = data.draw(st.one_of(price_walk_logs(), arrival_logs()))
    in_order = events_of(sorted((e.row for epoch in drawn.epochs for e in epoch),
                                key=lambda row: row[2]))
    reference = ArrivalLog((tuple(in_order),))
    for convention in Convention:
        lag = max_lag(5, convention is Convention.RISINGWAVE)
        log = data.draw(bounded_disorder(in_order, lag))
        want = Counter(e.row for e in run_eowc(query, reference, convention, close=True))
        emissions = list(run_eowc(query, log, convention, close=True))
        assert Counter(e.row for e in emissions) == want, convention
        whole = by_partition(want, name != "unpartitioned")
        for so_far in cumulative_by_epoch(emissions, len(log.epochs)):
            for key, rows in by_partition(so_far, name != "unpartitioned").items():
                assert rows == whole[key][:len(rows)], (convention, key)
