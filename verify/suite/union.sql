-- UNION ALL of two sources under an EOWC sort: each source's rows judged by its own
-- watermark, the union's output emitted in event-time order under the minimum of the two.
CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
CREATE SOURCE asks (auction BIGINT, seller VARCHAR, ask DOUBLE, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '3' SECOND);
SELECT ts, auction, price FROM bids WHERE price > 0.5
UNION ALL
SELECT ts, auction, ask FROM asks
EMIT ON WINDOW CLOSE;
