-- EOWC sort of a window TVF: every row with its 5-second window, once the window closes.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT window_start, window_end, auction, price, ts
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)
EMIT ON WINDOW CLOSE;
