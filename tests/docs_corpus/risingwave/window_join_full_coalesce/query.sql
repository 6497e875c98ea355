create table LeftTable (row_time timestamp, num int, id varchar);

create table RightTable (row_time timestamp, num int, id varchar);

CREATE MATERIALIZED VIEW mv_window_join AS
SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id,
    COALESCE(L.window_start, R.window_start) AS window_start,
    COALESCE(L.window_end, R.window_end) AS window_end
FROM TUMBLE(LeftTable, row_time, interval '5' minute) AS L
FULL JOIN
TUMBLE(RightTable, row_time, interval '5' minute) AS R
ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end;
