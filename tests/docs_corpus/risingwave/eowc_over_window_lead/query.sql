create table t (
    tm timestamp,
    foo int,
    bar int,
    watermark for tm as tm - interval '5 minutes'
) append only;

create materialized view mv2 as
select
    tm, foo, bar,
    lead(foo, 1) over (partition by bar order by tm) as l1,
    lead(foo, 3) over (partition by bar order by tm) as l2
from t
emit on window close;
