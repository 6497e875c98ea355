-- Exact decimals, a TIMESTAMPTZ event time, NaN (docs/sql/types.md).
CREATE TABLE bids (price DECIMAL, ts TIMESTAMPTZ,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT window_start, sum(price) AS total, round(avg(price), 2) AS mean,
       CAST('NaN' AS DOUBLE) AS not_a_number
FROM TUMBLE(bids, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE;
