"""SortBuffer (seed 000): rows kept in a state table whose key starts with the watermark
column, and drained in that order once complete.

The state table is a :class:`~executors.state.MapState` whose keys are ``(bound, tie, n)``:
the row's watermark-column value (a time or a window), the tie-break of ``SEMANTICS.md`` §2,
and the row's insertion number in its shard, which makes every key unique. A cache holds the smallest keys
in sort order so that draining does not scan the state each time. The cache is only an
accelerator: it is rebuilt from the state table after a restart, and a refill takes the
smallest keys *still in the state table*, never "keys after the last one drained", so rows that
share a watermark value are never skipped when the cache refills (the bug of the engine the
seed comes from, where a refill resumed after the last drained sort key).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

from .state import MapState

SortKey = tuple[Any, Any, int]


class SortBuffer:
    """Rows ordered by ``(bound, tie, n)``; ``drain`` pops the complete prefix."""

    def __init__(self, table: MapState, cache_size: int = 64) -> None:
        if cache_size < 1:
            raise ValueError("cache_size must be at least 1")
        self.table = table
        self.cache_size = cache_size
        self._cache: list[SortKey] = []   # the smallest keys of the table, ascending
        self._cache_is_complete = False   # the cache holds every key of the table

    def insert(self, key: SortKey, row: Any) -> None:
        self.table.put(key, row)
        if self._cache_is_complete or (self._cache and key < self._cache[-1]):
            # The new key belongs inside the cached prefix: keep the cache exact.
            self._insort(key)

    def delete(self, key: SortKey) -> None:
        self.table.remove(key)
        if key in self._cache:
            self._cache.remove(key)

    def drain(self, is_complete: Callable[[Any], bool]) -> Iterator[tuple[SortKey, Any]]:
        """Remove and yield, in key order, every row whose bound is complete."""
        while True:
            if not self._cache:
                self._refill()
                if not self._cache:
                    return
            key = self._cache[0]
            if not is_complete(key[0]):
                return
            self._cache.pop(0)
            row = self.table.get(key)
            self.table.remove(key)
            yield key, row

    def first(self) -> SortKey | None:
        """The smallest key in the table, or None when it is empty."""
        if not self._cache:
            self._refill()
        return self._cache[0] if self._cache else None

    def forget_cache(self) -> None:
        """Drop the cache, as a restart does; the next drain rebuilds it from the table."""
        self._cache, self._cache_is_complete = [], False

    def _refill(self) -> None:
        keys = list(self.table.keys())
        self._cache = heapq.nsmallest(self.cache_size, keys)
        self._cache_is_complete = len(keys) <= self.cache_size

    def _insort(self, key: SortKey) -> None:
        lo, hi = 0, len(self._cache)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._cache[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        self._cache.insert(lo, key)
        if len(self._cache) > self.cache_size:
            self._cache.pop()  # the largest cached key stays in the table only
            self._cache_is_complete = False
