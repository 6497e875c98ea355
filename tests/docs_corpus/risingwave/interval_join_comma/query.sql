CREATE TABLE left_table (
    id INT,
    ts TIMESTAMPTZ,
    val INT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;

CREATE TABLE right_table (
    id INT,
    ts TIMESTAMPTZ,
    val INT,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;

CREATE MATERIALIZED VIEW interval_join_mv AS
SELECT l.id as l_id, r.id as r_id, l.ts as l_ts, r.ts as r_ts
FROM left_table l, right_table r
WHERE l.id = r.id AND l.ts >= r.ts;
