-- Cascaded window aggregation (seed 004's time attribute propagation): per 5-minute window the
-- sum of prices, then per 10-minute window the sum and count of those 5-minute results,
-- windowed by their window_time (window_end - 1 ms, renamed five_time: the outer TUMBLE adds
-- window_start, window_end and window_time of its own), which stays a time attribute.
CREATE SOURCE bid (
    bidtime TIMESTAMP,
    price   DOUBLE,
    item    VARCHAR,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE
);

CREATE VIEW five_minutes AS
SELECT window_time AS five_time, SUM(price) AS price
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))
GROUP BY window_start, window_end, window_time;

SELECT window_start, window_end, SUM(price) AS total_price, COUNT(*) AS five_minute_windows
FROM TABLE(TUMBLE(TABLE five_minutes, DESCRIPTOR(five_time), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
