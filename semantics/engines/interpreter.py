"""The reference interpreter's entry points: ``run_eowc`` and ``run_update``, the dataflow
interpreter's two modes (:mod:`eowc.semantics.engines.dataflow`); ``run_update_policy``, a
window aggregate under an update policy (:mod:`eowc.semantics.operators.update_policy`) fed by
the input loop; and what a check of a run reads: whether the reference runs a query under EOWC,
the watermark after each epoch, the result after each epoch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

from eowc.semantics.analysis.operator_inputs import OperatorInput, operator_inputs
from eowc.semantics.engines.dataflow import (
    Change,
    Emission,
    arrival_order,
    compile_dataflow,
    run_eowc,
    run_update,
)
from eowc.semantics.engines.inputs import LateRow, LateSink, input_epochs, one_source_epochs
from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.operators.protocol import PortClock
from eowc.semantics.operators.update_policy import EpochReport, Firing, PolicyWindows, UpdatePolicy
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention, Watermark


def check_runs_under_eowc(query: Query, convention: Convention) -> None:
    """A PlanError unless the reference runs ``query`` under EOWC: a valid EOWC query
    (:func:`~eowc.semantics.engines.dataflow.check_eowc`) of operators it has."""
    compile_dataflow(query, convention, eowc=True)


def top_operator(query: Query, convention: Convention) -> OperatorInput:
    """The operator the EOWC query emits through (its top stateful operator, or the EOWC
    sort), read over its input: ``.query`` is that operator over its own, possibly derived,
    source."""
    return operator_inputs(replace(query, emit_on_window_close=True), convention)[-1]


def watermark_sequence(query: Query, log: ArrivalLog, convention: Convention, lowered: int = 0
                       ) -> list[Watermark]:
    """After each epoch, the watermark of the input the EOWC query's top operator reads (its
    port's watermark, :class:`~eowc.semantics.operators.protocol.PortClock`): its source's
    watermark, or over a join, a union or another operator, the watermark the derivation gives
    the column its trigger reads. With ``lowered``, that watermark had every source
    watermark been ``lowered`` microseconds lower (a result complete at the first and not at
    the second was emitted exactly at a boundary instant of the sources)."""
    top = top_operator(query, convention)
    clock = PortClock(top.source, top.watermark, convention)
    marks = []
    for step in input_epochs(sources_of(query.plan), log, convention):
        clock.advance({k: w - lowered for k, w in step.after.items()} if lowered else step.after,
                      False)
        marks.append(clock.after)
    return marks


def snapshots(changes: list[Change], epochs: int) -> list[list[Row]]:
    """The result after each epoch (sorted), rebuilt from a changelog."""
    current: Counter[Row] = Counter()
    result: list[list[Row]] = []
    by_epoch: dict[int, list[Change]] = {}
    for change in changes:
        by_epoch.setdefault(change.epoch, []).append(change)
    for epoch in range(epochs):
        for change in by_epoch.get(epoch, []):
            current[change.row] += 1 if change.op == "+" else -1
        result.append(sorted(current.elements(), key=row_sort_key))
    return result


# ------------------------------------------------------------------------ update policies


def policy_reports(query: Query, log: ArrivalLog, policy: UpdatePolicy,
                   convention: Convention = Convention.RISINGWAVE, close: bool = False,
                   dropped: LateSink | None = None, ties: str | None = None
                   ) -> Iterator[EpochReport]:
    """Per epoch (and, with ``close``, once more at ``len(epochs)`` with ``W = +inf``): the
    firings of the window aggregate ``query`` under ``policy``, and the groups made final.
    Rows later than the allowed lateness go to ``dropped`` with the watermark in force. The
    query is checked here (a PlanError if it is not a valid EOWC window aggregate). ``ties``
    orders rows with equal ORDER BY values (first_value/last_value, string_agg), as
    :func:`run_eowc`'s."""
    check_runs_under_eowc(query, convention)
    windows = PolicyWindows(query, policy, convention, arrival_order(log, convention, ties))
    for epoch, rows, _, after in one_source_epochs(query.source, log, convention, dropped,
                                                   windows.is_late, windows.below):
        yield windows.fire(epoch, rows, after)
    if close:
        yield windows.fire(len(log.epochs), [], CLOSED_WATERMARK)


def run_update_policy(query: Query, log: ArrivalLog, policy: UpdatePolicy,
                      convention: Convention = Convention.RISINGWAVE, close: bool = False,
                      dropped: LateSink | None = None, ties: str | None = None
                      ) -> Iterator[Firing]:
    """The changelog of ``query`` under ``policy``: every firing, in epoch order; ``ties`` as
    :func:`policy_reports`'."""
    for report in policy_reports(query, log, policy, convention, close, dropped, ties):
        yield from report.firings


def final_after_each_epoch(query: Query, log: ArrivalLog, policy: UpdatePolicy,
                           convention: Convention = Convention.RISINGWAVE,
                           close: bool = False) -> list[set[Row]]:
    """The groups (by key) that are final after each epoch, cumulatively: emitted, and their
    window's end plus the allowed lateness is complete, so no row can change them."""
    done: set[Row] = set()
    result = []
    for report in policy_reports(query, log, policy, convention, close):
        done |= set(report.final)
        result.append(set(done))
    return result


#: What other packages import from here.
__all__ = ["Change", "Emission", "LateRow", "LateSink", "check_runs_under_eowc",
           "final_after_each_epoch", "policy_reports", "run_eowc", "run_update",
           "run_update_policy", "snapshots", "top_operator", "watermark_sequence"]
