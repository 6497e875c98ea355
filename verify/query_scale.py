"""The time scale of a query's verification cases, read from the query itself.

A case can only tell a correct executor from a broken one if the query emits something in it,
and only tell the conventions (and off-by-one bugs) apart if rows fall exactly where their
rules differ. So the scale of a case comes from the durations the query's rules depend on:

* every window TVF's size, slide or step, and offset (TUMBLE, HOP, CUMULATE);
* every session gap (of a SESSION window or an OVER session frame), interval-join bound and
  OVER ``RANGE`` width;
* every source's watermark delay;
* the rows per key that one result needs: a count window's size and slide, a
  MATCH_RECOGNIZE pattern's shortest match and the row that ends it.

From them, :func:`query_scale` derives the **lattices** event times are drawn from (for each
duration, the instants ``origin + k * step``: window ends, multiples of a gap or a delay, and
the same instants a watermark delay later, whose rows move the watermark onto a boundary), a
**span** of event time several times the longest duration plus the longest delay (the
watermark passes several windows or sessions within it; for sessions also wide enough
that a key's rows are often more than a gap apart), and enough rows for several results per
key. :class:`GeneratorSettings` holds what a user set on the command
line or in the Python API; whatever is left unset takes the query-aware value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import reduce

from eowc.semantics.analysis.watermark_derivation import join_time_bounds
from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.ir.plan import (
    CountTVF,
    Join,
    MatchRecognize,
    OverWindow,
    Query,
    SessionTVF,
    WindowTVF,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.verify.generators import BASE_TIME, LogShape

#: How many of its longest duration a case's event time spans (plus the longest delay).
SPAN_PERIODS = 4
#: A lattice finer than this many instants over the span is left out of the draws (a
#: millisecond delay under an hour window): rows would almost never meet.
MAX_INSTANTS = 400
#: Rows per generated log when nothing else asks for more.
DEFAULT_ROWS = 20


@dataclass(frozen=True)
class QueryScale:
    """What a query's cases must span: ``lattices`` (``(origin, step)`` in microseconds, the
    instants where its rules change), ``horizon`` (its longest duration), ``delay`` (its
    longest watermark delay), ``rows_per_result`` (rows of one key one result needs: a count
    window's, a pattern's; 1 otherwise) and ``gap`` (its longest session gap, 0 without)."""

    lattices: tuple[tuple[int, int], ...]
    horizon: int
    delay: int
    rows_per_result: int = 1
    gap: int = 0

    @property
    def span(self) -> int:
        """Event time a case covers: :data:`SPAN_PERIODS` horizons and the longest delay, so
        the watermark passes several windows, sessions or join bounds."""
        return SPAN_PERIODS * self.horizon + self.delay

    @property
    def grid(self) -> int:
        """The greatest common step of every lattice: rows on it meet every boundary."""
        return reduce(math.gcd, (step for _, step in self.lattices))


def query_scale(query: Query) -> QueryScale:
    """The durations ``query``'s rules depend on (see the module documentation)."""
    lattices: list[tuple[int, int]] = []
    rows, gap = 1, 0
    for node in walk(query.plan):
        if isinstance(node, WindowTVF):
            spec = node.spec
            lattices.append((spec.offset, spec.size))
            if spec.slide:
                lattices.append((spec.offset, spec.slide))
        elif isinstance(node, SessionTVF):
            lattices.append((0, node.gap))
            gap = max(gap, node.gap)
        elif isinstance(node, CountTVF):
            rows = max(rows, node.size + node.slide)
        elif isinstance(node, MatchRecognize):
            # a match needs its rows in the right order of values: three times its shortest length
            rows = max(rows, 3 * (sum(term.low for term in node.pattern) + 1))
        elif isinstance(node, Join):
            for bound in join_time_bounds(node):
                lattices += [(0, abs(b)) for b in (bound.lower, bound.upper) if b]
        elif isinstance(node, OverWindow):
            lattices += [(0, abs(b)) for call in node.calls if call.frame.kind == "range"
                         for b in (call.frame.start, call.frame.end) if b]
            for call in node.calls:  # a session frame closes like a session window
                if call.frame.kind == "session" and call.frame.gap:
                    lattices.append((0, call.frame.gap))
                    gap = max(gap, call.frame.gap)
    delays = [s.watermark.delay for s in sources_of(query.plan) if s.watermark is not None]
    # a row a delay past a boundary moves the watermark exactly onto it
    lattices += [(origin + d, step) for origin, step in lattices for d in set(delays) if d > 0]
    lattices += [(0, d) for d in delays if d > 0]
    if not lattices:  # an EOWC sort with zero delay: whole seconds
        lattices.append((0, MICROS_PER_SECOND))
    unique = tuple(dict.fromkeys(lattices))
    return QueryScale(unique, max(step for _, step in unique), max(delays, default=0), rows, gap)


@dataclass(frozen=True)
class GeneratorSettings:
    """The generator settings a user chose (``eowc verify --rows --span --keys --null-rate
    --late --epochs``, or the Python API); None takes the query-aware default of
    :meth:`shape_for`. Durations are microseconds. ``unit``: the step rows are nudged by
    either side of a boundary (None: the convention's, :attr:`Convention.unit`)."""

    rows: int | None = None
    span: int | None = None
    keys: int | None = None
    null_rate: float | None = None
    late: int | None = None
    epochs: int | None = None
    unit: int | None = None

    def shape_for(self, query: Query) -> LogShape:
        """The shape of ``query``'s logs: its :func:`query_scale` where nothing was set."""
        scale = query_scale(query)
        keys = self.keys if self.keys is not None else LogShape.keys
        rows = self.rows if self.rows is not None else max(DEFAULT_ROWS, 3 * keys * scale.rows_per_result)
        # a key's rows about two gaps apart on average: sessions close within the span
        span = self.span if self.span is not None else max(scale.span, 2 * scale.gap * rows // keys)
        shape = LogShape(rows=rows, span=span, keys=keys, late=2, edges=2, epochs=self.epochs,
                         unit=self.unit)
        # lattices with a few hundred instants at most, and at least one in the span
        lattices = tuple(lattice for lattice in scale.lattices if span // lattice[1] <= MAX_INSTANTS
                         and shape.instants(lattice)[0] <= BASE_TIME + span)
        grid = reduce(math.gcd, (step for _, step in lattices), 0) or max(span // DEFAULT_ROWS, 1)
        if span // grid <= MAX_INSTANTS and (0, grid) not in lattices:
            lattices += ((0, grid),)  # rows between boundaries, on every boundary's grid
        shape = replace(shape, lattices=lattices)
        if self.null_rate is not None:
            shape = replace(shape, null_rate=self.null_rate)
        if self.late is not None:
            shape = replace(shape, late=self.late, edges=min(self.late, shape.edges))
        return shape
