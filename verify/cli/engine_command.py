"""``eowc engine``: an engine's own operators as a program speaking the line protocol of
``eowc verify --executor-cmd`` (docs/verification.md), so that any release installed in an
environment of its own can be verified: ``eowc verify q.sql --executor-cmd
'/envs/flink-1.19.0/bin/eowc engine flink'``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from eowc.executors.flink.engine import FlinkSession
from eowc.executors.spark.engine import SparkNativeSession
from eowc.semantics.errors import EowcError
from eowc.verify.external import serve_line_protocol
from eowc.verify.flink import ENGINES_HOME


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
    def opened(script: str, convention: str, state_dir: str) -> FlinkSession:
        return FlinkSession(script, convention, state_dir, parallelism=parallelism)
    _serve(opened)


@engine.command("spark")
@click.option("--master", default="local[2]", show_default=True,
              help="The Spark master URL.")
def spark(master: str) -> None:
    """Apache Spark's own streaming operators (the Spark installed here, 3.4 or later), on the
    script of the header, under the spark convention; each epoch is a Trigger.AvailableNow run
    on the checkpoint in state_dir, so a restart or a crash resumes from it."""
    def opened(script: str, convention: str, state_dir: str) -> SparkNativeSession:
        return SparkNativeSession(script, convention, state_dir, master=master)
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


#: The PyPI package of each engine ``eowc engine env`` installs.
ENGINE_PACKAGES = {"flink": "apache-flink", "spark": "pyspark"}


@engine.command("env")
@click.argument("name", type=click.Choice(sorted(ENGINE_PACKAGES)))
@click.argument("release")
def environment(name: str, release: str) -> None:
    """Make an environment of its own for RELEASE of engine NAME (Spark 3.4 to 4.3, Flink
    1.19 to 2.3): a virtual environment with this eowc and that release, under
    ~/.cache/eowc/engines/NAME-RELEASE, or $EOWC_ENGINES_HOME; or bring this eowc into it
    again. Prints how to verify with it.
    flink-native finds the newest such Flink environment."""
    home = ENGINES_HOME / f"{name}-{release}"
    source = Path(__file__).resolve().parents[2]
    eowc = str(source) if (source / "pyproject.toml").exists() else "eowc"
    pip = [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    steps = [] if (home / "bin" / "python").exists() else [[sys.executable, "-m", "venv", str(home)]]
    steps += [[*pip, eowc, f"{ENGINE_PACKAGES[name]}=={release}"],
              [*pip, "--no-deps", "--force-reinstall", eowc]]  # this eowc, also over an older one
    for step in steps:
        click.echo(f"$ {' '.join(step)}", err=True)
        if subprocess.run(step, check=False).returncode != 0:
            click.echo(f"eowc engine env: error: {' '.join(step[:3])} failed (above)", err=True)
            sys.exit(1)
    click.echo(f"eowc verify q.sql --convention {name} --executor-cmd "
               f"'{home / 'bin' / 'eowc'} engine {name}'")
