-- 10-second windows sliding every 5 seconds; one row is late for its first window only.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
);

SELECT window_start, window_end, SUM(v) AS total, COUNT(*) AS n
FROM HOP(readings, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
