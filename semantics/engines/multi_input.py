"""A query with joins or unions cut in two, for the oracles that evaluate such a query as two
relations (the declarative specification, the DuckDB oracle, Spark's own operators): a
**lower** part of unions, joins, the stateless nodes below them and subqueries of one source,
and an **upper** part that reads the lower part's output as a *derived source*, whose
watermark column is one of the lower part's output columns that carries a watermark
(:mod:`eowc.semantics.analysis.watermark_derivation`; the minimum over a union's inputs,
``min(W_l, W_r + lower)`` for a join's bounded column, ...).

The interpreter does not cut plans here: it runs every operator, joins included, in one
dataflow (:mod:`eowc.semantics.engines.dataflow`, :mod:`eowc.semantics.operators.join`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from eowc.semantics.analysis.completion import completion_rule
from eowc.semantics.analysis.watermark_derivation import Derivation, derive
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.plan import (
    Filter,
    Join,
    Plan,
    Project,
    ProjectSet,
    Query,
    Scan,
    SessionTVF,
    Source,
    Union,
    WatermarkDecl,
    WindowTVF,
    walk,
)
from eowc.semantics.rules.triggers import Convention


@dataclass(frozen=True)
class MultiInputSplit:
    """``query`` cut in two: ``lower`` reads the sources, ``upper`` reads ``derived``, whose
    watermark column carries ``watermark`` (a derivation from the source watermarks)."""

    query: Query
    lower: Plan
    upper: Query
    derived: Source
    watermark: Derivation | None


def has_several_inputs(plan: Plan) -> bool:
    return any(len(n.children) > 1 for n in walk(plan))


def split_multi_input(query: Query, convention: Convention) -> MultiInputSplit | None:
    """The split of a query with joins or unions (None without). The derived source's
    watermark column is the first of the lower part's watermark-carrying columns (a
    ``window_end`` first, then in output order) with which the upper query has a trigger
    under EOWC (:func:`completion_rule`); a column the upper part's window TVF reads comes
    first."""
    chain: list[Plan] = []
    node = query.plan
    while len(node.children) == 1:
        chain.append(node)
        node = node.children[0]
    if not node.children:
        return None
    lower = node
    _check_lower(lower)
    derived = derive(lower)
    names = [c.name for c in lower.schema]
    carrying = [d for d in derived.columns if d is not None]
    wanted = _read_by_window(chain)
    ordered = [d for d in carrying if d.column == wanted] + \
        [d for d in carrying if d.role == "window_end"] + carrying
    candidates: list[Derivation | None] = list(dict.fromkeys(ordered)) or [None]
    splits = [_split(query, chain, lower, names, d) for d in candidates]
    return next((s for s in splits if _has_trigger(s.upper, convention)), splits[0])


def _has_trigger(upper: Query, convention: Convention) -> bool:
    try:
        completion_rule(upper, convention)
    except PlanError:
        return False
    return True


#: Operators the lower part evaluates row by row; anything else below a join or a union runs
#: as a subquery of one source.
STATELESS = (Scan, Filter, Project, ProjectSet, WindowTVF)


def is_subquery(plan: Plan) -> bool:
    """A part of the lower part that reads one source through a stateful operator (a window
    aggregate, an OVER window, ...): it runs as an EOWC query of its own."""
    return not has_several_inputs(plan) and not all(isinstance(n, STATELESS) for n in walk(plan))


def _check_lower(plan: Plan) -> None:
    """A PlanError for a stateful operator with a join or a union below it, inside the lower
    part (the interpreter runs joins of subqueries, not subqueries of joins)."""
    if is_subquery(plan) or isinstance(plan, Scan):
        return
    if not isinstance(plan, (*STATELESS, Join, Union)):
        raise PlanError(f"{type(plan).__name__} over a join or a union, below another join or "
                        f"union, is not executed by the interpreter")
    for child in plan.children:
        _check_lower(child)


def _read_by_window(chain: list[Plan]) -> str | None:
    bottom = chain[-1] if chain else None
    return bottom.time_column if isinstance(bottom, WindowTVF | SessionTVF) else None


def _split(query: Query, chain: list[Plan], lower: Plan, names: list[str],
           watermark: Derivation | None) -> MultiInputSplit:
    kind = "join" if isinstance(lower, Join) else "union"
    derived = Source(kind, lower.schema,
                     WatermarkDecl(watermark.column, 0) if watermark is not None else None)
    plan: Plan = Scan(derived)
    for node in reversed(chain):
        field = next(f.name for f in fields(node) if getattr(node, f.name) in node.children)
        plan = replace(node, **{field: plan})
    upper = Query(plan, query.emit_on_window_close, query.name, (derived,))
    return MultiInputSplit(query, lower, upper, derived, watermark)


def sources_of(plan: Plan) -> list[Source]:
    """The sources ``plan`` reads, each once, in plan order."""
    return list(dict.fromkeys(n.source for n in walk(plan) if isinstance(n, Scan)))
