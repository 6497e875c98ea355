-- A plain SELECT over a window TVF (no GROUP BY): an EOWC sort with a per-window late check
-- under spark and flink (see docs/operators/eowc-sort.md, "A caveat").
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT ts, sensor, window_end
FROM TUMBLE(readings, ts, INTERVAL '10' SECOND)
EMIT ON WINDOW CLOSE;
