-- The query of the tiny engines (tiny_engine.py, tiny_engine_buggy.py): the bids and their
-- total per auction in 5-second tumbling windows, the watermark 2 seconds behind.
CREATE SOURCE bids (auction BIGINT, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, window_start, window_end, COUNT(*) AS n, SUM(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)
GROUP BY auction, window_start, window_end
EMIT ON WINDOW CLOSE;
