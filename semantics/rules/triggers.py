"""Boundary rules per engine and the trigger condition of every EOWC operator.

This module is the single place where "late", "complete" and "closed" are decided
(``SEMANTICS.md`` §2 and §3). Each rule is one small function of a time or a window, a
watermark and a :class:`Convention`; the interpreter and the specification call only these.

Watermarks are integer microseconds, or ``-inf`` before any row and ``+inf`` once the input
is closed. "Complete at W" means: no row that can still enter INPUT has a value in that range.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from eowc.semantics.ir.values import (
    FLINK_VALUES,
    MICROS_PER_MILLI,
    RISINGWAVE_VALUES,
    SPARK_VALUES,
    ValueRules,
)
from eowc.semantics.ir.windows import Window

#: The watermark before any row has arrived.
NO_WATERMARK = -math.inf
#: The watermark once a bounded input has ended (``--close``).
CLOSED_WATERMARK = math.inf

Watermark = int | float


@dataclass(frozen=True, eq=False, repr=False)
class BoundaryRules:
    """Where one engine draws the boundaries of EOWC (``SEMANTICS.md`` §2 and §3): each field is
    one way the engines differ, so that every rule below reads a field instead of asking which
    engine it is.

    Times and watermarks are integer microseconds.
    """

    #: How a row's event time ``c`` is compared with the watermark ``W`` in force before its
    #: epoch to find it late, and so how a time is found complete (``SEMANTICS.md`` §2, §3):
    #: ``"<"`` keeps rows equal to the watermark (RisingWave), ``"<="`` drops them (Spark,
    #: Flink).
    late_comparison: Literal["<", "<="]
    #: How long before its end a window ``[s, e)`` closes (``SEMANTICS.md`` §3): 0 where it
    #: closes at ``e <= W`` (RisingWave, Spark), 1 ms where Flink's timer at
    #: ``window_time = e - 1 ms`` fires (``W >= e - 1 ms``).
    closing_offset: int
    #: The precision of the ``max(c)`` a source watermark ``max(c) - d`` is computed from
    #: (``SEMANTICS.md`` §4): Spark keeps event-time statistics in milliseconds, so it
    #: truncates ``max(c)`` to the millisecond; RisingWave and Flink use it as it is.
    source_watermark_precision: int
    #: True if a windowed aggregate judges lateness on each (row, window) pair, not on the
    #: row at the source (``SEMANTICS.md`` §3): Spark filters on ``window.end <= W``; Flink
    #: drops a row only when the last window it belongs to has fired, so HOP and CUMULATE
    #: still take it into later windows. RisingWave checks the source row only.
    checks_lateness_per_window: bool
    #: The smallest step of event time the engine's boundary rules tell apart: a microsecond
    #: under RisingWave, a millisecond under Spark (its watermark) and Flink (its timers).
    #: Rows one unit either side of a boundary are where conventions and off-by-one bugs
    #: differ.
    unit: int
    #: How the engine computes with values where engines differ: BIGINT overflow (an error
    #: under RisingWave and Spark's ANSI mode, wrap-around under Flink), DECIMAL precision
    #: (28 digits in RisingWave, 38 in Spark and Flink) and the scale of a quotient,
    #: ``concat``'s NULLs (``docs/sql/types.md``). Expressions follow it under
    #: :func:`~eowc.semantics.ir.values.computing_under`.
    values: ValueRules
    #: How long a stream-stream join keeps a row past the time its range bound says no row
    #: still to come can meet it: 0 where it lets it go at once (RisingWave), a millisecond
    #: under Spark, which cleans a join's state up to a millisecond below the bound an
    #: inclusive range condition gives (``StreamingJoinHelper.getStateValueWatermark``:
    #: ``W - bound - 1 ms``, then every row ``<=`` it), so that an unmatched outer row whose
    #: bound equals the other side's watermark waits for the next one (seen on Spark 3.4.4,
    #: 3.5.3 and 4.3: docs/divergences/join-outer-row-one-ms-spark.yaml), and a millisecond
    #: under Flink, whose interval join cleans a row at ``t`` by a timer at ``t + bound +
    #: 1 ms`` (``TimeIntervalJoin``, seen on Flink 2.3.0:
    #: docs/divergences/interval-join-pads-by-both-flink.yaml). A join reads the other
    #: side's watermark this much lower for such a bound
    #: (:func:`~eowc.semantics.analysis.watermark_derivation.as_join_reads`); an equality of
    #: times (a window join's ``window_end``) is a key, not a range, and has none.
    join_state_margin: int
    #: True if two sessions whose windows meet merge: a row exactly ``gap`` after a session's
    #: last row joins it (Spark's ``session_window`` and Flink's SESSION merge windows
    #: ``[t, t + gap)`` that overlap *or touch*; seen on Spark 4.3 and Flink 1.19.0 and 2.3.0:
    #: docs/divergences/session-touching-flink.yaml). False where a row joins only when it is
    #: less than ``gap`` after (RisingWave, and seed 004's SESSION). See
    #: :func:`row_joins_session`.
    merges_touching_sessions: bool
    #: True if a join emits its unmatched outer rows once the join's own watermark, the
    #: least of both inputs', says no row still to come can match: Flink's window join fires
    #: a window by its operator's watermark (seen on Flink 2.0.0 and 2.3.0 with the window
    #: FULL JOIN of its documentation), and its interval join pads and cleans a row by it
    #: (``TimeIntervalJoin``; seen on Flink 2.3.0). False: once the other side's watermark
    #: says no row can still match (the least it needs). Read by
    #: :func:`~eowc.semantics.analysis.watermark_derivation.as_join_reads`. Where True, the
    #: join also judges its input rows late by that watermark, per window: a row late for its
    #: own table is kept while its window has not fired (Flink's window operators drop a row
    #: only once its window has fired; seen on Flink 2.0.0:
    #: docs/divergences/window-join-late-row-flink.yaml). Read by
    #: :func:`~eowc.semantics.analysis.operator_inputs.window_join_input`.
    join_waits_for_both: bool
    #: True if a deduplication keeping the last row (``ROW_NUMBER() OVER (... ORDER BY`` the
    #: event time ``DESC) <= 1``) keeps, of the rows tied at the latest time, the last to
    #: arrive: Flink's window deduplication replaces the kept row by each later row whose time
    #: is not smaller (``RowTimeWindowDeduplicateProcessor``, seen on Flink 2.3.0:
    #: docs/divergences/window-dedup-last-row-ties-flink.yaml). False where ties rank in
    #: arrival order, the first to arrive first (RisingWave's ``_row_id``). Read by
    #: :func:`~eowc.semantics.analysis.completion.ties_to_latest_arrival`.
    last_row_ties_to_latest: bool
    #: True if a query has one watermark, the least of its sources' watermarks, by which
    #: every operator judges late rows, closes windows and cleans its state: Spark's global
    #: watermark (``WatermarkTracker`` with ``spark.sql.streaming.multipleWatermarkPolicy``
    #: ``min``, its default; an input that has had no row yet holds it back). False where each
    #: source has its own and an operator reads those of its inputs (RisingWave, Flink). Read
    #: by :func:`query_watermarks`; seen on Spark 3.4.4, 3.5.3 and 4.3:
    #: docs/divergences/join-late-row-spark.yaml.
    global_watermark: bool

    @property
    def keeps_rows_at_watermark(self) -> bool:
        """A row whose event time equals the watermark is not late (the strict ``c < W``)."""
        return self.late_comparison == "<"

    @property
    def completion_gap(self) -> int:
        """How far a complete time may reach past the watermark, on integer microseconds: time
        ``t`` is complete at ``W`` iff ``t < W + completion_gap``, so 0 under ``<`` and 1 under
        ``<=``. A column's watermark in the ``<=`` reading is its strict one minus this gap."""
        return 0 if self.keeps_rows_at_watermark else 1


class Convention(BoundaryRules, Enum):
    """Whose boundary rule decides late rows and closed windows (``SEMANTICS.md`` §3): the
    three engines, each with its :class:`BoundaryRules`. ``Convention("spark")`` and
    ``.value`` (``"spark"``) name it.

    The three differ by one time unit (Flink's unit is the millisecond of its timers):

    ============ ============================ ========================= ==================
    convention   row is late                  window ``[s, e)`` closes  late check on
    ============ ============================ ========================= ==================
    risingwave   ``c < W``                    ``e <= W``                the source row
    spark        ``c <= W``                   ``e <= W``                each (row, window)
    flink        ``c <= W``                   ``W >= e - 1 ms``         each (row, window)
    ============ ============================ ========================= ==================
    """

    def __new__(cls, name: str, *rules: Any) -> Convention:
        member = object.__new__(cls)
        member._value_ = name
        return member

    def __init__(self, name: str, *rules: Any) -> None:
        BoundaryRules.__init__(self, *rules)

    # name, then the BoundaryRules fields in order: late_comparison, closing_offset,
    # source_watermark_precision, checks_lateness_per_window, unit, values, join_state_margin,
    # merges_touching_sessions, join_waits_for_both, last_row_ties_to_latest,
    # global_watermark
    RISINGWAVE = ("risingwave", "<", 0, 1, False, 1, RISINGWAVE_VALUES, 0, False, False, False,
                  False)
    SPARK = ("spark", "<=", 0, MICROS_PER_MILLI, True, MICROS_PER_MILLI, SPARK_VALUES,
             MICROS_PER_MILLI, True, False, False, True)
    FLINK = ("flink", "<=", MICROS_PER_MILLI, 1, True, MICROS_PER_MILLI, FLINK_VALUES,
             MICROS_PER_MILLI, True, True, True, False)


#: Each convention's default order of rows with equal ORDER BY values (``--ties``,
#: :data:`eowc.semantics.ir.plan.TIES`): the deterministic total order of SEMANTICS.md §2
#: for all three, so that results never depend on disorder; ``--ties row-id`` takes
#: RisingWave's own order (its hidden ``_row_id``, arrival order) for a run.
DEFAULT_TIES = {"risingwave": "deterministic", "spark": "deterministic", "flink": "deterministic"}


def default_ties(convention: Convention) -> str:
    """How ``convention`` orders rows with equal ORDER BY values unless a run says otherwise."""
    return DEFAULT_TIES[convention.value]


def source_watermark(max_event_time: Watermark, delay: int, convention: Convention) -> Watermark:
    """The watermark ``max(c) - d`` of a source that has seen ``max_event_time``.

    ``max(c)`` is first truncated to the convention's
    :attr:`~BoundaryRules.source_watermark_precision` (the millisecond under Spark).
    """
    if math.isinf(max_event_time):
        return max_event_time
    return max_event_time - max_event_time % convention.source_watermark_precision - delay


def query_watermarks(marks: Mapping[str, Watermark], convention: Convention
                     ) -> dict[str, Watermark]:
    """The watermark each source's rows are judged, and its columns read, by, from each
    source's own (``table.column`` to watermark): under a convention with one
    :attr:`~BoundaryRules.global_watermark` every source's is the least of all (Spark), under
    the others each source keeps its own. The result is monotone in each source's own, as
    they are."""
    if not convention.global_watermark or len(marks) < 2:
        return dict(marks)
    least = min(marks.values())
    return dict.fromkeys(marks, least)


def time_is_complete(t: int, watermark: Watermark, convention: Convention) -> bool:
    """No row that can still enter INPUT has watermark-column value ``t``.

    The trigger of the EOWC sort: a row is emitted once its watermark column is complete.
    RisingWave keeps rows equal to the watermark, so ``t`` is complete only below it; Spark
    and Flink drop rows equal to the watermark, so ``t <= W`` is complete.
    """
    return completeness_comparison(convention)(t, watermark)


def completeness_comparison(convention: Convention) -> Callable[[int, Watermark], bool]:
    """:func:`time_is_complete` (and so :func:`row_is_late`) with ``convention`` bound:
    ``t < W`` under RisingWave, ``t <= W`` under Spark and Flink. A built-in comparison, so
    the interpreter can apply it to every row at the cost of one call."""
    return _COMPARISONS[convention.late_comparison]


_COMPARISONS: dict[str, Callable[[int, Watermark], bool]] = {"<": operator.lt, "<=": operator.le}


def row_is_late(event_time: int, watermark_before: Watermark, convention: Convention) -> bool:
    """A row is late (not part of INPUT, Definition 1) iff its time was already complete
    under the watermark in force before its epoch."""
    return time_is_complete(event_time, watermark_before, convention)


def closing_watermark(window: Window, convention: Convention) -> int:
    """The least watermark at which ``window`` is closed: ``end`` under RisingWave and Spark;
    under Flink ``end - 1 ms``, when its timer at ``window_time`` fires."""
    return window.end - convention.closing_offset


def window_closes(window: Window, watermark: Watermark, convention: Convention) -> bool:
    """The trigger of a TUMBLE, HOP or CUMULATE window aggregate: the window is closed.

    RisingWave and Spark: ``end <= W``. Flink: its timer at ``end - 1 ms`` has fired,
    ``W >= end - 1 ms`` (:func:`closing_watermark`).
    """
    return watermark >= closing_watermark(window, convention)


def window_accepts(window: Window, watermark_before: Watermark, convention: Convention) -> bool:
    """A row arriving under ``watermark_before`` may still enter ``window``.

    Under per-window conventions (Spark, Flink) this is the whole late check of a windowed
    aggregate; under RisingWave a row that passed the source's check is never refused here
    (the window of a non-late row cannot be closed, see :func:`window_closes`).
    """
    return watermark_before < closing_watermark(window, convention)  # not window_closes(...)


def frame_is_complete(needed_value: int | None, watermark: Watermark, convention: Convention
                      ) -> bool:
    """The trigger of an EOWC OVER window (seed 002): a row's results are final once every
    row its frame reads is complete, i.e. ``needed_value`` (its own ORDER BY value, or the
    frame's last one: the k-th following row's, ``v + y`` for ``RANGE y FOLLOWING``) is
    complete. ``None``: the frame needs a row that has not arrived, or is UNBOUNDED
    FOLLOWING, so only the end of the input completes it."""
    if needed_value is None:
        return watermark == CLOSED_WATERMARK
    return time_is_complete(needed_value, watermark, convention)


def session_is_closed(last_time: int, gap: int, watermark: Watermark, convention: Convention
                      ) -> bool:
    """The trigger of an EOWC OVER window with a SESSION frame (RisingWave's ``SESSION WITH
    GAP``): the session whose last row is at ``last_time`` is closed, no row that can still
    arrive joins it. A row joins a session when it is less than ``gap`` after its last row, so
    the session is closed once every time before ``last_time + gap`` is complete
    (:func:`session_last_open_time` is complete): every row still to come is then at
    ``last_time + gap`` or later. Its rows' results are final from then on: no row can fall
    inside the session either, as their times are complete too. Under RisingWave this is
    ``window_closes([first, last + gap), W)``, ``last + gap <= W``; under Spark and Flink,
    whose late rows include the watermark, ``last + gap - 1 us <= W``."""
    return time_is_complete(session_last_open_time(last_time, gap), watermark, convention)


def row_joins_session(t: int, last_time: int, gap: int, convention: Convention,
                      watermark_before: Watermark = NO_WATERMARK) -> bool:
    """A row at ``t`` (no earlier than ``last_time``) joins the session whose last row is at
    ``last_time``, so that the two are one session ``[first, t + gap)``: its own window
    ``[t, t + gap)`` overlaps the session's ``[first, last_time + gap)``, ``t - last_time <
    gap``; or, where the engine merges sessions that touch
    (:attr:`~BoundaryRules.merges_touching_sessions`), it meets it, ``t - last_time == gap``,
    while the session still takes rows (:func:`window_accepts` of ``[first, t)`` under the
    watermark before the row's epoch). Spark's session is always open then, as the row is not
    late; Flink has fired it once ``W >= t - 1 ms``, and the row starts a session of its own.

    An operator that drops each session once it closes (the reference and the executors) has
    only open sessions left and passes no watermark; the specification, which groups all of
    INPUT at once, passes each row's."""
    after = t - last_time
    if after < gap:
        return True
    return after == gap and convention.merges_touching_sessions and \
        window_accepts(Window(last_time, t), watermark_before, convention)


def session_last_open_time(last_time: int, gap: int) -> int:
    """The latest time (in microseconds) at which a row would still join the session whose
    last row is at ``last_time``: ``last_time + gap - 1``. An OVER window waits for it to be
    complete (:func:`frame_is_complete` of it is :func:`session_is_closed`)."""
    return last_time + gap - 1


def unmatched_row_is_final(until: int | None, other_watermark: Watermark,
                           convention: Convention) -> bool:
    """The trigger of a join's unmatched outer row (and the cleaning of a join's state): no
    row that can still arrive on the other side can match it.

    ``until`` is the greatest value of the other side's bound column the row can match (for
    ``l.t BETWEEN r.t - a AND r.t + b``, a left row meets right rows with
    ``r.t <= l.t + a``; a right row meets left rows with ``l.t <= r.t + b``);
    ``other_watermark`` is the other side's watermark on that column. Every row still to come
    there has a value that is not complete, so the row is final iff ``until`` is complete.
    ``None`` (a NULL time) matches nothing: final at once."""
    return until is None or time_is_complete(until, other_watermark, convention)


def group_is_complete(watermark_value: int, watermark: Watermark, convention: Convention) -> bool:
    """The trigger of a GROUP BY whose key holds the source's watermark column itself.

    The group of event time ``v`` is complete exactly when ``v`` is (EOWC GroupAgg's
    SortBuffer over the result, keyed by the watermark column).
    """
    return time_is_complete(watermark_value, watermark, convention)


def windowed_row_is_late(windows: list[Window], watermark_before: Watermark,
                         convention: Convention) -> bool:
    """The late check of a windowed aggregate under a per-window convention (Spark, Flink):
    a row is late iff every window it belongs to refuses it (:func:`window_accepts`)."""
    return not any(window_accepts(w, watermark_before, convention) for w in windows)


def count_window_closes(last_time: int | None, watermark: Watermark,
                        convention: Convention) -> bool:
    """The trigger of a count window (COUNT_TUMBLE, COUNT_HOP: seed 003's tuple-based windows):
    the window has all its N rows and the time of its N-th (last) row is complete.

    ``last_time`` is None while the window has fewer than N rows: such a window never fires,
    not even at the end of the input (Flink's countWindow never emits a partial window).
    Once ``time_is_complete(last_time, W)``, every row that can still enter INPUT has a time
    strictly above ``last_time``, so it sorts after the window's rows and can shift neither
    them nor the rows of any earlier window of its key (``eowc prove --operator count-window``).
    """
    if last_time is None:
        return False
    return time_is_complete(last_time, watermark, convention)


def match_is_final(needed_value: int | None, watermark: Watermark, convention: Convention
                   ) -> bool:
    """The trigger of MATCH_RECOGNIZE (pattern recognition): a decision of the matcher (a match
    starting at a row, or that none starts there) is final once every row it read is
    complete. Rows are matched in ORDER BY order of the watermark column, and a DEFINE
    condition reads only the row it classifies and rows before it, so if ``needed_value`` (the
    ORDER BY value of the last row the search read: the match's last row, or the row after it
    when a greedy quantifier asked for one more) is complete, every row that can still arrive
    sorts after it and the search over the final input reads the same rows and decides the
    same. ``None``: the search asked for a row that has not arrived, so only the end of the
    input decides."""
    if needed_value is None:
        return watermark == CLOSED_WATERMARK
    return time_is_complete(needed_value, watermark, convention)


def gap_row_is_final(anchor_time: int, watermark: Watermark, convention: Convention) -> bool:
    """The trigger of RisingWave's EOWC GAP_FILL: a row of the output is final once its
    *anchor*, the real row it belongs to, has a complete time. A real row is its own anchor;
    a filled row's anchor is the real row that ends its gap (the next row of its partition),
    so the filled rows of a gap are released together with the row after them. Before that a
    row could still arrive in the gap (splitting it) and INTERPOLATE reads the next row; a gap
    after a partition's last row has no next row and is never filled (RisingWave's
    ``EowcGapFillExecutor`` fills between consecutive rows of its EOWC sort)."""
    return time_is_complete(anchor_time, watermark, convention)
