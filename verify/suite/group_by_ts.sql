-- GroupAgg on the watermark column itself: one result row per event time (ties matter).
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT ts, COUNT(*) AS n, SUM(auction) AS auctions
FROM bids
GROUP BY ts
EMIT ON WINDOW CLOSE;
