"""The one-pass interpreter gives exactly the declarative Q'(INPUT, W) and Q(INPUT) of
eowc.semantics.engines.spec after every epoch, for every convention."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings

from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.rules.triggers import Convention
from tests.strategies import arrival_logs, script

QUERIES = {
    "tumble": "SELECT window_start, window_end, count(*) AS n, sum(price) AS s, min(price), "
              "max(price), avg(price), count(DISTINCT price) AS d, first_value(price) AS f, "
              "last_value(price) AS l, median(price) AS m, "
              "percentile_cont(0.25) WITHIN GROUP (ORDER BY price) AS p "
              "FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end "
              "EMIT ON WINDOW CLOSE",
    "hop_keyed": "SELECT auction, window_end, count(price) AS n, sum(price) AS s "
                 "FROM HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) "
                 "WHERE price IS NULL OR price >= 0 "
                 "GROUP BY auction, window_end HAVING count(*) > 1 EMIT ON WINDOW CLOSE",
    "cumulate": "SELECT window_start, window_end, sum(price) AS s FROM "
                "TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '4' SECOND, "
                "INTERVAL '12' SECOND)) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE",
    "tumble_offset_start_only": "SELECT window_start, max(price) AS m FROM "
                                "TUMBLE(bids, ts, INTERVAL '10' SECOND, INTERVAL '3' SECOND) "
                                "GROUP BY window_start EMIT ON WINDOW CLOSE",
    "group_by_time": "SELECT ts, auction, count(*) AS n FROM bids GROUP BY ts, auction "
                     "EMIT ON WINDOW CLOSE",
    "sort": "SELECT auction, price * 2 AS p2, ts FROM bids WHERE auction <> 2 "
            "EMIT ON WINDOW CLOSE",
    "tvf_sort": "SELECT auction, ts, window_start FROM HOP(bids, ts, INTERVAL '5' SECOND, "
                "INTERVAL '10' SECOND) EMIT ON WINDOW CLOSE",
    "over_rows": "SELECT ts, auction, price, sum(price) OVER (PARTITION BY auction ORDER BY ts "
                 "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s, lead(price, 2, -1) OVER "
                 "(PARTITION BY auction ORDER BY ts) AS next2, row_number() OVER (PARTITION BY "
                 "auction ORDER BY ts) AS rn, lag(price) OVER (PARTITION BY auction ORDER BY ts) "
                 "AS prev FROM bids WHERE price IS NULL OR price < 18 EMIT ON WINDOW CLOSE",
    "over_range": "SELECT ts, price, avg(price) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '3' "
                  "SECOND PRECEDING AND INTERVAL '2' SECOND FOLLOWING) AS a, rank() OVER (ORDER "
                  "BY ts) AS r, dense_rank() OVER (ORDER BY ts) AS d, last_value(price) OVER "
                  "(ORDER BY ts) AS l, count(*) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED "
                  "PRECEDING AND CURRENT ROW) AS c FROM bids EMIT ON WINDOW CLOSE",
    "window_top_n": "SELECT window_start, window_end, auction, price, rn FROM (SELECT *, "
                    "ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) "
                    "AS rn FROM TUMBLE(bids, ts, INTERVAL '10' SECOND)) WHERE rn <= 2 "
                    "EMIT ON WINDOW CLOSE",
    "dedup": "SELECT ts, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "auction ORDER BY ts) AS rn FROM bids) WHERE rn <= 2 EMIT ON WINDOW CLOSE",
}


def cumulative_by_epoch(emissions, epochs: int) -> list[Counter]:
    result, current = [], Counter()
    by_epoch: dict[int, list] = {}
    for e in emissions:
        by_epoch.setdefault(e.epoch, []).append(e.row)
    for epoch in range(epochs):
        current.update(by_epoch.get(epoch, []))
        result.append(Counter(current))
    return result


@pytest.mark.parametrize("convention", list(Convention))
@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs())
def test_eowc_output_after_every_epoch_equals_the_specification(name, convention, log):
    query = script(QUERIES[name]).query
    emissions = list(run_eowc(query, log, convention, close=True))
    expected = eowc_after_each_epoch(query, log, convention, close=True)
    assert cumulative_by_epoch(emissions, len(expected)) == expected


@pytest.mark.parametrize("convention", list(Convention))
@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=25, deadline=None)
@given(log=arrival_logs())
def test_update_snapshots_equal_q_of_input_after_every_epoch(name, convention, log):
    query = script(QUERIES[name]).query
    changes = list(run_update(query, log, convention))
    got = [Counter(rows) for rows in snapshots(changes, len(log.epochs))]
    assert got == update_after_each_epoch(query, log, convention)
