CREATE TABLE posts (
    id   BIGINT,
    tags VARCHAR[],
    ts   TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;
SELECT window_start, tag, count(*) AS n
FROM TUMBLE((SELECT ts, unnest(tags) AS tag FROM posts), ts, INTERVAL '1' MINUTE)
GROUP BY window_start, tag
EMIT ON WINDOW CLOSE;
