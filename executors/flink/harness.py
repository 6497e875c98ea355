"""How an arrival log is fed to Flink's own operators epoch by epoch: the tables, views and
files of the harness, as text (nothing here imports PyFlink).

Definition 1 judges an epoch's rows against the watermark in force *before* the epoch, and the
source watermark moves only at the epoch's end. Flink computes a source's watermark from every
row it reads (``WATERMARK FOR c AS <expr>``, emitted after each row with
``pipeline.auto-watermark-interval`` 0). The harness keeps Flink's own watermark expression and
makes it move only at the epoch's end:

* each table ``T`` the script declares becomes a *raw table* ``__eowc_raw_T`` on Flink's
  filesystem connector (one JSON file per epoch in a folder Flink monitors), with the same
  physical, metadata and computed columns, two more (``__kind``, ``__epoch``), and the watermark
  ``CASE WHEN __kind = 'wm' THEN <the table's own expression> END``: NULL, which moves
  nothing, for every row but a *watermark row*;
* ``T`` becomes a view of the raw table's data rows (``__kind = 'row'``): the query reads
  ``T`` as written, its rowtime attribute intact (the filter runs after Flink's watermark
  assigner);
* an epoch's file holds its rows of ``T`` (``row``), then each of them again as a watermark row
  (``wm``, filtered out before any operator of the query), so that Flink itself computes
  ``max(prev W, max <expr>)`` over the epoch, then one *end row* (``end``);
* with more than one table, an epoch is two files a table: its rows and an end row
  (``rows-end``), then, once every operator has taken every table's rows, its watermark rows
  and the end row (``end``). Each table is a source of its own, so in one file a table's
  watermark could reach a join before the other table's rows of the same epoch, and the join
  would judge those rows against a watermark the epoch itself moved;
* the query's output is unioned with each raw table's end rows (the column ``__mark``: an end
  row's kind and epoch, NULL in every output row) into one sink; an end row seen by the sink
  says the source has read the file, so a savepoint taken then has every row the file caused
  before its barrier, and every operator has taken them (:mod:`eowc.executors.flink.engine`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from eowc.semantics.ir.values import format_interval, format_timestamp, json_text

_EPOCH, _MICROSECOND = dt.datetime(1970, 1, 1), dt.timedelta(microseconds=1)

#: The harness's own columns of a raw table, and the column of the sink's end rows.
KIND, EPOCH, MARK = "__eowc_kind", "__eowc_epoch", "__eowc_mark"
#: The kinds of a raw table's rows: a data row, a watermark row, and the end rows after an
#: epoch's data rows (when they are a file of their own) and after the whole epoch.
DATA_ROW, WATERMARK_ROW, ROWS_END, END_ROW = "row", "wm", "rows-end", "end"


def end_mark(kind: str, epoch: int) -> str:
    """The sink's ``__mark`` of an end row: its kind and its epoch (``end 3``)."""
    return f"{kind} {epoch}"


@dataclass(frozen=True)
class FlinkColumn:
    """A column of a table as Flink resolved it: its name, its SQL type as Flink prints it
    (``TIMESTAMP(3)``, ``DECIMAL(10, 2)``), and, for a computed column, its expression."""

    name: str
    sql_type: str
    expression: str | None = None
    #: An event-time (or processing-time) attribute of the query's output: a sink takes one at
    #: most, so the harness's sink reads it as a plain timestamp.
    time_attribute: bool = False

    @property
    def carried(self) -> bool:
        """Whether the rows carry it (events give it); a computed column is computed."""
        return self.expression is None


@dataclass(frozen=True)
class FlinkTable:
    """A table of the script as Flink resolved it: its columns, and its watermark
    (``WATERMARK FOR rowtime AS expression``; None without one)."""

    name: str
    columns: tuple[FlinkColumn, ...]
    rowtime: str | None = None
    watermark: str | None = None

    @property
    def carried(self) -> tuple[FlinkColumn, ...]:
        return tuple(c for c in self.columns if c.carried)


def quoted(name: str) -> str:
    """A Flink identifier, in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def raw_name(table: str) -> str:
    return f"__eowc_raw_{table}"


def raw_table_ddl(table: FlinkTable, folder: str, monitor_interval_ms: int) -> str:
    """The raw table of ``table``: its columns and the harness's, on Flink's filesystem
    connector reading the JSON files of ``folder``, its watermark moved by watermark rows only."""
    columns = [f"{quoted(c.name)} {c.sql_type}" for c in table.columns if c.carried]
    columns += [f"{quoted(KIND)} STRING", f"{quoted(EPOCH)} INT"]
    columns += [f"{quoted(c.name)} AS {c.expression}" for c in table.columns if not c.carried]
    if table.rowtime is not None:
        rowtime_type = next(c.sql_type for c in table.columns if c.name == table.rowtime)
        columns.append(f"WATERMARK FOR {quoted(table.rowtime)} AS CASE WHEN {quoted(KIND)} = "
                       f"'{WATERMARK_ROW}' THEN {table.watermark} ELSE CAST(NULL AS "
                       f"{_nullable(rowtime_type)}) END")
    options = {"connector": "filesystem", "path": folder, "format": "json",
               "source.monitor-interval": f"{monitor_interval_ms}ms"}
    with_clause = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    body = ",\n  ".join(columns)
    return f"CREATE TABLE {quoted(raw_name(table.name))} (\n  {body}\n) WITH ({with_clause})"


def data_view_ddl(table: FlinkTable) -> str:
    """The view named as the table: the raw table's data rows, with the table's columns."""
    names = ", ".join(quoted(c.name) for c in table.columns)
    return (f"CREATE TEMPORARY VIEW {quoted(table.name)} AS SELECT {names} FROM "
            f"{quoted(raw_name(table.name))} WHERE {quoted(KIND)} = '{DATA_ROW}'")


def marked_query(query: str, output: Sequence[FlinkColumn], tables: Iterable[str]) -> str:
    """The query's rows (``__mark`` NULL; a time attribute as a plain timestamp) and every raw
    table's end rows (``__mark`` their :func:`end_mark`, every other column NULL), in one
    stream."""
    names = ", ".join(f"CAST(q.{quoted(c.name)} AS {_nullable(c.sql_type)})" if c.time_attribute
                      else f"q.{quoted(c.name)}" for c in output)
    parts = [f"SELECT {names}, CAST(NULL AS STRING) AS {quoted(MARK)} FROM ({query}) AS q"]
    nulls = ", ".join(f"CAST(NULL AS {_nullable(c.sql_type)})" for c in output)
    parts += [f"SELECT {nulls}, CONCAT({quoted(KIND)}, ' ', CAST({quoted(EPOCH)} AS STRING)) "
              f"FROM {quoted(raw_name(t))} WHERE {quoted(KIND)} IN ('{ROWS_END}', '{END_ROW}')"
              for t in tables]
    return "\nUNION ALL\n".join(parts)


def _nullable(sql_type: str) -> str:
    return sql_type.replace(" NOT NULL", "").replace(" *ROWTIME*", "").replace(" *PROCTIME*", "")


def epoch_files(table: FlinkTable, rows: Sequence[Mapping[str, Any]], epoch: int,
                split: bool) -> list[tuple[str, list[str]]]:
    """The files of one epoch of ``table``, in the order they are fed, each as the kind of its
    end row and its JSON lines: its rows, each again as a watermark row, and the end row;
    ``split``, its rows and a ``rows-end`` row, then the watermark rows and the end row."""
    types = {c.name: c.sql_type for c in table.carried}
    data = [{name: flink_json_value(row.get(name), types[name]) for name in types} for row in rows]
    placeholder = {name: _placeholder(types[name]) for name in types}

    def lines(kind: str, end: str | None = None) -> list[str]:
        made = [{**r, KIND: kind, EPOCH: epoch} for r in data]
        made += [{**placeholder, KIND: end, EPOCH: epoch}] if end else []
        return [json_text(line) for line in made]

    if split:
        return [(ROWS_END, lines(DATA_ROW, ROWS_END)), (END_ROW, lines(WATERMARK_ROW, END_ROW))]
    return [(END_ROW, lines(DATA_ROW) + lines(WATERMARK_ROW, END_ROW))]


def _placeholder(sql_type: str) -> Any:
    """A value of ``sql_type`` for an end row (Flink's watermark assigner refuses a NULL
    rowtime, even where the watermark expression is NULL; the row goes no further)."""
    if sql_type.startswith(("TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL")):
        return "1970-01-01 00:00:00Z"
    if sql_type.startswith("TIMESTAMP"):
        return "1970-01-01 00:00:00"
    if sql_type.startswith("DATE"):
        return "1970-01-01"
    if sql_type.startswith(("BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL")):
        return 0
    return None


def flink_json_value(value: Any, sql_type: str) -> Any:
    """An event's value as Flink's JSON format reads a column of ``sql_type``: a timestamp
    with local time zone with a ``Z``, a DECIMAL as its digits (exact)."""
    if value is None:
        return None
    if sql_type.startswith("TIMESTAMP_LTZ") or "WITH LOCAL TIME ZONE" in sql_type:
        return value if str(value).endswith("Z") else f"{value}Z"
    return value


def protocol_value(value: Any) -> Any:
    """A value Flink emitted (as PyFlink gives it) in the words of ``eowc run --format jsonl``:
    a timestamp ``YYYY-MM-DD HH:MM:SS[.ffffff]``, a date ``YYYY-MM-DD``, an interval
    ``[-]HH:MM:SS[.ffffff]``, a DECIMAL exact, NaN and infinities as their names."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return format_timestamp((value - _EPOCH) // _MICROSECOND)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return format_interval(value // _MICROSECOND)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return ("Infinity" if value > 0 else "-Infinity") if math.isinf(value) else value
    if isinstance(value, Decimal):
        return value
    if isinstance(value, list | tuple):
        return [protocol_value(v) for v in value]
    return str(value)
