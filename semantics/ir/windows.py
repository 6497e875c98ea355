"""Window assignment of the TUMBLE, HOP and CUMULATE table-valued functions (FLIP-145).

All times are integer microseconds; a window is the half-open interval ``[start, end)``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from eowc.semantics.ir.values import MICROS_PER_MILLI

#: The first and the last TIMESTAMP, 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999, in
#: microseconds since 1970-01-01: the engines' TIMESTAMP (and Python's datetime) spans those
#: years, so no window may start before the first or end after the last.
FIRST_TIMESTAMP = (dt.datetime.min - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
LAST_TIMESTAMP = (dt.datetime.max - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


class WindowKind(Enum):
    TUMBLE = "TUMBLE"
    HOP = "HOP"
    CUMULATE = "CUMULATE"


class Window(NamedTuple):
    """The half-open event-time interval ``[start, end)``."""

    start: int
    end: int

    @property
    def time(self) -> int:
        """``window_time``: the last millisecond inside the window (``end - 1 ms``)."""
        return self.end - MICROS_PER_MILLI


#: ``Window(start, end)`` without the Python-level constructor: windows are made per row.
_new_window = tuple.__new__


@dataclass(frozen=True)
class WindowSpec:
    """A window TVF's parameters: ``size``, ``slide`` (HOP) or ``step`` (CUMULATE), ``offset``.

    TUMBLE: windows ``[offset + k*size, offset + (k+1)*size)``.
    HOP: windows of length ``size`` starting at every ``offset + k*slide``.
    CUMULATE: windows starting at ``offset + k*size`` whose ends step by ``step`` up to ``size``.
    """

    kind: WindowKind
    size: int
    slide: int = 0
    offset: int = 0

    def __post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError("window size must be positive")
        if self.kind is not WindowKind.TUMBLE and self.slide <= 0:
            raise ValueError(f"{self.kind.value} slide/step must be positive")
        if self.kind is WindowKind.CUMULATE and self.size % self.slide:
            raise ValueError("CUMULATE size must be a whole multiple of its step")

    def windows_of(self, t: int) -> list[Window]:
        """Every window that contains event time ``t``, ordered by end."""
        if self.kind is WindowKind.TUMBLE:
            start = t - (t - self.offset) % self.size
            return [_new_window(Window, (start, start + self.size))]
        if self.kind is WindowKind.HOP:
            last_start = t - (t - self.offset) % self.slide
            first_start = last_start - (self.size - 1) // self.slide * self.slide
            while first_start + self.size <= t:
                first_start += self.slide
            return [_new_window(Window, (s, s + self.size))
                    for s in range(first_start, last_start + 1, self.slide)]
        start = t - (t - self.offset) % self.size
        first_end = t - (t - self.offset) % self.slide + self.slide
        return [_new_window(Window, (start, end))
                for end in range(first_end, start + self.size + 1, self.slide)]

    def window_out_of_range(self, t: int) -> Window | None:
        """The first window of event time ``t`` that starts before :data:`FIRST_TIMESTAMP` or
        ends after :data:`LAST_TIMESTAMP` (its bounds are no TIMESTAMPs), or None when every
        window of ``t`` lies in range."""
        if FIRST_TIMESTAMP + self.size <= t <= LAST_TIMESTAMP - self.size:  # windows within t ± size
            return None
        return next((w for w in self.windows_of(t)
                     if w.start < FIRST_TIMESTAMP or w.end > LAST_TIMESTAMP), None)

    def window_ending_at(self, end: int) -> Window:
        """The window of this TVF whose end is ``end``."""
        if self.kind is WindowKind.CUMULATE:
            return _new_window(Window, (end - 1 - (end - 1 - self.offset) % self.size, end))
        return _new_window(Window, (end - self.size, end))

    def last_window_starting_at(self, start: int) -> Window:
        """The longest window of this TVF that starts at ``start``."""
        return Window(start, start + self.size)
