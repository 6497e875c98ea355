"""z3 proofs of the trigger conditions (semantics/proofs/trigger_proofs.py) and of projection expressions
(semantics/proofs/expression_proofs.py), and ``eowc prove``.

Every obligation of ``eowc prove`` must be proved, and not vacuously; each property must
refute a deliberately wrong condition (a mutant), with a counterexample that is one on plain
integers too; the z3 translation of expressions must compute what the evaluator computes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import z3
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from eowc.semantics.analysis.watermark_derivation import Step
from eowc.semantics.analysis.watermark_maps import truncated_watermark
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.expr import compile_expr
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.ir.windows import Window
from eowc.semantics.proofs.expression_proofs import (
    BUILT_IN,
    ProjectedColumn,
    expression_obligations,
    integer_term,
    map_exactness,
    map_soundness,
    projected_columns,
    sql_division,
    sql_remainder,
)
from eowc.semantics.proofs.trigger_proofs import (
    CUMULATE,
    HOP,
    SESSION,
    TUMBLE,
    Obligation,
    Status,
    check,
    check_all,
    conjunction,
    flink_is_risingwave_shifted,
    late_is_shifted,
    obligations,
    point_monotonicity,
    sort_soundness,
    window_column_equivalence,
    window_monotonicity,
    window_soundness,
)
from eowc.semantics.rules.triggers import Convention, row_is_late, time_is_complete, window_closes
from eowc.verify.cli.main import main
from eowc.verify.cli.proof_report import selected_obligations

RW, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
SECOND = 1_000_000
ROOT = Path(__file__).resolve().parent.parent


def refuted_on_ints(obligation: Obligation) -> dict[str, int]:
    """Check ``obligation``, expect a refutation, and re-check its counterexample on ints."""
    result = check(obligation)
    assert result.status is Status.REFUTED, (obligation.claim, result.status, result.reason)
    assert result.model is not None
    assert obligation.holds(result.model) is False, result.model  # the real functions, on ints
    return result.model


# ------------------------------------------------------------------------------ every obligation

def test_every_obligation_is_proved() -> None:
    results = check_all([*obligations(), *expression_obligations(parse_script(BUILT_IN).query)])
    failed = [(r.obligation.operator, r.obligation.property, r.status.value, r.reason)
              for r in results if r.status is not Status.PROVED and not r.obligation.advisory]
    assert failed == []
    operators = {r.obligation.operator for r in results}
    assert operators == {"eowc-sort", "group-by-event-time", "over-window", "tumble", "hop",
                         "cumulate", "session", "count-window", "pattern", "interval-join",
                         "union", "input", "derived", "projection"}
    for operator in ("eowc-sort", "over-window", "tumble", "hop", "cumulate", "session",
                     "count-window", "pattern", "interval-join", "union"):  # each x each rule
        for convention in Convention:
            props = {r.obligation.property.split(":")[0] for r in results
                     if r.obligation.operator == operator and convention in r.obligation.conventions}
            assert "soundness" in props, (operator, convention)
            assert "monotonicity" in props or operator in ("interval-join", "union")


def test_nothing_is_proved_vacuously() -> None:
    """The hypotheses of every claim can all hold at once (else anything follows)."""
    for obligation in [*obligations(), *expression_obligations(parse_script(BUILT_IN).query)]:
        if obligation.witness or obligation.unmodelled:
            continue
        values = {name: z3.Int(name) for name in obligation.variables}
        assumption = obligation.assumption(values)
        solver = z3.Solver()
        solver.add(obligation.lemma_instances(values), assumption if isinstance(
            assumption, z3.ExprRef) else z3.BoolVal(assumption))
        assert solver.check() == z3.sat, obligation.claim


# ------------------------------------------------------------------------------ mutants

def test_soundness_refutes_a_sort_that_emits_the_watermark_itself_under_risingwave() -> None:
    def complete_at_watermark(t: int, watermark: int, convention: Convention) -> bool:
        return t <= watermark  # Spark's rule, with RisingWave's late check (t < W is late)
    model = refuted_on_ints(sort_soundness(RW, trigger=complete_at_watermark))
    assert model["t"] == model["v"] >= model["W"] or model["t"] <= model["v"]


def test_soundness_refutes_a_window_closed_one_microsecond_early() -> None:
    def early(window: Window, watermark: int, convention: Convention) -> bool:
        return window.end <= watermark + 1
    for family in (TUMBLE, HOP, CUMULATE):
        model = refuted_on_ints(window_soundness(family, RW, closes=early))
        window = family.window(model)
        assert window.start <= model["t"] < window.end  # a row that still enters the window


def test_monotonicity_refutes_a_trigger_that_reopens() -> None:
    def flapping(window: Window, watermark: int, convention: Convention) -> object:
        return conjunction(window.end <= watermark, watermark < window.end + SECOND)
    model = refuted_on_ints(window_monotonicity(TUMBLE, SPARK, closes=flapping))
    assert model["W2"] >= model["W"]

    def odd(t: int, watermark: int, convention: Convention) -> object:
        return conjunction(t < watermark, watermark % 2 == 1)
    refuted_on_ints(point_monotonicity("eowc-sort", RW, odd))


def test_hop_window_start_is_not_tumbles() -> None:
    """Deriving HOP's window_start watermark as TUMBLE's (truncate W to the slide) claims
    windows that still contain W are closed."""
    def tumble_rule(spec: object, watermark: int) -> int:
        return truncated_watermark(watermark, spec.slide, spec.offset)  # type: ignore[attr-defined]
    model = refuted_on_ints(window_column_equivalence(HOP, RW, "window_start", derive=tumble_rule))
    window = HOP.window(model)
    assert not window_closes(window, model["W"], RW)


def test_flink_is_risingwave_at_one_millisecond_not_two() -> None:
    def two_ms(window: Window, watermark: int, convention: Convention) -> bool:
        if convention is FLINK:
            return watermark >= window.end - 2 * MICROS_PER_MILLI
        return window.end <= watermark
    for family in (TUMBLE, SESSION):
        refuted_on_ints(flink_is_risingwave_shifted(family, closes=two_ms))


def test_spark_late_check_shift_refutes_a_strict_spark_rule() -> None:
    def strict(event_time: int, watermark: int, convention: Convention) -> bool:
        return event_time < watermark  # RisingWave's rule, claimed for Spark too
    model = refuted_on_ints(late_is_shifted(SPARK, 1, RW, is_late=strict))
    assert model["c"] == model["W"]


def test_a_map_with_the_wrong_sign_is_unsound_and_a_timid_map_is_not_exact() -> None:
    query = parse_script(BUILT_IN).query
    later = next(c for c in projected_columns(query) if c.column == "shifted_later")  # ts + 1 h
    hour = 3600 * SECOND
    result = check(map_soundness(later, steps=(Step("shift", amount=2 * hour),)))
    assert result.status is Status.REFUTED  # the evaluator confirmed it (else: unknown)
    assert result.model is not None and result.model["ts"] >= result.model["W"]
    assert check(map_soundness(later, steps=(Step("shift", amount=0),))).status is Status.PROVED
    assert check(map_exactness(later, steps=(Step("shift", amount=0),))).status is Status.REFUTED
    bucket = next(c for c in projected_columns(query) if c.column == "minute_start")
    too_fine = (Step("truncate", amount=SECOND),)
    assert check(map_soundness(bucket, steps=too_fine)).status is Status.REFUTED


def test_a_model_the_evaluator_does_not_reproduce_is_not_a_counterexample() -> None:
    lying = Obligation("projection", (), "p", "x < 0 for every x", ("x",), lambda v: True,
                       lambda v: v["x"] < 0, confirm=lambda model: True)
    result = check(lying)
    assert result.status is Status.UNKNOWN and "does not reproduce" in result.reason


# ------------------------------------------------------------------------------ expressions

BUILT_IN_COLUMNS = projected_columns(parse_script(BUILT_IN).query)


@pytest.mark.parametrize("column", BUILT_IN_COLUMNS, ids=[c.column for c in BUILT_IN_COLUMNS])
@given(ts=st.integers(-10**14, 10**14), v=st.integers(-5, 5))
def test_the_z3_translation_computes_what_the_evaluator_does(column: ProjectedColumn, ts: int,
                                                            v: int) -> None:
    term = integer_term(column.expr, column.schema, {"ts": z3.IntVal(ts), "v": z3.IntVal(v)})
    evaluated = compile_expr(column.expr, column.schema).evaluate((ts, v))
    assert z3.simplify(term).as_long() == evaluated


@given(st.integers(-10**6, 10**6), st.integers(-1000, 1000).filter(bool))
def test_sql_division_truncates_unlike_z3_and_python(a: int, b: int) -> None:
    quotient = z3.simplify(sql_division(z3.IntVal(a), z3.IntVal(b))).as_long()
    assert quotient == int(a / b)  # towards zero (small enough for float to be exact)
    assert z3.simplify(sql_remainder(z3.IntVal(a), z3.IntVal(b))).as_long() == a - b * int(a / b)


def test_z3_division_differs_from_sql_for_negative_operands() -> None:
    assert z3.simplify(z3.IntVal(-1) / z3.IntVal(-1000)).as_long() == 1  # Euclidean
    assert -1 // -1000 == 0 and z3.simplify(sql_division(z3.IntVal(-1), z3.IntVal(-1000))).as_long() == 0
    assert z3.simplify(z3.IntVal(1) / z3.IntVal(-1000)).as_long() == 0 != 1 // -1000


def test_each_rejected_expression_gets_a_confirmed_counterexample_or_is_conservative() -> None:
    results = check_all(expression_obligations(parse_script(BUILT_IN).query))
    rejected = {r.obligation.property.split(": ")[1].split(" = ")[0]: r
                for r in results if r.obligation.advisory}
    assert {name: r.status for name, r in rejected.items()} == {
        "negated_product": Status.PROVED, "negated": Status.PROVED,
        "negative_quotient": Status.PROVED, "micros_in_minute": Status.PROVED,
        "chosen": Status.PROVED,  # the later row takes the other branch
        "millis": Status.REFUTED,  # non-decreasing: rejected only conservatively
    }
    quotient = rejected["negative_quotient"]
    assert quotient.model is not None and quotient.model["ts"] <= quotient.model["ts_2"]
    assert "gives" in quotient.model_text()


def test_a_calendar_unit_is_unknown_not_proved() -> None:
    query = parse_script("CREATE SOURCE r (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' "
                         "SECOND); SELECT date_trunc('month', ts) AS m FROM r EMIT ON WINDOW "
                         "CLOSE;").query
    results = check_all(expression_obligations(query))
    assert {r.status for r in results} == {Status.UNKNOWN}
    assert all("calendar units vary in length" in r.reason for r in results)


# ------------------------------------------------------------------------------ eowc prove

def prove(*args: str) -> Result:
    return CliRunner().invoke(main, ["prove", *args])


def test_eowc_prove_proves_everything_and_says_so() -> None:
    done = prove()
    assert done.exit_code == 0, done.output
    assert "0 refuted, 0 unknown" in done.output and "rejected conservatively" in done.output
    assert "NOTE: projection [-] rejected: negative_quotient" in done.output


def test_eowc_prove_json_and_filters() -> None:
    done = prove("--operator", "hop", "--convention", "flink", "--format", "json")
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["refuted"] == found["unknown"] == 0 and found["proved"] == len(found["obligations"])
    assert {o["operator"] for o in found["obligations"]} == {"hop"}
    assert all("flink" in o["convention"] for o in found["obligations"])


def test_eowc_prove_a_query_proves_what_it_relies_on() -> None:
    done = prove(str(ROOT / "docs" / "examples" / "shifted_sort.sql"), "--format", "json")
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)["obligations"]
    assert {o["operator"] for o in found} == {"eowc-sort", "input", "derived", "projection"}
    assert {o["property"] for o in found if o["operator"] == "projection"} >= {
        "monotonicity: minute = date_trunc('minute', ts)",
        "exactness: local_ts = (ts + INTERVAL '01:00:00')"}
    hop = json.loads(prove(str(ROOT / "docs" / "examples" / "hop.sql"), "--format", "json").output)
    assert {o["operator"] for o in hop["obligations"]} == {"hop", "input", "derived"}


def test_eowc_prove_exit_codes_for_bad_input_and_unknown(tmp_path: Path) -> None:
    missing = prove(str(tmp_path / "missing.sql"))
    assert missing.exit_code == 2 and "cannot read the query" in missing.output
    (tmp_path / "bad.sql").write_text("SELECT FROM WHERE;", encoding="utf-8")
    bad = prove(str(tmp_path / "bad.sql"))
    assert bad.exit_code == 2 and "bad.sql" in bad.output
    (tmp_path / "month.sql").write_text(
        "CREATE SOURCE r (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);\n"
        "SELECT date_trunc('month', ts) AS m FROM r EMIT ON WINDOW CLOSE;\n", encoding="utf-8")
    month = prove(str(tmp_path / "month.sql"))
    assert month.exit_code == 1 and "UNKNOWN" in month.output
    assert prove("--operator", "nonsense").exit_code == 2


def test_selection_keeps_convention_free_obligations() -> None:
    selected = selected_obligations([], ("derived",), "spark")
    assert any(not o.conventions for o in selected)
    assert all(not o.conventions or SPARK in o.conventions for o in selected)


# ------------------------------------------------------------------------------ on numbers

@given(st.integers(-50, 50), st.integers(-50, 50), st.sampled_from(list(Convention)))
def test_proved_sort_soundness_holds_on_numbers(v: int, t: int, convention: Convention) -> None:
    """A spot check of what z3 proved, on ints, with the real functions."""
    for w in range(-3, 4):
        if time_is_complete(v, w, convention) and not row_is_late(t, w + 1, convention):
            assert t > v
