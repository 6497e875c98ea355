"""Sessions read row by row (docs/operators/over.md, docs/operators/session.md), in both modes:

* RisingWave's session frames, ``f(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP g)``:
  each row's value over the session it belongs to (the rows of its partition whose
  consecutive times are less than ``g`` apart); under EOWC a row is final once its session is
  closed (``session_is_closed``), on update its rows change as sessions grow and merge;
* Flink's SESSION window TVF without a GROUP BY: every row with its session's
  window_start, window_end and window_time, emitted once the session closes.

Hand-computed examples (RisingWave's docs and e2e test, Flink's docs are the corpus cases in
tests/docs_corpus); hypothesis properties of the rule; the reference against the DuckDB
oracle and the in-process executors on random logs with late rows and restarts; mutants of
the executors caught.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import fields, replace

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.interface import EowcProcessor
from eowc.executors.over_window import OverFunctions, OverRows, session_span
from eowc.executors.partitioned import EowcOverWindow, EowcSession, OverWindowChangelog, SessionChangelog
from eowc.executors.plan import executor_plan
from eowc.semantics.engines.interpreter import LateRow, run_eowc, run_update, snapshots
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Frame, Query
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.ir.windows import Window
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import (
    Convention,
    frame_is_complete,
    session_is_closed,
    session_last_open_time,
    time_is_complete,
    window_closes,
)
from tests.strategies import BASE, MILLISECOND_FRACTIONS, arrival_logs, script

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
S = 1_000_000
MINUTE = 60 * S


def at(clock: str) -> int:
    return parse_timestamp(f"2023-05-06 {clock}")


def eowc_rows(query: Query, log: ArrivalLog, convention: Convention = RW,
              close: bool = False) -> list[tuple[int, Row]]:
    return [(e.epoch, e.row) for e in run_eowc(query, log, convention, close)]


def update_snapshots(query: Query, log: ArrivalLog, convention: Convention = RW) -> list[list[Row]]:
    return snapshots(list(run_update(query, log, convention)), len(log.epochs))


# ------------------------------------------------------------------- hand-computed examples

TABLE = """CREATE TABLE t (tm TIMESTAMP, foo INT, bar INT,
    WATERMARK FOR tm AS tm - INTERVAL '5 minutes') APPEND ONLY;
"""
FRAMES = ("SELECT *, first_value(tm) OVER (PARTITION BY bar ORDER BY tm SESSION WITH GAP "
          "'10 minutes') AS window_start, last_value(tm) OVER (PARTITION BY bar ORDER BY tm "
          "SESSION WITH GAP '10 minutes') AS window_end, sum(foo) OVER (PARTITION BY bar ORDER "
          "BY tm SESSION WITH GAP '10 minutes') AS total FROM t")


def _t(*rows: tuple[str, int, int]) -> list[Event]:
    return [Event("t", (at(tm), foo, bar)) for tm, foo, bar in rows]


#: eowc_over_window.slt's inserts (RisingWave's e2e test of EOWC session frames).
SLT_LOG = ArrivalLog((
    tuple(_t(("16:51:00", 1, 100), ("16:56:00", 8, 100), ("17:30:00", 3, 200),
             ("17:35:00", 5, 100), ("17:59:00", 4, 100), ("18:01:00", 6, 200))),
    tuple(_t(("18:10:00", 7, 100), ("18:11:00", 9, 200))),
))


def _row(tm: str, foo: int, bar: int, start: str, end: str, total: int) -> Row:
    return (at(tm), foo, bar, at(start), at(end), total)


def test_eowc_emits_a_row_once_its_session_is_closed() -> None:
    """By hand (gap 10 minutes, watermark tm - 5 minutes). Epoch 0: W = 17:56; bar 100 has
    sessions {16:51, 16:56} (closed: 16:56 + 10 <= 17:56), {17:35} (17:45 <= 17:56: closed)
    and {17:59} (open); bar 200 {17:30} (closed) and {18:01}. Epoch 1: W = 18:06; 18:10 is
    11 minutes after 17:59 and 18:11 exactly 10 after 18:01: new sessions, and 17:59's closes
    only at 18:09. The close releases the four one-row sessions."""
    query = parse_script(TABLE + FRAMES + " EMIT ON WINDOW CLOSE").query
    out = eowc_rows(query, SLT_LOG)
    assert out == [(0, _row("16:51:00", 1, 100, "16:51:00", "16:56:00", 9)),
                   (0, _row("16:56:00", 8, 100, "16:51:00", "16:56:00", 9)),
                   (0, _row("17:30:00", 3, 200, "17:30:00", "17:30:00", 3)),
                   (0, _row("17:35:00", 5, 100, "17:35:00", "17:35:00", 5))]
    closed = eowc_rows(query, SLT_LOG, close=True)
    assert closed[4:] == [(2, _row("17:59:00", 4, 100, "17:59:00", "17:59:00", 4)),
                          (2, _row("18:01:00", 6, 200, "18:01:00", "18:01:00", 6)),
                          (2, _row("18:10:00", 7, 100, "18:10:00", "18:10:00", 7)),
                          (2, _row("18:11:00", 9, 200, "18:11:00", "18:11:00", 9))]
    later = ArrivalLog(SLT_LOG.epochs + (tuple(_t(("18:07:00", 2, 100))),))
    assert eowc_rows(query, later, close=True)[4:7] == [
        (3, _row("17:59:00", 4, 100, "17:59:00", "18:10:00", 13)),
        (3, _row("18:01:00", 6, 200, "18:01:00", "18:01:00", 6)),
        (3, _row("18:07:00", 2, 100, "17:59:00", "18:10:00", 13))]


def test_on_update_a_row_between_two_sessions_merges_them() -> None:
    """16:00 and 16:12 are two sessions (12 minutes apart); 16:06 joins both: one session,
    every row's values change."""
    query = parse_script(TABLE.replace("5 minutes", "1 hour") + FRAMES).query
    log = ArrivalLog((tuple(_t(("16:00:00", 1, 1), ("16:12:00", 2, 1))),
                      tuple(_t(("16:06:00", 4, 1)))))
    snaps = update_snapshots(query, log)
    assert snaps[0] == [_row("16:00:00", 1, 1, "16:00:00", "16:00:00", 1),
                        _row("16:12:00", 2, 1, "16:12:00", "16:12:00", 2)]
    assert snaps[1] == [_row("16:00:00", 1, 1, "16:00:00", "16:12:00", 7),
                        _row("16:06:00", 4, 1, "16:00:00", "16:12:00", 7),
                        _row("16:12:00", 2, 1, "16:00:00", "16:12:00", 7)]


def test_rows_exactly_a_gap_apart_are_two_sessions() -> None:
    """RisingWave starts a new session at ``t >= last + gap`` (its WindowBuffer's
    ``minimal_next_start_of``): 10 minutes apart is two sessions, 9:59.999999 one."""
    query = parse_script(TABLE + FRAMES).query
    apart = ArrivalLog((tuple(_t(("16:00:00", 1, 1), ("16:10:00", 2, 1))),))
    assert [r[5] for r in update_snapshots(query, apart)[-1]] == [1, 2]
    near = ArrivalLog(((Event("t", (at("16:00:00"), 1, 1)),
                        Event("t", (at("16:10:00") - 1, 2, 1))),))
    assert [r[5] for r in update_snapshots(query, near)[-1]] == [3, 3]


def test_exclude_current_row_in_a_session_frame() -> None:
    sql = ("SELECT tm, count(*) OVER (ORDER BY tm SESSION WITH GAP INTERVAL '10' MINUTE "
           "EXCLUDE CURRENT ROW) AS others FROM t")
    query = parse_script(TABLE + sql).query
    log = ArrivalLog((tuple(_t(("16:00:00", 1, 1), ("16:05:00", 2, 1), ("16:30:00", 3, 1))),))
    assert update_snapshots(query, log)[-1] == [(at("16:00:00"), 1), (at("16:05:00"), 1),
                                                (at("16:30:00"), 0)]


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT first_value(foo) OVER (ORDER BY tm DESC SESSION WITH GAP '1 minute') AS f FROM t",
     "a SESSION frame needs exactly one ORDER BY column, ascending"),
    ("SELECT first_value(foo) OVER (ORDER BY tm, foo SESSION WITH GAP '1 minute') AS f FROM t",
     "a SESSION frame needs exactly one ORDER BY column, ascending"),
    ("SELECT first_value(foo) OVER (ORDER BY tm SESSION WITH GAP foo) AS f FROM t",
     "the gap of a SESSION frame is a constant interval"),
])
def test_bad_session_frames_are_refused_by_name(sql: str, message: str) -> None:
    with pytest.raises(EowcError, match=message):
        _ = parse_script(TABLE + sql).query.schema


def test_the_frame_prints_as_sql() -> None:
    frame = Frame("session", None, None, "current row", gap=5 * MINUTE)
    assert frame.sql() == "SESSION WITH GAP INTERVAL '300000000' MICROSECOND EXCLUDE CURRENT ROW"
    with pytest.raises(EowcError):
        Frame("session", None, None)


BID = """CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND);
"""
TVF = "SELECT * FROM TABLE(SESSION(TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))"


def test_the_session_tvf_without_group_by_emits_a_session_when_it_closes() -> None:
    """Flink (window_closes at end - 1 ms). A at 08:06, 08:07: session [08:06, 08:12); B at
    08:09: [08:09, 08:14). Epoch 1 brings 08:11 (A: now [08:06, 08:16)) and a B row at
    08:15 (a new session: 08:09 + 5 minutes is not after it): W = 08:14:59 closes B's
    [08:09, 08:14) only; the close the others."""
    query = parse_script(BID + TVF + " EMIT ON WINDOW CLOSE", dialect="flink").query

    def bid(clock: str, item: str) -> Event:
        return Event("Bid", (parse_timestamp(f"2020-04-15 {clock}"), 1, item))
    log = ArrivalLog(((bid("08:07:00", "A"), bid("08:06:00", "A"), bid("08:09:00", "B")),
                      (bid("08:11:00", "A"), bid("08:15:00", "B"))))
    out = eowc_rows(query, log, FLINK, close=True)
    ts = lambda clock: parse_timestamp(f"2020-04-15 {clock}")  # noqa: E731
    assert [(e, r[0], r[2], r[3], r[4]) for e, r in out] == [
        (1, ts("08:09:00"), "B", ts("08:09:00"), ts("08:14:00")),
        (2, ts("08:06:00"), "A", ts("08:06:00"), ts("08:16:00")),
        (2, ts("08:07:00"), "A", ts("08:06:00"), ts("08:16:00")),
        (2, ts("08:11:00"), "A", ts("08:06:00"), ts("08:16:00")),
        (2, ts("08:15:00"), "B", ts("08:15:00"), ts("08:20:00"))]
    assert out[0][1][5] == ts("08:14:00") - 1000  # window_time: end - 1 ms


# ------------------------------------------------------------------------- the rule

@settings(max_examples=300, deadline=None)
@given(last=st.integers(0, 10_000), gap=st.integers(1, 500), watermark=st.integers(-10, 11_000),
       convention=st.sampled_from([RW, SPARK, FLINK]))
def test_a_closed_session_admits_no_row_still_to_come(last: int, gap: int, watermark: int,
                                                      convention: Convention) -> None:
    """session_is_closed iff no time that can still arrive (one not complete) joins the
    session (is below last + gap); it is frame_is_complete of session_last_open_time; under
    RisingWave it is window_closes of [first, last + gap)."""
    closed = session_is_closed(last, gap, watermark, convention)
    joiners = [t for t in range(last, last + gap) if not time_is_complete(t, watermark, convention)]
    assert closed == (not joiners)
    assert closed == frame_is_complete(session_last_open_time(last, gap), watermark, convention)
    if convention is RW:
        assert closed == window_closes(Window(last - gap, last + gap), watermark, convention)


# ----------------------------------------------------- properties on random logs, three ways

FRAME_QUERIES = [
    "SELECT auction, price, ts, first_value(price) OVER (PARTITION BY auction ORDER BY ts "
    "SESSION WITH GAP INTERVAL '4' SECOND) AS f, last_value(ts) OVER (PARTITION BY auction "
    "ORDER BY ts SESSION WITH GAP INTERVAL '4' SECOND) AS l FROM bids",
    "SELECT ts, sum(price) OVER (ORDER BY ts SESSION WITH GAP INTERVAL '3' SECOND) AS s, "
    "count(*) OVER (ORDER BY ts SESSION WITH GAP INTERVAL '3' SECOND EXCLUDE CURRENT ROW) AS n, "
    "max(price) OVER (ORDER BY ts SESSION WITH GAP INTERVAL '6' SECOND) AS m, row_number() "
    "OVER (ORDER BY ts) AS rn FROM bids",
    "SELECT auction, ts, avg(price) OVER (PARTITION BY auction ORDER BY ts SESSION WITH GAP "
    "INTERVAL '2' SECOND) AS a FROM bids",
]
TVF_QUERIES = [
    "SELECT * FROM TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '4' "
    "SECOND))",
    "SELECT auction, price, window_start, window_end FROM TABLE(SESSION(TABLE bids, "
    "DESCRIPTOR(ts), INTERVAL '3' SECOND)) WHERE price > 2",
]
QUERIES = FRAME_QUERIES + TVF_QUERIES


def _queries(which: int) -> tuple[Query, Query]:
    """The query under EOWC and on update (a Flink SESSION TVF without EMIT is EOWC, as Flink
    runs it: its update mode is asked for)."""
    return (script(QUERIES[which] + " EMIT ON WINDOW CLOSE;").query,
            replace(script(QUERIES[which] + ";").query, emit_on_window_close=False))


@settings(max_examples=80, deadline=None)
@given(logs=arrival_logs(), which=st.integers(0, len(QUERIES) - 1),
       convention=st.sampled_from([RW, SPARK, FLINK]))
def test_eowc_is_append_only_and_ends_as_the_update_result(logs: ArrivalLog, which: int,
                                                           convention: Convention) -> None:
    """EOWC emits each row once, in non-decreasing epochs; after the close its rows are the
    emit-on-update result after the last epoch; at every epoch the EOWC output so far is
    contained in the update result then (a released row is final: its session never grows
    again)."""
    eowc, update = _queries(which)
    out = eowc_rows(eowc, logs, convention, close=True)
    event(f"rows: {'some' if out else 'none'}")
    assert [e for e, _ in out] == sorted(e for e, _ in out)
    snaps = update_snapshots(update, logs, convention)
    assert Counter(r for _, r in out) == (Counter(snaps[-1]) if snaps else Counter())
    for epoch, snap in enumerate(snaps):
        assert Counter(r for e, r in out if e <= epoch) <= Counter(snap)


@settings(max_examples=60, deadline=None)
@given(logs=arrival_logs(), which=st.integers(0, len(QUERIES) - 1),
       convention=st.sampled_from([RW, SPARK, FLINK]))
def test_the_reference_equals_the_duckdb_oracle(logs: ArrivalLog, which: int,
                                               convention: Convention) -> None:
    """The reference's EOWC output after the last epoch, and at the close, is DuckDB's
    (sessions numbered by lag and a running sum, the frame the whole session)."""
    query = _queries(which)[0]
    for close in (False, True):
        reference = Counter(row for _, row in eowc_rows(query, logs, convention, close))
        assert reference == oracle_eowc(query, logs, convention, close)


def test_each_mode_has_its_executor() -> None:
    frames_eowc, frames_update = _queries(0)
    tvf_eowc, tvf_update = _queries(len(FRAME_QUERIES))
    assert type(processor_for(frames_eowc, RW)) is EowcOverWindow
    assert type(processor_for(frames_update, RW)) is OverWindowChangelog
    assert type(processor_for(tvf_eowc, RW)) is EowcSession
    assert type(processor_for(tvf_update, RW)) is SessionChangelog


@settings(max_examples=50, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS), which=st.integers(0, len(QUERIES) - 1),
       convention=st.sampled_from([RW, SPARK, FLINK]), data=st.data())
def test_the_executor_equals_the_reference_through_restarts(
        log: ArrivalLog, which: int, convention: Convention, data: st.DataObject) -> None:
    """EOWC: the same rows in the same epochs and order, the same late rows, with restarts
    anywhere; emit on update: the same changelog."""
    eowc, update = _queries(which)
    late: list[LateRow] = []
    expected = list(run_eowc(eowc, log, convention, close=True, late=late.append))
    restarts = data.draw(st.sets(st.integers(0, max(len(log.epochs) - 1, 0))), label="restarts")
    run = run_in_process(eowc, log, convention, close=True, restart_after=restarts)
    assert [(e.epoch, e.row) for e in run.emissions] == [(e.epoch, e.row) for e in expected]
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    changes = run_in_process(update, log, convention, restart_after=restarts).changes
    assert snapshots(changes, len(log.epochs)) == update_snapshots(update, log, convention)


# --------------------------------------------------------------------------- mutants

class _SessionClosedAtItsLastRow(OverFunctions):
    """A mutant: a row's session counts as closed once its last row's time is complete, the
    gap forgotten, as if no later row could still join it."""

    def waits_for(self, part: OverRows, i: int) -> int | None:
        (gap,) = self.session_gaps
        return part.values[session_span(gap, part.values, i)[1] - 1]


def mutant_over(query: Query, mutant_class: type[OverFunctions] = _SessionClosedAtItsLastRow
                ) -> EowcProcessor:
    """The EOWC OVER executor of ``query`` with its functions bound as ``mutant_class``."""
    plan = executor_plan(query, RW)
    over = plan.compiled.over
    assert over is not None
    mutant = mutant_class(**{f.name: getattr(over, f.name) for f in fields(over)})
    return EowcOverWindow(replace(plan, compiled=replace(plan.compiled, over=mutant)))


def test_a_session_released_before_it_closes_is_caught() -> None:
    """In epoch 1 (W = 18:06) 17:59 is complete and the last complete row of its session:
    the mutant releases it alone (sum 4), though 18:07, not late, arrives in epoch 2 and
    joins it with 18:10 (sum 13). The real executor, restarted, gives the reference's rows."""
    query = parse_script(TABLE + FRAMES + " EMIT ON WINDOW CLOSE").query
    log = ArrivalLog(SLT_LOG.epochs + (tuple(_t(("18:07:00", 2, 100))),))
    expected = eowc_rows(query, log, close=True)
    real = run_in_process(query, log, RW, close=True, restart_after={0, 1})
    assert [(e.epoch, e.row) for e in real.emissions] == expected
    mutant = run_in_process(query, log, RW, close=True, restart_after={0, 1},
                            processor=mutant_over(query))
    rows = [(e.epoch, e.row) for e in mutant.emissions]
    assert rows != expected
    assert (1, _row("17:59:00", 4, 100, "17:59:00", "17:59:00", 4)) in rows


class _SessionChangelogWithoutMerges(SessionChangelog):
    """A mutant: a session of before the batch is changed only if a new row's time falls in
    its window ``[first, last + gap)``, as if a session never swallowed a later one (the
    rows of the session a merge swallows keep their old window)."""

    def changed_before(self, before: list[list[Row]], grown: list[Window], times: list[int]
                       ) -> list[list[Row]]:
        window = self.session.window
        return [s for s in before if any(window(s).start <= t < window(s).end for t in times)]


def test_a_merge_that_keeps_old_windows_is_caught() -> None:
    """16:00 and 16:12 (gap 10 minutes) then 16:06 between them: the real executor retracts
    both old rows; the mutant leaves 16:12's, and the snapshot shows four rows."""
    ddl = BID.replace("1' SECOND", "1' HOUR")
    query = replace(parse_script(ddl + TVF.replace("'5' MINUTES", "'10' MINUTES"), dialect="flink").query,
                    emit_on_window_close=False)  # its update mode (Flink runs it final)

    def bid(clock: str) -> Event:
        return Event("Bid", (parse_timestamp(f"2020-04-15 {clock}"), 1, "A"))
    log = ArrivalLog(((bid("16:00:00"), bid("16:12:00")), (bid("16:06:00"),)))
    expected = update_snapshots(query, log, FLINK)
    assert len(expected[-1]) == 3 and {r[3] for r in expected[-1]} == {
        parse_timestamp("2020-04-15 16:00:00")}
    real = run_in_process(query, log, FLINK, restart_after={0})
    assert snapshots(real.changes, 2) == expected
    mutant = run_in_process(query, log, FLINK, restart_after={0},
                            processor=_SessionChangelogWithoutMerges(executor_plan(query, FLINK)))
    assert len(snapshots(mutant.changes, 2)[-1]) == 4


# ------------------------------------------------------------------------------ scale

def test_at_scale_the_executor_and_the_oracle_equal_the_reference() -> None:
    """Two hours of a thousand keys' clicks, a row every few seconds per key with pauses
    that end sessions, in 240 epochs with rows up to a minute late: the executor, restarted
    every 40 epochs, and DuckDB give the reference's rows."""
    rng = random.Random(18)
    ddl = ("CREATE TABLE clicks (uid BIGINT, ts TIMESTAMP, "
           "WATERMARK FOR ts AS ts - INTERVAL '30' SECOND);\n")
    sql = ("SELECT uid, ts, first_value(ts) OVER (PARTITION BY uid ORDER BY ts SESSION WITH GAP "
           "INTERVAL '5' MINUTE) AS s, count(*) OVER (PARTITION BY uid ORDER BY ts SESSION WITH "
           "GAP INTERVAL '5' MINUTE) AS n FROM clicks EMIT ON WINDOW CLOSE")
    query = parse_script(ddl + sql).query
    events = []  # (arrival, time, key): one row in ten a minute late or less
    for uid in range(1000):
        t = BASE + rng.randrange(0, 600) * S
        while t < BASE + 2 * 3600 * S:
            delay = rng.randrange(0, 60) * S if rng.random() < 0.1 else 0
            events.append((t + delay, t, uid))
            t += rng.choice([5, 20, 40, 400, 900]) * S
    events.sort()
    per_epoch = len(events) // 240 + 1
    log = ArrivalLog(tuple(tuple(Event("clicks", (uid, t)) for _, t, uid in events[i:i + per_epoch])
                           for i in range(0, len(events), per_epoch)))
    expected = eowc_rows(query, log, close=True)
    assert len(expected) > 10_000
    run = run_in_process(query, log, RW, close=True, restart_after=set(range(0, 240, 40)))
    assert [(e.epoch, e.row) for e in run.emissions] == expected
    assert Counter(r for _, r in expected) == oracle_eowc(query, log, RW, close=True)


@settings(max_examples=30, deadline=None)
@given(log=arrival_logs(fractions=MILLISECOND_FRACTIONS), exclude=st.sampled_from(["GROUP", "TIES"]),
       convention=st.sampled_from([RW, SPARK, FLINK]))
def test_peer_exclusions_on_the_executor_equal_the_reference(log: ArrivalLog, exclude: str,
                                                           convention: Convention) -> None:
    """EXCLUDE GROUP / TIES take the row's peers (equal times) out of its session (DuckDB is
    not asked: its ORDER BY carries the tie-break), in both modes, restarted after epoch 0."""
    sql = (f"SELECT auction, ts, price, sum(price) OVER (PARTITION BY auction ORDER BY ts SESSION "
           f"WITH GAP INTERVAL '3' SECOND EXCLUDE {exclude}) AS s FROM bids")
    eowc, update = script(sql + " EMIT ON WINDOW CLOSE;").query, script(sql + ";").query
    expected = [(e.epoch, e.row) for e in run_eowc(eowc, log, convention, close=True)]
    run = run_in_process(eowc, log, convention, close=True, restart_after={0})
    assert [(e.epoch, e.row) for e in run.emissions] == expected
    changes = run_in_process(update, log, convention, restart_after={0}).changes
    assert snapshots(changes, len(log.epochs)) == update_snapshots(update, log, convention)
