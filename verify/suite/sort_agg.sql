-- SortAgg: the median needs the whole group (every price of an open window is kept).
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT window_start, window_end, MEDIAN(price) AS median_price, COUNT(*) AS n
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
