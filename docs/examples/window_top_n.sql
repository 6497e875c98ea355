-- Window TopN (seed 004): the three highest bids of every 10-minute window, emitted when the
-- window closes. The window columns keep their watermarks; the ranked rows do not.
CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR,
                   WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);

SELECT window_start, window_end, item, price, rownum
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end
                                   ORDER BY price DESC) AS rownum
      FROM TUMBLE(bid, bidtime, INTERVAL '10' MINUTE))
WHERE rownum <= 3
EMIT ON WINDOW CLOSE;
