-- EOWC OverWindow (seed 002): each bid with the sum over its neighbours, the previous price
-- and the next one, emitted once its frame's last row is complete.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, ts, price,
       SUM(price) OVER (PARTITION BY auction ORDER BY ts
                        ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS around,
       LAG(price, 1, 0.0) OVER (PARTITION BY auction ORDER BY ts) AS prev,
       LEAD(price) OVER (PARTITION BY auction ORDER BY ts) AS next,
       AVG(price) OVER (PARTITION BY auction ORDER BY ts
                        RANGE BETWEEN INTERVAL '1' SECOND PRECEDING
                              AND INTERVAL '1' SECOND FOLLOWING) AS nearby,
       RANK() OVER (PARTITION BY auction ORDER BY ts) AS r
FROM bids
EMIT ON WINDOW CLOSE;
