CREATE TABLE taxi_trips (
    trip_id INT,
    taxi_id INT,
    completed_at TIMESTAMP,
    distance INT,
    duration INT
);


SELECT trip_id, taxi_id, completed_at, window_start, window_end
FROM HOP (taxi_trips, completed_at, INTERVAL '1 MINUTE', INTERVAL '2 MINUTES');
