create table t (
    tm timestamp,
    foo int,
    watermark for tm as tm - interval '5 minutes'
) append only;

create materialized view mv as
select
    window_start, max(foo)
from tumble(t, tm, interval '1 hour')
group by window_start
emit on window close;
