"""Partial aggregation is exact: ``AggregateFunction.merge`` of the states of two disjoint
sets of rows is the state of folding all of them, in any order, for every function that has
one; the functions whose result depends on the rows' order have none.

Hand-computed cases first, then the property over random rows split at random and merged in a
random order (BIGINT, VARCHAR, TIMESTAMP, BOOLEAN and DECIMAL columns with NULLs). Then the
group aggregate's combiner (``EowcGroupAgg.combine``), driven by hand as Spark drives it:
each frame folded on its own before the shuffle, the folds merged in the bucket, a late
window's rows refused one by one; every expected row computed by hand. And Spark's stateless
step, run on a pandas frame: what crosses the shuffle is one Partial per group."""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal
from functools import reduce
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.interface import EowcProcessor
from eowc.executors.processors import EowcGroupAgg
from eowc.executors.protocol import Emit, Output, Partial, Refusal
from eowc.executors.spark.adapter import stateless_part, unkeyed
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Column, ColumnRef, Row
from eowc.semantics.ir.plan import AggCall
from eowc.semantics.ir.values import SqlType
from eowc.semantics.operators.aggregates import AggregateFunction, compile_aggregate
from eowc.semantics.rules.triggers import Convention

SCHEMA = (Column("ts", SqlType.TIMESTAMP), Column("n", SqlType.BIGINT),
          Column("s", SqlType.VARCHAR), Column("b", SqlType.BOOLEAN),
          Column("d", SqlType.DECIMAL), Column("x", SqlType.DOUBLE))

MERGEABLE = [AggCall("count")] + \
    [AggCall("count", ColumnRef(c)) for c in ("n", "s", "x")] + \
    [AggCall(f, ColumnRef("n")) for f in ("sum", "avg", "min", "max")] + \
    [AggCall(f, ColumnRef(c)) for f in ("min", "max") for c in ("ts", "s", "b")] + \
    [AggCall(f, ColumnRef("d")) for f in ("sum", "avg")]

#: Their result depends on the order of the rows, or their state is not a fold's summary.
ORDERED = [AggCall(f, ColumnRef("x")) for f in ("sum", "avg", "min", "max")] + \
    [AggCall(f, ColumnRef("n")) for f in ("first_value", "last_value", "median")] + \
    [AggCall("count", ColumnRef("n"), distinct=True)]


def fold(function: AggregateFunction, rows: list[tuple]) -> object:
    state = function.initial()
    for row in rows:
        state = function.add(state, row)
    return state


def call_id(call: AggCall) -> str:
    return f"{call.function}_{call.argument.name if call.argument else 'star'}"


def test_hand_computed_merges() -> None:
    a = [(1, 3, "b", True, Decimal("1.5"), 0.1), (2, None, None, None, None, None)]
    b = [(3, 4, "a", False, Decimal("2.25"), 0.2), (4, -2, "c", None, Decimal("-1"), 0.3)]

    def merged(call: AggCall) -> object:
        f = compile_aggregate(call, SCHEMA, "ts")
        assert f.merge is not None
        return f.result(f.merge(fold(f, a), fold(f, b)))
    assert merged(AggCall("count")) == 4
    assert merged(AggCall("count", ColumnRef("n"))) == 3
    assert merged(AggCall("sum", ColumnRef("n"))) == 5
    assert merged(AggCall("avg", ColumnRef("n"))) == 5 / 3
    assert merged(AggCall("min", ColumnRef("s"))) == "a"
    assert merged(AggCall("max", ColumnRef("ts"))) == 4
    assert merged(AggCall("min", ColumnRef("b"))) is False
    assert merged(AggCall("sum", ColumnRef("d"))) == Decimal("2.75")
    # a side with no non-NULL value merges as nothing
    f = compile_aggregate(AggCall("sum", ColumnRef("n")), SCHEMA, "ts")
    assert f.merge is not None
    assert f.result(f.merge(fold(f, a[1:]), fold(f, a[1:]))) is None
    assert f.merge(fold(f, a[1:]), fold(f, b)) == 2


@pytest.mark.parametrize("call", ORDERED, ids=call_id)
def test_order_dependent_functions_have_no_merge(call: AggCall) -> None:
    # e.g. (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3), min(0.0, -0.0) keeps the first
    assert compile_aggregate(call, SCHEMA, "ts").merge is None


cells = st.tuples(
    st.integers(0, 10**6),
    st.none() | st.integers(-2**63, 2**63 - 1),
    st.none() | st.text(max_size=3),
    st.none() | st.booleans(),
    st.none() | st.decimals(allow_nan=False, allow_infinity=False, places=4,
                            min_value=-10**20, max_value=10**20),
    st.none() | st.floats(allow_nan=False),
)


@pytest.mark.parametrize("call", MERGEABLE, ids=call_id)
@settings(max_examples=80, deadline=None)
@given(rows=st.lists(cells, max_size=20), data=st.data())
def test_merge_of_any_split_in_any_order_is_the_fold(call: AggCall, rows: list[tuple],
                                                     data: st.DataObject) -> None:
    f = compile_aggregate(call, SCHEMA, "ts")
    assert f.merge is not None
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    parts = [rows[i:j] for i, j in zip([0, *cuts], [*cuts, len(rows)], strict=True)]
    order = data.draw(st.permutations(range(len(parts))))
    merged = reduce(f.merge, (fold(f, parts[i]) for i in order), f.initial())
    assert merged == fold(f, rows)
    assert f.result(merged) == f.result(fold(f, rows))


# ------------------------------------------------------------------ the group aggregate's combiner

S = 1_000_000
BASE = 1_700_000_000 * S  # a whole 10 s
BIDS = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);\n")


def group_agg(select: str, tvf: str = "TUMBLE(bids, ts, INTERVAL '10' SECOND)",
              convention: Convention = Convention.SPARK) -> EowcGroupAgg:
    query = parse_script(BIDS + f"SELECT auction, window_start, window_end, {select} FROM {tvf} "
                         "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE").query
    processor = processor_for(query, convention)
    assert isinstance(processor, EowcGroupAgg)
    return processor


def arrivals(processor: EowcProcessor, bids: list[tuple[int, int, float]], first_seq: int = 0
             ) -> dict[Row, list[tuple]]:
    """Bids (auction, price, seconds after BASE) as the stateless step makes them, by key, as
    plain tuples of Arrival's fields (as Spark's stateless step hands them to ``combine``)."""
    by_key: dict[Row, list[tuple]] = {}
    for seq, (auction, price, seconds) in enumerate(bids, start=first_seq):
        t = BASE + int(seconds * S)
        made = processor.stateless_of("bids", (auction, price, t))
        for row in made:
            by_key.setdefault(processor.key_of(row), []).append((seq, len(made), t, row, None))
    return by_key


def run_batches(processor: EowcProcessor, batches: list[list[tuple]], watermarks_s: list[int]
                ) -> tuple[list[Row], list[tuple[int, int]]]:
    """Spark's protocol by hand: each batch is several frames, each frame combined on its own
    (before the shuffle), the key's items of all frames handed over together at the batch's
    watermark, then its due timers. The rows emitted, and the refused (seq, fanout)s."""
    store = MemoryStore()
    processor.init(memory_handle(store))
    outputs: list[Output] = []
    for frames, watermark_s in zip(batches, watermarks_s, strict=True):
        by_key: dict[Row, list[Any]] = {}
        for frame in frames:
            for key, items in frame.items():
                by_key.setdefault(key, []).extend(processor.combine(items))
        watermark_ms = (BASE + watermark_s * S) // 1000
        for key in sorted(by_key):
            store.current_key = key
            outputs += processor.handle_rows(key, by_key[key], watermark_ms * 1000)
        while (timer := store.pop_due_timer(watermark_ms)) is not None:
            store.current_key = timer[1]
            outputs += processor.handle_timer(timer[1], timer[0], watermark_ms * 1000)
    return ([o.row for o in outputs if isinstance(o, Emit)],
            sorted((o.seq, o.fanout) for o in outputs if isinstance(o, Refusal)))


def window(auction: int, start_s: int, end_s: int, *results: Any) -> Row:
    return (auction, BASE + start_s * S, BASE + end_s * S, *results)


def test_which_group_aggregates_combine() -> None:
    assert group_agg("count(*), sum(price), min(price), avg(price)").combines
    assert group_agg("sum(price * 0.5)").combines  # 0.5 is a DECIMAL: sums exactly
    assert not group_agg("sum(CAST(price AS DOUBLE))").combines  # rounds, by the order
    assert not group_agg("first_value(price)").combines
    # RisingWave checks each row's event time, which the step before the shuffle cannot know
    assert not group_agg("count(*)", convention=Convention.RISINGWAVE).combines
    assert group_agg("count(*)", convention=Convention.FLINK).combines


def test_frames_fold_apart_and_merge_in_the_bucket() -> None:
    """Auction 1's window [0, 10) gets rows from two frames of batch 1 and from batch 2; each
    frame sends one Partial for it, and the result is the sum of all three, emitted once the
    window closes (batch 3, at W = 12 s)."""
    agg = group_agg("count(*) AS n, sum(price) AS s, max(price) AS m")
    first = arrivals(agg, [(1, 5, 1), (1, 7, 2), (1, 1, 3)])
    second = arrivals(agg, [(1, 10, 4), (1, 2, 5)], first_seq=3)
    (items,) = first.values()
    combined = agg.combine(items)
    assert combined == [Partial(window(1, 0, 10), [3, 13, 7], [0, 1, 2], [1, 1, 1])]
    third = arrivals(agg, [(1, 4, 9), (1, 6, 9.5), (1, 100, 12)], first_seq=5)
    rows, refused = run_batches(agg, [[first, second], [third], []], [0, 9, 12])
    assert rows == [window(1, 0, 10, 7, 35, 10)]
    assert refused == []


def test_a_closed_window_refuses_each_of_its_rows() -> None:
    """Under Spark's rule the window [0, 10) takes rows while W < 10 s: at W = 12 s its two
    late rows (seq 2 and 3) are refused one by one, though they crossed folded."""
    agg = group_agg("count(*) AS n")
    batch1 = arrivals(agg, [(1, 1, 1), (1, 1, 12)])
    batch2 = arrivals(agg, [(1, 1, 3), (1, 1, 4), (1, 1, 13)], first_seq=2)
    (items,) = [v for v in batch2.values() if any(i[3][3] == BASE for i in v)]
    assert len(agg.combine(items)) == 1  # the two late rows, folded into one Partial
    rows, refused = run_batches(agg, [[batch1], [batch2], []], [0, 12, 20])
    assert rows == [window(1, 0, 10, 1), window(1, 10, 20, 2)]
    assert refused == [(2, 1), (3, 1)]


def test_hop_rows_refused_with_their_fanout() -> None:
    """HOP(5 s, 10 s): a row is in two windows (fanout 2); its late window refuses it with
    fanout 2, its open one takes it. Row 1 at 7 s is in [0, 10) and [5, 15); at W = 10 s the
    first is closed."""
    agg = group_agg("count(*) AS n", tvf="HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)")
    batch1 = arrivals(agg, [(1, 1, 6), (1, 1, 12)])
    batch2 = arrivals(agg, [(1, 1, 7), (1, 1, 8)], first_seq=2)
    rows, refused = run_batches(agg, [[batch1], [batch2], []], [0, 10, 30])
    assert sorted(rows) == [window(1, 0, 10, 1), window(1, 5, 15, 4), window(1, 10, 20, 1)]
    assert refused == [(2, 2), (3, 2)]


def test_rows_go_unfolded_where_folding_would_not_halve_them() -> None:
    agg = group_agg("count(*) AS n")
    (items,) = arrivals(agg, [(1, 1, 1)]).values()
    assert agg.combine(items) == items
    spread = [(a, 1, 1) for a in range(40)]  # 40 groups of one row each
    frames = arrivals(agg, spread)
    assert all(agg.combine(items) == items for items in frames.values())
    rows, _ = run_batches(agg, [[frames, arrivals(agg, spread, first_seq=40)], []], [0, 10])
    assert sorted(rows) == [window(a, 0, 10, 2) for a in range(40)]


def test_spark_stateless_step_sends_one_partial_per_group() -> None:
    """Spark's stateless step (the ``mapInPandas`` function, run here on a pandas frame as
    Spark hands it): 6 rows of 2 groups of one window cross the shuffle as 2 Partials, and
    under RisingWave's rule as the 6 rows."""
    ts = [BASE + s * S for s in (1, 2, 3, 4, 5, 6)]
    frame = pd.DataFrame({"auction": [1, 2, 1, 2, 1, 1], "price": [1, 2, 3, 4, 5, 6],
                          "ts": pd.to_datetime(ts, unit="us"), "_epoch": 0,
                          "_seq": [10, 11, 12, 13, 14, 15]})
    sql = BIDS + ("SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                  "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                  "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE")
    (spark_sends,) = stateless_part(sql, "spark")(iter([frame]))
    items = [i for payload in spark_sends["_arrival"] for i in unkeyed(payload)]
    assert sorted(items) == [Partial(window(1, 0, 10), [4, 15], [10, 12, 14, 15], [1, 1, 1, 1]),
                             Partial(window(2, 0, 10), [2, 6], [11, 13], [1, 1])]
    (risingwave_sends,) = stateless_part(sql, "risingwave")(iter([frame]))
    items = [i for payload in risingwave_sends["_arrival"] for i in unkeyed(payload)]
    assert sorted(i.seq for i in items) == [10, 11, 12, 13, 14, 15]


def test_at_scale_the_folded_group_aggregate_equals_the_reference() -> None:
    """2,000 epochs a second apart, 300 auctions (a group takes rows in several epochs),
    1-minute HOP windows sliding by 20 s and 1-minute TUMBLE windows, up to 40 s of disorder
    against a 30 s delay and one row in 20 up to 150 s behind (its windows closed), under
    Spark's and Flink's rules: the in-process executor, which folds each epoch's rows per group
    and merges them into its buckets, emits the reference interpreter's rows in the same epochs
    and refuses the same late rows, with a restart every 500 epochs."""
    rng = random.Random(38)
    source = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
              "WATERMARK FOR ts AS ts - INTERVAL '30' SECOND);\n")
    def lag_ms() -> int:  # 1 row in 20 up to 150 s behind, the others up to 40 s
        return rng.randrange(150_000 if rng.random() < 0.05 else 40_000)
    epochs = tuple(tuple(Event("bids", (rng.randrange(300), rng.randrange(-50, 1_000),
                                        BASE + max(0, e * S - lag_ms() * 1_000)))
                         for _ in range(rng.randrange(0, 30)))
                   for e in range(2_000))
    log = ArrivalLog(epochs)
    for tvf in ("HOP(bids, ts, INTERVAL '20' SECOND, INTERVAL '1' MINUTE)",
                "TUMBLE(bids, ts, INTERVAL '1' MINUTE)"):
        query = parse_script(source + "SELECT auction, window_start, window_end, count(*) AS n, "
                             f"sum(price) AS s, min(price) AS lo, avg(price) AS a FROM {tvf} "
                             "GROUP BY auction, window_start, window_end "
                             "EMIT ON WINDOW CLOSE").query
        for convention in (Convention.SPARK, Convention.FLINK):
            assert processor_for(query, convention).combines
            late: list[LateRow] = []
            expected = list(run_eowc(query, log, convention, close=True, late=late.append))
            run = run_in_process(query, log, convention, close=True,
                                 restart_after=range(499, 2_000, 500))
            assert len(expected) > 9_000 and len(late) > 100  # rows out, rows refused
            assert run.emissions == expected
            assert Counter(r.event for r in run.late) == Counter(r.event for r in late)
