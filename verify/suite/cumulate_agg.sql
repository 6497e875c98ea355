-- GroupAgg over CUMULATE: running totals every 2 seconds within 8-second periods.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT bidder, window_start, window_end, COUNT(*) AS n, SUM(price) AS total
FROM CUMULATE(bids, ts, INTERVAL '2' SECOND, INTERVAL '8' SECOND)
GROUP BY bidder, window_start, window_end
EMIT ON WINDOW CLOSE;
