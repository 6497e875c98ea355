-- Deduplication (ROW_NUMBER() ... = 1 ordered by event time): the first bid of every item.
-- A row is emitted once its bidtime is complete: no bid that can still arrive is earlier.
CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR,
                   WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);

SELECT bidtime, price, item
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY item ORDER BY bidtime) AS rownum FROM bid)
WHERE rownum = 1
EMIT ON WINDOW CLOSE;
