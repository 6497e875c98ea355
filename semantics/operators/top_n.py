"""TopN (seed 004's window TopN, and deduplication): the rows of each partition whose
ROW_NUMBER (the first ``limit`` rows in ORDER BY order), RANK or DENSE_RANK is at most
``limit``, each with that rank. Under RANK and DENSE_RANK peers (equal ORDER BY values) share
a rank, so a partition can give more than ``limit`` rows (Flink's and RisingWave's RANK TopN).

Rows are ordered as in an OVER window (:class:`eowc.semantics.operators.over.CompiledOver`: NULLS LAST
ascending, FIRST descending, ties broken by :func:`eowc.semantics.ir.plan.tie_break`), so the ranks
are a total order and the same in every run. Two EOWC shapes are valid
(:func:`eowc.semantics.analysis.completion.completion_rule`):

* **window TopN**, partitioned by a window's ``window_start``/``window_end``: a window's rows
  are ranked once it closes (``window_closes``);
* **deduplication**, ordered by the watermark column ascending: a row's rank is final once its
  event time is complete (``time_is_complete``): no row that can still arrive sorts before it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from eowc.semantics.ir.expr import Row, compile_expr
from eowc.semantics.ir.plan import TopN
from eowc.semantics.operators.over import order_key_function


@dataclass(frozen=True)
class CompiledTopN:
    """A TopN bound to its input schema."""

    node: TopN
    partition: Callable[[Row], Row]
    sort_key: Callable[[Row], Any]

    @property
    def limit(self) -> int:
        return self.node.limit

    def ranks(self, keys: Iterable[Any]) -> list[int]:
        """The rank of each row whose sort keys (:attr:`sort_key`, ascending) are ``keys``,
        under the node's function, as long as it is within the limit (the rows after are
        cut; ``keys`` is read no further)."""
        function = self.node.function
        out: list[int] = []
        previous = None
        for position, key in enumerate(keys):
            order = key[0]
            if function == "row_number":
                rank = position + 1
            elif out and order == previous:
                rank = out[-1]  # a peer shares the rank
            elif function == "rank":
                rank = position + 1
            else:  # dense_rank: one more than the previous distinct value's
                rank = out[-1] + 1 if out else 1
            if rank > self.limit:
                break
            out.append(rank)
            previous = order
        return out

    def head(self, ordered: Sequence[Row]) -> list[Row]:
        """The rows of ``ordered`` (sorted) that rank within the limit: a prefix."""
        return list(ordered[:len(self.ranks(map(self.sort_key, ordered)))])

    def ranked(self, rows: Sequence[Row]) -> list[Row]:
        """One partition's top rows (any order in), sorted, each with its rank appended."""
        ordered = sorted(rows, key=self.sort_key)
        ranks = self.ranks(map(self.sort_key, ordered))
        return [row + (rank,) for row, rank in zip(ordered, ranks, strict=False)]


def compile_top_n(node: TopN, tie: Callable[[Row], Any]) -> CompiledTopN:
    schema = node.input.schema
    partition = [compile_expr(e, schema).evaluate for e in node.partition_by]
    order = order_key_function(node.order_by, schema)
    return CompiledTopN(node, lambda row: tuple(f(row) for f in partition),
                        lambda row: (order(row), tie(row)))


def top_n_results(compiled: CompiledTopN, rows: Sequence[Row]) -> list[Row]:
    """``rows`` (a batch) reduced to each partition's top rows, ranked (Q over INPUT)."""
    partitions: dict[Row, list[Row]] = {}
    for row in rows:
        partitions.setdefault(compiled.partition(row), []).append(row)
    return [ranked for members in partitions.values() for ranked in compiled.ranked(members)]


class TopNPartition:
    """One partition's rows, kept sorted, and how many of its top rows were emitted."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.keys: list[Any] = []
        self.ranks: list[int] = []
        self.emitted = 0

    def add(self, compiled: CompiledTopN, row: Row) -> None:
        key = compiled.sort_key(row)
        at = bisect.bisect_right(self.keys, key)
        if at >= compiled.limit and compiled.node.function == "row_number":
            return  # rows are only ever added: it can never rank within the limit
        self.keys.insert(at, key)
        self.rows.insert(at, row)
        self.ranks = compiled.ranks(self.keys)
        # rows are only ever added, so ranks only grow: a row past the limit never comes back
        del self.keys[len(self.ranks):], self.rows[len(self.ranks):]

    def next_ranked(self) -> Row | None:
        """The first top row not emitted yet, with its rank appended (None: all emitted)."""
        if self.emitted >= len(self.rows):
            return None
        return self.rows[self.emitted] + (self.ranks[self.emitted],)

    def pop_complete(self, bound: Callable[[Row], Any], is_complete: Callable[[Any, Any], bool],
                     watermark: Any) -> list[tuple[Any, Row]]:
        """The ranked rows, in rank order, whose ``bound`` is now complete, each ``(bound,
        ranked row)``: a prefix of the ranking, since a row's bound never comes before an
        earlier rank's."""
        done = []
        while (ranked := self.next_ranked()) is not None:
            value = bound(ranked)
            if not is_complete(value, watermark):
                break
            done.append((value, ranked))
            self.emitted += 1
        return done
