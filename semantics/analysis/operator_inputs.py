"""A composed plan, one stateful operator at a time (seed 001, Definition 4: EOWC is a property
of each logical operator, each with its own trigger condition).

Every stateful operator (a GROUP BY, possibly over a SESSION or count window TVF; an OVER
window; a TopN; a MATCH_RECOGNIZE; and, under EOWC, the sort on top of a plan that has no
other emitting operator) reads, through stateless steps, one *input*: a source, a join, a
union or another stateful operator. Its trigger is the one of
:func:`eowc.semantics.analysis.completion.completion_rule` applied to the query made of the
operator and those steps over that input read as a source of its own: a real source, or a
*derived source* whose watermark is the one the derivation
(:mod:`eowc.semantics.analysis.watermark_derivation`) gives a column of the input's output, from
the source watermarks. Window columns keep their window there (seed 004: window aggregate,
window join and window TopN keep window_start, window_end and window_time as time
attributes), so a window TopN or a window aggregate can follow them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from eowc.semantics.analysis.completion import completion_rule, late_check_is_per_window
from eowc.semantics.analysis.watermark_derivation import (
    Derivation,
    DerivedSource,
    Step,
    derive,
    join_time_bounds,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.plan import (
    Aggregate,
    AsofJoin,
    CountTVF,
    Filter,
    GapFill,
    Join,
    MatchRecognize,
    OverWindow,
    Plan,
    Project,
    ProjectSet,
    Query,
    Scan,
    SessionTVF,
    Source,
    TopN,
    Union,
    WatermarkDecl,
    WindowTVF,
    walk,
)
from eowc.semantics.rules.triggers import Convention

#: Operators that keep state and, under EOWC, emit by their own trigger.
EMITTING = (Aggregate, OverWindow, TopN, MatchRecognize, GapFill)
#: Window TVFs whose windows depend on other rows: run by the GROUP BY above them (or alone).
ROW_DEPENDENT = (SessionTVF, CountTVF)
#: Operators applied row by row.
STATELESS = (Filter, Project, ProjectSet, WindowTVF)
#: Operators with several inputs.
MULTI_INPUT = (Join, Union)
#: Roles of the window columns of a window TVF.
WINDOW_ROLES = ("window_start", "window_end", "window_time")


@dataclass(frozen=True)
class OperatorInput:
    """A stateful operator ``top`` (or the EOWC sort over ``top``, a stateless node), the nodes
    it runs (``nodes``, ``top`` first: the stateless steps under it and a SESSION or count
    TVF), and the node it reads (``below``): a Scan, a Join, a Union or another operator's
    top. ``query`` is ``nodes`` over ``source``: ``below``'s own source when it is a Scan,
    else a derived source whose watermark derives from the source watermarks as
    ``watermark`` (None: no column carries one)."""

    top: Plan
    nodes: tuple[Plan, ...]
    below: Plan
    query: Query
    source: Source
    watermark: Derivation | None

    @property
    def is_derived(self) -> bool:
        return not isinstance(self.below, Scan)


def is_emitting(plan: Plan) -> bool:
    """An operator that emits by its own trigger (the top of an :class:`OperatorInput`)."""
    return isinstance(plan, (*EMITTING, *ROW_DEPENDENT))


def per_window_tvf(plan: Plan, source: Source, convention: Convention) -> WindowTVF | None:
    """The window TVF whose windows judge ``source``'s rows late in ``plan``: under Spark and
    Flink, where every operator that reads the source judges per window
    (:func:`late_check_is_per_window`) and all read one TVF of it (the two window aggregates
    GROUPING SETS or ROLLUP plan are one TVF read twice), a row is late only when every window
    it falls in has closed. In a plan of several sources or with a join, that holds of a
    source read once, by a window aggregation that reads it directly (Flink's window
    aggregation under a window join drops a row only once its window has fired, as a lone one
    does); every other source's rows are judged by their time (None)."""
    nodes = walk(plan)
    scans = [n for n in nodes if isinstance(n, Scan) and n.source == source]
    several = len({n.source for n in nodes if isinstance(n, Scan)}) > 1 or \
        any(isinstance(n, Join | AsofJoin) for n in nodes)
    if several and len(scans) != 1:  # (a self-join: not compared)
        return None
    specs, found = set(), None
    for scan in scans:
        top = _operator_over(plan, scan)
        if top is None or not late_check_is_per_window(top, convention):
            return None
        if several and (not isinstance(top, Aggregate) or operator_nodes(top)[1] is not scan):
            return None
        windows = [n for n in walk(top) if isinstance(n, WindowTVF)
                   and any(m is scan for m in walk(n))]
        if not windows:
            return None
        found = windows[-1]
        specs.add(found.spec)
    return found if len(specs) == 1 else None


@dataclass(frozen=True)
class WindowJoinInput:
    """A source read by one side of a window join, through stateless steps and the window TVF
    ``windows``: its rows are judged late per window by the join's own watermark, the least
    of the watermarks of ``judged_by`` (the join's sources), not by the source's own."""

    windows: WindowTVF
    judged_by: tuple[Source, ...]


def window_join_input(plan: Plan, source: Source, convention: Convention
                      ) -> WindowJoinInput | None:
    """How a window join judges ``source``'s rows, under a convention whose window join
    judges by its own watermark
    (:attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_waits_for_both`:
    Flink's window join drops a row only once the least of both inputs' watermarks has fired
    its window) or by the query's one watermark
    (:attr:`~eowc.semantics.rules.triggers.BoundaryRules.global_watermark`: Spark's
    stream-stream join drops an input row whose window struct's end is at or below it),
    where ``source`` is read once in ``plan``, by a side of a window join (an equality of
    the two sides' window columns) that is stateless steps and a window TVF over it. None:
    the source's rows are judged by its own watermark."""
    if not (convention.join_waits_for_both or convention.global_watermark):
        return None
    scans = [n for n in walk(plan) if isinstance(n, Scan) and n.source == source]
    if len(scans) != 1:
        return None
    for join in (n for n in walk(plan) if isinstance(n, Join)):
        if all(bound.is_range for bound in join_time_bounds(join)):
            continue
        for side in (join.left, join.right):
            chain, below = stateless_nodes(side)
            windows = [n for n in chain if isinstance(n, WindowTVF)]
            if below is scans[0] and windows:
                judged_by = dict.fromkeys(n.source for n in walk(
                    plan if convention.global_watermark else join) if isinstance(n, Scan))
                return WindowJoinInput(windows[0], tuple(judged_by))
    return None


def join_judges_late_rows(join: Join, convention: Convention) -> bool:
    """Whether ``join`` judges its input rows itself, by its own watermark, instead of its
    sources dropping late rows: an interval join (time bounds, each a range) under a
    convention whose joins judge by their own watermark
    (:attr:`~eowc.semantics.rules.triggers.BoundaryRules.join_waits_for_both`). Flink's
    interval join (``TimeIntervalJoin``) drops no row: each row, in arrival order, meets the
    other side's rows still kept, and is kept itself only while the join's watermark (the
    least of both inputs') is below the greatest time of the other side it can meet; an
    unmatched outer row not kept is padded at once."""
    if isinstance(join, AsofJoin) or not convention.join_waits_for_both:
        return False  # an ASOF join keeps its own rules (semantics/operators/asof_join.py)
    bounds = join_time_bounds(join)
    return bool(bounds) and all(b.is_range for b in bounds)


def sides_judged_by_join(plan: Plan, convention: Convention) -> dict[Source, Join]:
    """Every source whose rows a join judges (:func:`join_judges_late_rows`), with that join:
    a source read once in ``plan``, through stateless steps, by a side of such a join. Its
    rows reach the join unjudged."""
    scans: dict[Source, list[Scan]] = {}
    for node in walk(plan):
        if isinstance(node, Scan):
            scans.setdefault(node.source, []).append(node)
    found = {}
    for join in (n for n in walk(plan) if isinstance(n, Join)):
        if not join_judges_late_rows(join, convention):
            continue
        for side in (join.left, join.right):
            below = stateless_nodes(side)[1]
            if isinstance(below, Scan) and len(scans[below.source]) == 1:
                found[below.source] = join
    return found


def has_join_judging_late_rows(plan: Plan, convention: Convention) -> bool:
    """Whether a join of ``plan`` judges its input rows itself (:func:`join_judges_late_rows`)."""
    return any(isinstance(n, Join) and join_judges_late_rows(n, convention) for n in walk(plan))


def refuse_join_judging_late_rows(plan: Plan, convention: Convention, backend: str) -> None:
    """A PlanError for a backend that judges every source's rows late at the source, given a
    plan with a join that judges them itself (:func:`join_judges_late_rows`)."""
    if has_join_judging_late_rows(plan, convention):
        raise PlanError(f"{backend} cannot run an interval join under the {convention.value} "
                        "convention, which keeps late rows and judges them by the join's own "
                        "watermark (as Flink's interval join does): the reference interpreter "
                        "and the executors run it (eowc run; eowc verify)")


def _operator_over(plan: Plan, scan: Scan) -> Plan | None:
    """The lowest emitting operator above ``scan`` (through stateless nodes)."""
    found = None
    for node in walk(plan):
        if is_emitting(node) and any(m is scan for m in walk(node)):
            found = node
    return found


def operator_nodes(top: Plan) -> tuple[tuple[Plan, ...], Plan]:
    """The nodes the operator ``top`` runs, ``top`` first, and the node it reads: under
    ``top``, stateless nodes and (under a GROUP BY, or as ``top``) one SESSION or count TVF."""
    nodes = [top]
    row_dependent = isinstance(top, ROW_DEPENDENT)
    node = top.children[0]
    while isinstance(node, STATELESS) or (isinstance(node, ROW_DEPENDENT) and not row_dependent
                                          and isinstance(top, Aggregate)):
        row_dependent = row_dependent or isinstance(node, ROW_DEPENDENT)
        nodes.append(node)
        node = node.children[0]
    return tuple(nodes), node


def _rebuilt(nodes: tuple[Plan, ...], below: Plan) -> Plan:
    """``nodes`` (top first) over ``below`` instead of their own input."""
    plan = below
    for node in reversed(nodes):
        field = next(f.name for f in fields(node) if getattr(node, f.name) in node.children)
        plan = replace(node, **{field: plan})
    return plan


def _has_trigger(query: Query, convention: Convention) -> bool:
    try:
        completion_rule(query, convention)
    except PlanError:
        return False
    return True


def _derived_name(below: Plan) -> str:
    return {Join: "join", Union: "union", Aggregate: "aggregate", OverWindow: "over",
            TopN: "top_n", MatchRecognize: "match", SessionTVF: "session",
            CountTVF: "count_window"}.get(type(below), "derived")


def _time_under(window: Derivation) -> Derivation | None:
    """The derivation of the time column a window column was computed from (its watermark is
    the one its window closes by); for the least of several window columns (a window join's),
    the least of their time columns (the window maps are non-decreasing, so the least
    window end is the window end of the least time). None if it is not such a column."""
    at = next((i for i, s in enumerate(window.steps) if s.kind in ("window_start", "window_end")),
              None)
    if at is not None:
        return Derivation(window.source, window.source, "event_time", window.steps[:at], None,
                          window.parts)
    if window.steps or not window.parts:
        return None
    times = [_time_under(p) for p in window.parts]
    if any(t is None for t in times):
        return None
    # in one order, so that both sides' window columns of a join have one clock
    distinct = tuple(sorted(dict.fromkeys(t for t in times if t is not None), key=repr))
    if len(distinct) == 1:
        return distinct[0]
    return Derivation(window.source, window.source, "event_time", (), None, distinct)


def _window_steps(window: Derivation) -> tuple[Step, ...]:
    """The steps from a window column's time column to it: its window step and after."""
    at = next((i for i, s in enumerate(window.steps) if s.kind in ("window_start", "window_end")),
              None)
    if at is not None:
        return window.steps[at:]
    return _window_steps(window.parts[0])


def _window_clock_source(name: str, below: Plan, clock: Derivation) -> DerivedSource | None:
    """``below``'s output as a source whose watermark is ``clock``'s (a window's time column):
    its window columns of that time column carry their windows' watermarks again."""
    key = f"{name}.{clock.source}"
    made: list[Derivation | None] = []
    for column, d in zip(below.schema, derive(below).columns, strict=True):
        if d is not None and d.role in WINDOW_ROLES and d.window is not None and \
                _time_under(d) == clock:
            made.append(Derivation(column.name, key, d.role, _window_steps(d), d.window))
        else:
            made.append(None)
    carrying = [c.name for c, d in zip(below.schema, made, strict=True) if d is not None]
    if not carrying:
        return None
    return DerivedSource(name, below.schema, WatermarkDecl(carrying[0], 0), derivations=tuple(made))


def operator_input(top: Plan, query: Query, convention: Convention) -> OperatorInput:
    """The operator ``top`` of ``query`` read over its input (:class:`OperatorInput`). Over a
    derived source, the watermark column is the first, in this order, with which the
    operator has a trigger under EOWC: the column its window TVF reads, a ``window_end``,
    the other carrying columns, then the time column under the input's window columns."""
    nodes, below = operator_nodes(top) if is_emitting(top) else stateless_nodes(top)
    if isinstance(below, Scan):
        local = Query(top, query.emit_on_window_close, query.name, (below.source,))
        return OperatorInput(top, nodes, below, local, below.source, None)
    made = _over_derived(top, nodes, below, query, convention)
    if made is not None:
        return made
    # the steps under its lowest window TVF (computing its time column) may run apart, so
    # that the TVF reads a derived source's watermark column directly
    tvfs = [i for i, n in enumerate(nodes) if isinstance(n, WindowTVF | SessionTVF | CountTVF)]
    if tvfs and tvfs[-1] < len(nodes) - 1:
        cut = tvfs[-1] + 1
        made = _over_derived(top, nodes[:cut], nodes[cut], query, convention)
        if made is not None:
            return made
    return _over_derived(top, nodes, below, query, convention, any_trigger=False)


def _canonical(d: Derivation) -> Derivation:
    """``d`` without its column's name, the least of its parts in one order."""
    return replace(d, column="", parts=tuple(sorted((_canonical(p) for p in d.parts), key=repr)))


def _source_by(name: str, below: Plan, clock: Derivation) -> Source:
    """``below``'s output as a source whose watermark column is ``clock``'s column; each other
    column with the same watermark carries it too (a window join's ``L.window_end`` and
    ``R.window_end``, both the least of the two sides', so that ``COALESCE(L.window_end,
    R.window_end)`` keeps it)."""
    same = {c.name for c, d in zip(below.schema, derive(below).columns, strict=True)
            if d is not None and _canonical(d) == _canonical(clock)}
    declared = WatermarkDecl(clock.column, 0)
    if len(same) == 1:
        return Source(name, below.schema, declared)
    key = f"{name}.{clock.column}"
    return DerivedSource(name, below.schema, declared, derivations=tuple(
        Derivation(c.name, key) if c.name in same else None for c in below.schema))


def _over_derived(top: Plan, nodes: tuple[Plan, ...], below: Plan, query: Query,
                  convention: Convention, any_trigger: bool = True) -> OperatorInput | None:
    """``nodes`` over ``below`` read as a derived source, the first watermark column (the
    order of :func:`operator_input`) with which they have a trigger (None if none has one;
    without ``any_trigger``, the first column)."""
    name = _derived_name(below)
    carrying = list(derive(below).carrying)
    bottom = nodes[-1] if nodes else below
    wanted = bottom.time_column if isinstance(bottom, WindowTVF | SessionTVF | CountTVF) else None
    ordered = [d for d in carrying if d.column == wanted] + \
        [d for d in carrying if d.role == "window_end"] + carrying
    options: list[tuple[Source, Derivation | None]] = [
        (_source_by(name, below, d), d) for d in dict.fromkeys(ordered)]
    clocks = [_time_under(d) for d in carrying if d.role in WINDOW_ROLES and d.window is not None]
    for clock in dict.fromkeys(c for c in clocks if c is not None):
        source = _window_clock_source(name, below, clock)
        if source is not None:
            options.append((source, clock))
    if not options:
        options.append((Source(name, below.schema), None))
    options = [(replace(source, derived_from=below), watermark) for source, watermark in options]
    made = [OperatorInput(top, nodes, below,
                          Query(_rebuilt(nodes, Scan(source)), query.emit_on_window_close,
                                query.name, (source,)), source, watermark)
            for source, watermark in options]
    found = next((m for m in made if _has_trigger(m.query, convention)), None)
    return found if found is not None or any_trigger else made[0]


def stateless_nodes(top: Plan) -> tuple[tuple[Plan, ...], Plan]:
    """The stateless nodes from ``top`` down, and the node under them."""
    nodes = []
    node = top
    while isinstance(node, STATELESS):
        nodes.append(node)
        node = node.children[0]
    return tuple(nodes), node


def is_composed(plan: Plan) -> bool:
    """Whether ``plan`` has more than one stateful operator, or one with a join or a union
    under it: what the single-operator rules of :func:`completion_rule` do not cover."""
    emitting = [n for n in walk(plan) if isinstance(n, EMITTING)]
    if len(emitting) > 1:
        return True
    return any(isinstance(m, MULTI_INPUT) for n in emitting for m in walk(n))


def operator_inputs(query: Query, convention: Convention) -> list[OperatorInput]:
    """Every stateful operator of ``query`` over its input, inputs first; under EOWC, with the
    sort on top when nothing else emits at the top (a plain SELECT, or over a join or a
    union)."""
    found: list[OperatorInput] = []

    def visit(node: Plan, is_top: bool) -> None:
        if is_emitting(node) or (is_top and query.emit_on_window_close and not emits_under(node)):
            made = operator_input(node, query, convention)
            visit(made.below, False)
            found.append(made)
            return
        for child in node.children:
            visit(child, False)

    visit(query.plan, True)
    return found


def emits_under(node: Plan) -> bool:
    """An emitting operator under ``node`` through stateless nodes only (then no sort is
    needed on top)."""
    while isinstance(node, STATELESS):
        node = node.children[0]
    return is_emitting(node)


def output_over_input(query: Query, made: OperatorInput) -> Plan:
    """``query``'s plan with its top operator ``made`` (:func:`operator_inputs`' last) read
    over its own input's source: the same output columns, whose window and time columns now
    derive from that source's watermark column."""
    chain: list[Plan] = []
    node = query.plan
    while node is not made.top:
        chain.append(node)
        node = node.children[0]
    return _rebuilt(tuple(chain), made.query.plan)
