"""The sink of the Flink harness: every row Flink emits, and every end row, appended to one
file as it arrives (in Flink's Python worker; PyFlink is imported here at module level).

A line is ``{"op": "+I", "row": [...], "mark": null}`` for a row of the query (``op`` its
RowKind's short string; values in the words of ``eowc run``) and ``{"op": "+I", "row": null,
"mark": "end k"}`` for an end row of epoch ``k`` (``"rows-end k"`` after its data rows). Each
line is flushed before the next row is taken, so once a savepoint has completed the file holds
every row that reached the sink before its barrier."""

from __future__ import annotations

from typing import Any

from pyflink.datastream.functions import MapFunction

from eowc.executors.flink.harness import protocol_value
from eowc.semantics.ir.values import json_text


class AppendToFile(MapFunction):
    """Appends each row it is given to ``path`` as one JSON line; the last field of a row is
    the harness's ``__mark``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handle: Any = None

    def open(self, runtime_context: Any) -> None:
        self.handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held by the task

    def map(self, value: Any) -> bool:
        fields = list(value)
        mark = fields[-1]
        line = {"op": str(value.get_row_kind()),
                "row": None if mark is not None else [protocol_value(v) for v in fields[:-1]],
                "mark": mark}
        self.handle.write(json_text(line) + "\n")
        self.handle.flush()
        return False

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def nothing(_: Any) -> bool:
    """The filter after the sink: nothing goes further."""
    return False
