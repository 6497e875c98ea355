CREATE TABLE t (arr VARCHAR[]);

SELECT * FROM t CROSS JOIN unnest(t.arr) WITH ORDINALITY AS x(elts, num);
