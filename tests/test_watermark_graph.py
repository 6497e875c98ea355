"""Watermark derivation (semantics/analysis/watermark_derivation.py), the graph and its verdicts
(semantics/analysis/derivation_graph.py) and ``eowc explain``: hand-computed derivations, the rules per
expression, exactness of the window columns' watermarks against window assignment, and the
command's outputs and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from eowc.semantics.analysis.derivation_graph import analyze, groups, watermark_graph
from eowc.semantics.analysis.watermark_derivation import Derivation, Lost, Step, derive
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.windows import WindowKind, WindowSpec
from eowc.semantics.rules.triggers import Convention, time_is_complete, window_closes
from eowc.verify.cli.main import main

SECOND = 1_000_000
SOURCE = """CREATE SOURCE bids (auction BIGINT, price BIGINT, ts TIMESTAMP,
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
"""
TUMBLE = SOURCE + """SELECT auction, window_start, window_end, count(*) AS n
FROM TUMBLE(bids, ts, INTERVAL '5' SECOND) GROUP BY auction, window_start, window_end
EMIT ON WINDOW CLOSE"""
HOP = SOURCE + """SELECT window_start, count(*) AS n FROM HOP(bids, ts, INTERVAL '2' SECOND,
INTERVAL '6' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE"""


def query(sql: str):  # noqa: ANN201
    return parse_script(sql).query


def carried(sql: str) -> dict[str, str]:
    """The root's watermark columns and their maps."""
    return {d.column: d.expression() for d in derive(query(sql).plan).carrying}


def column(sql: str, name: str) -> Derivation | Lost | None:
    plan = query(sql).plan
    found = dict(zip((c.name for c in plan.schema), derive(plan).columns, strict=True))
    if found.get(name) is not None:
        return found[name]
    return next((x for node in [plan, *plan.children] for x in derive(node).lost
                 if x.column == name), None)


# ----------------------------------------------------------------------- hand-computed

def test_window_columns_of_tumble_and_hop_by_hand() -> None:
    """W = 12.3 s. TUMBLE 5 s: windows starting before 10 s are closed ([5, 10) ends at
    10 <= W), window ends up to 10 s: watermarks 10 s and 15 s. HOP 6 s sliding 2 s: a window
    [s, s + 6) is closed iff s + 6 <= 12.3, so s <= 6: the start watermark is 8 s, not
    TUMBLE-by-slide's 12 s."""
    w = 12_300_000
    tumble = {d.column: d for d in derive(query(TUMBLE).plan).carrying}
    assert tumble["window_start"].watermark(w) == 10 * SECOND
    assert tumble["window_end"].watermark(w) == 15 * SECOND
    assert carried(TUMBLE) == {"window_start": "trunc(W, 5s)", "window_end": "trunc(W, 5s) + 5s"}
    hop = {d.column: d for d in derive(query(HOP).plan).carrying}
    assert hop["window_start"].watermark(w) == 8 * SECOND
    assert carried(HOP) == {"window_start": "trunc(W - 4s, 2s)"}


@pytest.mark.parametrize(("expression", "expected"), [
    ("ts", "W"),
    ("ts + INTERVAL '1' HOUR", "W + 1h"),
    ("ts - INTERVAL '500' MILLISECOND", "W - 500ms"),
    ("tumble_start(ts, INTERVAL '10' SECOND)", "trunc(W, 10s)"),
    ("date_trunc('minute', ts)", "trunc(W, 1min)"),
    ("date_trunc('minute', ts + INTERVAL '30' SECOND)", "trunc(W + 30s, 1min)"),
    ("date_trunc('month', ts)", "date_trunc('month', W)"),
    # each value of coalesce is one of its arguments': the least of their watermarks
    ("coalesce(ts, ts - INTERVAL '1' SECOND)", "min(W[bids.ts], W[bids.ts] - 1s)"),
])
def test_non_decreasing_projections_keep_the_watermark(expression: str, expected: str) -> None:
    sql = SOURCE + f"SELECT {expression} AS t, price FROM bids EMIT ON WINDOW CLOSE"
    derivation = column(sql, "t")
    assert isinstance(derivation, Derivation)
    assert derivation.expression() == expected and derivation.source == "bids.ts"
    assert column(sql, "price") is None


@pytest.mark.parametrize(("expression", "reason"), [
    ("CAST(ts AS VARCHAR)", "CAST to VARCHAR is not proven non-decreasing"),
    ("CASE WHEN price > 0 THEN ts ELSE ts - INTERVAL '1' HOUR END", "CASE is not proven"),
    ("extract('second', ts)", "extract() is not proven non-decreasing"),
    ("date_trunc('minute', CASE WHEN price > 0 THEN ts ELSE ts END)", "CASE is not proven"),
    ("coalesce(ts, TIMESTAMP '2024-01-01 00:00:00')", "every argument carries one"),
])
def test_other_expressions_lose_it_and_say_why(expression: str, reason: str) -> None:
    sql = SOURCE + f"SELECT {expression} AS t, price FROM bids"
    lost = column(sql, "t")
    assert isinstance(lost, Lost) and reason in lost.reason


def test_window_steps_are_written_as_their_closed_form() -> None:
    """The text of a window column's map is the composition of primitive steps that gives
    the same value as eowc.semantics.analysis.watermark_maps at every W."""
    for spec in (WindowSpec(WindowKind.TUMBLE, 5 * SECOND, offset=SECOND),
                 WindowSpec(WindowKind.HOP, 6 * SECOND, 2 * SECOND),
                 WindowSpec(WindowKind.CUMULATE, 8 * SECOND, 2 * SECOND, SECOND)):
        period = spec.slide if spec.kind is WindowKind.HOP else spec.size
        step = spec.size if spec.kind is WindowKind.TUMBLE else spec.slide
        for w in range(-20 * SECOND, 20 * SECOND, 123_457):
            start = Step("truncate", period, spec.offset).apply(w + period - spec.size)
            assert Step("window_start", spec=spec).apply(w) == start
            end = Step("truncate", step, (spec.offset + spec.size) % step).apply(w) + step
            assert Step("window_end", spec=spec).apply(w) == end


# ----------------------------------------------------------------------- exactness

specs = st.builds(
    lambda kind, slide, times, offset: WindowSpec(kind, slide * times, slide, offset % (slide * times)),
    st.sampled_from([WindowKind.TUMBLE, WindowKind.HOP]), st.integers(1, 50),
    st.integers(1, 5), st.integers(0, 500))


@settings(max_examples=300)
@given(specs, st.integers(-1000, 1000), st.integers(-300, 300))
def test_window_column_watermarks_are_exact(spec: WindowSpec, w: int, t: int) -> None:
    """For every window a row can fall into: the window is closed at W (end <= W) exactly when
    its start, and its end, are below the derived watermark of their column."""
    plan = query(SOURCE + "SELECT * FROM bids").plan
    from eowc.semantics.ir.plan import WindowTVF
    derived = {d.column: d for d in derive(WindowTVF(plan, "ts", spec)).carrying}
    for window in spec.windows_of(t):
        closed = window_closes(window, w, Convention.RISINGWAVE)
        assert closed == time_is_complete(window.end, derived["window_end"].watermark(w),
                                          Convention.RISINGWAVE)
        if spec.kind is not WindowKind.CUMULATE:
            assert closed == time_is_complete(window.start, derived["window_start"].watermark(w),
                                              Convention.RISINGWAVE)


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["shift", "truncate", "calendar"]), max_size=4),
       st.integers(-10**9, 10**9), st.integers(0, 10**8))
def test_every_derivation_is_non_decreasing_in_w(kinds: list[str], w: int, later: int) -> None:
    steps = tuple(Step("shift", amount=-3 * SECOND) if k == "shift" else
                  Step("truncate", amount=7 * SECOND, offset=SECOND) if k == "truncate" else
                  Step("calendar", unit="month") for k in kinds)
    derivation = Derivation("c", "bids.ts", "derived", steps)
    w += 1_700_000_000 * SECOND
    assert derivation.watermark(w) <= derivation.watermark(w + later)


# ----------------------------------------------------------------------- the graph

def test_columns_from_one_source_column_form_one_group() -> None:
    graph = watermark_graph(query(TUMBLE))
    assert set(groups(graph)) == {"bids.ts"}
    members = set(groups(graph)["bids.ts"])
    assert {"op3.ts", "op2.ts", "op2.window_start", "op1.window_end", "op0.window_end"} <= members
    assert "op0.auction" not in members and "op0.n" not in members
    assert nx.has_path(graph, "op3.ts", "op0.window_end")
    assert graph.edges["op3.ts", "op2.window_start"]["map"] == "trunc(W, 5s)"
    assert [n for n, d in graph.nodes(data=True) if d["kind"] == "operator"] == [
        "op0", "op1", "op2", "op3"]


def test_a_query_without_a_watermark_key_is_invalid_and_unbounded() -> None:
    sql = SOURCE + "SELECT auction, count(*) AS n FROM bids GROUP BY auction EMIT ON WINDOW CLOSE"
    analysis = analyze(query(sql))
    assert not analysis.valid
    assert "GROUP BY auction has no column derived from the watermark column bids.ts" in analysis.error
    agg = next(r for r in analysis.operators if r.operator == "GroupAgg")
    assert agg.state.kind == "unbounded" and agg.trigger is None


def test_the_error_names_where_the_watermark_was_lost() -> None:
    sql = SOURCE + ("SELECT m, count(*) AS n FROM (SELECT CAST(ts AS VARCHAR) AS m FROM bids) "
                    "GROUP BY m EMIT ON WINDOW CLOSE")
    error = analyze(query(sql)).error
    assert "The watermark was lost at: Project (op2) computes m = CAST(ts AS VARCHAR)" in error


def test_a_truncated_key_carries_a_watermark_the_trigger_cannot_use() -> None:
    sql = SOURCE + ("SELECT date_trunc('minute', ts) AS m, count(*) AS n FROM bids "
                    "GROUP BY date_trunc('minute', ts) EMIT ON WINDOW CLOSE")
    analysis = analyze(query(sql))
    assert "carries the watermark trunc(W, 1min)" in analysis.error
    assert "group by window_start of a TUMBLE" in analysis.error


@pytest.mark.parametrize("convention", list(Convention))
def test_valid_queries_have_a_trigger_and_bounded_state(convention: Convention) -> None:
    analysis = analyze(query(TUMBLE), convention)
    agg = next(r for r in analysis.operators if r.operator == "GroupAgg")
    assert analysis.valid and f"window_closes under {convention.value}" in agg.trigger
    closes = "end - 1 ms <= W" if convention is Convention.FLINK else "end <= W"
    assert agg.state.kind == "bounded" and closes in agg.state.cleaned_when
    sort = analyze(query(SOURCE + "SELECT ts, price FROM bids EMIT ON WINDOW CLOSE"), convention)
    assert sort.operators[0].operator == "EOWC Sort" and sort.operators[0].state.kind == "bounded"


CASCADE = SOURCE + """CREATE VIEW per_second AS
SELECT auction, window_time AS rowtime, sum(price) AS total
FROM TUMBLE(bids, ts, INTERVAL '1' SECOND) GROUP BY auction, window_start, window_end, window_time
EMIT ON WINDOW CLOSE;
SELECT window_start, window_end, sum(total) AS total
FROM TUMBLE(per_second, rowtime, INTERVAL '5' SECOND) GROUP BY window_start, window_end
EMIT ON WINDOW CLOSE"""


@pytest.mark.parametrize("convention", list(Convention))
def test_a_cascaded_aggregate_reads_its_inputs_watermark(convention: Convention) -> None:
    """The outer GROUP BY of a cascade closes its 5 s windows on the watermark of the inner
    aggregate's window_time, trunc(W, 1s) + 1s - 1ms: its window, not its key (a key rule
    would read window_start <= trunc(...), which under Spark emits a window the moment it
    opens)."""
    outer = next(r for r in analyze(query(CASCADE), convention).operators
                 if r.operator == "GroupAgg")
    named = "W[aggregate.window_time]"
    closes = f"window_end - 1 ms <= {named}" if convention is Convention.FLINK \
        else f"window_end <= {named}"
    # in each convention's reading (watermark_in_reading): a value v is complete iff v < W'
    # (risingwave) or v <= W' (spark, flink: W' one microsecond lower; Flink closes the
    # inner window 1 ms early, so its W is read 1 ms later)
    derived = {Convention.RISINGWAVE: "trunc(W, 1s) + 1s - 1ms",
               Convention.SPARK: "trunc(W, 1s) + 1s - 1ms - 1us",
               Convention.FLINK: "trunc(W + 1ms, 1s) + 1s - 1ms - 1us"}[convention]
    assert f"window_closes under {convention.value}" in outer.trigger
    assert closes in outer.trigger and outer.trigger.endswith(f"where {named} = {derived}")
    assert "key is complete" not in outer.trigger
    assert outer.state.kind == "bounded" and "TUMBLE(5s) window closes" in outer.state.cleaned_when


# ----------------------------------------------------------------------- eowc explain

@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    made = {"tumble": TUMBLE, "invalid": SOURCE + "SELECT auction, count(*) AS n FROM bids "
            "GROUP BY auction EMIT ON WINDOW CLOSE", "broken": SOURCE + "SELEC ts FROM bids"}
    paths = {}
    for name, sql in made.items():
        paths[name] = tmp_path / f"{name}.sql"
        paths[name].write_text(sql, encoding="utf-8")
    return paths


def explain(*args: str):  # noqa: ANN201
    return CliRunner().invoke(main, ["explain", *args])


def test_explain_prints_the_tree(files: dict[str, Path]) -> None:
    result = explain(str(files["tumble"]), "--convention", "flink")
    assert result.exit_code == 0, result.output
    assert "valid under EMIT ON WINDOW CLOSE (flink convention)" in result.output
    assert "watermark: window_end = trunc(W, 5s) + 5s (from bids.ts)" in result.output
    assert "state: bounded: a group is dropped when its TUMBLE(5s) window closes" in result.output


def test_explain_json_and_dot(files: dict[str, Path], tmp_path: Path) -> None:
    result = explain(str(files["tumble"]), "--format", "json")
    data = json.loads(result.output)
    assert data["valid"] and data["groups"]["bids.ts"]
    assert [o["operator"] for o in data["operators"]] == ["Project", "GroupAgg", "TUMBLE", "Scan"]
    dot = tmp_path / "g.dot"
    assert explain(str(files["tumble"]), "--format", "dot", "--out", str(dot)).exit_code == 0
    text = dot.read_text(encoding="utf-8")
    assert "subgraph cluster_op1" in text and "#f4a340" in text and "trunc(W, 5s)" in text


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_explain_draws_the_graph(files: dict[str, Path], tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"g.{fmt}"
    result = explain(str(files["tumble"]), "--format", fmt, "--out", str(out))
    assert result.exit_code == 0, result.output
    head = out.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in out.read_bytes()[:2000]


def test_explain_exit_codes(files: dict[str, Path], tmp_path: Path) -> None:
    invalid = explain(str(files["invalid"]))
    assert invalid.exit_code == 1 and "not valid under EMIT ON WINDOW CLOSE" in invalid.output
    assert "GROUP BY auction has no column derived" in invalid.output
    broken = explain(str(files["broken"]))
    assert broken.exit_code == 2 and "broken.sql" in broken.output
    missing = explain(str(tmp_path / "nope.sql"))
    assert missing.exit_code == 2 and "cannot read the query" in missing.output
