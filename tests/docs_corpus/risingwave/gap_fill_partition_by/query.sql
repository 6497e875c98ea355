CREATE TABLE gap_table_partitioned (
    device_id INT,
    ts TIMESTAMP,
    value DOUBLE,
    PRIMARY KEY (device_id, ts),
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;

CREATE MATERIALIZED VIEW gap_filled_partitioned_eowc AS
SELECT device_id, ts, value
FROM GAP_FILL(
    gap_table_partitioned,
    ts,
    INTERVAL '1' MINUTE,
    LOCF(value),
    PARTITION_BY(device_id)
)
EMIT ON WINDOW CLOSE;
