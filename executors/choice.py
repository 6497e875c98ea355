"""Which executor runs a query: the top of the executors' layers (it knows the composed
executor, which runs the other executors as its stages)."""

from __future__ import annotations

from eowc.executors.composed import composed_processor
from eowc.executors.gap_fill import gap_fill_processor
from eowc.executors.interface import EowcProcessor
from eowc.executors.partitioned import changelog_processor
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions, executor_plan, several_inputs
from eowc.executors.processors import eowc_processor
from eowc.semantics.analysis.operator_inputs import is_composed
from eowc.semantics.ir.plan import ArrivalOrder, Query
from eowc.semantics.ir.values import computing_under
from eowc.semantics.rules.emit_modes import refuse_at_once
from eowc.semantics.rules.triggers import Convention


def processor_for(query: Query, convention: Convention, arrival: ArrivalOrder | None = None,
                  options: ExecutorOptions = DEFAULT_OPTIONS) -> EowcProcessor:
    """The executor seed 000 or 002 prescribes for ``query``: the composed executor
    (:mod:`eowc.executors.composed`) for joins, unions and several stateful operators; without
    EMIT ON WINDOW CLOSE the emit-on-update executor (seed 002's general OverWindow, the only
    one yet); else the executor of its partitioned operator
    (:mod:`eowc.executors.partitioned`: OVER, MATCH_RECOGNIZE, TopN, SESSION, count windows),
    else EowcSort without GROUP BY, SortAgg when an aggregate needs the whole group,
    EowcGroupAgg otherwise. ``arrival`` breaks ties by arrival (``--ties row-id``);
    ``options`` are the engine's choices (:class:`~eowc.executors.plan.ExecutorOptions`). Its
    expressions compute under the convention's value rules."""
    refuse_at_once(query.at_once, "the in-process executors")
    with computing_under(convention.values):
        return _processor_for(query, convention, arrival, options)


def _processor_for(query: Query, convention: Convention, arrival: ArrivalOrder | None,
                   options: ExecutorOptions) -> EowcProcessor:
    if several_inputs(query.plan) or is_composed(query.plan):
        return composed_processor(query, convention, arrival)
    if not query.emit_on_window_close:
        plan = executor_plan(query, convention, arrival)
        return gap_fill_processor(plan, eowc=False) or changelog_processor(plan)
    return eowc_processor(executor_plan(query, convention, arrival, options))
