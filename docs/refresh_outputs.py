"""Re-run every command shown in docs/*.md and paste its real output.

A command is marked in the Markdown by a comment line ``<!-- run: COMMAND -->``; the fenced
``console`` block that follows it is replaced by ``$ COMMAND`` and the command's output
(stdout and stderr, as a terminal shows them), run from the repository root. A plain ``eowc``
command runs in a child forked from this process once it has imported ``eowc``, as a new
``eowc`` process would run it, without the second a new process spends starting.

Usage: ``python3 docs/refresh_outputs.py`` rewrites the pages; ``--check`` rewrites nothing
and exits 1 if any page's pasted output differs from what the commands print now.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import NoReturn

from eowc.verify.cli.main import SUBCOMMANDS
from eowc.verify.cli.main import main as eowc

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
MARKER = re.compile(r"^<!-- run: (?P<command>[^\n]+?) -->\n(?:```console\n(?:[^`][^\n]*\n|\n)*```\n)?",
                    re.M)


#: ``eowc`` and its arguments, nothing the shell would do more with (pipes, lists,
#: redirections, expansions).
PLAIN_EOWC = re.compile(r"eowc(?: [^|&;<>$`()\\\n]*)?")


#: The shell's environment: this Python's scripts first on the path, so that ``eowc`` in a
#: pipe is the one :func:`eowc_output` runs.
_ENVIRONMENT = {**os.environ, "PATH": os.pathsep.join(
    [sysconfig.get_path("scripts"), os.environ.get("PATH", "")])}


def output_of(command: str) -> str:
    """``$ command`` and what it prints (stdout and stderr, one stream), run in the
    repository root: a plain ``eowc`` command by :func:`eowc_output`, any other by the shell."""
    if PLAIN_EOWC.fullmatch(command):
        text = eowc_output(shlex.split(command)[1:])
    else:
        text = subprocess.run(command, shell=True, cwd=ROOT, env=_ENVIRONMENT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              check=False).stdout
    text = text.rstrip("\n")
    return f"$ {command}\n{text}" if text else f"$ {command}"


def eowc_output(args: list[str]) -> str:
    """What ``eowc ARGS`` prints, run as a new ``eowc`` process would run it: in a child
    forked from this process once it has imported the command line (a new process spends most
    of its second importing it), its standard output and error as Python sets them up for a
    pipe, both into one pipe."""
    _import_the_subcommands()
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        _run_eowc_here(args, write)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        output = pipe.read()
    os.waitpid(child, 0)
    return output.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _run_eowc_here(args: list[str], pipe: int) -> NoReturn:
    """In a forked child: ``eowc ARGS`` from the repository root, standard output and error
    into ``pipe`` (buffered and line-buffered, as a new process has them for a pipe); then exit
    (nobody reads the status: the pages show output, and a command whose status matters
    echoes it through the shell)."""
    os.dup2(pipe, 1)
    os.dup2(pipe, 2)
    os.close(pipe)
    os.chdir(ROOT)
    sys.argv = ["eowc", *args]
    with (open(1, "w", encoding="utf-8", closefd=False) as sys.stdout,
          open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace",
               closefd=False) as sys.stderr):
        try:
            eowc.main(args, prog_name="eowc")
        except SystemExit:
            pass
        except BaseException:
            traceback.print_exc()
    os._exit(0)


@functools.cache
def _import_the_subcommands() -> None:
    """Import every ``eowc`` subcommand's module that imports (one that needs an extra that
    is not installed fails in the child, with the message a new process would print)."""
    for target in SUBCOMMANDS.values():
        with contextlib.suppress(ImportError):
            importlib.import_module(target.partition(":")[0])


def refresh(text: str) -> str:
    """``text`` with every marked block replaced by the current output of its command."""
    def block(match: re.Match[str]) -> str:
        command = match["command"]
        return f"<!-- run: {command} -->\n```console\n{output_of(command)}\n```\n"
    return MARKER.sub(block, text)


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):  # anything else, --help too, must not rewrite the pages
        print("usage: python3 docs/refresh_outputs.py [--check]  (without --check it rewrites "
              "the pages)", file=sys.stderr)
        return 2
    check = argv == ["--check"]
    stale = []
    for page in sorted(DOCS.rglob("*.md")):
        old = page.read_text(encoding="utf-8")
        new = refresh(old)
        if new != old:
            stale.append(page.relative_to(ROOT))
            if not check:
                page.write_text(new, encoding="utf-8")
    for page in stale:
        print(f"{'stale' if check else 'updated'}: {page}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
