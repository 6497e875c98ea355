create table t (
    tm timestamp,
    foo int,
    watermark for tm as tm - interval '5 minutes'
) append only;

create materialized view mv as
select window_start, foo
from (
    select
        *, row_number() over (partition by window_start order by foo) as rownum
    from tumble(t, tm, interval '1 hour')
)
where rownum <= 1
emit on window close;
