-- RisingWave's join-view pattern: a materialized view joins per-minute click and view counts
-- (a window join), and a second one reads it with EMIT ON WINDOW CLOSE. The statement that is
-- run (the last, unless --view names another) decides the emit mode of the whole plan.
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT,
                     WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);

CREATE MATERIALIZED VIEW join_view AS
SELECT c.user_id, c.window_start, c.window_end, c.n AS clicks, v.n AS views
FROM (SELECT user_id, window_start, window_end, COUNT(*) AS n
      FROM TUMBLE(clicks, ts, INTERVAL '1' MINUTE) GROUP BY user_id, window_start, window_end) c
JOIN (SELECT user_id, window_start, window_end, COUNT(*) AS n
      FROM TUMBLE(views, ts, INTERVAL '1' MINUTE) GROUP BY user_id, window_start, window_end) v
ON c.user_id = v.user_id AND c.window_start = v.window_start AND c.window_end = v.window_end;

CREATE MATERIALIZED VIEW mv AS SELECT * FROM join_view EMIT ON WINDOW CLOSE;
