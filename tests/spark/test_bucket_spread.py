"""How Spark spreads the executors' bucket keys over its shuffle partitions: the figures behind
``GROUP_BUCKETS`` (executors/buckets.py) and ``SORT_PARTITIONS`` (executors/plan.py).

A bucket's key is the text ``[b]`` (:func:`~eowc.executors.spark.typed_state.value_text` of
``(b,)``), and Spark sends a key to the shuffle partition ``pmod(hash(_key), n)`` (Murmur3,
the partitioning of ``groupBy("_key")``). Those texts are fixed, so how many of the buckets the
busiest of ``n`` partitions gets is fixed too: Spark computes it here.
"""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

from eowc.executors.buckets import GROUP_BUCKETS
from eowc.executors.plan import SORT_PARTITIONS
from eowc.executors.spark.typed_state import value_text


def busiest(spark, buckets: int, partitions: int) -> int:
    """How many of ``buckets`` bucket keys the busiest of ``partitions`` partitions gets."""
    keys = spark.createDataFrame([(value_text((b,)),) for b in range(buckets)], "_key string")
    chosen = keys.select(F.expr(f"pmod(hash(_key), {partitions})").alias("p")).collect()
    return max(Counter(row.p for row in chosen).values())


@pytest.mark.parametrize(("buckets", "expected"), [
    (GROUP_BUCKETS, {2: 25, 4: 14, 8: 10, 16: 5}),   # the group aggregate's 48
    (64, {2: 37, 4: 19, 8: 14, 16: 8}),              # what 64 would give: worse everywhere
    (SORT_PARTITIONS, {8: 8}),                       # the sort's 32: a quarter of them at most
    (16, {8: 5}),                                    # the sort's 16 before: 5 of 16 on one
])
def test_the_busiest_partition_gets_the_documented_buckets(spark, buckets: int,
                                                           expected: dict[int, int]) -> None:
    assert {n: busiest(spark, buckets, n) for n in expected} == expected
    assert GROUP_BUCKETS == 48 and SORT_PARTITIONS == 32  # the constants the docs name
