"""Emit on update of composed plans as a graph of changes (Definition 2): each operator consumes
its input's +/- rows and emits its own. On random logs (ties, window edges, late rows, empty
epochs), the changelog's snapshot after every epoch equals ``Q(INPUT so far)`` as the
specification evaluates it (spec.py: each operator over its whole input again, independent of
the operator classes), for aggregates over aggregates, TopN, OVER and joins (every kind, a
key with NULLs) over aggregates, a UNION ALL of an aggregate and raw rows, a global aggregate
over an aggregate (a result over no rows), and the operators evaluated again over their whole
input (SESSION and count windows) over an aggregate; and every changelog is well formed: a
row is deleted only while it is shown."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings

from eowc.semantics.engines.interpreter import run_update, snapshots
from eowc.semantics.engines.spec import update_after_each_epoch
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Binary
from eowc.semantics.ir.plan import (
    AggCall,
    Aggregate,
    CountTVF,
    Join,
    Plan,
    Project,
    Query,
    Scan,
    SessionTVF,
    Union,
)
from eowc.semantics.ir.values import MICROS_PER_SECOND
from eowc.semantics.rules.triggers import Convention
from tests.strategies import BASE, arrival_logs
from tests.test_dataflow import BIDS_5S, COMPOSED, PER_10S, ref

COUNTS = Project(PER_10S, (("auction", ref("auction")), ("t", ref("window_time")), ("n", ref("n"))))
PLANS: dict[str, Plan] = {
    **COMPOSED,
    "global_over_aggregate": Aggregate(PER_10S, (), (AggCall("count", name="groups"),
                                                     AggCall("sum", ref("n"), name="rows"),
                                                     AggCall("max", ref("s"), name="top"))),
    "per_auction_over_aggregate": Aggregate(PER_10S, (("auction", ref("auction")),),
                                            (AggCall("min", ref("s"), name="low"),
                                             AggCall("avg", ref("n"), name="mean"))),
    "semi_join": Join(COUNTS, Scan(BIDS_5S), "semi",
                      Binary("AND", Binary("=", ref("a.auction"), ref("b.auction")),
                             Binary("<", ref("t"), ref("ts"))), "a", "b"),
    "anti_join": Join(COUNTS, Scan(BIDS_5S), "anti",
                      Binary("AND", Binary("=", ref("a.auction"), ref("b.auction")),
                             Binary("<", ref("t"), ref("ts"))), "a", "b"),
    **{f"{kind}_join": Join(COUNTS, Scan(BIDS_5S), kind,
                            Binary("AND", Binary("=", ref("a.auction"), ref("b.auction")),
                                   Binary("<", ref("t"), ref("ts"))), "a", "b")
       for kind in ("inner", "right", "full")},
    # keys with NULLs: a window's sum of prices is NULL when all its prices are
    "full_join_on_a_nullable_key": Join(
        Project(PER_10S, (("auction", ref("auction")), ("s", ref("s")))), Scan(BIDS_5S), "full",
        Binary("=", ref("s"), ref("price")), "a", "b"),
    "union": Union((COUNTS, Project(Scan(BIDS_5S), (("auction", ref("auction")), ("t", ref("ts")),
                                                     ("price", ref("price")))))),
    "session_over_aggregate": Aggregate(
        SessionTVF(COUNTS, "t", 15 * MICROS_PER_SECOND, ("auction",)),
        (("auction", ref("auction")), ("window_start", ref("window_start"))),
        (AggCall("sum", ref("n"), name="n"),)),
    "count_window_over_aggregate": Aggregate(
        CountTVF(COUNTS, "t", 2, 2, ("auction",)),
        (("auction", ref("auction")), ("window_start", ref("window_start"))),
        (AggCall("sum", ref("n"), name="n"),)),
}


def changelog_snapshots(plan: Plan, log: ArrivalLog, convention: Convention) -> list[Counter]:
    query = Query(plan, sources=(BIDS_5S,))
    changes = list(run_update(query, log, convention))
    shown: Counter = Counter()
    for change in changes:  # a delete only of a row on display
        if change.op == "-":
            assert shown[change.row] > 0, change
        shown[change.row] += 1 if change.op == "+" else -1
    assert [c.epoch for c in changes] == sorted(c.epoch for c in changes)
    return [Counter(rows) for rows in snapshots(changes, len(log.epochs))]


@settings(max_examples=30, deadline=None)
@given(log=arrival_logs(max_rows=20))
@pytest.mark.parametrize("convention", list(Convention))
@pytest.mark.parametrize("name", sorted(PLANS))
def test_changelog_snapshots_equal_q_of_input(name: str, convention: Convention,
                                              log: ArrivalLog) -> None:
    query = Query(PLANS[name], sources=(BIDS_5S,))
    assert changelog_snapshots(PLANS[name], log, convention) == \
        update_after_each_epoch(query, log, convention)


def busy_log(seed: int = 3, epochs: int = 30) -> ArrivalLog:
    """Three auctions, two to four bids an epoch over a minute of event time, some NULL prices,
    some late."""
    rng = random.Random(seed)
    return ArrivalLog(tuple(
        tuple(Event("bids", (rng.randint(1, 3), rng.choice([None, 1, 5, 7, 12]),
                             BASE + (2 * e - rng.randint(0, 8)) * MICROS_PER_SECOND))
              for _ in range(rng.randint(2, 4)))
        for e in range(epochs)))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_each_plan_consumes_and_emits_retractions(name: str) -> None:
    """Not a vacuous pass: on a busy log every plan's input changes retract rows (the
    aggregate below revises its groups) and the plan's own changelog deletes rows, and its
    snapshots still equal the specification's."""
    log = busy_log()
    query = Query(PLANS[name], sources=(BIDS_5S,))
    ops = Counter(c.op for c in run_update(query, log, Convention.RISINGWAVE))
    assert ops["-"] > 0 and ops["+"] > ops["-"], ops
    assert changelog_snapshots(PLANS[name], log, Convention.RISINGWAVE) == \
        update_after_each_epoch(query, log, Convention.RISINGWAVE)
