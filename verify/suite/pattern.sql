-- MATCH_RECOGNIZE: per auction, a run of rising prices after a start bid, and an optional
-- drop after it; a match is emitted when every row the matcher read is complete.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT *
FROM bids MATCH_RECOGNIZE (
  PARTITION BY auction ORDER BY ts
  MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS peak, COUNT(B.price) AS rises
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C?)
  DEFINE B AS B.price > PREV(B.price), C AS C.price < PREV(C.price)
) AS m
EMIT ON WINDOW CLOSE;
