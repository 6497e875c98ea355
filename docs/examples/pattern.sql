-- Pattern recognition (MATCH_RECOGNIZE): a V-shape in each symbol's price, a row A, then
-- falling prices (B+), then rising ones (C+). A match is emitted once every row its search
-- read is complete: the greedy C+ waits for the row after its last one (or the end).
CREATE SOURCE ticks (ts TIMESTAMP, symbol VARCHAR, price BIGINT,
                     WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE);

SELECT * FROM ticks MATCH_RECOGNIZE (
    PARTITION BY symbol
    ORDER BY ts
    MEASURES FIRST(A.ts) AS start_ts, LAST(B.ts) AS bottom_ts, LAST(C.ts) AS end_ts,
             A.price AS top, LAST(B.price) AS bottom, LAST(C.price) AS last_price,
             COUNT(*) AS n
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B+ C+)
    DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price)
) AS v
EMIT ON WINDOW CLOSE;
