CREATE TABLE example (v1 int, v2 int[]);

SELECT v1, unnest(v2) AS item, generate_series(1, array_length(v2), 1) AS ord FROM example;
