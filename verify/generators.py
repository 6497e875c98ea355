"""Arrival logs for any source schema that are hard on an EOWC executor: Hypothesis strategies
(composable and shrinkable, for users' own tests) and a seeded plain-random generator of the
same shape (for the command line: the same seed gives the same log).

A log is built from three independent choices, each a change to a simpler log, so that
shrinking moves towards in-order input with one epoch:

1. **rows in event-time order** (:func:`in_order_rows`): values over the source's columns,
   with few distinct keys (skew), NULLs in nullable columns, and event times on the instants
   where the query's rules change (its lattices: :mod:`eowc.verify.query_scale`), often one unit
   either side (equal timestamps and window edges occur);
2. **disorder** as an arrival *lag* per row: rows arrive in order of ``t + lag``. With every
   lag at most :func:`max_lag` of the convention no row is late (the bound of
   ``SEMANTICS.md`` §3); ``late`` rows are then *moved past the watermark*: each to the end of
   an epoch whose watermark before is already above its event time;
3. **epoch boundaries**: a cut after any row, plus empty epochs.

All lags 0, no late rows, no cuts and no empty epochs is the in-order log in one epoch. Last,
rows on the watermark in force are added (:func:`on_the_watermark`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from eowc.semantics.errors import EowcError
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Column, Expr, Row, referenced_columns, sql_of
from eowc.semantics.ir.plan import Source
from eowc.semantics.ir.values import (
    EXACT,
    MICROS_PER_MILLI,
    MICROS_PER_SECOND,
    ArrayType,
    DecimalShape,
    SqlType,
    ValueType,
    computing_under,
    declared_decimal_value,
)
from eowc.semantics.rules.triggers import Convention, row_is_late, source_watermark
from eowc.verify.cases import Crash

#: 2023-11-14 22:13:20 UTC: where generated event time starts.
BASE_TIME = 1_700_000_000 * MICROS_PER_SECOND
DAY = 86_400 * MICROS_PER_SECOND
#: The default lattices: whole and half seconds.
HALF_SECONDS = ((0, 500 * MICROS_PER_MILLI),)


@dataclass(frozen=True)
class LogShape:
    """The size and texture of generated logs.

    ``rows``: at most this many rows (the random generator makes exactly this many, plus
    ``edges``);
    ``span``: event times fall in ``[BASE_TIME, BASE_TIME + span]`` (microseconds);
    ``lattices``: ``(origin, step)`` pairs; an event time is an instant ``origin + k * step``
    of one of them (window ends, multiples of a gap or a delay: see
    :mod:`eowc.verify.query_scale`), often nudged one ``unit`` either side;
    ``unit``: that nudge (None: the convention's, :attr:`Convention.unit`: a microsecond under
    RisingWave, a millisecond under Spark and Flink);
    ``keys``: distinct values of each non-time column (few: groups collide, values repeat;
    the seeded generator draws them skewed, the first most often, and reaches every one of
    many: :func:`skewed_index`);
    ``null_rate``: the chance of NULL in a column that is not the event time;
    ``late``: at most this many rows moved past the watermark (0: bounded disorder only);
    ``edges``: at most this many extra rows placed exactly on the watermark in force when
    they arrive, or one unit either side (late under one convention, on time under another);
    ``empty_epochs``: at most this many empty epochs;
    ``epochs``: the number of epochs (None: a cut after about every third row).
    """

    rows: int = 20
    span: int = 30 * MICROS_PER_SECOND
    keys: int = 3
    null_rate: float = 0.1
    late: int = 0
    edges: int = 0
    empty_epochs: int = 2
    epochs: int | None = None
    lattices: tuple[tuple[int, int], ...] = HALF_SECONDS
    unit: int | None = None

    def nudge(self, convention: Convention) -> int:
        """The step of a nudge off a boundary under ``convention``."""
        return self.unit if self.unit is not None else convention.unit

    def instants(self, lattice: tuple[int, int]) -> tuple[int, int]:
        """The first event time of ``lattice`` in the span and how many follow it."""
        origin, step = lattice
        first = BASE_TIME + (origin - BASE_TIME) % step
        return first, max((BASE_TIME + self.span - first) // step, 0)


#: The fewest rows a Hypothesis-drawn log of a source has (fewer when ``rows`` asks for less).
MIN_ROWS = 4
#: Where an event time lies around its lattice instant, in nudges (0: on it), the first
#: the most likely (and where shrinking goes).
NUDGES = (0, 0, 0, -1, 1)
#: The rates at which the sources of a join advance, relative to the shape's rows (one
#: source often far slower than another).
SOURCE_RATES = (1.0, 1.0, 0.5, 0.25)
#: The chance that one source of a multi-source log idles for a few epochs mid-log.
IDLE_CHANCE = 0.4


def max_lag(delay: int, convention: Convention) -> int:
    """The largest arrival lag (microseconds) under which no row can be late, for a watermark
    ``max(t) - delay``: the delay when rows equal to the watermark are kept (RisingWave),
    else ``delay - 1 ms`` (Spark and Flink drop them; Spark truncates to the millisecond).
    The bound holds whatever the order of rows that arrive at the same ``t + lag``."""
    return delay if convention.keeps_rows_at_watermark else delay - MICROS_PER_MILLI


# --------------------------------------------------------------------------- values

def skewed_index(rng: random.Random, size: int) -> int:
    """A skewed draw of one of ``size`` values: exponential, the first most often, with a mean
    of a third of them (at least 1), so that 3 keys collide often and 1,000 keys give
    hundreds of distinct values rather than the first ten."""
    scale = max(1.0, size / 3)
    return min(int(rng.expovariate(1.0) * scale), size - 1)


def _column_domain(column: Column, keys: int) -> list[Any]:
    """The few values ``column`` takes (a skewed draw picks the first most often): those of its
    type (:func:`_domain`), or those of its declared ``DECIMAL(p, s)``
    (:func:`_declared_decimals`)."""
    shape = column.decimal_shape
    if column.type is SqlType.DECIMAL and shape is not None:
        return _declared_decimals(shape, keys)
    return _domain(column.type, keys)


def _declared_decimals(shape: DecimalShape, keys: int) -> list[Decimal]:
    """The values of a ``DECIMAL(p, s)`` column, some with more places than ``s``, which the
    engines that keep the declared shape round when the row arrives (half away from zero:
    Spark, Flink): quarters (0.25, 0.50, ...), which at scale 0 or 1 mostly round (0.25 to
    0.3, or to 0), and at a larger scale every other one half a unit of scale ``s`` above its
    quarter (0.255 at scale 2, to 0.26); every third one negative (-0.75 to -0.8). One larger
    than the largest value the type holds, ``10^(p - s) - 10^-s``, is taken modulo it, so
    that no value rounds to more than ``p - s`` digits before the point: a generated row
    never overflows its column."""
    precision, scale = shape
    unit = Decimal(1).scaleb(-scale)
    largest = EXACT.subtract(Decimal(10) ** (precision - scale), unit)
    half_unit = EXACT.divide(unit, 2)
    values = []
    for k in range(1, keys + 1):
        value = Decimal(k * 25).scaleb(-2)
        if k % 2 and scale >= 2:
            value = EXACT.add(value, half_unit)
        if value > largest:
            value = EXACT.remainder(value, largest)
        values.append(EXACT.minus(value) if k % 3 == 0 and value else value)
    return values


def _domain(sql_type: ValueType, keys: int) -> list[Any]:
    """The few values a non-time column of ``sql_type`` takes; an ARRAY column's hold 0 to 3
    of its element's values (unnest gives 0 to 3 rows)."""
    if isinstance(sql_type, ArrayType):
        elements = _domain(sql_type.element, keys)
        return [tuple(elements[(k + i) % len(elements)] for i in range(k % 4)) for k in range(keys)]
    if sql_type is SqlType.BIGINT:
        return list(range(1, keys + 1))
    if sql_type is SqlType.DOUBLE:
        return [0.5 * k for k in range(1, keys + 1)]
    if sql_type is SqlType.VARCHAR:
        return [chr(ord("a") + k) for k in range(keys)]
    if sql_type is SqlType.BOOLEAN:
        return [True, False]
    if sql_type is SqlType.DECIMAL:  # exact cents: sums and averages stay exact
        return [Decimal(k * 25).scaleb(-2) for k in range(1, keys + 1)]
    if sql_type is SqlType.DATE:
        return [BASE_TIME - BASE_TIME % DAY + k * DAY for k in range(keys)]
    if sql_type.is_time:
        return [BASE_TIME + k * MICROS_PER_SECOND for k in range(keys)]
    raise ValueError(f"cannot generate values of type {sql_type.value}")


def _event_time(shape: LogShape, convention: Convention, lattice: int, k: int, nudge: int) -> int:
    """The ``k``-th instant (modulo the span) of ``shape.lattices[lattice]``, ``nudge`` units
    off it."""
    first, count = shape.instants(shape.lattices[lattice])
    return first + (k % (count + 1)) * shape.lattices[lattice][1] + nudge * shape.nudge(convention)


class CannotGenerate(EowcError):
    """Logs of a source cannot be generated: its event time is computed in a form the
    generator cannot aim (:func:`check_generable`)."""


def check_generable(source: Source) -> None:
    """Raise :class:`CannotGenerate` unless rows of ``source`` can be generated with a wanted
    event time: one it carries, or one computed from one carried column (:func:`arrived`)."""
    time_index = _time_column(source)
    if time_index >= len(source.carried):
        name = source.columns[time_index].name
        _time_from(source, dict(source.computed)[name], [None] * len(source.carried))


def arrived(source: Source, drawn: Row, convention: Convention) -> Row:
    """The row of ``source`` an event gives for ``drawn``, a row of its columns whose event
    time is the one wanted and whose computed columns are to be computed: the carried
    values of ``drawn`` as the row holds them and its computed columns computed at arrival
    (as ``row_from_json`` does, under ``convention``'s value rules: a ``DECIMAL(p, s)``
    column's value rounded to scale ``s`` where the engine keeps declared shapes). An event
    time that is a computed column comes from the carried column it is computed from, set to
    give the wanted time (rounded down where that column's steps are coarser, such as
    milliseconds under RisingWave's microsecond nudges)."""
    decimals = [i for i, column in enumerate(source.carried) if column.type is SqlType.DECIMAL]
    if not source.computed and not decimals:
        return drawn
    carried = list(drawn[:len(source.carried)])
    time_index = _time_column(source)
    with computing_under(convention.values):
        if time_index >= len(carried):
            name = source.columns[time_index].name
            index, value = _time_from(source, dict(source.computed)[name], carried)
            carried[index] = value(drawn[time_index])
        for i in decimals:
            carried[i] = declared_decimal_value(carried[i], source.carried[i].decimal_shape,
                                                convention.values)
        return source.arrived(tuple(carried))


def _time_from(source: Source, expr: Expr, carried: list[Any]
               ) -> tuple[int, Callable[[int], Any]]:
    """The carried column a computed event time ``expr`` is computed from, and the value that
    column takes for an event time: ``expr`` must be an increasing affine function of one
    number or time column (``TO_TIMESTAMP_LTZ(ms, 3)``, ``ts + INTERVAL '1' HOUR``), probed
    at three values of it."""
    names = [c.name for c in source.carried]
    read = sorted(referenced_columns(expr))
    index = names.index(read[0]) if len(read) == 1 else -1
    if index < 0 or not (source.carried[index].type.is_numeric or source.carried[index].type.is_time):
        raise CannotGenerate(f"cannot generate rows of {source.name}: its event time is computed "
                             f"as {sql_of(expr)}, which is not a function of one number or time "
                             f"column")
    base = source.carried[index].type
    unit: Any = Decimal(1) if base is SqlType.DECIMAL else 1.0 if base is SqlType.DOUBLE else 1

    def time_at(value: Any) -> Any:
        probe = list(carried)
        probe[index] = value
        return source.arrived(tuple(probe))[_time_column(source)]

    at = [time_at(k * unit) for k in range(3)]
    step = None if None in at else at[1] - at[0]
    if step is None or step <= 0 or at[2] - at[1] != step:
        raise CannotGenerate(f"cannot generate rows of {source.name}: its event time "
                             f"{sql_of(expr)} is not an increasing affine function of {read[0]}")
    return index, lambda t: (t - at[0]) // step * unit


def _time_column(source: Source) -> int:
    if source.event_time_index is None:
        raise ValueError(f"source {source.name} declares no watermark: logs for EOWC need one")
    return source.event_time_index


# --------------------------------------------------------------------------- strategies

@st.composite
def rows_of(draw: st.DrawFn, source: Source, shape: LogShape = LogShape(),
            convention: Convention = Convention.SPARK) -> Row:
    """One row of ``source``: every column from its small domain (the first values more often,
    NULL at about ``null_rate``), the event time an instant of one of ``shape.lattices``,
    maybe nudged one unit of ``convention`` off it."""
    time_index = _time_column(source)
    row: list[Any] = []
    for i, column in enumerate(source.columns):
        if i == time_index:
            lattice = draw(st.integers(0, len(shape.lattices) - 1))
            _, count = shape.instants(shape.lattices[lattice])
            row.append(_event_time(shape, convention, lattice, draw(st.integers(0, count)),
                                   draw(st.sampled_from(NUDGES))))
        elif i >= len(source.carried) or \
                draw(st.integers(0, 9)) >= 10 - round(shape.null_rate * 10):  # shrinks to not NULL
            row.append(None)  # NULL, or a computed column (computed by arrived)
        else:
            row.append(draw(st.sampled_from(_column_domain(column, shape.keys))))
    return arrived(source, tuple(row), convention)


@st.composite
def in_order_rows(draw: st.DrawFn, source: Source, shape: LogShape = LogShape(),
                  convention: Convention = Convention.SPARK) -> list[Row]:
    """Rows of ``source`` sorted by event time (ties keep their drawn order)."""
    time_index = _time_column(source)
    # about uniform (a list's length runs short), and never fewer than a few rows: a log too
    # small to complete anything tests nothing
    size = draw(st.integers(min(shape.rows, MIN_ROWS), shape.rows))
    drawn = draw(st.lists(rows_of(source, shape, convention), min_size=size, max_size=size))
    return sorted(drawn, key=lambda row: row[time_index])


@st.composite
def arrival_logs(draw: st.DrawFn, source: Source, convention: Convention,
                 shape: LogShape = LogShape()) -> ArrivalLog:
    """Arrival logs of ``source``: in-order rows, lagged by at most :func:`max_lag` (no row
    late), then up to ``shape.late`` rows moved past the watermark, cut into epochs."""
    time_index = _time_column(source)
    rows = draw(in_order_rows(source, shape, convention))
    largest = _largest_lag(source, convention)
    lags = draw(st.lists(st.sampled_from([k * largest // 10 for k in range(11)]),
                         min_size=len(rows), max_size=len(rows)))
    cuts = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    empty_at = draw(st.lists(st.integers(0, len(rows) + 1), max_size=shape.empty_epochs))
    late = draw(st.lists(st.integers(0, max(len(rows) - 1, 0)), max_size=shape.late)) if rows else []
    log = assemble(source.name, rows, time_index, lags, cuts, empty_at, late, _delay(source))
    edges = draw(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 10 ** 6),
                                    st.sampled_from((0, -1, 1))), max_size=shape.edges))
    return on_the_watermark(log, source, convention, edges, shape.nudge(convention))


@st.composite
def multi_source_logs(draw: st.DrawFn, sources: Sequence[Source], convention: Convention,
                      shape: LogShape = LogShape()) -> ArrivalLog:
    """Logs of several sources (a join's or a union's): one :func:`arrival_logs` per source,
    each with its own rate (a share of ``shape.rows``, :data:`SOURCE_RATES`), merged epoch by
    epoch; one source may idle for a few empty epochs while the others advance (the
    strategy counterpart of :func:`random_multi_source_log`)."""
    rates = [draw(st.sampled_from(SOURCE_RATES[:3])) for _ in sources]  # Hypothesis' logs run small
    logs = [draw(arrival_logs(source, convention, replace(shape, rows=max(1, round(shape.rows * rate)))))
            for source, rate in zip(sources, rates, strict=True)]
    idle = draw(st.none() | st.tuples(st.integers(0, len(logs) - 1), st.integers(0, 10 ** 6),
                                       st.integers(2, 5)))
    if idle is not None and len(logs) > 1:
        which, at, length = idle
        epochs = logs[which].epochs
        at %= len(epochs) + 1
        logs[which] = ArrivalLog(epochs[:at] + ((),) * length + epochs[at:])
    return merge_by_epoch(logs)


@st.composite
def reordered(draw: st.DrawFn, log: ArrivalLog) -> ArrivalLog:
    """``log`` with each epoch's rows in another order: the same INPUT for any number of
    sources (the strategy counterpart of :func:`random_reordering`)."""
    return ArrivalLog(tuple(tuple(draw(st.permutations(epoch))) for epoch in log.epochs))


@st.composite
def same_input_variant(draw: st.DrawFn, log: ArrivalLog, source: Source,
                       convention: Convention) -> ArrivalLog:
    """A log with the same INPUT as ``log`` (:func:`rebatch`): each epoch's rows in another
    order, and epochs split where no row's admission changes. Every executor must give the
    same output after each of ``log``'s epochs, so its output on each is judged against the
    same reference."""
    orders = [draw(st.permutations(range(len(epoch)))) for epoch in log.epochs]
    splits = draw(st.lists(st.booleans(), min_size=len(log.events), max_size=len(log.events)))
    return rebatch(log, source, convention, orders, splits)


@st.composite
def disruptions(draw: st.DrawFn, log: ArrivalLog, crashes: Sequence[Crash] = ()
                ) -> tuple[tuple[int, ...], Crash | None]:
    """Replay schedules for ``log``: restarts after up to two epochs (the executor resumes
    from committed state; an at-least-once source delivers the next epoch again) and at most
    one crash, drawn from ``crashes`` (the points the run reaches:
    :func:`eowc.verify.crashes.reachable_crashes`). Shrinks to none."""
    last = max(len(log.epochs) - 1, 0)
    restarts = tuple(sorted(draw(st.sets(st.integers(0, last), max_size=2))))
    crash = draw(st.none() | st.sampled_from(list(crashes))) if crashes else None
    return restarts, crash


# --------------------------------------------------------------------------- seeded

def random_arrival_log(source: Source, convention: Convention, seed: int,
                       shape: LogShape = LogShape()) -> ArrivalLog:
    """The plain-random counterpart of :func:`arrival_logs`: ``shape.rows`` rows (and up to
    ``shape.edges`` on the watermark), the same choices drawn from ``random.Random(seed)``,
    cut into ``shape.epochs`` epochs when set; the same seed gives the same log."""
    rng = random.Random(seed)
    time_index = _time_column(source)
    rows: list[Row] = []
    for _ in range(shape.rows):
        row: list[Any] = []
        for i, column in enumerate(source.columns):
            if i == time_index:
                row.append(_event_time(shape, convention, rng.randrange(len(shape.lattices)),
                                       rng.randrange(10 ** 6), rng.choice(NUDGES)))
            elif i >= len(source.carried) or rng.random() < shape.null_rate:
                row.append(None)  # NULL, or a computed column (computed by arrived)
            else:
                domain = _column_domain(column, shape.keys)
                row.append(domain[skewed_index(rng, len(domain))])
        rows.append(arrived(source, tuple(row), convention))
    rows.sort(key=lambda r: r[time_index])
    largest = _largest_lag(source, convention)
    lags = [rng.randint(0, 10) * largest // 10 for _ in rows]
    if shape.epochs is None:
        cuts = [rng.random() < 0.3 for _ in rows]
        empty_at = [rng.randint(0, len(rows) + 1) for _ in range(rng.randint(0, shape.empty_epochs))]
    else:  # exactly shape.epochs epochs: cuts after some rows, the rest empty epochs
        cut_at = set(rng.sample(range(max(len(rows) - 1, 0)), min(shape.epochs - 1, max(len(rows) - 1, 0))))
        cuts = [i in cut_at for i in range(len(rows))]
        empty_at = [rng.randint(0, len(cut_at) + 1) for _ in range(shape.epochs - 1 - len(cut_at))]
    late = [rng.randrange(len(rows)) for _ in range(rng.randint(0, shape.late))] if rows else []
    log = assemble(source.name, rows, time_index, lags, cuts, empty_at, late, _delay(source))
    edges = [(rng.randrange(10 ** 6), rng.randrange(10 ** 6), rng.choice((0, -1, 1)))
             for _ in range(rng.randint(0, shape.edges))]
    return on_the_watermark(log, source, convention, edges, shape.nudge(convention))


def random_multi_source_log(sources: Sequence[Source], convention: Convention, seed: int,
                            shape: LogShape = LogShape()) -> ArrivalLog:
    """A log of several sources (a join's): one :func:`random_arrival_log` per source, each
    with its own seed and rate (its share of ``shape.rows``, :data:`SOURCE_RATES`), merged
    epoch by epoch (epoch ``k`` holds epoch ``k`` of each, in source order). Sources with
    fewer epochs stop advancing early, and with :data:`IDLE_CHANCE` one source idles for two to
    five empty epochs in the middle while the others advance. Each source's late rows stay
    late against its own watermark."""
    rng = random.Random(seed)
    logs = [random_arrival_log(source, convention, seed * 7919 + i,
                               replace(shape, rows=max(1, round(shape.rows * rng.choice(SOURCE_RATES)))))
            for i, source in enumerate(sources)]
    if len(logs) > 1 and rng.random() < IDLE_CHANCE:
        idle = rng.randrange(len(logs))
        epochs = logs[idle].epochs
        at = rng.randint(0, len(epochs))
        logs[idle] = ArrivalLog(epochs[:at] + ((),) * rng.randint(2, 5) + epochs[at:])
    return merge_by_epoch(logs)


def merge_by_epoch(logs: Sequence[ArrivalLog]) -> ArrivalLog:
    """One log whose epoch ``k`` holds epoch ``k`` of each of ``logs``, in their order."""
    epochs = max((len(log.epochs) for log in logs), default=0)
    return ArrivalLog(tuple(tuple(event for log in logs if k < len(log.epochs)
                                  for event in log.epochs[k]) for k in range(epochs)))


def random_reordering(log: ArrivalLog, seed: int) -> ArrivalLog:
    """``log`` with each epoch's rows in another order: the same INPUT for any number of
    sources (reordering within an epoch changes no admission, SEMANTICS.md §1)."""
    rng = random.Random(seed)
    return ArrivalLog(tuple(tuple(rng.sample(epoch, len(epoch))) for epoch in log.epochs))


def random_same_input_variant(log: ArrivalLog, source: Source, convention: Convention,
                              seed: int) -> ArrivalLog:
    """The plain-random counterpart of :func:`same_input_variant`."""
    rng = random.Random(seed)
    orders = [rng.sample(range(len(epoch)), len(epoch)) for epoch in log.epochs]
    return rebatch(log, source, convention, orders, [rng.random() < 0.3 for _ in log.events])


def random_disruption(log: ArrivalLog, seed: int, crashes: Sequence[Crash] = ()
                      ) -> tuple[tuple[int, ...], Crash | None]:
    """The plain-random counterpart of :func:`disruptions`: a crash at one of ``crashes``
    when there are any, else a restart after one epoch."""
    rng = random.Random(seed)
    if crashes:
        return (), rng.choice(list(crashes))
    return ((rng.randrange(len(log.epochs)),) if log.epochs else ()), None


def moved_past_watermark(log: ArrivalLog, source: Source, index: int) -> ArrivalLog | None:
    """A log that must *not* give ``log``'s INPUT: its ``index``-th event moved to the end of
    the first later epoch whose watermark before is above its event time (a millisecond
    above: late under every convention), or None when the watermark never passes it."""
    time_index = _time_column(source)
    epochs = [list(epoch) for epoch in log.epochs]
    at = [(k, i) for k, epoch in enumerate(epochs) for i in range(len(epoch))][index]
    event = epochs[at[0]].pop(at[1])
    target = _first_epoch_past(epochs, event.row[time_index], time_index, _delay(source))
    if target is None or target <= at[0]:
        return None
    epochs[target].append(event)
    return ArrivalLog(tuple(tuple(epoch) for epoch in epochs))


def rebatch(log: ArrivalLog, source: Source, convention: Convention,
            orders: Sequence[Sequence[int]], splits: Sequence[bool]) -> ArrivalLog:
    """``log`` with the rows of epoch ``k`` in the order ``orders[k]`` and a new epoch
    boundary after the ``i``-th row (over the whole log) when ``splits[i]``, except where the
    boundary would change a row's admission: it must not make a row of INPUT late, and a late
    row must see the same watermark before (under Flink, that decides which of its windows
    still take it). Reordering within an epoch changes neither (SEMANTICS.md §1)."""
    time_index, delay = _time_column(source), _delay(source)

    def watermark_after(highest: float, watermark: float) -> float:
        return max(watermark, source_watermark(highest, delay, convention))

    def admission(event: Event, watermark: float) -> float | None:
        """None if the event is in INPUT under ``watermark``, else the watermark."""
        if event.table != source.name or not row_is_late(event.row[time_index], watermark,
                                                          convention):
            return None
        return watermark

    epochs: list[list[Event]] = []
    highest, watermark, position = -math.inf, -math.inf, 0
    for epoch, order in zip(log.epochs, orders, strict=True):
        rows = [epoch[i] for i in order]
        wanted = [admission(event, watermark) for event in rows]  # the log's watermark before
        epochs.append([])
        for i, event in enumerate(rows):
            epochs[-1].append(event)
            if event.table == source.name:
                highest = max(highest, event.row[time_index])
            if splits[position + i] and i < len(rows) - 1:
                split = watermark_after(highest, watermark)
                if all(admission(e, split) == want
                       for e, want in zip(rows[i + 1:], wanted[i + 1:], strict=True)):
                    epochs.append([])
                    watermark = split
        position += len(rows)
        watermark = watermark_after(highest, watermark)
    return ArrivalLog(tuple(tuple(epoch) for epoch in epochs))


# --------------------------------------------------------------------------- assembly

def assemble(table: str, rows: Sequence[Row], time_index: int, lags: Sequence[int],
             cuts: Sequence[bool], empty_at: Sequence[int], late: Sequence[int],
             delay: int) -> ArrivalLog:
    """The log the three choices describe: ``rows`` (in event-time order) arrive in order of
    ``t + lag`` (ties by position), an epoch ends after arrival ``i`` when ``cuts[i]``, empty
    epochs go before the epoch indexes ``empty_at``, and each row at a position in ``late``
    is moved to the end of the first epoch whose watermark before (``max(t) - delay``, over
    the epochs before it) is above its event time, if there is one. Events are numbered by
    their position in ``rows`` (``Event.line``)."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i][time_index] + lags[i], i))
    movers = set(late)
    epochs: list[list[Event]] = [[]]
    for arrival, i in enumerate(order):
        if i not in movers:
            epochs[-1].append(Event(table, rows[i], i + 1))
        if cuts[arrival]:
            epochs.append([])
    for i in sorted(movers, key=lambda i: rows[i][time_index]):
        target = _first_epoch_past(epochs, rows[i][time_index], time_index, delay)
        if target is None:  # the watermark never passes it: it stays in order
            target = _epoch_of(order.index(i), cuts)
        epochs[target].append(Event(table, rows[i], i + 1))
    for position in sorted(empty_at, reverse=True):
        epochs.insert(min(position, len(epochs)), [])
    return ArrivalLog(tuple(tuple(epoch) for epoch in epochs))


def on_the_watermark(log: ArrivalLog, source: Source, convention: Convention,
                     edges: Sequence[tuple[int, int, int]], unit: int) -> ArrivalLog:
    """``log`` with an extra row per ``(epoch, row, nudge)`` of ``edges``: a copy of one of
    ``source``'s rows (the ``row``-th, modulo their number) at the end of an epoch (the
    ``epoch``-th, modulo those with a watermark before them), its event time the watermark in
    force before that epoch plus ``nudge`` units. A row on the watermark is on time under
    RisingWave and late under Spark and Flink; a unit below, late under all three; a unit
    above, on time under all three. The rows go after the log's last row (``Event.line``)."""
    time_index, delay = _time_column(source), _delay(source)
    rows = [event for epoch in log.epochs for event in epoch if event.table == source.name]
    watermarks, highest = [], -math.inf
    for epoch in log.epochs:
        watermarks.append(source_watermark(highest, delay, convention))
        highest = max([highest, *(e.row[time_index] for e in epoch if e.table == source.name)])
    open_epochs = [k for k, w in enumerate(watermarks) if math.isfinite(w)]
    if not rows or not open_epochs or not edges:
        return log
    epochs = [list(epoch) for epoch in log.epochs]
    line = max(e.line or 0 for e in log.events)
    for n, (epoch, row, nudge) in enumerate(edges, start=1):
        k = open_epochs[epoch % len(open_epochs)]
        template = list(rows[row % len(rows)].row)
        template[time_index] = int(watermarks[k]) + nudge * unit
        epochs[k].append(Event(source.name, arrived(source, tuple(template), convention), line + n))
    return ArrivalLog(tuple(tuple(epoch) for epoch in epochs))


def _first_epoch_past(epochs: list[list[Event]], t: int, time_index: int, delay: int
                      ) -> int | None:
    """The first epoch whose watermark before is above ``t`` (by at least a millisecond)."""
    highest = -math.inf
    for k, epoch in enumerate(epochs):
        if highest - delay > t + MICROS_PER_MILLI:
            return k
        highest = max([highest] + [e.row[time_index] for e in epoch])
    return None


def _epoch_of(arrival: int, cuts: Sequence[bool]) -> int:
    return sum(1 for cut in cuts[:arrival] if cut)


def _delay(source: Source) -> int:
    assert source.watermark is not None
    return source.watermark.delay


def _largest_lag(source: Source, convention: Convention) -> int:
    return max_lag(_delay(source), convention)
