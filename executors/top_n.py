"""TopN in the executors (window TopN, deduplication): the rows of each partition, in ORDER
BY order (:mod:`eowc.executors.ordering`), whose ROW_NUMBER, RANK or DENSE_RANK is at most
the limit, each with it (peers, rows with equal ORDER BY keys, share a RANK and a
DENSE_RANK). A partition keeps only those rows: rows are only ever added, so ranks only
grow, and a row that does not rank within the limit never will. A ranked row is final once
its bound (its window, or for deduplication its event time) is complete; the bounds never
decrease along a ranking, so the final rows are a prefix of it.

Written for the executors, independently of the reference interpreter's TopN.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from eowc.executors.ordering import order_by_key
from eowc.semantics.ir.expr import Row, compile_expr
from eowc.semantics.ir.plan import TopN
from eowc.semantics.rules.triggers import Watermark


@dataclass(frozen=True)
class TopRanking:
    """A TopN bound to its input schema: a row's partition key and sort key, the limit."""

    node: TopN
    partition: Callable[[Row], Row]
    sort_key: Callable[[Row], Any]

    @property
    def limit(self) -> int:
        return self.node.limit

    def ranks_of(self, orders: list[Any]) -> list[int]:
        """The ranks within the limit of rows whose ORDER BY keys are ``orders`` (sorted):
        ROW_NUMBER numbers them; RANK gives a run of peers the number of its first row;
        DENSE_RANK numbers the runs."""
        function, limit = self.node.function, self.limit
        if function == "row_number":
            return list(range(1, min(len(orders), limit) + 1))
        ranks: list[int] = []
        for number, (run_start, (_, run)) in enumerate(_runs(orders), start=1):
            rank = run_start + 1 if function == "rank" else number
            if rank > limit:
                break
            ranks.extend([rank] * run)
        return ranks


@dataclass
class TopRows:
    """One partition's top rows in rank order, and how many of them were emitted."""

    rows: list[Row] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    emitted: int = 0

    def add(self, ranking: TopRanking, row: Row) -> None:
        """Rank ``row`` among the top rows (it is dropped unless it ranks within the limit)."""
        key = ranking.sort_key(row)
        at = bisect.bisect_right(self.keys, key)
        if at >= ranking.limit and ranking.node.function == "row_number":
            return  # behind the limit: a row number never comes back within it
        self.keys.insert(at, key)
        self.rows.insert(at, row)
        self.ranks = ranking.ranks_of([k[0] for k in self.keys])
        del self.keys[len(self.ranks):], self.rows[len(self.ranks):]

    def ranks_a_later_row(self, ranking: TopRanking) -> bool:
        """Whether a row ordered after every top row would still rank within the limit (its
        row number or rank is one more than the rows kept; its dense rank, one more than the
        last row's)."""
        if not self.rows:
            return True
        after = self.ranks[-1] if ranking.node.function == "dense_rank" else len(self.rows)
        return after + 1 <= ranking.limit

    def next_ranked(self) -> Row | None:
        """The first top row not emitted yet, with its rank (None: every one was)."""
        if self.emitted >= len(self.rows):
            return None
        return self.rows[self.emitted] + (self.ranks[self.emitted],)

    def pop_final(self, bound: Callable[[Row], Any], is_complete: Callable[[Any, Watermark], bool],
                  watermark: Watermark) -> list[tuple[Any, Row]]:
        """The ranked rows, in rank order, whose bound is complete: ``(bound, ranked row)``."""
        done = []
        while (ranked := self.next_ranked()) is not None:
            value = bound(ranked)
            if not is_complete(value, watermark):
                break
            done.append((value, ranked))
            self.emitted += 1
        return done


def _runs(orders: list[Any]) -> list[tuple[int, tuple[Any, int]]]:
    """The runs of equal keys of ``orders``: (position of the run's first row, (key, length))."""
    out: list[tuple[int, tuple[Any, int]]] = []
    position = 0
    for key, members in groupby(orders):
        length = sum(1 for _ in members)
        out.append((position, (key, length)))
        position += length
    return out


def top_ranking(node: TopN, tie: Callable[[Row], Any]) -> TopRanking:
    """Bind ``node``; ``tie`` orders rows with equal ORDER BY keys."""
    schema = node.input.schema
    keys = [compile_expr(e, schema).evaluate for e in node.partition_by]
    order = order_by_key(node.order_by, schema)
    return TopRanking(node, lambda row: tuple(k(row) for k in keys),
                      lambda row: (order(row), tie(row)))
