-- Cascaded window aggregation (seed 004: window_time stays a time attribute): per auction and
-- 5-second window, the bids' count and total; then per 10-second window of those windows'
-- window_time, their sum. Each aggregate is a stage of the composed executor, the upper one
-- under the watermark derived for window_time.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE VIEW per_five AS
SELECT auction, window_time AS five_time, COUNT(*) AS n, SUM(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)
GROUP BY auction, window_start, window_end, window_time;
SELECT window_start, window_end, SUM(n) AS bids, SUM(total) AS total,
       COUNT(*) AS auction_windows
FROM TUMBLE(per_five, five_time, INTERVAL '10' SECOND)
GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE;
