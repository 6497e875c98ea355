"""Exact below a millisecond, or refused (issue 19): the executors keep Spark's watermark in whole
milliseconds, the reference keeps it in microseconds (executors/millisecond_watermark.py,
docs/executors.md "Below a millisecond").

* hand-computed examples, one per convention and cause, each a divergence of the executors
  before the check: the reference's rows are counted here by hand, and the in-process executor
  now either gives exactly them or refuses the run naming the file, line, column and value;
* the command line (``eowc run --engine in-process`` and ``--engine spark``) prints the refusal
  in one line, without a traceback, and exits 2;
* a property: over random logs with sub-millisecond event times, window sizes and delays, the
  in-process executor equals the reference or refuses, never differs; and it runs (exactly)
  where nothing falls between two milliseconds;
* mutants of the check (left out; applied under risingwave only) make that property fail.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import eowc.executors.millisecond_watermark as millisecond_watermark
from eowc.executors.driver import run_in_process
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.errors import InputError, PlanError
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, parse_arrival_log
from eowc.semantics.ir.values import MICROS_PER_MILLI, MICROS_PER_SECOND, parse_timestamp
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from tests.strategies import cut_into_epochs, script_once

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
ALL = (RW, SPARK, FLINK)

SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '{delay}' SECOND);
"""
SORT = "SELECT price, ts FROM bids EMIT ON WINDOW CLOSE;\n"


def sort_script(delay: str) -> str:
    return SOURCE.format(delay=delay) + SORT


def bid(price: int, ts: str) -> dict[str, Any]:
    return {"table": "bids", "row": {"auction": 1, "price": price, "ts": ts}}


BARRIER = {"barrier": True}

#: Cause 1, a sub-millisecond event time that is its source's largest (delay 1 s). Epoch 0 sets
#: max(ts) = 12:00:01.000500. Epoch 1 brings 12:00:00.000200 (price 10) and 12:00:00 (price 11).
#:   risingwave: W = 12:00:00.000500 (max - 1 s); both are below it (c < W): late. Output
#:     (with --close): price 0 only. The millisecond watermark 12:00:00.000 kept both:
#:     0.000200 < 0.000 and 0.000 < 0.000 are false (even the whole-millisecond row diverged).
#:   flink: W = 12:00:00.000500 too; c <= W makes both late: price 0 only. The millisecond
#:     watermark kept 10 (0.000200 <= 0.000 is false) and dropped 11.
#:   spark: max(c) is truncated to 12:00:01.000, W = 12:00:00.000: 10 is kept (0.000200 > W),
#:     11 is late (c <= W): prices 10, 0 (in ts order), the same on a millisecond watermark.
MAX_SUB_MS = [bid(0, "2026-01-01 12:00:01.000500"), BARRIER,
              bid(10, "2026-01-01 12:00:00.000200"), bid(11, "2026-01-01 12:00:00"), BARRIER]
#: Cause 2, a delay of 500 microseconds. Epoch 0: max(ts) = 12:00:00.001, W = 12:00:00.000500
#: under all three conventions (0.001 is a whole millisecond). Epoch 1: 12:00:00.000300
#: (price 10), 12:00:00.000700 (price 11).
#:   risingwave (c < W), spark and flink (c <= W): 10 is late, 11 is kept: prices 11, 0.
#:   The driver's watermark, rounded down to 12:00:00.000, kept both (10, 11, 0); Spark's, the
#:   delay truncated to 0 ms, is 12:00:00.001 and drops both (0).
SUB_MS_DELAY = [bid(0, "2026-01-01 12:00:00.001"), BARRIER,
                bid(10, "2026-01-01 12:00:00.000300"), bid(11, "2026-01-01 12:00:00.000700"), BARRIER]

#: (name, delay, log, convention, the reference's prices by hand, refused?)
EXAMPLES = [
    ("max_sub_ms", "1", MAX_SUB_MS, RW, [0], True),
    ("max_sub_ms", "1", MAX_SUB_MS, FLINK, [0], True),
    ("max_sub_ms", "1", MAX_SUB_MS, SPARK, [10, 0], False),
    ("sub_ms_delay", "0.0005", SUB_MS_DELAY, RW, [11, 0], True),
    ("sub_ms_delay", "0.0005", SUB_MS_DELAY, FLINK, [11, 0], True),
    ("sub_ms_delay", "0.0005", SUB_MS_DELAY, SPARK, [11, 0], True),
]


def _log(script: Script, lines: list[dict[str, Any]]) -> ArrivalLog:
    return parse_arrival_log([json.dumps(x) for x in lines], script.sources).log


def write_files(tmp_path: Path, sql: str, lines: list[dict[str, Any]]) -> tuple[str, str]:
    """q.sql and events.jsonl under ``tmp_path``: their paths."""
    query, events = tmp_path / "q.sql", tmp_path / "events.jsonl"
    query.write_text(sql, encoding="utf-8")
    events.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(query), str(events)


@pytest.mark.parametrize(("name", "delay", "lines", "convention", "expected", "refused"), EXAMPLES,
                         ids=[f"{e[0]}-{e[3].value}" for e in EXAMPLES])
def test_hand_examples_are_exact_or_refused(name: str, delay: str, lines: list[dict[str, Any]],
                                            convention: Convention, expected: list[int],
                                            refused: bool, tmp_path: Path) -> None:
    """The reference gives the hand-counted prices; the in-process executor gives exactly them
    or refuses the log (before the check it gave the other rows named in the comments)."""
    sql = sort_script(delay)
    script = parse_script(sql)
    log = _log(script, lines)
    reference = [row[0] for _, row in run_eowc(script.query, log, convention, close=True)]
    assert reference == expected
    _, events = write_files(tmp_path, sql, lines)
    if not refused:
        run = run_in_process(script.query, log, convention, close=True, log_path=events)
        assert [row[0] for _, row in run.emissions] == expected
        return
    with pytest.raises((InputError, PlanError)) as caught:
        run_in_process(script.query, log, convention, close=True, log_path=events)
    text = str(caught.value)
    if name == "sub_ms_delay":
        assert isinstance(caught.value, PlanError)
        assert text.startswith("the watermark delay of bids, 00:00:00.000500, is not a whole "
                               "number of milliseconds: ")
    else:  # line 1: {"table": "bids", "row": {"auction": 1, "price": 0, "ts": ..., "ts" at 53
        assert json.dumps(lines[0]).index('"ts"') + 1 == 53
        assert text.startswith(f"{events}:1: column 53: bids.ts: event time "
                               f"2026-01-01 12:00:01.000500 is not a whole millisecond: under the "
                               f"{convention.value} convention")


#: Whole-millisecond watermarks with sub-millisecond values elsewhere run, exactly:
#: a late sub-ms row (never the largest), and windows of 1.5 ms (sub-ms ends).
#: Delay 0: epoch 0 max 12:00:00.003 -> W = 12:00:00.003. Epoch 1: 12:00:00.002999 (price 10,
#: late under all three: c < W and c <= W), 12:00:00.003000 (price 11: late under spark and
#: flink, c <= W; kept under risingwave), 12:00:00.004 (price 12): max 0.004, W = 0.004.
#: Tumbling windows of 1.5 ms from the epoch: ..., [0.0030, 0.0045), [0.0045, 0.0060).
WINDOWED = SOURCE.format(delay="0") + """SELECT window_end, count(*) AS n
FROM TUMBLE(bids, ts, INTERVAL '0.0015' SECOND) GROUP BY window_end EMIT ON WINDOW CLOSE;
"""
WHOLE_MS_WATERMARK = [bid(0, "2026-01-01 12:00:00.003"), BARRIER,
                      bid(10, "2026-01-01 12:00:00.002999"), bid(11, "2026-01-01 12:00:00.003"),
                      bid(12, "2026-01-01 12:00:00.004"), BARRIER]


@pytest.mark.parametrize("convention", ALL, ids=lambda c: c.value)
def test_sub_millisecond_values_under_a_whole_millisecond_watermark_run_exactly(
        convention: Convention) -> None:
    """Windows [0.0030, 0.0045): price 0 (epoch 0) and 11, 12 if admitted. Price 10's window
    [0.0015, 0.0030) closed at W = 0.003 (end <= W; Flink: end - 1 ms <= W): late everywhere.
    risingwave admits 11 (0.003 is not below W = 0.003); spark and flink judge lateness per
    window, and 11's window [0.003, 0.0045) is still open at W = 0.003 (0.0045 > 0.003; Flink:
    0.0035 > 0.003), so they admit it too: n = 3 under all three. The window closes at W = 0.004 under
    flink (0.0045 - 1 ms <= W: epoch 1), at --close under the others (0.0045 > 0.004)."""
    script = parse_script(WINDOWED)
    log = _log(script, WHOLE_MS_WATERMARK)
    late: list[LateRow] = []
    reference = list(run_eowc(script.query, log, convention, close=True, late=late.append))
    end = parse_timestamp("2026-01-01 12:00:00.0045")
    assert [row for _, row in reference] == [(end, 3)]
    assert [epoch for epoch, _ in reference] == [1 if convention is FLINK else 2]
    assert [e.event.row[1] for e in late] == [10]
    run = run_in_process(script.query, log, convention, close=True)
    assert run.emissions == reference
    assert [e.event.row[1] for e in run.late] == [10]


# ------------------------------------------------------------------------------ command line

def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("engine", ["in-process", "spark"])
def test_the_command_line_prints_the_refusal_without_a_traceback(engine: str, tmp_path: Path
                                                                 ) -> None:
    """Refused before any run (Spark is not started): one line, exit code 2, nothing on
    stdout."""
    query, events = write_files(tmp_path, sort_script("1"), MAX_SUB_MS)
    result = _invoke("run", query, events, "--convention", "risingwave", "--close",
                     "--engine", engine)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"eowc: error: {events}:1: column 53: bids.ts: event time "
                                    "2026-01-01 12:00:01.000500 is not a whole millisecond")
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    query, events = write_files(tmp_path, sort_script("0.0005"), SUB_MS_DELAY)
    result = _invoke("run", query, events, "--convention", "spark", "--close", "--engine", engine)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"eowc: error: {query}: the watermark delay of bids, "
                                    "00:00:00.000500, is not a whole number of milliseconds: ")
    assert "Traceback" not in result.stderr


def test_the_command_line_runs_what_cannot_diverge(tmp_path: Path) -> None:
    """The spark convention truncates max(c): the same log runs, as the reference."""
    query, events = write_files(tmp_path, sort_script("1"), MAX_SUB_MS)
    ran = _invoke("run", query, events, "--convention", "spark", "--close", "--engine",
                  "in-process", "--format", "jsonl")
    reference = _invoke("run", query, events, "--convention", "spark", "--close", "--format",
                        "jsonl")
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout == reference.stdout
    assert [json.loads(x)["price"] for x in ran.stdout.splitlines()] == [10, 0]


# ------------------------------------------------------------------------------ the property

BASE = 1_700_000_000 * MICROS_PER_SECOND
#: Sub-second parts: whole milliseconds and microseconds either side of them.
FRACTIONS = (0, 0, 1, 499, 500, 999, 1_000, 1_500, 2_000, 999_999)
#: Queries whose sizes (window, gap, frame, join bound) and delays are drawn.
TEMPLATES = {
    "sort": "SELECT auction, price, ts FROM bids EMIT ON WINDOW CLOSE;",
    "tumble": "SELECT window_start, window_end, count(*) AS n, sum(price) AS s FROM "
              "TUMBLE(bids, ts, INTERVAL '{size}' SECOND) GROUP BY window_start, window_end "
              "EMIT ON WINDOW CLOSE;",
    "hop": "SELECT window_end, count(*) AS n FROM HOP(bids, ts, INTERVAL '{size}' SECOND, "
           "INTERVAL '{double}' SECOND) GROUP BY window_end EMIT ON WINDOW CLOSE;",
    "session": "SELECT auction, window_start, window_end, count(*) AS n FROM TABLE(SESSION(TABLE "
               "bids PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '{size}' SECOND)) "
               "GROUP BY auction, window_start, window_end EMIT ON WINDOW CLOSE;",
    "over": "SELECT auction, ts, price, sum(price) OVER (PARTITION BY auction ORDER BY ts RANGE "
            "BETWEEN INTERVAL '{size}' SECOND PRECEDING AND INTERVAL '{size}' SECOND FOLLOWING) "
            "AS s FROM bids EMIT ON WINDOW CLOSE;",
    # composed (executors/composed.py): keeps each source's watermark to the microsecond itself
    "interval_join": "SELECT a.price, b.price AS other, a.ts FROM bids a JOIN bids b ON "
                     "a.auction = b.auction AND a.ts BETWEEN b.ts - INTERVAL '{size}' SECOND AND "
                     "b.ts + INTERVAL '{size}' SECOND EMIT ON WINDOW CLOSE;",
}
SIZES = ("0.002", "0.0015", "0.0025")
DELAYS = ("0", "0.001", "0.002", "0.0005")


def sub_millisecond_case(generator: random.Random) -> tuple[Script, ArrivalLog, Convention]:
    """A query with a drawn window size and delay, and a log of event times a few milliseconds
    apart with sub-millisecond parts, out of order, cut into epochs at random, under a drawn
    convention."""
    size = generator.choice(SIZES)
    template = TEMPLATES[generator.choice(sorted(TEMPLATES))]
    sql = (SOURCE.format(delay=generator.choice(DELAYS))
           + template.format(size=size, double=f"{2 * float(size):.4f}"))
    events = [Event("bids", (generator.randint(1, 2), generator.randint(0, 9),
                             BASE + generator.randint(0, 8) * MICROS_PER_MILLI
                             + generator.choice(FRACTIONS)))
              for _ in range(generator.randint(0, 14))]
    cuts = [generator.random() < 0.5 for _ in events]
    return script_once(sql), cut_into_epochs(events, cuts), generator.choice(ALL)


def exact_or_refused(script: Script, log: ArrivalLog, convention: Convention) -> str:
    """``"refused"`` or ``"exact"``; an AssertionError if the executor's emissions or late rows
    differ from the reference's."""
    try:
        run = run_in_process(script.query, log, convention, close=True)
    except (InputError, PlanError):
        return "refused"
    late: list[LateRow] = []
    reference = list(run_eowc(script.query, log, convention, close=True, late=late.append))
    assert run.emissions == reference
    assert [(x.epoch, x.event) for x in run.late] == [(x.epoch, x.event) for x in late]
    return "exact"


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_executor_equals_the_reference_or_refuses(generator: random.Random) -> None:
    exact_or_refused(*sub_millisecond_case(generator))


def _outcomes(cases: int = 400, seed: int = 19) -> dict[str, int]:
    """How often each outcome (and a difference, ``"differs"``) occurs over ``cases``
    derandomized cases, ``"exact_sub_ms"`` counting exact runs whose log has a
    sub-millisecond time."""
    counts = {"refused": 0, "exact": 0, "exact_sub_ms": 0, "differs": 0}
    generator = random.Random(seed)
    for _ in range(cases):
        script, log, convention = sub_millisecond_case(generator)
        try:
            outcome = exact_or_refused(script, log, convention)
        except AssertionError:
            counts["differs"] += 1
            continue
        counts[outcome] += 1
        if outcome == "exact" and any(e.row[2] % MICROS_PER_MILLI for e in log.events):
            counts["exact_sub_ms"] += 1
    return counts


def test_the_property_exercises_both_outcomes() -> None:
    """Over 400 derandomized cases: some refused, some run exactly with sub-millisecond event
    times in their logs (so the check is not refusing everything), none differs."""
    counts = _outcomes()
    assert counts["differs"] == 0, counts
    assert counts["refused"] >= 50 and counts["exact_sub_ms"] >= 50, counts


@contextmanager
def _mutant(check: Callable[..., None]) -> Iterator[None]:
    """The driver with ``check`` in place of its millisecond-watermark check."""
    import eowc.executors.driver as driver

    original = driver.check_millisecond_watermarks
    driver.check_millisecond_watermarks = check
    try:
        yield
    finally:
        driver.check_millisecond_watermarks = original


def _risingwave_only(processor: Any, log: ArrivalLog, convention: Convention, path: str = "") -> None:
    """A plausible slip: refusing sub-millisecond watermarks under risingwave only (as if
    flink, whose late check is ``<=`` like spark's, truncated ``max(c)`` as spark does)."""
    if convention is RW:
        millisecond_watermark.check_millisecond_watermarks(processor, log, convention, path)


@pytest.mark.parametrize("check", [lambda *args, **kwargs: None, _risingwave_only],
                         ids=["no_check", "risingwave_only"])
def test_mutants_of_the_check_make_the_property_fail(check: Callable[..., None]) -> None:
    with _mutant(check):
        counts = _outcomes()
    assert counts["differs"] > 0, counts
