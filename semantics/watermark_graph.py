"""A query plan as a watermark-derivation graph (networkx), and what it decides: whether the
query is valid under EMIT ON WINDOW CLOSE, the trigger of each stateful operator, and which
state a watermark bounds.

The graph has two kinds of node: *operators* (``op0`` is the root; ``kind="operator"``) with
``feeds`` edges from input to consumer, and their output *columns* (``op0.window_end``;
``kind="column"``) with ``derives`` edges from each input column an output column is computed
from. A column node's ``derivation`` is its :class:`~semantics.derivation.Derivation` (None
when it carries no watermark); columns that derive from one source column share its
``group``. An EOWC query adds the operator that emits: an ``EOWC Sort`` (SortBuffer) on top
of a plain SELECT; the GROUP BY itself for an aggregation.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from .derivation import Derivation, Lost, derive, duration_text, window_text
from .errors import PlanError
from .expr import referenced_columns, sql_of
from .plan import Aggregate, Filter, Plan, Project, Query, Scan, WindowTVF
from .triggers import Convention
from .watermarks import completion_rule, watermark_columns


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


def describe(plan: Plan) -> tuple[str, str]:
    """An operator's name and its arguments in SQL words."""
    if isinstance(plan, Scan):
        wm = plan.source.watermark
        decl = f", WATERMARK FOR {wm.column} AS {wm.column} - {duration_text(wm.delay)}" if wm else ""
        return "Scan", f"{plan.source.name}{decl}"
    if isinstance(plan, Filter):
        return "Filter", sql_of(plan.predicate)
    if isinstance(plan, Project):
        return "Project", ", ".join(name if sql_of(e) == name else f"{sql_of(e)} AS {name}"
                                    for name, e in plan.items)
    if isinstance(plan, WindowTVF):
        return plan.spec.kind.value, f"{window_text(plan.spec)} ON {plan.time_column}"
    if isinstance(plan, Aggregate):
        calls = ", ".join(f"{c.function}({sql_of(c.argument) if c.argument else '*'})"
                          for c in plan.calls)
        return "GroupAgg", f"GROUP BY {', '.join(n for n, _ in plan.group_by) or '()'}: {calls}"
    return type(plan).__name__, ""


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
        if not inputs:
            continue
        (child_id,) = inputs  # one input per operator until joins and unions
        graph.add_edge(child_id, node_id, kind="feeds")
        for target, sources in _inputs_of_columns(node).items():
            for source in sources:
                derivation = graph.nodes[f"{node_id}.{target}"]["derivation"]
                graph.add_edge(f"{child_id}.{source}", f"{node_id}.{target}", kind="derives",
                               map=derivation.expression() if derivation else None)
    return graph


def _inputs_of_columns(node: Plan) -> dict[str, set[str]]:
    """For each output column of ``node``, the input columns it is computed from."""
    inputs = {c.name for c in node.children[0].schema}
    if isinstance(node, Filter):
        return {name: {name} for name in inputs}
    if isinstance(node, WindowTVF):
        made = {name: {name} for name in inputs}
        return made | {w: {node.time_column} for w in ("window_start", "window_end", "window_time")}
    items = node.items if isinstance(node, Project) else node.group_by  # type: ignore[attr-defined]
    made = {name: referenced_columns(e) & inputs for name, e in items}
    if isinstance(node, Aggregate):
        for call in node.calls:
            made[call.name] = referenced_columns(call.argument) & inputs if call.argument else set()
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
    try:
        rule = completion_rule(query, convention)
        error = None
    except PlanError as failure:
        rule, error = None, str(failure)
    reports = []
    for node_id, node, _ in operators(query.plan):
        name, detail = describe(node)
        derived = derive(node)
        trigger, state = None, StateBound("none")
        if isinstance(node, Aggregate):
            state = _aggregate_state(node, convention)
            if rule is not None:
                trigger = f"{rule.describe}: {condition(node, convention)}"
        reports.append(OperatorReport(node_id, name, detail, derived.carrying, derived.lost,
                                      trigger, state))
    if query.emit_on_window_close and not any(isinstance(n, Aggregate) for _, n, _ in
                                              operators(query.plan)):
        columns = watermark_columns(query.plan)
        name = query.schema[columns.event_time].name if columns.event_time is not None else "?"
        reports.insert(0, OperatorReport(
            "sort", "EOWC Sort", f"ORDER BY {name} (SortBuffer)", (), (),
            f"{rule.describe}: {condition(query.plan, convention)}" if rule else None,
            StateBound("bounded", f"a row waits until its {name} is complete, then is emitted "
                                  f"and dropped: at most the rows within the watermark delay")
            if rule else StateBound("unbounded", "no watermark column to release rows by")))
    if error is not None:
        error = _with_lost(error, reports)
    return Analysis(query, convention, tuple(reports), error)


def condition(plan: Plan, convention: Convention) -> str:
    """The trigger of ``plan``'s output rows as a formula over its watermark columns and the
    source watermark ``W`` (and, for a window, the same through ``window_start``'s derived
    watermark, under the RisingWave and Spark rule ``end <= W``)."""
    columns = watermark_columns(plan)
    names = [c.name for c in plan.schema]
    strict = "<" if convention is Convention.RISINGWAVE else "<="
    if columns.has_window_column:
        end = names[columns.window_end] if columns.window_end is not None else "window_end"
        if convention is Convention.FLINK:
            return f"{end} - 1ms <= W"
        start = next((d for d in derive(plan).carrying if d.role == "window_start"), None)
        if start is None or columns.window is None or columns.window.kind.value == "CUMULATE":
            return f"{end} <= W"
        return f"{end} <= W, i.e. {start.column} < {start.expression()}"
    column = names[columns.event_time] if columns.event_time is not None else "?"
    return f"{column} {strict} W"


def _aggregate_state(node: Aggregate, convention: Convention) -> StateBound:
    """What bounds a GROUP BY's state: the window or watermark column of its key."""
    columns = watermark_columns(node)
    if columns.has_window_column:
        assert columns.window is not None
        closes = "end - 1 ms <= W" if convention is Convention.FLINK else "end <= W"
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
