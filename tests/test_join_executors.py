"""The join executor (executors/composed.py: joins and UNION ALL) on the in-process driver: the
same rows in the same epochs, in the same order, and the same late rows as the reference after
every epoch, under every convention, through restarts; what it refuses; state that stays
bounded; an idle side.

The logs are tests/test_joins.py's two-source logs (whole milliseconds: the driver models
Spark's millisecond watermark)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.executors.choice import processor_for
from eowc.executors.composed import ComposedExecutor
from eowc.executors.driver import run_in_process
from eowc.executors.interval_join import SideTables
from eowc.executors.multi_input import join_sides
from eowc.executors.processors import EowcGroupAgg
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.errors import PlanError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.rules.triggers import Convention
from tests.strategies import script_once
from tests.test_joins import QUERIES, SOURCES, at, query, two_source_logs

#: Operators above a join or a union, run in the join's shard (executors/nested.py); the
#: queries of tests/test_joins.py add the subqueries below a join (aggregates_left: seed 004's
#: window join of window aggregates) and an aggregate over a union (union_tumble).
ABOVE = {
    "window_join_count": "SELECT window_start, window_end, count(*) AS n, sum(w) AS s FROM ("
                         "SELECT l.window_start, l.window_end, l.k, v, w FROM "
                         "(SELECT * FROM TUMBLE(a, ts, INTERVAL '5' SECOND)) l JOIN "
                         "(SELECT * FROM TUMBLE(b, ts, INTERVAL '5' SECOND)) r "
                         "ON l.window_start = r.window_start AND l.window_end = r.window_end "
                         "AND l.k = r.k) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
    "join_over": "SELECT ts, k, sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 "
                 "PRECEDING AND CURRENT ROW) AS s FROM (SELECT a.ts AS ts, a.k AS k, v FROM a "
                 "LEFT JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND "
                 "b.ts + INTERVAL '4' SECOND) EMIT ON WINDOW CLOSE",
    "union_top_n": "SELECT * FROM (SELECT window_start, window_end, ts, v, row_number() OVER "
                   "(PARTITION BY window_start, window_end ORDER BY v DESC) AS rn FROM "
                   "TUMBLE((SELECT ts, v FROM a UNION ALL SELECT ts, w FROM b), ts, "
                   "INTERVAL '4' SECOND)) WHERE rn <= 2 EMIT ON WINDOW CLOSE",
}
RUN = sorted([*QUERIES, *ABOVE])


def query_of(name: str) -> Query:
    return script_once(SOURCES + ABOVE[name] + ";").query if name in ABOVE else query(name)


@pytest.mark.parametrize("convention", list(Convention), ids=lambda c: c.value)
@pytest.mark.parametrize("name", RUN)
@settings(max_examples=40, deadline=None)
@given(log=two_source_logs(), data=st.data())
def test_the_join_executor_equals_the_reference_after_every_epoch(
        name: str, convention: Convention, log: ArrivalLog, data: st.DataObject) -> None:
    late: list[LateRow] = []
    expected = list(run_eowc(query_of(name), log, convention, close=True, late=late.append))
    run = run_in_process(query_of(name), log, convention, close=True)
    assert run.emissions == expected
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    assert run_in_process(query_of(name), log, convention, close=True,
                          restart_after=restarts).emissions == expected


def test_the_operators_around_a_join_run_in_its_shard() -> None:
    """Seed 004's window join of two window aggregates: each aggregate is the EowcGroupAgg of
    its source, run in the join's shard under that source's watermark; the GROUP BY over a
    window join is an EowcGroupAgg under the join's derived watermark."""
    below = processor_for(query("aggregates_left"), Convention.SPARK)
    assert isinstance(below, ComposedExecutor) and below.upper is None
    assert [type(h.executor.processor) for h in below.below] == [EowcGroupAgg, EowcGroupAgg]
    above = processor_for(query_of("window_join_count"), Convention.SPARK)
    assert isinstance(above, ComposedExecutor) and not above.below
    assert above.upper is not None and type(above.upper.processor) is EowcGroupAgg


def test_a_join_without_emit_on_window_close_is_refused_by_name() -> None:
    sql = QUERIES["interval_INNER"].replace(" EMIT ON WINDOW CLOSE", "")
    with pytest.raises(PlanError, match="under EMIT ON WINDOW CLOSE only"):
        processor_for(parse_script(SOURCES + sql + ";").query, Convention.SPARK)


def test_an_outer_row_of_an_idle_side_waits_for_the_other_sides_watermark() -> None:
    """LEFT join, a.ts BETWEEN b.ts - 2 s AND b.ts + 4 s. b falls silent after t=0: its
    watermark stays at -5 s, so a's unmatched row at t=10 can still meet a b row with
    b.ts in [6 s, 12 s] and is not emitted, however far a's own watermark moves; the
    semantics says so (an outer row is emitted only when no row can still match it). It
    comes out at the end of the input, or once b's watermark passes 12 s."""
    events = [(Event("b", (at(0), 1, 1)),), (Event("a", (at(10), 2, 5)),)] + \
        [(Event("a", (at(20 + i), 3, i)),) for i in range(5)]
    log = ArrivalLog(tuple(events))
    unmatched = (at(10), None, 2, 5, None)
    open_run = run_in_process(query("interval_LEFT"), log, Convention.RISINGWAVE)
    assert unmatched not in [e.row for e in open_run.emissions]
    closed = run_in_process(query("interval_LEFT"), log, Convention.RISINGWAVE, close=True)
    assert (len(log.epochs), unmatched) in [(e.epoch, e.row) for e in closed.emissions]
    moved = ArrivalLog((*log.epochs, (Event("b", (at(30), 9, 0)),)))
    assert (len(log.epochs), unmatched) in [
        (e.epoch, e.row) for e in run_in_process(query("interval_LEFT"), moved,
                                                 Convention.RISINGWAVE).emissions]


@pytest.mark.parametrize(("name", "rows_out"), [("interval_FULL", 1_000),
                                              ("aggregates_left", 150), ("join_over", 1_000),
                                              ("window_join_count", 50)])
def test_join_state_stays_bounded(name: str, rows_out: int) -> None:
    """3,000 rows, both sides in step, 3 keys: the kept rows, buffered output and the state
    of the executors below and above the join after 300 and after 3,000 rows are the same
    size (bytes, within 10%)."""
    events = []
    for i in range(3_000):
        table = "ab"[i % 2]
        events.append(Event(table, (at(i / 10 - ((i * 7919) % 20) / 10), i % 3, i % 17)))
    log = ArrivalLog(tuple(tuple(events[i:i + 10]) for i in range(0, len(events), 10)))
    run = run_in_process(query_of(name), log, Convention.SPARK, measure_bytes=True)
    assert max(run.state_bytes[280:300]) <= max(run.state_bytes[20:40]) * 1.1
    assert len(run.emissions) > rows_out


def test_a_join_tries_only_the_partners_within_its_reach() -> None:
    """``a.ts BETWEEN b.ts - 2 s AND b.ts + 4 s``: a left row with ``until = a.ts + 2 s``
    meets right rows with ``b.ts <= a.ts + 2 s``, whose ``until = b.ts + 4 s`` is at most its
    own plus 4 s (``left_reach``); a right row (``until = b.ts + 4 s``) meets left rows with
    ``a.ts <= b.ts + 4 s``, whose ``until`` is at most its own plus 2 s (``right_reach``).
    Bounds on different columns give no reach on that side."""
    sides = join_sides(query("interval_INNER").plan.input, Convention.RISINGWAVE)
    assert (sides.left_reach, sides.right_reach) == (4 * MICROS_PER_SECOND, 2 * MICROS_PER_SECOND)
    windows = parse_script(SOURCES + "SELECT l.ts, r.ts AS rts FROM (SELECT * FROM TUMBLE(a, ts, "
                           "INTERVAL '5' SECOND)) l JOIN (SELECT * FROM TUMBLE(b, ts, INTERVAL '5' "
                           "SECOND)) r ON l.k = r.k AND l.ts >= r.window_start AND l.ts <= "
                           "r.window_end EMIT ON WINDOW CLOSE;").query
    sides = join_sides(windows.plan.input, Convention.RISINGWAVE)
    assert (sides.left_reach, sides.right_reach) == (None, 0)


def test_a_shards_state_table_is_one_value_and_format_1_tables_move_into_it() -> None:
    """Format 1 kept a side's state table as a map entry per equality key; the shard's first
    read moves them into its one value (a dict by key), the map is emptied, and a key left
    without rows leaves the value."""
    store = MemoryStore()
    handle = memory_handle(store)
    sides = join_sides(query("interval_INNER").plan.input, Convention.RISINGWAVE)
    store.current_key = (7,)
    format_1 = handle.map_state("j.left.state")
    one, two = {(at(3), 1): [(at(1), 1, 10), False]}, {(at(4), 2): [(at(2), 2, 11), True]}
    format_1.put((1,), one)
    format_1.put((2,), two)
    tables = SideTables(handle, "j.left", sides, left=True)
    tables.enter((7,))
    assert tables.rows_of((1,)) == one
    tables.rows_of((2,)).clear()  # its rows consumed
    tables.dirty.add((2,))
    tables.flush()
    assert list(format_1.keys()) == []
    assert handle.value_state("j.left.table").get() == {(1,): one}


def test_the_partners_at_the_edge_of_the_reach_are_met() -> None:
    """One epoch: b at 0, 6 and 12 s, a at 4 s (key 1). After it, a's ``until`` (6 s) is
    complete under b's watermark (12 - 5 = 7 s), b's (4, 10, 16 s) not under a's (1 s): the a
    row is consumed first and tries the b rows with ``until <= 6 + 4 s``, b at 0 and 6 s, both
    on an edge of the BETWEEN and both met; b at 12 s is beyond it."""
    log = ArrivalLog(((Event("b", (at(0), 1, 10)), Event("b", (at(6), 1, 11)),
                       Event("b", (at(12), 1, 12)), Event("a", (at(4), 1, 7))),))
    run = run_in_process(query("interval_INNER"), log, Convention.SPARK, close=True)
    assert [e.row for e in run.emissions] == [(at(4), at(0), 1, 7, 10), (at(4), at(6), 1, 7, 11)]
    assert run.emissions == list(run_eowc(query("interval_INNER"), log, Convention.SPARK, close=True))


def test_flinks_interval_join_at_scale_equals_the_reference_with_bounded_state() -> None:
    """2,000 epochs, 40,000 rows over 100,000 keys, disorder beyond both delays (many rows late
    for their table, which Flink's interval join keeps and judges itself): the join executor
    gives the reference's rows, and the reference's join state stays bounded."""
    import random

    from eowc.semantics.engines.dataflow import compile_dataflow, join_arrivals
    from eowc.semantics.operators.logical import StreamJoin

    q, flink, draw = query("interval_LEFT"), Convention.FLINK, random.Random(1)
    events = [Event("a" if draw.random() < 0.5 else "b",
                    (at(i / 10 + draw.uniform(-8, 1)), draw.randrange(100_000), i))
              for i in range(40_000)]
    log = ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, len(events), 20)))
    expected = list(run_eowc(q, log, flink, close=True))
    assert len(expected) > 20_000 and any(e.row[1] is not None for e in expected)
    assert run_in_process(q, log, flink, close=True).emissions == expected
    flow = compile_dataflow(q, flink, eowc=True, arrivals=join_arrivals(q, log, flink))
    (join,) = [n.operator for n in flow.nodes if isinstance(n.operator, StreamJoin)]
    sizes = [join.state_rows for _ in flow.epochs(log, flink)]
    assert max(sizes[100:]) <= 150  # 10 rows/s; a 6 s bound plus the delays: about 80 rows
