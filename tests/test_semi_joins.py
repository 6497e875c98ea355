"""Semi and anti joins written as subqueries (Flink's window semi/anti joins: ``IN``,
``EXISTS``, ``NOT IN``, ``NOT EXISTS`` over the same window table function, correlated on
window_start and window_end), and RisingWave's ASOF joins, refused by name until they are
read (they were run as plain joins: a wrong answer)."""

from __future__ import annotations

import pytest

from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.sql import parse_script

STOCKS = """
CREATE TABLE stock_prices (stock_name VARCHAR, stock_time TIMESTAMP, price INT);
CREATE TABLE market_data (stock_name VARCHAR, market_time TIMESTAMP, sentiment DOUBLE PRECISION);
"""


@pytest.mark.parametrize("join", ["ASOF JOIN", "ASOF LEFT JOIN"])
def test_an_asof_join_is_refused_by_name(join: str) -> None:
    """Never run as a plain join (12 rows where RisingWave's docs print 6)."""
    with pytest.raises(SqlError, match=f"{join} is not supported yet"):
        parse_script(STOCKS + f"SELECT sp.stock_name, md.sentiment FROM stock_prices sp {join} "
                     "market_data md ON sp.stock_name = md.stock_name "
                     "AND md.market_time <= sp.stock_time;")
