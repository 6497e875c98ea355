-- The SESSION TVF read without a GROUP BY (Flink's window TVF): every bid with its session's
-- window_start, window_end and window_time, emitted once the session closes.
CREATE SOURCE bid (bidtime TIMESTAMP, price DOUBLE, item VARCHAR,
                   WATERMARK FOR bidtime AS bidtime - INTERVAL '1' MINUTE);

SELECT bidtime, item, window_start, window_end
FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '3' MINUTES))
EMIT ON WINDOW CLOSE;
