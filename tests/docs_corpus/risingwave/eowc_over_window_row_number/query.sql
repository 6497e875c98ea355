create table t (
    tm timestamp,
    foo int,
    bar int,
    watermark for tm as tm - interval '5 minutes'
) append only;

create materialized view mv3 as
select
    *,
    row_number() over (partition by bar order by tm) as rn
from t
emit on window close;
