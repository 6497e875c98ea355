-- Count windows (seed 003's tuple-based windows) over the Bid table: every 2 bids, in
-- bidtime order, form one window, emitted once its last bid's time is complete.
CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR,
                   WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);

SELECT window_ordinal, window_start, window_end, COUNT(*) AS bids, SUM(price) AS total
FROM TABLE(COUNT_TUMBLE(TABLE bid, DESCRIPTOR(bidtime), 2))
GROUP BY window_ordinal, window_start, window_end
EMIT ON WINDOW CLOSE;
