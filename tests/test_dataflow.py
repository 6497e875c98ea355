"""Composed plans run by the dataflow interpreter (issue 17): any number of stateful operators,
each with its own trigger (seed 001, Definition 4), the watermark flowing between them as the
derivation says. Plans are built with the dataclasses of eowc.semantics.ir.plan; every
expected output is computed by hand in the comments (minutes ``m`` from the epoch origin).

Watermark: ``max(ts) - 0`` (no delay), so ``W`` is the largest time seen so far. A TUMBLE,
HOP or CUMULATE window ``[s, e)`` closes at ``e <= W`` (RisingWave, Spark) or
``W >= e - 1 ms`` (Flink).
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings

from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.engines.spec import eowc_after_each_epoch, update_after_each_epoch
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.expr import Binary, Column, ColumnRef, Literal
from eowc.semantics.ir.plan import (
    AggCall,
    Aggregate,
    Join,
    OverWindow,
    Plan,
    Project,
    Query,
    Scan,
    Source,
    TopN,
    Union,
    WatermarkDecl,
    WindowCall,
    WindowTVF,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI, MICROS_PER_SECOND, SqlType
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.rules.triggers import Convention
from tests.strategies import arrival_logs, judged_at_sources_params
from tests.test_interpreter_vs_spec import cumulative_by_epoch

M = 60 * MICROS_PER_SECOND
MS = MICROS_PER_MILLI
ALL = list(Convention)
BIDS = Source("bids", (Column("auction", SqlType.BIGINT), Column("price", SqlType.BIGINT),
                       Column("ts", SqlType.TIMESTAMP)), WatermarkDecl("ts", 0))


def ref(name: str) -> ColumnRef:
    return ColumnRef(name)


def tumble(plan: Plan, column: str, minutes: int) -> WindowTVF:
    return WindowTVF(plan, column, WindowSpec(WindowKind.TUMBLE, minutes * M))


def window_keys(*extra: str) -> tuple[tuple[str, ColumnRef], ...]:
    return tuple((n, ref(n)) for n in (*extra, "window_start", "window_end", "window_time"))


def bids(*epochs: list[tuple[int, int, int]]) -> ArrivalLog:
    return ArrivalLog(tuple(tuple(Event("bids", row) for row in rows) for rows in epochs))


def eowc(plan: Plan, log: ArrivalLog, convention: Convention) -> list[tuple[int, tuple]]:
    query = Query(plan, emit_on_window_close=True, sources=tuple({
        n.source for n in _scans(plan)}))
    return [(e.epoch, e.row) for e in run_eowc(query, log, convention, close=True)]


def _scans(plan: Plan) -> list[Scan]:
    if isinstance(plan, Scan):
        return [plan]
    return [s for child in plan.children for s in _scans(child)]


def update_snapshots(plan: Plan, log: ArrivalLog, convention: Convention) -> list[Counter]:
    query = Query(plan, sources=tuple({n.source for n in _scans(plan)}))
    return [Counter(rows) for rows in snapshots(list(run_update(query, log, convention)),
                                                len(log.epochs))]


# ------------------------------------------------------------------ cascaded window aggregation

#: 5-minute counts, then 15-minute sums of them over the counts' window_time.
FIVE = Aggregate(tumble(Scan(BIDS), "ts", 5), window_keys(), (AggCall("count", name="n"),))
CASCADE = Aggregate(
    tumble(Project(FIVE, (("t", ref("window_time")), ("n", ref("n")))), "t", 15),
    (("window_start", ref("window_start")), ("window_end", ref("window_end"))),
    (AggCall("sum", ref("n"), name="total"),))
#: e0: 1m, 2m, 6m (W 6m: [0,5) closes with n 2); e1: 11m (W 11m: [5,10), n 1); e2: 14:59.999
#: (W = 15m - 1 ms: Flink closes [10,15) with n 2, RisingWave and Spark do not); e3: 16m
#: (they do). The 15-minute window [0,15) holds window_times 4:59.999, 9:59.999, 14:59.999:
#: it closes in the epoch its last 5-minute window does, total 2 + 1 + 2 = 5. At the close,
#: [15,20) has n 1 (16m), so [15,30) has total 1.
CASCADE_LOG = bids([(1, 1, 1 * M), (2, 1, 2 * M), (1, 1, 6 * M)], [(1, 1, 11 * M)],
                   [(2, 1, 15 * M - MS)], [(1, 1, 16 * M)])


@pytest.mark.parametrize("convention", ALL)
def test_cascaded_window_aggregation_over_window_time(convention: Convention) -> None:
    closes = 2 if convention is Convention.FLINK else 3
    assert eowc(CASCADE, CASCADE_LOG, convention) == [(closes, (0, 15 * M, 5)),
                                                      (4, (15 * M, 30 * M, 1))]


@pytest.mark.parametrize("convention", ALL)
def test_cascaded_window_aggregation_on_update(convention: Convention) -> None:
    """Q(INPUT) after each epoch: every 5-minute window, open or not, summed into its
    15-minute window: 2 + 1 = 3, then + 1 (11m) = 4, then + 1 (14:59.999) = 5, then [15,30)
    with 1."""
    assert update_snapshots(CASCADE, CASCADE_LOG, convention) == [
        Counter({(0, 15 * M, 3): 1}), Counter({(0, 15 * M, 4): 1}),
        Counter({(0, 15 * M, 5): 1}), Counter({(0, 15 * M, 5): 1, (15 * M, 30 * M, 1): 1})]


# ------------------------------------------------------------- TopN and dedup over an aggregate

#: Per auction and 5-minute window: count and total price.
PER_AUCTION = Aggregate(tumble(Scan(BIDS), "ts", 5), window_keys("auction"),
                        (AggCall("count", name="n"), AggCall("sum", ref("price"), name="s")))
#: e0: a1 bids 10, 20 at 1m, 2m; a2 bids 50 at 3m (W 3m). e1: a2 bids 5 at 6m (W 6m: [0,5)
#: closes: a1 n 2 s 30, a2 n 1 s 50). e2: a1 bids 7 at 11m (W 11m: [5,10) closes: a2 n 1 s 5).
#: Close: [10,15): a1 n 1 s 7.
AUCTION_LOG = bids([(1, 10, 1 * M), (1, 20, 2 * M), (2, 50, 3 * M)], [(2, 5, 6 * M)],
                   [(1, 7, 11 * M)])
WT = 5 * M - MS  # window_time of [0, 5)


@pytest.mark.parametrize("convention", ALL)
def test_window_top_n_over_a_window_aggregate(convention: Convention) -> None:
    """The auction with the most bids per window (ROW_NUMBER ... <= 1), ties by the higher
    total: [0,5) a1 (2 bids) at e1; [5,10) a2 at e2; [10,15) a1 at the close."""
    plan = TopN(PER_AUCTION, (ref("window_start"), ref("window_end")),
                ((ref("n"), True), (ref("s"), True)), 1, "rank")
    assert eowc(plan, AUCTION_LOG, convention) == [
        (1, (1, 0, 5 * M, WT, 2, 30, 1)), (2, (2, 5 * M, 10 * M, 10 * M - MS, 1, 5, 1)),
        (3, (1, 10 * M, 15 * M, 15 * M - MS, 1, 7, 1))]


@pytest.mark.parametrize("convention", ALL)
def test_deduplication_over_a_window_aggregate(convention: Convention) -> None:
    """Each auction's first window (ROW_NUMBER() OVER (PARTITION BY auction ORDER BY
    window_end) = 1): a1's [0,5) and a2's [0,5), both final when [0,5) closes (e1); a2's
    [5,10) and a1's [10,15) are not first."""
    plan = TopN(PER_AUCTION, (ref("auction"),), ((ref("window_end"), False),), 1, "rank")
    assert eowc(plan, AUCTION_LOG, convention) == [
        (1, (1, 0, 5 * M, WT, 2, 30, 1)), (1, (2, 0, 5 * M, WT, 1, 50, 1))]


@pytest.mark.parametrize("convention", ALL)
def test_top_n_over_a_window_aggregate_on_update(convention: Convention) -> None:
    """Q(INPUT) after each epoch: e0 [0,5): a1 (2 bids) tops a2 (1); e1 adds [5,10) with a2;
    e2 adds [10,15) with a1."""
    plan = TopN(PER_AUCTION, (ref("window_start"), ref("window_end")),
                ((ref("n"), True), (ref("s"), True)), 1, "rank")
    first = (1, 0, 5 * M, WT, 2, 30, 1)
    second = (2, 5 * M, 10 * M, 10 * M - MS, 1, 5, 1)
    third = (1, 10 * M, 15 * M, 15 * M - MS, 1, 7, 1)
    assert update_snapshots(plan, AUCTION_LOG, convention) == [
        Counter([first]), Counter([first, second]), Counter([first, second, third])]


# ----------------------------------------------------- OVER window and EOWC sort over aggregates


@pytest.mark.parametrize("convention", ALL)
def test_over_window_over_a_window_aggregate(convention: Convention) -> None:
    """A running total of each auction's window totals (ORDER BY window_end): a1 30 at e1,
    a2 50 at e1, a2 50 + 5 = 55 at e2, a1 30 + 7 = 37 at the close. Within an epoch rows come
    by window_end, then partition."""
    plan = OverWindow(Project(PER_AUCTION, (("auction", ref("auction")),
                                            ("window_end", ref("window_end")), ("s", ref("s")))),
                      (ref("auction"),), ((ref("window_end"), False),),
                      (WindowCall("running", "sum", (ref("s"),)),))
    assert eowc(plan, AUCTION_LOG, convention) == [
        (1, (1, 5 * M, 30, 30)), (1, (2, 5 * M, 50, 50)), (2, (2, 10 * M, 5, 55)),
        (3, (1, 15 * M, 7, 37))]


@pytest.mark.parametrize("convention", ALL)
def test_eowc_sort_over_a_union_of_window_aggregates(convention: Convention) -> None:
    """UNION ALL of the 5-minute counts and the 15-minute counts (by window_end): the sort on
    top emits each row once its window_end is complete under the least of the two inputs'
    watermarks. With CASCADE_LOG: [0,5) n 3... per input: 5-minute windows [0,5) n 2, [5,10)
    n 1, [10,15) n 2, [15,20) n 1; 15-minute windows [0,15) n 5, [15,30) n 1. A 5-minute row
    comes out when its window closes (the 15-minute side's window_end watermark is at least
    as far, as its windows end on the same grid or later), a 15-minute row with its window."""
    def counts(minutes: int) -> Plan:
        return Project(Aggregate(tumble(Scan(BIDS), "ts", minutes),
                                 (("window_end", ref("window_end")),),
                                 (AggCall("count", name="n"),)),
                       (("window_end", ref("window_end")), ("n", ref("n"))))
    flink = convention is Convention.FLINK
    # The least watermark of window_end over both inputs: the 15-minute side's is
    # trunc_15(W) + 15m, the 5-minute side's trunc_5(W) + 5m; the least is the 5-minute one.
    # A row of window_end e is complete once e is below it, i.e. once its 5-minute window
    # closes: [0,5) (e 5m) at e0 (W 6m), [5,10) at e1 (W 11m), [10,15) at e2 under Flink
    # (W 15m - 1 ms), e3 otherwise, and so the 15-minute [0,15) row (n 5) with it; [15,20)
    # and [15,30) at the close.
    assert eowc(Union((counts(5), counts(15))), CASCADE_LOG, convention) == [
        (0, (5 * M, 2)), (1, (10 * M, 1)), (2 if flink else 3, (15 * M, 2)),
        (2 if flink else 3, (15 * M, 5)), (4, (20 * M, 1)), (4, (30 * M, 1))]


# ------------------------------------------------------------------ seed 004's worked example

ORDERS = Source("orders", (Column("item_id", SqlType.BIGINT), Column("seller_id", SqlType.BIGINT),
                           Column("user_id", SqlType.BIGINT), Column("price", SqlType.BIGINT),
                           Column("pay_time", SqlType.TIMESTAMP)), WatermarkDecl("pay_time", 0))


def _cumulate() -> WindowTVF:
    return WindowTVF(Scan(ORDERS), "pay_time", WindowSpec(WindowKind.CUMULATE, 30 * M, 10 * M))


#: The view trd_itm_ord_mm of seed 004 (CUMULATE of 10-minute steps up to 30 minutes instead
#: of a day): per item the sales and buyers, LEFT JOINed by window with the seller's buyers.
ITEMS = Aggregate(_cumulate(), tuple((n, ref(n)) for n in ("item_id", "seller_id", "window_start",
                                                          "window_end")),
                  (AggCall("sum", ref("price"), name="sales"),
                   AggCall("count", ref("user_id"), distinct=True, name="item_buyer_cnt")))
SELLERS = Aggregate(_cumulate(), tuple((n, ref(n)) for n in ("seller_id", "window_start",
                                                            "window_end")),
                    (AggCall("count", ref("user_id"), distinct=True, name="slr_buyer_cnt"),))
CONDITION = Binary("AND", Binary("=", ref("a.seller_id"), ref("b.seller_id")),
                   Binary("AND", Binary("=", ref("a.window_start"), ref("b.window_start")),
                          Binary("=", ref("a.window_end"), ref("b.window_end"))))
VIEW = Project(Join(ITEMS, SELLERS, "left", CONDITION, "a", "b"),
               (("item_id", ref("item_id")), ("seller_id", ref("a.seller_id")),
                ("window_start", ref("a.window_start")), ("window_end", ref("a.window_end")),
                ("sales", ref("sales")), ("item_buyer_cnt", ref("item_buyer_cnt")),
                ("slr_buyer_cnt", ref("slr_buyer_cnt"))))
#: The window TopN over the view: the best-selling item per window (rank <= 1).
FLAGSHIP = TopN(VIEW, (ref("window_start"), ref("window_end")), ((ref("sales"), True),), 1, "rank")
#: Orders (item, seller, user, price, time): e0 (1, 1, u1, 10, 5m), (2, 1, u2, 30, 8m) (W 8m);
#: e1 (1, 1, u3, 25, 12m) (W 12m: [0,10) closes); e2 (1, 1, u1, 5, 21m) (W 21m: [0,20) closes);
#: [0,30) closes at the close. CUMULATE windows of t: [0,10) if t < 10m, [0,20) if t < 20m,
#: [0,30). The last order, at 9:59.999 under Flink's boundary, is checked separately below.
ORDERS_LOG = ArrivalLog((
    (Event("orders", (1, 1, 1, 10, 5 * M)), Event("orders", (2, 1, 2, 30, 8 * M))),
    (Event("orders", (1, 1, 3, 25, 12 * M)),),
    (Event("orders", (1, 1, 1, 5, 21 * M)),)))


@pytest.mark.parametrize("convention", ALL)
def test_seed_004_window_top_n_over_a_window_join_of_cumulate_aggregations(
        convention: Convention) -> None:
    """[0,10): item 1 sells 10 (u1), item 2 sells 30 (u2); seller 1 has 2 buyers: item 2 tops
    it, emitted at e1 when [0,10) closes on both aggregations (the window join emits the pair
    then, the TopN closes the window in the same epoch). [0,20): item 1 sells 10 + 25 = 35 to
    u1, u3 (2 buyers), item 2 30; seller 3 buyers: item 1, at e2. [0,30): item 1 35 + 5 = 40
    (u1 again: still 2 buyers), seller 3 buyers: item 1, at the close (e3). No window end is
    within 1 ms of a watermark, so the three conventions agree."""
    assert eowc(FLAGSHIP, ORDERS_LOG, convention) == [
        (1, (2, 1, 0, 10 * M, 30, 1, 2, 1)),
        (2, (1, 1, 0, 20 * M, 35, 2, 3, 1)),
        (3, (1, 1, 0, 30 * M, 40, 2, 3, 1))]


@pytest.mark.parametrize("convention", ALL)
def test_seed_004_flagship_at_flinks_boundary(convention: Convention) -> None:
    """One more order at 9:59.999 in e1 (item 3, 40, u4) with the 12m order moved to e2: W
    after e1 is 10m - 1 ms, where Flink closes [0,10) (item 3 tops it with 40; seller 3
    buyers) and RisingWave and Spark wait for e2 (W 12m)."""
    log = ArrivalLog((ORDERS_LOG.epochs[0], (Event("orders", (3, 1, 4, 40, 10 * M - MS)),),
                      ORDERS_LOG.epochs[1], ORDERS_LOG.epochs[2]))
    closes = 1 if convention is Convention.FLINK else 2
    # [0,20): item 1 35 (2 buyers), item 2 30, item 3 40: item 3; [0,30): item 1 40, item 3 40:
    # a tie on sales, broken by the whole row (item 1 first); seller: u1..u4, 4 buyers.
    assert eowc(FLAGSHIP, log, convention) == [
        (closes, (3, 1, 0, 10 * M, 40, 1, 3, 1)),
        (3, (3, 1, 0, 20 * M, 40, 1, 4, 1)),
        (4, (1, 1, 0, 30 * M, 40, 2, 4, 1))]


@pytest.mark.parametrize("convention", ALL)
def test_seed_004_flagship_on_update(convention: Convention) -> None:
    """Q(INPUT) after each epoch, every window open or not: e0, item 2 (30) tops all three
    windows; e1 (12m, in [0,20) and [0,30)): item 1 sells 35 there, seller 3 buyers; e2 (21m,
    [0,30) only): item 1 40."""
    top10 = (2, 1, 0, 10 * M, 30, 1, 2, 1)
    assert update_snapshots(FLAGSHIP, ORDERS_LOG, convention) == [
        Counter([top10, (2, 1, 0, 20 * M, 30, 1, 2, 1), (2, 1, 0, 30 * M, 30, 1, 2, 1)]),
        Counter([top10, (1, 1, 0, 20 * M, 35, 2, 3, 1), (1, 1, 0, 30 * M, 35, 2, 3, 1)]),
        Counter([top10, (1, 1, 0, 20 * M, 35, 2, 3, 1), (1, 1, 0, 30 * M, 40, 2, 3, 1)])]
    query = Query(FLAGSHIP, sources=(ORDERS,))
    assert [Counter(s) for s in snapshots(list(run_update(query, ORDERS_LOG, convention)), 3)] \
        == update_after_each_epoch(query, ORDERS_LOG, convention)


# ---------------------------------------------------------------- joins below joins, refusals


@pytest.mark.parametrize("convention", ALL)
def test_window_join_of_a_window_join_with_an_aggregate_above(convention: Convention) -> None:
    """Three 5-minute count aggregations joined by window ((x JOIN y) JOIN z), then summed per
    15-minute window of the joined window_time: CASCADE_LOG's counts 2, 1, 2, 1 in each input
    give rows n*n*n = 8, 1, 8 in [0,15) (sum 17, when [10,15) closes) and 1 in [15,30)."""
    def counts(alias: str) -> Plan:
        return Project(Aggregate(tumble(Scan(BIDS), "ts", 5), window_keys(),
                                 (AggCall("count", name="n"),)),
                       ((f"{alias}_end", ref("window_end")), (f"{alias}_time", ref("window_time")),
                        (f"{alias}_n", ref("n"))))
    xy = Join(counts("x"), counts("y"), "inner", Binary("=", ref("x_end"), ref("y_end")), "x", "y")
    xyz = Join(xy, counts("z"), "inner", Binary("=", ref("x_end"), ref("z_end")), "xy", "z")
    # x_time carries no watermark past the join (only the bounded x_end does): x_end - 1 ms
    t = Binary("-", ref("x_end"), Literal(MS, SqlType.INTERVAL))
    product = Project(xyz, (("t", t),
                            ("p", Binary("*", Binary("*", ref("x_n"), ref("y_n")), ref("z_n")))))
    plan = Aggregate(tumble(product, "t", 15), (("window_end", ref("window_end")),),
                     (AggCall("sum", ref("p"), name="total"),))
    closes = 2 if convention is Convention.FLINK else 3
    assert eowc(plan, CASCADE_LOG, convention) == [(closes, (15 * M, 17)), (4, (30 * M, 1))]


def test_an_operator_without_a_trigger_over_an_aggregate_is_refused_with_its_name() -> None:
    """A TopN over a window aggregate that neither partitions by a window column nor orders
    by one has no trigger: no watermark reaches it. The refusal names the TopN and its input."""
    plan = TopN(PER_AUCTION, (ref("auction"),), ((ref("s"), True),), 1, "rank")
    with pytest.raises(PlanError, match=r"the TopN \(op0\) has no trigger over its input "
                                        r"\(GroupAgg\)"):
        eowc(plan, AUCTION_LOG, Convention.RISINGWAVE)


def test_an_aggregate_without_a_window_over_an_aggregate_is_refused_with_its_name() -> None:
    """GROUP BY auction over the per-window counts: its key carries no watermark."""
    plan = Aggregate(PER_AUCTION, (("auction", ref("auction")),),
                     (AggCall("sum", ref("n"), name="bids"),))
    with pytest.raises(PlanError, match=r"the GroupAgg \(op0\) has no trigger"):
        eowc(plan, AUCTION_LOG, Convention.RISINGWAVE)



# ------------------------------------------------- the interpreter against the specification

SECONDS = WindowSpec(WindowKind.TUMBLE, 10 * MICROS_PER_SECOND)
BIDS_5S = Source("bids", BIDS.columns, WatermarkDecl("ts", 5 * MICROS_PER_SECOND))
PER_10S = Aggregate(WindowTVF(Scan(BIDS_5S), "ts", SECONDS), window_keys("auction"),
                    (AggCall("count", name="n"), AggCall("sum", ref("price"), name="s")))
COMPOSED = {
    "cascade": Aggregate(WindowTVF(Project(PER_10S, (("t", ref("window_time")), ("n", ref("n")))),
                                   "t", WindowSpec(WindowKind.TUMBLE, 30 * MICROS_PER_SECOND)),
                         (("window_start", ref("window_start")),),
                         (AggCall("sum", ref("n"), name="total"),)),
    "window_top_n": TopN(PER_10S, (ref("window_start"), ref("window_end")),
                         ((ref("s"), True),), 2, "rank"),
    "dedup": TopN(PER_10S, (ref("auction"),), ((ref("window_end"), False),), 1, "rank"),
    "over": OverWindow(Project(PER_10S, (("auction", ref("auction")),
                                         ("window_end", ref("window_end")), ("n", ref("n")))),
                       (ref("auction"),), ((ref("window_end"), False),),
                       (WindowCall("running", "sum", (ref("n"),)),)),
    # an interval join (LEFT: with outer rows) of the per-window counts with the raw bids of
    # the 10 seconds before each window's end, under the EOWC sort
    "interval_join": Join(
        Project(PER_10S, (("auction", ref("auction")), ("we", ref("window_end")), ("n", ref("n")))),
        Scan(BIDS_5S), "left",
        Binary("AND", Binary("=", ref("a.auction"), ref("b.auction")),
               Binary("AND", Binary(">=", ref("ts"), Binary("-", ref("we"), Literal(
                   10 * MICROS_PER_SECOND, SqlType.INTERVAL))), Binary("<", ref("ts"), ref("we")))),
        "a", "b"),
    "self_window_join_top_n": TopN(
        Project(Join(PER_10S, PER_10S, "left",
                     Binary("AND", Binary("=", ref("a.window_end"), ref("b.window_end")),
                            Binary("<", ref("a.auction"), ref("b.auction"))), "a", "b"),
                (("window_end", ref("a.window_end")), ("a", ref("a.auction")),
                 ("b", ref("b.auction")), ("n", ref("a.n")))),
        (ref("window_end"),), ((ref("n"), True),), 2, "rank"),
}


@settings(max_examples=40, deadline=None)
@given(log=arrival_logs(max_rows=20))
@pytest.mark.parametrize(("name", "convention"), judged_at_sources_params(
    sorted(COMPOSED), lambda name: Query(COMPOSED[name], emit_on_window_close=True,
                                         sources=(BIDS_5S,))))
def test_composed_plans_equal_the_specification(name: str, convention: Convention,
                                                log: ArrivalLog) -> None:
    """On random logs (ties, window edges, late rows), the dataflow interpreter's cumulative
    output after each epoch and after the close equals the specification's Q'(INPUT, W),
    which evaluates each operator of the plan over its input's Q' (spec.py, independent of
    the operator classes)."""
    query = Query(COMPOSED[name], emit_on_window_close=True, sources=(BIDS_5S,))
    emitted = list(run_eowc(query, log, convention, close=True))
    expected = eowc_after_each_epoch(query, log, convention, close=True)
    assert cumulative_by_epoch(emitted, len(log.epochs) + 1) == expected


@pytest.mark.parametrize("convention", ALL)
def test_cascaded_window_aggregation_changelog(convention: Convention) -> None:
    """The changes themselves, computed by hand (CASCADE_LOG, as on update above): the
    15-minute total of [0,15) goes 3 -> 4 -> 5, each step its old row out, then its new row
    in; epoch 3 only adds [15,30) (its 5-minute window [15,20) is new, [0,15)'s total stays)."""
    query = Query(CASCADE, sources=(BIDS,))
    assert [(c.epoch, c.op, c.row) for c in run_update(query, CASCADE_LOG, convention)] == [
        (0, "+", (0, 15 * M, 3)),
        (1, "-", (0, 15 * M, 3)), (1, "+", (0, 15 * M, 4)),
        (2, "-", (0, 15 * M, 4)), (2, "+", (0, 15 * M, 5)),
        (3, "+", (15 * M, 30 * M, 1))]
