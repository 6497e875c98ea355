"""The interface every executor implements: the shape of Spark's StatefulProcessor, run by the
in-process driver (:mod:`eowc.executors.driver`) and by Spark (:mod:`eowc.executors.spark`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eowc.executors.plan import ExecutorPlan
from eowc.executors.protocol import Arrival, Output
from eowc.executors.sort_buffer import SortBuffer
from eowc.executors.state import MapState, StateHandle
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Source
from eowc.semantics.rules.triggers import Watermark


class EowcProcessor:
    """The interface every executor implements (the shape of Spark's StatefulProcessor)."""

    def __init__(self, plan: ExecutorPlan) -> None:
        self.plan = plan

    def init(self, handle: StateHandle) -> None:
        self.handle = handle

    #: The keys that get each source's :class:`SourceProgress` of every batch: every shard
    #: that judges a source by that source's own watermark (empty: none wants it).
    progress_keys: tuple[Row, ...] = ()

    @property
    def sources(self) -> tuple[Source, ...]:
        """The sources the executor reads."""
        return (self.plan.compiled.source,)

    def stateless_of(self, table: str, row: Row) -> list[Row]:
        """The rows the stateless part makes of one row of source ``table``."""
        return self.plan.stateless(row)

    #: Whether the rows of a key are folded before the stateful operator (:meth:`combine`).
    combines: bool = False

    def combine(self, arrivals: list[Arrival]) -> list[Any]:
        """What reaches the stateful operator of one key's ``arrivals`` (in arrival order) from
        one batch of a source's rows: the arrivals themselves, unless the executor
        :attr:`combines` (a group aggregate's :class:`~eowc.executors.protocol.Partial` s).
        Spark's stateless step calls it before the shuffle."""
        return arrivals

    def key_of(self, row: Row) -> Row:
        """The grouping key under which ``row`` is processed."""
        raise NotImplementedError

    def handle_rows(self, key: Row, arrivals: list[Arrival], watermark: Watermark
                    ) -> Iterator[Output]:
        raise NotImplementedError

    def handle_timer(self, key: Row, expiry_ms: int, watermark: Watermark) -> Iterator[Output]:
        raise NotImplementedError

    def new_sort_buffer(self, table: MapState) -> SortBuffer:
        """The SortBuffer over ``table`` in which the executor keeps rows until complete."""
        return SortBuffer(table)
