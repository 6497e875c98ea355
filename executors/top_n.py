"""TopN in the executors (window TopN, deduplication): the first ``limit`` rows of each
partition in ORDER BY order (:mod:`eowc.executors.ordering`), each with its ROW_NUMBER. A
partition keeps only its top ``limit`` rows: rows are only ever added, so a row that does not
rank within the limit never will. A ranked row is final once its bound (its window, or for
deduplication its event time) is complete; the bounds never decrease along a ranking, so the
final rows are a prefix of it.

Written for the executors, independently of the reference interpreter's TopN.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass
class TopRows:
    """One partition's top rows in rank order, and how many of them were emitted."""

    rows: list[Row] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    emitted: int = 0

    def add(self, ranking: TopRanking, row: Row) -> None:
        """Rank ``row`` among the top rows (it is dropped unless it ranks within the limit)."""
        key = ranking.sort_key(row)
        at = bisect.bisect_right(self.keys, key)
        if at >= ranking.limit:
            return
        self.keys.insert(at, key)
        self.rows.insert(at, row)
        del self.keys[ranking.limit:], self.rows[ranking.limit:]

    def next_ranked(self) -> Row | None:
        """The first top row not emitted yet, with its rank (None: every one was)."""
        if self.emitted >= len(self.rows):
            return None
        return self.rows[self.emitted] + (self.emitted + 1,)

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


def top_ranking(node: TopN, tie: Callable[[Row], Any]) -> TopRanking:
    """Bind ``node``; ``tie`` orders rows with equal ORDER BY keys."""
    schema = node.input.schema
    keys = [compile_expr(e, schema).evaluate for e in node.partition_by]
    order = order_by_key(node.order_by, schema)
    return TopRanking(node, lambda row: tuple(k(row) for k in keys),
                      lambda row: (order(row), tie(row)))
