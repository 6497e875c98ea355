"""How a column derived from the watermark column carries the source watermark.

A source watermark ``W`` says which values of the watermark column ``c`` are complete
(:mod:`eowc.semantics.rules.triggers`). A column computed from ``c`` by a monotone function carries a
watermark of its own: the functions below map ``W`` to it.

**Reading.** Every function here uses the RisingWave reading, "every value *strictly below*
the column's watermark is complete", and takes the source watermark in the same reading
(``c < W`` is complete). Each result is *exact* on the values the column can take: a value
``v`` of the column is complete iff ``v < watermark``. Spark and Flink read a watermark with
``<=`` ("values up to and including it are complete"); on integers ``v < X`` iff
``v <= X - 1``, so their watermark of a window column is :func:`window_column_watermark`.

Times are integer microseconds. The functions work on Python ints (and pass ``-inf``/``+inf``
through unchanged) and on z3 integer terms, so :mod:`eowc.semantics.proofs.trigger_proofs` checks these very
functions; :func:`floor_div` and :func:`least_watermark` are the only operations that
differ between the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from eowc.semantics.ir.windows import WindowKind
from eowc.semantics.rules.triggers import Convention

if TYPE_CHECKING:
    from typing import TypeAlias

    from z3 import ArithRef

    #: A time: integer microseconds, or a z3 integer term standing for one.
    Time: TypeAlias = int | ArithRef
    #: A watermark: a time, or ``-inf``/``+inf`` (:data:`eowc.semantics.rules.triggers.NO_WATERMARK`).
    DerivedWatermark: TypeAlias = int | float | ArithRef


class WindowParameters(Protocol):
    """What the rules read of a window TVF: :class:`eowc.semantics.ir.windows.WindowSpec`, or the same
    fields holding z3 terms (``slide`` is HOP's slide and CUMULATE's step)."""

    @property
    def kind(self) -> WindowKind: ...
    @property
    def size(self) -> Time: ...
    @property
    def slide(self) -> Time: ...
    @property
    def offset(self) -> Time: ...


def floor_div(a: Time, b: Time) -> Time:
    """``floor(a / b)`` for ``b > 0``: Python's ``//`` on numbers; z3's integer ``/`` (Euclidean
    division, which equals floor division for a positive divisor) on z3 terms. (``%`` needs
    no such helper: it is the floor remainder on both for ``b > 0``.)"""
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a // b
    return a / b


def least_watermark(*watermarks: DerivedWatermark) -> DerivedWatermark:
    """The watermark of a column fed by several inputs (a union, a join's bounded column):
    the least of theirs. Python's ``min`` on numbers; an ``If`` chain on z3 terms."""
    if all(isinstance(w, int | float) for w in watermarks):
        return min(watermarks)
    import z3

    least = watermarks[0]
    for watermark in watermarks[1:]:
        least = z3.If(watermark < least, watermark, least)
    return least


def shifted_watermark(watermark: DerivedWatermark, delta: Time) -> DerivedWatermark:
    """The watermark of ``c + delta`` (``c + INTERVAL ...``, ``c - INTERVAL ...``): ``W + delta``.

    Exact: ``c + delta < W + delta`` iff ``c < W``. Monotone in ``W``.
    """
    return watermark + delta


def truncated_watermark(watermark: DerivedWatermark, unit: Time, offset: Time = 0
                        ) -> DerivedWatermark:
    """The watermark of ``trunc(c) = offset + floor((c - offset) / unit) * unit`` (``date_trunc``
    to a fixed unit, ``tumble_start``): ``trunc(W)``, the bucket that contains ``W``.

    Exact on bucket starts ``d``: the bucket ``[d, d + unit)`` is complete iff its last value
    ``d + unit - 1 < W``, iff ``d + unit <= trunc(W)`` (``d + unit`` is itself a bucket start,
    and ``trunc(W)`` is the largest one ``<= W``), iff ``d < trunc(W)``. Monotone in ``W``.
    ``unit`` must be positive (a month or a year is not a fixed unit).
    """
    if isinstance(watermark, float) and math.isinf(watermark):  # nothing, or everything, complete
        return watermark
    return offset + floor_div(watermark - offset, unit) * unit


def window_start_watermark(spec: WindowParameters, watermark: DerivedWatermark) -> DerivedWatermark:
    """The watermark on ``window_start``: ``s < window_start_watermark`` iff every window of
    the TVF that starts at ``s`` is closed (its end ``<= W``, RisingWave's rule).

    Windows start at ``offset + k*p`` (``p`` = HOP's slide; ``size`` for TUMBLE and CUMULATE),
    and the last window that starts at ``s`` ends at ``s + size``. It is closed iff
    ``s + size <= W`` iff ``s <= W - size`` iff ``s <= trunc_p(W - size)`` (``s`` is aligned)
    iff ``s < trunc_p(W - size) + p = trunc_p(W - size + p)``, so the watermark is
    :func:`truncated_watermark` of ``W - size + p`` to ``p``:

    - TUMBLE (``p = size``): ``trunc_size(W)``, the start of the window that contains ``W``.
    - HOP: ``trunc_slide(W - size + slide)``, the start of the earliest window that contains
      ``W`` (when ``slide`` divides ``size``). It is *not* TUMBLE's rule: the windows that
      contain ``W`` (and start before ``trunc_slide(W)``) are open.
    - CUMULATE: ``trunc_size(W)``. Windows that share a start have different ends, so
      ``window_start`` can only say that *all* of them are closed: the shorter ones close
      earlier, and only the longest window ``[s, s + size)`` closes exactly when ``s`` is
      complete.
    """
    period = spec.slide if spec.kind is WindowKind.HOP else spec.size
    return truncated_watermark(shifted_watermark(watermark, period - spec.size), period,
                               spec.offset)


def window_end_watermark(spec: WindowParameters, watermark: DerivedWatermark) -> DerivedWatermark:
    """The watermark on ``window_end``: ``e < window_end_watermark`` iff the windows that end at
    ``e`` are closed (``e <= W``, RisingWave's and Spark's rule).

    Window ends lie on ``offset + size + k*q`` (``q`` = ``size`` for TUMBLE, the slide for HOP,
    the step for CUMULATE), so ``e <= W`` iff ``e <= trunc_q(W)`` iff ``e < trunc_q(W) + q``:
    the end of the earliest window that contains ``W`` (RisingWave derives the same). Any
    watermark in ``(W, trunc_q(W) + q]`` is exact on window ends, ``W + 1`` the smallest.

    ``W`` itself is *not* exact in this reading: it is the watermark of ``window_end`` in the
    ``<=`` reading (``e <= W``), and read strictly it leaves the window ending at ``W`` open.
    Flink's rule ``W >= e - 1 ms`` is RisingWave's at ``W + 1 ms``: so Flink carries ``W``
    itself, ``<=``-read, on ``window_time = window_end - 1 ms``
    (see :func:`window_column_watermark`).
    """
    period = spec.size if spec.kind is WindowKind.TUMBLE else spec.slide
    return shifted_watermark(truncated_watermark(watermark, period, spec.offset + spec.size), period)


def window_column_watermark(derive: Callable[[DerivedWatermark], DerivedWatermark],
                            watermark: DerivedWatermark, convention: Convention) -> DerivedWatermark:
    """The watermark of a window column (``derive`` is :func:`window_start_watermark` or
    :func:`window_end_watermark` with the spec bound) in ``convention``'s reading, such that
    ``time_is_complete(v, it, convention)`` iff the window(s) of value ``v`` close at ``W``.

    - risingwave: ``derive(W)``, read ``v < it``.
    - spark: windows close as under RisingWave (``e <= W``); read with ``<=``:
      ``derive(W) - 1``.
    - flink: windows close at ``W >= e - 1 ms``, which is RisingWave's rule at ``W + 1 ms``;
      read with ``<=``: ``derive(W + 1 ms) - 1``.
    """
    closing = shifted_watermark(watermark, convention.closing_offset)
    return derive(closing) - convention.completion_gap
