"""The stable bucket hash (eowc.executors.buckets): keys equal as the reference compares them
share a bucket, and a key's bucket is the same in another Python process with another
PYTHONHASHSEED (Python's own hash of a str is not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eowc.executors.buckets import GROUP_BUCKETS, bucket_of

#: Keys of every kind of internal value: ints, floats, str, Decimal, NULL, arrays, booleans.
KEYS = [(1,), (-7, "bidder-3"), ("é", None), (2.5,), (Decimal("3.14"),), ((1, 2, None),),
        (True, "x"), ("",), (None,), (10**30, "a" * 50), (float("nan"),), (float("-inf"),)]

_SCRIPT = """
import json, sys
from decimal import Decimal
from eowc.executors.buckets import bucket_of
keys = eval(sys.stdin.read(), {"Decimal": Decimal, "nan": float("nan"), "inf": float("inf")})
print(json.dumps([bucket_of(k, 128) for k in keys] + [hash("bidder-3") % 128]))
"""


def _in_subprocess(seed: str) -> list[int]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], input=repr(KEYS), env=env, text=True,
                          capture_output=True, check=True)
    return json.loads(done.stdout)


def test_a_key_has_the_same_bucket_in_processes_with_other_hash_seeds() -> None:
    here = [bucket_of(k, 128) for k in KEYS]
    first, second = _in_subprocess("1"), _in_subprocess("2")
    assert first[:-1] == here and second[:-1] == here
    # what the stable hash is for: Python's hash of a str differs between the two
    # (1 chance in 128 that the check below is vacuous, fixed by the seeds)
    assert first[-1] != second[-1]


@pytest.mark.parametrize("equal", [
    [(1,), (1.0,), (True,), (Decimal("1"),), (Decimal("1.0"),), (Decimal("1.00"),)],
    [(0.5,), (Decimal("0.5"),), (Decimal("0.50"),)],
    [(0,), (-0.0,), (False,), (Decimal("-0"),), (Decimal("0E+3"),)],
    [(float("nan"),), (Decimal("NaN"),)],
    [(float("inf"),), (Decimal("Infinity"),)],
    [((1, 2.0),), ((1.0, Decimal("2")),)],
])
def test_keys_equal_in_sql_share_a_bucket(equal: list[tuple]) -> None:
    assert len({bucket_of(k, 1 << 20) for k in equal}) == 1


def test_keys_that_differ_only_in_how_values_split_do_not_collide_by_construction() -> None:
    # a canonical encoding that concatenated without lengths would give these the same bytes
    pairs = [(("ab", "c"), ("a", "bc")), ((("a",), "b"), (("a", "b"),)), ((None, "N"), ("N", None))]
    for a, b in pairs:
        assert bucket_of(a, 1 << 30) != bucket_of(b, 1 << 30)


def test_a_large_decimal_is_not_mistaken_for_infinity() -> None:
    assert bucket_of((Decimal("1e400"),), 1 << 30) != bucket_of((float("inf"),), 1 << 30)


@given(st.lists(st.tuples(st.integers(), st.text(max_size=4)), min_size=1, max_size=20))
def test_every_bucket_is_in_range(keys: list[tuple]) -> None:
    for buckets in (1, 2, 7, GROUP_BUCKETS):
        assert all(0 <= bucket_of(k, buckets) < buckets for k in keys)
    assert all(bucket_of(k, 1) == 0 for k in keys)


def test_100_keys_spread_over_the_group_buckets() -> None:
    """What spreads a window's groups over Spark's tasks: 100 auctions of one window fill
    most of the 48 buckets (about 42 expected), no bucket with more than a few."""
    counts = Counter(bucket_of((auction, 0, 10_000_000), GROUP_BUCKETS) for auction in range(100))
    assert len(counts) >= 36 and max(counts.values()) <= 7


def test_a_value_without_a_stable_encoding_is_refused() -> None:
    with pytest.raises(TypeError, match="no stable bucket"):
        bucket_of((object(),), 8)
