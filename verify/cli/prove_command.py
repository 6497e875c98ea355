"""``eowc prove``: the z3 obligations of :mod:`eowc.semantics.proofs.trigger_proofs` (every trigger
condition) and :mod:`eowc.semantics.proofs.expression_proofs` (projection expressions), checked and
reported (:mod:`eowc.verify.cli.proof_report`).
With no query: every trigger obligation and the built-in expressions. With queries: what each
query relies on: the obligations of its operators (under ``--convention``) and of its computed
columns that read a watermark column.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.proofs import OPERATORS
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.script_options import dialect_option, view_option


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
@dialect_option
def prove_command(query_files: tuple[str, ...], operators: tuple[str, ...], convention: str,
                  fmt: str, timeout: float, timings: bool, view: str | None,
                  dialect: str) -> None:
    """Prove with z3 that the EOWC triggers are sound, monotone and equivalent as documented,
    and that the projection expressions that keep a watermark are non-decreasing with an exact
    watermark map. With QUERY_FILES: only what those queries rely on.

    Exit codes: 0 every obligation proved; 1 one refuted (its counterexample is printed) or
    unknown; 2 bad usage or an unreadable query.
    """
    queries = []
    for path in query_files:
        try:
            queries.append(parse_script(Path(path).read_text(encoding="utf-8"), view,
                                        dialect).query)
        except (OSError, UnicodeDecodeError) as error:
            click.echo(f"eowc prove: error: {path}: cannot read the query: {error}", err=True)
            sys.exit(2)
        except EowcError as error:
            click.echo(f"eowc prove: error: {path}: {error}", err=True)
            sys.exit(2)
    from eowc.verify.cli import proof_report  # z3 (the proofs extra) only when proving

    sys.exit(proof_report.report(queries, operators, convention, fmt, timeout, timings))
