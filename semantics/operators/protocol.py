"""The protocol every logical operator of the dataflow interpreter follows.

An operator consumes append-only rows on its input ports, epoch by epoch, and releases rows
when its own trigger holds (seed 001, Definition 4: EOWC is a property of each logical
operator). Watermarks flow as the source watermarks (:data:`Marks`) they derive from: the
watermark of a port is the one :mod:`eowc.semantics.analysis.watermark_derivation` gives the
column the operator's trigger reads, a map of the source watermarks (:class:`PortClock`), so
the derivation is the one copy of how a watermark passes through an operator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from eowc.semantics.analysis.watermark_derivation import Derivation, watermark_in_reading
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Source
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, NO_WATERMARK, Convention, Watermark

#: Stateless steps of a row: ``(row, W_before) -> rows``.
Stage = Callable[[Row, Watermark], list[Row]]
#: Source watermarks by source column (``table.column``), as
#: :meth:`eowc.semantics.analysis.watermark_derivation.Derivation.watermark` reads them.
Marks = dict[str, Watermark]


def watermark_key(source: Source) -> str:
    """The name of ``source``'s watermark in :data:`Marks` (``table.column``)."""
    assert source.watermark is not None
    return f"{source.name}.{source.watermark.column}"


class Operator(ABC):
    """A logical operator: ``step`` is one epoch."""

    #: True if the operator releases nothing in an epoch that moves no watermark, whatever
    #: rows it gets (so its rows may reach it in the next epoch that moves one).
    waits_for_watermark: bool = False
    #: True if the operator releases nothing in an epoch that brings it no rows, whatever the
    #: watermarks (a stateless one), so such an epoch need not reach it.
    releases_only_rows: bool = False

    @abstractmethod
    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        """Consume the rows that reached each input port during the epoch, with the source
        watermarks after it (``closed``: the input has ended, every watermark is +infinity);
        return the rows released now, in emission order."""


class PortClock:
    """The watermark of an operator's input port, in the convention's reading (a value ``v``
    of the column it reads is complete iff ``time_is_complete(v, W)``): a real source's own
    watermark, or the derivation of a derived source's watermark column applied to the
    source watermarks. It never goes down; after ``closed`` it is +infinity. ``before`` and
    ``after`` are its values around the last epoch."""

    def __init__(self, source: Source, derivation: Derivation | None, convention: Convention
                 ) -> None:
        self.before: Watermark = NO_WATERMARK
        self.after: Watermark = NO_WATERMARK
        self._marks: Marks | None = None
        if derivation is not None:
            self._read: Callable[[Marks], Watermark] = \
                lambda marks: watermark_in_reading(derivation, marks, convention)
        elif source.watermark is not None:
            key = watermark_key(source)
            self._read = lambda marks: marks.get(key, NO_WATERMARK)
        else:
            self._read = lambda marks: NO_WATERMARK

    def advance(self, marks: Marks, closed: bool) -> None:
        """Move to the epoch whose source watermarks are ``marks``."""
        self.before = self.after
        if closed:
            self.after = CLOSED_WATERMARK
        elif marks is not self._marks:
            self._marks = marks
            moved = self._read(marks)
            if moved > self.after:
                self.after = moved
