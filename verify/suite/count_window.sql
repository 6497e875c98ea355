-- Count windows (seed 003's tuple-based windows): every 2 bids of an auction, windows of 3
-- bids in event-time order, emitted when full and the time of their last bid is complete.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, window_ordinal, window_start, window_end, SUM(price) AS total
FROM TABLE(COUNT_HOP(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), 3, 2))
GROUP BY auction, window_ordinal, window_start, window_end
EMIT ON WINDOW CLOSE;
