"""An interval join whose rows are the query's rows at once (``Query.at_once``): Flink runs an
interval join written without an EMIT clause so, each match when its second row comes and an
outer row once no match can come, with no EOWC sort holding the rows until their time is
complete. By hand, as a property against the same join held by the sort, and what refuses it."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import given, settings

from eowc.semantics.analysis.operator_inputs import has_join_judging_late_rows
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.engines.spec import eowc_after_each_epoch
from eowc.semantics.errors import PlanError
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import MICROS_PER_SECOND, parse_timestamp
from eowc.semantics.oracles.duckdb_oracle import oracle_eowc
from eowc.semantics.rules.triggers import Convention
from tests.test_joins import query, two_source_logs

FLINK = """CREATE TABLE Bid (bidtime TIMESTAMP(3), price INT, item STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE Ask (asktime TIMESTAMP(3), ask INT, item STRING,
  WATERMARK FOR asktime AS asktime - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');
SELECT b.item, b.price, a.ask FROM Bid b LEFT JOIN Ask a ON b.item = a.item
  AND a.asktime BETWEEN b.bidtime - INTERVAL '2' SECOND AND b.bidtime;
"""


def _bid(at: str, price: int, item: str) -> Event:
    return Event("Bid", (parse_timestamp(f"2020-04-15 08:00:{at}"), price, item))


def _ask(at: str, ask: int, item: str) -> Event:
    return Event("Ask", (parse_timestamp(f"2020-04-15 08:00:{at}"), ask, item))


def test_flinks_interval_join_as_written_emits_its_rows_at_once_by_hand() -> None:
    """Bids of a at 5 s and b at 6 s (epoch 0); an ask of a at 4 s (epoch 1): a's match, at
    once, after epoch 1, though no watermark has passed 5 s (the asks' is 3 s). A bid and an
    ask of c at 20 s (epoch 2): matched at once; the asks' watermark is then 19 s, so no ask
    at or before b's 6 s can come: b NULL-padded after epoch 2. Flink's interval join with no
    time column selected: the query's rows need none to be emitted by."""
    script = parse_script(FLINK, dialect="flink")
    assert script.query.emit_on_window_close and script.query.at_once
    log = ArrivalLog(((_bid("05", 1, "a"), _bid("06", 2, "b")), (_ask("04", 10, "a"),),
                      (_bid("20", 3, "c"), _ask("20", 11, "c"))))
    assert [(e.epoch, e.row) for e in run_eowc(script.query, log, Convention.FLINK)] == [
        (1, ("a", 1, 10)), (2, ("c", 3, 11)), (2, ("b", 2, None))]


@settings(max_examples=150, deadline=None)
@given(log=two_source_logs())
def test_at_once_rows_are_the_held_rows_earlier(log: ArrivalLog) -> None:
    """Under every convention, the interval LEFT join's rows at once are, after every epoch,
    at least the rows the EOWC sort has let through (a multiset that contains them), and
    every match of two rows kept by then (neither late) where the sources judge late rows
    (not Flink's interval join, which judges them itself); after the close, the same rows."""
    held = query("interval_LEFT")
    at_once = dataclasses.replace(held, at_once=True)
    for convention in Convention:
        late: list[LateRow] = []
        emitted = list(run_eowc(at_once, log, convention, close=True, late=late.append))
        dropped = Counter((r.event.table, r.event.row) for r in late)
        sorted_rows = list(run_eowc(held, log, convention, close=True))
        kept: dict[str, list[tuple]] = {"a": [], "b": []}
        for epoch, events in enumerate((*log.epochs, ())):
            for event in events:
                if dropped[(event.table, event.row)]:
                    dropped[(event.table, event.row)] -= 1
                else:
                    kept[event.table].append(event.row)
            now = Counter(e.row for e in emitted if e.epoch <= epoch)
            assert now >= Counter(e.row for e in sorted_rows if e.epoch <= epoch), convention
            if has_join_judging_late_rows(held.plan, convention):
                continue  # it drops no row, and a row it no longer keeps may miss a match
            matches = Counter((a[0], b[0], a[1], a[2], b[2]) for a in kept["a"] for b in kept["b"]
                              if a[1] is not None and a[1] == b[1]
                              and b[0] - 2 * MICROS_PER_SECOND <= a[0] <= b[0] + 4 * MICROS_PER_SECOND)
            assert now >= matches, convention
        assert Counter(e.row for e in emitted) == Counter(e.row for e in sorted_rows), convention


def test_explain_says_the_rows_are_the_joins_at_once(tmp_path) -> None:  # noqa: ANN001
    """``eowc explain`` of the Flink interval join: no EOWC sort on top, and it says why."""
    from click.testing import CliRunner

    from eowc.verify.cli.main import main

    path = tmp_path / "q.sql"
    path.write_text(FLINK)
    shown = CliRunner().invoke(main, ["explain", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "its rows are its interval join's, at once, with no EOWC sort over them" in shown.stdout
    assert "EOWC Sort" not in shown.stdout and "IntervalJoin" in shown.stdout


def test_the_backends_that_hold_rows_refuse_an_at_once_query() -> None:
    """The specification, the DuckDB oracle and the in-process executors hold an EOWC
    query's rows by an EOWC sort: given rows at once they refuse it by name, rather than
    give other rows."""
    from eowc.executors.driver import run_in_process

    q = parse_script(FLINK, dialect="flink").query
    log = ArrivalLog(((_bid("05", 1, "a"),),))
    for run in (lambda: eowc_after_each_epoch(q, log, Convention.FLINK),
                lambda: oracle_eowc(q, log, Convention.FLINK),
                lambda: run_in_process(q, log, Convention.FLINK)):
        with pytest.raises(PlanError, match="interval join's rows at once"):
            run()


def test_a_risingwave_eowc_interval_join_is_held_by_the_sort() -> None:
    """The same join in RisingWave's dialect with EMIT ON WINDOW CLOSE: its rows wait for the
    watermark of their time column (RisingWave's EOWC sort over the join)."""
    held = query("interval_LEFT")
    assert held.emit_on_window_close and not held.at_once


def test_eowc_run_follows_flinks_rules_for_a_flink_script(tmp_path) -> None:  # noqa: ANN001
    """``eowc run`` of a Flink SQL script takes the flink convention unless told otherwise,
    as ``eowc explain`` does. After epoch 0 (a bid at 8 s, an ask at 8 s, delays of 1 s) both
    watermarks are 7 s. The bid at 7 s of epoch 1 can meet asks up to 7 s: under Flink's rule
    its join no longer keeps it (7 s <= 7 s, the join's watermark) and pads it at once; under
    RisingWave's it waits for the asks' watermark to pass 7 s (t < W)."""
    from click.testing import CliRunner

    from eowc.verify.cli.main import main

    query, events = tmp_path / "q.sql", tmp_path / "e.jsonl"
    query.write_text(FLINK)
    events.write_text('{"table": "Bid", "row": {"bidtime": "2020-04-15 08:00:08", "price": 1, '
                      '"item": "a"}}\n{"table": "Ask", "row": {"asktime": "2020-04-15 08:00:08", '
                      '"ask": 5, "item": "z"}}\n{"barrier": true}\n{"table": "Bid", "row": '
                      '{"bidtime": "2020-04-15 08:00:07", "price": 2, "item": "b"}}\n'
                      '{"barrier": true}\n')
    runs = {c: CliRunner().invoke(main, ["run", str(query), str(events), *c])
            for c in ((), ("--convention", "flink"), ("--convention", "risingwave"))}
    assert all(r.exit_code == 0 for r in runs.values()), [r.output for r in runs.values()]
    assert runs[()].stdout == runs[("--convention", "flink")].stdout
    assert runs[()].stdout == '{"item": "b", "price": 2, "ask": null}\n'
    assert runs[("--convention", "risingwave")].stdout == ""
