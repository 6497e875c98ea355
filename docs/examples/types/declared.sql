-- DECIMAL(p, s) columns as each engine applies them (docs/sql/types.md).
CREATE TABLE orders (price DECIMAL(10, 2), qty DECIMAL(5, 1), ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT window_start, sum(price) AS total, avg(price) AS mean, avg(qty) AS mean_qty,
       sum(price / qty) AS unit
FROM TUMBLE(orders, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;
