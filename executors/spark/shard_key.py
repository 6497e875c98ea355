"""An executor's shard computed by Spark from the source row, in the JVM: the ``_key`` text
of :func:`~eowc.executors.buckets.bucket_of` for a :class:`~eowc.executors.plan.SourceShard`.

Where the source's columns alone decide an executor's key (a partition key or a group that is
a column of the source), the source rows are sharded by this expression and the stateless part
runs beside the executor (:mod:`eowc.executors.spark.adapter`), instead of in a Python stage
of its own before the shuffle. It must give exactly the bucket Python gives, or a key's rows
would be split over two shards: it restates :mod:`eowc.executors.buckets` in Spark SQL for
the column types whose canonical bytes Spark can write (BIGINT, BOOLEAN, VARCHAR and the
time types, and the bounds of a TUMBLE window), and the executor checks every row's key
against its shard (``tests/spark/test_shard_key.py`` compares the two on random values).

The canonical bytes of a value (``buckets._encoded``): ``N`` for NULL, ``n<digits>;`` for
an integer (a boolean is 1 or 0, a time its microseconds), ``s<length>:<UTF-8>`` for a
string; the key's hash is the CRC-32 of their concatenation, mixed by MurmurHash3's fmix32.
Spark's ``crc32`` is the same CRC-32; fmix32's 32-bit products are taken in 16-bit halves so
that no 64-bit product overflows (ANSI mode would fail the query).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from eowc.executors.plan import SourceShard, SourceTerm
from eowc.semantics.ir.expr import Schema
from eowc.semantics.ir.values import SqlType, ValueType

_LOW_32 = 0xFFFFFFFF


def shard_key(shard: SourceShard, columns: Schema) -> Column:
    """The ``_key`` text (``[b]``) of the bucket of a source row's :meth:`SourceShard.values`
    (the row's ``columns`` by name; of :data:`~eowc.executors.spark.SHARDABLE` types:
    :func:`~eowc.executors.spark.spark_shard`)."""
    values = [_term(term, columns) for term in shard.terms]
    encoded = [F.coalesce(_encoded(column, sql_type), F.lit("N")) for column, sql_type in values]
    text = F.concat(*encoded) if encoded else F.lit("")
    bucket = F.lit(0) if shard.buckets == 1 else _fmix32(F.crc32(text.cast("binary"))) % shard.buckets
    return F.concat(F.lit("["), bucket.cast("string"), F.lit("]"))


def _term(term: SourceTerm, columns: Schema) -> tuple[Column, ValueType]:
    """A source term as a Spark column and its type (a window bound: microseconds)."""
    if isinstance(term, int):
        return F.col(columns[term].name), columns[term].type
    time = columns[term.column]
    micros = F.unix_micros(F.col(time.name))
    start = micros - F.pmod(micros - F.lit(term.offset), F.lit(term.size))
    return (start + F.lit(term.size) if term.end else start), SqlType.BIGINT


def _encoded(column: Column, sql_type: ValueType) -> Column:
    """A value's canonical bytes as text (NULL for NULL)."""
    if sql_type is SqlType.VARCHAR:
        return F.concat(F.lit("s"), F.octet_length(column).cast("string"), F.lit(":"), column)
    if sql_type is SqlType.BOOLEAN:
        digits = F.when(column, F.lit("1")).when(~column, F.lit("0"))
    elif sql_type is SqlType.BIGINT:
        digits = column.cast("string")
    else:
        digits = F.unix_micros(column).cast("string")
    return F.concat(F.lit("n"), digits, F.lit(";"))


def _fmix32(h: Column) -> Column:
    """MurmurHash3's 32-bit finalizer of ``h`` (a BIGINT in ``[0, 2**32)``)."""
    h = h.bitwiseXOR(F.shiftright(h, 16))
    h = _times(h, 0x85EBCA6B)
    h = h.bitwiseXOR(F.shiftright(h, 13))
    h = _times(h, 0xC2B2AE35)
    return h.bitwiseXOR(F.shiftright(h, 16))


def _times(h: Column, factor: int) -> Column:
    """``h * factor`` modulo 2**32, for ``h`` and ``factor`` below 2**32: with ``h = high *
    2**16 + low``, ``(high * factor mod 2**16) * 2**16 + low * factor`` (each product below
    2**48)."""
    high, low = F.shiftright(h, 16), h.bitwiseAND(F.lit(0xFFFF))
    high_part = (high * F.lit(factor)).bitwiseAND(F.lit(0xFFFF)) * F.lit(1 << 16)
    return (high_part + low * F.lit(factor)).bitwiseAND(F.lit(_LOW_32))
