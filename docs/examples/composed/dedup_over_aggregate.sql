-- Deduplication over a window aggregate: each item's total per 10-minute window, then only
-- the first window of every item (ordered by the aggregate's window_time, a time attribute).
CREATE SOURCE bid (
    bidtime TIMESTAMP,
    price   DOUBLE,
    item    VARCHAR,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE
);

CREATE VIEW item_totals AS
SELECT window_start, window_end, window_time, item, SUM(price) AS total
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, window_time, item;

SELECT window_start, window_end, item, total
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY item ORDER BY window_time ASC) AS rownum
      FROM item_totals)
WHERE rownum = 1
EMIT ON WINDOW CLOSE;
