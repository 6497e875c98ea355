"""Joins and UNION ALL in the reference interpreter: plans that read several sources.

A query with joins or unions is split at its lowest node with several inputs that has only
single-input nodes above it (:func:`split_multi_input`):

* the **lower** part (unions, joins and the stateless nodes below them) is evaluated here, one
  epoch at a time, each source's rows judged late against that source's own watermark
  (Definition 1);
* its output is a *derived source*: a relation whose watermark column is one of the lower
  part's output columns that carries a watermark (:mod:`eowc.semantics.analysis.watermark_derivation`),
  its watermark
  after each epoch derived from the source watermarks (the minimum over a union's inputs,
  ``min(W_l, W_r + lower)`` for a join's bounded column, ...);
* the **upper** part (an EOWC sort, a window aggregate, an OVER window, ...) runs on that
  derived source exactly as on a real one (:mod:`eowc.semantics.engines.interpreter`).

A join in ``Q'`` (the altered operator of Definition 4) emits every joined row as soon as the
later of its two rows is in INPUT, and an unmatched row of an outer side (NULL-padded)
exactly when no row that can still arrive on the other side can match it
(:func:`eowc.semantics.rules.triggers.unmatched_row_is_final`). Its state keeps a row until then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from eowc.semantics.analysis.completion import completion_rule
from eowc.semantics.analysis.watermark_derivation import (
    Derivation,
    derive,
    watermark_in_reading,
)
from eowc.semantics.engines.inputs import LateRow, closed_marks, input_epochs
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import (
    Filter,
    Join,
    Plan,
    Project,
    Query,
    Scan,
    SessionTVF,
    Source,
    Union,
    WatermarkDecl,
    WindowTVF,
    walk,
)
from eowc.semantics.operators.join import (  # noqa: F401 (for the executors)
    CompiledJoin,
    JoinSide,
    compile_join,
    final_bounds,
)
from eowc.semantics.operators.logical import StreamJoin
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    NO_WATERMARK,
    Convention,
    Watermark,
)

#: Source watermarks by source column (``table.column``), as :meth:`Derivation.watermark`
#: reads them.
Marks = dict[str, Watermark]
#: Compiles stateless plan nodes (bottom first) into ``(row, W_before) -> rows``.
StatelessCompiler = Callable[[list[Plan], Convention], Callable[[Row, Watermark], list[Row]]]
#: Runs a query of one source under EOWC over a log (with ``--close``): (epoch, row) pairs.
SubqueryRunner = Callable[[Query, ArrivalLog, bool], Iterator[tuple[int, Row]]]


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
#: as a subquery of one source (:class:`SubqueryEvaluator`).
STATELESS = (Scan, Filter, Project, WindowTVF)


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


# ------------------------------------------------------------------------------ sources


@dataclass(frozen=True)
class SourceEpoch:
    """One epoch as the sources see it: each source's rows of INPUT (late rows left out and
    passed to ``late``) and the source watermarks before and after it."""

    epoch: int
    rows: dict[str, list[Row]]
    before: Marks
    after: Marks


def source_epochs(sources: Sequence[Source], log: ArrivalLog, convention: Convention,
                  late: Callable[[int, Any, Watermark], None] | None = None
                  ) -> Iterator[SourceEpoch]:
    """Per epoch, every source's admitted rows and watermarks (``SEMANTICS.md`` §1): the one
    INPUT loop, :func:`eowc.semantics.engines.inputs.input_epochs`, every row judged late on
    its own time."""
    def sink(row: LateRow) -> None:
        assert late is not None
        late(row.epoch, row.event, row.watermark_before)
    for step in input_epochs(sources, log, convention, None if late is None else sink):
        yield SourceEpoch(step.epoch, step.rows, dict(step.before), dict(step.after))


def _key(source: Source) -> str:
    assert source.watermark is not None
    return f"{source.name}.{source.watermark.column}"


def sources_of(plan: Plan) -> list[Source]:
    return list(dict.fromkeys(n.source for n in walk(plan) if isinstance(n, Scan)))


# ------------------------------------------------------------------------------ the lower part


class Evaluator:
    """One node of the lower part: ``step`` takes the rows of INPUT of one epoch (by source)
    and the source watermarks after it, and returns the node's new output rows."""

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        raise NotImplementedError


@dataclass
class ScanEvaluator(Evaluator):
    source: Source

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        return rows.get(self.source.name, [])


@dataclass
class StatelessEvaluator(Evaluator):
    input: Evaluator
    stage: Callable[[Row, Watermark], list[Row]]

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        return [out for row in self.input.step(rows, after) for out in self.stage(row, NO_WATERMARK)]


@dataclass
class UnionEvaluator(Evaluator):
    inputs: list[Evaluator]

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        return [row for i in self.inputs for row in i.step(rows, after)]


class JoinEvaluator(Evaluator):
    """A join of the lower part: :class:`eowc.semantics.operators.logical.StreamJoin` fed by
    its two inputs' evaluators."""

    def __init__(self, plan: Join, left: Evaluator, right: Evaluator,
                 convention: Convention) -> None:
        self.left_input, self.right_input = left, right
        self.join = StreamJoin(plan, convention)

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        closed = all(w == CLOSED_WATERMARK for w in after.values())
        return self.join.step([self.left_input.step(rows, after),
                               self.right_input.step(rows, after)], after, closed)

    @property
    def state_rows(self) -> int:
        return self.join.state_rows


class SubqueryEvaluator(Evaluator):
    """A subquery of one source below a join or a union (:func:`is_subquery`, e.g. a window
    aggregate of seed 004's window join): its EOWC output, each row in the epoch after which
    it is emitted, over the source's rows of INPUT (judged late per row, as every source of
    a join or a union is)."""

    def __init__(self, plan: Plan, log: ArrivalLog, convention: Convention, close: bool,
                 run: SubqueryRunner) -> None:
        (source,) = sources_of(plan)
        admitted = ArrivalLog(tuple(tuple(Event(source.name, row) for row in step.rows[source.name])
                                    for step in source_epochs([source], log, convention)))
        self.by_epoch: dict[int, list[Row]] = {}
        for epoch, row in run(Query(plan, True, None, (source,)), admitted, close):
            self.by_epoch.setdefault(epoch, []).append(row)
        self.epoch = 0

    def step(self, rows: Mapping[str, list[Row]], after: Marks) -> list[Row]:
        out = self.by_epoch.pop(self.epoch, [])
        self.epoch += 1
        return out


#: Makes the evaluator of a join from its plan and its two inputs' evaluators.
JoinCompiler = Callable[[Join, Evaluator, Evaluator], Evaluator]


def compile_lower(plan: Plan, convention: Convention, stateless: StatelessCompiler,
                  subquery: Callable[[Plan], Evaluator] | None = None,
                  join: JoinCompiler | None = None) -> Evaluator:
    """The evaluator of the lower part (every late check already made at the sources);
    ``subquery`` makes the evaluator of a stateful subquery of one source, ``join`` that of
    a join (the interpreter's :class:`JoinEvaluator` unless given)."""
    def below(p: Plan) -> Evaluator:
        return compile_lower(p, convention, stateless, subquery, join)
    if isinstance(plan, Scan):
        return ScanEvaluator(plan.source)
    if subquery is not None and is_subquery(plan):
        return subquery(plan)
    if isinstance(plan, Union):
        return UnionEvaluator([below(p) for p in plan.inputs])
    if isinstance(plan, Join):
        if join is not None:
            return join(plan, below(plan.left), below(plan.right))
        return JoinEvaluator(plan, below(plan.left), below(plan.right), convention)
    if isinstance(plan, Filter | Project | WindowTVF):
        return StatelessEvaluator(below(plan.input), stateless([plan], convention))
    raise PlanError(f"{type(plan).__name__} is not executed below a join or a union")


def derived_epochs(split: MultiInputSplit, convention: Convention, stateless: StatelessCompiler,
                   log: ArrivalLog, late: Callable[[int, Any, Watermark], None] | None,
                   close: bool, run: SubqueryRunner | None = None
                   ) -> Iterator[tuple[int, Watermark, Watermark, list[Row]]]:
    """The derived source, epoch by epoch: (epoch, its watermark before, after, its new rows).
    With ``close`` one more step after the last epoch: every source at +infinity, which
    releases the outer rows still waiting for a match. ``run`` runs a stateful subquery."""
    def subquery(plan: Plan) -> Evaluator:
        assert run is not None
        return SubqueryEvaluator(plan, log, convention, close, run)
    evaluator = compile_lower(split.lower, convention, stateless,
                              subquery if run is not None else None)
    watermark = NO_WATERMARK
    after: Marks = {}

    def derived(marks: Marks) -> Watermark:
        if split.watermark is None:
            return NO_WATERMARK
        return watermark_in_reading(split.watermark, marks, convention)

    for step in source_epochs(sources_of(split.lower), log, convention, late):
        before, after = watermark, step.after
        watermark = max(watermark, derived(after))
        yield step.epoch, before, watermark, evaluator.step(step.rows, after)
    if close:
        yield len(log.epochs), watermark, CLOSED_WATERMARK, evaluator.step({}, closed_marks(after))
