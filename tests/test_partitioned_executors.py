"""The executors of eowc.executors.partitioned (OVER windows, MATCH_RECOGNIZE, count windows,
sessions, window TopN, deduplication) on the in-process driver: hand-computed emissions and
their epochs, the end of the input, idle partitions, and state that stays bounded.

The property that each equals the reference after every epoch, through restarts, is in
tests/test_executors_in_process.py; the seed examples are the transcripts of verify/transcripts/.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.partitioned import (
    END_OF_INPUT_MS,
    SEALED,
    EowcCountWindow,
    EowcOverWindow,
    EowcPattern,
    EowcSession,
    EowcTopN,
    input_watermark,
)
from eowc.semantics.engines.interpreter import LateRow, run_eowc, run_update
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention
from eowc.verify.executors import InProcessExecutor
from eowc.verify.suite import Target, default_shape, generate_case, shape_of
from tests.strategies import BASE, MILLISECOND_FRACTIONS, arrival_logs, script

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
S = 1_000_000


def log_of(*epochs: list[tuple[int, int, int]]) -> ArrivalLog:
    """Epochs of (auction, price, second after BASE)."""
    return ArrivalLog(tuple(tuple(Event("bids", (a, p, BASE + s * S)) for a, p, s in epoch)
                            for epoch in epochs))


def emitted(sql: str, log: ArrivalLog, convention: Convention = RW, close: bool = True,
            delay: int = 5) -> list[tuple[int, tuple]]:
    run = run_in_process(script(sql, delay).query, log, convention, close=close)
    return [(e.epoch, e.row) for e in run.emissions]


def test_each_partitioned_operator_has_its_executor() -> None:
    kinds = {
        "SELECT ts, lag(price) OVER (ORDER BY ts) AS p FROM bids EMIT ON WINDOW CLOSE":
            EowcOverWindow,
        "SELECT * FROM bids MATCH_RECOGNIZE (ORDER BY ts MEASURES A.ts AS t ONE ROW PER MATCH "
        "PATTERN (A) DEFINE A AS A.price > 1) AS m EMIT ON WINDOW CLOSE": EowcPattern,
        "SELECT window_end, count(*) AS n FROM COUNT_TUMBLE(bids, ts, 2) GROUP BY window_end "
        "EMIT ON WINDOW CLOSE": EowcCountWindow,
        "SELECT window_end, count(*) AS n FROM SESSION(bids, ts, INTERVAL '1' SECOND) "
        "GROUP BY window_start, window_end EMIT ON WINDOW CLOSE": EowcSession,
        "SELECT ts, auction FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY "
        "ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE": EowcTopN,
    }
    for sql, kind in kinds.items():
        assert type(processor_for(script(sql).query, RW)) is kind


# ------------------------------------------------------------------------- OVER windows

LEAD = ("SELECT ts, price, lead(price) OVER (ORDER BY ts) AS nx FROM bids EMIT ON WINDOW "
        "CLOSE")


def test_lead_waits_for_the_next_row_to_be_complete() -> None:
    """Delay 5 s. Epoch 0: t=0 (W=0 ms: nothing complete). Epoch 1: t=10 (W=5 s): t=0 is
    complete but its LEAD reads t=10, not complete. Epoch 2: t=20 (W=15 s): t=0 with nx=2;
    t=10 waits for t=20. At the close t=10 with nx=3, t=20 with no next row (NULL)."""
    out = emitted(LEAD, log_of([(1, 1, 0)], [(1, 2, 10)], [(1, 3, 20)]))
    assert [(e, row[1:]) for e, row in out] == [(2, (1, 2)), (3, (2, 3)), (3, (3, None))]


RANGE_FOLLOWING = ("SELECT ts, sum(price) OVER (ORDER BY ts RANGE BETWEEN CURRENT ROW AND "
                   "INTERVAL '3' SECOND FOLLOWING) AS s FROM bids EMIT ON WINDOW CLOSE")


@pytest.mark.parametrize(("convention", "epoch"), [(RW, 2), (SPARK, 1), (FLINK, 1)])
def test_a_range_following_frame_waits_for_v_plus_y_without_any_new_row(
        convention: Convention, epoch: int) -> None:
    """t=0 and t=2 (sum 3 for t=0), then t=13 (W=8 s) and t=13 again... The frame of t=5
    ends at 8 s: complete at W=8 s under spark and flink (epoch 1), only above it under
    risingwave (W=9 s after epoch 2, which brings t=14 only to move the watermark). The
    timer of stage two fires with no new row of the partition becoming complete."""
    out = emitted(RANGE_FOLLOWING, log_of([(1, 1, 5)], [(2, 4, 13)], [(2, 8, 14)]), convention,
                  close=False)
    assert out[0] == (epoch, (BASE + 5 * S, 1))


UNBOUNDED = ("SELECT ts, max(price) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND UNBOUNDED "
             "FOLLOWING) AS rest FROM bids EMIT ON WINDOW CLOSE")


def test_unbounded_following_is_emitted_only_at_the_end_of_the_input() -> None:
    log = log_of([(1, 5, 0), (1, 7, 1)], [(1, 2, 30)], [])
    assert emitted(UNBOUNDED, log, close=False) == []
    assert [(e, row[1]) for e, row in emitted(UNBOUNDED, log)] == [(3, 7), (3, 7), (3, 2)]


def test_the_end_of_the_input_on_spark_is_the_close_rows_watermark() -> None:
    """The --close row (2262) moves Spark's watermark past END_OF_INPUT_MS: the executors read
    it as +infinity, as the reference's --close; any realistic watermark is left alone."""
    assert input_watermark(END_OF_INPUT_MS * MICROS_PER_MILLI) == CLOSED_WATERMARK
    assert input_watermark(9_214_646_400_000_000 - 5 * S) == CLOSED_WATERMARK
    assert input_watermark(BASE) == BASE


def test_an_idle_partition_is_emitted_by_another_partitions_watermark() -> None:
    """Auction 1 stops after t=0; auction 2 moves the watermark (it is the source's, not the
    partition's): auction 1's row and its LAG come out once W passes it."""
    sql = ("SELECT auction, ts, lag(price, 1, 0) OVER (PARTITION BY auction ORDER BY ts) AS p "
           "FROM bids EMIT ON WINDOW CLOSE")
    out = emitted(sql, log_of([(1, 9, 0)], [(2, 1, 10)], [(2, 2, 20)]), close=False)
    assert out == [(1, (1, BASE, 0)), (2, (2, BASE + 10 * S, 0))]


# --------------------------------------------------------------- sessions, TopN, counts

SESSION = ("SELECT auction, window_start, window_end, count(*) AS n FROM TABLE(SESSION(TABLE "
           "bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY auction, "
           "window_start, window_end EMIT ON WINDOW CLOSE")


def test_a_row_between_two_sessions_merges_them_before_either_closes() -> None:
    """Delay 5 s, gap 3 s: t=0 and t=4 are two sessions; t=2 (epoch 1, not late at W=0 s)
    merges them into [0, 7 s), closed at W=7 s (t=12 in epoch 2)."""
    out = emitted(SESSION, log_of([(1, 1, 0), (1, 1, 4)], [(1, 1, 2)], [(2, 1, 12)]),
                  close=False)
    assert out == [(2, (1, BASE, BASE + 7 * S, 3))]


def test_equal_timestamps_all_count_in_their_session_and_count_window() -> None:
    three_ties = log_of([(1, 1, 0), (1, 2, 0), (1, 3, 0)], [(1, 4, 20)])
    assert emitted(SESSION, three_ties, close=False) == [(1, (1, BASE, BASE + 3 * S, 3))]
    count = ("SELECT window_ordinal, sum(price) AS s FROM COUNT_TUMBLE(bids, ts, 2) GROUP BY "
             "window_ordinal, window_end EMIT ON WINDOW CLOSE")
    # rows ordered by time, then the tie-break (the whole row): prices 1, 2 | 3, 4
    assert emitted(count, three_ties) == [(1, (1, 3)), (2, (2, 7))]


def test_window_top_n_emits_each_window_once_when_it_closes() -> None:
    sql = ("SELECT window_start, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
           "window_start, window_end ORDER BY price DESC) AS rn FROM TUMBLE(bids, ts, INTERVAL "
           "'10' SECOND)) WHERE rn <= 2 EMIT ON WINDOW CLOSE")
    out = emitted(sql, log_of([(1, 5, 1), (1, 9, 2)], [(1, 7, 3), (1, 1, 12)], [(1, 1, 16)]),
                  close=False)
    assert out == [(2, (BASE, 9, 1)), (2, (BASE, 7, 2))]


def top_partitions(sql: str, log: ArrivalLog) -> tuple[list[tuple[int, tuple]], dict]:
    """The in-process run's emissions and, after it, every partition of its TopN's state."""
    processor = processor_for(script(sql).query, RW)
    run = run_in_process(script(sql).query, log, RW, close=False, processor=processor)
    assert isinstance(processor, EowcTopN)
    kept = {}
    for (name, _), partitions in processor.bucket.store.values.items():
        if name == EowcTopN.state_name:
            kept.update(partitions)
    return [(e.epoch, e.row) for e in run.emissions], kept


def dedup(function: str, limit: int) -> str:
    return (f"SELECT ts, auction, price FROM (SELECT *, {function}() OVER (PARTITION BY auction "
            f"ORDER BY ts) AS rn FROM bids) WHERE rn <= {limit} EMIT ON WINDOW CLOSE")


def test_a_full_deduplication_partition_is_sealed_and_takes_no_later_row() -> None:
    """Auction 1's row at 1 s is emitted once W = 20 s - 5 s passes it (epoch 1); its partition
    is then only a marker. Its row at 16 s (epoch 2, not late: W is 15 s) ranks second and is
    dropped, as the full partition would have dropped it."""
    log = log_of([(1, 10, 1)], [(2, 20, 20)], [(1, 30, 16), (2, 40, 40)])
    out, kept = top_partitions(dedup("ROW_NUMBER", 1), log)
    assert out == [(1, (BASE + 1 * S, 1, 10)), (2, (BASE + 20 * S, 2, 20))]
    assert kept[(1,)] is SEALED and kept[(2,)] is SEALED


def test_a_deduplication_partition_with_room_below_the_limit_is_not_sealed() -> None:
    """RANK and DENSE_RANK <= 2, auction 1's two rows at 1 s (peers, both rank 1) are emitted
    in epoch 1. A later row (16 s) would have RANK 3, beyond the limit (sealed), but DENSE_RANK
    2: that partition stays open and emits it once W passes 16 s (epoch 3), before auction 2's
    row at 20 s; then it is full."""
    log = log_of([(1, 10, 1), (1, 11, 1)], [(2, 20, 20)], [(1, 30, 16)], [(2, 40, 40)])
    ranked, kept = top_partitions(dedup("RANK", 2), log)
    assert [(e, r[2]) for e, r in ranked] == [(1, 10), (1, 11), (3, 20)]
    assert kept[(1,)] is SEALED
    dense, kept = top_partitions(dedup("DENSE_RANK", 2), log)
    assert [(e, r[2]) for e, r in dense] == [(1, 10), (1, 11), (3, 30), (3, 20)]  # 16 s, 20 s
    assert kept[(1,)] is SEALED  # full (dense ranks 1, 1, 2) once its 16 s row was emitted


@pytest.mark.parametrize(("function", "limit"), [("ROW_NUMBER", 1), ("RANK", 2), ("DENSE_RANK", 2)])
def test_deduplication_of_many_keys_over_1200_epochs_equals_the_reference(function: str,
                                                                          limit: int) -> None:
    """2,000 keys, 12,000 rows in 1,200 epochs over 20 minutes, up to 6 s of disorder (some rows
    late), equal times in pairs (peers): every row, epoch and late row as the reference's, and
    the state (rows) flat once every key is sealed."""
    events = [Event("bids", (i * 7919 % 2_000, i % 13, BASE + (i // 2) * 200_000
                             - (i * 104_729 % 60) * 100_000)) for i in range(12_000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    query = script(dedup(function, limit)).query
    late: list[LateRow] = []
    expected = list(run_eowc(query, log, RW, close=True, late=late.append))
    run = run_in_process(query, log, RW, close=True)
    assert run.emissions == expected and len(expected) >= 2_000 and late
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    assert max(run.state_rows[600:]) <= max(run.state_rows[300:600])


# ------------------------------------------------------------------------ bounded state

BOUNDED = {
    "over": "SELECT auction, ts, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN "
            "2 PRECEDING AND 1 FOLLOWING) AS s FROM bids EMIT ON WINDOW CLOSE",
    "over_range": "SELECT ts, avg(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN "
                  "INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS a, rank() OVER (PARTITION "
                  "BY auction ORDER BY ts) AS r FROM bids EMIT ON WINDOW CLOSE",
    "pattern": "SELECT * FROM bids MATCH_RECOGNIZE (PARTITION BY auction ORDER BY ts MEASURES "
               "LAST(B.price) AS top ONE ROW PER MATCH PATTERN (A B+) DEFINE B AS B.price > "
               "PREV(B.price)) AS m EMIT ON WINDOW CLOSE",
    "session": SESSION,
    "count": "SELECT auction, window_end, sum(price) AS s FROM TABLE(COUNT_HOP(TABLE bids "
             "PARTITION BY auction, DESCRIPTOR(ts), 4, 2)) GROUP BY auction, window_ordinal, "
             "window_end EMIT ON WINDOW CLOSE",
    "top_n": "SELECT window_start, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "window_start, window_end ORDER BY price DESC) AS rn FROM TUMBLE(bids, ts, "
             "INTERVAL '10' SECOND)) WHERE rn <= 3 EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction "
             "ORDER BY ts) AS rn FROM bids) WHERE rn = 1 EMIT ON WINDOW CLOSE",
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_state_stays_bounded(name: str) -> None:
    """3,000 rows over 4 auctions, 10 per second with a 5 s pause every 5 s (sessions close),
    up to 2 s of disorder, an epoch per 10 rows: the state (in bytes, as pickled in Spark's
    store) after 3,000 rows is no larger than after 300, within 10%: only rows a future
    result reads are kept."""
    events = []
    for i in range(3_000):
        jitter = (i * 7919) % 20  # up to 2 s back, deterministic
        t = BASE + (i * S) // 10 + (i // 50) * 5 * S - jitter * S // 10
        events.append(Event("bids", (i % 4, (i * 31) % 17, t)))
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    run = run_in_process(script(BOUNDED[name]).query, log, RW, measure_bytes=True)
    early, late = max(run.state_bytes[20:40]), max(run.state_bytes[280:300])
    assert late <= early * 1.1, (early, late)
    assert len(run.emissions) > 0


# ------------------------------------------------------------- emit on update (seed 002)

CHANGELOG = {
    "rows": "SELECT auction, ts, price, sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS "
            "BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s, lag(price, 2, -1) OVER (PARTITION BY "
            "auction ORDER BY ts) AS l2, lead(price) OVER (PARTITION BY auction ORDER BY ts) "
            "AS nx FROM bids",
    "range_and_ranks": "SELECT ts, price, avg(price) OVER (ORDER BY ts RANGE BETWEEN INTERVAL "
                       "'2' SECOND PRECEDING AND CURRENT ROW) AS a, rank() OVER (ORDER BY ts) "
                       "AS r, dense_rank() OVER (ORDER BY ts) AS d, row_number() OVER (ORDER BY "
                       "ts) AS n FROM bids",
    "unbounded": "SELECT auction, ts, count(*) OVER (PARTITION BY auction ORDER BY ts ROWS "
                 "BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS rest, max(price) OVER "
                 "(PARTITION BY auction ORDER BY ts RANGE BETWEEN CURRENT ROW AND INTERVAL '1' "
                 "SECOND FOLLOWING) AS m FROM bids",
}


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", sorted(CHANGELOG))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS), data=st.data())
def test_the_changelog_executor_equals_the_reference_after_every_epoch(
        name: str, convention: Convention, log: ArrivalLog, data: st.DataObject) -> None:
    """Seed 002's general OverWindow: the same changes (deletes, inserts, order) in the same
    epochs as the reference's emit-on-update run, the same late rows, through restarts."""
    query = script(CHANGELOG[name]).query
    late: list[LateRow] = []
    expected = list(run_update(query, log, convention, late=late.append))
    run = run_in_process(query, log, convention)
    assert run.changes == expected and run.emissions == []
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    assert run_in_process(query, log, convention, restart_after=restarts).changes == expected


def test_an_inserted_row_changes_only_its_affected_range() -> None:
    """Seed 002's example shape: rows at 0, 1, 2, 3 s (prices 1, 2, 3, 4), then 1.5 s... here
    t=5 s arrives between nothing: ROWS 1 PRECEDING AND 1 FOLLOWING around a row inserted at
    t=2 s between t=1 s and t=3 s changes the sums of 1 s and 3 s, and adds its own; 0 s is
    outside the range and does not change."""
    sql = ("SELECT ts, sum(price) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) "
           "AS s FROM bids")
    run = run_in_process(script(sql).query, log_of([(1, 1, 0), (1, 2, 1), (1, 4, 3)],
                                                   [(1, 3, 2)]), RW)
    second = [(c.op, (c.row[0] - BASE) // S, c.row[1]) for c in run.changes if c.epoch == 1]
    assert second == [("-", 1, 7), ("-", 3, 6), ("+", 1, 6), ("+", 2, 9), ("+", 3, 7)]


def test_the_changelog_state_stays_bounded_with_bounded_frames() -> None:
    sql = CHANGELOG["rows"]
    events = [Event("bids", (i % 4, i % 17, BASE + i * S // 10 - ((i * 7919) % 20) * S // 10))
              for i in range(3_000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    run = run_in_process(script(sql).query, log, RW, measure_bytes=True)
    assert max(run.state_bytes[280:300]) <= max(run.state_bytes[20:40]) * 1.1


def test_only_over_windows_have_a_changelog_executor() -> None:
    from eowc.semantics.errors import PlanError
    with pytest.raises(PlanError, match="only OVER windows have an emit-on-update executor"):
        processor_for(script("SELECT window_start, count(*) AS n FROM TUMBLE(bids, ts, "
                             "INTERVAL '10' SECOND) GROUP BY window_start").query, RW)


# ------------------------------------------ the executors' matcher on varied patterns

#: Patterns beyond the in-process tests' ``A B+ C?``: bounded and optional quantifiers that
#: make the matcher give rows back, PREV two rows back, another variable's last row, both
#: skip policies.
PATTERNS = [
    ("A B* C", "B AS B.price >= PREV(B.price), C AS C.price < A.price", "PAST LAST ROW"),
    ("A{2,3} B+ C{0,2}", "A AS A.price < 50, B AS B.price > PREV(B.price, 2), "
     "C AS C.price < B.price", "TO NEXT ROW"),
    ("A? B+ C", "A AS A.price > 90, B AS B.price < 60, C AS C.price > PREV(C.price)",
     "PAST LAST ROW"),
    ("A+ B", "A AS A.price > PREV(A.price) OR PREV(A.price) IS NULL, B AS B.price < A.price",
     "TO NEXT ROW"),
]


@pytest.mark.parametrize(("pattern", "define", "skip"), PATTERNS)
def test_the_matcher_equals_the_reference_on_varied_patterns(pattern: str, define: str,
                                                             skip: str) -> None:
    """The executors' matcher (its own, not the reference's) against the reference, on
    seeded logs of ``eowc verify``'s generator, under every convention."""
    sql = (f"SELECT * FROM bids MATCH_RECOGNIZE (PARTITION BY auction ORDER BY ts MEASURES "
           f"FIRST(A.ts) AS f, LAST(B.price) AS lb, COUNT(*) AS n, SUM(B.price) AS sb, "
           f"MATCH_NUMBER() AS m ONE ROW PER MATCH AFTER MATCH SKIP {skip} PATTERN ({pattern}) "
           f"DEFINE {define}) AS x EMIT ON WINDOW CLOSE")
    target = Target("pattern", SOURCE_SQL + sql)
    shape = shape_of(target, InProcessExecutor(), default_shape(target))
    matches = 0
    for seed in range(30):
        convention = list(Convention)[seed % 3]
        case, _ = generate_case(target, convention, seed, shape, crash=False, disrupt=False)
        expected = list(run_eowc(case.query, case.log, convention, close=True))
        assert run_in_process(case.query, case.log, convention, close=True).emissions == expected
        matches += len(expected)
    assert matches > 30, f"only {matches} matches in 30 logs: the patterns prove little"


SOURCE_SQL = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
              "WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);\n")
