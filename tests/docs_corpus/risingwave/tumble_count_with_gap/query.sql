CREATE TABLE taxi_trips (
    trip_id INT,
    taxi_id INT,
    completed_at TIMESTAMP,
    distance INT,
    duration INT
);

SELECT window_start, window_end, COUNT(*) AS trip_count
FROM TUMBLE (taxi_trips, completed_at, INTERVAL '2 MINUTES')
GROUP BY window_start, window_end;
