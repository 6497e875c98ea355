"""The logical operators of the dataflow interpreter, one class each, behind the one protocol
of :mod:`eowc.semantics.operators.protocol`.

Each stateful operator binds its own trigger condition from
:mod:`eowc.semantics.rules.triggers` (through
:func:`eowc.semantics.analysis.completion.completion_rule` over its
:class:`~eowc.semantics.analysis.operator_inputs.OperatorInput`), reads its port's watermark
through a :class:`~eowc.semantics.operators.protocol.PortClock`, and releases a result once
its trigger holds at that watermark: then the result is final (every trigger is monotone in
the watermark, which never goes down), so it is emitted once and its state dropped. Without
a trigger (``rule`` None: the batch query ``Q`` of Definition 2, evaluated for emit on
update) an operator releases its results when its input ends. The math is the pure pieces
of :mod:`eowc.semantics.operators` (aggregate functions, frames, the pattern matcher, session
merging, count numbering, TopN ranking).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from operator import itemgetter
from typing import Any

from eowc.semantics.analysis.completion import CompletionRule, watermark_columns
from eowc.semantics.analysis.operator_inputs import join_judges_late_rows
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import ColumnRef, Row, Schema, column_index, compile_expr
from eowc.semantics.ir.plan import (
    NEVER_ARRIVED,
    Aggregate,
    ArrivalOrder,
    Filter,
    Join,
    Plan,
    Project,
    ProjectSet,
    Source,
    Unnest,
    WindowTVF,
    tie_break,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, row_sort_key
from eowc.semantics.ir.windows import WindowKind
from eowc.semantics.operators.aggregates import AggregateFunction, aggregate_value, compile_aggregate
from eowc.semantics.operators.asof_join import CompiledAsof, key_matches
from eowc.semantics.operators.count_window import CompiledCount, CountPartition, closed_count_windows
from eowc.semantics.operators.join import JoinSide, compile_join, final_bounds
from eowc.semantics.operators.over import CompiledOver, OverPartition, partition_results
from eowc.semantics.operators.pattern import CompiledPattern, PatternPartition, partition_matches
from eowc.semantics.operators.protocol import Marks, Operator, PortClock, Stage
from eowc.semantics.operators.session import CompiledSession, pop_closed_sessions, session_rows
from eowc.semantics.operators.top_n import CompiledTopN, TopNPartition
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
    window_accepts,
)


def tuple_of(exprs: Sequence[Any], schema: Schema) -> Callable[[Row], Row]:
    """A function from a row to the tuple of ``exprs``' values (column picks use itemgetter)."""
    if exprs and all(isinstance(e, ColumnRef) for e in exprs):
        positions = [column_index(schema, e.name) for e in exprs]
        if len(positions) == 1:
            only = positions[0]
            return lambda row: (row[only],)
        return itemgetter(*positions)
    fs = tuple(compile_expr(e, schema).evaluate for e in exprs)
    return lambda row: tuple(f(row) for f in fs)


def compile_stateless(nodes: Sequence[Plan], convention: Convention, per_window: bool = False
                      ) -> Stage:
    """Stateless nodes (bottom first: Filter, Project, ProjectSet, window TVF assignment) as one stage
    ``(row, W_before) -> rows``. With ``per_window`` (the late check of a window aggregate
    under Spark or Flink), a window TVF gives a row only the windows that still accept it
    (:func:`window_accepts`)."""
    stages: list[Stage] = []
    for node in nodes:
        if isinstance(node, Filter):
            predicate = compile_expr(node.predicate, node.input.schema).evaluate
            stages.append(lambda row, w, p=predicate: [row] if p(row) is True else [])
        elif isinstance(node, Project):
            project = tuple_of([e for _, e in node.items], node.input.schema)
            stages.append(lambda row, w, p=project: [p(row)])
        elif isinstance(node, ProjectSet):
            stages.append(_project_set_stage(node))
        elif isinstance(node, WindowTVF):
            index = [c.name for c in node.input.schema].index(node.time_column)
            spec = node.spec
            if spec.kind is not WindowKind.CUMULATE and not per_window:
                slide = spec.slide if spec.kind is WindowKind.HOP else spec.size
                stages.append(_sliding_assignment(index, spec.size, slide, spec.offset))
                continue
            windows_of = spec.windows_of
            accepts = partial(window_accepts, convention=convention) if per_window else None

            def assign(row: Row, w: Watermark, i: int = index, of: Any = windows_of,
                       accepts: Any = accepts) -> list[Row]:
                t = row[i]
                if t is None:
                    return []
                out = []  # a loop, not a comprehension: no frame per row on Python 3.11
                for window in of(t):
                    if accepts is None or accepts(window, w):
                        start, end = window
                        out.append(row + (start, end, end - MICROS_PER_MILLI))
                return out
            stages.append(assign)
        else:
            raise PlanError(f"{type(node).__name__} is not supported here")
    if not stages:
        return lambda row, w: [row]
    if len(stages) == 1:
        return stages[0]

    def chained(row: Row, w: Watermark) -> list[Row]:
        rows = [row]
        for stage in stages:
            rows = [out for r in rows for out in stage(r, w)]
        return rows
    return chained


def _project_set_stage(node: ProjectSet) -> Stage:
    """A :class:`~eowc.semantics.ir.plan.ProjectSet`: per row, one row per position up to the
    longest unnested array, a shorter array's elements padded with NULL, the other items
    repeated."""
    schema = node.input.schema
    items = [(isinstance(e, Unnest), compile_expr(e.array if isinstance(e, Unnest) else e,
                                                  schema).evaluate) for _, e in node.items]

    def expand(row: Row, w: Watermark) -> list[Row]:
        values = [f(row) for _, f in items]
        arrays = [v or () for (unnested, _), v in zip(items, values, strict=True) if unnested]
        out = []
        for position in range(max(map(len, arrays))):
            made = []
            for (unnested, _), value in zip(items, values, strict=True):
                if not unnested:
                    made.append(value)
                else:
                    made.append(value[position] if value is not None and position < len(value)
                                else None)
            out.append(tuple(made))
        return out
    return expand


def _sliding_assignment(index: int, size: int, slide: int, offset: int) -> Stage:
    """TUMBLE's and HOP's window assignment (:meth:`~eowc.semantics.ir.windows.WindowSpec.windows_of`,
    a TUMBLE being a HOP whose slide is its size): every window ``[s, s + size)`` holding the
    row's time, by end, each appending ``window_start``, ``window_end``, ``window_time``; the
    arithmetic inline, since it runs for every row."""
    lag, time = (size - 1) // slide * slide, size - MICROS_PER_MILLI
    if slide == size:  # one window per row
        def assign_one(row: Row, w: Watermark) -> list[Row]:
            t = row[index]
            if t is None:
                return []
            start = t - (t - offset) % size
            return [row + (start, start + size, start + time)]
        return assign_one

    def assign(row: Row, w: Watermark) -> list[Row]:
        t = row[index]
        if t is None:
            return []
        last = t - (t - offset) % slide
        first = last - lag
        while first + size <= t:
            first += slide
        out = []
        for start in range(first, last + 1, slide):
            out.append(row + (start, start + size, start + time))
        return out
    return assign


# ------------------------------------------------------------------------ stateless operators


class SourceRows(Operator):
    """A Scan: the source's rows of INPUT (:mod:`eowc.semantics.engines.inputs` judged them)."""

    releases_only_rows = True

    def __init__(self, source: Source) -> None:
        self.source = source

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        return inputs[0]


class Stateless(Operator):
    """Filter, Project and window TVF assignment: every row at once, in order."""

    releases_only_rows = True

    def __init__(self, stage: Stage) -> None:
        self.stage = stage

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        stage = self.stage
        return [out for row in inputs[0] for out in stage(row, NO_WATERMARK)]


class UnionAll(Operator):
    """UNION ALL: the rows of every input port, as they come (its output watermark is the least
    of its inputs': :func:`eowc.semantics.analysis.watermark_derivation.minimum`)."""

    releases_only_rows = True

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        return [row for port in inputs for row in port]


class StreamJoin(Operator):
    """A join (interval join, window join, any equality join with time bounds; inner, outer,
    semi, anti) as the altered operator of Definition 4: new rows of each side meet the other
    side's kept rows and every joined row is emitted at once (a SEMI join: a left row at its
    first match); a kept row leaves the state (NULL-padded into the output if it is an outer
    side's and never matched, as every unmatched row of an ANTI join) once
    :func:`~eowc.semantics.rules.triggers.unmatched_row_is_final` at the other side's
    watermark on the column that bounds it.

    A join that judges its input rows itself
    (:func:`~eowc.semantics.analysis.operator_inputs.join_judges_late_rows`: Flink's interval
    join) takes an epoch's rows in arrival order (``positions``: per side, the arrival
    positions of a row, the k-th time the side sees it at the k-th; None for an operator's
    rows, which come after the epoch's source rows), each
    meeting the other side's kept rows, and keeps a row only if it could still meet a row to
    come by the watermarks before the epoch (without the convention's
    :attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_state_margin`: Flink caches a
    row while the join's watermark is below its bound); an outer row not kept and unmatched
    is padded at once."""

    def __init__(self, plan: Join, convention: Convention,
                 positions: tuple[Callable[[Row], list[int]] | None,
                                  Callable[[Row], list[int]] | None] | None = None) -> None:
        self.convention = convention
        join = compile_join(plan, convention)
        self.condition, self.kind = join.condition, plan.kind
        self.left = JoinSide(join.left_key, join.left_until, join.left_other, join.left_outer,
                             join.left_width)
        self.right = JoinSide(join.right_key, join.right_until, join.right_other,
                              join.right_outer, join.right_width)
        self.judges_late_rows = join_judges_late_rows(plan, convention)
        self.positions = positions
        #: Per side, how many times it has seen each row (its next arrival position's index).
        self.seen: tuple[Counter, Counter] = (Counter(), Counter())
        #: The watermarks the last epoch ended with (those in force before the next).
        self.before: Marks | None = None

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        out: list[Row] = []
        if self.judges_late_rows:
            out += self._judged(inputs, marks)
        else:
            for side, rows in ((0, inputs[0]), (1, inputs[1])):
                for row in rows:
                    self._meet(side, row, out, kept=True)
        padding = () if self.kind == "anti" else (None,) * self.right.width
        for side, pad in ((self.left, lambda r: r + padding),
                          (self.right, lambda r: (None,) * self.left.width + r)):
            final = final_bounds(side.others, marks, closed, self.convention)
            out += [pad(r) for r in side.release(final)]
        self.before = marks
        return out

    def _meet(self, side: int, row: Row, out: list[Row], kept: bool) -> bool:
        """``row`` of input ``side`` (0 left, 1 right) meets the other side's kept rows, its
        joined rows into ``out``; kept itself if ``kept``. Whether it matched."""
        this, other = (self.left, self.right) if side == 0 else (self.right, self.left)
        condition, kind = self.condition, self.kind
        pairs, semi = kind not in ("semi", "anti"), kind == "semi"
        entry = this.add(row) if kept else [row, False, False]
        for found in other.candidates(this.key(row)):
            left, right = (entry, found) if side == 0 else (found, entry)
            if condition(left[0] + right[0]) is True:
                if pairs:
                    out.append(left[0] + right[0])
                elif semi and not left[1]:
                    out.append(left[0])
                entry[1] = found[1] = True
        return entry[1]

    def _judged(self, inputs: Sequence[list[Row]], marks: Marks) -> list[Row]:
        """The epoch's rows as a join that judges them meets them (the class docstring)."""
        before = self.before or {k: NO_WATERMARK for k in marks}
        if self.positions is None:
            raise ValueError("a join that judges its own late rows needs the rows' arrival order")
        sides = (self.left, self.right)
        keeps = [final_bounds(side.others, before, False, self.convention, join_margin=0)
                 for side in sides]
        arrived = []
        for side, (rows, positions) in enumerate(zip(inputs, self.positions, strict=True)):
            seen = self.seen[side]
            for row in rows:
                at = positions(row) if positions is not None else []
                arrived.append((at[min(seen[row], len(at) - 1)] if at else NEVER_ARRIVED,
                                side, row))
                seen[row] += 1
        out: list[Row] = []
        padding = () if self.kind == "anti" else (None,) * self.right.width
        for _, side, row in sorted(arrived, key=lambda a: a[0]):
            kept = not any(final(until(row))
                           for final, until in zip(keeps[side], sides[side].untils, strict=False))
            matched = self._meet(side, row, out, kept)
            if not kept and not matched and sides[side].outer:
                out.append(row + padding if side == 0 else (None,) * self.left.width + row)
        return out

    @property
    def state_rows(self) -> int:
        """Rows kept, both sides."""
        return self.left.size + self.right.size


class AsofJoinOperator(Operator):
    """RisingWave's ASOF join (:mod:`eowc.semantics.operators.asof_join`). A left row's match
    can be revised by any right row of its key still to come (a closer one), and without a
    time bound on the rows that can still come, no match is final before the input ends:
    the operator keeps every row, by equality key, and releases each left row's joined (or,
    LEFT, NULL-padded) row when the input ends. Emitting on update, the dataflow evaluates
    again the keys an epoch's rows touch (:meth:`results`)."""

    def __init__(self, asof: CompiledAsof) -> None:
        self.asof = asof
        self.rows: tuple[dict[Row, list[Row]], dict[Row, list[Row]]] = ({}, {})

    def results(self, key: Row, ports: list[list[Row]]) -> list[Row]:
        """The joined rows of one key's left and right rows."""
        return key_matches(self.asof, key, ports[0], ports[1])

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        for side, key_of in ((0, self.asof.left_key), (1, self.asof.right_key)):
            for row in inputs[side]:
                self.rows[side].setdefault(key_of(row), []).append(row)
        if not closed:
            return []
        out = [joined for key, left in self.rows[0].items()
               for joined in self.results(key, [left, self.rows[1].get(key, [])])]
        self.rows = ({}, {})
        return out

    @property
    def state_rows(self) -> int:
        """Rows kept, both sides: all of them."""
        return sum(len(rows) for side in self.rows for rows in side.values())


# ------------------------------------------------------------------------- stateful operators


class OneInput(Operator):
    """A stateful operator of one input port: ``below`` (the stateless steps between its input
    and it, given the port watermark before the epoch; None when the input loop applied them)
    and its port's :class:`PortClock`."""

    def __init__(self, below: Stage | None, clock: PortClock) -> None:
        self.below, self.clock = below, clock

    def admit(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        """Advance the port watermark; the epoch's rows through ``below``."""
        self.clock.advance(marks, closed)
        rows = inputs[0]
        if self.below is not None and rows:
            below, before = self.below, self.clock.before
            rows = [out for row in rows for out in below(row, before)]
        return rows


def _when_closed(rule: CompletionRule | None) -> CompletionRule:
    """``rule``, or without one (the batch query ``Q``) the rule that completes everything
    at the end of the input only."""
    if rule is not None:
        return rule
    return CompletionRule(lambda row: 0, lambda bound, w: w == CLOSED_WATERMARK, "at the end")


def in_row_order(keys: Iterable[Row]) -> list[Row]:
    """``keys`` sorted by :func:`~eowc.semantics.ir.values.row_sort_key` (NULL first, then by
    value, column after column). The values' own order is the same wherever no NULL meets
    another value, so it is tried first: comparing a NULL with a value raises TypeError."""
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=row_sort_key)


class _Groups(dict[Row, list[Row]]):
    """Per open group, by key, its rows not folded yet; reading a new key opens its group
    (``open``) with no rows."""

    def __init__(self, open_group: Callable[[Row], list[Row]]) -> None:
        super().__init__()
        self.open_group = open_group

    def __missing__(self, key: Row) -> list[Row]:
        return self.open_group(key)


class WindowAggregate(OneInput):
    """GROUP BY (EOWC GroupAgg and SortAgg; TUMBLE, HOP, CUMULATE windows, or the watermark
    column itself, in the key): rows fold into their group's state; a group is emitted, and
    dropped, when its trigger holds (``rule``: ``window_closes`` of its window, or
    ``group_is_complete`` of its key), in order of its bound, then its key. The output is the
    keys, then the aggregates. A non-late row can never complete a group by itself (its own
    window or time is not complete), so it :attr:`waits_for_watermark`. A group's rows are
    folded when its result is read, all at once (``AggregateFunction.add_rows``), into the
    state folded so far."""

    waits_for_watermark = True

    def __init__(self, node: Aggregate, source: Source, rule: CompletionRule | None,
                 below: Stage | None, clock: PortClock, arrival: ArrivalOrder | None = None) -> None:
        super().__init__(below, clock)
        schema = node.input.schema
        event_time = watermark_columns(node.input).event_time
        time_name = schema[event_time].name if event_time is not None else None
        self.functions: tuple[AggregateFunction, ...] = tuple(
            compile_aggregate(c, schema, time_name, tie_break(schema, source, arrival))
            for c in node.calls)
        self.key = tuple_of([e for _, e in node.group_by], schema)
        self.is_global = not node.group_by
        self.rule = rule
        #: Per open group, by key: its rows not folded yet (a new key opens its group); and,
        #: once its row was read (:meth:`result`, on update), the state they were folded into.
        self.unfolded: _Groups = _Groups(self.open)
        self.states: dict[Row, list[Any]] = {}
        #: The bounds of the open groups (a heap), and the keys of the groups of each bound.
        self.bounds: list[Any] = []
        self.keys_of_bound: dict[Any, list[Row]] = {}

    def add(self, rows: list[Row]) -> None:
        """Put ``rows`` in their groups (opening new groups in completion order)."""
        key_of, unfolded = self.key, self.unfolded
        for row in rows:
            unfolded[key_of(row)].append(row)

    def open(self, key: Row) -> list[Row]:
        """Open the group ``key``, pending on its bound: no rows yet (its rows, returned)."""
        rows: list[Row] = []
        self.unfolded[key] = rows
        if self.rule is not None:
            bound = self.rule.bound(key)
            keys = self.keys_of_bound.get(bound)
            if keys is None:
                self.keys_of_bound[bound] = [key]
                heapq.heappush(self.bounds, bound)
            else:
                keys.append(key)
        return rows

    def result(self, key: Row) -> Row:
        """The group's row: its key, then its aggregates over every row it got."""
        rows, functions = self.unfolded[key], self.functions
        group = self.states.get(key) or [f.initial() for f in functions]
        if rows:
            group = [f.add_rows(state, rows) for f, state in zip(functions, group, strict=True)]
            rows.clear()
        self.states[key] = group
        return key + tuple([f.result(state) for f, state in zip(functions, group, strict=True)])

    def drop(self, key: Row) -> None:
        """Forget the group ``key`` (complete: it never changes again)."""
        self.states.pop(key, None)
        del self.unfolded[key]

    def final(self, key: Row) -> Row:
        """The row of the group ``key``, complete (:meth:`result`, then :meth:`drop`)."""
        return self.group_row(key, self.unfolded.pop(key), self.states.pop(key, None))

    def group_row(self, key: Row, rows: list[Row], states: list[Any] | None = None) -> Row:
        """The row of the group ``key`` over ``rows``, folded into ``states`` (the group's
        state so far; by default, over no rows yet)."""
        if states is None:
            return key + tuple([f.result(f.add_rows(f.initial(), rows)) for f in self.functions])
        return key + tuple([f.result(f.add_rows(state, rows))
                            for f, state in zip(self.functions, states, strict=True)])

    def complete(self, watermark: Watermark) -> list[Row]:
        """Pop the keys of the groups complete at ``watermark``, in bound-then-key order."""
        rule, bounds = self.rule, self.bounds
        if rule is None:
            if watermark != CLOSED_WATERMARK:
                return []
            return in_row_order(self.unfolded)
        done: list[Row] = []
        while bounds and rule.is_complete(bounds[0], watermark):
            done += in_row_order(self.keys_of_bound.pop(heapq.heappop(bounds)))
        return done

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        clock = self.clock
        clock.advance(marks, closed)
        rows = inputs[0]
        if rows:
            if self.below is not None:
                below, before = self.below, clock.before
                rows = [out for row in rows for out in below(row, before)]
            self.add(rows)
        after, rule, bounds = clock.after, self.rule, self.bounds
        if after == clock.before or (rule is not None and not (
                bounds and rule.is_complete(bounds[0], after))):
            return []  # nothing new is complete (the first bound is not)
        if closed and rule is None and self.is_global and not self.unfolded:
            self.open(())  # Q: one row over no rows
        return [self.final(key) for key in self.complete(after)]

    def changes(self, rows: list[Row], first: bool, above: Callable[[Row], Row | None],
                shown: dict[Row, Row | None]) -> list[tuple[str, Row]]:
        """Emit on update, one epoch: each touched group's old row out, its new row in (after
        ``above``); a group complete at the port watermark never changes again and is
        dropped (``shown``: the rows on display, by key)."""
        touched = set(map(self.key, rows))
        if self.is_global and first:
            if () not in self.unfolded:
                self.open(())
            touched.add(())
        self.add(rows)
        out: list[tuple[str, Row]] = []
        for key in sorted(touched, key=row_sort_key):
            new, old = above(self.result(key)), shown.get(key)
            if new != old:
                if old is not None:
                    out.append(("-", old))
                if new is not None:
                    out.append(("+", new))
                shown[key] = new
        if self.rule is not None:
            for key in self.complete(self.clock.after):
                self.drop(key)
                shown.pop(key, None)
        return out


class SessionAggregate(OneInput):
    """Session aggregation (seed 004's SESSION TVF under a GROUP BY window_start, window_end):
    per partition key the rows of its open sessions; the sessions that close (``rule``:
    ``window_closes`` of ``[first, last + gap)``) are aggregated (through the stateless steps
    ``middle`` between the TVF and the GROUP BY), emitted by window end, then key, and
    dropped."""

    def __init__(self, session: CompiledSession, middle: Stage, node: Aggregate, source: Source,
                 rule: CompletionRule | None, below: Stage | None, clock: PortClock,
                 arrival: ArrivalOrder | None = None) -> None:
        super().__init__(below, clock)
        self.session, self.middle, self.rule = session, middle, _when_closed(rule)
        schema = node.input.schema
        self.functions = tuple(compile_aggregate(c, schema, None, tie_break(schema, source, arrival))
                               for c in node.calls)
        self.key = tuple_of([e for _, e in node.group_by], schema)
        self.partitions: dict[Row, list[Row]] = {}

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        rows = self.admit(inputs, marks, closed)
        for row in rows:
            self.partitions.setdefault(self.session.partition(row), []).append(row)
        watermark, is_complete = self.clock.after, self.rule.is_complete
        by_window = pop_closed_sessions(self.session, self.partitions,
                                        lambda window: is_complete(window, watermark))
        out: list[Row] = []
        for window in sorted(by_window, key=lambda w: (w.end, w.start)):
            groups: dict[Row, list[Row]] = {}
            for tvf_row in by_window[window]:
                for row in self.middle(tvf_row, NO_WATERMARK):
                    groups.setdefault(self.key(row), []).append(row)
            out += [key + tuple(aggregate_value(f, groups[key]) for f in self.functions)
                    for key in sorted(groups, key=row_sort_key)]
        return out


class CountWindows(OneInput):
    """Count windows (COUNT_TUMBLE, COUNT_HOP), alone or under a GROUP BY: per partition key its
    rows in order; a window is emitted when it closes
    (:func:`~eowc.semantics.rules.triggers.count_window_closes`: full, its last row's time
    complete; at the end of the input every full window, never a partial one) and its rows
    no later window reads are dropped. Alone: its rows (through ``middle``) in window order;
    under a GROUP BY: each group's row, by its bound, then its key."""

    def __init__(self, count: CompiledCount, middle: Stage, node: Aggregate | None,
                 source: Source, rule: CompletionRule | None, convention: Convention,
                 below: Stage | None, clock: PortClock, arrival: ArrivalOrder | None = None) -> None:
        super().__init__(below, clock)
        self.count, self.middle, self.rule, self.convention = count, middle, rule, convention
        self.node = node
        if node is not None:
            schema = node.input.schema
            self.functions = tuple(compile_aggregate(c, schema, None,
                                                     tie_break(schema, source, arrival))
                                   for c in node.calls)
            self.key = tuple_of([e for _, e in node.group_by], schema)
        self.partitions: dict[Row, CountPartition] = {}

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        count = self.count
        for row in self.admit(inputs, marks, closed):
            if count.time(row) is not None:
                self.partitions.setdefault(count.partition(row), CountPartition()).add(count, row)
        watermark = self.clock.after if self.rule is not None or closed else NO_WATERMARK
        tvf_rows: list[tuple[Any, Row]] = []
        for key, partition in self.partitions.items():
            tvf_rows += closed_count_windows(count, key, partition.pop_closed(
                count, watermark, self.convention))
        return [row for _, row in sorted(self.results(tvf_rows), key=lambda item: item[0])]

    def results(self, tvf_rows: list[tuple[Any, Row]]) -> list[tuple[Any, Row]]:
        """The windows' rows through ``middle``, each with its place in the output: alone, the
        place of its TVF row; under a GROUP BY, each group's row by bound, then key."""
        middle = self.middle
        if self.node is None:
            return [(order, out) for order, row in tvf_rows for out in middle(row, NO_WATERMARK)]
        groups: dict[Row, list[Row]] = {}
        for _, tvf_row in tvf_rows:
            for row in middle(tvf_row, NO_WATERMARK):
                groups.setdefault(self.key(row), []).append(row)
        rule = self.rule

        def order(key: Row) -> Any:
            return (rule.bound(key) if rule is not None else 0, row_sort_key(key))
        return [(order(key), key + tuple(aggregate_value(f, groups[key]) for f in self.functions))
                for key in groups]


class EowcSort(OneInput):
    """The EOWC sort (seed 000's SortBuffer) on top of a plan no other operator emits for:
    rows are buffered by their watermark column and emitted once it is complete (``rule``:
    ``time_is_complete``), in its order, ties broken by ``order``. A row whose watermark
    column is NULL (a join's NULL-padded outer row, which the join makes once it is final) is
    emitted at once."""

    def __init__(self, rule: CompletionRule, order: Callable[[Row], Any], below: Stage | None,
                 clock: PortClock) -> None:
        super().__init__(below, clock)
        self.rule, self.order = rule, order
        #: The waiting rows by their watermark column's value, in arrival order; the distinct
        #: values in a heap (many rows share an instant: they are ordered once, when it is
        #: complete, not compared in the heap).
        self.waiting: dict[Any, list[Row]] = {}
        self.values: list[Any] = []

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        bound, order, waiting, values = self.rule.bound, self.order, self.waiting, self.values
        unordered = []
        for row in self.admit(inputs, marks, closed):
            value = bound(row)
            if value is None:
                unordered.append(row)
            elif value in waiting:
                waiting[value].append(row)
            else:
                waiting[value] = [row]
                heapq.heappush(values, value)
        out = sorted(unordered, key=order)
        is_complete, watermark = self.rule.is_complete, self.clock.after
        while values and (closed or is_complete(values[0], watermark)):
            rows = waiting.pop(heapq.heappop(values))
            out += rows if len(rows) == 1 else sorted(rows, key=order)
        return out


class Partitioned(OneInput):
    """An operator over partitions of its input (OVER window, TopN, MATCH_RECOGNIZE): each row
    goes to its partition; after each epoch each partition gives the rows that became final,
    emitted across partitions in order of their place."""

    def __init__(self, below: Stage | None, clock: PortClock) -> None:
        super().__init__(below, clock)
        self.partitions: dict[Row, Any] = {}

    def partition(self, row: Row) -> Row:
        raise NotImplementedError

    def new_partition(self) -> Any:
        raise NotImplementedError

    def add(self, partition: Any, row: Row) -> None:
        raise NotImplementedError

    def finals(self, key: Row, partition: Any, watermark: Watermark) -> list[tuple[Any, Row]]:
        """The partition's rows final at ``watermark``, each with its place in the output."""
        raise NotImplementedError

    def results(self, key: Row, rows: list[Row]) -> list[Row]:
        """The batch result of one partition's rows (any order): ``Q`` over it."""
        raise NotImplementedError

    def step(self, inputs: Sequence[list[Row]], marks: Marks, closed: bool) -> list[Row]:
        partitions = self.partitions
        for row in self.admit(inputs, marks, closed):
            key = self.partition(row)
            partition = partitions.get(key)
            if partition is None:
                partition = partitions[key] = self.new_partition()
            self.add(partition, row)
        watermark = self.clock.after
        done = [item for key, p in partitions.items() for item in self.finals(key, p, watermark)]
        done.sort(key=itemgetter(0))
        return [row for _, row in done]


class OverWindowOperator(Partitioned):
    """The EOWC OverWindow (seed 002): each partition's rows in ORDER BY order; a row is emitted
    with its results once its frame is complete
    (:func:`~eowc.semantics.rules.triggers.frame_is_complete`); rows no future frame reads
    are dropped. Emitted by sort key, then partition."""

    def __init__(self, over: CompiledOver, convention: Convention, below: Stage | None,
                 clock: PortClock) -> None:
        super().__init__(below, clock)
        self.over, self.convention = over, convention
        self.partition = over.partition  # type: ignore[method-assign]

    def new_partition(self) -> OverPartition:
        return OverPartition()

    def add(self, partition: OverPartition, row: Row) -> None:
        partition.add(self.over, row)

    def finals(self, key: Row, partition: OverPartition, watermark: Watermark
               ) -> list[tuple[Any, Row]]:
        if not partition.pending:
            return []
        return [((sort_key, part), row) for sort_key, part, row in
                partition.pop_final(self.over, watermark, self.convention)]

    def results(self, key: Row, rows: list[Row]) -> list[Row]:
        return [r for r, _ in partition_results(self.over, rows)]


class SessionRows(Partitioned):
    """The SESSION TVF read without a GROUP BY: each partition key's rows; once a session
    closes (``rule``: ``window_closes`` of ``[first, last + gap)``) its rows are emitted with
    its window columns and dropped. Emitted by window end, start, then partition key, then
    time."""

    def __init__(self, session: CompiledSession, rule: CompletionRule | None, below: Stage | None,
                 clock: PortClock) -> None:
        super().__init__(below, clock)
        self.session, self.rule = session, _when_closed(rule)
        self.partition = session.partition  # type: ignore[method-assign]

    def new_partition(self) -> list[Row]:
        return []

    def add(self, partition: list[Row], row: Row) -> None:
        partition.append(row)

    def finals(self, key: Row, partition: list[Row], watermark: Watermark
               ) -> list[tuple[Any, Row]]:
        is_complete, time = self.rule.is_complete, self.session.time
        still_open = {key: partition}
        closed = pop_closed_sessions(self.session, still_open,
                                     lambda window: is_complete(window, watermark))
        partition[:] = still_open.get(key, [])
        return [(((w.end, w.start), row_sort_key(key), time(row)), row)
                for w, rows in closed.items() for row in rows]

    def results(self, key: Row, rows: list[Row]) -> list[Row]:
        return session_rows(self.session, rows)


class TopNOperator(Partitioned):
    """TopN (window TopN, deduplication): each partition keeps its top ``limit`` rows in rank
    order; a ranked row is emitted once its bound is complete (``rule``: its window closes,
    or its event time is complete). The bound never decreases along a ranking, so the emitted
    rows are a prefix. Emitted by bound, then partition key, then rank."""

    def __init__(self, top: CompiledTopN, rule: CompletionRule | None, below: Stage | None,
                 clock: PortClock) -> None:
        super().__init__(below, clock)
        self.top, self.rule = top, _when_closed(rule)
        self.partition = top.partition  # type: ignore[method-assign]

    def new_partition(self) -> TopNPartition:
        return TopNPartition()

    def add(self, partition: TopNPartition, row: Row) -> None:
        partition.add(self.top, row)

    def finals(self, key: Row, partition: TopNPartition, watermark: Watermark
               ) -> list[tuple[Any, Row]]:
        return [((bound, row_sort_key(key), ranked[-1]), ranked) for bound, ranked in
                partition.pop_complete(self.rule.bound, self.rule.is_complete, watermark)]

    def results(self, key: Row, rows: list[Row]) -> list[Row]:
        return self.top.ranked(rows)


class PatternOperator(Partitioned):
    """EOWC MATCH_RECOGNIZE: each partition keeps its rows in ORDER BY order and takes the
    matcher's decisions from where it stopped while they are final
    (:func:`~eowc.semantics.rules.triggers.match_is_final`); matches are emitted in order of
    their last row, then partition key."""

    def __init__(self, pattern: CompiledPattern, convention: Convention, below: Stage | None,
                 clock: PortClock) -> None:
        super().__init__(below, clock)
        self.pattern, self.convention = pattern, convention
        self.partition = pattern.partition  # type: ignore[method-assign]

    def new_partition(self) -> PatternPartition:
        return PatternPartition()

    def add(self, partition: PatternPartition, row: Row) -> None:
        partition.add(self.pattern, row)

    def finals(self, key: Row, partition: PatternPartition, watermark: Watermark
               ) -> list[tuple[Any, Row]]:
        return [((last, row_sort_key(key)), row) for last, row in
                partition.pop_final(self.pattern, key, watermark, self.convention)]

    def results(self, key: Row, rows: list[Row]) -> list[Row]:
        return partition_matches(self.pattern, key, sorted(rows, key=self.pattern.sort_key))
