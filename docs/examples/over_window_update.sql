-- Seed 002's general (emit-on-update) OverWindow: the query of over_window.sql without
-- EMIT ON WINDOW CLOSE; per partition p, the sums before and after and the next x, as a changelog.
CREATE SOURCE t (ts TIMESTAMP, pk BIGINT, p BIGINT, x BIGINT,
                 WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE);

SELECT ts, pk, p, x,
       SUM(x) OVER (PARTITION BY p ORDER BY ts ROWS 1 PRECEDING) AS sum_prev,
       SUM(x) OVER (PARTITION BY p ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS sum_next,
       LEAD(x, 1) OVER (PARTITION BY p ORDER BY ts) AS next_x
FROM t;
