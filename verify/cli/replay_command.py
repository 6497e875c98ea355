"""``eowc replay``: run transcripts (:mod:`eowc.verify.transcripts`) against an executor.

Each FILE_OR_DIR is a transcript, or a folder whose ``*.yaml`` files (not its subfolders) are
all replayed: a regression suite. Every transcript is read first; a bad one stops the command
before anything runs. Then each is replayed (:func:`eowc.verify.transcripts.replay`) and the results
are printed as a table, one row per transcript, with its first violation; the violations of the
transcripts that fail are listed under it.

Exit code: 0 when every transcript passes; 1 when any pinned expectation or property fails;
2 for bad usage or bad input: an unreadable or invalid transcript (the message names the file
and the line), an executor that cannot be loaded or cannot run a transcript's query, an engine
of your own (``--executor python:MODULE:ATTR``, ``--executor-cmd COMMAND``) that breaks the
protocol of :mod:`eowc.verify.external`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from eowc.semantics.errors import EowcError
from eowc.verify.cases import Executor
from eowc.verify.cli.verify_command import executor_options, load_executor
from eowc.verify.properties import Violation
from eowc.verify.transcripts import PINNED_VS_REFERENCE, Transcript, load_transcript
from eowc.verify.transcripts import replay as replay_one


def transcript_files(paths: tuple[str, ...]) -> list[str]:
    """The transcript files named by ``paths``: a file itself, a folder its ``*.yaml`` files in
    name order. A UsageError for a folder without any."""
    files: list[str] = []
    for path in paths:
        if Path(path).is_dir():
            found = sorted(str(p) for p in Path(path).glob("*.yaml") if p.is_file())
            if not found:
                raise click.UsageError(f"{path}: the folder holds no *.yaml transcript")
            files.extend(found)
        else:
            files.append(path)
    return files


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def _result(violations: list[Violation]) -> str:
    if not violations:
        return "pass"
    if any(v.prop == PINNED_VS_REFERENCE for v in violations):
        return "FAIL (semantics changed)"
    return "FAIL"


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="FILE_OR_DIR...",
                type=click.Path(exists=True))
@executor_options
@click.option("--master", default="local[2]", show_default=True,
              help="--executor spark/spark-native: the Spark master URL.")
def replay(paths: tuple[str, ...], executor_name: str | None, executor_cmd: str | None,
           epoch_timeout: str | None, master: str) -> None:
    """Replay transcripts (YAML, docs/transcripts.md) against an executor: the pinned output
    epoch by epoch, and every property of verify/properties.py.

    FILE_OR_DIR is a transcript or a folder of them (its *.yaml files). Exit code 0 when all
    pass, 1 when any fails, 2 for bad usage or bad input.
    """
    transcripts: list[tuple[str, Transcript]] = []
    bad = []
    for path in transcript_files(paths):
        try:
            transcripts.append((path, load_transcript(path)))
        except EowcError as error:
            bad.append(str(error))
    if bad:
        for message in bad:
            click.echo(f"eowc: error: {message}", err=True)
        sys.exit(2)
    executor: Executor = load_executor(executor_name, executor_cmd, master, epoch_timeout,
                                       "replay")
    executor_name = executor.name
    table = Table(title=f"eowc replay: {len(transcripts)} transcript(s) on {executor_name}")
    table.add_column("transcript", overflow="fold", max_width=48)
    table.add_column("executor", overflow="fold", max_width=24)
    table.add_column("result", no_wrap=True)
    table.add_column("first violation", overflow="fold", min_width=36, ratio=1)
    failed: list[tuple[str, list[Violation]]] = []
    errors: list[str] = []
    for path, transcript in transcripts:
        if executor_name.startswith("spark") and transcript.case.ties == "row-id":
            why = (f"--executor {executor_name} breaks ties in the deterministic order only, the "
                   f"transcript pins ties: row-id")
            errors.append(f"{path}: {executor_name} cannot run the transcript: {why}")
            table.add_row(_shown(path), executor_name, "ERROR", why)
            continue
        try:
            violations = replay_one(transcript, executor)
        except (EowcError, ValueError) as error:  # the executor cannot run this query
            errors.append(f"{path}: {executor_name} cannot run the transcript: {error}")
            table.add_row(_shown(path), executor_name, "ERROR", str(error))
            continue
        table.add_row(_shown(path), executor_name, _result(violations),
                      str(violations[0]) if violations else "")
        if violations:
            failed.append((path, violations))
    Console(width=None if sys.stdout.isatty() else 140).print(table)  # a file: 140, not 80
    for path, violations in failed:
        click.echo(f"{path}:")
        for violation in violations:
            click.echo(f"  {violation}")
    passed = len(transcripts) - len(failed) - len(errors)
    click.echo(f"{passed} passed, {len(failed)} failed, {len(errors)} could not run")
    for message in errors:
        click.echo(f"eowc: error: {message}", err=True)
    sys.exit(2 if errors else 1 if failed else 0)
