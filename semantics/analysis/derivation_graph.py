"""A query plan as a watermark-derivation graph (networkx), and what it decides: whether the
query is valid under EMIT ON WINDOW CLOSE, the trigger of each stateful operator, and which
state a watermark bounds.

The graph has two kinds of node: *operators* (``op0`` is the root; ``kind="operator"``) with
``feeds`` edges from input to consumer, and their output *columns* (``op0.window_end``;
``kind="column"``) with ``derives`` edges from each input column an output column is computed
from. A column node's ``derivation`` is its
:class:`~eowc.semantics.analysis.watermark_derivation.Derivation` (None
when it carries no watermark); columns that derive from one source column share its
``group``. An EOWC query adds the operator that emits: an ``EOWC Sort`` (SortBuffer) on top
of a plain SELECT; the GROUP BY itself for an aggregation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx

from eowc.semantics.analysis.completion import completion_rule, watermark_columns
from eowc.semantics.analysis.operator_inputs import (  # EMITTING: operators that emit under EOWC
    EMITTING,
    MULTI_INPUT,
    OperatorInput,
    is_composed,
    is_emitting,
    operator_inputs,
)
from eowc.semantics.analysis.watermark_derivation import (
    Derivation,
    Lost,
    derive,
    duration_text,
    expression_in_reading,
    join_time_bounds,
    window_text,
)
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Expr, referenced_columns, sql_of
from eowc.semantics.ir.plan import (
    DEFAULT_FRAME,
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
    TopN,
    Union,
    WindowTVF,
    walk,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import Convention


@dataclass(frozen=True)
class StateBound:
    """An operator's state: ``none`` (stateless), ``bounded`` (``cleaned_when`` says when a
    watermark removes it) or ``unbounded`` (``cleaned_when`` says why nothing does)."""

    kind: str
    cleaned_when: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind == "none" else f"{self.kind}: {self.cleaned_when}"


@dataclass(frozen=True)
class OperatorReport:
    """One operator: what it is, the watermark columns of its output, the columns that lost
    one here, its trigger condition in words (stateful operators under EOWC) and its state."""

    id: str
    operator: str
    detail: str
    carries: tuple[Derivation, ...]
    lost: tuple[Lost, ...]
    trigger: str | None
    state: StateBound


@dataclass(frozen=True)
class Analysis:
    """The watermark analysis of a query under one convention; ``error`` (None when valid)
    says why it cannot run under EMIT ON WINDOW CLOSE and what to change."""

    query: Query
    convention: Convention
    operators: tuple[OperatorReport, ...]
    error: str | None

    @property
    def valid(self) -> bool:
        return self.error is None

    def graph(self) -> nx.DiGraph:
        return watermark_graph(self.query)


def count_window_text(plan: CountTVF) -> str:
    """``COUNT_TUMBLE(3 rows) PARTITION BY k ON ts``, ``COUNT_HOP(3 rows, slide 1 row) ...``."""
    keys = f" PARTITION BY {', '.join(plan.partition_by)}" if plan.partition_by else ""
    rows = f"{plan.size} row{'s' if plan.size != 1 else ''}"
    if plan.slide != plan.size:
        rows += f", slide {plan.slide} row{'s' if plan.slide != 1 else ''}"
    return f"{plan.kind}({rows}){keys} ON {plan.time_column}"


def describe(plan: Plan) -> tuple[str, str]:
    """An operator's name and its arguments in SQL words."""
    if isinstance(plan, Scan):
        wm = plan.source.watermark
        decl = f", WATERMARK FOR {wm.column} AS {wm.column} - {duration_text(wm.delay)}" if wm else ""
        computed = "".join(f", {name} AS {sql_of(e)}" for name, e in plan.source.computed)
        return "Scan", f"{plan.source.name}{computed}{decl}"
    if isinstance(plan, Filter):
        return "Filter", sql_of(plan.predicate)
    if isinstance(plan, Project | ProjectSet):
        return type(plan).__name__, ", ".join(name if sql_of(e) == name else f"{sql_of(e)} AS {name}"
                                              for name, e in plan.items)
    if isinstance(plan, WindowTVF):
        return plan.spec.kind.value, f"{window_text(plan.spec)} ON {plan.time_column}"
    if isinstance(plan, SessionTVF):
        keys = f" PARTITION BY {', '.join(plan.partition_by)}" if plan.partition_by else ""
        return "SESSION", f"SESSION(gap {duration_text(plan.gap)}){keys} ON {plan.time_column}"
    if isinstance(plan, CountTVF):
        return plan.kind, count_window_text(plan)
    if isinstance(plan, Aggregate):
        calls = ", ".join(c.sql() for c in plan.calls)
        return "GroupAgg", f"GROUP BY {', '.join(n for n, _ in plan.group_by) or '()'}: {calls}"
    if isinstance(plan, AsofJoin):
        return "AsofJoin", (f"{plan.left_alias} {plan.name} {plan.right_alias} ON "
                            f"{sql_of(plan.condition)}")
    if isinstance(plan, Join):
        kind = "" if plan.kind == "inner" else f"{plan.kind.upper()} "
        return (join_kind(plan),
                f"{plan.left_alias} {kind}JOIN {plan.right_alias} ON {sql_of(plan.condition)}")
    if isinstance(plan, Union):
        return "Union", f"UNION ALL of {len(plan.inputs)} inputs"
    if isinstance(plan, MatchRecognize):
        keys = f"PARTITION BY {', '.join(plan.partition_by)} " if plan.partition_by else ""
        order = ", ".join(c + (" DESC" if d else "") for c, d in plan.order_by)
        skip = f"AFTER MATCH SKIP {plan.skip.upper()}"
        return "MatchRecognize", f"{keys}ORDER BY {order} PATTERN ({plan.pattern_sql()}) {skip}"
    if isinstance(plan, OverWindow | TopN):
        over = _over_text(plan.partition_by, plan.order_by)
        if isinstance(plan, TopN):
            return "TopN", f"{plan.function.upper()}() OVER ({over}) <= {plan.limit}"
        calls = ", ".join(f"{c.function}({', '.join(sql_of(a) for a in c.args)})"
                          f"{'' if c.frame == DEFAULT_FRAME else ' [' + c.frame.sql() + ']'} "
                          f"AS {c.name}"
                          for c in plan.calls)
        return "OverWindow", f"{calls} OVER ({over})"
    if isinstance(plan, GapFill):
        args = [plan.time_column, duration_text(plan.interval),
                *(f"{s.upper()}({c})" for c, s in plan.fills)]
        keys = [f"PARTITION_BY({', '.join(plan.partition_by)})"] if plan.partition_by else []
        return "GapFill", f"GAP_FILL({', '.join(args + keys)})"
    return type(plan).__name__, ""


def _over_text(partition: tuple[Expr, ...], order: tuple[tuple[Expr, bool], ...]) -> str:
    parts = [f"PARTITION BY {', '.join(sql_of(e) for e in partition)}"] if partition else []
    parts.append("ORDER BY " + ", ".join(sql_of(e) + (" DESC" if d else "") for e, d in order))
    return " ".join(parts)


def operators(plan: Plan) -> list[tuple[str, Plan, tuple[str, ...]]]:
    """The plan's operators root first, each with its id and its inputs' ids."""
    found: list[tuple[str, Plan, tuple[str, ...]]] = []

    def visit(node: Plan) -> str:
        node_id, at = f"op{len(found)}", len(found)
        found.append((node_id, node, ()))
        found[at] = (node_id, node, tuple(visit(child) for child in node.children))
        return node_id
    visit(plan)
    return found


def watermark_graph(query: Query) -> nx.DiGraph:
    """The operators and their output columns, with ``feeds`` and ``derives`` edges."""
    graph = nx.DiGraph()
    ops = operators(query.plan)
    for node_id, node, _ in ops:
        name, detail = describe(node)
        graph.add_node(node_id, kind="operator", operator=name, detail=detail)
        derived = derive(node)
        for column, derivation in zip(node.schema, derived.columns, strict=True):
            graph.add_node(f"{node_id}.{column.name}", kind="column", operator=node_id,
                           column=column.name, derivation=derivation,
                           group=derivation.source if derivation else None)
    for node_id, node, inputs in ops:
        for child_id in inputs:
            graph.add_edge(child_id, node_id, kind="feeds")
        for target, sources in _inputs_of_columns(node).items():
            derivation = graph.nodes[f"{node_id}.{target}"]["derivation"]
            for child, source in sources:
                graph.add_edge(f"{inputs[child]}.{source}", f"{node_id}.{target}", kind="derives",
                               map=derivation.expression() if derivation else None)
    return graph


def _inputs_of_columns(node: Plan) -> dict[str, set[tuple[int, str]]]:
    """For each output column of ``node``, the input columns it is computed from, as
    (input position, column name)."""
    if isinstance(node, Scan):
        return {}
    if isinstance(node, Union):
        return {c.name: {(i, child.schema[k].name) for i, child in enumerate(node.inputs)}
                for k, c in enumerate(node.schema)}
    if isinstance(node, Join):  # a bounded column's watermark derives from the other side too
        inputs = {out: (0, c.name) for out, c in zip(node.sides[0], node.left.schema, strict=True)}
        inputs |= {out: (1, c.name) for out, c in zip(node.sides[1], node.right.schema, strict=True)}
        made = {out: {source} for out, source in inputs.items()}
        for bound in join_time_bounds(node):
            if bound.lower is not None:
                made[bound.left].add(inputs[bound.right])
            if bound.upper is not None:
                made[bound.right].add(inputs[bound.left])
        output = {c.name for c in node.schema}  # SEMI and ANTI: the left columns only
        return {name: sources for name, sources in made.items() if name in output}
    inputs = {c.name for c in node.children[0].schema}
    same = {name: {(0, name)} for name in inputs}
    if isinstance(node, Filter):
        return same
    if isinstance(node, WindowTVF | SessionTVF):
        return same | {w: {(0, node.time_column)} for w in ("window_start", "window_end",
                                                              "window_time")}
    if isinstance(node, CountTVF):  # the ordinal counts rows of the key, in time order
        return same | {w: {(0, node.time_column)} for w in ("window_start", "window_end")} | \
            {"window_ordinal": {(0, n) for n in (node.time_column, *node.partition_by)}}
    if isinstance(node, OverWindow):
        return same | {c.name: {(0, n) for a in c.args for n in referenced_columns(a) & inputs}
                       for c in node.calls}
    if isinstance(node, MatchRecognize):
        return {**{k: {(0, k)} for k in node.partition_by},
                **{name: {(0, n) for n in _pattern_columns(e) & inputs}
                   for name, e in node.measures}}
    if isinstance(node, TopN):
        ranked = {n for e, _ in node.order_by for n in referenced_columns(e)} | \
            {n for e in node.partition_by for n in referenced_columns(e)}
        return same | {node.rank_column: {(0, n) for n in ranked & inputs}}
    items = node.group_by if isinstance(node, Aggregate) else node.items  # type: ignore[attr-defined]
    made = {name: {(0, n) for n in referenced_columns(e) & inputs} for name, e in items}
    if isinstance(node, Aggregate):
        for call in node.calls:
            made[call.name] = {(0, n) for n in referenced_columns(call.argument) & inputs} \
                if call.argument else set()
    return made


def groups(graph: nx.DiGraph) -> dict[str, list[str]]:
    """The watermark groups: per source column, every column node derived from it."""
    found: dict[str, list[str]] = {}
    for node, data in graph.nodes(data=True):
        if data["kind"] == "column" and data["group"]:
            found.setdefault(data["group"], []).append(node)
    return found




def analyze(query: Query, convention: Convention = Convention.RISINGWAVE) -> Analysis:
    """Whether ``query`` is valid under EOWC, each operator's trigger and state bound."""
    general = any(isinstance(n, MULTI_INPUT) for n in walk(query.plan)) or is_composed(query.plan)
    rule_text: str | None = None
    if is_composed(query.plan):
        error = _composed_error(query, convention)
        rule_text = None if error else "emitted by the general rules"
    elif general:
        error = _general_error(query)
        rule_text = None if error else "emitted by the general rules"
    else:
        try:
            rule_text, error = completion_rule(query, convention).describe, None
        except PlanError as failure:
            error = str(failure)
    asof = next((n for n in walk(query.plan) if isinstance(n, AsofJoin)), None)
    if asof is not None:  # valid as written when it emits on update; never under EOWC
        error, rule_text = asof.not_under_eowc, None
    reports = []
    inputs = {id(m.top): m for m in operator_inputs(query, convention)} \
        if rule_text is not None and is_composed(query.plan) else {}
    for node_id, node, _ in operators(query.plan):
        name, detail = describe(node)
        derived = derive(node)
        trigger, state = None, StateBound("none")
        if isinstance(node, Aggregate) and id(node) in inputs:
            trigger, state = _aggregate_over_input(inputs[id(node)], convention)
        elif isinstance(node, Aggregate):
            state = _aggregate_state(node, convention)
            if rule_text is not None:
                trigger = f"{_aggregate_rule(node, convention) if general else rule_text}: " \
                          f"{condition(node, convention)}"
        elif isinstance(node, Join):
            trigger, state = _join_trigger(node, convention), _join_state(node, convention)
        elif isinstance(node, MatchRecognize):
            trigger, state = _pattern_trigger(node, convention, rule_text)
        elif isinstance(node, OverWindow | TopN):
            trigger, state = _read_over_input(inputs.get(id(node)), convention,
                                              *_ranked_trigger(node, convention))
        reports.append(OperatorReport(node_id, name, detail, derived.carrying, derived.lost,
                                      trigger, state))
    if query.emit_on_window_close and not query.at_once and \
            not any(isinstance(n, EMITTING) for n in walk(query.plan)):
        name = _sort_column(query.plan) or "?"
        rule = rule_text if not general else \
            f"a row is emitted when its {name} is complete (time_is_complete under " \
            f"{convention.value})"
        reports.insert(0, OperatorReport(
            "sort", "EOWC Sort", f"ORDER BY {name} (SortBuffer)", (), (),
            f"{rule}: {condition(query.plan, convention)}" if rule_text else None,
            StateBound("bounded", f"a row waits until its {name} is complete, then is emitted "
                                  f"and dropped: at most the rows within the watermark delay")
            if rule_text else StateBound("unbounded", "no watermark column to release rows by")))
    if error is not None:
        error = _with_lost(error, reports)
    return Analysis(query, convention, tuple(reports), error)


def _sort_column(plan: Plan) -> str | None:
    """The column an EOWC sort of ``plan``'s output emits by: its event-time column, else
    (after a join or a union) its first column that carries a watermark."""
    columns = watermark_columns(plan)
    if columns.event_time is not None:
        return plan.schema[columns.event_time].name
    carrying = derive(plan).carrying
    return carrying[0].column if carrying else None


EOWC_ERROR = "The query cannot be executed in Emit-On-Window-Close mode: "


def _composed_error(query: Query, convention: Convention) -> str | None:
    """Why a plan of several stateful operators (or one over a join or a union) is not valid
    under EOWC: a source without a watermark, a join without a time bound, or an operator
    without a trigger over its input (:mod:`eowc.semantics.analysis.operator_inputs`: the
    trigger of :func:`completion_rule` over the watermark its input derives). None when valid."""
    if not query.emit_on_window_close:
        return None
    error = _source_or_join_error(query)
    if error is not None:
        return error
    ids = {id(node): node_id for node_id, node, _ in operators(query.plan)}
    for made in operator_inputs(query, convention):
        try:
            completion_rule(made.query, convention)
        except PlanError as failure:
            name, _ = describe(made.top) if is_emitting(made.top) else ("EOWC Sort", "")
            reason = str(failure).removeprefix(EOWC_ERROR)
            return (f"{EOWC_ERROR}the {name} ({ids[id(made.top)]}) has no trigger over its "
                    f"input ({describe(made.below)[0]}): {reason}")
    return None


def _source_or_join_error(query: Query) -> str | None:
    """A source of the query without a watermark, or a join without a time bound."""
    missing = [s.name for s in query.sources if s.watermark is None and
               any(isinstance(n, Scan) and n.source == s for n in walk(query.plan))]
    missing += [n.source.name for n in walk(query.plan) if isinstance(n, Scan)
                and n.source.watermark is None]
    if missing:
        return (f"{EOWC_ERROR}source {missing[0]} declares no watermark (add WATERMARK FOR "
                f"<column> AS <column> - INTERVAL ... to its CREATE statement)")
    for node_id, node, _ in operators(query.plan):
        if isinstance(node, Join) and not any(b.is_interval for b in join_time_bounds(node)):
            return (f"{EOWC_ERROR}the join ({node_id}) {sql_of(node.condition)} has no time "
                    f"bound between its two sides' watermark columns, so its state grows "
                    f"without bound and no output column carries a watermark. Add "
                    f"l.t BETWEEN r.t - INTERVAL ... AND r.t + INTERVAL ... (an interval join), "
                    f"or join two window TVFs on window_start and window_end (a window join)")
    return None


def _general_error(query: Query) -> str | None:
    """Why a plan with joins, unions, OVER windows or TopN is not valid under EOWC: each
    operator that must wait for a watermark has one, and what emits has a column to emit by.
    None when it is valid (or is not an EOWC query)."""
    if not query.emit_on_window_close:
        return None
    error = _source_or_join_error(query)
    if error is not None:
        return error
    for node_id, node, _ in operators(query.plan):
        if isinstance(node, OverWindow) and _over_order(node) is None:
            return (f"{EOWC_ERROR}the OVER window ({node_id}) must ORDER BY one ascending "
                    f"column that carries a watermark; {_over_text((), node.order_by)} does not")
        if isinstance(node, TopN) and not _partition_carriers(node) and not _dedup_order(node):
            return (f"{EOWC_ERROR}the TopN ({node_id}) must PARTITION BY a column that "
                    f"carries a watermark (window_start, window_end of a window TVF) or ORDER BY "
                    f"one ascending watermark column (deduplication)")
    aggregates = [n for n in walk(query.plan) if isinstance(n, Aggregate)]
    if aggregates:
        columns = watermark_columns(aggregates[0])
        if columns.has_window_column or columns.event_time is not None:
            return None
        keys = ", ".join(n for n, _ in aggregates[0].group_by) or "(none)"
        return (f"{EOWC_ERROR}GROUP BY {keys} has no window column or event-time column that "
                f"carries a watermark")
    if _sort_column(query.plan) is None and not query.at_once:
        return (f"{EOWC_ERROR}its output has no column that carries a watermark; select one "
                f"so that rows can be emitted in watermark order")
    return None


def _aggregate_over_input(made: OperatorInput, convention: Convention
                          ) -> tuple[str, StateBound]:
    """The trigger and state bound of a GROUP BY of a composed plan, as the operator binds
    them: the rule of its own query over its input (a source, or a derived source whose
    watermark ``W[column]`` derives from the source watermarks ``W``)."""
    local = made.query.plan  # the GROUP BY over its input, read as a source
    assert isinstance(local, Aggregate)
    trigger = f"{completion_rule(made.query, convention).describe}: {condition(local, convention)}"
    return _read_over_input(made, convention, trigger, _aggregate_state(local, convention))


def _read_over_input(made: OperatorInput | None, convention: Convention, trigger: str | None,
                     state: StateBound) -> tuple[str | None, StateBound]:
    """An operator's trigger and state bound, written with ``W`` for the watermark of its
    input, in the source watermarks: over a derived input (a join, a union, another
    operator), ``W[input.column]`` and what it derives from in the convention's reading
    (:func:`expression_in_reading`)."""
    if made is None or not made.is_derived or made.watermark is None \
            or made.source.watermark is None or made.watermark.expression() == "W":
        return trigger, state
    named = f"W[{made.source.name}.{made.source.watermark.column}]"
    where = f", where {named} = {expression_in_reading(made.watermark, convention)}"

    def read(text: str) -> str:
        return re.sub(r"\bW\b", named, text) + where if re.search(r"\bW\b", text) else text
    return (None if trigger is None else read(trigger)), StateBound(state.kind, read(state.cleaned_when))


def _aggregate_rule(node: Aggregate, convention: Convention) -> str:
    if watermark_columns(node).has_window_column:
        return f"a group is emitted when its window closes (window_closes under {convention.value})"
    return f"a group is emitted when its key is complete (group_is_complete under {convention.value})"


def _join_trigger(node: Join, convention: Convention) -> str:
    """When a join emits: each joined row at once (append-only, since a row is joined only
    with rows that arrived before it); an unmatched outer row once no match can come."""
    if isinstance(node, AsofJoin):
        return ("emits on update only: a left row's match is revised (retracted, inserted) "
                "whenever a closer right row of its key arrives")
    text, below = "a joined row is emitted as soon as the later of its two rows arrives", _below(convention)
    bound = next((b for b in join_time_bounds(node) if b.is_interval), None)
    if node.kind == "semi":
        return f"a {node.left_alias} row is emitted once, when its first match arrives"
    if node.kind == "inner" or bound is None:
        return text
    if node.kind == "anti":
        return (f"a {node.left_alias} row without a match once no {node.right_alias} row can "
                f"match it: {bound.left} {below} "
                f"{_plus(_column_watermark(node, bound.right), bound.lower)}")
    outer = []
    if node.kind in ("left", "full"):
        outer.append(f"an unmatched {node.left_alias} row once no {node.right_alias} row can "
                     f"match it: {bound.left} {below} "
                     f"{_plus(_column_watermark(node, bound.right), bound.lower)}")
    if node.kind in ("right", "full"):
        outer.append(f"an unmatched {node.right_alias} row once no {node.left_alias} row can "
                     f"match it: {bound.right} {below} "
                     f"{_plus(_column_watermark(node, bound.left), -(bound.upper or 0))}")
    return f"{text}; with NULLs, " + " and ".join(outer)


def join_kind(node: Join) -> str:
    """``WindowJoin`` (equal window columns), ``IntervalJoin`` (a time bound of both signs
    between the sides), or ``Join`` (no time bound: its state grows without bound)."""
    bounds = [b for b in join_time_bounds(node) if b.is_interval]
    if not bounds:
        return "Join"
    roles = {d.role for d in derive(node).carrying}
    if all(b.lower == b.upper == 0 for b in bounds) and roles & {"window_start", "window_end"}:
        return "WindowJoin"
    return "IntervalJoin"


def _column_watermark(node: Join, column: str) -> str:
    """The watermark of a join input's column, in the join's output naming."""
    names = node.sides[0] + node.sides[1]
    derived = derive(node.left).columns + derive(node.right).columns
    found = derived[names.index(column)]
    return found.expression(named=True) if found else "W"


def _below(convention: Convention) -> str:
    """How a value is compared with a watermark that makes it complete: RisingWave keeps rows
    equal to the watermark (``<``), Spark and Flink drop them (``<=``)."""
    return convention.late_comparison


def _closing(end: str, convention: Convention) -> str:
    """The least watermark at which a window ending at ``end`` is closed: ``end`` less the
    convention's closing offset (Flink: ``end - 1 ms``)."""
    offset = convention.closing_offset
    return f"{end} - {offset // MICROS_PER_MILLI} ms" if offset else end


def _plus(text: str, amount: int | None) -> str:
    if not amount:
        return text
    return f"{text} {'-' if amount < 0 else '+'} {duration_text(abs(amount))}"


def _join_state(node: Join, convention: Convention) -> StateBound:
    if isinstance(node, AsofJoin):
        return StateBound("unbounded", "every row of both sides is kept: a closer right row "
                                       "may come for any left row")
    below = _below(convention)
    bound = next((b for b in join_time_bounds(node) if b.is_interval), None)
    if bound is None:
        return StateBound("unbounded", "every row is kept for a match that may come: no time "
                                       "bound between the two sides")
    assert bound.lower is not None and bound.upper is not None
    return StateBound("bounded", f"a {node.left_alias} row is dropped once no future "
                                 f"{node.right_alias} row can match it ({bound.left} {below} "
                                 f"{_plus(_column_watermark(node, bound.right), bound.lower)}), a "
                                 f"{node.right_alias} row once {bound.right} {below} "
                                 f"{_plus(_column_watermark(node, bound.left), -bound.upper)}")


def _over_order(node: OverWindow) -> Derivation | None:
    """The watermark of an OVER window's one ascending ORDER BY column, if it carries one."""
    order = node.order_by
    if len(order) != 1 or order[0][1]:
        return None
    expr = order[0][0]
    names = [c.name for c in node.input.schema]
    if not hasattr(expr, "name") or expr.name not in names:
        return None
    return derive(node.input).columns[names.index(expr.name)]


def _dedup_order(node: TopN) -> Derivation | None:
    """The watermark of a deduplication's one ascending ORDER BY column, if it carries one."""
    order = node.order_by
    if len(order) != 1 or order[0][1] or not hasattr(order[0][0], "name"):
        return None
    return next((d for d in derive(node).carrying if d.column == order[0][0].name), None)


def _partition_carriers(node: TopN) -> tuple[Derivation, ...]:
    names = {getattr(e, "name", None) for e in node.partition_by}
    return tuple(d for d in derive(node).carrying if d.column in names)


def _ranked_trigger(node: OverWindow | TopN, convention: Convention
                    ) -> tuple[str | None, StateBound]:
    strict = _below(convention)
    if isinstance(node, OverWindow):
        order = _over_order(node)
        if order is None:
            return None, StateBound("unbounded", "no watermark column orders the rows")
        frames = sorted({"the default frame" if c.frame == DEFAULT_FRAME else c.frame.sql()
                         for c in node.calls})
        return (f"a row is emitted once its {order.column} is complete and so is the end of its "
                f"frame ({'; '.join(frames)}): {order.column} {strict} W at the frame's end",
                StateBound("bounded", "a row is dropped once it has left every future frame"))
    carriers = _partition_carriers(node)
    dedup = _dedup_order(node)
    if watermark_columns(node).has_window_column and carriers:
        return (f"a window's top {node.limit} rows are emitted when it closes: "
                f"{condition(node, convention)}",
                StateBound("bounded", f"a window's {node.limit} rows are dropped when it closes"))
    if dedup is not None:
        return (f"a row is emitted once its {dedup.column} is complete and it is among the "
                f"first {node.limit} of its partition: {dedup.column} {strict} W",
                StateBound("unbounded", f"one entry per distinct partition key, kept to refuse "
                                        f"later rows (at most {node.limit} rows each)"))
    if carriers:
        return (f"a partition's top {node.limit} rows are emitted once its "
                f"{carriers[0].column} is complete",
                StateBound("bounded", "a partition is dropped once its key is complete"))
    return None, StateBound("unbounded", "one top-N list per partition, kept forever")


def condition(plan: Plan, convention: Convention) -> str:
    """The trigger of ``plan``'s output rows as a formula over its watermark columns and the
    source watermark ``W`` (and, for a window, the same through ``window_start``'s derived
    watermark, under the RisingWave and Spark rule ``end <= W``)."""
    columns = watermark_columns(plan)
    names = [c.name for c in plan.schema]
    strict = convention.late_comparison
    session = next((d for d in derive(plan).carrying if d.role == "session_end"
                    and d.column == "window_end"), None)
    if session is not None:
        return f"{_closing('window_end', convention)} <= W"
    if columns.has_window_column:
        end = names[columns.window_end] if columns.window_end is not None else "window_end"
        if convention.closing_offset:
            return f"{_closing(end, convention)} <= W"
        start = next((d for d in derive(plan).carrying if d.role == "window_start"), None)
        if start is None or columns.window is None or columns.window.kind.value == "CUMULATE":
            return f"{end} <= W"
        return f"{end} <= W, i.e. {start.column} < {start.expression()}"
    if columns.event_time is not None:
        return f"{names[columns.event_time]} {strict} W"
    carrying = derive(plan).carrying  # after a join or a union: the watermark of the column
    if not carrying:
        return "no watermark column"
    return f"{carrying[0].column} {strict} {carrying[0].expression()}"


def _aggregate_state(node: Aggregate, convention: Convention) -> StateBound:
    """What bounds a GROUP BY's state: the window or watermark column of its key."""
    closes = f"{_closing('end', convention)} <= W"
    if any(d.role == "session_end" for d in derive(node).carrying):
        return StateBound("bounded", f"a session's rows and groups are dropped when it closes "
                                     f"({closes}, end = last + gap)")
    columns = watermark_columns(node)
    if columns.has_window_column:
        assert columns.window is not None
        return StateBound("bounded", f"a group is dropped when its {window_text(columns.window)} "
                                     f"window closes ({closes})")
    if columns.event_time is not None:
        name = node.schema[columns.event_time].name
        return StateBound("bounded", f"a group is dropped once its {name} is complete")
    keys = ", ".join(n for n, _ in node.group_by) or "()"
    carried = derive(node).carrying
    if carried:
        return StateBound("bounded", f"groups whose {carried[0].column} is below its watermark "
                                     f"{carried[0].expression()} can be cleaned (the executors "
                                     f"trigger only on window columns and the watermark column)")
    return StateBound("unbounded", f"one group per distinct ({keys}), kept forever: no "
                                   f"grouping key carries a watermark")


def _with_lost(error: str, reports: list[OperatorReport]) -> str:
    """``error`` with where the watermark was lost on the way, and which grouping keys carry
    a watermark the GROUP BY trigger cannot use."""
    lost = [f"{r.operator} ({r.id}) computes {x.column} = {x.expression}: {x.reason}"
            for r in reports for x in r.lost]
    unused = [f"{d.column} carries the watermark {d.expression()}, but an EOWC GROUP BY "
              f"triggers only on a window column or the watermark column itself: group by "
              f"window_start of a TUMBLE instead of a truncation" for r in reports
              if r.operator == "GroupAgg" for d in r.carries if d.role == "derived"]
    return error + (". The watermark was lost at: " + "; ".join(lost) if lost else "") \
        + (". " + "; ".join(unused) if unused else "")


def _pattern_columns(expr: Expr) -> set[str]:
    """The input columns a MATCH_RECOGNIZE measure reads."""
    column = getattr(expr, "column", None)
    if type(expr).__name__ in ("PatternRef", "MatchAggregate"):
        return {column} if column else set()
    return {n for value in vars(expr).values()
            for child in (value if isinstance(value, tuple) else (value,))
            if isinstance(child, Expr) for n in _pattern_columns(child)}


def _pattern_trigger(node: MatchRecognize, convention: Convention, rule_text: str | None
                     ) -> tuple[str | None, StateBound]:
    """MATCH_RECOGNIZE: a match is emitted when every row its search read is complete
    (:func:`eowc.semantics.rules.triggers.match_is_final`); a partition keeps its undecided rows."""
    if rule_text is None:
        return None, StateBound("unbounded", "no watermark column orders the rows")
    order = node.order_by[0][0]
    return (f"{rule_text}: {order} {_below(convention)} W for the last row read",
            StateBound("unbounded", "a partition keeps its rows from its first undecided "
                                    "start on (and the rows PREV reads before it); a greedy "
                                    "quantifier that keeps matching keeps them all, until the "
                                    "match ends or the input does"))
