"""Make the checkpoints kept in the repo (tests/spark/data/checkpoint-v<N>/): runs of this
version stopped mid-log, which :mod:`tests.spark.test_typed_state_on_spark` resumes with the current
code on the rest of the log.

Each case directory holds the query (``query.sql``), the whole arrival log (``events.jsonl``)
and the work directory of a run stopped after :data:`STOP_AFTER` of its epochs (``workdir/``:
``eowc-run.json``, Spark's ``checkpoint/``, the sink's ``output/``). Regenerate (after a change
that the checkpoint of this format must follow, e.g. an executor's grouping keys) with one
command from the repository's root::

    python -m tests.spark.data.make_checkpoints

which replaces ``checkpoint-v<STATE_FORMAT>/``. ``--into DIR --cases group_agg`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from tests.spark.test_executors_on_spark import QUERIES, SOURCE, event_lines

#: The cases kept: a window aggregate (one value state per shard) and a session window.
CASES = ("group_agg", "session")
#: The convention the kept runs use.
CONVENTION = "spark"
#: Epochs of the log run before the stop (of 5).
STOP_AFTER = 3
HERE = Path(__file__).parent


def case_files(case_dir: Path) -> tuple[Path, Path, Path]:
    """(query, events, work directory) of a kept case."""
    return case_dir / "query.sql", case_dir / "events.jsonl", case_dir / "workdir"


def make_case(case_dir: Path, name: str) -> None:
    """Write ``name``'s query and log to ``case_dir`` and run it for :data:`STOP_AFTER` epochs."""
    from eowc.executors.spark.runner import start_query
    from eowc.executors.spark.session import spark_session
    from eowc.executors.spark.workdir import claim_workdir
    from eowc.semantics.rules.triggers import Convention

    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    query, events, workdir = case_files(case_dir)
    query.write_text(SOURCE + QUERIES[name], encoding="utf-8")
    events.write_text("\n".join(event_lines()) + "\n", encoding="utf-8")
    convention = Convention(CONVENTION)
    claim_workdir(workdir, str(query), str(events), convention)
    start_query(spark_session(), str(query), str(events), convention, workdir,
                max_epochs=STOP_AFTER)


def main() -> None:
    from eowc.executors.spark.typed_state import STATE_FORMAT

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", type=Path, default=HERE / f"checkpoint-v{STATE_FORMAT}")
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    for name in args.cases:
        make_case(args.into / name, name)
        print(f"{args.into / name}: {name} stopped after {STOP_AFTER} epochs")


if __name__ == "__main__":
    main()
