CREATE TABLE stock_prices (
    stock_name VARCHAR,
    stock_time TIMESTAMP,
    price INT
);

CREATE TABLE market_data (
    stock_name VARCHAR,
    market_time TIMESTAMP,
    sentiment DOUBLE PRECISION
);

SELECT sp.stock_name, sp.stock_time, sp.price, md.sentiment
FROM stock_prices sp
ASOF LEFT JOIN market_data md 
ON sp.stock_name = md.stock_name 
AND md.market_time <= sp.stock_time;
