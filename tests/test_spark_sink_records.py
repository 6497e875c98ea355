"""The batch files of :class:`eowc.executors.spark.sink.EpochSink` without Spark: each starts with
the batch's record, copied from the batch's offset file (in the format Spark 4 writes, see
``tests/spark/test_source_and_sink.py``), and a damaged file is reported with its path, line
and what was expected. The sink itself, on real Spark, is tested in ``tests/spark``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eowc.executors.spark.sink import (
    BatchRecord,
    EpochSink,
    SinkFileError,
    batch_file,
    epoch_of_offsets,
    read_batches,
)

#: ``offsets/7`` of a settle-paced run: epoch 3's settle batch (as PySpark 4.3 writes it).
OFFSET_FILE = ('v1\n{"batchWatermarkMs":1586937602000,"batchTimestampMs":1795435087035,'
               '"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"epoch":4,"settled":true}')


def test_the_record_is_copied_from_the_batch_s_offset_file(tmp_path: Path) -> None:
    (tmp_path / "checkpoint" / "offsets").mkdir(parents=True)
    (tmp_path / "checkpoint" / "offsets" / "7").write_text(OFFSET_FILE, encoding="utf-8")
    sink = EpochSink(tmp_path / "out", tmp_path / "checkpoint")
    record = sink.record(7)
    assert record == BatchRecord(7, 1_586_937_602_000, ({"epoch": 4, "settled": True},))
    assert record.epoch == 3
    with pytest.raises(FileNotFoundError):
        sink.record(8)


def test_a_batch_file_is_its_record_then_its_rows(tmp_path: Path) -> None:
    record = BatchRecord(12, 5, ({"epoch": 7, "settled": False}, None))
    rows = ['{"a": 1}', '{"a": "é"}']
    batch_file(tmp_path, 12).write_text("\n".join([record.line(), *rows]) + "\n", encoding="utf-8")
    batch_file(tmp_path, 3).write_text(BatchRecord(3, 0, ({"epoch": 2},)).line() + "\n",
                                       encoding="utf-8")
    (tmp_path / ".batch-000013.jsonl.x.tmp").write_text("partial", encoding="utf-8")
    batches = read_batches(tmp_path)
    assert [b.batch_id for b in batches] == [3, 12]
    assert [b.epoch for b in batches] == [1, 6]
    assert batches[1].record == record and batches[1].rows == [{"a": 1}, {"a": "é"}]
    assert batches[0].rows == []


def test_the_epoch_of_offsets() -> None:
    assert epoch_of_offsets(({"epoch": 1},)) == 0
    assert epoch_of_offsets(({"epoch": 5, "settled": True}, {"epoch": 5, "settled": True})) == 4
    assert epoch_of_offsets(({"epoch": 0, "settled": True},)) is None  # nothing available yet
    assert epoch_of_offsets(({"partition": 3},)) is None
    assert epoch_of_offsets((None,)) is None and epoch_of_offsets(()) is None


@pytest.mark.parametrize(("content", "message"), [
    ("", r"batch-000004\.jsonl: empty; expected at least the batch record"),
    ('{"a": 1}\n', r"batch-000004\.jsonl:1: no batch record \(a damaged file, or one written by "
                   r"an older eowc\); expected the batch record"),
    ('{"_eowc_batch": {"batch_id": 4, "watermark_ms": 0, "offsets": [{"epoch": 5}]}\n',
     r"batch-000004\.jsonl:1: malformed JSON"),
    ('{"_eowc_batch": {"batch_id": 5, "watermark_ms": 0, "offsets": []}}\n',
     r"batch-000004\.jsonl:1: the record is of batch 5"),
    ('{"_eowc_batch": {"batch_id": 4, "watermark_ms": "0", "offsets": []}}\n',
     r"batch-000004\.jsonl:1: the record has no whole watermark_ms"),
    ('{"_eowc_batch": {"batch_id": 4, "watermark_ms": 0, "offsets": [{"epoch": 5}]}}\n{"a": 1}\n'
     '{"a": \n', r"batch-000004\.jsonl:3: malformed JSON \(Expecting value at column 7\); "
                 r"expected a row"),
    ('{"_eowc_batch": {"batch_id": 4, "watermark_ms": 0, "offsets": [{"epoch": 5}]}}\n[1]\n',
     r"batch-000004\.jsonl:2: expected a row \(a JSON object\)"),
])
def test_a_damaged_batch_file_is_named_with_its_line(tmp_path: Path, content: str,
                                                      message: str) -> None:
    batch_file(tmp_path, 4).write_text(content, encoding="utf-8")
    with pytest.raises(SinkFileError, match=message):
        read_batches(tmp_path)


def test_a_batch_of_another_source_has_no_epoch(tmp_path: Path) -> None:
    batch_file(tmp_path, 0).write_text(BatchRecord(0, 0, ({"offset": 9},)).line(),
                                       encoding="utf-8")
    [batch] = read_batches(tmp_path)
    assert batch.record.epoch is None
    with pytest.raises(SinkFileError, match=r"batch-000000\.jsonl:1: the batch record's offsets "
                                             r'\[\{"offset": 9\}\] are not those of an arrival log'):
        _ = batch.epoch


def test_an_output_is_read_back_from_its_text_and_a_pickled_one_is_refused(tmp_path: Path
                                                                           ) -> None:
    """The sink keeps each executor output as canonical text (no pickle to load); a row of
    the format before (a base64 pickle), or of anything else, is a damaged batch file."""
    import base64
    import pickle

    from eowc.executors.spark.adapter import executor_output
    from eowc.executors.spark.runner import collect_run
    from eowc.executors.spark.typed_state import value_text
    from eowc.semantics.ir.arrival import ArrivalLog

    record = BatchRecord(4, 0, ({"epoch": 5, "settled": True},))
    emit = '{"_kind": "emit", "_out": ' + json.dumps(value_text((("a", 3), (1, (1, "a")), None))) + "}"
    assert executor_output("emit", json.loads(emit)["_out"]).row == ("a", 3)
    batch_file(tmp_path / "output", 4).parent.mkdir()
    batch_file(tmp_path / "output", 4).write_text(f"{record.line()}\n{emit}\n", encoding="utf-8")
    assert [e.row for e in collect_run(ArrivalLog(()), tmp_path).emissions] == [("a", 3)]
    pickled = base64.b64encode(pickle.dumps((("a", 3), 1))).decode()
    batch_file(tmp_path / "output", 4).write_text(
        f'{record.line()}\n{{"_kind": "emit", "_out": "{pickled}"}}\n', encoding="utf-8")
    with pytest.raises(SinkFileError, match=r"batch-000004\.jsonl: an output row that eowc did "
                                            r"not write"):
        collect_run(ArrivalLog(()), tmp_path)
