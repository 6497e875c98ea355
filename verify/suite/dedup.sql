-- Deduplication: the first bid of each bidder, emitted once its event time is complete.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT ts, bidder, auction, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts) AS rn FROM bids)
WHERE rn = 1
EMIT ON WINDOW CLOSE;
