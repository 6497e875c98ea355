"""Update policies (seed 003): early, on-time and late firings of a window aggregate as one
changelog. By hand on the docs example; on random logs: the final state is Q over the rows
within the allowed lateness, with no early firings and no lateness the on-time firings are the
EOWC output, a window marked final never changes, dropped rows are reported."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.interpreter import LateRow, policy_reports, run_eowc, run_update_policy
from eowc.semantics.engines.spec import evaluate, input_through
from eowc.semantics.errors import PlanError
from eowc.semantics.frontend.sql import parse_interval_text, parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import MICROS_PER_SECOND, format_timestamp
from eowc.semantics.operators.update_policy import UpdatePolicy, changelog_state
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from tests.strategies import arrival_logs, script

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
QUERIES = {
    "tumble": "SELECT window_start, window_end, count(*) AS n, sum(price) AS s FROM "
              "TUMBLE(bids, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end",
    "hop-keyed": "SELECT auction, window_end, max(price) AS m FROM HOP(bids, ts, INTERVAL '2' "
                 "SECOND, INTERVAL '6' SECOND) GROUP BY auction, window_end HAVING count(*) > 1",
    "cumulate": "SELECT window_start, window_end, count(*) AS n FROM CUMULATE(bids, ts, "
                "INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY window_start, window_end",
}
policies = st.builds(UpdatePolicy, st.one_of(st.none(), st.integers(1, 3)),
                     st.sampled_from([0, 1, 999_999, 3 * MICROS_PER_SECOND, 20 * MICROS_PER_SECOND]))


def test_early_on_time_and_late_firings_by_hand() -> None:
    """docs/examples/tumble.sql (TUMBLE 10 min, delay 1 min) over bids.jsonl, early every
    epoch, allowed lateness 5 min. [08:00, 08:10) fires early after epoch 0 (C, A: 6.0, 2), on
    time after epoch 1 (W = 08:10: + D = 11.0, 3), late after epoch 3: H 08:08 is within the
    lateness (08:08 >= W - 5 min = 08:07) and makes it 20.0, 4; W = 08:16 makes it final
    (08:10 + 5 min <= 08:16). The others are final only at the close."""
    parsed = parse_script((EXAMPLES / "tumble.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "bids.jsonl"), parsed.sources).log
    policy = UpdatePolicy(1, 5 * 60 * MICROS_PER_SECOND)
    reports = list(policy_reports(parsed.query, log, policy, close=True))
    first = [(f.epoch, f.op, f.kind, f.row[2], f.row[3]) for r in reports for f in r.firings
             if format_timestamp(f.row[0]).endswith("08:00:00")]
    assert first == [(0, "+", "early", 6.0, 2), (1, "-", "on_time", 6.0, 2),
                     (1, "+", "on_time", 11.0, 3), (3, "-", "late", 11.0, 3),
                     (3, "+", "late", 20.0, 4)]
    assert [[format_timestamp(k[0])[11:16] for k in r.final] for r in reports] == \
        [[], [], [], ["08:00"], [], ["08:10", "08:20"]]
    dropped: list[LateRow] = []
    strict = list(run_update_policy(parsed.query, log, UpdatePolicy(None, 0), dropped=dropped.append))
    assert [d.event.row[2] for d in dropped] == ["H"]
    assert all(f.kind == "on_time" and f.op == "+" for f in strict)


def test_cli_prints_op_and_firing() -> None:
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "tumble.sql"),
                                       str(EXAMPLES / "bids.jsonl"), "--with-epoch", "--close",
                                       "--early-every", "1", "--allowed-lateness", "5 minutes"])
    assert result.exit_code == 0, result.output
    assert '"total_price": 20.0, "bids": 4, "_op": "+", "_firing": "late", "_epoch": 3' in result.output
    strict = CliRunner().invoke(main, ["run", str(EXAMPLES / "tumble.sql"),
                                       str(EXAMPLES / "bids.jsonl"), "--allowed-lateness", "0"])
    assert "rows dropped, later than the allowed lateness: bid=1" in strict.output
    assert parse_interval_text("5 seconds") == 5 * MICROS_PER_SECOND
    assert parse_interval_text("500 ms") == 500_000


def test_what_is_refused() -> None:
    with pytest.raises(PlanError, match="apply to a window aggregate"):
        list(run_update_policy(script("SELECT ts, price FROM bids").query, ArrivalLog(()),
                               UpdatePolicy()))
    with pytest.raises(PlanError, match="every k >= 1 epochs"):
        UpdatePolicy(0)
    with pytest.raises(PlanError, match="cannot be negative"):
        UpdatePolicy(None, -1)


def _q_within_lateness(query, log: ArrivalLog, lateness: int, convention: Convention) -> Counter:
    """The spec's Q over the rows within the lateness: INPUT judged under ``W - L``."""
    if not log.epochs:
        return Counter()
    arrived = input_through(query, log, len(log.epochs) - 1, convention)
    return Counter(r for r, _ in evaluate(query.plan, [(r, w - lateness) for r, w in arrived],
                                         convention))


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(), policy=policies)
def test_final_state_is_q_over_the_rows_within_the_lateness(name: str, log: ArrivalLog,
                                                           policy: UpdatePolicy) -> None:
    query = script(QUERIES[name]).query
    for convention in Convention:
        firings = list(run_update_policy(query, log, policy, convention, close=True))
        assert Counter(changelog_state(firings)) == \
            _q_within_lateness(query, log, policy.allowed_lateness, convention), convention
        state: Counter = Counter()
        for firing in firings:  # never a delete of a row that is not there
            state[firing.row] += 1 if firing.op == "+" else -1
            assert state[firing.row] >= 0


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(), close=st.booleans(), early=st.one_of(st.none(), st.integers(1, 3)))
def test_on_time_firings_are_the_eowc_output(name: str, log: ArrivalLog, close: bool,
                                             early: int | None) -> None:
    """With no lateness, the ``+`` on-time firings are run_eowc's rows, in the same epochs;
    with no early firings either, they are the whole changelog."""
    query = script(QUERIES[name] + " EMIT ON WINDOW CLOSE").query
    for convention in Convention:
        eowc = [(e.epoch, e.row) for e in run_eowc(query, log, convention, close)]
        firings = list(run_update_policy(query, log, UpdatePolicy(early, 0), convention, close))
        on_time = [(f.epoch, f.row) for f in firings if f.kind == "on_time" and f.op == "+"]
        assert Counter(on_time) == Counter(eowc), convention
        assert not any(f.kind == "late" for f in firings)
        if early is None:
            assert [(f.epoch, f.row) for f in firings] == eowc


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(), policy=policies)
def test_a_final_window_never_changes(name: str, log: ArrivalLog, policy: UpdatePolicy) -> None:
    query = script(QUERIES[name]).query
    for convention in Convention:
        final_since: dict = {}
        for report in policy_reports(query, log, policy, convention, close=True):
            for firing in report.firings:
                assert firing.key not in final_since, (firing, final_since.get(firing.key))
            for key in report.final:
                final_since[key] = report.epoch
        if log.epochs:  # at the close every window that had a row is final
            assert len(final_since) == len({f.key for r in policy_reports(
                query, log, policy, convention, close=True) for f in r.firings} | set(final_since))
