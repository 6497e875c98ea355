create table t (
    tm timestamp,
    foo int,
    watermark for tm as tm - interval '5 minutes'
) append only;

create materialized view mv as
select tm, foo from t
emit on window close;
