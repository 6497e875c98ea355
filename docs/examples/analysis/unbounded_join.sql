-- Rejected under EMIT ON WINDOW CLOSE: a join on the user alone has no time bound, so every
-- row is kept for a match that may come, and no output column carries a watermark.
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT, WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);

SELECT c.ts, c.user_id FROM clicks c LEFT JOIN views v ON c.user_id = v.user_id
EMIT ON WINDOW CLOSE;
