"""The option of the commands that read a query script: which of its views to run."""

from __future__ import annotations

from collections.abc import Callable

import click

VIEW_HELP = ("Run the view called NAME of the script (CREATE [MATERIALIZED] VIEW NAME AS ...) "
             "instead of its last statement.")


def view_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--view NAME``: the view of the script to run (default: its last view or query)."""
    return click.option("--view", metavar="NAME", default=None, help=VIEW_HELP)(command)
