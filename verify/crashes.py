"""Which crash points a Spark run of a case is certain to reach (:func:`reachable_crashes`).

A crash schedule that names a point the run never reaches cannot be played
(:func:`eowc.executors.spark.crash.run_with_crash` fails with ``CrashError``), so the generators draw
crashes from this list, for every log a case is run on (:func:`common_crashes`). The rule is
Spark's batch structure with ``pacing=settle``; the in-process executor, which treats a crash as
a restart, can play any of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from eowc.executors.choice import processor_for
from eowc.executors.driver import SPARK_INITIAL_WATERMARK_MS, spark_watermark_ms
from eowc.executors.processors import Arrival, EowcProcessor
from eowc.executors.state import MemoryStore, memory_handle
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.rules.triggers import NO_WATERMARK
from eowc.verify.cases import Case, Crash


def common_crashes(case: Case, logs: Sequence[ArrivalLog]) -> list[Crash]:
    """The crashes a run of ``case``'s query reaches on its own log and on each of ``logs``
    (a crash schedule is replayed on every log a case is checked on), in ``case``'s order."""
    others = [set(reachable_crashes(case.with_log(log))) for log in logs]
    return [c for c in reachable_crashes(case) if all(c in reached for reached in others)]


def reachable_crashes(case: Case) -> list[Crash]:
    """The crashes a :class:`SparkExecutor` run of ``case``'s query, convention and log is
    certain to reach (its restarts and crash play no part: they change no batch), in the order
    the run reaches them. With ``pacing=settle`` every epoch ``e`` is a data batch (``2e``, its
    rows) and a settle batch (``2e + 1``, no rows):

    * ``before_batch`` of every batch: the source's ``latestOffset`` plans each batch, an
      empty epoch's too (its offset moves all the same);
    * ``after_sink`` of every batch: :class:`~eowc.executors.spark.sink.EpochSink` writes a file,
      an empty one for an empty batch, then reaches the point;
    * ``mid_batch`` of a data batch when some row of the query's table in that epoch passes
      the stateless part (filters, the window TVF), so the executor's ``handleInputRows`` runs
      for at least one key (a late row counts: the executor refuses it itself);
    * ``mid_batch`` of a settle batch when some timer fires in it (``handleExpiredTimer``).
      Timers are found by running the executor in process with Spark's batches: rows under
      the watermark of the earlier epochs, then the timers due at that watermark (those fire
      in the data batch), then the timers due at the epoch's watermark (in the settle batch).
      A timer that Spark fired in the settle batch rather than the data batch would only make
      more points reachable.

    Not listed, and not reached by a run: ``mid_batch`` of the data batch of an epoch with no
    row that reaches the executor, and of a settle batch in which no timer fires;
    :func:`~eowc.executors.spark.crash.run_with_crash` fails with ``CrashError`` on them."""
    processor = processor_for(case.query, case.convention)
    store = MemoryStore()
    processor.init(memory_handle(store))
    plan = processor.plan
    source = plan.compiled.source
    time_index = source.event_time_index
    delay = source.watermark.delay if source.watermark is not None else 0
    watermark_ms, max_time = SPARK_INITIAL_WATERMARK_MS, NO_WATERMARK
    seq = 0
    crashes: list[Crash] = []
    for epoch, events in enumerate(case.log.epochs):
        by_key: dict[Row, list[Arrival]] = {}
        for event in events:
            seq += 1
            if event.table != source.name:
                continue
            t = event.row[time_index] if time_index is not None else 0
            if t is not None:
                max_time = max(max_time, t)
            made = plan.stateless(event.row)
            for out in made:
                by_key.setdefault(processor.key_of(out), []).append(Arrival(seq, len(made), t, out))
        before = watermark_ms * MICROS_PER_MILLI
        for key in sorted(by_key, key=row_sort_key):  # the data batch
            store.current_key = key
            for _ in processor.handle_rows(key, by_key[key], before):
                pass
        _fire_timers(processor, store, watermark_ms)
        watermark_ms = spark_watermark_ms(max_time, delay, watermark_ms)
        fired = _fire_timers(processor, store, watermark_ms)  # the settle batch
        for settle, mid in ((False, bool(by_key)), (True, fired)):
            crashes.append(Crash(epoch, "before_batch", settle))
            if mid:
                crashes.append(Crash(epoch, "mid_batch", settle))
            crashes.append(Crash(epoch, "after_sink", settle))
    return crashes


def _fire_timers(processor: EowcProcessor, store: MemoryStore, watermark_ms: int) -> bool:
    """Fire the timers due at ``watermark_ms`` as Spark does; whether any fired."""
    fired = False
    while (timer := store.pop_due_timer(watermark_ms)) is not None:
        expiry, key = timer
        store.current_key = key
        for _ in processor.handle_timer(key, expiry, watermark_ms * MICROS_PER_MILLI):
            pass
        fired = True
    return fired

