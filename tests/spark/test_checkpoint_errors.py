"""A damaged checkpoint is reported, not a stack trace: a run stopped after two epochs, its
checkpoint corrupted, then resumed with :func:`run_on_spark` (and with ``eowc run``) fails with
``RunError("<workdir>/checkpoint: the checkpoint is corrupted or unreadable: <Spark's first
line>; remove the directory to start over")``, and the shared Spark session keeps working. A
damaged batch file of the sink is reported as such. A checkpoint that is not damaged is never
called corrupted: not a fresh run's, not one whose early offset files Spark purged (or that are
garbage: nothing reads them).

Each corruption removes the file's ``.crc`` sibling (Hadoop's local file system checks it), so
that Spark's own reading of the file fails, as on a store without checksums.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from eowc.executors.spark.runner import run_on_spark, start_query
from eowc.executors.spark.session import session_setting
from eowc.executors.spark.sink import batch_file, offset_log
from eowc.executors.spark.workdir import FINGERPRINT_FILE, run_fingerprint, write_fingerprint
from eowc.semantics.errors import RunError
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from tests.spark.test_executors_on_spark import expected, log_of, write_case

CONVENTION = Convention.SPARK


def overwrite(path: Path, content: bytes) -> None:
    """Replace ``path``'s content and remove its checksum file ``.<name>.crc``."""
    path.write_bytes(content)
    path.with_name(f".{path.name}.crc").unlink(missing_ok=True)


def last(directory: Path, suffix: str = "") -> Path:
    """The file of ``directory`` with the highest version number (``<n><suffix>``)."""
    files = [p for p in directory.iterdir() if p.name.endswith(suffix)
             and p.name[: len(p.name) - len(suffix)].isdigit()]
    return max(files, key=lambda p: int(p.name[: len(p.name) - len(suffix)]))


def garbage_metadata(checkpoint: Path) -> None:
    overwrite(checkpoint / "metadata", b"\x00\x01 this is not JSON \xff")


def truncated_last_offsets(checkpoint: Path) -> None:
    path = last(checkpoint / "offsets")
    overwrite(path, path.read_bytes()[:5])


def garbage_state(checkpoint: Path) -> None:
    for partition in (checkpoint / "state" / "0").iterdir():
        if partition.name.isdigit():
            overwrite(last(partition, ".zip"), b"PK this is not a zip file")


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "garbage-metadata": garbage_metadata,
    "truncated-last-offsets": truncated_last_offsets,
    "garbage-state": garbage_state,
}


@pytest.fixture(scope="module")
def stopped_once(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a group_agg query, its events and its run stopped after 2 epochs
    (``w``): made once, copied by each test (:func:`stopped_run`)."""
    directory = tmp_path_factory.mktemp("stopped")
    query, events = write_case(directory, "group_agg")
    start_query(spark, query, events, CONVENTION, directory / "w", max_epochs=2)
    return directory


@pytest.fixture
def stopped_run(stopped_once: Path, tmp_path: Path) -> tuple[str, str, Path]:
    """A copy in ``tmp_path`` of the run stopped after 2 epochs, fingerprinted as the runner
    does (with the copy's events file), so that :func:`run_on_spark` resumes it."""
    shutil.copytree(stopped_once, tmp_path, dirs_exist_ok=True)
    query, events = str(tmp_path / "group_agg.sql"), str(tmp_path / "events.jsonl")
    workdir = tmp_path / "w"
    write_fingerprint(workdir, run_fingerprint(query, events, CONVENTION))
    return query, events, workdir


def assert_session_usable(spark) -> None:
    assert spark.streams.active == []
    assert spark.range(5).count() == 5


def test_an_intact_checkpoint_resumes(spark, stopped_run: tuple[str, str, Path]) -> None:
    query, events, workdir = stopped_run
    run = run_on_spark(query, events, log_of(query, events), CONVENTION, close=True,
                       workdir=str(workdir))
    assert run.emissions == expected(query, events, CONVENTION)[0]


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_corrupted_checkpoint_is_reported(spark, stopped_run: tuple[str, str, Path],
                                            corruption: str) -> None:
    query, events, workdir = stopped_run
    CORRUPTIONS[corruption](workdir / "checkpoint")
    with pytest.raises(RunError) as caught:
        run_on_spark(query, events, log_of(query, events), CONVENTION, close=True,
                     workdir=str(workdir))
    message = str(caught.value)
    print(f"{corruption}: {message}")
    assert message.startswith(f"{workdir / 'checkpoint'}: the checkpoint is corrupted or "
                              "unreadable: ")
    assert message.endswith("; remove the directory to start over")
    assert "\n" not in message
    assert "Traceback" not in message and "[STREAM_FAILED]" not in message
    assert_session_usable(spark)


def test_eowc_run_on_a_corrupted_checkpoint(spark, stopped_run: tuple[str, str, Path]) -> None:
    """The command line (in this process, on the shared session): exit code 2, one line."""
    query, events, workdir = stopped_run
    assert (workdir / FINGERPRINT_FILE).is_file()
    garbage_metadata(workdir / "checkpoint")
    result = CliRunner().invoke(main, ["run", query, events, "--engine", "spark", "--close",
                                       "--convention", CONVENTION.value, "--workdir", str(workdir)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"eowc: error: {workdir / 'checkpoint'}: the checkpoint is "
                                    "corrupted or unreadable: "), result.stderr
    assert_session_usable(spark)


def test_a_damaged_batch_file_is_reported(spark, stopped_run: tuple[str, str, Path]) -> None:
    query, events, workdir = stopped_run
    batch_file(workdir / "output", 1).write_text('{"_kind": "emit"}\n', encoding="utf-8")
    with pytest.raises(RunError) as caught:
        run_on_spark(query, events, log_of(query, events), CONVENTION, close=True,
                     workdir=str(workdir))
    message = str(caught.value)
    assert message.startswith(f"{workdir / 'output'}: the sink's output is damaged: "
                              f"{batch_file(workdir / 'output', 1)}:1: no batch record"), message
    assert "checkpoint is corrupted" not in message
    assert_session_usable(spark)


def test_early_offset_files_are_not_needed(spark, stopped_run: tuple[str, str, Path]) -> None:
    """Spark reads only the latest offset files when it resumes, and the runner reads none:
    garbage in the first one (as good as purged) does not stop the run."""
    query, events, workdir = stopped_run
    overwrite(workdir / "checkpoint" / "offsets" / "0", b"garbage")
    run = run_on_spark(query, events, log_of(query, events), CONVENTION, close=True,
                       workdir=str(workdir))
    assert run.emissions == expected(query, events, CONVENTION)[0]


def test_a_fresh_run_is_never_corrupted(spark, tmp_path: Path) -> None:
    """A fresh run whose early offset and commit files Spark purges (after 3 batches here, 100
    by default) reads its epochs from the sink's records: the reference's output, not "the
    checkpoint is corrupted" (what it said before the records, for any run of over 50
    epochs)."""
    query, events = write_case(tmp_path, "group_agg")
    workdir = tmp_path / "w"
    with session_setting(spark, "spark.sql.streaming.minBatchesToRetain", 3):
        run = run_on_spark(query, events, log_of(query, events), CONVENTION, close=True,
                           workdir=str(workdir))
    assert min(entry.batch_id for entry in offset_log(workdir / "checkpoint")) > 0  # purged
    out = expected(query, events, CONVENTION)[0]
    assert out and run.emissions == out
