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
  ``window_time`` carry the watermarks of :mod:`semantics.derived` (HOP's ``window_start``
  is not TUMBLE's).

Joins and unions (the minimum of their inputs), interval joins, OVER windows and TopN come
with their plan nodes. Columns derived from the same source column form one *group*
(``Derivation.source``). The interpreter finds its trigger columns here
(:func:`semantics.watermarks.watermark_columns`), so there is one copy of these rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from .derived import shifted_watermark, truncated_watermark, window_end_watermark, window_start_watermark
from .expr import (
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
from .plan import Aggregate, Filter, Plan, Project, Scan, WindowTVF
from .triggers import Watermark
from .values import MICROS_PER_MILLI, MICROS_PER_SECOND, SqlType
from .windows import WindowKind, WindowSpec

#: Units of ``date_trunc`` with a fixed length, in microseconds.
FIXED_UNITS = {"microsecond": 1, "millisecond": MICROS_PER_MILLI, "second": MICROS_PER_SECOND,
               "minute": 60 * MICROS_PER_SECOND, "hour": 3600 * MICROS_PER_SECOND,
               "day": 86400 * MICROS_PER_SECOND}
#: ``date_trunc('week', c)``: weeks start on Monday, 1970-01-05 (day 4 of the epoch).
WEEK, WEEK_OFFSET = 7 * FIXED_UNITS["day"], 4 * FIXED_UNITS["day"]
#: The roles a carrying column can have; ``derived`` is any other non-decreasing map.
ROLES = ("event_time", "window_start", "window_end", "window_time", "derived")


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
    or ``window_end`` (``spec``)."""

    kind: str
    amount: int = 0
    offset: int = 0
    unit: str = ""
    spec: WindowSpec | None = None

    def apply(self, watermark: Watermark) -> Watermark:
        if self.kind == "shift":
            return shifted_watermark(watermark, self.amount)
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
        if self.kind == "truncate":
            offset = f", offset {duration_text(self.offset)}" if self.offset else ""
            return f"trunc({inner}, {duration_text(self.amount)}{offset})"
        if self.kind == "calendar":
            return f"date_trunc('{self.unit}', {inner})"
        assert self.spec is not None
        spec = self.spec
        period = spec.slide if spec.kind is WindowKind.HOP else spec.size
        if self.kind == "window_start":  # semantics.derived.window_start_watermark
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

    def watermark(self, source_watermark: Watermark) -> Watermark:
        """The column's watermark when the source column's is ``source_watermark``: every
        value strictly below it is complete (the RisingWave reading of :mod:`semantics.derived`)."""
        for step in self.steps:
            source_watermark = step.apply(source_watermark)
        return source_watermark

    def expression(self) -> str:
        """The map in words, the source watermark written ``W``: ``trunc(W, 1min)``."""
        text = "W"
        for step in self.steps:
            text = step.describe(text)
        return text

    def then(self, step: Step, column: str) -> Derivation:
        """The column ``column`` computed from this one by ``step``."""
        return Derivation(column, self.source, "derived", (*self.steps, step))


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


@lru_cache(maxsize=512)
def derive(plan: Plan) -> Derived:
    """The watermark derivation of ``plan``'s output (the rules of the module docstring)."""
    if isinstance(plan, Scan):
        source, index = plan.source, plan.source.event_time_index
        return Derived(tuple(Derivation(c.name, f"{source.name}.{c.name}") if i == index else None
                             for i, c in enumerate(source.columns)))
    if isinstance(plan, Filter):
        return derive(plan.input)
    below = derive(plan.input)
    if isinstance(plan, WindowTVF):
        return _window_tvf(plan, below)
    if isinstance(plan, Project | Aggregate):
        items = plan.items if isinstance(plan, Project) else plan.group_by
        made = [expression_derivation(expr, name, plan.input.schema, below) for name, expr in items]
        extra = len(plan.schema) - len(items)  # aggregate results
        return Derived(tuple(d if isinstance(d, Derivation) else None for d in made)
                       + (None,) * extra, tuple(d for d in made if isinstance(d, Lost)))
    raise TypeError(f"no watermark derivation for {type(plan).__name__}")


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
    if time.role != "event_time":  # a window over a derived column: the maps compose
        made = (time.then(start, "window_start"), time.then(end, "window_end"),
                replace(time.then(end, "window_time"), steps=(*time.steps, end, shift)))
        return Derived(below.columns + made, below.lost)
    made = (Derivation("window_start", time.source, "window_start", (start,), spec),
            Derivation("window_end", time.source, "window_end", (end,), spec),
            Derivation("window_time", time.source, "window_time", (end, shift), spec))
    return Derived(below.columns + made, below.lost)


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
