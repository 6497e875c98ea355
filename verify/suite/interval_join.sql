-- Interval join (seed 000's IntervalJoin): each bid with the asks of the same auction from
-- 2 seconds before to 1 second after it, bids without one NULL-padded once no ask can match.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE SOURCE asks (auction BIGINT, seller VARCHAR, ask DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
SELECT bids.ts, bids.auction, bidder, price, asks.ts AS ask_ts, seller, ask
FROM bids LEFT JOIN asks
  ON bids.auction = asks.auction
 AND bids.ts BETWEEN asks.ts - INTERVAL '1' SECOND AND asks.ts + INTERVAL '2' SECOND
EMIT ON WINDOW CLOSE;
