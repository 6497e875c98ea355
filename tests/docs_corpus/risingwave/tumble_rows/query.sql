CREATE TABLE taxi_trips (
    trip_id INT,
    taxi_id INT,
    completed_at TIMESTAMP,
    distance INT,
    duration INT
);


SELECT trip_id, taxi_id, completed_at, window_start, window_end
FROM TUMBLE (taxi_trips, completed_at, INTERVAL '2 MINUTES');
