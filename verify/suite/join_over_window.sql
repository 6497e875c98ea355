-- An OVER window above an interval join: per auction, the last three matched bids' best ask.
-- The OVER window runs as its own EOWC executor in the join's shard, under the watermark
-- derived for the join's bids.ts (the minimum of bids' and asks' shifted by the bound).
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE SOURCE asks (auction BIGINT, seller VARCHAR, ask DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
SELECT ts, auction, price, max(ask) OVER (PARTITION BY auction ORDER BY ts
                                          ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS best_ask
FROM (SELECT b.ts AS ts, b.auction AS auction, price, ask FROM bids b
      JOIN asks a ON b.auction = a.auction
       AND b.ts BETWEEN a.ts - INTERVAL '2' SECOND AND a.ts + INTERVAL '1' SECOND)
EMIT ON WINDOW CLOSE;
