-- Window TopN over a window aggregate: each item's total per 10-minute window, then the two
-- items with the highest total in each window. The aggregate keeps window_start and
-- window_end as time attributes, so the TopN sees its window again and emits it on close.
CREATE SOURCE bid (
    bidtime TIMESTAMP,
    price   DOUBLE,
    item    VARCHAR,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE
);

CREATE VIEW item_totals AS
SELECT window_start, window_end, item, SUM(price) AS total
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, item;

SELECT window_start, window_end, item, total, rownum
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end
                                   ORDER BY total DESC) AS rownum
      FROM item_totals)
WHERE rownum <= 2
EMIT ON WINDOW CLOSE;
