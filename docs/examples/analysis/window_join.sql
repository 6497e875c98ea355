-- A window join: per-minute click and view counts of the same user, joined on the window.
-- window_start and window_end keep the least of the two sides' window watermarks.
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT, WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);

SELECT c.window_start, c.window_end, c.user_id, clicks, views
FROM (SELECT window_start, window_end, user_id, COUNT(*) AS clicks
      FROM TUMBLE(clicks, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, user_id) c
JOIN (SELECT window_start, window_end, user_id, COUNT(*) AS views
      FROM TUMBLE(views, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, user_id) v
  ON c.window_start = v.window_start AND c.window_end = v.window_end AND c.user_id = v.user_id
EMIT ON WINDOW CLOSE;
