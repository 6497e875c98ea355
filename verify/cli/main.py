"""The ``eowc`` command line: a group of subcommands, each in a module of its own, imported
when it is run (``eowc run`` does not load Hypothesis and the checks of ``eowc verify``, and
``eowc --help`` lists them all)."""

from __future__ import annotations

import importlib
import sys
from typing import Any, NoReturn

import click

from eowc.verify.cli.extras import missing_extra

#: Each subcommand: its name -> ``module:attribute`` of its click command.
SUBCOMMANDS = {
    "demo": "eowc.verify.cli.run_command:demo",
    "engine": "eowc.verify.cli.engine_command:engine",
    "explain": "eowc.verify.cli.explain_command:explain",
    "prove": "eowc.verify.cli.prove_command:prove_command",
    "replay": "eowc.verify.cli.replay_command:replay",
    "run": "eowc.verify.cli.run_command:run",
    "verify": "eowc.verify.cli.verify_command:verify",
}


def fail(error: Exception | str) -> NoReturn:
    """End the command with the error in one line, ``eowc: error: ...``, and exit code 2."""
    click.echo(f"eowc: error: {error}", err=True)
    sys.exit(2)


class EowcGroup(click.Group):
    """The ``eowc`` group: its subcommands are :data:`SUBCOMMANDS`, loaded on first use. A
    command that needs an optional extra that is not installed fails with one line naming the
    extra to install (:mod:`eowc.verify.cli.extras`), exit code 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUBCOMMANDS:
            return None
        module, _, attribute = SUBCOMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command) and command.name == cmd_name, cmd_name
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ImportError as error:
            message = missing_extra(error)
            if message is None:
                raise
            fail(message)


@click.group(cls=EowcGroup, invoke_without_command=True)
@click.pass_context
def main(ctx: click.Context) -> None:
    """eowc: the reference semantics of EMIT ON WINDOW CLOSE streaming SQL."""
    if ctx.invoked_subcommand is None:
        demo = main.get_command(ctx, "demo")
        assert demo is not None
        ctx.invoke(demo)


if __name__ == "__main__":  # pragma: no cover
    main()
