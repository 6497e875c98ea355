"""``eowc engine``: an engine's own operators as a program speaking the line protocol of
``eowc verify --executor-cmd`` (docs/verification.md), so that any release installed in an
environment of its own can be verified: ``eowc verify q.sql --executor-cmd
'/envs/flink-1.19.0/bin/eowc engine flink'``."""

from __future__ import annotations

import os
import sys

import click

from eowc.semantics.errors import EowcError
from eowc.verify.external import serve_line_protocol


@click.group("engine")
def engine() -> None:
    """An engine's own operators behind the line protocol of --executor-cmd."""


@engine.command("flink")
@click.option("--parallelism", type=click.IntRange(min=1), default=1, show_default=True,
              help="Parallelism of the local mini-cluster's job.")
def flink(parallelism: int) -> None:
    """Apache Flink's own operators (PyFlink, a local mini-cluster), on the Flink SQL script of
    the header, under the flink convention; a restart is a stop-with-savepoint and a restore
    from state_dir, a crash restores the savepoint of the last epoch acknowledged."""
    from eowc.executors.flink.engine import FlinkSession

    def opened(script: str, convention: str, state_dir: str) -> FlinkSession:
        return FlinkSession(script, convention, state_dir, parallelism=parallelism)
    _serve(opened)


def _serve(opener: object) -> None:
    """Serves the protocol on the process's stdin and stdout; what the engine's JVM and workers
    print goes to stderr (they inherit the process's standard output)."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        serve_line_protocol(opener, sys.stdin, protocol)
    except (EowcError, ValueError) as error:
        click.echo(f"eowc engine: error: {error}", err=True)
        sys.exit(1)
    protocol.flush()
