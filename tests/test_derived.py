"""The derived watermarks of semantics/analysis/watermark_maps.py against semantics/ir/windows.py's
   window assignment.

For a random TVF and source watermark ``W`` (RisingWave reading: ``c < W`` is complete), the
windows of every event time near ``W`` are enumerated with ``WindowSpec.windows_of`` and
judged by ``window_closes``; the derived watermark of ``window_start`` and ``window_end`` must
say the same of every one of them, under every convention (``window_column_watermark``).
"""

from __future__ import annotations

import math
from functools import partial

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from eowc.semantics.analysis.watermark_maps import (
    floor_div,
    shifted_watermark,
    truncated_watermark,
    window_column_watermark,
    window_end_watermark,
    window_start_watermark,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.ir.windows import Window, WindowKind, WindowSpec
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    time_is_complete,
    window_closes,
)

RW = Convention.RISINGWAVE
MIN = 60 * 1_000_000


@st.composite
def window_specs(draw: st.DrawFn) -> WindowSpec:
    """TUMBLE, HOP (slide may exceed size) and CUMULATE specs with small parameters."""
    kind = draw(st.sampled_from(list(WindowKind)))
    offset = draw(st.integers(-100, 100))
    if kind is WindowKind.TUMBLE:
        return WindowSpec(kind, draw(st.integers(1, 40)), offset=offset)
    if kind is WindowKind.HOP:
        return WindowSpec(kind, draw(st.integers(1, 40)), draw(st.integers(1, 40)), offset)
    step = draw(st.integers(1, 15))
    return WindowSpec(kind, step * draw(st.integers(1, 5)), step, offset)


watermarks = st.integers(-500, 500)


def windows_near(spec: WindowSpec, watermark: int) -> set[Window]:
    """Every window of ``spec`` that contains an event time within two periods of ``W``."""
    reach = 2 * (spec.size + spec.slide) + 2
    return {w for t in range(watermark - reach, watermark + reach) for w in spec.windows_of(t)}


@given(window_specs(), watermarks)
def test_window_start_watermark_is_exact_on_every_window_start(spec: WindowSpec, watermark: int) -> None:
    start_watermark = window_start_watermark(spec, watermark)
    for w in windows_near(spec, watermark):
        every_window_of_start_closed = window_closes(spec.last_window_starting_at(w.start), watermark, RW)
        assert (w.start < start_watermark) is every_window_of_start_closed, (w, start_watermark)
        if w.start < start_watermark:  # CUMULATE: the shorter windows of the start closed earlier
            assert window_closes(w, watermark, RW)


@given(window_specs(), watermarks)
def test_window_end_watermark_is_exact_on_every_window_end(spec: WindowSpec, watermark: int) -> None:
    end_watermark = window_end_watermark(spec, watermark)
    assert end_watermark > watermark  # W itself would leave the window ending at W open
    for w in windows_near(spec, watermark):
        assert (w.end < end_watermark) is window_closes(w, watermark, RW), (w, end_watermark)


@pytest.mark.parametrize("convention", list(Convention))
@given(spec=window_specs(), watermark=watermarks)
def test_window_columns_in_each_conventions_reading(convention: Convention, spec: WindowSpec,
                                                   watermark: int) -> None:
    start = window_column_watermark(partial(window_start_watermark, spec), watermark, convention)
    end = window_column_watermark(partial(window_end_watermark, spec), watermark, convention)
    for w in windows_near(spec, watermark):
        assert time_is_complete(w.start, start, convention) is \
            window_closes(spec.last_window_starting_at(w.start), watermark, convention)
        assert time_is_complete(w.end, end, convention) is window_closes(w, watermark, convention)


@given(st.integers(1, 50), st.integers(-100, 100), watermarks)
def test_truncated_watermark_completes_a_bucket_with_its_last_value(unit: int, offset: int,
                                                                    watermark: int) -> None:
    derived = truncated_watermark(watermark, unit, offset)
    for c in range(watermark - 3 * unit, watermark + 3 * unit):
        bucket = WindowSpec(WindowKind.TUMBLE, unit, offset=offset).windows_of(c)[0]
        assert (bucket.start < derived) is all(time_is_complete(x, watermark, RW)
                                               for x in range(bucket.start, bucket.end))


@given(st.integers(-100, 100), watermarks, st.integers(-1000, 1000))
def test_shifted_watermark(delta: int, watermark: int, c: int) -> None:
    assert (c + delta < shifted_watermark(watermark, delta)) is (c < watermark)


@given(window_specs(), watermarks, watermarks)
def test_derived_watermarks_never_go_down(spec: WindowSpec, w1: int, w2: int) -> None:
    low, high = sorted((w1, w2))
    for derive in (window_start_watermark, window_end_watermark):
        assert derive(spec, low) <= derive(spec, high)
    assert truncated_watermark(low, spec.size, spec.offset) <= truncated_watermark(high, spec.size,
                                                                                   spec.offset)


@pytest.mark.parametrize("watermark", [NO_WATERMARK, CLOSED_WATERMARK])
def test_infinite_watermarks_pass_through(watermark: float) -> None:
    for spec in (WindowSpec(WindowKind.TUMBLE, 10), WindowSpec(WindowKind.HOP, 10, 5, 3),
                 WindowSpec(WindowKind.CUMULATE, 10, 2)):
        assert window_start_watermark(spec, watermark) == watermark
        assert window_end_watermark(spec, watermark) == watermark
        for convention in Convention:
            assert window_column_watermark(partial(window_start_watermark, spec), watermark,
                                           convention) == watermark
    assert truncated_watermark(watermark, 7, 2) == watermark
    assert shifted_watermark(watermark, -5) == watermark


@given(st.integers(-10**6, 10**6), st.integers(1, 10**4))
def test_floor_div_is_the_same_on_ints_and_on_z3_terms(a: int, b: int) -> None:
    assert floor_div(a, b) == a // b
    assert z3.simplify(floor_div(z3.IntVal(a), z3.IntVal(b))).as_long() == a // b


def test_worked_examples_of_docs_proofs_md() -> None:
    """The numbers of docs/proofs.md: times in minutes after 12:00 (``m``)."""
    def m(minutes: int) -> int:
        return minutes * MIN
    tumble = WindowSpec(WindowKind.TUMBLE, m(10))
    hop = WindowSpec(WindowKind.HOP, m(10), m(5))
    cumulate = WindowSpec(WindowKind.CUMULATE, m(10), m(5))
    watermark = m(3)  # 12:03
    assert window_start_watermark(tumble, watermark) == m(0)
    assert window_start_watermark(hop, watermark) == m(-5)  # 11:55, not TUMBLE's 12:00
    assert window_start_watermark(cumulate, watermark) == m(0)
    assert window_end_watermark(tumble, watermark) == m(10)
    assert window_end_watermark(hop, watermark) == m(5)
    assert window_end_watermark(cumulate, watermark) == m(5)
    assert window_closes(Window(m(-10), m(0)), watermark, RW)
    assert not window_closes(Window(m(-5), m(5)), watermark, RW)  # HOP: starts at 11:55, open
    assert truncated_watermark(m(3) + 59 * 1_000_000, m(1)) == m(3)  # date_trunc('minute')
    assert shifted_watermark(watermark, m(-2)) == m(1)
    flink = window_column_watermark(partial(window_end_watermark, tumble), m(10) - MICROS_PER_MILLI,
                                    Convention.FLINK)
    assert flink == m(20) - 1  # Flink has closed [12:00, 12:10) at W = 12:09:59.999
    assert math.isinf(window_end_watermark(tumble, CLOSED_WATERMARK))
