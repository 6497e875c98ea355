-- Window join (seed 004): bids and asks of the same auction in the same 5-second window,
-- FULL OUTER: a window's row without a partner NULL-padded once the other side's window closed.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE SOURCE asks (auction BIGINT, seller VARCHAR, ask DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
SELECT b.window_start, b.window_end, a.window_end AS ask_window_end, b.auction, bidder, seller
FROM (SELECT * FROM TUMBLE(bids, ts, INTERVAL '5' SECOND)) b
FULL JOIN (SELECT * FROM TUMBLE(asks, ts, INTERVAL '5' SECOND)) a
  ON b.window_start = a.window_start AND b.window_end = a.window_end
 AND b.auction = a.auction
EMIT ON WINDOW CLOSE;
