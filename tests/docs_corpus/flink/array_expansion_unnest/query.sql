CREATE TABLE Orders (
  order_id BIGINT,
  tags ARRAY<STRING>
) WITH (
  'connector' = 'datagen'
);

SELECT order_id, tag
FROM Orders CROSS JOIN UNNEST(tags) AS t (tag)
