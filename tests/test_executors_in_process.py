"""The EOWC executors (eowc.executors.processors) on the in-process driver, which models Spark's
micro-batch protocol: same output as the reference interpreter after every epoch, through
restarts, with bounded state; and the SortBuffer on its own.

Event times here are whole milliseconds: the executors use Spark's watermark, which truncates
``max(c)`` to the millisecond (SEMANTICS.md §4), so with sub-millisecond times the risingwave
and flink conventions would see a different watermark than the reference.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.processors import EowcGroupAgg, EowcSort, SortAgg, closing_timer_ms
from eowc.executors.sort_buffer import SortBuffer
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.ir.arrival import ArrivalLog, parse_arrival_log
from eowc.semantics.ir.windows import Window
from eowc.semantics.rules.triggers import Convention, time_is_complete, window_closes
from tests.strategies import MILLISECOND_FRACTIONS, arrival_logs, script

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
S, MS = 1_000_000, 1_000

QUERIES = {
    "tumble": "SELECT window_start, window_end, count(*) AS n, sum(price) AS s, min(price) AS lo, "
              "count(DISTINCT price) AS d, first_value(price) AS f, last_value(price) AS l "
              "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end "
              "EMIT ON WINDOW CLOSE",
    "hop_keyed": "SELECT auction, window_end, count(price) AS n, avg(price) AS a "
                 "FROM HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) "
                 "GROUP BY auction, window_end HAVING count(*) > 1 EMIT ON WINDOW CLOSE",
    "cumulate": "SELECT window_start, window_end, max(price) AS hi FROM "
                "TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '4' SECOND, "
                "INTERVAL '12' SECOND)) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
    "sort_agg": "SELECT window_start, median(price) AS m, "
                "percentile_cont(0.9) WITHIN GROUP (ORDER BY price) AS p90 "
                "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start "
                "EMIT ON WINDOW CLOSE",
    "group_by_time": "SELECT ts, auction, count(*) AS n FROM bids GROUP BY ts, auction "
                     "EMIT ON WINDOW CLOSE",
    "sort": "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE",
    "tvf_sort": "SELECT auction, ts, window_end FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                "EMIT ON WINDOW CLOSE",
    # seed 002 and the partitioned operators of eowc.executors.partitioned
    "over_rows": "SELECT auction, ts, price, sum(price) OVER (PARTITION BY auction ORDER BY ts "
                 "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s, lag(price, 2, -1) OVER "
                 "(PARTITION BY auction ORDER BY ts) AS l2, lead(price) OVER (PARTITION BY "
                 "auction ORDER BY ts) AS nx FROM bids EMIT ON WINDOW CLOSE",
    "over_range": "SELECT ts, price, avg(price) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '2' "
                  "SECOND PRECEDING AND INTERVAL '1' SECOND FOLLOWING) AS a, rank() OVER "
                  "(ORDER BY ts) AS r, dense_rank() OVER (ORDER BY ts) AS d, row_number() OVER "
                  "(ORDER BY ts) AS n FROM bids "
                  "EMIT ON WINDOW CLOSE",
    "over_unbounded": "SELECT auction, ts, first_value(price) OVER (PARTITION BY auction ORDER "
                      "BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS f, "
                      "count(*) OVER (PARTITION BY auction ORDER BY ts) AS c FROM bids "
                      "EMIT ON WINDOW CLOSE",
    "pattern": "SELECT * FROM bids MATCH_RECOGNIZE (PARTITION BY auction ORDER BY ts MEASURES "
               "FIRST(A.ts) AS first_ts, LAST(B.price) AS top, COUNT(B.price) AS ups "
               "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C?) DEFINE "
               "B AS B.price > PREV(B.price), C AS C.price < PREV(C.price)) AS m "
               "EMIT ON WINDOW CLOSE",
    "count_keyed": "SELECT auction, window_ordinal, window_start, window_end, count(*) AS n, "
                   "sum(price) AS s FROM TABLE(COUNT_TUMBLE(TABLE bids PARTITION BY auction, "
                   "DESCRIPTOR(ts), 3)) GROUP BY auction, window_ordinal, window_start, "
                   "window_end EMIT ON WINDOW CLOSE",
    "count_global": "SELECT window_ordinal, window_end, max(price) AS m FROM COUNT_HOP(bids, ts, "
                    "3, 2) GROUP BY window_ordinal, window_end EMIT ON WINDOW CLOSE",
    "session_keyed": "SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s "
                     "FROM TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), "
                     "INTERVAL '3' SECOND)) GROUP BY auction, window_start, window_end "
                     "EMIT ON WINDOW CLOSE",
    "session_across": "SELECT window_start, window_end, max(price) AS m FROM TABLE(SESSION("
                      "TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '2' SECOND)) "
                      "GROUP BY window_start, window_end HAVING count(*) > 1 "
                      "EMIT ON WINDOW CLOSE",
    "top_window": "SELECT window_start, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER "
                  "(PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM "
                  "HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE rn <= 2 "
                  "EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "auction ORDER BY ts) AS rn FROM bids) WHERE rn <= 2 EMIT ON WINDOW CLOSE",
}

MS_LOGS = arrival_logs(fractions=MILLISECOND_FRACTIONS)


def reference(name: str, convention: Convention, log: ArrivalLog) -> tuple[list, Counter]:
    late: list[LateRow] = []
    out = list(run_eowc(script(QUERIES[name]).query, log, convention, close=True, late=late.append))
    return out, Counter(r.event.row for r in late)


# ---------------------------------------------------------------- against the reference

@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None)
@given(log=MS_LOGS, data=st.data())
def test_executor_equals_the_reference_after_every_epoch(name: str, convention: Convention,
                                                         log: ArrivalLog, data: st.DataObject) -> None:
    """Same rows, same emission epochs, same order, same late rows; and the same again when
    the executor restarts (losing its in-memory caches) after any set of epochs."""
    expected, expected_late = reference(name, convention, log)
    run = run_in_process(script(QUERIES[name]).query, log, convention, close=True)
    assert run.emissions == expected
    assert Counter(r.event.row for r in run.late) == expected_late
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    again = run_in_process(script(QUERIES[name]).query, log, convention, close=True,
                           restart_after=restarts)
    assert again.emissions == expected


def test_the_executor_kinds_of_seed_000() -> None:
    assert isinstance(processor_for(script(QUERIES["tumble"]).query, RW), EowcGroupAgg)
    assert not isinstance(processor_for(script(QUERIES["tumble"]).query, RW), SortAgg)
    assert isinstance(processor_for(script(QUERIES["sort_agg"]).query, RW), SortAgg)
    assert isinstance(processor_for(script(QUERIES["sort"]).query, RW), EowcSort)


# ---------------------------------------------------------------- hand-computed

BID = ("CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR, "
       "WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);\n")


def bid(time: str, price: float, item: str) -> str:
    return json.dumps({"table": "bid", "row": {"bidtime": f"2020-04-15 {time}:00", "price": price,
                                               "item": item}})


def test_group_agg_hand_computed_with_a_late_row_under_spark() -> None:
    """TUMBLE 10 min, delay 1 min. Epoch 0: 08:05, 08:07 (W = 08:06). Epoch 1: 08:11
    (W = 08:10): [08:00, 08:10) closes, sum 6. Epoch 2: 08:09 arrives under W = 08:10; its
    window is closed, so Spark refuses it: late. Close: [08:10, 08:20) with 3."""
    sql = BID + ("SELECT window_start, SUM(price) AS total FROM TUMBLE(bid, bidtime, INTERVAL "
                 "'10' MINUTES) GROUP BY window_start EMIT ON WINDOW CLOSE")
    lines = [bid("08:05", 4.0, "C"), bid("08:07", 2.0, "A"), '{"barrier": true}',
             bid("08:11", 3.0, "B"), '{"barrier": true}', bid("08:09", 5.0, "D"), '{"barrier": true}']
    parsed = parse_script_and_log(sql, lines)
    run = run_in_process(parsed[0], parsed[1], SPARK, close=True)
    assert [(e.epoch, e.row[1]) for e in run.emissions] == [(1, 6.0), (3, 3.0)]
    assert [(r.epoch, r.event.row[2]) for r in run.late] == [(2, "D")]
    # after each epoch one open window: its bucket's value (the window's groups) and timer
    assert run.state_rows == [2, 2, 2]


def test_sort_agg_keeps_rows_until_the_window_closes() -> None:
    """median over [08:00, 08:10) of 4, 2, 5 = 4, emitted at the close; until then two state
    entries, the bucket's value (the window's group and its rows) and its timer."""
    sql = BID + ("SELECT window_start, MEDIAN(price) AS m FROM TUMBLE(bid, bidtime, INTERVAL "
                 "'10' MINUTES) GROUP BY window_start EMIT ON WINDOW CLOSE")
    lines = [bid("08:05", 4.0, "C"), bid("08:07", 2.0, "A"), bid("08:09", 5.0, "D")]
    query, log = parse_script_and_log(sql, lines)
    run = run_in_process(query, log, RW, close=True)
    assert [(e.epoch, e.row[1]) for e in run.emissions] == [(3, 4.0)]
    assert run.state_rows == [2, 2, 2]


def parse_script_and_log(sql: str, lines: list[str]):
    from eowc.semantics.frontend.sql import parse_script
    parsed = parse_script(sql)
    return parsed.query, parse_arrival_log(lines, parsed.sources).log


@pytest.mark.parametrize(("convention", "bound", "expected_ms"), [
    # window [0, 10 s): RisingWave and Spark close at W >= 10 s; Flink at W >= 10 s - 1 ms.
    (RW, Window(0, 10 * S), 10_000), (SPARK, Window(0, 10 * S), 10_000),
    (FLINK, Window(0, 10 * S), 9_999),
])
def test_closing_timer_of_a_window(convention: Convention, bound: Window, expected_ms: int) -> None:
    assert closing_timer_ms(lambda b, w: window_closes(b, w, convention), bound) == expected_ms


@pytest.mark.parametrize(("convention", "expected_ms"), [(RW, 5_001), (SPARK, 5_000), (FLINK, 5_000)])
def test_closing_timer_of_an_event_time(convention: Convention, expected_ms: int) -> None:
    """t = 5 s: RisingWave needs W > t (5.001 s at millisecond watermarks), Spark/Flink W >= t."""
    assert closing_timer_ms(lambda b, w: time_is_complete(b, w, convention), 5 * S) == expected_ms


# ---------------------------------------------------------------- bounded state

def test_state_stays_bounded_by_the_open_windows() -> None:
    """2,000 in-order rows, 10 per second, TUMBLE 10 s, delay 5 s: at most two windows are
    open at any time, so state never holds more than two groups (the query groups by the
    window: each in a bucket of its own, a value and a timer), after 200 or 2,000 rows."""
    from eowc.semantics.ir.arrival import Event
    from tests.strategies import BASE
    log = ArrivalLog(tuple((Event("bids", (1, 1, BASE + i * S // 10)),) for i in range(2_000)))
    run = run_in_process(script(QUERIES["tumble"]).query, log, RW)
    assert max(run.state_rows) <= 4
    assert run.state_rows[199] == run.state_rows[1_999]


# ---------------------------------------------------------------- SortBuffer

def buffer() -> tuple[SortBuffer, MemoryStore]:
    store = MemoryStore()
    store.current_key = ()
    return SortBuffer(memory_handle(store).map_state("b")), store


def test_rows_with_equal_sort_keys_all_come_out() -> None:
    """Ten rows at t = 5 in three runs, then a row at 6: a buffer that resumed "after the
    last drained sort key" (5) would skip rows still in state. All ten come out, then 6."""
    sort_buffer, _ = buffer()
    sort_buffer.insert([((5, (), seq), f"row{seq}") for seq in (0, 3, 6, 9)])
    sort_buffer.insert([((5, (), seq), f"row{seq}") for seq in (1, 4, 7)])
    sort_buffer.insert([((5, (), seq), f"row{seq}") for seq in (2, 5, 8)] + [((6, (), 10), "later")])
    out = [row for _, row in sort_buffer.drain(lambda t: t <= 5)]
    assert out == [f"row{seq}" for seq in range(10)]
    assert [row for _, row in sort_buffer.drain(lambda t: t <= 6)] == ["later"]


def test_sort_buffer_keeps_one_entry_per_run() -> None:
    """A run per insert, and a drain leaves what remains of the runs it read as one run:
    the state holds entries per micro-batch, not per row."""
    sort_buffer, store = buffer()
    sort_buffer.insert([((t, (), t), t) for t in range(0, 100, 2)])
    sort_buffer.insert([((t, (), t), t) for t in range(1, 100, 2)])
    assert store.size() == 2
    assert [row for _, row in sort_buffer.drain(lambda t: t < 10)] == list(range(10))
    assert store.size() == 1
    assert sort_buffer.first() == (10, (), 10)


def test_sort_buffer_rebuilds_its_cache_from_state() -> None:
    sort_buffer, store = buffer()
    for seq, t in enumerate([3, 1, 2, 5, 4]):
        sort_buffer.insert([((t, (), seq), t)])
    assert [row for _, row in sort_buffer.drain(lambda t: t <= 1)] == [1]
    restarted = SortBuffer(memory_handle(store).map_state("b"))
    assert [row for _, row in restarted.drain(lambda t: t <= 4)] == [2, 3, 4]
    assert store.size() == 1


class WritesRecorded:
    """A map state that records the keys written to it."""

    def __init__(self, table: Any) -> None:
        self.table, self.written = table, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)

    def put(self, key: Any, value: Any) -> None:
        self.written.append(key)
        self.table.put(key, value)


def test_insert_and_drain_keeps_only_the_rows_still_incomplete() -> None:
    """Rows at 1 and 4 buffered; new rows at 2, 3 and 6, drained up to 3: out come 1, 2, 3
    in order, the new rows at 2 and 3 never written; the table keeps 4 and 6."""
    store = MemoryStore()
    store.current_key = ()
    table = WritesRecorded(memory_handle(store).map_state("b"))
    sort_buffer = SortBuffer(table)
    sort_buffer.insert([((1, 0), "a"), ((4, 1), "b")])
    out = sort_buffer.insert_and_drain([((3, 2), "c"), ((6, 3), "d"), ((2, 4), "e")],
                                       lambda t: t <= 3)
    assert out == [((1, 0), "a"), ((2, 4), "e"), ((3, 2), "c")]
    assert table.written == [(1, 0), (6, 3), (4, 1)]  # the old run, the new rest, the old rest
    assert [row for _, row in sort_buffer.drain(lambda t: True)] == ["b", "d"]


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("insert"), st.lists(st.integers(0, 6), max_size=4)),
    st.tuples(st.just("delete"), st.integers(0, 40)),
    st.tuples(st.just("drain"), st.integers(-1, 7)),
    st.tuples(st.just("insert_and_drain"), st.tuples(st.lists(st.integers(0, 6), max_size=4),
                                                     st.integers(-1, 7))),
    st.tuples(st.just("restart"), st.just(0))), max_size=60))
def test_sort_buffer_equals_a_sorted_list(ops: list[tuple[str, Any]]) -> None:
    """Any sequence of inserts (runs of rows), deletes, drains, inserts-and-drains and
    restarts: the buffer drains exactly what a plain sorted list of the same keys would, in
    the same order."""
    sort_buffer, store = buffer()
    model: list[tuple[int, tuple, int]] = []
    rows_in_state = 0
    for seq, (op, value) in enumerate(ops):
        if op == "insert":
            keys = [(t, (), seq * 10 + i) for i, t in enumerate(value)]
            sort_buffer.insert([(key, key[2]) for key in keys])
            model += keys
        elif op == "delete" and value < len(model):
            key = sorted(model)[value]
            sort_buffer.delete(key)
            model.remove(key)
        elif op == "drain":
            expected = [k for k in sorted(model) if k[0] <= value]
            assert [k for k, _ in sort_buffer.drain(lambda t, v=value: t <= v)] == expected
            model = [k for k in model if k[0] > value]
        elif op == "insert_and_drain":
            times, upto = value
            keys = [(t, (), seq * 10 + i) for i, t in enumerate(times)]
            model += keys
            expected = [k for k in sorted(model) if k[0] <= upto]
            out = sort_buffer.insert_and_drain([(key, key[2]) for key in keys],
                                               lambda t, v=upto: t <= v)
            assert [k for k, _ in out] == expected
            model = [k for k in model if k[0] > upto]
        elif op == "restart":
            sort_buffer = SortBuffer(memory_handle(store).map_state("b"))
    rows_in_state = sum(len(run) for run in store.maps.get(("b", ()), {}).values())
    assert rows_in_state == len(model)
