-- Median and 90th percentile of the price per 10-minute tumbling window (seed 004's Bid table).
-- Neither has an incremental (retractable) state: every price of an open window is kept.
CREATE SOURCE bid (
    bidtime TIMESTAMP,
    price   DOUBLE,
    item    VARCHAR,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE
);

SELECT window_start, window_end,
       MEDIAN(price) AS median_price,
       PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY price) AS p90_price,
       COUNT(*) AS bids
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
