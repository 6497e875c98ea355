CREATE TABLE hwm_left (
    id INT,
    ts TIMESTAMPTZ,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;

CREATE TABLE hwm_right (
    id INT,
    ts TIMESTAMPTZ,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;

CREATE MATERIALIZED VIEW hash_join_wm_mv AS
SELECT l.id AS l_id, r.id AS r_id, l.ts
FROM hwm_left l
LEFT JOIN hwm_right r
ON l.ts = r.ts;
