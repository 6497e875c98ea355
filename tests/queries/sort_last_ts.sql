-- EOWC sort with the event time last (the mutants of tests/mutants.py read it there).
CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE;
