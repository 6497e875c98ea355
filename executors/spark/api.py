"""EOWC executors as operators of your own PySpark streaming job.

::

    from eowc.executors import eowc_group_agg, tumble, write_eowc

    per_auction = eowc_group_agg(
        bids,                                   # any streaming DataFrame
        keys=["auction"], window=tumble("ts", "10 seconds"),
        aggs={"n": "count(*)", "s": "sum(price)", "p50": "median(price)"},
        watermark="5 seconds")
    query = write_eowc(per_auction, "out/", side_output="late/", checkpoint="chk/")

Each function builds the query's plan from the DataFrame's schema (a ``CREATE SOURCE`` with a
``WATERMARK FOR`` clause, and one EOWC query over it), so the executor, its trigger condition
and its late check are exactly those the reference interpreter and ``eowc run --engine spark``
use. The returned streaming DataFrame has the query's output columns plus two more:

* ``_side``: NULL for a result row; for a **side-output row**, why the row is not in any
  result: ``event time ... is late at watermark ...``, ``window [...) was closed at ...``,
  ``NULL event time``, ``unparseable event time: ...`` or, under the risingwave and flink
  conventions, ``event time ... is not a whole millisecond: ...`` (the executors keep Spark's
  millisecond watermark, so such a row is set aside, and left out of the watermark, rather than
  risk a result that differs from the reference: :mod:`eowc.executors.millisecond_watermark`);
* ``_side_row``: for a side-output row, the input row as a JSON object (times as
  ``YYYY-MM-DD HH:MM:SS[.ffffff]``, UTC).

Nothing is dropped silently: :func:`results` and :func:`side_output` split the stream, and
:func:`write_eowc` writes both, each to an exactly-once sink, from one streaming query (one
state, one checkpoint). Under the spark and flink rules a window aggregate checks lateness
per window, so a HOP row can be counted in its open windows and reported once for each
closed one.

The event-time column may be a ``TIMESTAMP`` (read in the session's time zone) or a string
``YYYY-MM-DD HH:MM:SS[.ffffff]`` (UTC, the toolkit's format); Spark's watermark is then kept
on a parsed copy. A watermark delay that is not a whole millisecond is refused. Columns of
types the toolkit has no SQL type for (arrays, maps, structs, binary) cannot be referenced by
the query.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from eowc.executors.choice import processor_for
from eowc.executors.millisecond_watermark import (
    before_watermark_start_reason,
    check_delays,
    keeps_microsecond_event_times,
    sub_millisecond_time_reason,
)
from eowc.executors.plan import DEFAULT_OPTIONS, SORT_PARTITIONS, ExecutorOptions
from eowc.executors.processors import Arrival, Emit, EowcProcessor, Refusal, Rejected
from eowc.executors.runtime import gc_paused
from eowc.executors.spark.adapter import (
    ARRIVAL_SCHEMA,
    executor_output,
    executor_outputs,
    internal_columns,
    internal_value,
    keyed_frame,
    watermarked,
)
from eowc.executors.spark.arrival_source import spark_type
from eowc.executors.spark.sink import EpochSink
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.plan import Query
from eowc.semantics.ir.values import (
    MICROS_PER_MILLI,
    SqlType,
    format_timestamp,
    json_text,
    parse_timestamp,
    to_external,
)
from eowc.semantics.rules.triggers import Convention

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

#: The columns every returned DataFrame has after the query's own.
SIDE_COLUMNS = ("_side", "_side_row")
#: The parsed copy of a string event-time column that Spark's watermark is kept on.
_PARSED_TIME = "_eowc_event_time"

Duration = str | dt.timedelta


# ---------------------------------------------------------------------------------- windows

def _interval(duration: Duration) -> str:
    """``INTERVAL '10 seconds'`` for ``"10 seconds"`` or ``timedelta(seconds=10)``."""
    if isinstance(duration, dt.timedelta):
        return f"INTERVAL '{duration // dt.timedelta(microseconds=1)} microseconds'"
    return f"INTERVAL '{duration}'"


@dataclass(frozen=True)
class WindowTvf:
    """A window table function over the event-time column ``time``: ``kind`` and its
    durations, as in ``TUMBLE(t, ts, size)``, ``HOP(t, ts, slide, size)``,
    ``CUMULATE(t, ts, step, size)``."""

    kind: str
    time: str
    durations: tuple[Duration, ...]

    def sql(self, table: str) -> str:
        arguments = ", ".join(_interval(d) for d in self.durations)
        return f"{self.kind}({table}, {self.time}, {arguments})"


def tumble(time: str, size: Duration) -> WindowTvf:
    """Tumbling windows ``[k*size, (k+1)*size)`` over the event-time column ``time``."""
    return WindowTvf("TUMBLE", time, (size,))


def hop(time: str, slide: Duration, size: Duration) -> WindowTvf:
    """Windows of length ``size`` starting every ``slide``."""
    return WindowTvf("HOP", time, (slide, size))


def cumulate(time: str, step: Duration, size: Duration) -> WindowTvf:
    """Windows that grow by ``step`` from the start of every ``size``-long period."""
    return WindowTvf("CUMULATE", time, (step, size))


# ---------------------------------------------------------------------- the plan, from a frame

_SQL_TYPES: dict[type[DataType], str] = {
    LongType: "BIGINT", IntegerType: "BIGINT", ShortType: "BIGINT",
    DoubleType: "DOUBLE", FloatType: "DOUBLE", DecimalType: "DOUBLE",
    StringType: "VARCHAR", BooleanType: "BOOLEAN",
    TimestampType: "TIMESTAMP", TimestampNTZType: "TIMESTAMP",
}


def source_ddl(schema: StructType, table: str, event_time: str, delay: Duration) -> str:
    """The ``CREATE SOURCE`` statement of a DataFrame with ``schema``: its columns of the
    toolkit's types (a string ``event_time`` column is a TIMESTAMP written as text) and the
    watermark ``event_time - delay``."""
    names = schema.fieldNames()
    if event_time not in names:
        raise EowcError(f"the event-time column {event_time!r} is not a column of the "
                        f"DataFrame (columns: {', '.join(names)})")
    time_type = schema[event_time].dataType
    if not isinstance(time_type, TimestampType | TimestampNTZType | StringType):
        raise EowcError(f"the event-time column {event_time!r} is {time_type.simpleString()}; "
                        "expected a timestamp or a string YYYY-MM-DD HH:MM:SS[.ffffff]")
    columns = []
    for field in schema.fields:
        sql_type = "TIMESTAMP" if field.name == event_time else _SQL_TYPES.get(type(field.dataType))
        if sql_type is not None:
            columns.append(f"{field.name} {sql_type}")
    return (f"CREATE SOURCE {table} ({', '.join(columns)}, "
            f"WATERMARK FOR {event_time} AS {event_time} - {_interval(delay)});\n")


def _output_type(sql_type: SqlType) -> DataType:
    if sql_type is SqlType.INTERVAL:
        return DayTimeIntervalType()
    if sql_type is SqlType.NULL:
        return StringType()
    return spark_type(sql_type)


def output_schema(query: Query) -> StructType:
    """The returned DataFrame's schema: the query's columns, then ``_side`` and ``_side_row``."""
    fields = [StructField(c.name, _output_type(c.type), True) for c in query.schema]
    fields += [StructField(name, StringType(), True) for name in SIDE_COLUMNS]
    return StructType(fields)


# ------------------------------------------------------------------ the two Python steps

@lru_cache(maxsize=8)
def _executor(sql: str, convention: str, options: ExecutorOptions = DEFAULT_OPTIONS) -> EowcProcessor:
    return processor_for(parse_script(sql).query, Convention(convention), options=options)


def _json_ready(value: Any, sql_type: SqlType | None, time_zone: str) -> Any:
    """A pandas cell of an input row as a JSON value (times in the toolkit's format, UTC)."""
    if value is None or (not isinstance(value, str | list | dict) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp | dt.datetime):
        return format_timestamp(internal_value(value, SqlType.TIMESTAMP, time_zone))
    if hasattr(value, "item"):  # a numpy scalar
        return value.item()
    return value if sql_type is not None else str(value)


def _arrivals(sql: str, convention: str, time_zone: str,  # noqa: ANN202 - mapInPandas
              options: ExecutorOptions = DEFAULT_OPTIONS):
    """Input rows to ``(_key, _arrival)``, one row per executor key holding the pickled list
    of its :class:`Arrival` s (each carrying its input row, for the side output; folded where
    the executor combines: ``EowcProcessor.combine``), and under
    the key None the :class:`Rejected` rows, whose event time is NULL or unparseable: they
    never reach the executor."""

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        executor = _executor(sql, convention, options)
        for frame in frames:
            with gc_paused():
                by_key = _keyed_arrivals(frame, executor, time_zone, Convention(convention))
                rejected = {None: by_key.pop(None)} if None in by_key else {}
                combined = {key: executor.combine(items) for key, items in by_key.items()}
                keyed = pd.concat([keyed_frame(combined), keyed_frame(rejected, Rejected)])
            yield keyed
    return run


def _keyed_arrivals(frame: pd.DataFrame, executor: EowcProcessor, time_zone: str,
                    convention: Convention) -> dict[Any, list[Arrival | Rejected]]:
    """The :class:`Arrival` s the stateless part makes of a frame of input rows, by key, and
    under the key None the frame's :class:`Rejected` rows (a NULL or unparseable event time,
    or one finer than the millisecond where ``convention`` would keep it in the watermark)."""
    plan = executor.plan
    columns = plan.compiled.source.columns
    time_index = plan.compiled.source.event_time_index
    assert time_index is not None
    time_column = columns[time_index].name
    others = tuple(c for i, c in enumerate(columns) if i != time_index)
    types = {c.name: c.type for c in columns}
    by_key: dict[Any, list[Arrival | Rejected]] = {}
    values = iter(zip(*internal_columns(frame, others, time_zone), strict=True))
    for position, raw in enumerate(frame[time_column].tolist()):
        rest = next(values) if others else ()
        try:
            time = (parse_timestamp(raw) if isinstance(raw, str)
                    else internal_value(raw, SqlType.TIMESTAMP, time_zone))
        except ValueError as error:
            reason = f"unparseable event time: {error}"
        else:
            reason = ("NULL event time" if time is None
                      else sub_millisecond_time_reason(time, convention)
                      or before_watermark_start_reason(time) or "")
        if reason:
            record = frame.iloc[position].to_dict()
            row = json_text({name: _json_ready(v, types.get(name), time_zone)
                              for name, v in record.items() if name != _PARSED_TIME})
            by_key.setdefault(None, []).append(Rejected(reason, row))
            continue
        source = (*rest[:time_index], time, *rest[time_index:])
        made = plan.stateless(source)
        for r in made:
            by_key.setdefault(executor.key_of(r), []).append(
                Arrival(0, len(made), time, r, source))
    return by_key


def _pandas_column(values: list[Any], sql_type: SqlType) -> pd.Series:
    if sql_type is SqlType.TIMESTAMP:
        return pd.Series(pd.to_datetime(values, unit="us", utc=True))
    if sql_type is SqlType.INTERVAL:
        return pd.Series(pd.to_timedelta(values, unit="us"))
    return pd.Series(values, dtype="object")


def _decoded(sql: str, convention: str):  # noqa: ANN202 - a mapInPandas function
    """Executor outputs ``(_kind, _out)`` to rows of :func:`output_schema`."""

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        executor = _executor(sql, convention)
        schema = executor.plan.compiled.query.schema
        names = [c.name for c in schema]
        for frame in frames:
            rows: list[tuple[Any, ...]] = []
            sides: list[tuple[str | None, str | None]] = []
            for kind, text in zip(frame["_kind"], frame["_out"], strict=True):
                output = executor_output(kind, text)
                if isinstance(output, Emit):
                    rows.append(output.row)
                    sides.append((None, None))
                else:
                    rows.append((None,) * len(names))
                    sides.append(_side(output, executor))
            data = {name: _pandas_column([r[i] for r in rows], c.type)
                    for i, (name, c) in enumerate(zip(names, schema, strict=True))}
            data["_side"] = pd.Series([s[0] for s in sides], dtype="object")
            data["_side_row"] = pd.Series([s[1] for s in sides], dtype="object")
            yield pd.DataFrame(data)
    return run


def _side(output: Refusal | Rejected, executor: EowcProcessor) -> tuple[str, str]:
    """The ``(_side, _side_row)`` of a row left out of the results."""
    if isinstance(output, Rejected):
        return output.reason, output.row
    columns = executor.plan.compiled.source.columns
    row = output.source if output.source is not None else (None,) * len(columns)
    return output.reason, json_text({c.name: to_external(v, c.type)
                                      for c, v in zip(columns, row, strict=True)})


# ------------------------------------------------------------------------ the public API

def eowc_query(df: DataFrame, query: str, *, event_time: str, watermark: Duration,
               table: str = "input", convention: str | Convention = "risingwave",
               options: ExecutorOptions = DEFAULT_OPTIONS) -> DataFrame:
    """The EOWC executor of ``query`` (one ``SELECT ... EMIT ON WINDOW CLOSE`` over the
    table ``table``), run with ``options``, applied to the streaming DataFrame ``df``, whose
    watermark is ``event_time - watermark``. See the module documentation for the returned
    columns."""
    rule = Convention(convention)
    sql = source_ddl(df.schema, table, event_time, watermark) + query
    parsed = parse_script(sql).query  # a SqlError / PlanError here, on the driver
    processor_for(parsed, rule, options=options)
    check_delays([parsed.source])
    time_zone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    frame, time_column = df, event_time
    text = isinstance(df.schema[event_time].dataType, StringType)
    if text or keeps_microsecond_event_times(rule):
        frame = df.withColumn(_PARSED_TIME, _watermark_time(F.col(event_time), text, rule))
        time_column = _PARSED_TIME
    arrivals = watermarked(frame, parsed.source, time_column).mapInPandas(
        _arrivals(sql, rule.value, time_zone, options), ARRIVAL_SCHEMA)
    outputs = executor_outputs(arrivals, sql, rule, options)
    return outputs.mapInPandas(_decoded(sql, rule.value), output_schema(parsed))


def _watermark_time(column: Any, text: bool, convention: Convention) -> Any:
    """The event time Spark's watermark is kept on: ``column`` (parsed, when ``text``), NULL
    for a row that is set aside (:func:`_keyed_arrivals`), so that it does not move the
    watermark: one whose time does not parse or, under a convention that keeps microseconds in
    the watermark, is not a whole millisecond."""
    time = _parsed_time(column) if text else column
    if keeps_microsecond_event_times(convention):
        time = F.when(F.unix_micros(time) % MICROS_PER_MILLI == 0, time)
    return time


def _parsed_time(column: Any) -> Any:
    """A string event time ``YYYY-MM-DD HH:MM:SS[.ffffff]`` as a TIMESTAMP read as UTC
    whatever the session's time zone (NULL where it does not parse), for Spark's watermark."""
    return F.try_to_timestamp(F.concat(column, F.lit("Z")),
                              F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSS]XXX"))


def eowc_group_agg(df: DataFrame, *, keys: Sequence[str] = (), window: WindowTvf,
                   aggs: Mapping[str, str], watermark: Duration,
                   convention: str | Convention = "risingwave",
                   where: str | None = None) -> DataFrame:
    """``SELECT keys, window_start, window_end, aggs FROM window GROUP BY ... EMIT ON WINDOW
    CLOSE``: one row per key and window once the window is closed. ``aggs`` maps output
    names to aggregate calls in SQL (``count(*)``, ``sum(x)``, ``avg(x)``, ``min``, ``max``,
    ``median(x)``, ``percentile_cont(0.9) WITHIN GROUP (ORDER BY x)``, ``count(DISTINCT x)``,
    ...); ``where`` filters input rows first."""
    if not aggs:
        raise EowcError("eowc_group_agg needs at least one aggregate in aggs")
    table = "input"
    group = [*keys, "window_start", "window_end"]
    select = ", ".join([*group, *(f"{call} AS {name}" for name, call in aggs.items())])
    query = (f"SELECT {select} FROM {window.sql(table)}"
             + (f" WHERE {where}" if where else "")
             + f" GROUP BY {', '.join(group)} EMIT ON WINDOW CLOSE")
    return eowc_query(df, query, event_time=window.time, watermark=watermark, table=table,
                      convention=convention)


def eowc_sort(df: DataFrame, *, event_time: str, watermark: Duration,
              columns: Sequence[str] | None = None,
              convention: str | Convention = "risingwave",
              partitions: int = SORT_PARTITIONS) -> DataFrame:
    """``SELECT columns FROM df EMIT ON WINDOW CLOSE``: every row once its event time is
    complete, in event-time order (then the tie-break of the query's columns) within each of
    ``partitions`` partitions (hash buckets of the row), as RisingWave's EOWC sort;
    ``partitions=1``: one total order."""
    chosen = ", ".join(columns) if columns else "*"
    return eowc_query(df, f"SELECT {chosen} FROM input EMIT ON WINDOW CLOSE",
                      event_time=event_time, watermark=watermark, convention=convention,
                      options=ExecutorOptions(sort_partitions=partitions))


def results(df: DataFrame) -> DataFrame:
    """The result rows of a DataFrame returned by this module, without the side columns."""
    return df.where(F.col("_side").isNull()).drop(*SIDE_COLUMNS)


def side_output(df: DataFrame) -> DataFrame:
    """The side-output rows (late rows, rows with a NULL or unparseable event time):
    ``_side`` (the reason) and ``_side_row`` (the input row as JSON)."""
    return df.where(F.col("_side").isNotNull()).select(*SIDE_COLUMNS)


class _SplitSink:
    """``foreachBatch``: results to one :class:`EpochSink`, side output to another (both
    recording each batch's watermark and offsets from ``checkpoint``)."""

    def __init__(self, output: str | os.PathLike[str], side: str | os.PathLike[str],
                 checkpoint: str | os.PathLike[str]) -> None:
        self.output, self.side = EpochSink(output, checkpoint), EpochSink(side, checkpoint)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        try:
            self.output(results(batch), batch_id)
            self.side(side_output(batch), batch_id)
        finally:
            batch.unpersist()


def write_eowc(df: DataFrame, output: str | os.PathLike[str], *,
               side_output: str | os.PathLike[str], checkpoint: str | os.PathLike[str],
               available_now: bool = False) -> StreamingQuery:
    """Start the streaming query that writes the results of ``df`` (returned by this module)
    to ``output`` and its side output to ``side_output``, one JSON Lines file per micro-batch
    in each (``batch-<id>.jsonl``: the batch's record, its watermark and its sources' offsets,
    then its rows; read them with :func:`eowc.executors.spark.sink.read_batches`), exactly once
    across restarts from ``checkpoint``, a directory of this machine (the sink reads each
    batch's offset file there)."""
    writer = (df.writeStream.foreachBatch(_SplitSink(output, side_output, checkpoint))
              .option("checkpointLocation", str(checkpoint)))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


__all__ = ["Rejected", "WindowTvf", "cumulate", "eowc_group_agg", "eowc_query", "eowc_sort",
           "hop", "results", "side_output", "source_ddl", "tumble", "write_eowc"]
