CREATE TABLE taxi_trips (
    trip_id INT,
    taxi_id INT,
    completed_at TIMESTAMP,
    distance INT,
    duration INT
);


SELECT window_start, window_end, count(trip_id) AS no_of_trips, sum(distance) AS total_distance
FROM HOP (taxi_trips, completed_at, INTERVAL '1 MINUTES', INTERVAL '2 MINUTES')
GROUP BY window_start, window_end
ORDER BY window_start;
