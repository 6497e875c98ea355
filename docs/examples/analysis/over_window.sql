-- OVER windows ordered by event time (seed 002): the previous price and a 3-row average per
-- stock. Only the ORDER BY column keeps its watermark.
CREATE SOURCE trades (ts TIMESTAMP, stock VARCHAR, price DOUBLE,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);

SELECT ts, stock, price,
       LAG(price, 1) OVER (PARTITION BY stock ORDER BY ts) AS prev_price,
       AVG(price) OVER (PARTITION BY stock ORDER BY ts
                        ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS avg3
FROM trades
EMIT ON WINDOW CLOSE;
