-- Seed 002's EowcOverWindow example: per partition p, in event-time order, the sum of the
-- row and the one before, the sum of the row and the one after, and the next row's x.
CREATE SOURCE t (ts TIMESTAMP, pk BIGINT, p BIGINT, x BIGINT,
                 WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE);

SELECT ts, pk, p, x,
       SUM(x) OVER (PARTITION BY p ORDER BY ts ROWS 1 PRECEDING) AS sum_prev,
       SUM(x) OVER (PARTITION BY p ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS sum_next,
       LEAD(x, 1) OVER (PARTITION BY p ORDER BY ts) AS next_x
FROM t
EMIT ON WINDOW CLOSE;
