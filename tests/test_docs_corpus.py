"""The documentation corpus as tests: every case of tests/docs_corpus must give the table its
docs print (docs/sql/corpus.md).

The cases that do not yet are in NOT_YET, with what stops them today; each is a strict xfail,
so a case that starts passing fails the run until it leaves the table (whoever lands the
feature flips it). The comparison itself is checked first: it must refuse an empty result, a
changed value, a missing row and a wrong column name.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace

import pytest

from eowc.semantics.ir.expr import Row, compile_expr
from eowc.semantics.ir.plan import ProjectSet, Unnest
from eowc.semantics.ir.windows import WindowSpec
from eowc.semantics.operators import logical
from eowc.semantics.operators.protocol import Stage
from tests.docs_corpus.cases import (
    Case,
    check_case,
    difference,
    load_cases,
    normalized,
)

logging.getLogger("sqlglot").setLevel(logging.ERROR)

CASES = load_cases()

#: case -> what stops it today (the first line of the error, shortened)
NOT_YET: dict[str, str] = {
    "flink/window_join_full":
        "the docs print L.window_start for right-only rows; SQL (and eowc) gives NULL: "
        "see source.md",
    "risingwave/unnest_array_literal": "a query needs a FROM clause: SELECT unnest(array[1,2,3,4])",
}


def _param(case: Case) -> object:
    reason = NOT_YET.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


def test_the_corpus_has_forty_cases_from_both_engines() -> None:
    engines = Counter(case.engine for case in CASES)
    assert len(CASES) >= 40 and engines["risingwave"] >= 15 and engines["flink"] >= 15, engines
    assert not set(NOT_YET) - {case.id for case in CASES}, "NOT_YET names a case that is gone"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_each_case_is_complete(case: Case) -> None:
    """Every case has its five files, a documented table with rows, and its source named."""
    for name in ("query.sql", "events.jsonl", "expected.jsonl", "source.md", "case.json"):
        assert (case.folder / name).is_file(), name
    assert case.expected and all(row.keys() == case.expected[0].keys() for row in case.expected)
    source = (case.folder / "source.md").read_text(encoding="utf-8")
    assert "Source:" in source and f"Convention: {case.convention.value}" in source


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_documented_output(case: Case) -> None:
    outcome = check_case(case)
    assert outcome.documented, f"[{outcome.stage}] {outcome.error}"


# ---------------------------------------------------------------------------------------------
# The comparison must mean something

def _passing_case() -> Case:
    return next(case for case in CASES if case.id == "flink/window_topn_after_agg")


def _documented_records(case: Case) -> list[dict[str, object]]:
    """The docs' own table under eowc's column names: what a perfect engine would print."""
    return [{case.columns.get(k, k): v for k, v in row.items()} for row in case.expected]


def test_the_docs_table_itself_compares_equal() -> None:
    case = _passing_case()
    records = _documented_records(case)
    assert difference(case, records, list(records[0])) is None


def test_an_empty_result_is_not_the_documented_one() -> None:
    case = _passing_case()
    assert difference(case, [], list(_documented_records(case)[0])).startswith(
        "0 rows, the docs print 6; missing: ")


def test_one_changed_value_a_missing_row_or_a_renamed_column_is_caught() -> None:
    case = _passing_case()
    records = _documented_records(case)
    names = list(records[0])
    changed = [dict(records[0], price="6.01")] + records[1:]
    assert "missing: (2020-04-15 08:00:00, 2020-04-15 08:10:00, supplier1, 6, 2, 1)" in \
        difference(case, changed, names)
    assert difference(case, records[1:], names).startswith("5 rows, the docs print 6")
    renamed = [{("total" if k == "price" else k): v for k, v in r.items()} for r in records]
    assert difference(case, renamed, [("total" if n == "price" else n) for n in names]) \
        .startswith("columns differ")


def test_a_mapped_column_name_is_compared_under_eowcs_name() -> None:
    case = next(case for case in CASES if case.id == "flink/window_agg_tumble")
    assert case.columns == {"price": "sum"}
    records = [{"window_start": "2020-04-15 08:00:00", "window_end": "2020-04-15 08:10:00",
                "sum": 11.0},
               {"window_start": "2020-04-15 08:10:00", "window_end": "2020-04-15 08:20:00",
                "sum": 10.0}]
    assert difference(case, records, ["window_start", "window_end", "sum"]) is None
    assert difference(replace(case, columns={}), records,
                      ["window_start", "window_end", "sum"]).startswith("columns differ")


def test_values_are_normalized_as_the_docs_print_them() -> None:
    assert normalized("2020-04-15 08:05") == normalized("2020-04-15 08:05:00")
    assert normalized("2020-04-15 08:09:59.999") == normalized("2020-04-15 08:09:59.999000")
    assert normalized("4.00") == normalized(4.0) == normalized(4)
    assert normalized("4.01") != normalized(4.0)
    assert normalized(None) is None and normalized("R2") == "R2"
    # arrays: RisingWave prints {a,b,c}, eowc writes a list
    assert normalized("{a,b,c}") == normalized(["a", "b", "c"]) == ("a", "b", "c")
    assert normalized("{1,NULL}") == normalized([1, None]) and normalized("{}") == normalized([])
    assert normalized("{a,b}") != normalized(["b", "a"])


def test_a_printed_array_is_compared_element_by_element() -> None:
    """The WITH ORDINALITY table prints arr as {a,b,c}: eowc's lists compare equal to it, a
    list with one element changed does not."""
    case = next(case for case in CASES if case.id == "risingwave/unnest_with_ordinality")
    names = ["arr", "elts", "num"]
    rows = [(["a", "b", "c"], "c", 3), (["a", "b", "c"], "b", 2), (["a", "b", "c"], "a", 1),
            (["d", "e"], "e", 2), (["d", "e"], "d", 1)]
    records = [dict(zip(names, row, strict=True)) for row in rows]
    assert difference(case, records, names) is None
    records[3] = {**records[3], "arr": ["d", "x"]}
    assert "missing" in difference(case, records, names)


def _outer_project_set_stage(node: ProjectSet) -> Stage:
    """The mutant of ``logical._project_set_stage``: a row whose arrays are all empty or NULL
    gives one row of NULLs (an outer join's rule; unnest and CROSS JOIN UNNEST give none)."""
    schema = node.input.schema
    items = [(isinstance(e, Unnest), compile_expr(e.array if isinstance(e, Unnest) else e,
                                                  schema).evaluate) for _, e in node.items]

    def expand(row: Row, w: object) -> list[Row]:
        values = [f(row) for _, f in items]
        longest = max(len(v or ()) for (unnested, _), v in zip(items, values, strict=True) if unnested)
        return [tuple(v if not unnested else (v[i] if v is not None and i < len(v) else None)
                      for (unnested, _), v in zip(items, values, strict=True))
                for i in range(max(longest, 1))]
    return expand


def test_an_outer_unnest_mutant_fails_the_flink_array_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flink's CROSS JOIN UNNEST example has an order with an empty array and one with a NULL
    array: an unnest that keeps a row for them gives two rows the docs' semantics do not."""
    case = next(case for case in CASES if case.id == "flink/array_expansion_unnest")
    assert check_case(case).documented
    monkeypatch.setattr(logical, "_project_set_stage", _outer_project_set_stage)
    outcome = check_case(case)
    assert not outcome.documented and "not in the docs: (2, NULL); (4, NULL)" in outcome.error


def test_a_window_assignment_mutant_fails_the_offset_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the interpreter's window assignment (TUMBLE and HOP ignore their offset) makes
    the documented-output check fail on the docs' offset examples, and only there."""
    correct = logical._sliding_assignment
    offset_cases = [case for case in CASES if case.id in ("flink/tvf_tumble_offset_agg",
                                                           "flink/tvf_tumble_offset_rows")]
    plain = next(case for case in CASES if case.id == "flink/window_agg_tumble")
    assert len(offset_cases) == 2 and all(check_case(case).documented for case in offset_cases)
    assignment = WindowSpec.windows_of
    monkeypatch.setattr(logical, "_sliding_assignment",
                        lambda index, size, slide, offset: correct(index, size, slide, 0))
    monkeypatch.setattr(WindowSpec, "windows_of",
                        lambda spec, t: assignment(replace(spec, offset=0), t))
    assert not any(check_case(case).documented for case in offset_cases)
    assert check_case(plain).documented
