"""The documentation shows real output: every command pasted in docs/*.md still prints what the
page says (docs/refresh_outputs.py --check), and every picture the pages link exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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


def test_every_linked_picture_and_example_exists() -> None:
    links = [(page, target) for page in DOCS.rglob("*.md")
             for target in re.findall(r"\]\(([^)#\s]+\.(?:png|sql|jsonl))\)", page.read_text("utf-8"))]
    assert links, "the pages link no pictures or examples"
    missing = [f"{page.relative_to(ROOT)} -> {target}" for page, target in links
               if not (page.parent / target).resolve().exists()]
    assert missing == []
