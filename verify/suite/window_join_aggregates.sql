-- Seed 004's window join of two window aggregates: per auction and 5-second window, the bids'
-- count and best price beside the asks' count, FULL OUTER. Each aggregate runs as its own
-- EOWC executor in the join's shard, under its source's watermark; a window's row comes out
-- once the window has closed on both sides.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE SOURCE asks (auction BIGINT, seller VARCHAR, ask DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
SELECT b.window_start, b.window_end, a.window_end AS ask_window_end, b.auction, bids, best,
       asks
FROM (SELECT window_start, window_end, auction, count(*) AS bids, max(price) AS best
      FROM TUMBLE(bids, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end, auction) b
FULL JOIN (SELECT window_start, window_end, auction, count(*) AS asks
           FROM TUMBLE(asks, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end, auction) a
  ON b.window_start = a.window_start AND b.window_end = a.window_end AND b.auction = a.auction
EMIT ON WINDOW CLOSE;
