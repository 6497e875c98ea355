"""``eowc`` installed without its optional extras (pyproject.toml: spark, oracle, proofs, graph).

The command line runs in a subprocess whose import system refuses every package of the extras
(a ``sys.meta_path`` finder raising ModuleNotFoundError, as an uninstalled package does). A
command that needs one fails with one line naming the extra to install and exit code 2, never
a traceback; what needs none (a reference run, ``explain`` as text, ``verify`` on the in-process
executors) works as with everything installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eowc.verify.cli.extras import EXTRA_OF_PACKAGE
from eowc.verify.cli.main import SUBCOMMANDS

#: Runs ``eowc`` (its arguments) with every package of the extras refused.
WITHOUT_EXTRAS = f"""
import sys

BLOCKED = {sorted(EXTRA_OF_PACKAGE)!r}


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
from eowc.verify.cli.main import main

main(sys.argv[1:], prog_name="eowc")
"""

QUERY = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT window_start, window_end, count(*) AS n, sum(price) AS s
FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
"""
#: Three epochs: bids at 1 s, 3 s and 13 s. The watermark (max ts - 2 s) reaches 11 s after the
#: third, so the window [0 s, 10 s) closes then with the first two bids: n = 2, s = 5 + 7.
EVENTS = [{"table": "bids", "row": {"auction": 1, "price": 5, "ts": "2023-01-01 00:00:01"}},
          {"barrier": True},
          {"table": "bids", "row": {"auction": 1, "price": 7, "ts": "2023-01-01 00:00:03"}},
          {"barrier": True},
          {"table": "bids", "row": {"auction": 1, "price": 1, "ts": "2023-01-01 00:00:13"}}]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("extras")
    query, events = folder / "q.sql", folder / "events.jsonl"
    query.write_text(QUERY, encoding="utf-8")
    events.write_text("".join(json.dumps(e) + "\n" for e in EVENTS), encoding="utf-8")
    return str(query), str(events)


def eowc_without_extras(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *args], capture_output=True,
                          text=True, timeout=300)


def test_the_extras_are_refused() -> None:
    """The harness itself: under it, importing z3 fails as if it were not installed."""
    code = WITHOUT_EXTRAS.replace("from eowc.verify.cli.main import main\n\nmain(sys.argv[1:], "
                                  "prog_name=\"eowc\")", "import z3")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "No module named 'z3'" in done.stderr


def test_every_subcommand_loads_without_an_extra() -> None:
    """``eowc --help`` imports every subcommand's module (:data:`SUBCOMMANDS`, loaded lazily,
    so the layer test of imports does not see them): none needs an extra to be imported."""
    done = eowc_without_extras("--help")
    assert done.returncode == 0, done.stderr
    listed = done.stdout.partition("Commands:")[2].split()
    assert set(SUBCOMMANDS) <= set(listed), done.stdout


def test_a_reference_run_needs_no_extra(files: tuple[str, str]) -> None:
    done = eowc_without_extras("run", *files, "--with-epoch")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"window_start": "2023-01-01 00:00:00", "window_end": "2023-01-01 00:00:10", "n": 2,
         "s": 12, "_epoch": 2}]


def test_explain_as_text_needs_no_extra(files: tuple[str, str]) -> None:
    done = eowc_without_extras("explain", files[0])
    assert done.returncode == 0, done.stderr
    assert "valid under EMIT ON WINDOW CLOSE" in done.stdout
    assert "window_end = trunc(W, 10s) + 10s" in done.stdout


def test_verify_on_the_in_process_executors_needs_no_extra(files: tuple[str, str]) -> None:
    done = eowc_without_extras("verify", files[0], "--cases", "5", "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "every property held (5 cases)" in done.stdout + done.stderr


@pytest.mark.parametrize("command, package, extra", [
    (["prove"], "z3", "proofs"),
    (["prove", "{query}"], "z3", "proofs"),
    (["run", "{query}", "{events}", "--oracle", "duckdb"], "duckdb", "oracle"),
    (["run", "{query}", "{events}", "--oracle", "spark"], "pyspark", "spark"),
    (["run", "{query}", "{events}", "--engine", "spark"], "pyspark", "spark"),
    (["run", "{query}", "{events}", "--engine", "spark-native"], None, "spark"),
    (["explain", "{query}", "--format", "png", "--out", "{png}"], "matplotlib", "graph"),
    (["explain", "{query}", "--format", "dot"], "pydot", "graph"),
    (["verify", "{query}", "--executor", "spark", "--cases", "1"], "pyspark", "spark"),
])
def test_a_command_that_needs_a_missing_extra_names_it(
        files: tuple[str, str], tmp_path: Path, command: list[str], package: str | None,
        extra: str) -> None:
    query, events = files
    args = [a.format(query=query, events=events, png=tmp_path / "q.png") for a in command]
    done = eowc_without_extras(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'eowc[{extra}]'" in lines[0]
    if package is not None:  # spark-native: whichever of Spark's packages is imported first
        assert f"needs {package}," in lines[0]
    assert not (tmp_path / "q.png").exists()
