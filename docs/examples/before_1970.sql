CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
SELECT price, ts FROM bids EMIT ON WINDOW CLOSE;
