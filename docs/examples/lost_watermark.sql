-- Rejected under EMIT ON WINDOW CLOSE: the minute is computed by a CAST to text, which is
-- not proven non-decreasing, so the group key loses the watermark.
CREATE SOURCE readings (
    ts     TIMESTAMP,
    sensor VARCHAR,
    v      BIGINT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
);

SELECT minute, SUM(v) AS total
FROM (SELECT CAST(ts AS VARCHAR) AS minute, v FROM readings)
GROUP BY minute
EMIT ON WINDOW CLOSE;
