"""Update policies of a window aggregate (seed 003, Samza's window operator): early firings,
the on-time firing and late firings within an allowed lateness, as one changelog.

This is not EMIT ON WINDOW CLOSE but the general model it specialises. A window aggregate
(TUMBLE, HOP or CUMULATE with GROUP BY window_start/window_end and keys) under an
:class:`UpdatePolicy` emits, after each epoch, changes ``(op, row)`` each marked with its
firing kind:

* **early** (speculative): every ``early_every`` epochs (after epochs ``k-1, 2k-1, ...``),
  each window that has not fired on time and whose result changed since it was last shown;
* **on_time**: once the window closes (:func:`~eowc.semantics.rules.triggers.window_closes` at ``W``,
  the EOWC trigger): its result, retracting what an early firing showed. Every window fires
  on time exactly once, so the ``+`` rows marked ``on_time`` are the EOWC output;
* **late**: after it fired on time, each epoch in which rows of the allowed lateness changed
  its result: the old row out, the new one in.

Rows are admitted as INPUT is (Definition 1) but under the watermark lowered by the allowed
lateness ``L``: a row is dropped only if it would be late under ``W - L`` (under Spark and
Flink per window: only windows whose ``end + L`` is not yet closed take it). Dropped rows are
reported (never silently). A window's state is dropped, and the window is *final*, once
``window_closes(window, W - L)``: its end plus the lateness is complete, and no admitted row
can reach it any more. With ``L = 0`` and no early firings the changelog is the EOWC output
(each row ``+``, ``on_time``). With ``--close`` (end of the input) every window fires on time
and is final, and the changelog's final state is ``Q`` over the rows within the lateness.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

from eowc.semantics.analysis.completion import watermark_columns
from eowc.semantics.engines.interpreter import CompiledQuery, LateSink, admitted_epochs, compile_query
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.operators.aggregates import aggregate_value
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention, Watermark

#: The firing kinds, in the order a window can see them.
FIRING_KINDS = ("early", "on_time", "late")


@dataclass(frozen=True)
class UpdatePolicy:
    """When a window aggregate's results are (re-)emitted: ``early_every`` epochs before the
    window closes (None: no early firings), and for ``allowed_lateness`` microseconds of
    watermark after it closes (0: rows of a closed window are dropped, as under EOWC)."""

    early_every: int | None = None
    allowed_lateness: int = 0

    def __post_init__(self) -> None:
        if self.early_every is not None and self.early_every <= 0:
            raise PlanError(f"early firings come every k >= 1 epochs, got {self.early_every}")
        if self.allowed_lateness < 0:
            raise PlanError(f"the allowed lateness cannot be negative, got "
                            f"{self.allowed_lateness} us")

    def fires_early_after(self, epoch: int) -> bool:
        """Early firings happen after epochs ``k-1, 2k-1, ...`` (every ``k`` epochs)."""
        return self.early_every is not None and (epoch + 1) % self.early_every == 0


class Firing(NamedTuple):
    """One changelog entry: after ``epoch`` (``len(epochs)`` for the close), ``op`` (``+`` or
    ``-``) of ``row``, by a firing of ``kind`` (:data:`FIRING_KINDS`) of the group ``key``
    (window columns and keys, as grouped)."""

    epoch: int
    op: str
    row: Row
    kind: str
    key: Row


class EpochReport(NamedTuple):
    """What one epoch did: its firings, and the groups that became final after it (their end
    plus the allowed lateness is complete: they never change again)."""

    epoch: int
    firings: list[Firing]
    final: list[Row]


@dataclass
class _Window:
    """One open group: its rows, the row last shown (None: none, or HAVING dropped it), if it
    fired on time, and if rows arrived since it was last shown."""

    rows: list[Row]
    shown: Row | None = None
    on_time: bool = False
    changed: bool = True


def _window_aggregate(query: Query, convention: Convention) -> CompiledQuery:
    """The query bound for EOWC; a PlanError unless it is a window aggregate."""
    compiled = compile_query(query, convention, eowc=True)
    aggregate = compiled.aggregate
    if compiled.feed is not None or aggregate is None or compiled.session is not None \
            or compiled.count is not None or not watermark_columns(aggregate).has_window_column:
        raise PlanError("update policies (--early-every, --allowed-lateness) apply to a window "
                        "aggregate: TUMBLE, HOP or CUMULATE with GROUP BY window_start and/or "
                        "window_end (and keys), over one source")
    return compiled


def policy_reports(query: Query, log: ArrivalLog, policy: UpdatePolicy,
                   convention: Convention = Convention.RISINGWAVE, close: bool = False,
                   dropped: LateSink | None = None) -> Iterator[EpochReport]:
    """Per epoch (and, with ``close``, once more at ``len(epochs)`` with ``W = +inf``): the
    firings of the window aggregate ``query`` under ``policy``, and the groups made final.
    Rows later than the allowed lateness go to ``dropped`` with the watermark in force."""
    compiled = _window_aggregate(query, convention)
    rule = compiled.rule
    assert rule is not None
    lateness = policy.allowed_lateness
    is_late, below = compiled.is_late, compiled.below
    lowered = replace(compiled, is_late=lambda t, w: is_late(t, w - lateness),
                      below=lambda row, w: below(row, w - lateness))
    windows: dict[Row, _Window] = {}

    def result(key: Row) -> Row | None:
        rows = windows[key].rows
        return compiled.above(key + tuple(aggregate_value(f, rows) for f in compiled.functions))

    def show(key: Row, kind: str, epoch: int, out: list[Firing]) -> None:
        window = windows[key]
        new = result(key)
        if kind != "on_time" and new == window.shown:
            window.changed = False
            return
        if window.shown is not None:
            out.append(Firing(epoch, "-", window.shown, kind, key))
        if new is not None:
            out.append(Firing(epoch, "+", new, kind, key))
        window.shown, window.changed = new, False

    def fire(epoch: int, watermark: Watermark) -> EpochReport:
        out: list[Firing] = []
        final: list[Row] = []
        for key in sorted(windows, key=lambda k: (rule.bound(k), row_sort_key(k))):
            window = windows[key]
            if not window.on_time and rule.is_complete(rule.bound(key), watermark):
                show(key, "on_time", epoch, out)
                window.on_time = True
            elif window.on_time and window.changed:
                show(key, "late", epoch, out)
            elif window.changed and policy.fires_early_after(epoch):
                show(key, "early", epoch, out)
            if window.on_time and rule.is_complete(rule.bound(key), watermark - lateness):
                final.append(key)
        for key in final:
            del windows[key]
        return EpochReport(epoch, out, final)

    key_of = compiled.key
    for epoch, _, after, rows in admitted_epochs(lowered, log, dropped):
        for row in rows:
            key = key_of(row)
            window = windows.setdefault(key, _Window([]))
            window.rows.append(row)
            window.changed = True
        yield fire(epoch, after)
    if close:
        yield fire(len(log.epochs), CLOSED_WATERMARK)


def run_update_policy(query: Query, log: ArrivalLog, policy: UpdatePolicy,
                      convention: Convention = Convention.RISINGWAVE, close: bool = False,
                      dropped: LateSink | None = None) -> Iterator[Firing]:
    """The changelog of ``query`` under ``policy``: every firing, in epoch order."""
    for report in policy_reports(query, log, policy, convention, close, dropped):
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


def changelog_state(firings: list[Firing]) -> dict[Row, int]:
    """The multiset of rows a changelog leaves (rows with a positive count)."""
    state: dict[Row, int] = {}
    for firing in firings:
        state[firing.row] = state.get(firing.row, 0) + (1 if firing.op == "+" else -1)
    return {row: n for row, n in state.items() if n}
