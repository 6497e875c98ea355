"""Make ``interval_LEFT/``: a LEFT interval join of 24 keys (tests/test_joins.py) on Spark,
stopped after 6 of its 12 epochs, kept to test that a join's state table written as a map
entry per equality key (state format 1 up to commit cb0d361) is still read.

It must be run with the code of cb0d361, from a checkout of that commit, in an environment
where ``eowc`` is that checkout (its Python workers too)::

    git worktree add /tmp/old cb0d361
    python3 -m venv --system-site-packages /tmp/oldvenv
    /tmp/oldvenv/bin/pip install -e /tmp/old --no-deps
    cd /tmp/old && PYSPARK_PYTHON=/tmp/oldvenv/bin/python PYTHONPATH=/tmp/old \\
        /tmp/oldvenv/bin/python <this file> OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from eowc.executors.spark.runner import start_query
from eowc.executors.spark.session import spark_session
from eowc.executors.spark.workdir import claim_workdir
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.rules.triggers import Convention
from tests.spark.test_keyed_join_on_spark import _write
from tests.test_joins import QUERIES, at

STOP_AFTER = 6


def main(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    events = [Event("ab"[i % 2], (at(i / 4 - (i * 7919 % 29) / 4), i // 2 * 5 % 24, i % 7))
              for i in range(240)]
    log = ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, len(events), 20)))
    written = _write(out, QUERIES["interval_LEFT"], log)
    query, events_path = (Path(p).rename(out / name) for p, name in
                          zip(written, ("query.sql", "events.jsonl"), strict=True))
    workdir = out / "workdir"
    claim_workdir(workdir, str(query), str(events_path), Convention.SPARK)
    start_query(spark_session(), str(query), str(events_path), Convention.SPARK, workdir,
                max_epochs=STOP_AFTER)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
