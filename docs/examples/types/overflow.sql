-- BIGINT overflow: an error under risingwave and spark, wrap-around under flink.
CREATE SOURCE t (n BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
SELECT n + 1000 AS m, ts FROM t EMIT ON WINDOW CLOSE;
