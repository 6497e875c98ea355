-- EOWC sort: each row once its event time is complete, in event-time order (a filter first).
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT ts, auction, bidder, price
FROM bids
WHERE price > 0.5
EMIT ON WINDOW CLOSE;
