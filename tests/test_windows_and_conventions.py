"""Window assignment (eowc.semantics.ir.windows) and the per-engine boundary rules
   (eowc.semantics.rules.triggers).

Times are integer microseconds (``S`` = one second, ``MS`` = one millisecond). Expected values
are computed by hand in the comments; the boundary rules are those of SEMANTICS.md §3:

* RisingWave: row late iff ``c < W``; window ``[s, e)`` closes iff ``e <= W``.
* Spark: row late iff ``c <= W`` (window aggregates: per window, ``e <= W``); closes iff ``e <= W``;
  the source watermark truncates ``max(c)`` to the millisecond.
* Flink: row late iff ``c <= W`` (window aggregates: per window); closes iff ``W >= e - 1 ms``.
"""

from __future__ import annotations

import functools
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.ir.windows import Window, WindowKind, WindowSpec
from eowc.semantics.operators.logical import _sliding_assignment
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    group_is_complete,
    row_is_late,
    source_watermark,
    time_is_complete,
    window_accepts,
    window_closes,
    windowed_row_is_late,
)

S = 1_000_000
MS = 1_000
MIN = 60 * S

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK

TUMBLE_10 = WindowSpec(WindowKind.TUMBLE, 10 * S)
HOP_5_10 = WindowSpec(WindowKind.HOP, 10 * S, slide=5 * S)
CUMULATE_2_10 = WindowSpec(WindowKind.CUMULATE, 10 * S, slide=2 * S)


def w(start_s: float, end_s: float) -> Window:
    """A window given in seconds."""
    return Window(round(start_s * S), round(end_s * S))


# ---------------------------------------------------------------------------------------------
# WindowSpec.windows_of: TUMBLE


@pytest.mark.parametrize(("t", "expected"), [
    (13 * S, w(10, 20)),          # 13 - 13 % 10 = 10
    (10 * S, w(10, 20)),          # exactly on a start: the window that starts there (start is closed)
    (10 * S - 1, w(0, 10)),       # 9.999999 s: still in [0, 10) (end is open)
    (0, w(0, 10)),
    (-1, w(-10, 0)),              # -1 us: floor division, -1 - (-1 mod 10 s) = -10 s
    (-10 * S, w(-10, 0)),         # a negative start is itself a start
    (-10 * S - 1, w(-20, -10)),
])
def test_tumble_assigns_the_one_window_containing_t(t: int, expected: Window) -> None:
    """TUMBLE: exactly one window ``[k*size, (k+1)*size)`` contains ``t``."""
    assert TUMBLE_10.windows_of(t) == [expected]


@pytest.mark.parametrize(("t", "expected"), [
    (2 * S, w(-7, 3)),            # offset 3 s: starts at ..., -7, 3, 13; 2 s is in [-7, 3)
    (3 * S, w(3, 13)),            # exactly on the offset start
    (13 * S - 1, w(3, 13)),
    (13 * S, w(13, 23)),
    (-7 * S, w(-7, 3)),           # a negative start
    (-8 * S, w(-17, -7)),
])
def test_tumble_with_offset_shifts_every_start(t: int, expected: Window) -> None:
    """TUMBLE with offset 3 s: windows ``[3 + 10k, 13 + 10k)``."""
    spec = WindowSpec(WindowKind.TUMBLE, 10 * S, offset=3 * S)
    assert spec.windows_of(t) == [expected]


# ---------------------------------------------------------------------------------------------
# HOP


@pytest.mark.parametrize(("t", "expected"), [
    (7 * S, [w(0, 10), w(5, 15)]),        # starts 0 and 5 cover 7; ordered by end
    (5 * S, [w(0, 10), w(5, 15)]),        # on a start: the window starting at 5 includes it
    (10 * S, [w(5, 15), w(10, 20)]),      # 10 is the end of [0, 10), so not in it
    (10 * S - 1, [w(0, 10), w(5, 15)]),
    (-3 * S, [w(-10, 0), w(-5, 5)]),      # negative time
    (-5 * S, [w(-10, 0), w(-5, 5)]),      # negative time on a start
])
def test_hop_assigns_size_over_slide_windows(t: int, expected: list[Window]) -> None:
    """HOP slide 5 s size 10 s: every ``[5k, 5k + 10)`` containing ``t``, two per row."""
    assert HOP_5_10.windows_of(t) == expected


@pytest.mark.parametrize(("t", "expected"), [
    (7 * S, [w(2, 12), w(7, 17)]),        # offset 2: starts ..., -3, 2, 7, 12; [-3, 7) excludes 7
    (6 * S, [w(-3, 7), w(2, 12)]),
    (-4 * S, [w(-13, -3), w(-8, 2)]),     # starts -13, -8 (both ≡ 2 mod 5)
])
def test_hop_with_offset(t: int, expected: list[Window]) -> None:
    spec = WindowSpec(WindowKind.HOP, 10 * S, slide=5 * S, offset=2 * S)
    assert spec.windows_of(t) == expected


def test_hop_whose_size_is_not_a_multiple_of_its_slide() -> None:
    """slide 4 s, size 10 s: starts are multiples of 4; t = 0 lies in [-8, 2), [-4, 6), [0, 10);
    t = 2 s is the end of [-8, 2), so only [-4, 6) and [0, 10)."""
    spec = WindowSpec(WindowKind.HOP, 10 * S, slide=4 * S)
    assert spec.windows_of(0) == [w(-8, 2), w(-4, 6), w(0, 10)]
    assert spec.windows_of(2 * S) == [w(-4, 6), w(0, 10)]


def test_hop_with_gaps_between_windows() -> None:
    """slide 10 s, size 5 s: windows [0, 5), [10, 15): 3 s is in the first, 7 s in none."""
    spec = WindowSpec(WindowKind.HOP, 5 * S, slide=10 * S)
    assert spec.windows_of(3 * S) == [w(0, 5)]
    assert spec.windows_of(7 * S) == []


# ---------------------------------------------------------------------------------------------
# CUMULATE


@pytest.mark.parametrize(("t", "expected"), [
    # step 2 s, size 10 s: windows start at 10k, ends step 2, 4, ..., 10 s past the start
    (5 * S, [w(0, 6), w(0, 8), w(0, 10)]),                    # 5 is in the step [4, 6)
    (6 * S, [w(0, 8), w(0, 10)]),                             # on a step boundary: not in [0, 6)
    (0, [w(0, 2), w(0, 4), w(0, 6), w(0, 8), w(0, 10)]),      # on the window start: all five
    (10 * S, [w(10, 12), w(10, 14), w(10, 16), w(10, 18), w(10, 20)]),
    (10 * S - 1, [w(0, 10)]),                                 # last step only
    (-1, [w(-10, 0)]),                                        # negative: last step of [-10, 0)
    (-10 * S, [w(-10, -8), w(-10, -6), w(-10, -4), w(-10, -2), w(-10, 0)]),
])
def test_cumulate_windows_share_a_start_and_grow_by_step(t: int, expected: list[Window]) -> None:
    assert CUMULATE_2_10.windows_of(t) == expected


def test_cumulate_with_offset() -> None:
    """Offset 1 s: windows start at 1 + 10k. t = 0 is in the last step [-1, 1) of the window
    starting at -9: only [-9, 1). t = 1 s starts a new window: all five ends 3, 5, ..., 11."""
    spec = WindowSpec(WindowKind.CUMULATE, 10 * S, slide=2 * S, offset=1 * S)
    assert spec.windows_of(0) == [w(-9, 1)]
    assert spec.windows_of(1 * S) == [w(1, 3), w(1, 5), w(1, 7), w(1, 9), w(1, 11)]
    assert spec.windows_of(4 * S) == [w(1, 5), w(1, 7), w(1, 9), w(1, 11)]


def test_window_time_is_end_minus_one_millisecond() -> None:
    """``window_time = window_end - 1 ms`` (FLIP-145): [0, 10 s) has window_time 9.999 s."""
    assert w(0, 10).time == 10 * S - 1_000
    assert w(-10, 0).time == -1_000


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": WindowKind.TUMBLE, "size": 0}, "size must be positive"),
    ({"kind": WindowKind.HOP, "size": 10, "slide": 0}, "slide/step must be positive"),
    ({"kind": WindowKind.CUMULATE, "size": 10, "slide": 3}, "whole multiple"),
])
def test_invalid_window_specs_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WindowSpec(**kwargs)


@st.composite
def window_specs(draw: st.DrawFn) -> WindowSpec:
    """Small TUMBLE/HOP/CUMULATE specs in whole seconds, with an offset."""
    kind = draw(st.sampled_from(list(WindowKind)))
    offset = draw(st.integers(-7, 7)) * S
    if kind is WindowKind.TUMBLE:
        return WindowSpec(kind, draw(st.integers(1, 9)) * S, offset=offset)
    if kind is WindowKind.HOP:
        return WindowSpec(kind, draw(st.integers(1, 9)) * S, slide=draw(st.integers(1, 9)) * S,
                          offset=offset)
    step = draw(st.integers(1, 4))
    return WindowSpec(kind, step * draw(st.integers(1, 4)) * S, slide=step * S, offset=offset)


def brute_force_windows(spec: WindowSpec, t: int) -> list[Window]:
    """Every window of ``spec`` near ``t`` that contains ``t``, enumerated from the definition."""
    k0 = (t - spec.offset) // (spec.slide if spec.kind is WindowKind.HOP else spec.size)
    found: list[Window] = []
    for k in range(k0 - 20, k0 + 21):
        if spec.kind is WindowKind.TUMBLE:
            candidates = [Window(spec.offset + k * spec.size, spec.offset + (k + 1) * spec.size)]
        elif spec.kind is WindowKind.HOP:
            candidates = [Window(spec.offset + k * spec.slide, spec.offset + k * spec.slide + spec.size)]
        else:
            start = spec.offset + k * spec.size
            candidates = [Window(start, start + j * spec.slide)
                          for j in range(1, spec.size // spec.slide + 1)]
        found.extend(c for c in candidates if c.start <= t < c.end)
    return sorted(set(found), key=lambda x: (x.end, x.start))


@settings(max_examples=300, deadline=None)
@given(spec=window_specs(), t=st.integers(-40 * S, 40 * S)
       | st.integers(-40, 40).map(lambda k: k * S))
def test_windows_of_equals_the_definition(spec: WindowSpec, t: int) -> None:
    """windows_of(t) lists exactly the windows of the definition that contain t, by end."""
    got = spec.windows_of(t)
    assert got == brute_force_windows(spec, t)
    assert [x.end for x in got] == sorted(x.end for x in got)


# ---------------------------------------------------------------------------------------------
# Boundary rules, example by example


def test_source_watermark_is_max_minus_delay_and_spark_truncates_to_the_millisecond() -> None:
    """max(c) = 10.0005 s, delay 1 s. RisingWave/Flink: 9.0005 s. Spark: max truncated to
    10.000 s first, so 9.000 s."""
    assert source_watermark(10 * S + 500, 1 * S, RW) == 9 * S + 500
    assert source_watermark(10 * S + 500, 1 * S, FLINK) == 9 * S + 500
    assert source_watermark(10 * S + 500, 1 * S, SPARK) == 9 * S
    # Already millisecond-aligned: no change (10.007 s - 1 s).
    assert source_watermark(10 * S + 7 * MS, 1 * S, SPARK) == 9 * S + 7 * MS
    # Negative times truncate toward -infinity like Math.floorDiv: -1.5 ms -> -2 ms.
    assert source_watermark(-1_500, 0, SPARK) == -2 * MS
    # Before any row the watermark stays -infinity under every convention.
    for convention in Convention:
        assert source_watermark(NO_WATERMARK, 5 * S, convention) == NO_WATERMARK


@pytest.mark.parametrize(("convention", "at_w", "below_w", "above_w"), [
    # c == W is kept by RisingWave (late only below W); Spark and Flink drop c == W.
    (RW, False, True, False),
    (SPARK, True, True, False),
    (FLINK, True, True, False),
])
def test_row_lateness_at_the_watermark(convention: Convention, at_w: bool, below_w: bool,
                                       above_w: bool) -> None:
    watermark = 100 * S
    assert row_is_late(watermark, watermark, convention) is at_w
    assert row_is_late(watermark - 1, watermark, convention) is below_w
    assert row_is_late(watermark + 1, watermark, convention) is above_w
    # time_is_complete (EOWC sort trigger) and group_is_complete (GROUP BY c) are the same rule.
    assert time_is_complete(watermark, watermark, convention) is at_w
    assert group_is_complete(watermark, watermark, convention) is at_w
    assert group_is_complete(watermark + 1, watermark, convention) is above_w


@pytest.mark.parametrize(("convention", "closed_at_w"), [
    # window [0, 10 s) with W = 10 s - 1 ms = 9.999 s: only Flink's timer (at e - 1 ms) has fired
    (RW, {10 * S: True, 10 * S - 1: False, 10 * S - MS: False, 10 * S - MS - 1: False}),
    (SPARK, {10 * S: True, 10 * S - 1: False, 10 * S - MS: False, 10 * S - MS - 1: False}),
    (FLINK, {10 * S: True, 10 * S - 1: True, 10 * S - MS: True, 10 * S - MS - 1: False}),
])
def test_window_closes_at_end_or_end_minus_one_millisecond(convention: Convention,
                                                           closed_at_w: dict[int, bool]) -> None:
    window = w(0, 10)
    for watermark, closed in closed_at_w.items():
        assert window_closes(window, watermark, convention) is closed, watermark
        assert window_accepts(window, watermark, convention) is (not closed), watermark


def test_infinite_watermarks() -> None:
    """Before any row nothing is complete, late or closed; once closed, everything is."""
    for convention in Convention:
        assert not time_is_complete(-10**15, NO_WATERMARK, convention)
        assert not window_closes(w(-100, -90), NO_WATERMARK, convention)
        assert time_is_complete(10**15, CLOSED_WATERMARK, convention)
        assert window_closes(w(10**6, 10**6 + 1), CLOSED_WATERMARK, convention)
        assert not row_is_late(-10**15, NO_WATERMARK, convention)


def test_only_spark_and_flink_check_lateness_per_window() -> None:
    assert not RW.checks_lateness_per_window
    assert SPARK.checks_lateness_per_window
    assert FLINK.checks_lateness_per_window


@pytest.mark.parametrize(("convention", "watermark", "late"), [
    # t = 7 s under HOP slide 5 size 10: windows [0, 10) and [5, 15).
    (SPARK, 10 * S, False),          # [0, 10) closed (10 <= 10), [5, 15) open: counted there
    (FLINK, 10 * S, False),
    (SPARK, 15 * S - MS, False),     # [5, 15) still open for Spark at 14.999 s ...
    (FLINK, 15 * S - MS, True),      # ... but Flink's timer at 14.999 s has fired: late
    (SPARK, 15 * S, True),           # every window closed
    (FLINK, 15 * S, True),
])
def test_windowed_row_is_late_only_when_every_window_refuses(convention: Convention, watermark: int,
                                                            late: bool) -> None:
    windows = HOP_5_10.windows_of(7 * S)
    assert windows == [w(0, 10), w(5, 15)]
    assert windowed_row_is_late(windows, watermark, convention) is late


def test_row_level_and_window_level_late_checks_differ() -> None:
    """t = 7 s, W = 10 s: late by the row rule under every convention (7 < 10), yet the window
    [5, 15) is still open, so Spark's and Flink's windowed aggregates keep the row."""
    windows = HOP_5_10.windows_of(7 * S)
    for convention in Convention:
        assert row_is_late(7 * S, 10 * S, convention)
    assert not windowed_row_is_late(windows, 10 * S, SPARK)
    assert not windowed_row_is_late(windows, 10 * S, FLINK)


# ---------------------------------------------------------------------------------------------
# Properties: every trigger is monotone in the watermark, and the late checks are sound

conventions = st.sampled_from(list(Convention))
times = st.integers(-30 * S, 30 * S) | st.integers(-30_000, 30_000).map(lambda k: k * MS)
finite_watermarks = st.integers(-30 * S, 30 * S) | st.integers(-30_000, 30_000).map(lambda k: k * MS)
watermarks = finite_watermarks | st.just(NO_WATERMARK)
raises = st.integers(0, 10 * S) | st.integers(0, 10_000).map(lambda k: k * MS) | st.just(math.inf)


@settings(max_examples=400, deadline=None)
@given(convention=conventions, spec=window_specs(), t=times, watermark=watermarks, rise=raises)
def test_every_trigger_is_monotone_in_the_watermark(convention: Convention, spec: WindowSpec,
                                                    t: int, watermark: float, rise: float) -> None:
    """If a trigger holds at W it holds at every W' >= W (and acceptance only ever stops)."""
    later = CLOSED_WATERMARK if math.isinf(rise) else watermark + rise
    assert later >= watermark
    if time_is_complete(t, watermark, convention):
        assert time_is_complete(t, later, convention)
    if row_is_late(t, watermark, convention):
        assert row_is_late(t, later, convention)
    if group_is_complete(t, watermark, convention):
        assert group_is_complete(t, later, convention)
    windows = spec.windows_of(t)
    for window in windows:
        if window_closes(window, watermark, convention):
            assert window_closes(window, later, convention)
        if window_accepts(window, later, convention):
            assert window_accepts(window, watermark, convention)
    if windows and windowed_row_is_late(windows, watermark, convention):
        assert windowed_row_is_late(windows, later, convention)


@settings(max_examples=200, deadline=None)
@given(convention=conventions, high=times, rise=st.integers(0, 10 * S),
       delay=st.integers(0, 10 * S))
def test_source_watermark_never_decreases_with_max_event_time(convention: Convention, high: int,
                                                              rise: int, delay: int) -> None:
    assert source_watermark(high + rise, delay, convention) >= source_watermark(high, delay,
                                                                                convention)
    # and it never runs ahead of max(c) - d
    assert source_watermark(high, delay, convention) <= high - delay


@settings(max_examples=400, deadline=None)
@given(convention=st.sampled_from([RW, SPARK]), spec=window_specs(), t=times,
       watermark=watermarks)
def test_row_level_late_check_is_sound_for_risingwave_and_spark(convention: Convention,
                                                                spec: WindowSpec, t: int,
                                                                watermark: float) -> None:
    """A row that is not late cannot fall into a window that is already closed: c >= W (or
    c > W) and e > c give e > W, so ``e <= W`` fails."""
    if not row_is_late(t, watermark, convention):
        for window in spec.windows_of(t):
            assert not window_closes(window, watermark, convention)
        assert not time_is_complete(t, watermark, convention)
        assert not group_is_complete(t, watermark, convention)


@settings(max_examples=400, deadline=None)
@given(spec=window_specs(), t_ms=st.integers(-30_000, 30_000), watermark=watermarks)
def test_row_level_late_check_is_sound_for_flink_on_millisecond_times(spec: WindowSpec, t_ms: int,
                                                                      watermark: float) -> None:
    """Flink's event time is in milliseconds: c > W and e >= c + 1 ms give W < e - 1 ms."""
    t = t_ms * MS
    if not row_is_late(t, watermark, FLINK):
        for window in spec.windows_of(t):
            assert not window_closes(window, watermark, FLINK)


@settings(max_examples=400, deadline=None)
@given(convention=conventions, spec=window_specs(), t=times, watermark=watermarks)
def test_windowed_late_check_is_sound_and_never_stricter_than_the_row_rule(
        convention: Convention, spec: WindowSpec, t: int, watermark: float) -> None:
    """Under a per-window convention, a row that is not late enters only open windows, and at
    least one exists. For Spark (and Flink on millisecond times) a row the windowed check
    refuses is also late by the row rule: the window-level check only ever keeps more rows."""
    windows = spec.windows_of(t)
    if not windows:
        return
    if not windowed_row_is_late(windows, watermark, convention):
        entered = [x for x in windows if window_accepts(x, watermark, convention)]
        assert entered
        assert all(not window_closes(x, watermark, convention) for x in entered)
    elif convention is SPARK or (convention is FLINK and t % MS == 0):
        assert row_is_late(t, watermark, convention)


@settings(max_examples=200, deadline=None)
@given(convention=conventions, spec=window_specs(), t=times, watermark=finite_watermarks,
       rise=st.integers(0, 10 * S))
def test_a_closed_window_never_accepts_a_later_row(convention: Convention, spec: WindowSpec, t: int,
                                                   watermark: int, rise: int) -> None:
    """Once emitted (closed at W), a window refuses every row arriving under W' >= W, so an
    emitted result is final."""
    for window in spec.windows_of(t):
        if window_closes(window, watermark, convention):
            assert not window_accepts(window, watermark + rise, convention)


# --------------------------------------------------------------------------- a convention is data

def test_each_convention_is_its_boundary_rules() -> None:
    """The fields, as SEMANTICS.md §3 and §4 state them (1 ms = 1000 µs)."""
    rules = {c.value: (c.late_comparison, c.closing_offset, c.source_watermark_precision,
                       c.checks_lateness_per_window, c.unit) for c in Convention}
    assert rules == {"risingwave": ("<", 0, 1, False, 1),
                     "spark": ("<=", 0, 1000, True, 1000),
                     "flink": ("<=", 1000, 1, True, 1000)}
    assert [c.completion_gap for c in (RW, SPARK, FLINK)] == [0, 1, 1]
    assert [c.keeps_rows_at_watermark for c in (RW, SPARK, FLINK)] == [True, False, False]


def test_a_convention_is_named_hashed_pickled_and_cached() -> None:
    assert [Convention(name) for name in ("risingwave", "spark", "flink")] == [RW, SPARK, FLINK]
    assert [c.value for c in Convention] == ["risingwave", "spark", "flink"]
    assert all(pickle.loads(pickle.dumps(c)) is c for c in Convention)
    assert len({RW: 1, SPARK: 2, FLINK: 3}) == 3 and RW != SPARK
    calls = []

    @functools.lru_cache(maxsize=8)
    def cached(convention: Convention) -> str:
        calls.append(convention)
        return convention.value
    assert [cached(c) for c in (SPARK, SPARK, Convention("spark"))] == ["spark"] * 3
    assert calls == [SPARK]
    with pytest.raises(AttributeError):
        SPARK.closing_offset = 0  # type: ignore[misc]
    with pytest.raises(ValueError):
        Convention("beam")


@settings(max_examples=300, deadline=None)
@given(spec=window_specs(), t=st.integers(-40 * S, 40 * S)
       | st.integers(-40, 40).map(lambda k: k * S))
def test_the_interpreters_inline_window_assignment_equals_the_definition(spec: WindowSpec,
                                                                         t: int) -> None:
    """The interpreter's TUMBLE/HOP assignment (arithmetic inline, for speed) appends to a row
    exactly the windows of the definition that contain its time, by end, with window_time."""
    if spec.kind is WindowKind.CUMULATE:
        return
    slide = spec.slide if spec.kind is WindowKind.HOP else spec.size
    assign = _sliding_assignment(1, spec.size, slide, spec.offset)
    expected = [("a", t, w.start, w.end, w.end - MS) for w in brute_force_windows(spec, t)]
    assert assign(("a", t), NO_WATERMARK) == expected
    assert assign(("a", None), NO_WATERMARK) == []
