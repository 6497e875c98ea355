"""Output files named by options (``--late-out``, ``--out``, ``--report``, ...): checked when the
command line is read, before any work starts, so that a path that cannot be written stops
the command with a message naming the option and the path, never a traceback after part of
the output. eowc does not create missing directories: a typo in a path is reported, not
turned into a new directory tree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click


class OutputFile(click.Path):
    """A file the command will write: its directory must exist and be writable, and the path
    must not be a directory (an existing file is overwritten)."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, writable=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = super().convert(value, param, ctx)
        problem = unwritable(Path(os.fsdecode(path)))
        if problem:
            self.fail(f"{click.format_filename(path)}: {problem}", param, ctx)
        return path


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written as a new or replaced file, or None."""
    directory = path.parent
    if not directory.exists():
        return f"the directory {directory} does not exist (eowc does not create it)"
    if not directory.is_dir():
        return f"{directory} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write in the directory {directory}"
    return None
