create table t (
    tm timestamp,
    foo int,
    bar int,
    watermark for tm as tm - interval '5 minutes'
) append only;

create materialized view mv4 as
select
    *,
    first_value(tm) over (partition by bar order by tm session with gap '10 minutes') as window_start,
    last_value(tm) over (partition by bar order by tm session with gap '10 minutes') as window_end
from t
emit on window close;
