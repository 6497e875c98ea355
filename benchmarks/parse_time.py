"""Parse time of a 200-line script (issue 18, "Measure and report").

The script is a realistic job: six CREATE TABLEs with watermarks and connector options, seven
views (window aggregates, a window join, an interval join, a deduplication, a cumulating
aggregate) and a window Top-N as the final query, 200 lines. It times eowc's
``parse_script`` (the front end: parsing, resolving views, planning) against peers measured
in the same run on the same text: ``sqlglot.parse`` (the parser eowc builds on, no planning;
its default dialect, errors ignored, since it refuses ``WATERMARK FOR`` and
``TABLE(TUMBLE(TABLE ...))``: the statements it cannot parse it keeps as unparsed Commands,
which makes it cheaper than a real parse) and ``sqlglot.tokenize`` (a lower bound: reading
the text at all). It prints the medians and the ratios.

    python benchmarks/parse_time.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable

import sqlglot
from sqlglot.errors import ErrorLevel

from eowc.semantics.frontend.sql import parse_script

TABLE = """CREATE TABLE {name} (
    event_id  BIGINT,
    user_id   BIGINT,
    item_id   BIGINT,
    amount    DOUBLE,
    category  VARCHAR,
    {time}    TIMESTAMP,
    WATERMARK FOR {time} AS {time} - INTERVAL '5' SECOND
) WITH (
    'connector' = 'kafka',
    'topic' = '{name}',
    'properties.bootstrap.servers' = 'broker:9092',
    'format' = 'json'
);

"""

VIEWS = """-- per-minute activity of each user
CREATE VIEW clicks_per_minute AS
SELECT user_id, window_start, window_end, COUNT(*) AS clicks, SUM(amount) AS clicked_amount
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(click_time), INTERVAL '1' MINUTE))
WHERE amount >= 0 AND category <> 'internal'
GROUP BY user_id, window_start, window_end;

CREATE VIEW views_per_minute AS
SELECT user_id, window_start, window_end, COUNT(*) AS views, MAX(amount) AS top_amount
FROM TABLE(TUMBLE(TABLE page_views, DESCRIPTOR(view_time), INTERVAL '1' MINUTE))
WHERE category IS NOT NULL
GROUP BY user_id, window_start, window_end;

-- clicks and views of the same user in the same minute
CREATE VIEW engagement AS
SELECT c.user_id, c.window_start, c.window_end, c.clicks, v.views,
       c.clicked_amount, v.top_amount
FROM clicks_per_minute AS c
JOIN views_per_minute AS v
  ON c.user_id = v.user_id
 AND c.window_start = v.window_start
 AND c.window_end = v.window_end;

-- an order paid within ten minutes of its checkout
CREATE VIEW paid_checkouts AS
SELECT o.event_id, o.user_id, o.item_id, o.amount, o.order_time, p.pay_time
FROM orders AS o
JOIN payments AS p
  ON o.event_id = p.event_id
 AND p.pay_time BETWEEN o.order_time AND o.order_time + INTERVAL '10' MINUTE;

-- the first click of each user in each ten-minute window
CREATE VIEW first_clicks AS
SELECT user_id, item_id, amount, click_time, window_start, window_end
FROM (
    SELECT user_id, item_id, amount, click_time, window_start, window_end,
           ROW_NUMBER() OVER (
               PARTITION BY window_start, window_end, user_id
               ORDER BY click_time ASC
           ) AS rownum
    FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(click_time), INTERVAL '10' MINUTE))
)
WHERE rownum = 1;

-- spend since midnight, every ten minutes
CREATE VIEW daily_spend AS
SELECT user_id, window_start, window_end,
       SUM(amount) AS spend,
       COUNT(*) AS purchases,
       MIN(amount) AS smallest,
       MAX(amount) AS largest,
       AVG(amount) AS mean_amount
FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(order_time), INTERVAL '10' MINUTE,
                    INTERVAL '1' DAY))
WHERE category IN ('books', 'music', 'games', 'garden')
GROUP BY user_id, window_start, window_end;

-- revenue per item and five-minute hop window
CREATE VIEW item_revenue AS
SELECT item_id, window_start, window_end, SUM(amount) AS revenue, COUNT(*) AS orders
FROM TABLE(HOP(TABLE refunds, DESCRIPTOR(refund_time), INTERVAL '1' MINUTE,
               INTERVAL '5' MINUTE))
GROUP BY item_id, window_start, window_end;

"""

QUERY = """-- the job: the three best items of each window, with their revenue band
SELECT item_id,
       window_start,
       window_end,
       revenue,
       orders,
       CASE
           WHEN revenue >= 10000 THEN 'platinum'
           WHEN revenue >= 1000 THEN 'gold'
           WHEN revenue >= 100 THEN 'silver'
           ELSE 'bronze'
       END AS band,
       revenue / orders AS mean_order,
       orders * 1.0 / 5 AS orders_per_minute,
       window_end - window_start AS window_length,
       rownum
FROM (
    SELECT item_id,
           window_start,
           window_end,
           revenue,
           orders,
           ROW_NUMBER() OVER (
               PARTITION BY window_start, window_end
               ORDER BY revenue DESC
           ) AS rownum
    FROM item_revenue
    WHERE orders > 0
      AND revenue IS NOT NULL
      AND item_id IS NOT NULL
)
WHERE rownum <= 3
EMIT ON WINDOW CLOSE;
"""

HEADER = """-- Job: storefront analytics (clicks, views, orders, payments, refunds, impressions).
-- Owner: the data platform team. Runs with EMIT ON WINDOW CLOSE: each window's
-- result is written once, when the watermark passes its end.
-- Sources: six Kafka topics, JSON, event time with 5 seconds of allowed disorder.
-- Views: per-minute engagement, paid checkouts (interval join), first clicks
-- (deduplication), daily spend (cumulating windows), item revenue (hopping windows).
-- Sink: the three best items of each window.

"""

TABLES = [("clicks", "click_time"), ("page_views", "view_time"), ("orders", "order_time"),
          ("payments", "pay_time"), ("refunds", "refund_time"), ("impressions", "shown_time")]


def script(lines: int = 200) -> str:
    """The 200-line script: tables, views, the query, padded with comment lines to ``lines``."""
    text = HEADER + "".join(TABLE.format(name=n, time=t) for n, t in TABLES) + VIEWS + QUERY
    missing = lines - text.count("\n")
    if missing < 0:
        raise ValueError(f"the script has {text.count(chr(10))} lines, more than {lines}")
    header = "".join(f"-- job notes, line {i + 1}\n" for i in range(missing))
    return header + text


def median_seconds(parse: Callable[[str], object], text: str, repeat: int) -> float:
    parse(text)  # warm-up: imports, sqlglot's tokenizer tables
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        parse(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sqlglot_parse(text: str) -> list[sqlglot.exp.Expression | None]:
    """The peer: sqlglot's own parse of the script, statement by statement, errors ignored."""
    return sqlglot.parse(text, error_level=ErrorLevel.IGNORE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    repeat = parser.parse_args().repeat
    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its fallback warnings, once per run
    text = script()
    parsed = parse_script(text)
    statements = sqlglot_parse(text)
    fallbacks = sum(isinstance(s, sqlglot.exp.Command) for s in statements if s is not None)
    eowc_s = median_seconds(parse_script, text, repeat)
    peer_s = median_seconds(sqlglot_parse, text, repeat)
    tokens_s = median_seconds(sqlglot.tokenize, text, repeat)
    print(f"script: {text.count(chr(10))} lines, {len(TABLES)} tables, 7 views, 1 query "
          f"({len(parsed.query.schema)} output columns)")
    print(f"peer sqlglot.parse: {len(statements)} statements, {fallbacks} of them kept as "
          f"unparsed Commands (WATERMARK FOR, TABLE(TUMBLE(TABLE ...)))")
    print(f"median of {repeat} runs:")
    print(f"  eowc parse_script   {eowc_s * 1000:8.2f} ms")
    print(f"  sqlglot.parse       {peer_s * 1000:8.2f} ms")
    print(f"  sqlglot.tokenize    {tokens_s * 1000:8.2f} ms")
    print(f"  ratio eowc/sqlglot.parse     {eowc_s / peer_s:6.2f}")
    print(f"  ratio eowc/sqlglot.tokenize  {eowc_s / tokens_s:6.2f}")


if __name__ == "__main__":
    main()
