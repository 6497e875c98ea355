"""Watermark derivation through joins, unions, OVER windows and TopN
   (semantics/analysis/watermark_derivation.py),
their EOWC verdicts and state bounds (semantics/analysis/derivation_graph.py), and ``eowc explain`` on
the shipped examples of docs/examples/analysis/. The interpreter does not run these operators
yet (it says so); the rules are checked by hand, on numbers against brute force, and by z3
(tests/test_proofs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from eowc.semantics.analysis.derivation_graph import analyze, join_kind, watermark_graph
from eowc.semantics.analysis.watermark_derivation import Derivation, TimeBound, derive, join_time_bounds
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.plan import Join, Plan, walk
from eowc.semantics.proofs.trigger_proofs import (
    Status,
    check,
    join_cleaning_soundness,
    join_output_soundness,
    union_soundness,
)
from eowc.semantics.rules.triggers import Convention, row_is_late, time_is_complete
from eowc.verify.cli.main import main

SECOND, MINUTE = 1_000_000, 60_000_000
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples" / "analysis"
TWO = """CREATE SOURCE clicks (ts TIMESTAMP, user_id BIGINT, page VARCHAR,
                      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
CREATE SOURCE views (ts TIMESTAMP, user_id BIGINT, ad VARCHAR,
                     WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);
"""


def plan_of(sql: str) -> Plan:
    return parse_script(sql).query.plan


def the_join(sql: str) -> Join:
    return next(n for n in walk(plan_of(TWO + sql)) if isinstance(n, Join))


def maps(plan: Plan) -> dict[str, str]:
    return {d.column: d.expression() for d in derive(plan).carrying}


# ------------------------------------------------------------------------------ join bounds

@pytest.mark.parametrize(("condition", "lower", "upper"), [
    ("c.ts BETWEEN v.ts - INTERVAL '1' MINUTE AND v.ts + INTERVAL '10' SECOND", -MINUTE, 10 * SECOND),
    ("c.ts >= v.ts - INTERVAL '1' MINUTE AND c.ts <= v.ts", -MINUTE, 0),
    ("c.ts > v.ts - INTERVAL '1' MINUTE AND c.ts < v.ts + INTERVAL '1' SECOND", -MINUTE + 1, SECOND - 1),
    ("v.ts <= c.ts + INTERVAL '1' MINUTE AND v.ts >= c.ts", -MINUTE, 0),  # the sides swapped
    ("c.ts - INTERVAL '1' SECOND >= v.ts AND c.ts <= v.ts + INTERVAL '2' SECOND", SECOND, 2 * SECOND),
    ("c.ts = v.ts", 0, 0),
    ("c.ts >= v.ts", 0, None),
    ("c.ts >= v.ts AND c.ts >= v.ts + INTERVAL '1' SECOND", SECOND, None),  # the tighter one
])
def test_join_time_bounds_read_the_condition(condition: str, lower: int, upper: int | None) -> None:
    join = the_join(f"SELECT c.ts FROM clicks c JOIN views v ON c.user_id = v.user_id AND "
                    f"{condition}")
    assert join_time_bounds(join) == (TimeBound("c.ts", "v.ts", lower, upper),)


def test_conditions_on_other_columns_are_no_time_bound() -> None:
    join = the_join("SELECT c.ts FROM clicks c JOIN views v ON c.user_id = v.user_id "
                    "AND c.user_id < v.user_id + 3")
    assert join_time_bounds(join) == ()
    assert join_kind(join) == "Join"


# ------------------------------------------------------------------------------ by hand

def test_interval_join_columns_by_hand() -> None:
    """W[clicks.ts] = 10:00:30, W[views.ts] = 10:00:20: c.ts = min(10:00:30, 10:00:20 - 1 min)
    = 09:59:20; v.ts = min(10:00:20, 10:00:30 - 10 s) = 10:00:20."""
    join = the_join("SELECT * FROM clicks c JOIN views v ON c.ts BETWEEN v.ts - INTERVAL '1' "
                    "MINUTE AND v.ts + INTERVAL '10' SECOND")
    derived = {d.column: d for d in derive(join).carrying}
    assert set(derived) == {"c.ts", "v.ts"}
    assert derived["c.ts"].expression() == "min(W[clicks.ts], W[views.ts] - 1min)"
    assert derived["v.ts"].expression() == "min(W[views.ts], W[clicks.ts] - 10s)"
    ten = 36_000 * SECOND
    watermarks = {"clicks.ts": ten + 30 * SECOND, "views.ts": ten + 20 * SECOND}
    assert derived["c.ts"].watermark(watermarks) == ten + 20 * SECOND - MINUTE
    assert derived["v.ts"].watermark(watermarks) == ten + 20 * SECOND
    assert {x.column for x in derive(join).lost} == set()  # no other column carried one
    assert join_kind(join) == "IntervalJoin"


def test_a_join_loses_what_the_condition_does_not_bound() -> None:
    join = the_join("SELECT * FROM clicks c LEFT JOIN views v ON c.user_id = v.user_id "
                    "AND c.ts >= v.ts")  # only a lower bound on c.ts: v.ts is unbounded
    assert set(maps(join)) == {"c.ts"}
    assert [x.column for x in derive(join).lost] == ["v.ts"]
    analysis = analyze(parse_script(TWO + "SELECT c.ts FROM clicks c LEFT JOIN views v ON "
                                          "c.user_id = v.user_id AND c.ts >= v.ts EMIT ON WINDOW "
                                          "CLOSE").query)
    assert not analysis.valid and "has no time bound" in (analysis.error or "")


def test_window_join_keeps_the_least_window_watermark() -> None:
    plan = plan_of((EXAMPLES / "window_join.sql").read_text(encoding="utf-8"))
    join = next(n for n in walk(plan) if isinstance(n, Join))
    assert join_kind(join) == "WindowJoin"
    start = next(d for d in derive(plan).carrying if d.column == "window_start")
    assert start.role == "window_start" and start.window is not None
    assert start.expression() == "min(trunc(W[clicks.ts], 1min), trunc(W[views.ts], 1min))"
    assert start.watermark({"clicks.ts": 5 * MINUTE + 1, "views.ts": 3 * MINUTE + 59 * SECOND}) \
        == 3 * MINUTE


def test_union_takes_the_minimum_and_loses_a_column_one_input_lacks() -> None:
    plan = plan_of((EXAMPLES / "union.sql").read_text(encoding="utf-8"))
    assert maps(plan) == {"ts": "min(W[eu.ts], W[us.ts] + 1h)"}
    mixed = plan_of(TWO + "SELECT ts, user_id FROM clicks UNION ALL SELECT NULL, user_id FROM views")
    assert maps(mixed) == {}
    assert [x.column for x in derive(mixed).lost] == ["ts"]


def test_over_window_keeps_only_its_ascending_order_column() -> None:
    plan = plan_of((EXAMPLES.parent / "over_window.sql").read_text(encoding="utf-8"))
    assert maps(plan) == {"ts": "W"}
    descending = parse_script(TWO + "SELECT ts, ROW_NUMBER() OVER (ORDER BY ts DESC) AS r FROM "
                                    "clicks EMIT ON WINDOW CLOSE").query
    analysis = analyze(descending)
    assert maps(descending.plan) == {}
    assert not analysis.valid and "must ORDER BY the watermark column" in (analysis.error or "")


def test_window_top_n_keeps_its_partition_columns() -> None:
    plan = plan_of((EXAMPLES.parent / "window_top_n.sql").read_text(encoding="utf-8"))
    assert set(maps(plan)) == {"window_start", "window_end"}
    by_item = parse_script(TWO + "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY page "
                                 "ORDER BY ts) AS r FROM clicks) WHERE r = 1 EMIT ON WINDOW "
                                 "CLOSE").query
    analysis = analyze(by_item)
    assert analysis.valid  # a deduplication: ordered by the watermark column
    by_price = parse_script(TWO + "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY page "
                                  "ORDER BY user_id) AS r FROM clicks) WHERE r = 1 EMIT ON WINDOW "
                                  "CLOSE").query
    analysis = analyze(by_price)
    assert not analysis.valid and "a TopN must PARTITION BY window_start" in (analysis.error or "")


@pytest.mark.parametrize("convention", list(Convention))
def test_verdicts_triggers_and_state_of_the_examples(convention: Convention) -> None:
    expected = {"interval_join.sql": True, "window_join.sql": True, "union.sql": True,
                "unbounded_join.sql": False, "asof_join.sql": False}
    assert {p.name for p in EXAMPLES.glob("*.sql")} == set(expected)
    for name, valid in expected.items():
        analysis = analyze(parse_script((EXAMPLES / name).read_text(encoding="utf-8")).query,
                           convention)
        assert analysis.valid is valid, (name, analysis.error)
        stateful = [r for r in analysis.operators if r.state.kind != "none"]
        assert stateful and all((r.state.kind == "bounded") is valid for r in stateful), name
    left_join = analyze(parse_script((EXAMPLES / "interval_join.sql").read_text(
        encoding="utf-8")).query, convention)
    join = next(r for r in left_join.operators if r.operator == "IntervalJoin")
    below = "<" if convention is Convention.RISINGWAVE else "<="
    assert f"an unmatched c row once no v row can match it: c.ts {below} W[views.ts] - 1min" \
        in (join.trigger or "")
    assert f"v.ts {below} W[clicks.ts] - 10s" in str(join.state)


# ------------------------------------------------------------------------------ on numbers

@given(lower=st.integers(-20, 20), width=st.integers(0, 20), click=st.integers(-60, 60),
       view=st.integers(-60, 60), wl=st.integers(-60, 60), wr=st.integers(-60, 60),
       convention=st.sampled_from(list(Convention)))
def test_a_joined_row_is_never_complete_under_the_derived_watermark(
        lower: int, width: int, click: int, view: int, wl: int, wr: int,
        convention: Convention) -> None:
    """Brute force of what z3 proves: build the join, derive c.ts's watermark, and check a
    joined pair whose later row is not late."""
    upper = lower + width
    join = the_join(f"SELECT * FROM clicks c JOIN views v ON c.ts >= v.ts + INTERVAL '{lower}' "
                    f"SECOND AND c.ts <= v.ts + INTERVAL '{upper}' SECOND")
    derived = next(d for d in derive(join).carrying if d.column == "c.ts")
    click, view = click * SECOND, view * SECOND
    if not view + lower * SECOND <= click <= view + upper * SECOND:
        return
    wl, wr = wl * SECOND, wr * SECOND
    if row_is_late(click, wl, convention) and row_is_late(view, wr, convention):
        return  # neither row can arrive now
    watermark = derived.watermark({"clicks.ts": wl, "views.ts": wr})
    assert not time_is_complete(click, watermark, convention)


def test_the_join_and_union_proofs_refute_a_wrong_rule() -> None:
    def too_high(lower: object) -> Derivation:  # forgets the other side's bound
        return Derivation("l", "left.t")
    assert check(join_output_soundness(Convention.RISINGWAVE, derivation=too_high)).status \
        is Status.REFUTED
    for convention in Convention:
        assert check(join_cleaning_soundness(convention)).status is Status.PROVED
        assert check(union_soundness(convention)).status is Status.PROVED

    def never_late(t: object, w: object, c: Convention) -> bool:
        return False
    assert check(join_cleaning_soundness(Convention.SPARK, is_late=never_late)).status \
        is Status.REFUTED


# ------------------------------------------------------------------------------ eowc explain

def test_explain_the_examples() -> None:
    runner = CliRunner()
    for path in sorted(EXAMPLES.glob("*.sql")):
        done = runner.invoke(main, ["explain", str(path), "--format", "json"])
        assert done.exit_code == (1 if path.name in ("unbounded_join.sql", "asof_join.sql") else 0), \
            done.output
        found = json.loads(done.output.split("\neowc explain:")[0])
        assert found["operators"]
    graph = watermark_graph(parse_script((EXAMPLES / "interval_join.sql").read_text(
        encoding="utf-8")).query)
    join = next(n for n, d in graph.nodes(data=True) if d.get("operator") == "IntervalJoin")
    assert len([u for u, _ in graph.in_edges(join)]) == 2  # fed by both scans
    assert graph.nodes[f"{join}.c.ts"]["group"] == "clicks.ts+views.ts"
    text = runner.invoke(main, ["explain", str(EXAMPLES / "interval_join.sql")]).output
    assert "Scan clicks" in text and "Scan views" in text and "W[views.ts] - 1min" in text


@pytest.mark.parametrize("name", ["interval_join.sql", "union.sql"])
def test_run_and_verify_take_joins_and_unions(name: str, tmp_path: Path) -> None:
    """eowc run takes both (over a log of one empty epoch: nothing out, and a warning that
    there was no input); eowc verify runs them on the join executor."""
    events = tmp_path / "events.jsonl"
    events.write_text('{"barrier": true}\n', encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(main, ["run", str(EXAMPLES / name), str(events)])
    assert done.exit_code == 0 and done.stdout == "", done.output
    assert "has no events" in done.stderr
    done = runner.invoke(main, ["verify", str(EXAMPLES / name), "--cases", "3"])
    assert done.exit_code == 0 and "every property held (3 cases)" in done.output
