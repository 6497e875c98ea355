"""``eowc_arrival_log``: a PySpark streaming data source that replays an arrival log, one epoch of
the log per micro-batch.

Usage::

    register(spark)
    df = (spark.readStream.format("eowc_arrival_log")
          .option("events", "bids.jsonl").option("query", "bids.sql").option("table", "bid")
          .load())

Options:

``events``
    Path of the JSON Lines arrival log (:mod:`eowc.semantics.ir.arrival`).
``query``
    Path of the SQL script whose ``CREATE SOURCE``/``CREATE TABLE`` statements declare the
    sources (:func:`eowc.semantics.frontend.sql.parse_script`; the script must also hold its one query).
``table``
    Which source to read; may be left out when the script declares exactly one.
``max_epochs`` (optional)
    Offer at most this many epochs of the log (to stop a query part-way, e.g. to test a restart
    from its checkpoint with the option left out).
``pacing`` (optional, ``epoch`` or ``settle``; default ``epoch``)
    See "Pacing" below.
``partitions`` (optional, a whole number >= 1; default 2)
    Split each micro-batch into this many partitions of consecutive rows, so that the stateless
    steps after the source run on that many cores. The split depends only on the batch's rows.
``convention`` (optional, ``risingwave``, ``spark`` or ``flink``; default ``risingwave``)
    Whose value rules compute the source's computed columns (Flink's ``name AS expr``), which
    rows get when they arrive (:meth:`eowc.semantics.ir.plan.Source.arrived`).
``close`` (optional, ``true`` or ``false``; default ``false``)
    After the log, one more epoch with a single row whose event time is 2262-01-01 (the end of
    pandas' time range) and whose ``_seq`` is -1: it ends a bounded input by moving Spark's
    watermark past every window (the reference's ``--close``). Consumers drop the row by its
    ``_seq``.

Rows have the source's columns, computed ones included (``TIMESTAMP`` as ``TimestampType`` at
microsecond precision, ``BIGINT`` as ``LongType``, ``DOUBLE`` as ``DoubleType``, ``VARCHAR`` as
``StringType``, ``BOOLEAN`` as ``BooleanType``) plus ``_epoch`` (the epoch the row arrived in,
from 0) and ``_seq`` (the event's position in the whole log, from 0, counting the events of
every table, so the ``_seq`` of one table can have gaps).

Memory
------
The reader in the driver's source-runner process reads and checks the whole log when the query
starts (a bad line fails the query there, naming the file and the line), and writes the
chosen table's rows to a temporary Arrow IPC file, already unlinked (it goes with the process),
in record batches of :data:`SPILL_BATCH_ROWS`; it keeps 8 bytes per epoch in memory, and each
batch it plans reads its rows from that file and ships them to the tasks as Arrow IPC bytes.
10,000,000 events: the runner's peak resident memory was 4,027 MiB with the rows in memory, 180
MiB with them on disk (``benchmarks/spark_vs_native.py --big``). The tasks never read the log's
file, so it need not be visible to a cluster's workers.

Offsets
-------
The offset is ``{"epoch": n}``: the first ``n`` epochs of the log have been made available. The
initial offset is ``{"epoch": 0}``; a micro-batch whose offsets go from ``{"epoch": n}`` to
``{"epoch": n + 1}`` holds exactly the rows of epoch ``n`` of the chosen table (maybe none).

Pacing
------
Spark asks the source for its latest offset (``latestOffset(start, limit)``) once per trigger,
with ``start`` the end offset of the last planned batch (or the one restored from the checkpoint),
and constructs a batch only when some offset differs from ``start`` (or when a stateful operator
asks for a *no-data batch*, see below). This reader never returns more than one epoch beyond
``start``, whatever the read limit, so:

* every epoch of the log is one micro-batch, epochs in order, with no sleeps and no clocks;
* an epoch with no rows of this table is still a micro-batch (an empty one), because the offset
  moves by one epoch all the same; several ``eowc_arrival_log`` sources of one query (one per
  table) therefore move in lock-step, batch ``k`` holding epoch ``k`` of each;
* after the last epoch the reader returns ``start`` itself: no new data, so ``Trigger.AvailableNow``
  ends the query (after a final no-data batch, if an operator asks for one), and a
  processing-time trigger keeps polling without constructing batches;
* on a restart, Spark replays a planned but uncommitted batch with the offsets of its offset log
  (:meth:`partitions` depends only on the offsets it is given) and then asks for new offsets.

``pacing=epoch`` (the default) runs the epochs' batches back to back. Spark then runs a no-data
batch only after the last epoch, because ``MicroBatchExecution.constructNextBatch`` prefers a
batch with new data to a no-data batch. Stateful operators filter late rows with the *previous*
batch's watermark (SEMANTICS.md §3-4), so the rows of epoch ``k`` are judged against the watermark
after epoch ``k - 2``, one epoch behind the model.

``pacing=settle`` follows each epoch's batch by one *settle* batch with no rows: the offsets go
``{"epoch": n, "settled": true}`` -> ``{"epoch": n + 1, "settled": false}`` (epoch ``n``) ->
``{"epoch": n + 1, "settled": true}`` (no rows). The settle batch plays the part of Spark's no-data
batch (its eviction watermark includes epoch ``n``, so windows close there) but it is always
there, it is in the offset log, and it works with ``Trigger.AvailableNow``. The next epoch's batch
then judges late rows against the watermark of all earlier epochs, as the model does (the
"paced" case of SEMANTICS.md §4). Every epoch is two batches.

Stopping and restarting: with ``pacing=epoch`` and a stateful operator, a query stopped after
epoch ``k`` (``max_epochs``) ends with a no-data batch that an uninterrupted run does not have,
which changes both the batch ids and the late filter of epoch ``k + 1``: the output depends on
where the query was stopped. With ``pacing=settle`` Spark never needs a no-data batch, so a run
stopped and restarted anywhere makes the same batches as an uninterrupted one (both checked with
PySpark 4.3 in ``tests/spark``). Use ``settle`` for executors that must match the reference.
"""

from __future__ import annotations

import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    ArrayType as SparkArrayType,
)
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from eowc.executors.spark import CLOSE_SEQ
from eowc.executors.spark.crash_points import CrashPoint, checkpoint_reached, planned_batch
from eowc.semantics.errors import InputError
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import scan_arrival_log
from eowc.semantics.ir.expr import Row
from eowc.semantics.ir.plan import Source
from eowc.semantics.ir.values import ArrayType, SqlType, ValueType, computing_under, decimal_text
from eowc.semantics.rules.triggers import Convention

#: The format name under which :func:`register` makes the source known.
SOURCE_NAME = "eowc_arrival_log"
#: Column with the epoch (from 0) in which the row arrived.
EPOCH_COLUMN = "_epoch"
#: Column with the event's position in the whole arrival log (from 0, all tables counted).
SEQ_COLUMN = "_seq"
#: The pacing modes; see the module documentation.
PACINGS = ("epoch", "settle")

_SPARK_TYPES: dict[SqlType, DataType] = {
    SqlType.TIMESTAMP: TimestampType(),
    SqlType.TIMESTAMPTZ: TimestampType(),  # UTC microseconds, as TIMESTAMP
    SqlType.TIMESTAMP_LTZ: TimestampType(),
    SqlType.DATE: LongType(),  # the microseconds of its midnight
    SqlType.DECIMAL: StringType(),  # its digits, exactly (a Spark decimal would fix the scale)
    SqlType.BIGINT: LongType(),
    SqlType.DOUBLE: DoubleType(),
    SqlType.VARCHAR: StringType(),
    SqlType.BOOLEAN: BooleanType(),
}


def spark_type(sql_type: ValueType) -> DataType:
    """The Spark type of a source column of ``sql_type`` (an ARRAY: Spark's array of its
    element's type); ValueError for a type no source has."""
    if isinstance(sql_type, ArrayType):
        return SparkArrayType(spark_type(sql_type.element), containsNull=True)
    try:
        return _SPARK_TYPES[sql_type]
    except KeyError:
        raise ValueError(f"a source column cannot be of type {sql_type.value}") from None


def spark_schema(source: Source) -> StructType:
    """The schema of the rows of ``source``: its columns, then ``_epoch`` and ``_seq``."""
    fields = [StructField(c.name, spark_type(c.type), True) for c in source.columns]
    fields += [StructField(EPOCH_COLUMN, LongType(), False), StructField(SEQ_COLUMN, LongType(), False)]
    return StructType(fields)


def _read_script(path: str) -> Script:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise InputError(path, None, f"cannot read the file: {error.strerror}") from None
    return parse_script(text)


def _required(options: Any, name: str) -> str:
    value = options.get(name)
    if not value:
        raise ValueError(f"the {SOURCE_NAME} source needs the option {name!r} "
                         "(options: events, query, table, max_epochs, pacing, partitions, close)")
    return str(value)


def _chosen_source(script: Script, table: str | None, query_path: str) -> Source:
    if table is None:
        if len(script.sources) != 1:
            raise ValueError(f"{query_path} declares {len(script.sources)} sources "
                             f"({', '.join(sorted(script.sources))}); choose one with the option 'table'")
        return next(iter(script.sources.values()))
    if table not in script.sources:
        raise ValueError(f"table {table!r} is not declared in {query_path} "
                         f"(declared: {', '.join(sorted(script.sources)) or 'none'})")
    return script.sources[table]


@dataclass(frozen=True)
class SourceOptions:
    """The options of one ``eowc_arrival_log`` read, checked."""

    events: str
    query: str
    table: str | None
    max_epochs: int | None
    pacing: str
    close: bool = False
    partitions: int = 2
    convention: str = Convention.RISINGWAVE.value

    @classmethod
    def parse(cls, options: Any) -> SourceOptions:
        """Check the (case-insensitive) options map Spark gives a data source."""
        max_epochs = _whole_number(options, "max_epochs", 0)
        partitions = _whole_number(options, "partitions", 1)
        pacing = str(options.get("pacing") or "epoch").lower()
        if pacing not in PACINGS:
            raise ValueError(f"option pacing must be one of {', '.join(PACINGS)}, got {pacing!r}")
        close = str(options.get("close") or "false").lower()
        if close not in ("true", "false"):
            raise ValueError(f"option close must be true or false, got {close!r}")
        convention = str(options.get("convention") or Convention.RISINGWAVE.value).lower()
        if convention not in [c.value for c in Convention]:
            raise ValueError(f"option convention must be one of "
                             f"{', '.join(c.value for c in Convention)}, got {convention!r}")
        return cls(events=_required(options, "events"), query=_required(options, "query"),
                   table=options.get("table") or None, max_epochs=max_epochs, pacing=pacing,
                   close=close == "true", partitions=2 if partitions is None else partitions,
                   convention=convention)


def _whole_number(options: Any, name: str, least: int) -> int | None:
    """The option ``name`` as a whole number >= ``least``, or None when it is not given."""
    text = options.get(name)
    if text in (None, ""):
        return None
    try:
        number = int(text)
    except ValueError:
        number = least - 1
    if number < least:
        raise ValueError(f"option {name} must be a whole number >= {least}, got {text!r}")
    return number


#: Rows per Arrow record batch of a :class:`TableIndex`'s spill file.
SPILL_BATCH_ROWS = 8192


@dataclass(frozen=True)
class TableIndex:
    """One table's events of the arrival log, read and checked once, kept on disk, not in
    memory (the planner of every batch holds this for the query's whole run): ``spill`` is an
    Arrow IPC file of the table's rows in arrival order, as :meth:`ArrivalLogStreamReader.read`
    gives them (``_seq`` included; ``_epoch`` is set from ``bounds``), in record batches of
    :data:`SPILL_BATCH_ROWS` rows; epoch ``e`` holds its rows from ``bounds[e]`` up to
    ``bounds[e + 1]``. The file is unlinked once open: it goes with the process."""

    bounds: array[int]
    spill: pa.ipc.RecordBatchFileReader

    @property
    def epochs(self) -> int:
        return len(self.bounds) - 1

    def rows(self, low: int, high: int) -> pa.RecordBatch:
        """The rows from ``low`` up to ``high`` (arrival order, ``low < high``) as one record
        batch, each with its epoch."""
        first, last = low // SPILL_BATCH_ROWS, (high - 1) // SPILL_BATCH_ROWS
        pieces = [self.spill.get_batch(i) for i in range(first, last + 1)]
        table = pa.Table.from_batches(pieces, schema=self.spill.schema)
        table = table.slice(low - first * SPILL_BATCH_ROWS, high - low)
        epochs = []
        for e in range(bisect_right(self.bounds, low) - 1, len(self.bounds) - 1):
            rows_of_epoch = min(self.bounds[e + 1], high) - max(self.bounds[e], low)
            if rows_of_epoch > 0:
                epochs += [e] * rows_of_epoch
            if self.bounds[e + 1] >= high:
                break
        column = table.schema.get_field_index(EPOCH_COLUMN)
        table = table.set_column(column, table.schema.field(column), pa.array(epochs, pa.int64()))
        return table.combine_chunks().to_batches(max_chunksize=high - low)[0]


#: Its event time, 2262-01-01 00:00:00 (pandas, which carries rows into Python workers, counts
#: nanoseconds and ends in April 2262): it moves Spark's watermark past every window of any
#: realistic log, as the reference's ``--close`` moves it to +infinity.
CLOSE_TIME = 9_214_646_400_000_000


class _Spill:
    """Rows written to an Arrow IPC file in record batches of :data:`SPILL_BATCH_ROWS`."""

    def __init__(self, schema: StructType) -> None:
        self.schema = to_arrow_schema(schema, timezone="UTC")
        # Unlinked already; open as long as the index (the process) lives.
        self.file = tempfile.TemporaryFile(prefix="eowc-arrival-log-")  # noqa: SIM115
        self.writer = pa.ipc.new_file(self.file, self.schema)
        self.pending: list[tuple[Any, ...]] = []
        self.count = 0

    def add(self, seq: int, row: Row) -> None:
        self.pending.append((*map(_cell, row), 0, seq))  # _epoch: see TableIndex.rows
        self.count += 1
        if len(self.pending) == SPILL_BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        columns = list(zip(*self.pending, strict=True)) if self.pending else \
            [()] * len(self.schema)
        self.writer.write_batch(pa.RecordBatch.from_arrays(
            [pa.array(values, type=field.type) for values, field in zip(columns, self.schema,
                                                                         strict=True)],
            schema=self.schema))
        self.pending = []

    def reader(self) -> pa.ipc.RecordBatchFileReader:
        if self.pending:
            self._flush()
        self.writer.close()
        self.file.seek(0)
        return pa.ipc.open_file(self.file)


def index_table_log(events_path: str, query_path: str, table: str | None = None,
                    close: bool = False, convention: Convention = Convention.RISINGWAVE
                    ) -> TableIndex:
    """Check the script and the whole arrival log (as the reference reads it) and keep one
    table's events (:class:`TableIndex`). With ``close``, one more epoch holds a single row
    with ``_seq`` = :data:`CLOSE_SEQ` and the event time :data:`CLOSE_TIME` (other columns
    NULL), for consumers to drop. Computed columns are computed under ``convention``'s value
    rules. Raises :class:`~eowc.semantics.errors.InputError` (file and line) for a bad log or
    unreadable file."""
    script = _read_script(query_path)
    source = _chosen_source(script, table, query_path)
    if close and source.event_time_index is None:
        raise ValueError(f"option close needs a watermark on {source.name}")
    spill = _Spill(spark_schema(source))
    at_barriers = array("q", [0])
    at_events: array[int] | None = array("q", [0])  # without barriers: an epoch per event
    after_barrier, seq = 0, 0  # events since the last barrier, and in all (every table)
    with computing_under(convention.values):
        for event in scan_arrival_log(events_path, script.sources):
            if event is None:
                at_barriers.append(spill.count)
                at_events, after_barrier = None, 0
                continue
            if event.table == source.name:
                spill.add(seq, event.row)
            seq += 1
            after_barrier += 1
            if at_events is not None:
                at_events.append(spill.count)
    bounds = at_events if at_events is not None else at_barriers
    if at_events is None and after_barrier:
        bounds.append(spill.count)
    if close:
        spill.add(CLOSE_SEQ, tuple(
            CLOSE_TIME if i == source.event_time_index else None for i in range(len(source.columns))))
        bounds.append(spill.count)
    return TableIndex(bounds, spill.reader())


class EpochRows(InputPartition):
    """The rows of one micro-batch (in arrival order): the Arrow record batch the executors
    read, as an Arrow IPC stream."""

    def __init__(self, rows: pa.RecordBatch) -> None:
        super().__init__(rows.num_rows)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as stream:
            stream.write_batch(rows)
        self.stream = sink.getvalue().to_pybytes()

    @property
    def rows(self) -> pa.RecordBatch:
        return pa.ipc.open_stream(self.stream).read_next_batch()


class ArrivalLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offers the epochs of the log one at a time; see the module documentation.

    Spark creates one reader in the driver's source-runner process, which plans offsets and
    partitions from the log's :class:`TableIndex` (built on first use: the rows on disk, not
    in memory), and pickles another into the read function sent to the executors, which only
    uses :meth:`read`: it yields the rows its partition carries.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._index: TableIndex | None = None

    def __getstate__(self) -> dict[str, Any]:
        """The reader without its index: the read function sent to the executors needs none."""
        return {**self.__dict__, "_index": None}

    @property
    def index(self) -> TableIndex:
        if self._index is None:
            self._index = index_table_log(self.options.events, self.options.query,
                                          self.options.table, self.options.close,
                                          Convention(self.options.convention))
        return self._index

    @property
    def available(self) -> int:
        """How many epochs may be offered: the whole log, or ``max_epochs`` of it."""
        count = self.index.epochs
        return count if self.options.max_epochs is None else min(count, self.options.max_epochs)

    # -- offsets

    def _offset(self, epoch: int, settled: bool) -> dict[str, Any]:
        if self.options.pacing == "settle":
            return {"epoch": epoch, "settled": settled}
        return {"epoch": epoch}

    def _check(self, offset: Any) -> tuple[int, bool]:
        """The epoch count of an offset and whether it is settled (always, in ``epoch`` pacing)."""
        settle = self.options.pacing == "settle"
        keys = {"epoch", "settled"} if settle else {"epoch"}
        epoch = offset.get("epoch") if isinstance(offset, dict) else None
        if not isinstance(epoch, int) or epoch < 0 or set(offset) != keys:
            raise ValueError(f"the checkpoint holds the offset {offset!r}, which {SOURCE_NAME} with "
                             f"pacing={self.options.pacing} does not write (its offsets look like "
                             f"{self._offset(1, False)}); restart with the pacing the checkpoint "
                             "was written with, or with a new checkpoint")
        return epoch, bool(offset["settled"]) if settle else True

    def initialOffset(self) -> dict[str, Any]:
        """No epoch available yet."""
        return self._offset(0, True)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """At most one step beyond ``start``, ignoring ``limit``: one epoch, or (``settle``
        pacing) the settle step of the epoch just offered; ``start`` itself when done."""
        checkpoint_reached(CrashPoint.BEFORE_BATCH, planned_batch(start, self.available))
        epoch, settled = self._check(start)
        if not settled:
            return self._offset(epoch, True)
        if epoch < self.available:
            return self._offset(epoch + 1, False)
        return start

    def prepareForTriggerAvailableNow(self) -> None:
        """The log is a fixed file: everything in it (up to ``max_epochs``) is the target."""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The rows of epochs ``start.epoch`` to ``end.epoch - 1`` in (at most) ``partitions``
        partitions of consecutive rows, or none when those epochs have no rows of this table
        (an empty batch)."""
        first, _ = self._check(start)
        stop, _ = self._check(end)
        index = self.index
        if stop > index.epochs:
            raise ValueError(f"the checkpoint's offset {end!r} is beyond the end of "
                             f"{self.options.events}, which has {index.epochs} epochs; "
                             "was the arrival log changed?")
        low, high = index.bounds[first], index.bounds[stop]
        size = max(1, -(-(high - low) // self.options.partitions))
        return [EpochRows(index.rows(at, min(at + size, high))) for at in range(low, high, size)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The partition's rows: one Arrow batch (exact microsecond timestamps)."""
        assert isinstance(partition, EpochRows)
        yield partition.rows

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the log stays readable for replays."""


def _cell(value: Any) -> Any:
    """A source value as its Arrow cell: a DECIMAL as its digits (a string column), an ARRAY
    as a list of its elements' cells."""
    if isinstance(value, tuple):
        return [_cell(v) for v in value]
    return decimal_text(value) if isinstance(value, Decimal) else value


class ArrivalLogDataSource(DataSource):
    """The ``eowc_arrival_log`` data source (streaming reads only)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        options = SourceOptions.parse(self.options)
        return spark_schema(_chosen_source(_read_script(options.query), options.table, options.query))

    def streamReader(self, schema: StructType) -> ArrivalLogStreamReader:
        return ArrivalLogStreamReader(SourceOptions.parse(self.options), schema)


def register(spark: SparkSession) -> None:
    """Make ``eowc_arrival_log`` known to ``spark`` (repeating it is harmless)."""
    spark.dataSource.register(ArrivalLogDataSource)


def arrival_stream(spark: SparkSession, events: str, query: str, table: str | None = None, *,
                   max_epochs: int | None = None, pacing: str = "epoch") -> DataFrame:
    """A streaming DataFrame of one table of an arrival log (registers the source first)."""
    register(spark)
    reader = spark.readStream.format(SOURCE_NAME).option("events", events).option("query", query)
    if table is not None:
        reader = reader.option("table", table)
    if max_epochs is not None:
        reader = reader.option("max_epochs", str(max_epochs))
    return reader.option("pacing", pacing).load()
