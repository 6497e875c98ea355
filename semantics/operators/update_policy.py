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

:class:`PolicyWindows` is the operator; the input loop that feeds it an arrival log is the
engine's (:func:`eowc.semantics.engines.interpreter.run_update_policy`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from eowc.semantics.analysis.completion import completion_rule, late_check_is_per_window, watermark_columns
from eowc.semantics.analysis.operator_inputs import ROW_DEPENDENT, operator_nodes, stateless_nodes
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Aggregate, ArrivalOrder, Query, Scan, WindowTVF
from eowc.semantics.ir.values import row_sort_key
from eowc.semantics.operators.logical import WindowAggregate, compile_stateless
from eowc.semantics.operators.protocol import PortClock
from eowc.semantics.rules.triggers import (
    NO_WATERMARK,
    Convention,
    Watermark,
    completeness_comparison,
    windowed_row_is_late,
)

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
    """One open group: the row last shown (None: none, or HAVING dropped it), if it fired on
    time, and if rows arrived since it was last shown."""

    shown: Row | None = None
    on_time: bool = False
    changed: bool = True


class PolicyWindows:
    """The windows of a window aggregate ``query`` (over one source) under ``policy``: fed
    INPUT read under the watermark lowered by the allowed lateness (:attr:`is_late`,
    :attr:`below`), and after each epoch the watermark ``W``, it fires (:meth:`fire`). A
    PlanError unless ``query`` is a window aggregate. With ``arrival`` (``--ties row-id``) its
    aggregates order rows with equal ORDER BY values by arrival."""

    def __init__(self, query: Query, policy: UpdatePolicy, convention: Convention,
                 arrival: ArrivalOrder | None = None) -> None:
        above_nodes, node = stateless_nodes(query.plan)
        below_nodes, scan = operator_nodes(node) if isinstance(node, Aggregate) else ((), node)
        if not isinstance(node, Aggregate) or not isinstance(scan, Scan) or \
                any(isinstance(n, ROW_DEPENDENT) for n in below_nodes) or \
                not watermark_columns(node).has_window_column:
            raise PlanError("update policies (--early-every, --allowed-lateness) apply to a window "
                            "aggregate: TUMBLE, HOP or CUMULATE with GROUP BY window_start and/or "
                            "window_end (and keys), over one source")
        self.policy, self.rule = policy, completion_rule(query, convention)
        source, lateness = scan.source, policy.allowed_lateness
        #: The GROUP BY's groups, folded as the dataflow's (no trigger: :meth:`fire` has it).
        self.aggregate = WindowAggregate(node, source, None, None, PortClock(source, None, convention),
                                         arrival)
        per_window = late_check_is_per_window(query.plan, convention)
        steps = compile_stateless(list(reversed(below_nodes[1:])), convention, per_window)
        self.below: Callable[[Row, Watermark], list[Row]] = \
            lambda row, w: steps(row, w - lateness)
        if per_window:
            windows_of = next(n for n in reversed(below_nodes) if isinstance(n, WindowTVF)).spec.windows_of
            self.is_late: Callable[[int, Watermark], bool] = \
                lambda t, w: windowed_row_is_late(windows_of(t), w - lateness, convention)
        else:
            comparison = completeness_comparison(convention)
            self.is_late = lambda t, w: comparison(t, w - lateness)
        above = compile_stateless(list(reversed(above_nodes)), convention)
        self.above: Callable[[Row], Row | None] = \
            lambda row: next(iter(above(row, NO_WATERMARK)), None)
        self.windows: dict[Row, _Window] = {}

    def fire(self, epoch: int, rows: list[Row], watermark: Watermark) -> EpochReport:
        """Add the epoch's rows of INPUT (through :attr:`below`); then, at ``watermark``, each
        window in order of its bound fires on time once it closes, late when rows changed it
        after that, early (every ``early_every`` epochs) when rows changed it before; the
        windows whose end plus the allowed lateness is complete are final and dropped."""
        self.aggregate.add(rows)
        touched = {self.aggregate.key(row) for row in rows}
        windows, rule, lateness = self.windows, self.rule, self.policy.allowed_lateness
        for key in touched:
            windows.setdefault(key, _Window()).changed = True
        out: list[Firing] = []
        final: list[Row] = []
        for key in sorted(windows, key=lambda k: (rule.bound(k), row_sort_key(k))):
            window = windows[key]
            if not window.on_time and rule.is_complete(rule.bound(key), watermark):
                self._show(key, "on_time", epoch, out)
                window.on_time = True
            elif window.on_time and window.changed:
                self._show(key, "late", epoch, out)
            elif window.changed and self.policy.fires_early_after(epoch):
                self._show(key, "early", epoch, out)
            if window.on_time and rule.is_complete(rule.bound(key), watermark - lateness):
                final.append(key)
        for key in final:
            del windows[key]
            self.aggregate.drop(key)
        return EpochReport(epoch, out, final)

    def _show(self, key: Row, kind: str, epoch: int, out: list[Firing]) -> None:
        """Fire ``key``'s window: its shown row out and its result in, unless (but on time)
        the result is the one shown."""
        window = self.windows[key]
        new = self.above(self.aggregate.result(key))
        if kind != "on_time" and new == window.shown:
            window.changed = False
            return
        if window.shown is not None:
            out.append(Firing(epoch, "-", window.shown, kind, key))
        if new is not None:
            out.append(Firing(epoch, "+", new, kind, key))
        window.shown, window.changed = new, False


def changelog_state(firings: list[Firing]) -> dict[Row, int]:
    """The multiset of rows a changelog leaves (rows with a positive count)."""
    state: dict[Row, int] = {}
    for firing in firings:
        state[firing.row] = state.get(firing.row, 0) + (1 if firing.op == "+" else -1)
    return {row: n for row, n in state.items() if n}
