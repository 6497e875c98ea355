"""The one stable hash of the executors' keys: which hash bucket a key (a tuple of internal
values) belongs to, the same in every Python process and after a restart.

Executors key their state by buckets of a key where one Spark key per group or row would
cost a state-store round trip each (:mod:`eowc.executors.processors`): a group aggregate by
(window, bucket of the group), the EOWC sort by the bucket of a row's primary key (its
partition). A bucket is part of a key kept in a checkpoint, so it must not depend on the
process: Python's ``hash()`` of a str is randomized per process (``PYTHONHASHSEED``), so
the bucket is the CRC-32 of a canonical encoding of the key instead, mixed by MurmurHash3's
32-bit finalizer (CRC-32 is linear: alone, keys that differ in a digit or two crowd into few
buckets).

Keys that are equal as the reference compares them (Python equality of internal values) get
the same bucket: every number is encoded as its exact ratio of integers, so ``1``, ``1.0``,
``True``, ``Decimal('1.0')`` and ``Decimal('1.00')`` are alike, and so are ``0.5`` and
``Decimal('0.5')``; a NaN is one value (SQL groups NaNs together); an ARRAY (a tuple) is its
elements in order.
"""

from __future__ import annotations

import math
import zlib
from decimal import Decimal
from functools import lru_cache
from typing import Any

from eowc.semantics.ir.expr import Row

#: The hash buckets of a group aggregate's groups (EowcGroupAgg, SortAgg): its shards, keyed
#: ``(bucket,)``. Few enough that a micro-batch costs few state calls (a handful per bucket,
#: each a round trip to Spark's JVM of about 0.1 ms), enough that Spark's shuffle spreads them
#: over every task. Spark hashes the key texts ``[0]`` ... ``[47]`` so that the busiest of 2,
#: 4, 8 and 16 shuffle partitions gets 25, 14, 10 and 5 of the 48 (ideal: 24, 12, 6, 3); of
#: 64 buckets it would get 37, 19, 14 and 8 (``tests/spark/test_bucket_spread.py``). A
#: bucket is part of the state's key: changing this number makes a checkpoint unreadable by
#: the executor.
GROUP_BUCKETS = 48


def bucket_of(key: Row, buckets: int) -> int:
    """The bucket (``0 <= b < buckets``) of ``key``: equal keys (Python equality of internal
    values) get equal buckets in every process."""
    if buckets == 1:
        return 0
    return _hash(key) % buckets


@lru_cache(maxsize=1 << 16)
def _hash(key: Row) -> int:
    """The key's stable 32-bit hash: CRC-32 of its encoding, then MurmurHash3's fmix32."""
    h = zlib.crc32(b"".join(_encoded(value) for value in key))
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _encoded(value: Any) -> bytes:
    """The canonical bytes of one internal value, length-prefixed where variable, so that no
    two different keys concatenate to the same bytes."""
    if value is None:
        return b"N"
    if type(value) is int or type(value) is bool:
        return b"n%d;" % value
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        return b"s%d:%s" % (len(data), data)
    if isinstance(value, float | Decimal):
        return _number(value)
    if isinstance(value, tuple | list):
        inner = b"".join(_encoded(v) for v in value)
        return b"a%d:%s" % (len(inner), inner)
    if isinstance(value, bytes):
        return b"b%d:%s" % (len(value), value)
    if isinstance(value, int):  # an int subclass (an enum of ints)
        return b"n%d;" % int(value)
    raise TypeError(f"no stable bucket for a key value of type {type(value).__name__}: {value!r}")


def _number(value: float | Decimal) -> bytes:
    """A float or a Decimal as its exact ratio (an integer as ints are), NaN and infinities by
    name: values equal in Python encode alike."""
    if value != value:  # NaN (float or Decimal)
        return b"nan;"
    if value.is_infinite() if isinstance(value, Decimal) else math.isinf(value):
        return b"inf;" if value > 0 else b"-inf;"
    numerator, denominator = value.as_integer_ratio()
    if denominator == 1:
        return b"n%d;" % numerator
    return b"n%d/%d;" % (numerator, denominator)
