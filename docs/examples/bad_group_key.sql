-- Rejected under EMIT ON WINDOW CLOSE: the group key carries no watermark.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT sensor, SUM(v) AS total
FROM readings
GROUP BY sensor
EMIT ON WINDOW CLOSE;
