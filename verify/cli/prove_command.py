"""``eowc prove``: the z3 obligations of :mod:`eowc.semantics.proofs.trigger_proofs` (every trigger
   condition) and
:mod:`eowc.semantics.proofs.expression_proofs` (projection expressions), checked and reported.

With no query: every trigger obligation and the built-in expressions. With queries: what each
query relies on: the obligations of its operators (under ``--convention``) and of its computed
columns that read a watermark column.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from eowc.semantics.errors import EowcError
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
from eowc.semantics.proofs.expression_proofs import BUILT_IN, expression_obligations
from eowc.semantics.proofs.trigger_proofs import OPERATORS, Obligation, Result, Status, check_all, obligations
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.script_options import view_option


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


@click.command("prove")
@click.argument("query_files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--operator", "operators", multiple=True,
              type=click.Choice([*OPERATORS, "projection"]),
              help="Only the obligations about this operator (repeatable). Default: all.")
@click.option("--convention", type=click.Choice([*(c.value for c in Convention), "all"]),
              default="all", show_default=True,
              help="Only the obligations that involve this convention (and those that involve none).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, help="Seconds z3 may spend on one obligation.")
@click.option("--timings/--no-timings", default=True, show_default=True,
              help="Show how long z3 took (without: the same output on every run).")
@view_option
def prove_command(query_files: tuple[str, ...], operators: tuple[str, ...], convention: str,
                  fmt: str, timeout: float, timings: bool, view: str | None) -> None:
    """Prove with z3 that the EOWC triggers are sound, monotone and equivalent as documented,
    and that the projection expressions that keep a watermark are non-decreasing with an exact
    watermark map. With QUERY_FILES: only what those queries rely on.

    Exit codes: 0 every obligation proved; 1 one refuted (its counterexample is printed) or
    unknown; 2 bad usage or an unreadable query.
    """
    queries = []
    for path in query_files:
        try:
            queries.append(parse_script(Path(path).read_text(encoding="utf-8"), view).query)
        except (OSError, UnicodeDecodeError) as error:
            click.echo(f"eowc prove: error: {path}: cannot read the query: {error}", err=True)
            sys.exit(2)
        except EowcError as error:
            click.echo(f"eowc prove: error: {path}: {error}", err=True)
            sys.exit(2)
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
    sys.exit(0 if all(passed(r) for r in results) else 1)
