"""Typed state on real Spark (eowc.executors.spark.typed_state), on the checkpoints kept in
tests/spark/data/ (made by ``python -m tests.spark.data.make_checkpoints``):

- Spark's state data source (``spark.read.format("statestore")``, ``stateVarName``) reads the
  executors' state as typed columns: the session executor's declared timer a ``bigint``, the
  group aggregate's groups a tape; the grouping keys JSON text. Their values are the in-process
  driver's (its dictionaries, another implementation of the same state) after the same epochs.
- No state value, key or column read back holds a Python pickle; the same check finds the
  pickles of a checkpoint made before typed state.
- The kept checkpoint of this format, resumed by the current code on the rest of the log, gives
  exactly the reference's output (a checkpoint written by this version is read by the next).
- A foreign checkpoint (pickled, another format, another query) or a damaged one is refused in
  one line naming the checkpoint directory, before or instead of a wrong result.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import eowc.executors.driver as driver
from eowc.executors.driver import run_in_process
from eowc.executors.spark.runner import run_on_spark
from eowc.executors.spark.typed_state import STATE_FORMAT, TAPE_SCHEMA, tape_value, value_of_text
from eowc.executors.spark.workdir import FINGERPRINT_FILE, relocate_checkpoint
from eowc.executors.state import MemoryStore
from eowc.semantics.engines.inputs import source_watermarks
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.errors import RunError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog
from eowc.semantics.rules.triggers import NO_WATERMARK, Convention, row_is_late
from tests.spark.data.make_checkpoints import CASES, CONVENTION, STOP_AFTER, case_files
from tests.spark.test_executors_on_spark import expected, log_of

DATA = Path(__file__).parent / "data"
KEPT = DATA / f"checkpoint-v{STATE_FORMAT}"
PICKLED = DATA / "checkpoint-pickled"
#: The pickle protocol headers (protocol 2 to 5): what no state may start with.
PICKLE_HEADERS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
#: The state variables of each kept case, and whether their values are tapes.
VARIABLES = {"group_agg": ("groups", "timer"), "session": ("open_sessions", "timer")}


def copied(source: Path, tmp_path: Path) -> tuple[str, str, Path]:
    """A copy of a kept case in ``tmp_path`` (query, events, work directory), its fingerprint
    naming the copied events file (the fingerprint holds the events file's absolute path) and
    its Spark metadata the copied state schema files (:func:`relocate_checkpoint`)."""
    case = tmp_path / source.name
    shutil.copytree(source, case)
    query, events, workdir = case_files(case)
    relocate_checkpoint(workdir / "checkpoint")
    marker = workdir / FINGERPRINT_FILE
    fingerprint = json.loads(marker.read_text(encoding="utf-8"))
    fingerprint["events"] = str(events.resolve())
    marker.write_text(json.dumps(fingerprint), encoding="utf-8")
    return str(query), str(events), workdir


def state_rows(spark, checkpoint: Path, variable: str) -> list[Any]:
    return (spark.read.format("statestore").option("stateVarName", variable)
            .load(str(checkpoint)).collect())


def driver_state_after(query: str, events: str, epochs: int) -> MemoryStore:
    """The in-process driver's store after the first ``epochs`` epochs of the log."""
    log = log_of(query, events)
    stores: list[MemoryStore] = []

    class Recorded(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            stores.append(self)

    patch = pytest.MonkeyPatch()
    patch.setattr(driver, "MemoryStore", Recorded)
    try:
        run_in_process(parse_script(Path(query).read_text(encoding="utf-8")).query,
                       ArrivalLog(log.epochs[:epochs]), Convention(CONVENTION))
    finally:
        patch.undo()
    return stores[0]


def pickles_in(value: Any) -> list[bytes]:
    """The binary cells of a Spark row (nested) and the texts that start like a pickle."""
    if isinstance(value, bytes | bytearray):
        return [bytes(value)]
    if isinstance(value, str):
        return [value.encode()] if value.encode("latin-1", "replace")[:2] in PICKLE_HEADERS else []
    if hasattr(value, "asDict"):
        value = value.asDict()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [p for v in value for p in pickles_in(v)]
    return []


@pytest.mark.parametrize("case", CASES)
def test_the_state_data_source_reads_typed_state(spark, tmp_path: Path, case: str) -> None:
    query, events, workdir = copied(KEPT / case, tmp_path)
    store = driver_state_after(query, events, STOP_AFTER)
    for variable in VARIABLES[case]:
        rows = state_rows(spark, workdir / "checkpoint", variable)
        schema = spark.read.format("statestore").option("stateVarName", variable).load(
            str(workdir / "checkpoint")).schema
        assert schema["key"].dataType.simpleString() == "struct<_key:string>"
        on_spark = {value_of_text(row["key"]["_key"]): row["value"] for row in rows}
        in_process = {key: value for (name, key), value in store.values.items() if name == variable}
        print(f"{case}.{variable}: {schema['value'].dataType.simpleString()}, {len(rows)} rows")
        assert in_process, f"the driver holds no {variable}: the check would prove nothing"
        if variable == "timer":  # declared: one bigint column of milliseconds
            assert schema["value"].dataType.simpleString() == "struct<expiry_ms:bigint>"
            assert {k: v["expiry_ms"] for k, v in on_spark.items()} == in_process
        else:
            assert schema["value"].dataType == TAPE_SCHEMA
            assert {k: tape_value(v) for k, v in on_spark.items()} == in_process


def binary_or_pickled(spark, checkpoint: Path, variables: tuple[str, ...]) -> list[bytes]:
    found = []
    for variable in variables:
        frame = spark.read.format("statestore").option("stateVarName", variable).load(str(checkpoint))
        found += [p for row in frame.collect() for p in pickles_in(row)]
    return found


@pytest.mark.parametrize("case", CASES)
def test_no_state_holds_a_pickle(spark, tmp_path: Path, case: str) -> None:
    checkpoint = copied(KEPT / case, tmp_path)[2] / "checkpoint"
    assert binary_or_pickled(spark, checkpoint, VARIABLES[case]) == []


def test_the_pickle_check_finds_the_pickles_of_the_old_format(spark, tmp_path: Path) -> None:
    """The check above fails on a checkpoint of the pickled format (the code before typed state):
    its keys and values are binary pickles."""
    checkpoint = copied(PICKLED / "group_agg", tmp_path)[2] / "checkpoint"
    found = binary_or_pickled(spark, checkpoint, ("groups",))
    assert found and all(cell[:2] in PICKLE_HEADERS for cell in found)


@pytest.mark.parametrize("case", CASES)
def test_the_kept_checkpoint_resumes_to_the_reference(spark, tmp_path: Path, case: str) -> None:
    query, events, workdir = copied(KEPT / case, tmp_path)
    assert (workdir / "checkpoint" / "commits").is_dir()
    run = run_on_spark(query, events, log_of(query, events), Convention(CONVENTION), close=True,
                       workdir=str(workdir))
    out, late = expected(query, events, Convention(CONVENTION))
    assert out and any(e.epoch >= STOP_AFTER for e in out)  # some output after the resumption
    assert run.emissions == out
    assert Counter(r.event.row for r in run.late) == late


#: A LEFT interval join of 24 keys stopped after 6 of its 12 epochs by the code of cb0d361,
#: whose join kept each side's state table as a map entry per equality key (``make.py`` beside
#: it, run with that code, made it).
JOIN_MAP = DATA / "join-map-v1" / "interval_LEFT"


def test_a_join_checkpoint_with_a_map_entry_per_key_resumes_to_the_reference(
        spark, tmp_path: Path) -> None:
    """The kept rows in the format-1 map state move into the shard's one value on the first
    read, and the resumed run's output is the reference's. (The checkpoint's first 6 epochs
    were run before two rules of the spark convention: join_state_margin, which keeps an
    unmatched row a millisecond longer, so those rows may come an epoch earlier than the
    reference says now; and global_watermark, which keeps a row late for its own source but
    not for the slower one. The checkpoint dropped such rows, so the reference is run on the
    log without them: every row after the resume comes when the reference says.)"""
    query, events, workdir = copied(JOIN_MAP, tmp_path)
    kept = state_rows(spark, workdir / "checkpoint", "join0.left.state")
    assert kept, "the kept join holds no map entries: the check would prove nothing"
    log = log_of(query, events)
    run = run_on_spark(query, events, log, Convention.SPARK, close=True, workdir=str(workdir))
    script = parse_script(Path(query).read_text(encoding="utf-8"))
    dropped = late_for_their_own_source(script.sources.values(), log, Convention.SPARK, before=6)
    assert dropped, "no row was judged by the old rule: the log does not need it"
    kept_log = ArrivalLog(tuple(tuple(e for i, e in enumerate(epoch) if (k, i) not in dropped)
                                for k, epoch in enumerate(log.epochs)))
    late: list[LateRow] = []
    out = list(run_eowc(script.query, kept_log, Convention.SPARK, close=True, late=late.append))
    assert out and any(e.epoch >= 6 for e in out)
    assert Counter(e.row for e in run.emissions) == Counter(e.row for e in out)
    resumed = [e for e in run.emissions if e.epoch >= 6]
    assert resumed and all(e in out for e in resumed)
    assert Counter(r.event.row for r in run.late if r.epoch >= 6) == \
        Counter(r.event.row for r in late if r.epoch >= 6)


def late_for_their_own_source(sources: Any, log: ArrivalLog, convention: Convention,
                              before: int) -> set[tuple[int, int]]:
    """(epoch, position) of the rows of the first ``before`` epochs that are late under
    their own source's watermark before their epoch (the rule before a global watermark)."""
    found = set()
    for source in sources:
        if source.watermark is None:
            continue
        marks = [NO_WATERMARK, *source_watermarks(source, log, convention)]
        for k, epoch in enumerate(log.epochs[:before]):
            for i, event in enumerate(epoch):
                if event.table == source.name and row_is_late(
                        event.row[source.event_time_index], marks[k], convention):
                    found.add((k, i))
    return found


def refused(query: str, events: str, workdir: Path) -> str:
    with pytest.raises(RunError) as caught:
        run_on_spark(query, events, log_of(query, events), Convention(CONVENTION), close=True,
                     workdir=str(workdir))
    message = str(caught.value)
    print(message)
    assert "\n" not in message and "Traceback" not in message
    assert message.endswith("remove the directory to start over")
    return message


def test_a_pickled_checkpoint_is_refused(spark, tmp_path: Path) -> None:
    query, events, workdir = copied(PICKLED / "group_agg", tmp_path)
    assert refused(query, events, workdir) == (
        f"{workdir / 'checkpoint'}: the checkpoint cannot be resumed: its state is pickled Python "
        f"objects (made before typed state); this version reads state format {STATE_FORMAT} only; "
        "remove the directory to start over")


def test_a_pickled_checkpoint_is_refused_by_spark_too(spark, tmp_path: Path) -> None:
    """Without the fingerprint's word (a fingerprint claiming this format), Spark's own state
    schema check refuses the pickled state's binary columns: a corrupted checkpoint, not a run."""
    query, events, workdir = copied(PICKLED / "group_agg", tmp_path)
    marker = workdir / FINGERPRINT_FILE
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "state_format": STATE_FORMAT}))
    assert refused(query, events, workdir).startswith(
        f"{workdir / 'checkpoint'}: the checkpoint is corrupted or unreadable: ")


def test_a_checkpoint_of_another_format_is_refused(spark, tmp_path: Path) -> None:
    query, events, workdir = copied(KEPT / "group_agg", tmp_path)
    marker = workdir / FINGERPRINT_FILE
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "state_format": STATE_FORMAT + 1}))
    assert f"its state is state format {STATE_FORMAT + 1}; this version reads state format " \
           f"{STATE_FORMAT} only" in refused(query, events, workdir)


def test_a_checkpoint_of_another_query_is_refused(spark, tmp_path: Path) -> None:
    query, events, workdir = copied(KEPT / "group_agg", tmp_path)
    Path(query).write_text(Path(query).read_text().replace("count(*) AS n", "count(*) AS m"))
    assert "holds the checkpoint of another run: its SQL text is not this query's" in refused(
        query, events, workdir)


def truncate_state_files(checkpoint: Path) -> None:
    """Cut every state file of the checkpoint (RocksDB's zips and SST files) to half."""
    for path in (checkpoint / "state").rglob("*"):
        if path.is_file() and path.suffix in (".zip", ".sst", ".changelog"):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
            path.with_name(f".{path.name}.crc").unlink(missing_ok=True)


def test_truncated_state_files_are_refused(spark, tmp_path: Path) -> None:
    query, events, workdir = copied(KEPT / "session", tmp_path)
    truncate_state_files(workdir / "checkpoint")
    assert refused(query, events, workdir).startswith(
        f"{workdir / 'checkpoint'}: the checkpoint is corrupted or unreadable: ")
