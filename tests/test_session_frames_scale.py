"""RisingWave's session frames at the scale users run them: thousands of epochs, hundreds of
keys, rows out of order and late, the executor restarted again and again.

Clickstream sessions (``OVER (PARTITION BY uid ORDER BY ts SESSION WITH GAP '5' MINUTE)``):
each user clicks every few seconds to minutes, pausing long enough now and then to end a
session; rows arrive up to a minute late (the watermark's delay is 30 s, so some are late);
an epoch is 10 s of arrival time. Checked: the EOWC executor (EowcOverWindow, restarted every
97 epochs) emits the reference's rows in the same epochs and order, so they agree after every
epoch; DuckDB gives the reference's output after every 100th epoch and at the close; the
executor's state is bounded (the open sessions only: flat from the first hour to the last);
the emit-on-update executor's changelog is the reference's; a mutant that closes a session
one gap early (it counts the gap from the session's first row, not its last) is caught.
"""

from __future__ import annotations

import random
from collections import Counter

from eowc.executors.choice import processor_for
from eowc.executors.driver import run_in_process
from eowc.executors.over_window import OverFunctions, OverRows, session_span
from eowc.executors.protocol import Arrival
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.engines.interpreter import LateRow, run_eowc, run_update
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import NO_WATERMARK, Convention, session_last_open_time
from tests.strategies import BASE
from tests.test_session_frames import mutant_over

RW = Convention.RISINGWAVE
S = 1_000_000
EPOCH = 10 * S  # arrival time per epoch
CLICKS = ("CREATE TABLE clicks (uid BIGINT, ts TIMESTAMP, page BIGINT, "
          "WATERMARK FOR ts AS ts - INTERVAL '30' SECOND);\n")
SESSIONS = ("SELECT uid, ts, page, first_value(ts) OVER w AS session_start, last_value(ts) "
            "OVER w AS session_end, count(*) OVER w AS clicks, max(page) OVER w AS top_page "
            "FROM clicks WINDOW w AS (PARTITION BY uid ORDER BY ts SESSION WITH GAP "
            "INTERVAL '5' MINUTE)")


def clickstream(epochs: int, users: int, seed: int) -> ArrivalLog:
    """``epochs`` epochs of 10 s of arrival time; each user clicks after pauses of 2 s to 15
    minutes (a pause of 5 minutes or more ends the session); one click in eight arrives up to
    60 s after its time (later than the 30 s delay: some are late)."""
    rng = random.Random(seed)
    end = BASE + epochs * EPOCH
    arrivals = []  # (arrival time, event time, user, page)
    for uid in range(users):
        t = BASE + rng.randrange(0, 600) * S + rng.randrange(1000) * 1000
        while t < end:
            delay = rng.randrange(0, 60_000) * 1000 if rng.random() < 0.125 else 0
            arrivals.append((t + delay, t, uid, rng.randrange(50)))
            t += rng.choice([2, 7, 15, 40, 90, 200, 330, 900]) * S
    arrivals.sort()
    epochs_rows: list[list[Event]] = [[] for _ in range(epochs)]
    for arrived, t, uid, page in arrivals:
        epoch = (arrived - BASE) // EPOCH
        if epoch < epochs:
            epochs_rows[epoch].append(Event("clicks", (uid, t, page)))
    return ArrivalLog(tuple(tuple(rows) for rows in epochs_rows))


class _SessionClosedOneGapEarly(OverFunctions):
    """A mutant: the gap counted from the session's first row, not its last (a session whose
    rows span more than a gap is released while a row can still join it)."""

    def waits_for(self, part: OverRows, i: int) -> int | None:
        needed = part.values[i]
        for gap in self.session_gaps:
            first = part.values[session_span(gap, part.values, i)[0]]
            needed = max(needed, session_last_open_time(first, gap))
        return needed


def test_session_frames_at_scale() -> None:
    """EOWC: 1,200 epochs (3 h 20 min), 300 users (about 18,000 clicks, 900 late); on update:
    the same 1,200 epochs of 40 users (the reference recomputes each changed partition)."""
    epochs, restarts = 1_200, set(range(0, 1_200, 97))
    log = clickstream(epochs, users=300, seed=18)
    query = parse_script(CLICKS + SESSIONS + " EMIT ON WINDOW CLOSE;").query
    late: list[LateRow] = []
    expected = list(run_eowc(query, log, RW, close=True, late=late.append))
    rows_in = sum(len(e) for e in log.epochs)
    run = run_in_process(query, log, RW, close=True, restart_after=restarts, measure_bytes=True)
    assert [(e.epoch, e.row) for e in run.emissions] == [(e.epoch, e.row) for e in expected]
    assert Counter(r.event.row for r in run.late) == Counter(r.event.row for r in late)
    assert len(late) > 100 and len(expected) == rows_in - len(late)
    assert len({e.epoch for e in expected}) > epochs // 2  # released all along, not at the end
    assert any(e.row[5] > 10 for e in expected)  # sessions of many clicks
    for upto in (399, 799, 1_199):
        prefix = ArrivalLog(log.epochs[:upto + 1])
        assert oracle_eowc(query, prefix, RW) == Counter(e.row for e in expected if e.epoch <= upto)
    assert oracle_eowc(query, log, RW, close=True) == Counter(e.row for e in expected)
    assert_flat(run.state_bytes)
    mutant = run_in_process(query, log, RW, close=True, restart_after=restarts,
                            processor=mutant_over(query, _SessionClosedOneGapEarly))
    assert [(e.epoch, e.row) for e in mutant.emissions] != [(e.epoch, e.row) for e in expected]

    update = parse_script(CLICKS + SESSIONS + ";").query
    small = clickstream(epochs, users=40, seed=19)
    changelog = run_in_process(update, small, RW, restart_after=restarts, measure_bytes=True)
    expected_changes = list(run_update(update, small, RW))
    assert changelog.changes == expected_changes
    assert any(c.op == "-" for c in expected_changes)
    assert_flat(changelog.state_bytes)


def assert_flat(state_bytes: list[int]) -> None:
    """The state of the second half of the run is no larger than that of the first hour
    after the first (the open sessions only): it does not grow with the log."""
    half = len(state_bytes) // 2
    assert max(state_bytes[half:]) < 1.5 * max(state_bytes[360:half])


def test_on_update_a_closed_session_leaves_the_state() -> None:
    """By hand (docs/examples/session_frame.sql without EMIT, bar 100, gap 10 minutes): the
    first batch brings 16:51, 16:56, 17:35, 17:59 and moves W to 17:56; the next one's rows
    (18:10) are judged at 17:56, where {16:51, 16:56} (16:56 + 10 <= 17:56) and {17:35}
    (17:45 <= 17:56) are closed: no row still to come can join them, so only the open {17:59}
    (until 18:09) and {18:10} stay in the partition's state."""
    ddl = ("CREATE TABLE t (tm TIMESTAMP, foo INT, bar INT, "
           "WATERMARK FOR tm AS tm - INTERVAL '5 minutes');\n")
    sql = "SELECT *, sum(foo) OVER (PARTITION BY bar ORDER BY tm SESSION WITH GAP '10 minutes') AS s FROM t;"
    processor = processor_for(parse_script(ddl + sql).query, RW)
    store = MemoryStore()
    processor.init(memory_handle(store))
    shard = processor.key_of((0, 0, 100))  # the bucket of partition (100,)
    store.current_key = shard

    def at(clock: str) -> int:
        return parse_timestamp(f"2023-05-06 {clock}:00")

    def batch(clocks: list[tuple[str, int]], watermark: float) -> list[int]:
        arrivals = [Arrival(seq, 1, at(tm), (at(tm), foo, 100)) for seq, (tm, foo) in enumerate(clocks)]
        return sorted(c.row[-1] for c in processor.handle_rows(shard, arrivals, watermark))
    assert batch([("16:51", 1), ("16:56", 8), ("17:35", 5), ("17:59", 4)], NO_WATERMARK) == [4, 5, 9, 9]
    partition, _ = store.values[("partition", shard)][(100,)]
    assert len(partition.values) == 4  # nothing is complete yet
    assert batch([("18:10", 7)], at("17:56")) == [7]
    partition, _ = store.values[("partition", shard)][(100,)]
    assert partition.values == [at("17:59"), at("18:10")]
