-- RisingWave's GAP_FILL under EMIT ON WINDOW CLOSE (its e2e_test/streaming/gap_fill_eowc.slt,
-- PARTITION_BY case): one row per minute per device, the gaps filled with the last value.
CREATE SOURCE gap_table_partitioned (device_id BIGINT, ts TIMESTAMP, value DOUBLE,
                                     WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);

SELECT device_id, ts, value
FROM GAP_FILL(gap_table_partitioned, ts, INTERVAL '1' MINUTE, LOCF(value), PARTITION_BY(device_id))
EMIT ON WINDOW CLOSE;
