-- Window TopN over a window aggregate (seed 004): each auction's total per 5-second window,
-- then the two auctions with the highest total in each window, emitted when the window closes
-- under the watermark derived for the aggregate's window columns.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE VIEW auction_totals AS
SELECT window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)
GROUP BY window_start, window_end, auction;
SELECT window_start, window_end, auction, n, total, rn
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end
                                   ORDER BY total DESC) AS rn
      FROM auction_totals)
WHERE rn <= 2
EMIT ON WINDOW CLOSE;
