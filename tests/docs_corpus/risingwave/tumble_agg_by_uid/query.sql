create table t1 (row_id int, uid int, v int, created_at timestamp);

create materialized view mv_tumble_agg_2 as
select uid, sum(v) as sum_v, window_start
from tumble(t1, created_at, interval '30' minute)
group by window_start, uid;
