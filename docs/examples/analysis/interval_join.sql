-- An interval join: a click joins the ad views of the same user from one minute before it
-- to ten seconds after it. Each time column keeps a watermark, bounded by the other side's.
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, page VARCHAR,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT, ad VARCHAR,
                     WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);

SELECT c.ts AS click_ts, v.ts AS view_ts, c.user_id, page, ad
FROM clicks c LEFT JOIN views v
  ON c.user_id = v.user_id
 AND c.ts BETWEEN v.ts - INTERVAL '1' MINUTE AND v.ts + INTERVAL '10' SECOND
EMIT ON WINDOW CLOSE;
