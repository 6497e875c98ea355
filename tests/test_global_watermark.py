"""Spark's one global watermark (``BoundaryRules.global_watermark``): under the spark
convention every row of a query of several sources is judged late against the least of all
sources' watermarks before its epoch; under risingwave and flink against its own source's.
The expected late rows are computed here from the definition, row by row, not by eowc's
input loop."""

from __future__ import annotations

import math

from hypothesis import given, settings

from eowc.executors.driver import run_in_process
from eowc.semantics.analysis.operator_inputs import has_join_judging_late_rows
from eowc.semantics.engines.interpreter import LateRow, run_eowc
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.rules.triggers import Convention, query_watermarks
from tests.strategies import script_once
from tests.test_joins import at, query, two_source_logs

DELAYS = {"a": 3_000_000, "b": 5_000_000}  # the sources of tests/test_joins.py


def late_by_definition(log: ArrivalLog, convention: Convention) -> list[tuple]:
    """The rows late under ``convention``: ``t <= W`` (``t < W`` under risingwave) for the
    watermark ``W`` before the row's epoch, each source's ``max(t) - d`` (``max(t)``
    truncated to the millisecond under spark), and under spark the least of both."""
    highest = {"a": -math.inf, "b": -math.inf}
    late = []
    for epoch in log.epochs:
        own = {s: highest[s] - (highest[s] % convention.source_watermark_precision
                                if highest[s] > -math.inf else 0) - DELAYS[s]
               for s in highest}
        judging = {s: min(own.values()) for s in own} if convention is Convention.SPARK else own
        for event in epoch:
            t = event.row[0]
            w = judging[event.table]
            if (t < w) if convention is Convention.RISINGWAVE else (t <= w):
                late.append((event.table, event.row))
            highest[event.table] = max(highest[event.table], t)
    return late


@settings(max_examples=200)
@given(log=two_source_logs())
def test_an_interval_join_judges_rows_by_the_conventions_watermark(log: ArrivalLog) -> None:
    """Flink's interval join drops no row at its sources: it judges them itself
    (tests/test_joins.py), and no row is late, in the reference or the executors."""
    q = query("interval_LEFT")
    for convention in Convention:
        late: list[LateRow] = []
        list(run_eowc(q, log, convention, late=late.append))
        if has_join_judging_late_rows(q.plan, convention):
            assert late == [] and run_in_process(q, log, convention).late == [], convention
            continue
        expected = sorted(late_by_definition(log, convention), key=repr)
        for found in (late, run_in_process(q, log, convention).late):
            assert sorted(((r.event.table, r.event.row) for r in found), key=repr) == expected, \
                convention


def test_a_row_late_for_its_own_source_is_kept_under_spark_by_hand() -> None:
    """a at 20 s, b at 9 s: W_a = 17 s, W_b = 4 s. a's row at 15 s is late for a (15 <= 17)
    but not for Spark's global watermark (4 s): kept, and joined with b's 12 s row. So under
    Flink, whose interval join keeps a row while its own watermark (the least of both, 4 s)
    is below the latest time of the other side it can meet (17 s)."""
    log = ArrivalLog(((Event("a", (at(20), 1, 1)), Event("b", (at(9), 1, 2))),
                      (Event("a", (at(15), 1, 3)), Event("b", (at(12), 1, 4))),
                      (Event("a", (at(40), 2, 5)), Event("b", (at(40), 3, 6)))))
    joined = {convention: sorted((e.row[0], e.row[1]) for e in run_eowc(
        query("interval_INNER"), log, convention, close=True)) for convention in Convention}
    assert joined[Convention.SPARK] == joined[Convention.FLINK] == [(at(15), at(12))]
    assert joined[Convention.RISINGWAVE] == []


def test_the_query_watermark_is_the_least_only_under_spark() -> None:
    marks = {"a.ts": 17 * 1000 * MICROS_PER_MILLI, "b.ts": -math.inf}
    assert query_watermarks(marks, Convention.SPARK) == {"a.ts": -math.inf, "b.ts": -math.inf}
    for convention in (Convention.RISINGWAVE, Convention.FLINK):
        assert query_watermarks(marks, convention) == marks


#: The built-in targets whose joins or unions Spark's append mode runs at once over rows that
#: are not final (SPARK_MODES): a window join of window TVF rows, an interval join, a union.
AT_ONCE_IN_SPARK = {"interval_join": "interval join", "join_over_window": "interval join",
                    "window_join": "window join", "union": "union"}


def test_sparks_append_mode_emits_a_join_of_rows_that_are_not_final_at_once() -> None:
    """Spark's stream-stream join emits a match in the batch that brings its second row: over
    raw rows that is before its time is complete. A join of two window aggregations reads
    final rows, both final in the same batch under the global watermark: its rows are final."""
    from eowc.semantics.rules.emit_modes import not_final_in_spark
    from eowc.verify.suite import builtin_targets

    found = {}
    for target in builtin_targets():
        reason = not_final_in_spark(script_once(target.script).query.plan)
        if reason is not None:
            found[target.name] = reason
    assert set(found) == set(AT_ONCE_IN_SPARK)
    for name, kind in AT_ONCE_IN_SPARK.items():
        assert found[name].startswith(f"Spark's append mode emits its {kind}'s rows at once")
