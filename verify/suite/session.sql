-- Session windows (seed 004's SESSION TVF): per auction, bids less than 3 seconds apart form
-- one session, emitted when its last bid plus the gap is complete.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, window_start, window_end, COUNT(*) AS bids, MAX(price) AS top
FROM TABLE(SESSION(TABLE bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' SECOND))
GROUP BY auction, window_start, window_end
EMIT ON WINDOW CLOSE;
