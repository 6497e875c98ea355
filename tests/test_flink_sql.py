"""RisingWave scripts printed as Flink SQL (eowc.semantics.frontend.flink_sql): the printed
text by hand, and the same rows from the printed script as from the original under the
flink convention, on the built-in suite's queries with generated logs. (Flink itself runs the
printed suite in tests/flink.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.errors import SqlError
from eowc.semantics.frontend.dialects import detect_dialect
from eowc.semantics.frontend.flink_sql import flink_script
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.rules.triggers import Convention
from eowc.verify.generators import LogShape, random_multi_source_log

SUITE = Path(__file__).resolve().parents[1] / "verify" / "suite"
BIDS = ("CREATE SOURCE bids (auction BIGINT, bidder VARCHAR, price DOUBLE, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) APPEND ONLY;\n")
BIDS_IN_FLINK = ("CREATE TABLE `bids` (`auction` BIGINT, `bidder` STRING, `price` DOUBLE, "
                 "`ts` TIMESTAMP(3), WATERMARK FOR `ts` AS `ts` - INTERVAL '2' SECOND) "
                 "WITH ('connector' = 'datagen');\n")


def test_a_source_and_a_tumbling_window_aggregation_by_hand() -> None:
    printed = flink_script(BIDS + "-- per window\nSELECT window_start, COUNT(*) AS n FROM "
                           "TUMBLE(bids, ts, INTERVAL '5' SECOND) GROUP BY window_start, "
                           "window_end EMIT ON WINDOW CLOSE;")
    assert printed == BIDS_IN_FLINK + (
        "SELECT `window_start`, COUNT(*) AS `n` FROM TABLE(TUMBLE(TABLE `bids`, "
        "DESCRIPTOR(`ts`), INTERVAL '5' SECOND)) GROUP BY `window_start`, `window_end`;\n")
    assert detect_dialect(printed) == "flink"


def test_session_keys_a_subquery_and_a_long_interval_by_hand() -> None:
    printed = flink_script(
        BIDS + "SELECT auction, window_end, COUNT(*) AS n FROM SESSION((SELECT * FROM bids "
        "WHERE price > 1), ts, INTERVAL '120' SECOND, auction) GROUP BY auction, window_start, "
        "window_end EMIT ON WINDOW CLOSE;")
    assert printed == BIDS_IN_FLINK + (
        "CREATE TEMPORARY VIEW `eowc_window_input_1` AS SELECT * FROM `bids` WHERE `price` > 1;\n"
        "SELECT `auction`, `window_end`, COUNT(*) AS `n` FROM TABLE(SESSION(TABLE "
        "`eowc_window_input_1` PARTITION BY `auction`, DESCRIPTOR(`ts`), "
        "INTERVAL '120' SECOND(3))) GROUP BY `auction`, `window_start`, `window_end`;\n")


def _printable() -> list[Path]:
    """The suite's RisingWave queries whose printed Flink SQL eowc also reads as EOWC."""
    found = []
    for path in sorted(SUITE.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        if detect_dialect(text) == "flink" or "COUNT_HOP" in text:
            continue
        printed = parse_script(flink_script(text)).query
        if printed.emit_on_window_close and not printed.at_once:
            found.append(path)
    return found


@pytest.mark.parametrize("path", _printable(), ids=lambda p: p.stem)
@pytest.mark.parametrize("seed", range(3))
def test_the_printed_script_means_what_the_original_does(path: Path, seed: int) -> None:
    original = parse_script(path.read_text(encoding="utf-8")).query
    printed = parse_script(flink_script(path.read_text(encoding="utf-8"))).query
    log = random_multi_source_log(sources_of(original.plan), Convention.FLINK, seed,
                                  LogShape(rows=80))
    expected = Counter((e.epoch, e.row) for e in run_eowc(original, log, Convention.FLINK,
                                                           close=True))
    assert expected  # the log makes the query emit
    assert Counter((e.epoch, e.row) for e in run_eowc(printed, log, Convention.FLINK,
                                                              close=True)) == expected
    assert [c.name for c in printed.schema] == [c.name for c in original.schema]


def test_the_printable_suite_is_every_query_flink_runs_as_eowc() -> None:
    assert {p.stem for p in _printable()} == {
        "cascade", "cumulate_agg", "hop_agg", "join_over_window", "over_window", "pattern",
        "session", "sort_agg", "top_n_over_aggregate", "tumble_agg", "window_join",
        "window_join_aggregates", "window_top_n"}


def test_a_count_window_is_refused_by_name() -> None:
    with pytest.raises(SqlError, match=r"Flink SQL has no count window \(COUNT_HOP\)"):
        flink_script((SUITE / "count_window.sql").read_text(encoding="utf-8"))
