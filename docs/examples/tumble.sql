-- Total price per 10-minute tumbling window (seed 004's Bid table).
CREATE SOURCE bid (
    bidtime TIMESTAMP,
    price   DOUBLE,
    item    VARCHAR,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE
);

SELECT window_start, window_end, SUM(price) AS total_price, COUNT(*) AS bids
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
