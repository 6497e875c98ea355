"""Streams of any length on Spark: a 2,000-epoch log (4,000 micro-batches with the settle
batches, forty times Spark's ``spark.sql.streaming.minBatchesToRetain`` of 100, left at its
default) through ``eowc run --engine spark`` and through ``eowc verify``'s Spark executor with a
restart after epoch 150 (batch 301: Spark has purged the offset and commit files of batches 0
to 200 when the run starts again). Before the sink recorded each batch's epoch, both failed
with "the checkpoint is corrupted or unreadable: 0" once a run passed about 50 epochs.

A run costs about 0.4 to 0.55 s per micro-batch on two cores (docs/executors.md, "Long
streams"), so each test takes 25 to 35 minutes: they run only with ``EOWC_LONG_SPARK=1``. The
purge itself is exercised on short logs in every run of the suite (minBatchesToRetain lowered:
test_source_and_sink.py, test_checkpoint_errors.py, test_crash.py).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eowc.executors.spark import runner
from eowc.executors.spark.sink import offset_log
from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.executors import Case
from eowc.verify.properties import check_run
from eowc.verify.spark import SparkExecutor

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("EOWC_LONG_SPARK") != "1",
    reason="a 2,000-epoch Spark run takes 25 to 35 minutes: set EOWC_LONG_SPARK=1")]

#: The log's length; ``EOWC_LONG_SPARK_EPOCHS`` sets another (at least 160, for the restart).
EPOCHS = int(os.environ.get("EOWC_LONG_SPARK_EPOCHS", "2000"))
#: Restart after this epoch: batch 2 * 150 + 1 = 301 is the last of the first run.
RESTART_AFTER = 150
CONVENTION = Convention.RISINGWAVE
SCRIPT = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
SELECT auction, window_start, window_end, count(*) AS n, sum(price) AS s
FROM TUMBLE(bids, ts, INTERVAL '10' SECOND)
GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE;
"""


def long_log_lines(epochs: int, seed: int = 16) -> list[str]:
    """``epochs`` epochs, one second of event time apart: 1 to 3 bids of 4 auctions each, up to
    8 s behind the epoch's clock (so some are later than the 5 s delay), and every seventh epoch
    empty; the windows of 10 s close one after another all along the log."""
    rng = random.Random(seed)
    lines: list[str] = []
    for epoch in range(epochs):
        if epoch % 7 != 3:
            for _ in range(rng.randint(1, 3)):
                ms = max(0, epoch * 1000 - rng.randint(0, 8000))
                ts = f"2024-01-01 {ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:" \
                     f"{ms // 1000 % 60:02d}.{ms % 1000:03d}"
                lines.append(json.dumps({"table": "bids", "row": {
                    "auction": rng.randint(1, 4), "price": rng.randint(1, 100), "ts": ts}}))
        lines.append('{"barrier": true}')
    return lines


@pytest.fixture(scope="module")
def long_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, ArrivalLog]:
    """The query and the 2,000-epoch log on disk, and the parsed log."""
    directory = tmp_path_factory.mktemp("long")
    query, events = directory / "query.sql", directory / "events.jsonl"
    query.write_text(SCRIPT, encoding="utf-8")
    events.write_text("\n".join(long_log_lines(EPOCHS)) + "\n", encoding="utf-8")
    log = load_arrival_log(str(events), parse_script(SCRIPT).sources).log
    assert len(log.epochs) == EPOCHS
    return str(query), str(events), log


def per_epoch(lines: list[str]) -> dict[int, list[dict[str, Any]]]:
    """``eowc run --with-epoch`` output lines grouped by epoch, in output order."""
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        row = json.loads(line)
        found[row.pop("_epoch")].append(row)
    return dict(found)


def test_eowc_run_on_spark_over_2000_epochs(spark, long_case: tuple[str, str, ArrivalLog],
                                            tmp_path: Path) -> None:
    """The command line's output with --with-epoch is the reference's, epoch by epoch."""
    query, events, _ = long_case
    workdir = tmp_path / "w"
    reference = CliRunner().invoke(main, ["run", query, events, "--with-epoch",
                                          "--convention", CONVENTION.value])
    assert reference.exit_code == 0, reference.output
    started = time.monotonic()
    result = CliRunner().invoke(main, ["run", query, events, "--with-epoch", "--engine", "spark",
                                       "--convention", CONVENTION.value, "--workdir", str(workdir)])
    seconds = time.monotonic() - started
    assert result.exit_code == 0, result.stderr
    batches = 2 * EPOCHS
    print(f"eowc run --engine spark, {EPOCHS} epochs ({batches} batches): {seconds:.0f} s, "
          f"{1000 * seconds / batches:.0f} ms per batch")
    expected = per_epoch(reference.stdout.splitlines())
    # a 10 s window closes about every tenth epoch, all along the log
    assert len(expected) > EPOCHS // 20 and max(expected) > EPOCHS - 20
    assert "late rows excluded" in reference.stderr  # and the late check is exercised
    assert per_epoch(result.stdout.splitlines()) == expected
    assert result.stderr.splitlines()[-1] == reference.stderr.splitlines()[-1]  # the same late rows
    assert min(e.batch_id for e in offset_log(workdir / "checkpoint")) > batches - 110  # purged


def test_verify_spark_over_2000_epochs_with_a_restart(
        spark, long_case: tuple[str, str, ArrivalLog], monkeypatch: pytest.MonkeyPatch) -> None:
    """``eowc verify --executor spark``'s run: append-only, exact and timely, ordered against
    the reference, restarted after epoch 150 from a checkpoint holding only the offsets of the
    last 100 batches up to 301."""
    _, _, log = long_case
    first_offsets: list[int] = []
    start_query = runner.start_query

    def recording(*args: Any, **kwargs: Any) -> None:
        start_query(*args, **kwargs)
        first_offsets.append(min(e.batch_id for e in offset_log(args[4] / "checkpoint")))

    monkeypatch.setattr(runner, "start_query", recording)
    case = Case(SCRIPT, CONVENTION, log, restart_after=(RESTART_AFTER,))
    started = time.monotonic()
    assert check_run(SparkExecutor(), case) == []
    print(f"verify's SparkExecutor, {EPOCHS} epochs with a restart: "
          f"{time.monotonic() - started:.0f} s")
    # The restart read a checkpoint whose offsets 0 to 200 (at least) Spark had purged.
    assert len(first_offsets) == 2 and first_offsets[0] > 200
    assert list(run_eowc(case.query, log, CONVENTION)), "it would prove nothing"
