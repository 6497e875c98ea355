-- RisingWave's ASOF LEFT JOIN: each trade with the latest quote of its symbol at or before
-- the trade (docs/operators/joins.md, "ASOF joins"). It emits on update only.
CREATE TABLE trades (sym VARCHAR, trade_time TIMESTAMP, qty INT);
CREATE TABLE quotes (sym VARCHAR, quote_time TIMESTAMP, price DOUBLE PRECISION);

SELECT t.sym, trade_time, qty, quote_time, price
FROM trades t
ASOF LEFT JOIN quotes q ON t.sym = q.sym AND q.quote_time <= t.trade_time;
