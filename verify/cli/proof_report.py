"""What ``eowc prove`` reports: the z3 obligations of :mod:`eowc.semantics.proofs.trigger_proofs` (every
trigger condition) and :mod:`eowc.semantics.proofs.expression_proofs` (projection expressions), selected
for the queries and conventions asked for, checked, and printed as a table or JSON.

Needs z3 (the ``proofs`` extra).
"""

from __future__ import annotations

import json
import time

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.plan import (
    Aggregate,
    CountTVF,
    Join,
    MatchRecognize,
    OverWindow,
    Plan,
    Query,
    SessionTVF,
    TopN,
    Union,
    WindowTVF,
)
from eowc.semantics.proofs import OPERATORS
from eowc.semantics.proofs.expression_proofs import BUILT_IN, expression_obligations
from eowc.semantics.proofs.trigger_proofs import Obligation, Result, Status, check_all, obligations
from eowc.semantics.rules.triggers import Convention


def passed(result: Result) -> bool:
    """Whether ``result`` lets ``eowc prove`` succeed: proved, or advisory."""
    return result.status is Status.PROVED or result.obligation.advisory


def verdict(result: Result) -> str:
    """The result in words (an advisory witness reads as what it found)."""
    if result.obligation.advisory and result.obligation.witness:
        return {Status.PROVED: "counterexample", Status.UNKNOWN: "unknown",
                Status.REFUTED: "non-decreasing (rejected conservatively)"}[result.status]
    return result.status.value


def query_operators(plan: Plan) -> set[str]:
    """The names of :data:`eowc.semantics.proofs.trigger_proofs.OPERATORS` whose triggers ``plan`` uses."""
    found = {"input", "derived"}
    if any(isinstance(n, Join) for n in _nodes(plan)):
        found.add("interval-join")
    if any(isinstance(n, Union) for n in _nodes(plan)):
        found.add("union")
    windows = [n for n in _nodes(plan) if isinstance(n, WindowTVF)]
    found |= {n.spec.kind.value.lower() for n in windows}
    if any(isinstance(n, SessionTVF) for n in _nodes(plan)):
        found.add("session")
    if any(isinstance(n, CountTVF) for n in _nodes(plan)):
        found.add("count-window")
    if any(isinstance(n, MatchRecognize) for n in _nodes(plan)):  # it emits: no EOWC sort
        found.add("pattern")
        return found
    if any(isinstance(n, OverWindow) for n in _nodes(plan)):
        found.add("over-window")
    elif not any(isinstance(n, Aggregate | TopN) for n in _nodes(plan)):
        found.add("eowc-sort")
    elif not windows:
        found.add("group-by-event-time")
    return found


def _nodes(plan: Plan) -> list[Plan]:
    return [plan, *(n for child in plan.children for n in _nodes(child))]


def selected_obligations(queries: list[Query], operators: tuple[str, ...],
                         convention: str) -> list[Obligation]:
    """The obligations to check: filtered by operator and by convention (an obligation that
    involves no convention is always kept)."""
    if queries:
        wanted = set(operators) or set().union(*(query_operators(q.plan) for q in queries))
        expressions = [o for q in queries for o in expression_obligations(q)]
    else:
        wanted = set(operators) or set(OPERATORS) | {"projection"}
        expressions = expression_obligations(parse_script(BUILT_IN).query)
    return [o for o in [*obligations(), *expressions]
            if (o.operator in wanted or o.operator == "projection" and not operators)
            and (convention == "all" or not o.conventions or Convention(convention) in o.conventions)]


def _print_table(results: list[Result], seconds: float | None) -> None:
    """The results as a table, then each advisory or failed one with its model; without
    ``seconds``, no timings (the output is the same on every run)."""
    table = Table(title="z3 proof obligations")
    columns = ["operator", "convention", "property", "result"] + (["ms"] if seconds is not None else [])
    for name in columns:
        table.add_column(name, justify="right" if name == "ms" else "left")
    style = {Status.PROVED: "green", Status.REFUTED: "bold red", Status.UNKNOWN: "yellow"}
    for r in results:
        o = r.obligation
        colour = "cyan" if o.advisory else style[r.status]
        timing = [f"{r.seconds * 1000:.1f}"] if seconds is not None else []
        table.add_row(o.operator, o.convention, escape(o.property), f"[{colour}]{verdict(r)}[/]",
                      *timing)
    Console(width=150).print(table)
    for r in results:
        if r.status is not Status.PROVED or r.obligation.advisory:
            o = r.obligation
            label = "NOTE" if o.advisory else r.status.value.upper()
            click.echo(f"{label}: {o.operator} [{o.convention}] {o.property}: {o.claim}")
            found = r.model_text() or r.reason or "none exists"
            click.echo(f"  {'counterexample' if r.model else 'reason'}: {found}"
                       if r.model or r.reason or not o.advisory else
                       "  z3 proved it non-decreasing: the derivation has no watermark map "
                       "for it, so it is rejected conservatively")
    counts = {s: sum(r.status is s for r in results if not r.obligation.advisory) for s in Status}
    advisory = sum(r.obligation.advisory for r in results)
    click.echo(f"{len(results) - advisory} obligations: {counts[Status.PROVED]} proved, "
               f"{counts[Status.REFUTED]} refuted, {counts[Status.UNKNOWN]} unknown; "
               f"{advisory} rejected expressions examined"
               + (f"; in {seconds:.2f} s" if seconds is not None else ""))


def report(queries: list[Query], operators: tuple[str, ...], convention: str, fmt: str,
           timeout: float, timings: bool) -> int:
    """Check the selected obligations, print them in ``fmt`` (``text`` or ``json``), and return
    the exit code: 0 if every one passed (:func:`passed`), else 1."""
    started = time.perf_counter()
    results = check_all(selected_obligations(queries, operators, convention), timeout)
    seconds = time.perf_counter() - started
    if fmt == "json":
        found = [r.as_json() for r in results]
        for entry in found if not timings else []:
            del entry["ms"]
        click.echo(json.dumps({"obligations": found,
                               **{s.value: sum(r.status is s for r in results
                                               if not r.obligation.advisory) for s in Status},
                               **({"seconds": round(seconds, 3)} if timings else {})}, indent=2))
    else:
        _print_table(results, seconds if timings else None)
    return 0 if all(passed(r) for r in results) else 1
