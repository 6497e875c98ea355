-- Total price per 10-minute window, sliding every 5 minutes (seed 004's Bid table).
CREATE SOURCE bid (
    bidtime TIMESTAMP,
    price   DOUBLE,
    item    VARCHAR,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE
);

SELECT window_start, window_end, SUM(price) AS total_price, COUNT(*) AS bids
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
