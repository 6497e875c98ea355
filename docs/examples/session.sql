-- Session windows (seed 004's SESSION TVF) with a 3-minute gap over the Bid table: bids less
-- than 3 minutes apart form one session [first, last + 3 min), emitted when it closes.
CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR,
                   WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);

SELECT window_start, window_end, COUNT(*) AS bids, SUM(price) AS total
FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '3' MINUTES))
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
