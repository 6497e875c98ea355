-- A 10-second tumbling window whose end meets the watermark.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT window_start, window_end, SUM(v) AS total, COUNT(*) AS n
FROM TUMBLE(readings, ts, INTERVAL '10' SECOND)
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
