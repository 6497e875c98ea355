"""SortBuffer (seed 000): rows kept in a state table whose key starts with the watermark
column, and drained in that order once complete.

Every row has a sort key ``(bound, n)``: its watermark-column value (a time or a window) and
its insertion number in the shard, which makes keys unique. (The tie-break of ``SEMANTICS.md``
§2 orders the rows of a drain when they are emitted, see
:meth:`~eowc.executors.processors.EowcSort.handle_timer`: rows of one bound drain together;
keeping it in the key would nearly double the bytes every buffered row costs.) The state table is a
:class:`~eowc.executors.state.MapState` of **sorted runs**: one entry per run, holding ``(key,
row)`` pairs in key order, stored under the key of its first row (so the table's keys start
with the watermark column, as the seed's do). Spark's state API moves one
entry per call, so a run per micro-batch, not an entry per row, is what makes the buffer fast:

* ``insert`` writes the rows of one call as one run;
* ``drain`` loads only the runs whose first row is complete (the others hold no complete row:
  a run is sorted and completion is monotone in the bound), merges them, pops the complete
  prefix and writes what is left as one run;
* ``insert_and_drain`` is ``insert`` then ``drain``, except that the new rows already complete
  never go through the table (a join's output rows are nearly all complete when made).

The cache is the sorted list of run keys (a handful: the micro-batches still waiting), read
from the table after a restart. A drain takes whole runs and never resumes "after the last
drained sort key", so rows that share a watermark value are never skipped (the bug of the
engine the seed comes from, where a cache refill resumed after the last drained key).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from itertools import chain
from operator import itemgetter
from typing import Any

from eowc.executors.state import MapState

SortKey = tuple[Any, int]
Run = list[tuple[SortKey, Any]]
_sort_key = itemgetter(0)


class SortBuffer:
    """Rows ordered by ``(bound, n)``; ``drain`` pops the complete prefix."""

    def __init__(self, table: MapState) -> None:
        self.table = table
        self._runs: list[SortKey] | None = None  # the run keys, ascending; None: not read yet

    def insert(self, rows: Iterable[tuple[SortKey, Any]]) -> None:
        """Buffer ``rows`` (``(key, row)`` pairs with keys not in the buffer) as one run."""
        run = sorted(rows, key=_sort_key)
        if run:
            self._put(run)

    def delete(self, key: SortKey) -> None:
        """Remove the row with sort key ``key``, if buffered."""
        for first in [k for k in self._run_keys() if k <= key]:
            run: Run = self.table.get(first)
            at = bisect.bisect_left(run, key, key=_sort_key)
            if at < len(run) and run[at][0] == key:
                self._remove(first)
                del run[at]
                if run:
                    self._put(run)
                return

    def drain(self, is_complete: Callable[[Any], bool]) -> list[tuple[SortKey, Any]]:
        """Remove and return, in key order, every row whose bound is complete."""
        runs_keys = self._run_keys()
        # The complete runs are a prefix of the sorted run keys (completion is monotone).
        due = runs_keys[:bisect.bisect_left(runs_keys, True, key=lambda first: not is_complete(first[0]))]
        if not due:
            return []
        runs = [self.table.get(first) for first in due]
        # Sorting the concatenated runs merges them (Timsort finds the runs).
        merged = runs[0] if len(runs) == 1 else sorted(chain.from_iterable(runs), key=_sort_key)
        for first in due:
            self._remove(first)
        # The complete rows are a prefix (completion is monotone in the bound): its end.
        done = bisect.bisect_left(merged, True, key=lambda entry: not is_complete(entry[0][0]))
        if done < len(merged):
            self._put(merged[done:])
        return merged[:done]

    def insert_and_drain(self, rows: Iterable[tuple[SortKey, Any]],
                         is_complete: Callable[[Any], bool]) -> list[tuple[SortKey, Any]]:
        """``insert(rows)`` then ``drain(is_complete)``: the same rows out, in the same
        order, and the same rows kept; the complete ones of ``rows`` are neither written nor
        read back."""
        run = sorted(rows, key=_sort_key)
        done = bisect.bisect_left(run, True, key=lambda entry: not is_complete(entry[0][0]))
        if done < len(run):
            self._put(run[done:])
        drained, fresh = self.drain(is_complete), run[:done]
        if not drained or not fresh:
            return drained or fresh
        return sorted(chain(drained, fresh), key=_sort_key)  # two sorted runs: one merge

    def first(self) -> SortKey | None:
        """The smallest buffered key, or None when the buffer is empty."""
        runs = self._run_keys()
        return runs[0] if runs else None

    def forget_cache(self) -> None:
        """Drop the cache, as a restart does; it is read again from the table when needed."""
        self._runs = None

    def _run_keys(self) -> list[SortKey]:
        if self._runs is None:
            self._runs = sorted(self.table.keys())
        return self._runs

    def _put(self, run: Run) -> None:
        runs = self._run_keys()  # read before the write, which it must not see twice
        self.table.put(run[0][0], run)
        bisect.insort(runs, run[0][0])

    def _remove(self, first: SortKey) -> None:
        self._run_keys().remove(first)
        self.table.remove(first)
