-- Sub-millisecond event times: Spark truncates max(ts) to the millisecond before subtracting the delay.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '0' SECOND
);

SELECT ts, sensor, v FROM readings
EMIT ON WINDOW CLOSE;
