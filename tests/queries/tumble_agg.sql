-- GroupAgg: per auction and 5-second tumbling window, incremental aggregates.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, window_start, window_end, COUNT(*) AS n, SUM(price) AS total,
       MIN(price) AS low, MAX(price) AS high, AVG(price) AS mean
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)
GROUP BY auction, window_start, window_end
EMIT ON WINDOW CLOSE;
