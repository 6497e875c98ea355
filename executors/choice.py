"""Which executor runs a query: the top of the executors' layers (it knows the joins, which
run the other executors above and below them)."""

from __future__ import annotations

from eowc.executors.interface import EowcProcessor
from eowc.executors.joins import join_processor
from eowc.executors.partitioned import changelog_processor
from eowc.executors.plan import executor_plan, several_inputs
from eowc.executors.processors import eowc_processor
from eowc.semantics.ir.plan import Query
from eowc.semantics.rules.triggers import Convention


def processor_for(query: Query, convention: Convention) -> EowcProcessor:
    """The executor seed 000 or 002 prescribes for ``query``: the join executor for joins
    and unions; without EMIT ON WINDOW CLOSE the emit-on-update executor (seed 002's general
    OverWindow, the only one yet); else the executor of its partitioned operator
    (:mod:`eowc.executors.partitioned`: OVER, MATCH_RECOGNIZE, TopN, SESSION, count windows),
    else EowcSort without GROUP BY, SortAgg when an aggregate needs the whole group,
    EowcGroupAgg otherwise."""
    if several_inputs(query.plan):
        return join_processor(query, convention)
    if not query.emit_on_window_close:
        return changelog_processor(executor_plan(query, convention))
    return eowc_processor(executor_plan(query, convention))
