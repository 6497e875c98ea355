-- An EOWC sort by event time, with a shifted and a truncated copy of it: both keep a
-- watermark (ts + 1 hour, and the minute of ts), in the same group as ts.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT ts, ts + INTERVAL '1' HOUR AS local_ts, date_trunc('minute', ts) AS minute, sensor, v
FROM readings
WHERE v > 0
EMIT ON WINDOW CLOSE;
