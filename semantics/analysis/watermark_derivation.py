"""Watermark derivation: which output columns of each plan operator carry a watermark, derived
from which source column, by which non-decreasing map of the source watermark ``W``.

The rules, one per operator (seeds ``000`` and ``001``; ``SEMANTICS.md`` §2):

* **Scan**: the column of ``WATERMARK FOR c AS c - INTERVAL d`` carries ``W`` itself.
* **Filter**: every column keeps its watermark (rows are only removed).
* **Project** and the keys of **GROUP BY**: a column keeps a watermark only if its expression
  is proven non-decreasing in a watermark column: a column reference, ``c + INTERVAL``,
  ``c - INTERVAL``, ``tumble_start(c, size)``, ``date_trunc(unit, c)``. Multiplication,
  division, negation, CAST, CASE and every other function lose it (:class:`Lost` says why).
  Aggregate results carry none.
* **TUMBLE, HOP, CUMULATE** over a watermark column: ``window_start``, ``window_end`` and
  ``window_time`` carry the watermarks of :mod:`eowc.semantics.analysis.watermark_maps` (HOP's
  ``window_start``
  is not TUMBLE's).

* **UNION ALL**: a column carries the minimum of its inputs' watermarks when every input's
  does (:func:`minimum`).
* **JOIN**: a joined row comes out when the later of its two rows arrives, so only a column
  the condition bounds below by the other side's watermark column keeps one: for
  ``l.t >= r.t + lower`` (an interval join's lower bound, or an equality),
  ``l.t``'s watermark is ``min(W_l, W_r + lower)``, and symmetrically for the upper bound
  (:func:`join_time_bounds`). A window join's equal ``window_start``/``window_end`` keep the
  minimum of both sides'.
* **OVER** windows keep only their one ascending ORDER BY column (the EOWC OverWindow emits
  rows in its order once complete); **TopN** keeps its PARTITION BY columns (a window TopN
  emits a window's rows when it closes) and the one ascending ORDER BY column of a
  deduplication. Their results carry none.

Columns derived from the same source column form one *group*
(``Derivation.source``). The interpreter finds its trigger columns here
(:func:`eowc.semantics.analysis.completion.watermark_columns`), so there is one copy of these rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from eowc.semantics.analysis.watermark_maps import (
    least_watermark,
    shifted_watermark,
    truncated_watermark,
    window_end_watermark,
    window_start_watermark,
)
from eowc.semantics.ir.expr import (
    Binary,
    Case,
    Cast,
    ColumnRef,
    Expr,
    Func,
    Literal,
    Schema,
    Unary,
    date_trunc,
    referenced_columns,
    sql_of,
)
from eowc.semantics.ir.plan import (
    Aggregate,
    CountTVF,
    Filter,
    GapFill,
    Join,
    MatchRecognize,
    OverWindow,
    Plan,
    Project,
    ProjectSet,
    Scan,
    SessionTVF,
    Source,
    TopN,
    Union,
    WindowTVF,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, MICROS_PER_SECOND, SqlType
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.rules.triggers import Convention, Watermark

#: Units of ``date_trunc`` with a fixed length, in microseconds.
FIXED_UNITS = {"microsecond": 1, "millisecond": MICROS_PER_MILLI, "second": MICROS_PER_SECOND,
               "minute": 60 * MICROS_PER_SECOND, "hour": 3600 * MICROS_PER_SECOND,
               "day": 86400 * MICROS_PER_SECOND}
#: ``date_trunc('week', c)``: weeks start on Monday, 1970-01-05 (day 4 of the epoch).
WEEK, WEEK_OFFSET = 7 * FIXED_UNITS["day"], 4 * FIXED_UNITS["day"]
#: The roles a carrying column can have; ``derived`` is any other non-decreasing map.
ROLES = ("event_time", "window_start", "window_end", "window_time", "session_end", "derived")


def duration_text(micros: int) -> str:
    """``5s``, ``-1ms``, ``2h``, ``1500us``: a duration in its largest whole unit."""
    for unit, size in (("d", 86400 * MICROS_PER_SECOND), ("h", 3600 * MICROS_PER_SECOND),
                       ("min", 60 * MICROS_PER_SECOND), ("s", MICROS_PER_SECOND),
                       ("ms", MICROS_PER_MILLI)):
        if micros and micros % size == 0:
            return f"{micros // size}{unit}"
    return f"{micros}us"


def window_text(spec: WindowSpec) -> str:
    """``TUMBLE(5s)``, ``HOP(6s, slide 2s)``, ``CUMULATE(10s, step 2s)``, with the offset."""
    parts = [duration_text(spec.size)]
    if spec.kind.value == "HOP":
        parts.append(f"slide {duration_text(spec.slide)}")
    elif spec.kind.value == "CUMULATE":
        parts.append(f"step {duration_text(spec.slide)}")
    if spec.offset:
        parts.append(f"offset {duration_text(spec.offset)}")
    return f"{spec.kind.value}({', '.join(parts)})"


@dataclass(frozen=True)
class Step:
    """One non-decreasing map from a column's watermark to the watermark of a column computed
    from it: ``shift`` by ``amount``; ``truncate`` to buckets of ``amount`` from ``offset``;
    ``calendar`` truncation to a month or a year (``unit``); a window TVF's ``window_start``
    or ``window_end`` (``spec``); ``join_state``, the other side's watermark as a join reads it
    for a range bound, lower by the convention's
    :attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_state_margin` (the ``margin``
    of :meth:`apply`; nothing in the RisingWave reading)."""

    kind: str
    amount: int = 0
    offset: int = 0
    unit: str = ""
    spec: WindowSpec | None = None

    def apply(self, watermark: Watermark, margin: int = 0) -> Watermark:
        if self.kind == "shift":
            return shifted_watermark(watermark, self.amount)
        if self.kind == "join_state":
            return shifted_watermark(watermark, -margin)
        if self.kind == "truncate":
            return truncated_watermark(watermark, self.amount, self.offset)
        if self.kind == "calendar":
            return watermark if math.isinf(watermark) else date_trunc(self.unit, int(watermark))
        assert self.spec is not None
        if self.kind == "window_start":
            return window_start_watermark(self.spec, watermark)
        return window_end_watermark(self.spec, watermark)

    def describe(self, inner: str) -> str:
        """The map applied to the watermark written ``inner``."""
        if self.kind == "shift":
            sign = "-" if self.amount < 0 else "+"
            return f"{inner} {sign} {duration_text(abs(self.amount))}"
        if self.kind == "join_state":
            return inner  # the margin is the reading's (expression_in_reading)
        if self.kind == "truncate":
            offset = f", offset {duration_text(self.offset)}" if self.offset else ""
            return f"trunc({inner}, {duration_text(self.amount)}{offset})"
        if self.kind == "calendar":
            return f"date_trunc('{self.unit}', {inner})"
        assert self.spec is not None
        spec = self.spec
        period = spec.slide if spec.kind is WindowKind.HOP else spec.size
        if self.kind == "window_start":  # eowc.semantics.analysis.watermark_maps.window_start_watermark
            shifted = Step("shift", amount=period - spec.size).describe(inner) \
                if period != spec.size else inner
            return Step("truncate", amount=period, offset=spec.offset).describe(shifted)
        step = spec.size if spec.kind is WindowKind.TUMBLE else spec.slide  # window_end_watermark
        bucket = Step("truncate", amount=step, offset=(spec.offset + spec.size) % step)
        return Step("shift", amount=step).describe(bucket.describe(inner))


@dataclass(frozen=True)
class Derivation:
    """An output ``column`` that carries a watermark: the watermark of the source column
    ``source`` (``table.column``, its group) mapped by ``steps``, in order. ``role`` is what
    the column is to the trigger conditions (one of :data:`ROLES`); ``window`` the TVF of a
    window column."""

    column: str
    source: str
    role: str = "event_time"
    steps: tuple[Step, ...] = ()
    window: WindowSpec | None = None
    #: The minimum of these, then ``steps`` (a union, a join's keys): ``source`` names them all.
    parts: tuple[Derivation, ...] = ()

    def watermark(self, source_watermark: Watermark | Mapping[str, Watermark],
                  join_margin: int = 0) -> Watermark:
        """The column's watermark when the source column's is ``source_watermark`` (a
        mapping from source column to watermark when it derives from several): every value
        strictly below it is complete (the RisingWave reading of
        :mod:`eowc.semantics.analysis.watermark_maps`). ``join_margin``: what a ``join_state``
        step takes off (the convention's; :func:`watermark_in_reading`)."""
        if self.parts:
            watermark = least_watermark(*(p.watermark(source_watermark, join_margin)
                                          for p in self.parts))
        elif isinstance(source_watermark, Mapping):
            watermark = source_watermark[self.source]
        else:
            watermark = source_watermark
        for step in self.steps:
            watermark = step.apply(watermark, join_margin)
        return watermark

    def expression(self, named: bool = False) -> str:
        """The map in words, the source watermark written ``W`` (``W[table.column]`` when
        ``named`` or when it derives from several): ``trunc(W, 1min)``."""
        if self.parts:
            text = f"min({', '.join(p.expression(named=True) for p in self.parts)})"
        else:
            text = f"W[{self.source}]" if named else "W"
        for step in self.steps:
            text = step.describe(text)
        return text

    def then(self, step: Step, column: str) -> Derivation:
        """The column ``column`` computed from this one by ``step``."""
        if self.parts:
            return replace(self, column=column, role="derived", steps=(*self.steps, step),
                           window=None)
        return Derivation(column, self.source, "derived", (*self.steps, step))


def watermark_in_reading(derivation: Derivation, source_watermarks: Mapping[str, Watermark],
                         convention: Convention, join_margin: int | None = None) -> Watermark:
    """The column's watermark in ``convention``'s reading, from the source watermarks (each in
    that reading): a value ``v`` of the column is complete iff
    ``time_is_complete(v, it, convention)``. A ``join_state`` step takes off ``join_margin``
    (default: the convention's
    :attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_state_margin`).

    - risingwave: :meth:`Derivation.watermark` itself (values strictly below are complete).
    - spark and flink read ``v <= W``, which on integer microseconds is ``v < W + 1``: map
      ``W + 1`` and subtract 1 again. A window column follows the convention's closing rule
      instead (:func:`eowc.semantics.analysis.watermark_maps.window_column_watermark`): Spark closes
      windows as
      RisingWave does (map ``W``), Flink one millisecond early (map ``W + 1 ms``).
    """
    shift, gap = _reading(derivation, convention)
    margin = convention.join_state_margin if join_margin is None else join_margin
    return derivation.watermark({k: w + shift for k, w in source_watermarks.items()},
                                margin) - gap


def _reading(derivation: Derivation, convention: Convention) -> tuple[int, int]:
    """How ``convention`` reads a derived watermark (:func:`watermark_in_reading`): the
    shift of the source watermarks it is mapped from, and the gap taken off the result."""
    gap = convention.completion_gap
    return (convention.closing_offset if _has_window_step(derivation) else gap), gap


def expression_in_reading(derivation: Derivation, convention: Convention) -> str:
    """:func:`watermark_in_reading` in words: the column's watermark in ``convention``'s
    reading, from the source watermarks ``W`` (each in that reading). Where the reading
    changes nothing (RisingWave; a column that only shifts ``W``), the derivation's own
    :meth:`~Derivation.expression`; else, e.g. under Flink, ``trunc(W + 1ms, 1min) + 1min - 1ms
    - 1us``."""
    text = derivation.expression()
    if convention.join_state_margin and _reads_join_state(derivation):
        text = f"{text} (its join's other side read {duration_text(convention.join_state_margin)} lower)"
    shift, gap = _reading(derivation, convention)
    if not gap or (shift == gap and _only_shifts(derivation)):
        return text
    if shift:
        text = re.sub(r"\bW(\[[^\]]*\])?", lambda m: f"{m.group(0)} + {duration_text(shift)}", text)
    return f"{text} - {duration_text(gap)}"


def _reads_join_state(derivation: Derivation) -> bool:
    return any(s.kind == "join_state" for s in derivation.steps) or \
        any(_reads_join_state(p) for p in derivation.parts)


def _only_shifts(derivation: Derivation) -> bool:
    return all(s.kind in ("shift", "join_state") for s in derivation.steps) and \
        all(_only_shifts(p) for p in derivation.parts)


def _has_window_step(derivation: Derivation) -> bool:
    return any(s.kind in ("window_start", "window_end") for s in derivation.steps) or \
        any(_has_window_step(p) for p in derivation.parts)


@dataclass(frozen=True)
class Lost:
    """An output ``column`` computed from a watermark column by ``expression`` that carries no
    watermark, and why."""

    column: str
    expression: str
    reason: str


@dataclass(frozen=True)
class Derived:
    """What one operator's output carries: a :class:`Derivation` or None per output column
    (in schema order), and the columns that lost a watermark here."""

    columns: tuple[Derivation | None, ...]
    lost: tuple[Lost, ...] = ()

    @property
    def carrying(self) -> tuple[Derivation, ...]:
        return tuple(d for d in self.columns if d is not None)


@dataclass(frozen=True)
class DerivedSource(Source):
    """The output of an operator read as the source of the operator above it (a *derived
    source*, :mod:`eowc.semantics.analysis.operator_inputs`): ``derivations`` says which of its
    columns carry a watermark, as maps of its one watermark (the watermark column's: the
    time column under the window columns it carries, when they are window columns)."""

    derivations: tuple[Derivation | None, ...] = ()


@lru_cache(maxsize=512)
def derive(plan: Plan) -> Derived:
    """The watermark derivation of ``plan``'s output (the rules of the module docstring)."""
    if isinstance(plan, Scan) and isinstance(plan.source, DerivedSource) and \
            plan.source.derivations:
        return Derived(plan.source.derivations)
    if isinstance(plan, Scan):
        source, index = plan.source, plan.source.event_time_index
        return Derived(tuple(Derivation(c.name, f"{source.name}.{c.name}") if i == index else None
                             for i, c in enumerate(source.columns)))
    if isinstance(plan, Filter):
        return derive(plan.input)
    if isinstance(plan, Union):
        return _union(plan)
    if isinstance(plan, Join):
        return _join(plan)
    below = derive(plan.input)  # type: ignore[attr-defined]
    if isinstance(plan, OverWindow):
        return _over_window(plan, below)
    if isinstance(plan, TopN):
        return _top_n(plan, below)
    if isinstance(plan, WindowTVF):
        return _window_tvf(plan, below)
    if isinstance(plan, SessionTVF):
        return _session_tvf(plan, below)
    if isinstance(plan, CountTVF):
        return _count_tvf(plan, below)
    if isinstance(plan, MatchRecognize):
        return _match_recognize(plan, below)
    if isinstance(plan, GapFill):
        return _gap_fill(plan, below)
    if isinstance(plan, Project | ProjectSet | Aggregate):  # an unnested element keeps none
        items = plan.group_by if isinstance(plan, Aggregate) else plan.items
        made = [expression_derivation(expr, name, plan.input.schema, below) for name, expr in items]
        extra = len(plan.schema) - len(items)  # aggregate results
        return Derived(tuple(d if isinstance(d, Derivation) else None for d in made)
                       + (None,) * extra, tuple(d for d in made if isinstance(d, Lost)))
    raise TypeError(f"no watermark derivation for {type(plan).__name__}")


def _gap_fill(plan: GapFill, below: Derived) -> Derived:
    """GAP_FILL keeps the watermarks of its PARTITION_BY columns only (RisingWave's
    ``StreamEowcGapFill``): a filled row copies them from a row of its partition. Its time
    column loses its watermark: a row ending a gap fills it back to the row before it in its
    partition, which can be arbitrarily older than the watermark; the other columns of a
    filled row are copied, interpolated or NULL."""
    names = [c.name for c in plan.input.schema]
    why = ("a row ending a gap fills it back to the previous row of its partition, which "
           "can be arbitrarily older than the watermark")
    kept = tuple(d if name in plan.partition_by else None
                 for name, d in zip(names, below.columns, strict=True))
    lost = tuple(Lost(name, f"GAP_FILL({name})", why)
                 for name, d, k in zip(names, below.columns, kept, strict=True)
                 if d is not None and k is None)
    return Derived(kept, below.lost + lost)


def _match_recognize(plan: MatchRecognize, below: Derived) -> Derived:
    """MATCH_RECOGNIZE's output carries no watermark: a match can wait for the row after it
    in its partition (a greedy quantifier asks for one more row), which can arrive
    arbitrarily later, so an old match (its LAST(ts) long complete) can still be emitted.
    Every measure over a column that carries one, and a partition column that does, loses
    it here (``eowc explain`` says why)."""
    names = [c.name for c in plan.input.schema]
    carried = {name for name, d in zip(names, below.columns, strict=True) if d is not None}
    why = ("a match waits for the rows its search reads, up to the next row of its "
           "partition, which can arrive arbitrarily later")
    lost = [Lost(k, f"PARTITION BY {k}", why) for k in plan.partition_by if k in carried]
    for name, expr in plan.measures:
        if {getattr(r, "column", None) for r in _pattern_refs(expr)} & carried:
            lost.append(Lost(name, sql_of(expr), why))
    return Derived((None,) * len(plan.schema), below.lost + tuple(lost))


def _pattern_refs(expr: Expr) -> list[Expr]:
    """The PatternRef/MatchAggregate nodes of a MATCH_RECOGNIZE expression."""
    if type(expr).__name__ in ("PatternRef", "MatchAggregate"):
        return [expr]
    found: list[Expr] = []
    for value in vars(expr).values():
        for child in value if isinstance(value, tuple) else (value,):
            if isinstance(child, Expr):
                found += _pattern_refs(child)
    return found


def _session_tvf(plan: SessionTVF, below: Derived) -> Derived:
    """A session's end is ``last + gap``: every open session ends after ``W`` and every new one
    at ``t + gap > W``, so ``window_end`` carries ``W`` itself (role ``session_end``) and
    ``window_time`` ``W - 1 ms``. ``window_start`` carries none: an open session keeps the
    start of its first row, however old."""
    names = [c.name for c in plan.input.schema]
    time = below.columns[names.index(plan.time_column)]
    if time is None:
        lost = Lost("window_end", f"SESSION({plan.time_column})",
                    f"its time column {plan.time_column} carries no watermark")
        return Derived(below.columns + (None, None, None), below.lost + (lost,))
    end = replace(time, column="window_end", role="session_end", window=None)
    made = (None, end, replace(end.then(Step("shift", amount=-MICROS_PER_MILLI), "window_time"),
                               role="session_end"))
    lost = Lost("window_start", f"SESSION({plan.time_column})",
                "an open session keeps the start of its first row, however old")
    return Derived(below.columns + made, below.lost + (lost,))


def _count_tvf(plan: CountTVF, below: Derived) -> Derived:
    """A count window's ``window_end`` is the time of its last row. A window not yet emitted
    has a last row whose time is not complete (or has not arrived, and then will not be
    complete), so every future ``window_end`` is a time not complete under ``W``:
    ``window_end`` carries ``W`` exactly as the time column does (role ``event_time``).
    ``window_start`` carries none: a window waiting for its last row keeps its first row's
    time, however old. ``window_ordinal`` is a row count, not a time."""
    names = [c.name for c in plan.input.schema]
    time = below.columns[names.index(plan.time_column)]
    start = Lost("window_start", f"{plan.kind}({plan.time_column})",
                 "a window waiting for its last row keeps its first row's time, however old")
    if time is None:
        lost = Lost("window_end", f"{plan.kind}({plan.time_column})",
                    f"its time column {plan.time_column} carries no watermark")
        return Derived(below.columns + (None, None, None), below.lost + (start, lost))
    end = replace(time, column="window_end")
    return Derived(below.columns + (None, end, None), below.lost + (start,))


def _window_tvf(plan: WindowTVF, below: Derived) -> Derived:
    """Window columns carry the derived watermarks when the time column carries one."""
    names = [c.name for c in plan.input.schema]
    time = below.columns[names.index(plan.time_column)]
    spec = plan.spec
    if time is None:
        lost = Lost("window_start", f"{spec.kind.value}({plan.time_column})",
                    f"its time column {plan.time_column} carries no watermark")
        return Derived(below.columns + (None, None, None), below.lost + (lost,))
    start, end = Step("window_start", spec=spec), Step("window_end", spec=spec)
    shift = Step("shift", amount=-MICROS_PER_MILLI)
    if time.role != "event_time" and (time.steps or not time.parts):
        # a window over a derived column: the maps compose
        made = (time.then(start, "window_start"), time.then(end, "window_end"),
                replace(time.then(end, "window_time"), steps=(*time.steps, end, shift)))
        return Derived(below.columns + made, below.lost)
    parts = time.parts  # over a union's or a join's column: the minimum, then the window
    # (a join's bounded column is the minimum of its own and the other side's, shifted)
    made = (Derivation("window_start", time.source, "window_start", (start,), spec, parts),
            Derivation("window_end", time.source, "window_end", (end,), spec, parts),
            Derivation("window_time", time.source, "window_time", (end, shift), spec, parts))
    return Derived(below.columns + made, below.lost)


def minimum(column: str, parts: Sequence[Derivation]) -> Derivation:
    """The column ``column`` whose watermark is the least of ``parts``' (one distinct part:
    that part, renamed). It keeps the parts' role and window when they all share them."""
    distinct = tuple(dict.fromkeys(replace(p, column=column) for p in parts))
    if len(distinct) == 1:
        return distinct[0]
    roles, windows = {p.role for p in distinct}, {p.window for p in distinct}
    window = windows.pop() if len(windows) == 1 else None
    role = roles.pop() if len(roles) == 1 and (window is not None or "window" not in
                                               next(iter(roles))) else "derived"
    source = "+".join(sorted({leaf for p in distinct for leaf in p.source.split("+")}))
    return Derivation(column, source, role, (), window if role != "derived" else None, distinct)


def _union(plan: Union) -> Derived:
    """UNION ALL: a column carries the minimum of its inputs' watermarks, if every input's
    column carries one."""
    below = [derive(p) for p in plan.inputs]
    columns: list[Derivation | None] = []
    lost: list[Lost] = []
    for i, column in enumerate(plan.schema):
        parts = [b.columns[i] for b in below]
        if all(parts):
            columns.append(minimum(column.name, [p for p in parts if p is not None]))
            continue
        columns.append(None)
        if any(parts):
            lost.append(Lost(column.name, f"UNION ALL ... {column.name}",
                             "an input carries no watermark on it (a union's watermark is "
                             "the minimum over its inputs)"))
    return Derived(tuple(columns), tuple(lost))


@dataclass(frozen=True)
class TimeBound:
    """What a join condition says of a left and a right watermark column:
    ``left >= right + lower`` and ``left <= right + upper`` (None: no such bound)."""

    left: str
    right: str
    lower: int | None
    upper: int | None

    @property
    def is_interval(self) -> bool:
        return self.lower is not None and self.upper is not None

    @property
    def is_range(self) -> bool:
        """A band of times (``BETWEEN``, ``<``, ``>=``), not an equality of the two times up
        to a constant (``lower == upper``: to an engine a key, like a window join's
        ``window_end``)."""
        return self.lower is None or self.upper is None or self.lower != self.upper


def as_join_reads(other: Derivation | None, bound: TimeBound, own: Derivation | None = None,
                  convention: Convention | None = None) -> Derivation | None:
    """The other side's column as a join reads it to decide, by ``bound``, that no row still
    to come can meet a kept one. Where the engine judges this by the join's own watermark
    (:attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_waits_for_both`: Flink's window
    join fires a window, and its interval join cleans a row, once the least of both inputs'
    watermarks passes), the least of it and the kept row's ``own`` side's column; else the
    other side's alone. For a range, then through the ``join_state`` step (the engine's
    :attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_state_margin`); an equality (a
    window join's window columns) is a key and has none. (The join's output columns take the
    least of both sides anyway: :func:`_join` passes no ``own``.)"""
    if other is None:
        return other
    reads = other
    if own is not None and convention is not None and convention.join_waits_for_both:
        reads = minimum(other.column, [other, own])
    return reads.then(Step("join_state"), other.column) if bound.is_range else reads


def _offset_column(expr: Expr) -> tuple[str, int] | None:
    """``expr`` as ``column + constant`` (``c``, ``c + INTERVAL i``, ``c - INTERVAL i``)."""
    if isinstance(expr, ColumnRef):
        return expr.name, 0
    found = monotone_step(expr)
    if isinstance(found, str) or found[0].kind != "shift":
        return None
    inner = _offset_column(found[1])
    return None if inner is None else (inner[0], inner[1] + found[0].amount)


def conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Binary) and expr.op == "AND":
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


def join_time_bounds(plan: Join) -> tuple[TimeBound, ...]:
    """Every bound the join condition puts between a left and a right watermark column: its
    conjuncts ``x + a OP y + b`` (OP one of = < <= > >=, ``a`` and ``b`` constant
    intervals), merged per pair of columns. An equality is ``lower = upper = 0``; ``l.t
    BETWEEN r.t - INTERVAL a AND r.t + INTERVAL b`` is ``lower = -a``, ``upper = b``."""
    left_names, right_names = plan.sides
    left_derived, right_derived = derive(plan.left), derive(plan.right)
    left_carried = {n for n, d in zip(left_names, left_derived.columns, strict=True) if d}
    right_carried = {n for n, d in zip(right_names, right_derived.columns, strict=True) if d}
    bounds: dict[tuple[str, str], tuple[int | None, int | None]] = {}
    for conjunct in conjuncts(plan.condition):
        if not (isinstance(conjunct, Binary) and conjunct.op in _FLIPPED):
            continue
        one, other = _offset_column(conjunct.left), _offset_column(conjunct.right)
        if one is None or other is None:
            continue
        op = conjunct.op
        if one[0] in right_carried and other[0] in left_carried:
            one, other, op = other, one, _FLIPPED[op]
        if one[0] not in left_carried or other[0] not in right_carried:
            continue
        k = other[1] - one[1]  # left + a OP right + b  is  left - right OP b - a
        lower = {">=": k, ">": k + 1, "=": k}.get(op)
        upper = {"<=": k, "<": k - 1, "=": k}.get(op)
        old_lower, old_upper = bounds.get((one[0], other[0]), (None, None))
        bounds[(one[0], other[0])] = (
            lower if old_lower is None else old_lower if lower is None else max(lower, old_lower),
            upper if old_upper is None else old_upper if upper is None else min(upper, old_upper))
    return tuple(TimeBound(left, right, lower, upper)
                 for (left, right), (lower, upper) in bounds.items())


def _shifted(derivation: Derivation, amount: int, column: str) -> Derivation:
    if amount == 0:
        return replace(derivation, column=column)
    return derivation.then(Step("shift", amount=amount), column)


def _join(plan: Join) -> Derived:
    """A joined row comes out when the later of its two rows arrives, so a column keeps a
    watermark only where the condition bounds it below by the other side's: with
    ``l >= r + lower``, ``l``'s watermark is ``min(W_l, W_r + lower)``; with
    ``l <= r + upper``, ``r``'s is ``min(W_r, W_l - upper)``. Every other column loses it: an
    old row of one side comes out when its match arrives late on the other."""
    names = plan.sides[0] + plan.sides[1]
    carried = dict(zip(names, derive(plan.left).columns + derive(plan.right).columns,
                       strict=True))
    made: dict[str, list[Derivation]] = {}
    for bound in join_time_bounds(plan):
        left, right = carried[bound.left], carried[bound.right]
        assert left is not None and right is not None
        left_read, right_read = as_join_reads(left, bound), as_join_reads(right, bound)
        assert left_read is not None and right_read is not None
        if bound.lower is not None:
            made.setdefault(bound.left, [left]).append(_shifted(right_read, bound.lower, bound.left))
        if bound.upper is not None:
            made.setdefault(bound.right, [right]).append(_shifted(left_read, -bound.upper,
                                                                  bound.right))
    output = [c.name for c in plan.schema]  # a SEMI or ANTI join outputs the left side only
    columns = tuple(minimum(n, made[n]) if n in made else None for n in output)
    lost = tuple(Lost(n, n, "a join can emit an old row of this side when its match arrives "
                            "later on the other side: only a column the join condition bounds "
                            "by the other side's watermark column keeps one")
                 for n in output if carried[n] is not None and n not in made)
    return Derived(columns, lost)


def _over_window(plan: OverWindow, below: Derived) -> Derived:
    """The EOWC OVER window emits rows in order of its one ascending ORDER BY column once it
    is complete: that column keeps its watermark; the others and the results carry none."""
    order = plan.order_by
    keep = order[0][0].name if len(order) == 1 and not order[0][1] and \
        isinstance(order[0][0], ColumnRef) else None
    names = [c.name for c in plan.input.schema]
    columns = tuple(d if n == keep else None for n, d in zip(names, below.columns, strict=True))
    lost = tuple(Lost(n, n, "an OVER window emits rows in the order of its ORDER BY column only")
                 for n, d in zip(names, below.columns, strict=True) if d is not None and n != keep)
    return Derived(columns + (None,) * len(plan.calls), lost)


def _top_n(plan: TopN, below: Derived) -> Derived:
    """TopN emits a partition's rows together, in rank order: its PARTITION BY columns keep
    their watermarks (a window TopN: the window columns), the others lose them, except the
    ORDER BY column of a deduplication (one ascending key), in whose order rows come out."""
    keep = {e.name for e in plan.partition_by if isinstance(e, ColumnRef)}
    order = plan.order_by
    if len(order) == 1 and not order[0][1] and isinstance(order[0][0], ColumnRef):
        keep.add(order[0][0].name)
    names = [c.name for c in plan.input.schema]
    columns = tuple(d if n in keep else None for n, d in zip(names, below.columns, strict=True))
    lost = tuple(Lost(n, n, "TopN emits a partition's rows in rank order, not in time order")
                 for n, d in zip(names, below.columns, strict=True) if d is not None and n not in keep)
    return Derived(columns + (None,), lost)


def expression_derivation(expr: Expr, name: str, schema: Schema, below: Derived
                          ) -> Derivation | Lost | None:
    """The watermark of the column ``name`` computed by ``expr`` over ``schema``: a
    :class:`Derivation` if ``expr`` is proven non-decreasing in a watermark column, a
    :class:`Lost` if it reads one but is not, None if it reads none."""
    carried = {c.name: d for c, d in zip(schema, below.columns, strict=True) if d is not None}
    if not referenced_columns(expr) & carried.keys():
        return None
    if isinstance(expr, ColumnRef):
        return replace(carried[expr.name], column=name)
    if isinstance(expr, Func) and expr.name == "coalesce":
        return _coalesce(expr, name, schema, below)
    found = monotone_step(expr)
    if isinstance(found, str):
        return Lost(name, sql_of(expr), found)
    step, operand = found
    inner = expression_derivation(operand, name, schema, below)
    if isinstance(inner, Lost):
        return replace(inner, expression=sql_of(expr))
    if inner is None:  # the watermark column is read elsewhere (a bucket size, say)
        return Lost(name, sql_of(expr), "only a constant map of one watermark column keeps it")
    return inner.then(step, name)


def _coalesce(expr: Func, name: str, schema: Schema, below: Derived) -> Derivation | Lost:
    """``coalesce(a, b, ...)`` of watermark columns (Flink's window FULL JOIN selects
    ``COALESCE(L.window_start, R.window_start)``): each value it takes is one of its
    arguments', which is not complete under that argument's watermark, so the least of the
    arguments' watermarks bounds it. An argument without a watermark (a constant, another
    column) could give any value: then none."""
    parts = [expression_derivation(a, name, schema, below) for a in expr.args]
    if not all(isinstance(p, Derivation) for p in parts):
        return Lost(name, sql_of(expr), "coalesce() keeps a watermark only when every argument "
                                        "carries one")
    leaves = [leaf for p in parts if isinstance(p, Derivation)
              for leaf in (p.parts if p.parts and not p.steps else (p,))]
    return minimum(name, leaves)


def monotone_step(expr: Expr) -> tuple[Step, Expr] | str:
    """``expr`` as one non-decreasing step applied to an operand, or why it is not one."""
    if isinstance(expr, Binary) and expr.op in ("+", "-"):
        left, right = expr.left, expr.right
        if _is_interval(right):
            return Step("shift", amount=right.value if expr.op == "+" else -right.value), left
        if expr.op == "+" and _is_interval(left):
            return Step("shift", amount=left.value), right
        return f"{expr.op} is non-decreasing only with a constant INTERVAL"
    if isinstance(expr, Func) and expr.name == "tumble_start" and len(expr.args) == 2 \
            and _is_interval(expr.args[1]):
        return Step("truncate", amount=expr.args[1].value), expr.args[0]
    if isinstance(expr, Func) and expr.name == "date_trunc" and len(expr.args) == 2 \
            and isinstance(expr.args[0], Literal) and isinstance(expr.args[0].value, str):
        unit = expr.args[0].value.lower()
        if unit in FIXED_UNITS:
            return Step("truncate", amount=FIXED_UNITS[unit]), expr.args[1]
        if unit == "week":
            return Step("truncate", amount=WEEK, offset=WEEK_OFFSET), expr.args[1]
        return Step("calendar", unit=unit), expr.args[1]
    if isinstance(expr, Binary) and expr.op in ("*", "/", "%"):
        return f"{expr.op} is not proven non-decreasing (a negative factor reverses it, % wraps)"
    if isinstance(expr, Unary):
        return f"{expr.op} reverses the order"
    if isinstance(expr, Cast):
        return (f"CAST to {expr.type.value} is not proven non-decreasing (text orders "
                f"differently, numbers lose the type)")
    if isinstance(expr, Case):
        return "CASE is not proven non-decreasing (a branch may jump back)"
    if isinstance(expr, Func):
        return f"{expr.name}() is not proven non-decreasing"
    return f"{sql_of(expr)} is not a map of a time"


def _is_interval(expr: Expr) -> bool:
    return isinstance(expr, Literal) and expr.type is SqlType.INTERVAL and isinstance(expr.value, int)
