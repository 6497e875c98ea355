"""Re-run every command shown in docs/*.md and paste its real output.

A command is marked in the Markdown by a comment line ``<!-- run: COMMAND -->``; the fenced
``console`` block that follows it is replaced by ``$ COMMAND`` and the command's output
(stdout and stderr, as a terminal shows them), run from the repository root.

Usage: ``python3 docs/refresh_outputs.py`` rewrites the pages; ``--check`` rewrites nothing
and exits 1 if any page's pasted output differs from what the commands print now.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
MARKER = re.compile(r"^<!-- run: (?P<command>[^\n]+?) -->\n(?:```console\n(?:[^`][^\n]*\n|\n)*```\n)?",
                    re.M)


def output_of(command: str) -> str:
    """``$ command`` and what it prints, run by the shell in the repository root."""
    done = subprocess.run(command, shell=True, cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    text = done.stdout.rstrip("\n")
    return f"$ {command}\n{text}" if text else f"$ {command}"


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
