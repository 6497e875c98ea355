"""Runs an executor of :mod:`executors.processors` inside Spark's
``transformWithStateInPandas``, with Spark's RocksDB state store and event-time timers.

The streaming query a plan compiles to (:func:`eowc_stream`):

1. the source, with ``withWatermark`` on its event-time column: Spark tracks
   ``max(c) - delay`` (in milliseconds) and runs a no-data batch when it moves;
2. ``mapInPandas``: the stateless part of the plan (filters, projections, the window TVF) in
   the reference's own code; each output row becomes ``(_key, _arrival)``, the grouping key
   and the :class:`~executors.processors.Arrival`, pickled. Because the rows leave through a
   new projection, Spark does not drop rows below the watermark before the executor sees them:
   the executor applies the convention's late check itself and reports what it refuses;
3. ``groupBy("_key").transformWithStateInPandas(SparkProcessor(...))``: the executor, one
   grouping key at a time, its states and timers in Spark's state store;
4. output rows ``(_kind, _out)``: ``emit`` with a pickled :class:`~executors.processors.Emit`
   or ``refusal`` with a pickled :class:`~executors.processors.Refusal`.

Values in state and in the exchanged columns are pickled Python values of the reference
(times in microseconds), so the executor sees exactly the values the interpreter sees.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from semantics.plan import Query
from semantics.sql import parse_script
from semantics.triggers import Convention, Watermark
from semantics.values import MICROS_PER_MILLI, SqlType

from ..processors import Arrival, Emit, EowcProcessor, processor_for
from .arrival_source import CLOSE_SEQ

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_BYTES = StructType([StructField("b", BinaryType())])
OUTPUT_SCHEMA = "_kind string, _out binary"
ARRIVAL_SCHEMA = "_key binary, _arrival binary"


def _dump(value: Any) -> tuple[bytes]:
    return (pickle.dumps(value, protocol=5),)


def _load(cell: tuple[bytes] | None) -> Any:
    return None if cell is None else pickle.loads(cell[0])


class _Value:
    def __init__(self, state: Any) -> None:
        self.state = state

    def exists(self) -> bool:
        return self.state.exists()

    def get(self) -> Any:
        return _load(self.state.get())

    def update(self, value: Any) -> None:
        self.state.update(_dump(value))

    def clear(self) -> None:
        self.state.clear()


class _List:
    def __init__(self, state: Any) -> None:
        self.state = state

    def exists(self) -> bool:
        return self.state.exists()

    def get(self) -> Iterator[Any]:
        return (_load(cell) for cell in self.state.get())

    def append(self, value: Any) -> None:
        self.state.appendValue(_dump(value))

    def clear(self) -> None:
        self.state.clear()


class _Map:
    def __init__(self, state: Any) -> None:
        self.state = state

    def exists(self) -> bool:
        return self.state.exists()

    def contains(self, key: Any) -> bool:
        return self.state.containsKey(_dump(key))

    def get(self, key: Any) -> Any:
        return _load(self.state.getValue(_dump(key)))

    def put(self, key: Any, value: Any) -> None:
        self.state.updateValue(_dump(key), _dump(value))

    def remove(self, key: Any) -> None:
        self.state.removeKey(_dump(key))

    def keys(self) -> Iterator[Any]:
        return (_load(cell) for cell in self.state.keys())  # noqa: SIM118 - a Spark MapState

    def clear(self) -> None:
        self.state.clear()


class SparkStateHandle:
    """:class:`executors.state.StateHandle` over Spark's ``StatefulProcessorHandle``."""

    def __init__(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle

    def value_state(self, name: str) -> _Value:
        return _Value(self.handle.getValueState(name, _BYTES))

    def list_state(self, name: str) -> _List:
        return _List(self.handle.getListState(name, _BYTES))

    def map_state(self, name: str) -> _Map:
        return _Map(self.handle.getMapState(name, _BYTES, _BYTES))

    def register_timer(self, expiry_ms: int) -> None:
        self.handle.registerTimer(expiry_ms)

    def delete_timer(self, expiry_ms: int) -> None:
        self.handle.deleteTimer(expiry_ms)

    def timers(self) -> Iterator[int]:
        return iter(self.handle.listTimers())


def _outputs(outputs: Iterator[Any]) -> Iterator[pd.DataFrame]:
    rows = [("emit" if isinstance(o, Emit) else "refusal", pickle.dumps(o, protocol=5))
            for o in outputs]
    if rows:
        yield pd.DataFrame(rows, columns=["_kind", "_out"])


class SparkProcessor(StatefulProcessor):
    """An EOWC executor as a Spark ``StatefulProcessor``. It is shipped to the Python workers
    as the query's SQL text and the convention, and built there (``processor_for``)."""

    def __init__(self, sql: str, convention: str) -> None:
        self.sql, self.convention = sql, convention

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.executor: EowcProcessor = processor_for(parse_script(self.sql).query,
                                                     Convention(self.convention))
        self.executor.init(SparkStateHandle(handle))

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
                        ) -> Iterator[pd.DataFrame]:
        group = pickle.loads(key[0])
        # The frames hold the grouping key, then _arrival, last (their column names vary).
        arrivals = [pickle.loads(b) for frame in rows for b in frame.iloc[:, -1]]
        watermark: Watermark = timerValues.getCurrentWatermarkInMs() * MICROS_PER_MILLI
        yield from _outputs(self.executor.handle_rows(group, arrivals, watermark))

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any
                           ) -> Iterator[pd.DataFrame]:
        group = pickle.loads(key[0])
        watermark: Watermark = timerValues.getCurrentWatermarkInMs() * MICROS_PER_MILLI
        yield from _outputs(self.executor.handle_timer(group, expiredTimerInfo.getExpiryTimeInMs(),
                                                       watermark))

    def close(self) -> None:
        pass


def _internal(value: Any, sql_type: SqlType) -> Any:
    """A pandas cell of the source as the reference's internal value."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if sql_type is SqlType.TIMESTAMP:
        return pd.Timestamp(value).value // 1_000  # nanoseconds -> microseconds
    if sql_type is SqlType.BIGINT:
        return int(value)
    if sql_type is SqlType.DOUBLE:
        return float(value)
    if sql_type is SqlType.BOOLEAN:
        return bool(value)
    return value


@lru_cache(maxsize=8)
def _stateless_executor(sql: str, convention: str) -> EowcProcessor:
    """The executor whose stateless part and keys a worker applies: built once per worker
    process and query, not once per batch (it holds no state)."""
    return processor_for(parse_script(sql).query, Convention(convention))


def stateless_part(sql: str, convention: str):  # noqa: ANN201 - a mapInPandas function
    """The ``mapInPandas`` function of step 2: source rows (with ``_seq``) to
    ``(_key, _arrival)`` rows, built on the worker from the SQL text."""

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        executor = _stateless_executor(sql, convention)
        plan = executor.plan
        columns = plan.compiled.source.columns
        time_index = plan.compiled.source.event_time_index
        for frame in frames:
            out = []
            for values in frame.to_dict("records"):
                if values["_seq"] == CLOSE_SEQ:  # only moves the watermark
                    continue
                row = tuple(_internal(values[c.name], c.type) for c in columns)
                t = row[time_index] if time_index is not None else 0
                made = plan.stateless(row)
                for r in made:
                    out.append((pickle.dumps(executor.key_of(r), protocol=5),
                                pickle.dumps(Arrival(int(values["_seq"]), len(made), t, r),
                                             protocol=5)))
            yield pd.DataFrame(out, columns=["_key", "_arrival"])
    return run


def eowc_stream(source: DataFrame, sql: str, convention: Convention) -> DataFrame:
    """Compile ``sql`` (source DDL + one EOWC query) to a streaming DataFrame of executor
    outputs over ``source``, a streaming DataFrame with the source's columns and ``_seq``."""
    query: Query = parse_script(sql).query
    processor_for(query, convention)  # a PlanError here, on the driver, if it cannot run
    src = query.source
    if src.watermark is None or src.event_time_index is None:
        raise ValueError(f"source {src.name} declares no watermark")
    delay_ms = src.watermark.delay // MICROS_PER_MILLI
    time_column = src.columns[src.event_time_index].name
    stamped = source.withWatermark(time_column, f"{delay_ms} milliseconds")
    arrivals = stamped.mapInPandas(stateless_part(sql, convention.value), ARRIVAL_SCHEMA)
    return arrivals.groupBy("_key").transformWithStateInPandas(
        SparkProcessor(sql, convention.value), OUTPUT_SCHEMA, "Append", "EventTime")
