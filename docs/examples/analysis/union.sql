-- UNION ALL of two sources, one shifted by an hour: ts keeps the least of both watermarks.
CREATE SOURCE eu (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE us (ts TIMESTAMP, v BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE);

SELECT ts, v FROM eu
UNION ALL
SELECT ts + INTERVAL '1' HOUR, v FROM us
EMIT ON WINDOW CLOSE;
