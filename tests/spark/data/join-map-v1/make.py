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

import json
import shutil
import sys
from pathlib import Path

from eowc.executors.spark.runner import start_query
from eowc.executors.spark.session import spark_session
from eowc.executors.spark.workdir import claim_workdir
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import format_timestamp
from eowc.semantics.rules.triggers import Convention
from tests.test_joins import QUERIES, SOURCES, at

STOP_AFTER = 6


def main(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    events = [Event("ab"[i % 2], (at(i / 4 - (i * 7919 % 29) / 4), i // 2 * 5 % 24, i % 7))
              for i in range(240)]
    log = ArrivalLog(tuple(tuple(events[i:i + 20]) for i in range(0, len(events), 20)))
    query, events_path = out / "query.sql", out / "events.jsonl"
    query.write_text(SOURCES + QUERIES["interval_LEFT"] + ";\n", encoding="utf-8")
    lines = []
    for epoch in log.epochs:
        for event in epoch:
            ts, k, value = event.row
            lines.append(json.dumps({"table": event.table, "row": {
                "ts": format_timestamp(ts), "k": k, "v" if event.table == "a" else "w": value}}))
        lines.append('{"barrier": true}')
    events_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    workdir = out / "workdir"
    claim_workdir(workdir, str(query), str(events_path), Convention.SPARK)
    start_query(spark_session(), str(query), str(events_path), Convention.SPARK, workdir,
                max_epochs=STOP_AFTER)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
