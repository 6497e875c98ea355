-- Window TopN (seed 004): the two highest bids of each 10-second window, emitted when the
-- window closes.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT window_start, window_end, auction, price, rn
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end
                                   ORDER BY price DESC) AS rn
      FROM TUMBLE(bids, ts, INTERVAL '10' SECOND))
WHERE rn <= 2
EMIT ON WINDOW CLOSE;
