"""Runs an executor of :mod:`eowc.executors.processors` inside Spark's
``transformWithStateInPandas``, with Spark's RocksDB state store and event-time timers.

The streaming query a plan compiles to (:func:`eowc_stream`):

1. the source, with ``withWatermark`` on its event-time column: Spark tracks
   ``max(c) - delay`` (in milliseconds) and runs a no-data batch when it moves;
2. ``mapInPandas``: the stateless part of the plan (filters, projections, the window TVF) in
   the reference's own code; each output row becomes ``(_key, _arrival)``, the grouping key
   as canonical text and the :class:`~eowc.executors.processors.Arrival`, pickled. Because the
   rows leave through a new projection, Spark does not drop rows below the watermark before the
   executor sees them: the executor applies the convention's late check itself and reports
   what it refuses;
3. ``groupBy("_key").transformWithStateInPandas(SparkProcessor(...))``: the executor, one
   grouping key at a time, its states and timers in Spark's state store;
4. output rows ``(_kind, _out)``: ``emit`` with an :class:`~eowc.executors.processors.Emit`
   or ``refusal`` with a :class:`~eowc.executors.processors.Refusal`, as canonical text.

The arrivals cross the shuffle as pickled Python values of the reference (times in
microseconds), so the executor sees exactly the values the interpreter sees. What is kept
(state and keys in the checkpoint, outputs in the sink) is typed columns and text, never a
pickle (:mod:`eowc.executors.spark.typed_state`).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from decimal import Decimal
from functools import lru_cache
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from eowc.executors.choice import processor_for
from eowc.executors.plan import DEFAULT_OPTIONS, ExecutorOptions
from eowc.executors.processors import (
    Arrival,
    Emit,
    EowcProcessor,
    Partial,
    Refusal,
    Rejected,
    SourceProgress,
    Update,
)
from eowc.executors.runtime import gc_paused
from eowc.executors.spark import CLOSE_SEQ
from eowc.executors.spark.crash_points import CrashPoint, checkpoint_reached
from eowc.executors.spark.typed_state import SparkStateHandle, value_of_text, value_text
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.expr import Schema
from eowc.semantics.ir.plan import Query, Source
from eowc.semantics.ir.values import MICROS_PER_MILLI, ArrayType, SqlType, ValueType
from eowc.semantics.rules.triggers import Convention, Watermark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

OUTPUT_SCHEMA = "_kind string, _out string"
#: The rows of the stateless step: the executor's key as canonical text (see
#: :func:`~eowc.executors.spark.typed_state.value_text`) and its items.
ARRIVAL_SCHEMA = "_key string, _arrival binary"


#: The ``_kind`` of each class of output row; ``_out`` holds its fields as canonical text
#: (:func:`~eowc.executors.spark.typed_state.value_text`: the sink keeps it, so no pickle).
OUTPUT_KINDS: dict[str, type[Emit | Update | Refusal | Rejected]] = {
    "emit": Emit, "update": Update, "refusal": Refusal, "rejected": Rejected}
_KIND_OF = {cls: kind for kind, cls in OUTPUT_KINDS.items()}


def _outputs(outputs: Iterator[Emit | Update | Refusal | Rejected]) -> Iterator[pd.DataFrame]:
    rows = [(_KIND_OF[type(o)], value_text(tuple(o))) for o in outputs]
    if rows:
        yield pd.DataFrame(rows, columns=["_kind", "_out"])


def executor_output(kind: str, text: str) -> Emit | Update | Refusal | Rejected:
    """The output value of one ``(_kind, _out)`` row (:class:`StateFormatError` for a damaged
    ``_out``)."""
    return OUTPUT_KINDS[kind]._make(value_of_text(text))


class SparkProcessor(StatefulProcessor):
    """An EOWC executor as a Spark ``StatefulProcessor``. It is shipped to the Python workers
    as the query's SQL text, the convention and the :class:`ExecutorOptions`, and built there
    (``processor_for``)."""

    def __init__(self, sql: str, convention: str, options: ExecutorOptions = DEFAULT_OPTIONS) -> None:
        self.sql, self.convention, self.options = sql, convention, options

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.executor: EowcProcessor = processor_for(query_of(self.sql), Convention(self.convention),
                                                     options=self.options)
        self.state = SparkStateHandle(handle)
        self.executor.init(self.state)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
                        ) -> Iterator[pd.DataFrame]:
        with gc_paused():
            yield from self._handle_rows(key, rows, timerValues)
        checkpoint_reached(CrashPoint.MID_BATCH)  # a key handled, its state not yet committed

    def _handle_rows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
                     ) -> Iterator[pd.DataFrame]:
        self.state.key = key
        group = value_of_text(key[0])
        # The frames hold the grouping key, then _arrival, last (their column names vary).
        items = [item for frame in rows for b in frame.iloc[:, -1] for item in unkeyed(b)]
        # In arrival order, whichever partitions of the batch they came from (a stable sort:
        # the rows one source row made keep their order); or the rows folded before the
        # shuffle (Partials: they merge in any order).
        arrivals: list[Any] = sorted((item for item in items if isinstance(item, Arrival)),
                                     key=attrgetter("seq"))
        arrivals += [item for item in items if isinstance(item, Partial)]
        # How far each source got (for an executor that judges each source by its own
        # watermark), after the rows.
        arrivals += [item for item in items if isinstance(item, SourceProgress)]
        # Rows rejected before the executor (a NULL or unparseable event time, see
        # eowc.executors.spark.api) go straight to the output.
        passed = [item for item in items if isinstance(item, Rejected)]
        watermark: Watermark = timerValues.getCurrentWatermarkInMs() * MICROS_PER_MILLI
        handled = self.executor.handle_rows(group, arrivals, watermark) if arrivals else ()
        yield from _outputs(chain(passed, handled))

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any
                           ) -> Iterator[pd.DataFrame]:
        self.state.key = key
        group = value_of_text(key[0])
        watermark: Watermark = timerValues.getCurrentWatermarkInMs() * MICROS_PER_MILLI
        with gc_paused():
            yield from _outputs(self.executor.handle_timer(
                group, expiredTimerInfo.getExpiryTimeInMs(), watermark))
        checkpoint_reached(CrashPoint.MID_BATCH)  # a timer fired, its state not yet committed

    def close(self) -> None:
        pass


def internal_value(value: Any, sql_type: ValueType, time_zone: str = "UTC") -> Any:
    """A pandas cell of the source as the reference's internal value (an ARRAY, which pandas
    holds as a numpy array, as a tuple). PySpark hands timestamps to pandas as wall-clock
    times of the session's ``time_zone``."""
    if isinstance(sql_type, ArrayType):
        return None if value is None else tuple(internal_value(v, sql_type.element, time_zone)
                                                for v in value)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if sql_type.is_time:
        moment = pd.Timestamp(value)
        if moment.tzinfo is None and time_zone != "UTC":
            moment = moment.tz_localize(time_zone)
        return moment.value // 1_000  # nanoseconds -> microseconds
    if sql_type is SqlType.BIGINT:
        return int(value)
    if sql_type is SqlType.DOUBLE:
        return float(value)
    if sql_type is SqlType.BOOLEAN:
        return bool(value)
    if sql_type is SqlType.DATE:
        return int(value)
    if sql_type is SqlType.DECIMAL:  # its digits (a string column of the source)
        return Decimal(value)
    return value


@lru_cache(maxsize=8)
def query_of(sql: str) -> Query:
    """The query of a script, parsed once per worker process (a plan is an immutable value):
    Spark calls a processor's ``init`` in every task, each micro-batch, and parsing took about
    10 ms of it."""
    return parse_script(sql).query


@lru_cache(maxsize=8)
def _stateless_executor(sql: str, convention: str, options: ExecutorOptions = DEFAULT_OPTIONS
                        ) -> EowcProcessor:
    """The executor whose stateless part and keys a worker applies: built once per worker
    process and query, not once per batch (it holds no state)."""
    return processor_for(query_of(sql), Convention(convention), options=options)


def internal_columns(frame: pd.DataFrame, columns: Schema, time_zone: str = "UTC"
                     ) -> list[list[Any]]:
    """The columns ``columns`` of a pandas frame of source rows as lists of the reference's
    internal values (one vectorised conversion per column; see :func:`internal_value`)."""
    converted = []
    for column in columns:
        series = frame[column.name]
        if column.type.is_time and pd.api.types.is_datetime64_any_dtype(series):
            if series.dt.tz is None and time_zone != "UTC":
                series = series.dt.tz_localize(time_zone)
            if series.dt.tz is not None:
                series = series.dt.tz_convert("UTC").dt.tz_localize(None)
            micros = series.to_numpy(dtype="datetime64[us]").astype("int64").tolist()
            missing = series.isna().tolist()
            converted.append([None if m else v for v, m in zip(micros, missing, strict=True)])
        elif column.type in (SqlType.BIGINT, SqlType.DOUBLE) and series.dtype.kind in "iuf":
            cast = int if column.type is SqlType.BIGINT else float
            missing = series.isna().tolist()
            converted.append([None if m else cast(v)
                              for v, m in zip(series.tolist(), missing, strict=True)])
        else:
            converted.append([internal_value(v, column.type, time_zone) for v in series])
    return converted


def stateless_part(sql: str, convention: str, table: str | None = None,  # noqa: ANN201
                   options: ExecutorOptions = DEFAULT_OPTIONS):
    """The ``mapInPandas`` function of step 2: rows of source ``table`` (the query's source
    when None) with ``_seq`` to ``(_key, _arrival)`` rows, built on the worker from the SQL
    text. ``_arrival`` holds the pickled list of the frame's :class:`Arrival` s for that key
    (one row per key and frame, not per source row: pickling is the step's main cost); for an
    executor that wants it, one more row per key of its ``progress_keys`` (every shard that
    judges a source by its own watermark) holds the frame's :class:`SourceProgress`."""

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        executor = _stateless_executor(sql, convention, options)
        name = table or executor.sources[0].name
        for frame in frames:
            with gc_paused():
                by_key = _keyed_arrivals(frame, executor, name)
                keyed = keyed_frame({key: executor.combine(arrivals)
                                     for key, arrivals in by_key.items()})
                if executor.progress_keys and len(frame):
                    reached = [_progress(frame, executor, name)]
                    keyed = pd.concat([keyed, keyed_frame(
                        dict.fromkeys(executor.progress_keys, reached), SourceProgress)],
                        ignore_index=True)
            yield keyed
    return run


def _source_named(executor: EowcProcessor, table: str) -> Any:
    return next(s for s in executor.sources if s.name == table)


def _progress(frame: pd.DataFrame, executor: EowcProcessor, table: str) -> SourceProgress:
    """The largest event time of the frame's rows (the close row's too: it ends the input)."""
    source = _source_named(executor, table)
    column = source.columns[source.event_time_index]
    (times,) = internal_columns(frame, (column,))
    return SourceProgress(table, max(t for t in times if t is not None))


def _keyed_arrivals(frame: pd.DataFrame, executor: EowcProcessor, table: str
                    ) -> dict[Any, list[tuple[Any, ...]]]:
    """The arrivals the stateless part makes of a frame of ``table``'s rows, by key, as plain
    tuples of :class:`Arrival` 's fields (no named tuple per row: this runs for every row)."""
    source = _source_named(executor, table)
    key_of, stateless = executor.key_of, executor.stateless_of
    time_index = source.event_time_index
    by_key: dict[Any, list[tuple[Any, ...]]] = {}
    values = internal_columns(frame, source.columns)
    for seq, row in zip(frame["_seq"].tolist(), zip(*values, strict=True), strict=True):
        if seq == CLOSE_SEQ:  # only moves the watermark
            continue
        t = row[time_index] if time_index is not None else 0
        made = stateless(table, row)
        for r in made:
            arrival = (seq, len(made), t, r, None)
            key = key_of(r)
            if key in by_key:
                by_key[key].append(arrival)
            else:
                by_key[key] = [arrival]
    return by_key


def keyed_frame(by_key: dict[Any, list[tuple[Any, ...]]],
                kind: type[Arrival | Partial | Rejected | SourceProgress] = Arrival) -> pd.DataFrame:
    """``(_key, _arrival)`` rows: each executor key (:func:`value_text`) and its items, tuples of
    the fields of ``kind`` (plain or named) or :class:`Partial` s, pickled as their class and
    plain tuples (a named tuple pickles five times slower; the items only cross the shuffle,
    never a checkpoint)."""
    return pd.DataFrame([(value_text(key),
                          pickle.dumps((Partial if isinstance(items[0], Partial) else kind,
                                        [tuple(item) for item in items]), protocol=5))
                         for key, items in by_key.items()], columns=["_key", "_arrival"])


def unkeyed(payload: bytes) -> list[Any]:
    """The items of one :func:`keyed_frame` row."""
    kind, tuples = pickle.loads(payload)
    return list(map(kind._make, tuples))


def eowc_stream(source: DataFrame, sql: str, convention: Convention,
                options: ExecutorOptions = DEFAULT_OPTIONS) -> DataFrame:
    """Compile ``sql`` (source DDL + one EOWC query) to a streaming DataFrame of executor
    outputs over ``source``, a streaming DataFrame with the source's columns and ``_seq``;
    the executor runs with ``options`` (e.g. ``ExecutorOptions(sort_partitions=1)``: an EOWC
    sort in one total order)."""
    query: Query = parse_script(sql).query
    return eowc_streams({query.source.name: source}, sql, convention, options)


def eowc_streams(sources: dict[str, DataFrame], sql: str, convention: Convention,
                 options: ExecutorOptions = DEFAULT_OPTIONS) -> DataFrame:
    """:func:`eowc_stream` for a query of several sources (a join): each source's streaming
    DataFrame (its columns and ``_seq``, by source name) gets its watermark and the stateless
    step, and their union goes into one executor. Spark's global watermark is then the
    minimum over the inputs; the composed executor keeps each source's own (executors/composed.py)."""
    query: Query = parse_script(sql).query
    executor = processor_for(query, convention, options=options)  # a PlanError here, on the driver
    arrivals = None
    for src in executor.sources:
        if src.watermark is None or src.event_time_index is None:
            raise ValueError(f"source {src.name} declares no watermark")
        stamped = watermarked(sources[src.name], src)
        keyed = stamped.mapInPandas(stateless_part(sql, convention.value, src.name, options),
                                    ARRIVAL_SCHEMA)
        arrivals = keyed if arrivals is None else arrivals.unionByName(keyed)
    assert arrivals is not None
    return executor_outputs(arrivals, sql, convention, options)


def watermarked(source: DataFrame, declared: Source, time_column: str | None = None
                ) -> DataFrame:
    """Step 1: ``source`` with Spark's watermark on ``time_column`` (``declared``'s
    event-time column when None) and the delay of its ``WATERMARK FOR`` clause (in
    milliseconds, Spark's unit)."""
    assert declared.watermark is not None and declared.event_time_index is not None
    delay_ms = declared.watermark.delay // MICROS_PER_MILLI
    column = time_column or declared.columns[declared.event_time_index].name
    return source.withWatermark(column, f"{delay_ms} milliseconds")


def executor_outputs(arrivals: DataFrame, sql: str, convention: Convention,
                     options: ExecutorOptions = DEFAULT_OPTIONS) -> DataFrame:
    """Steps 3 and 4: ``(_key, _arrival)`` rows through the executor, to ``(_kind, _out)``."""
    return arrivals.groupBy("_key").transformWithStateInPandas(
        SparkProcessor(sql, convention.value, options), OUTPUT_SCHEMA, "Append", "EventTime")
