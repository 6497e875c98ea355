"""The interface every executor implements: the shape of Spark's StatefulProcessor, run by the
in-process driver (:mod:`eowc.executors.driver`) and by Spark (:mod:`eowc.executors.spark`)."""

from __future__ import annotations

from collections.abc import Iterator

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
