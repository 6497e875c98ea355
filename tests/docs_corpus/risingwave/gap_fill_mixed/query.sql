CREATE TABLE gap_multi_column_table (
    ts TIMESTAMP,
    temperature DOUBLE,
    pressure DOUBLE,
    status VARCHAR,
    PRIMARY KEY (ts),
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) APPEND ONLY;

CREATE MATERIALIZED VIEW gap_filled_mixed AS
SELECT ts, temperature, pressure, status
FROM GAP_FILL(gap_multi_column_table, ts, INTERVAL '1' MINUTE,
              INTERPOLATE(temperature), LOCF(pressure), KEEPNULL(status))
EMIT ON WINDOW CLOSE;
