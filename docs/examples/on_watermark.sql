-- A row whose event time equals the watermark in force (EOWC sort).
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT ts, sensor, v FROM readings
EMIT ON WINDOW CLOSE;
