"""What flows through an executor (:class:`eowc.executors.interface.EowcProcessor`): the rows
reaching a stateful operator (:class:`Arrival`), what it emits (:class:`Emit`,
:class:`Update`) and refuses (:class:`Refusal`); and the shard's timer.

Times are microseconds, as in :mod:`eowc.semantics`; timers are milliseconds, as in Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from eowc.executors.state import StateHandle, StateSchema
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.values import MICROS_PER_MILLI, SqlType
from eowc.semantics.rules.triggers import Watermark


class Arrival(NamedTuple):
    """A row reaching the stateful operator: ``seq`` is its source row's position in the
    arrival log, ``fanout`` how many rows the stateless part made of that source row (its
    windows), ``time`` the source row's event time; ``source`` the source row itself where the
    caller wants it back in refusals (the side output of :mod:`eowc.executors.spark.api`)."""

    seq: int
    fanout: int
    time: int
    row: Row
    source: Row | None = None


class Partial(NamedTuple):
    """The rows of one group, folded before they reach the stateful operator (partial
    aggregation, where every aggregate merges exactly: ``AggregateFunction.merge``, and a
    group's rows are in one window): the ``group``, the aggregates' ``states``, and for each
    folded row its ``seq`` and ``fanout`` (and ``source`` row, where the caller wants refusals
    to carry it; None: none does), so that a refused window refuses each of its rows as
    :class:`Refusal` s."""

    group: Row
    states: list[Any]
    seqs: list[int]
    fanouts: list[int]
    sources: list[Row | None] | None = None


class SourceProgress(NamedTuple):
    """How far a source got in one batch: the largest event time among ``table``'s rows (late
    and filtered rows included, as the source's watermark counts them). Given to an executor
    that judges each source by its own watermark (the joins: :mod:`eowc.executors.composed`)."""

    table: str
    time: int


class Emit(NamedTuple):
    """A result row; ``order`` sorts the rows emitted in one epoch (watermark value, then
    tie-break), as the reference does. ``partition``: the partition of an executor whose output
    is ordered within each partition (the EOWC sort): what it emits there is recorded in the
    order it was emitted, and must be ordered as it is; None (every other executor): the row
    takes its place in the epoch by ``order`` alone."""

    row: Row
    order: Any
    partition: int | None = None


class Update(NamedTuple):
    """One change of an emit-on-update executor's changelog: ``op`` is ``"-"`` (a result row
    retracted) or ``"+"`` (inserted); ``order`` sorts an epoch's changes as the reference
    does (deletes, then inserts, each in row order)."""

    op: str
    row: Row
    order: Any


class Refusal(NamedTuple):
    """One row refused as late by the operator, and why. Its source row is late (left out of
    INPUT) when all ``fanout`` of its rows are refused."""

    seq: int
    fanout: int
    reason: str = "late"
    source: Row | None = None


class Rejected(NamedTuple):
    """An input row that never reached the executor, and why (its event time is NULL or does
    not parse: see :mod:`eowc.executors.spark.api`); ``row`` is the row as JSON."""

    reason: str
    row: str


Output = Emit | Update | Refusal


def closing_timer_ms(is_complete: Callable[[Any, Watermark], bool], bound: Any) -> int:
    """The least millisecond watermark at which ``bound`` is complete: the timer that fires
    exactly when the trigger condition first holds (Spark fires when ``expiry <= W``). Every
    trigger holds within 2 ms of the window end or event time, and is monotone in ``W``."""
    hint = (bound.end if hasattr(bound, "end") else bound) // MICROS_PER_MILLI
    for ms in range(hint - 2, hint + 3):
        if is_complete(bound, ms * MICROS_PER_MILLI):
            return ms
    raise AssertionError(f"no watermark near {hint} ms completes {bound!r}")


#: The shard timer's state: its expiry, a BIGINT of milliseconds (a typed column on Spark).
TIMER_SCHEMA = StateSchema.single("expiry_ms", SqlType.BIGINT)


class ShardTimer:
    """A shard's single timer, kept at the earliest watermark anything in it waits for."""

    def __init__(self, handle: StateHandle) -> None:
        self.handle = handle
        self.expiry = handle.value_state("timer", TIMER_SCHEMA)

    def fired(self) -> None:
        self.expiry.clear()

    def at_most(self, expiry: int | None) -> None:
        """Move the timer to ``expiry`` if that is earlier (None: nothing to wait for)."""
        current = self.expiry.get()
        if expiry is None or (current is not None and current <= expiry):
            return
        if current is not None:
            self.handle.delete_timer(current)
        self.handle.register_timer(expiry)
        self.expiry.update(expiry)

    def exactly(self, expiry: int | None) -> None:
        """Set the timer to ``expiry`` (None: no timer)."""
        current = self.expiry.get()
        if current == expiry:
            return
        if current is not None:
            self.handle.delete_timer(current)
            self.expiry.clear()
        self.at_most(expiry)
