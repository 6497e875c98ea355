-- RisingWave's session frames (its e2e test eowc_over_window.slt, mv4): each row with the
-- first and last time of its session (rows of one bar less than 10 minutes apart) and the
-- sum of foo over it, emitted once the session is closed.
create table t (
    tm timestamp,
    foo int,
    bar int,
    watermark for tm as tm - interval '5 minutes'
) append only;

select
    *,
    first_value(tm) over (partition by bar order by tm session with gap '10 minutes') as window_start,
    last_value(tm) over (partition by bar order by tm session with gap '10 minutes') as window_end,
    sum(foo) over (partition by bar order by tm session with gap '10 minutes') as total
from t
emit on window close;
