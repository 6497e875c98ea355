-- The first two (click, ad view) pairs of each user, by click time: a TopN over an interval
-- join. Both clicks below have the same time: --ties decides which pairs rank first.
CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, page VARCHAR,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT, ad VARCHAR,
                     WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);

SELECT click_ts, page, ad, n FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY click_ts) AS n
  FROM (SELECT c.ts AS click_ts, c.user_id, page, ad
        FROM clicks c JOIN views v
          ON c.user_id = v.user_id
         AND c.ts BETWEEN v.ts AND v.ts + INTERVAL '1' MINUTE))
WHERE n <= 2
EMIT ON WINDOW CLOSE;
