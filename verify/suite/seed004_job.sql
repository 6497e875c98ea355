-- Seed 004's job (docs/examples/seed004_job_fixed.sql): two CUMULATE window aggregates of
-- orders, their LEFT window join, a window TopN of it per window; each operator a stage of the
-- composed executor. An order without a seller makes an unmatched row of the LEFT window join,
-- released when its window closes (its window_end bound), before the TopN above closes it.
CREATE TABLE orders (
    item_id   BIGINT,
    seller_id BIGINT,
    user_id   BIGINT,
    price     DOUBLE,
    pay_time  TIMESTAMP,
    WATERMARK FOR pay_time AS pay_time - INTERVAL '5' SECOND
);

CREATE TABLE item_top100_cumulate_10min (
    item_id BIGINT, seller_id BIGINT, window_start TIMESTAMP, window_end TIMESTAMP,
    sales DOUBLE, item_buyer_cnt BIGINT, slr_buyer_cnt BIGINT, rank BIGINT
) WITH ('connector' = 'print');

CREATE TEMPORARY VIEW trd_itm_ord_mm AS
SELECT item_id, a.seller_id, a.window_start, a.window_end, sales, item_buyer_cnt, slr_buyer_cnt
FROM (
    SELECT item_id, seller_id, window_start, window_end, SUM(price) as sales, COUNT(DISTINCT user_id) as item_buyer_cnt
    FROM TABLE(
        CUMULATE(TABLE orders, DESCRIPTOR(pay_time), INTERVAL '10' MINUTES, INTERVAL '1' DAY))
    GROUP BY item_id, seller_id, window_start, window_end
) a
LEFT JOIN ( -- using window join to enrich the buyer count of the shop from 00:00 to current minute
    SELECT seller_id, window_start, window_end, COUNT(DISTINCT user_id) as slr_buyer_cnt
    FROM TABLE(
        CUMULATE(TABLE orders, DESCRIPTOR(pay_time), INTERVAL '10' MINUTES, INTERVAL '1' DAY))
    GROUP BY seller_id, window_start, window_end
) b
ON a.seller_id = b.seller_id AND a.window_start = b.window_start AND a.window_end = b.window_end;


INSERT INTO item_top100_cumulate_10min
SELECT *
FROM (
    SELECT *,
        ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY sales DESC) as rank
    FROM trd_itm_ord_mm
  ) WHERE rank <= 100
EMIT ON WINDOW CLOSE;
