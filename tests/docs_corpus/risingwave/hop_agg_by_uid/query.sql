create table t1 (row_id int, uid int, v int, created_at timestamp);

create materialized view mv_hop_agg_2 as
select uid, sum(v) as sum_v, window_start
from hop(t1, created_at, interval '15' minute, interval '30' minute)
group by window_start, uid;
