-- GroupAgg over HOP: 6-second windows sliding every 2 seconds (a row is in three windows).
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT window_start, window_end, COUNT(*) AS n, SUM(price) AS total
FROM HOP(bids, ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND)
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
