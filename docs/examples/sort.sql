-- EOWC sort: every reading, emitted once its event time is complete, in event-time order.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT ts, sensor, v FROM readings
WHERE v > 0
EMIT ON WINDOW CLOSE;
