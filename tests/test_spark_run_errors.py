"""``eowc run --engine spark`` fails with a clear message (``eowc: error: ...`` naming the path or
setting at fault, exit code 2, nothing on stdout, no traceback) and without starting Spark when:

- Java is missing or older than 17 (a fake ``JAVA_HOME`` or a fake ``java`` on ``PATH``, in a
  subprocess, since the check reads the process environment);
- ``--workdir`` holds the checkpoint of another run (other SQL text, convention or events file,
  or an events file changed since), or a checkpoint without the fingerprint ``eowc-run.json``;
- the arrival log cannot be read or has a bad line.

None of these starts a JVM; the corrupted-checkpoint cases, which need Spark, are in
``tests/spark/test_checkpoint_errors.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from eowc.executors.spark import runner
from eowc.executors.spark.workdir import FINGERPRINT_FILE, claim_workdir, run_fingerprint, spark_message
from eowc.semantics.errors import RunError
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n")
SORT = SOURCE + "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE;\n"
COUNT = SOURCE + ("SELECT window_start, count(*) AS n FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) "
                  "GROUP BY window_start EMIT ON WINDOW CLOSE;\n")
EVENT = '{"table": "bids", "row": {"auction": 1, "price": 2, "ts": "2024-01-01 00:00:01"}}\n'


@pytest.fixture
def case(tmp_path: Path) -> tuple[str, str]:
    """A query (the sort) and a two-epoch arrival log."""
    query = tmp_path / "q.sql"
    query.write_text(SORT, encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.write_text(EVENT + '{"barrier": true}\n' + EVENT, encoding="utf-8")
    return str(query), str(events)


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make starting Spark from the runner fail the test: returns the list of attempts."""
    attempts: list[str] = []

    def refuse(master: str = "local[2]", *args: object, **kwargs: object) -> None:
        attempts.append(master)
        raise AssertionError("Spark was started")

    monkeypatch.setattr(runner, "spark_session", refuse)
    monkeypatch.setattr(runner, "open_spark", refuse, raising=False)
    return attempts


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args])


def assert_clean_failure(stdout: str, stderr: str, code: int, *fragments: str) -> None:
    """Exit code 2, nothing on stdout, one ``eowc: error:`` line holding every fragment."""
    assert code == 2, stderr
    assert stdout == ""
    assert stderr.startswith("eowc: error: "), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in stderr, (fragment, stderr)


# --- Java ---------------------------------------------------------------------------------


def spark_run_with(env: dict[str, str], case: tuple[str, str]) -> subprocess.CompletedProcess[str]:
    """``eowc run --engine spark`` in a subprocess (from the project root) with ``env``."""
    return subprocess.run([sys.executable, "-m", "eowc.verify.cli.main", "run", *case, "--engine", "spark"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def fake_java(directory: Path, version: str) -> Path:
    """A ``java`` script in ``directory`` that answers ``-version`` like a JDK ``version``."""
    directory.mkdir(parents=True, exist_ok=True)
    java = directory / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2019-01-15\' >&2\n',
                    encoding="utf-8")
    java.chmod(0o755)
    return java


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PATH")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_java_home_without_java(case: tuple[str, str], tmp_path: Path) -> None:
    jdk = tmp_path / "not-a-jdk"
    jdk.mkdir()
    done = spark_run_with({**base_env(), "JAVA_HOME": str(jdk), "PATH": os.environ["PATH"]}, case)
    assert_clean_failure(done.stdout, done.stderr, done.returncode, "cannot start Spark",
                         f"JAVA_HOME is set to {str(jdk)!r}", f"{jdk}/bin/java")


def test_no_java_on_path(case: tuple[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = spark_run_with({**base_env(), "PATH": str(empty)}, case)
    assert_clean_failure(done.stdout, done.stderr, done.returncode,
                         "JAVA_HOME is not set and there is no `java` on PATH")


def test_java_11_on_path(case: tuple[str, str], tmp_path: Path) -> None:
    java = fake_java(tmp_path / "bin", "11.0.2")
    done = spark_run_with({**base_env(), "PATH": str(java.parent)}, case)
    assert_clean_failure(done.stdout, done.stderr, done.returncode, f"{str(java)!r} is Java 11",
                         "Java 17 or newer")


def test_java_11_in_java_home(case: tuple[str, str], tmp_path: Path) -> None:
    java = fake_java(tmp_path / "jdk-11" / "bin", "11.0.2")
    done = spark_run_with({**base_env(), "JAVA_HOME": str(tmp_path / "jdk-11"),
                           "PATH": os.environ["PATH"]}, case)
    assert_clean_failure(done.stdout, done.stderr, done.returncode, f"{str(java)!r} is Java 11")


# --- A work directory of another run --------------------------------------------------------


def claimed(workdir: Path, query: str, events: str, convention: Convention) -> Path:
    """``workdir`` as a run of ``query`` would leave it: a fingerprint and a checkpoint."""
    claim_workdir(workdir, query, events, convention)
    (workdir / "checkpoint" / "offsets").mkdir(parents=True)
    (workdir / "checkpoint" / "metadata").write_text('{"id":"x"}', encoding="utf-8")
    return workdir


def test_the_same_run_resumes(case: tuple[str, str], tmp_path: Path) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.SPARK)
    before = (workdir / FINGERPRINT_FILE).read_text(encoding="utf-8")
    claim_workdir(workdir, *case, Convention.SPARK)  # no error
    assert (workdir / FINGERPRINT_FILE).read_text(encoding="utf-8") == before
    assert json.loads(before) == run_fingerprint(*case, Convention.SPARK)


def test_another_query(case: tuple[str, str], tmp_path: Path, no_spark: list[str]) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.RISINGWAVE)
    other = tmp_path / "other.sql"
    other.write_text(COUNT, encoding="utf-8")
    result = invoke(str(other), case[1], "--engine", "spark", "--workdir", str(workdir))
    assert_clean_failure(result.stdout, result.stderr, result.exit_code, f"{workdir}: ",
                         "holds the checkpoint of another run", "SQL text is not this query's",
                         "remove the directory to start over")
    assert no_spark == []


def test_another_convention(case: tuple[str, str], tmp_path: Path, no_spark: list[str]) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.RISINGWAVE)
    result = invoke(*case, "--engine", "spark", "--convention", "flink", "--workdir", str(workdir))
    assert_clean_failure(result.stdout, result.stderr, result.exit_code, str(workdir),
                         "'risingwave' convention, not 'flink'")
    assert no_spark == []


def test_another_events_file(case: tuple[str, str], tmp_path: Path, no_spark: list[str]) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.RISINGWAVE)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(Path(case[1]).read_text(encoding="utf-8"), encoding="utf-8")
    result = invoke(case[0], str(copy), "--engine", "spark", "--workdir", str(workdir))
    assert_clean_failure(result.stdout, result.stderr, result.exit_code, str(workdir),
                         f"it read the events file {case[1]!r}, not {str(copy)!r}")
    assert no_spark == []


def test_a_changed_events_file(case: tuple[str, str], tmp_path: Path, no_spark: list[str]) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.RISINGWAVE)
    with open(case[1], "a", encoding="utf-8") as handle:
        handle.write(EVENT)
    result = invoke(*case, "--engine", "spark", "--workdir", str(workdir))
    assert_clean_failure(result.stdout, result.stderr, result.exit_code,
                         f"the events file {case[1]!r} has changed since")
    assert no_spark == []


def test_a_checkpoint_without_fingerprint(case: tuple[str, str], tmp_path: Path,
                                          no_spark: list[str]) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.RISINGWAVE)
    (workdir / FINGERPRINT_FILE).unlink()
    result = invoke(*case, "--engine", "spark", "--workdir", str(workdir))
    assert_clean_failure(result.stdout, result.stderr, result.exit_code, f"{workdir}: ",
                         f"no {FINGERPRINT_FILE}", "use another --workdir")
    assert no_spark == []


def test_an_unreadable_fingerprint(case: tuple[str, str], tmp_path: Path,
                                   no_spark: list[str]) -> None:
    workdir = claimed(tmp_path / "w", *case, Convention.RISINGWAVE)
    (workdir / FINGERPRINT_FILE).write_text("{not json", encoding="utf-8")
    result = invoke(*case, "--engine", "spark", "--workdir", str(workdir))
    assert_clean_failure(result.stdout, result.stderr, result.exit_code,
                         f"{workdir / FINGERPRINT_FILE}: cannot read the fingerprint")
    assert no_spark == []


def test_a_workdir_that_is_a_file(case: tuple[str, str], tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(RunError, match="is not a directory"):
        claim_workdir(path, *case, Convention.SPARK)


def test_an_empty_or_fingerprinted_but_unused_workdir_is_claimed(case: tuple[str, str],
                                                                 tmp_path: Path) -> None:
    """No checkpoint and no output: nothing to resume, so the directory is (re)claimed."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    claim_workdir(workdir, *case, Convention.RISINGWAVE)
    claim_workdir(workdir, *case, Convention.FLINK)
    assert json.loads((workdir / FINGERPRINT_FILE).read_text())["convention"] == "flink"


# --- The arrival log --------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "fragment"), [
    (b'{"table": "bids", "row": {"auction": 1\n', ":1: malformed JSON"),
    (EVENT.encode() + b'{"table": "bids", "row": {"auction": "\xff"}}\n', ":2: not UTF-8 text"),
    (EVENT.encode() + b'{"table": "bid", "row": {}}\n', ":2: unknown table 'bid'"),
    (b'{"barrier": true}\n[1, 2]\n', ":2: expected a JSON object"),
], ids=["malformed-json", "bad-utf8", "unknown-table", "not-an-object"])
def test_a_bad_line(case: tuple[str, str], tmp_path: Path, no_spark: list[str], content: bytes,
                    fragment: str) -> None:
    events = tmp_path / "bad.jsonl"
    events.write_bytes(content)
    result = invoke(case[0], str(events), "--engine", "spark")
    assert_clean_failure(result.stdout, result.stderr, result.exit_code, f"{events}{fragment}")
    assert no_spark == []


def test_a_missing_log(case: tuple[str, str], tmp_path: Path, no_spark: list[str]) -> None:
    missing = tmp_path / "missing.jsonl"
    result = invoke(case[0], str(missing), "--engine", "spark")
    assert_clean_failure(result.stdout, result.stderr, result.exit_code,
                         f"{missing}: cannot read the file: No such file or directory")
    assert no_spark == []


def test_a_directory_as_log(case: tuple[str, str], tmp_path: Path, no_spark: list[str]) -> None:
    """Refused by the argument's type (a click usage error): exit 2, the path, no Spark."""
    result = invoke(case[0], str(tmp_path), "--engine", "spark")
    assert result.exit_code == 2
    assert result.stdout == "" or "is a directory" in result.output
    assert f"'{tmp_path}' is a directory" in result.output
    assert no_spark == []


def test_an_unreadable_log(case: tuple[str, str], no_spark: list[str]) -> None:
    """A path the system cannot open (its parent is a file: unreadable even for root, who
    reads files without read permission)."""
    events = f"{case[1]}/events.jsonl"
    result = invoke(case[0], events, "--engine", "spark")
    assert_clean_failure(result.stdout, result.stderr, result.exit_code,
                         f"{events}: cannot read the file: Not a directory")
    assert no_spark == []


# --- Spark's message, in one line ------------------------------------------------------------


@pytest.mark.parametrize(("text", "line"), [
    ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Unexpected end-of-input"
     "\n\tat x", "Unexpected end-of-input"),
    ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
     "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred. Return Message: Traceback (most "
     "recent call last):\n  File \"x.py\"\norg.apache.spark.SparkException: "
     "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.  SQLSTATE: "
     "58030\n", "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state. "
     "SQLSTATE: 58030"),
    ("", "Exception"),
])
def test_spark_message_is_the_line_that_says_why(text: str, line: str) -> None:
    assert spark_message(Exception(text)) == line
