"""The documentation shows real output: every command pasted in docs/*.md still prints what the
page says (docs/refresh_outputs.py --check), and every picture the pages link exists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_every_pasted_command_output_is_current() -> None:
    done = subprocess.run([sys.executable, str(DOCS / "refresh_outputs.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"stale pages (run python3 docs/refresh_outputs.py):\n{done.stdout}"


def test_an_unknown_argument_rewrites_no_page() -> None:
    before = {page: page.stat().st_mtime_ns for page in DOCS.rglob("*.md")}
    done = subprocess.run([sys.executable, str(DOCS / "refresh_outputs.py"), "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stderr.startswith("usage: ") and done.stdout == ""
    assert {page: page.stat().st_mtime_ns for page in DOCS.rglob("*.md")} == before


#: Plain ``eowc`` commands: output on stdout, a refusal on stderr with exit 2, a usage error.
FORKED = [["run", "docs/examples/tumble.sql", "docs/examples/bids.jsonl", "--close"],
          ["run", "docs/examples/bad_group_key.sql", "docs/examples/sort.jsonl"],
          ["run", "docs/examples/tumble.sql", "docs/examples/bids.jsonl", "--no-such-option"],
          ["explain", "docs/examples/tumble.sql"]]


@pytest.mark.parametrize("args", FORKED, ids=[" ".join(args) for args in FORKED])
def test_a_forked_eowc_command_prints_what_a_new_eowc_process_prints(args: list[str]) -> None:
    """refresh_outputs.py runs a plain ``eowc`` command in a child forked from itself: the
    child prints exactly what the installed ``eowc`` script prints, stdout and stderr in one
    stream in the same order."""
    script = shutil.which("eowc", path=os.pathsep.join([sysconfig.get_path("scripts"),
                                                        os.environ.get("PATH", "")]))
    assert script is not None, "the eowc console script is not installed (pip install -e .)"
    new = subprocess.run([script, *args], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
    forked = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, 'docs'); import refresh_outputs; "
         "sys.stdout.write(refresh_outputs.eowc_output(sys.argv[1:]))", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert new.stdout and forked.stderr == ""
    assert forked.stdout == new.stdout


def test_every_linked_picture_and_example_exists() -> None:
    links = [(page, target) for page in DOCS.rglob("*.md")
             for target in re.findall(r"\]\(([^)#\s]+\.(?:png|sql|jsonl))\)", page.read_text("utf-8"))]
    assert links, "the pages link no pictures or examples"
    missing = [f"{page.relative_to(ROOT)} -> {target}" for page, target in links
               if not (page.parent / target).resolve().exists()]
    assert missing == []
