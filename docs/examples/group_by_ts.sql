-- GROUP BY the watermark column itself: one result row per event time.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
);

SELECT ts, COUNT(*) AS n, SUM(v) AS total
FROM readings
GROUP BY ts
EMIT ON WINDOW CLOSE;
