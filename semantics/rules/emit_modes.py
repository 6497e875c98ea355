"""Emit modes per operator, as each engine runs its operators without an EMIT clause (seed 001:
emit on window close is a property of operators, not of a query).

Flink SQL has no EMIT clause. By Flink's documentation ("Window Aggregation", "Window Top-N",
"Window Deduplication", "Window Join", "Over Aggregation", "Pattern Recognition") its window
operators emit each result once, as an insert, when the watermark passes the window's end;
an OVER aggregation ordered by event time emits a row once its time is complete; MATCH_RECOGNIZE
emits a match once its events' times are. A group aggregate without a window updates its
results (``-U``/``+U``), a regular join updates, an interval join emits each match at once,
and a SELECT without a stateful operator passes each row on as it arrives.

A query of a Flink script without ``EMIT ON WINDOW CLOSE`` is therefore run as EOWC
(append-only rows) when every stateful operator of its plan is one Flink runs as eowc's EOWC
plan does (:data:`EOWC_MODES`: a window operator final, an interval join at once), and in
update mode otherwise; an interval join on top gives the query's rows at once
(:func:`emits_at_once`). :func:`operator_kinds` names each operator, :data:`FLINK_MODES` and
:data:`SPARK_MODES` are the engines' tables, :func:`runs_as_eowc` the rule.
"""

from __future__ import annotations

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import ColumnRef, sql_of
from eowc.semantics.ir.plan import (
    Aggregate,
    CountTVF,
    Filter,
    GapFill,
    Join,
    MatchRecognize,
    OverWindow,
    Plan,
    Project,
    ProjectSet,
    SessionTVF,
    TopN,
    Union,
    WindowTVF,
)

#: How an operator emits: each result once, when its time is complete (final, insert-only);
#: at once, row by row (insert-only, not waiting for the watermark); or as a changelog.
FINAL, AT_ONCE, UPDATES = "final", "at once", "updates"

#: The mode of each operator kind in eowc's EOWC plan, Definition 4's altered operators: a
#: window operator emits each result once its time is complete; an interval join emits each
#: match at once (once made, a match is never retracted) and an outer row once no match can
#: come. (A union passes its inputs' rows on.) An engine runs a plan as eowc's EOWC plan
#: when each of its operators emits in this mode (:func:`runs_as_eowc`); over an interval
#: join's rows eowc adds an EOWC sort unless the query's rows are the join's, at once
#: (:func:`emits_at_once`).
EOWC_MODES: dict[str, str] = {
    "window aggregation": FINAL,
    "session window aggregation": FINAL,
    "window Top-N": FINAL,
    "window join": FINAL,
    "over aggregation": FINAL,
    "pattern recognition": FINAL,
    "interval join": AT_ONCE,
}

#: Flink's mode of each operator kind (its documentation's names): each operator of eowc's
#: EOWC plan in that plan's mode (Flink's window operators are final, its interval join emits
#: at once), and the others.
FLINK_MODES: dict[str, str] = {
    **EOWC_MODES,
    "group aggregation": UPDATES,
    "Top-N": UPDATES,
    "regular join": UPDATES,
    "union": AT_ONCE,
    "gap fill": UPDATES,
}

#: Spark's mode of each operator kind it runs, in append mode (Structured Streaming's
#: output modes): an aggregation emits a window once the global watermark passes its end; a
#: stream-stream join emits each match in the batch that brings its second row, and an
#: outer row once the watermark says no match can come; a union passes rows on.
SPARK_MODES: dict[str, str] = {
    "window aggregation": FINAL,
    "session window aggregation": FINAL,
    "window join": AT_ONCE,
    "interval join": AT_ONCE,
    "regular join": AT_ONCE,
    "union": AT_ONCE,
}

_WINDOW_BOUNDS = {"window_start", "window_end"}
_STATELESS = (Filter, Project, ProjectSet, WindowTVF)


def _column_names(expressions: tuple) -> set[str]:
    return {e.name for e in expressions if isinstance(e, ColumnRef)}


def _below(plan: Plan) -> Plan:
    """The first node under ``plan``'s stateless steps."""
    node = plan
    while isinstance(node, _STATELESS) and node.children:
        if isinstance(node, WindowTVF):
            return node
        node = node.children[0]
    return node


def _windowed(plan: Plan) -> bool:
    """Whether ``plan``'s rows carry a window (a window TVF's, or a window operator's output)."""
    node = _below(plan)
    return isinstance(node, WindowTVF | SessionTVF | CountTVF) or (
        node is not plan and operator_kind(node) in ("window aggregation", "window Top-N"))


def operator_kind(node: Plan) -> str | None:
    """The kind of the stateful operator ``node``, in Flink's documentation's words (None for
    a stateless node)."""
    if isinstance(node, Aggregate):
        keys = _column_names(tuple(e for _, e in node.group_by))
        below = _below(node.input)
        if isinstance(below, SessionTVF | CountTVF):
            return "session window aggregation"
        if isinstance(below, WindowTVF) and keys >= _WINDOW_BOUNDS:
            return "window aggregation"
        return "group aggregation"
    if isinstance(node, TopN):
        windowed = _column_names(node.partition_by) >= _WINDOW_BOUNDS and _windowed(node.input)
        return "window Top-N" if windowed else "Top-N"
    if isinstance(node, Join):
        condition = sql_of(node.condition)
        bounds = all(bound in condition for bound in _WINDOW_BOUNDS)
        if bounds and _windowed(node.left) and _windowed(node.right):
            return "window join"
        return "interval join" if " BETWEEN " in condition.upper() or "<" in condition \
            else "regular join"
    if isinstance(node, OverWindow):
        return "over aggregation"
    if isinstance(node, MatchRecognize):
        return "pattern recognition"
    if isinstance(node, Union):
        return "union"
    if isinstance(node, GapFill):
        return "gap fill"
    if isinstance(node, SessionTVF | CountTVF):
        return "session window aggregation"
    return None


def operator_kinds(plan: Plan) -> list[tuple[Plan, str]]:
    """Every stateful operator of ``plan`` with its kind, root first."""
    found = []
    stack = [plan]
    while stack:
        node = stack.pop(0)
        kind = operator_kind(node)
        if kind is not None and not (isinstance(node, SessionTVF | CountTVF)
                                     and found and found[-1][1] == "session window aggregation"):
            found.append((node, kind))
        stack.extend(node.children)
    return found


def refused_by_flink(plan: Plan) -> str | None:
    """Flink's own refusal of ``plan``, in Flink's words (its planner's validity rules that
    eowc models), or None. A window aggregation over a HOP whose size is not a whole number of
    slides: Flink 2.3 refuses it (the HOP TVF alone, row by row, runs)."""
    for node, kind in operator_kinds(plan):
        below = _below(node.input) if isinstance(node, Aggregate) else None
        if kind == "window aggregation" and isinstance(below, WindowTVF) \
                and below.spec.kind.value == "HOP" and below.spec.size % below.spec.slide:
            return ("HOP table function based aggregate requires size must be an integral "
                    "multiple of slide, but got size "
                    f"{below.spec.size // 1000} ms and slide {below.spec.slide // 1000} ms")
    return None


def not_final_in_flink(plan: Plan) -> str:
    """Why Flink does not run ``plan`` final, in Flink's documentation's words."""
    kinds = [(kind, FLINK_MODES[kind]) for kind in _operator_kinds_but_unions(plan)]
    if not kinds:
        return ("Flink passes each row of this query on as it arrives (it has no window "
                "aggregation, window Top-N, window join, OVER or MATCH_RECOGNIZE)")
    modes = ", ".join(f"its {kind} {'updates' if mode == UPDATES else 'emits at once'}"
                      for kind, mode in kinds if mode != EOWC_MODES.get(kind))
    return f"Flink does not run every operator of this query final: {modes}"


def not_final_in_spark(plan: Plan) -> str | None:
    """Why Spark's append mode does not emit ``plan``'s rows as EOWC rows, in Spark's words,
    or None.
    An operator Spark runs at once (:data:`SPARK_MODES`) emits final rows only when every
    input it reads is final: each match comes with its second row, and under Spark's one
    global watermark both inputs' rows of a window are final in the same batch (a join of
    two window aggregations). Over rows that are not final (a window TVF's, a source's) it
    emits a match before its time is complete."""
    for node, kind in operator_kinds(plan):
        if SPARK_MODES.get(kind) == AT_ONCE and not all(
                _emits_final(child, SPARK_MODES) for child in node.children):
            each = "row in the batch that brings it" if kind == "union" else \
                "match in the batch that brings its second row"
            return (f"Spark's append mode emits its {kind}'s rows at once (each {each}), not "
                    f"once their time is complete, so its rows are not EOWC rows")
    return None


def _emits_final(plan: Plan, modes: dict[str, str]) -> bool:
    """Whether the rows ``plan`` emits are final under ``modes``: its first stateful operator
    (through stateless steps) is final, or emits at once over final inputs."""
    node = _below(plan)
    mode = modes.get(operator_kind(node) or "")
    if mode == FINAL:
        return True
    return mode == AT_ONCE and all(_emits_final(child, modes) for child in node.children)


#: What each mode means for the rows an operator emits.
MODE_WORDS = {FINAL: "each result once, as an insert, once its time is complete",
              AT_ONCE: "each row as soon as it is made, as an insert, not waiting for the watermark",
              UPDATES: "a changelog: a result, then updates and retractions of it"}


def operator_mode(node: Plan, emit_on_window_close: bool, flink_rules: bool) -> str | None:
    """How the stateful operator ``node`` emits, and why, in words (None for a stateless
    node): under Flink's rules (a Flink SQL script, which has no EMIT clause), its kind's mode
    in :data:`FLINK_MODES`; otherwise every operator of an EMIT ON WINDOW CLOSE query is final
    and every one of an emit-on-update query updates."""
    kind = operator_kind(node)
    if kind is None:
        return None
    if flink_rules:
        mode = FLINK_MODES[kind]
        return f"{mode}: {MODE_WORDS[mode]} (Flink's {kind})"
    if emit_on_window_close:
        return f"{FINAL}: {MODE_WORDS[FINAL]} (EMIT ON WINDOW CLOSE)"
    return f"{UPDATES}: {MODE_WORDS[UPDATES]} (no EMIT ON WINDOW CLOSE)"


def _operator_kinds_but_unions(plan: Plan) -> list[str]:
    """The kinds of ``plan``'s stateful operators, root first, without its unions (a union
    passes its inputs' rows on)."""
    return [kind for _, kind in operator_kinds(plan) if kind != "union"]


def runs_as_eowc(plan: Plan, modes: dict[str, str] = FLINK_MODES) -> bool:
    """Whether an engine with ``modes`` runs ``plan`` as eowc's EOWC plan does: it has a
    stateful operator, and each one emits in its mode of :data:`EOWC_MODES` (a window
    operator final, an interval join at once)."""
    kinds = _operator_kinds_but_unions(plan)
    return bool(kinds) and all(modes.get(kind) == EOWC_MODES.get(kind) for kind in kinds)


def emits_at_once(plan: Plan) -> bool:
    """Whether ``plan``'s top stateful operator (through unions) emits at once in eowc's EOWC
    plan (an interval join): then an engine that runs it so gives its rows as the join makes
    them (:attr:`~eowc.semantics.ir.plan.Query.at_once`)."""
    kinds = _operator_kinds_but_unions(plan)
    return bool(kinds) and EOWC_MODES.get(kinds[0]) == AT_ONCE


def refuse_at_once(at_once: bool, backend: str) -> None:
    """A PlanError for a backend that runs eowc's EOWC sort over every plan that needs one,
    given a query whose rows are an at-once operator's (:attr:`Query.at_once`)."""
    if at_once:
        raise PlanError(f"{backend} cannot run a query whose rows are its interval join's "
                        "rows at once (as Flink runs an interval join written without EMIT): "
                        "the reference interpreter runs it (eowc run; eowc verify "
                        "--executor flink-native)")
