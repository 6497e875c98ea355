"""The second oracle (semantics/oracles/duckdb_oracle.py, seed 001 Definition 5): DuckDB answers
``Q'(INPUT, W)`` as one batch SELECT with the final watermark substituted, and must agree with
the one-pass interpreter's cumulative output after the last epoch (and at the end of the
input), for random queries' logs under every convention; it must also tell conventions apart,
and refuse what it cannot translate."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.ir.arrival import ArrivalLog, load_arrival_log
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.oracles.duckdb_oracle import (
    OracleQuery,
    OracleUnsupported,
    duckdb_connection,
    eowc_sql,
    oracle_eowc,
    oracle_input,
    oracle_query,
)
from eowc.semantics.rules.triggers import NO_WATERMARK, Convention
from eowc.verify.cli.main import main
from tests.strategies import arrival_logs, script
from tests.test_interpreter_vs_spec import QUERIES
from tests.test_layers import MODULES, Import, eowc_module, imports_of

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


def rounded(rows: Counter) -> Counter:
    """Floats to 9 decimals: DuckDB may add a column's values in another order."""
    return Counter(tuple(round(v, 9) if isinstance(v, float) else v for v in row)
                   for row in rows.elements())


def interpreter_final(query, log: ArrivalLog, convention: Convention, close: bool) -> Counter:  # noqa: ANN001
    return rounded(Counter(e.row for e in run_eowc(query, log, convention, close=close)))


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=20, deadline=None)
@given(log=arrival_logs())
def test_duckdb_agrees_with_the_interpreter(name: str, log: ArrivalLog) -> None:
    query = script(QUERIES[name]).query
    for convention in Convention:
        for close in (False, True):
            assert rounded(oracle_eowc(query, log, convention, close)) == \
                interpreter_final(query, log, convention, close), (convention, close)


#: The events file of the examples that have none of their own name (as their pages run them).
EVENTS_OF = {"shifted_sort.sql": "sort.jsonl", "seed004_job_fixed.sql": "seed004_orders.jsonl",
             "tvf_sort.sql": "window_end.jsonl",
             "over_window_update.sql": "over_window.jsonl"}


def example_pairs() -> list[tuple[str, str]]:
    """Every valid docs example with the events file its page runs it on."""
    pairs = []
    for sql in sorted(EXAMPLES.glob("*.sql")):
        if sql.name in ("bad_group_key.sql", "lost_watermark.sql"):
            continue
        if sql.name == "seed004_job.sql":  # refused as written (an ambiguous column)
            continue
        if sql.name == "pattern.sql":  # DuckDB has no MATCH_RECOGNIZE: refused, tested below
            continue
        own = sql.with_suffix(".jsonl")
        pairs.append((sql.name, EVENTS_OF.get(sql.name, own.name if own.exists() else
                                              "bids.jsonl")))
    return pairs


@pytest.mark.parametrize(("sql", "events"), example_pairs())
def test_duckdb_agrees_on_every_worked_example(sql: str, events: str) -> None:
    parsed = parse_script((EXAMPLES / sql).read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / events), parsed.sources).log
    assert log.epochs
    for convention in Convention:
        for close in (False, True):
            assert rounded(oracle_eowc(parsed.query, log, convention, close)) == \
                interpreter_final(parsed.query, log, convention, close), (convention, close)


def test_the_oracle_tells_the_conventions_apart() -> None:
    """docs/examples/on_watermark: the row exactly on the watermark is kept by risingwave and
    late under spark, so a mutant interpreter that reads one convention as the other fails."""
    parsed = parse_script((EXAMPLES / "on_watermark.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "on_watermark.jsonl"), parsed.sources).log
    risingwave = rounded(oracle_eowc(parsed.query, log, Convention.RISINGWAVE))
    spark = rounded(oracle_eowc(parsed.query, log, Convention.SPARK))
    assert risingwave != spark
    assert interpreter_final(parsed.query, log, Convention.SPARK, False) != risingwave


def test_the_oracle_reads_input_from_the_one_loop_by_hand() -> None:
    """docs/examples/on_watermark, INPUT computed by hand: W is -inf in epoch 0, 10:00:05 after
    it (max 10:00:10 - 5 s) and after epoch 1, 10:00:10 after epoch 2. Row c (10:00:05)
    arrives under W = 10:00:05: kept by risingwave (late iff t < W), late under spark (t <= W)."""
    parsed = parse_script((EXAMPLES / "on_watermark.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "on_watermark.jsonl"), parsed.sources).log
    at = {second: parse_timestamp(f"2024-01-01 10:00:{second:02d}") for second in (0, 5, 10, 15)}
    kept = [(n, NO_WATERMARK) for n in "ab"]
    rows, late, last = oracle_input(parsed.query, log, Convention.RISINGWAVE)
    assert [(r[1], w) for r, w in rows] == [*kept, ("c", at[5]), ("d", at[5])] and not late
    assert last == at[10]
    rows, late, last = oracle_input(parsed.query, log, Convention.SPARK)
    assert [(r[1], w) for r, w in rows] == [*kept, ("d", at[5])] and last == at[10]
    assert [(e.epoch, e.event.row[1], e.watermark_before) for e in late] == [(1, "c", at[5])]


def test_each_connection_holds_its_own_input() -> None:
    """The oracle's connections share one DuckDB database per process: each holds its own
    tables (temporary ones), so two open at once, over different logs of the same query, each
    answer from their own rows; and a closed one leaves none behind."""
    parsed = parse_script((EXAMPLES / "on_watermark.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "on_watermark.jsonl"), parsed.sources).log
    whole = oracle_query(parsed.query, log, Convention.RISINGWAVE, close=True)
    first = oracle_query(parsed.query, ArrivalLog(log.epochs[:1]), Convention.RISINGWAVE,
                         close=True)
    assert whole.tables[0][0] == first.tables[0][0]  # the same table name in both
    one, other = duckdb_connection(whole), duckdb_connection(first)
    rows = {name: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for name, connection, (table, _, _) in [("whole", one, whole.tables[0]),
                                                     ("first", other, first.tables[0])]}
    assert rows == {"whole": 4, "first": 2}
    assert one.execute(whole.sql).fetchall() != other.execute(first.sql).fetchall()
    one.close()
    other.close()
    tables = duckdb_connection(OracleQuery((), "")).execute(
        "SELECT count(*) FROM duckdb_tables()").fetchone()[0]
    assert tables == 0


#: What the oracle must not share with the interpreter: its operator code.
INTERPRETER = ("eowc.semantics.operators", "eowc.semantics.engines.dataflow",
               "eowc.semantics.engines.interpreter")
ORACLES = ("eowc.semantics.oracles.duckdb_oracle", "eowc.executors.spark.oracle")


def interpreter_imports(imports: list[Import]) -> list[str]:
    return [f"{i.module}:{i.line} imports {i.target}" for i in imports
            if any(eowc_module(i.target) == m or (eowc_module(i.target) or "").startswith(m + ".")
                   for m in INTERPRETER)]


@pytest.mark.parametrize("oracle", ORACLES)
def test_the_oracle_imports_no_interpreter_code(oracle: str) -> None:
    """Every import statement of the oracle (read with ``ast``, as tests/test_layers.py reads
    them): none names the interpreter's operators, its dataflow or the interpreter module."""
    imports = list(imports_of(oracle, MODULES[oracle]))
    targets = {eowc_module(i.target) for i in imports}
    assert "eowc.semantics.engines.inputs" in targets  # it sees the input loop it shares
    assert "eowc.semantics.oracles.duckdb_oracle" in targets or oracle.endswith("duckdb_oracle")
    assert not interpreter_imports(imports), interpreter_imports(imports)
    for extra in ("eowc.semantics.operators.aggregates.compile_aggregate",
                  "eowc.semantics.engines.interpreter.LateRow"):  # the check sees one
        assert interpreter_imports([*imports, Import(oracle, extra, 1, False, False)])


def test_what_the_oracle_cannot_translate_is_named() -> None:
    query = script("SELECT ts, CAST(price AS VARCHAR) AS p FROM bids EMIT ON WINDOW CLOSE").query
    with pytest.raises(OracleUnsupported, match="does not translate CAST"):
        eowc_sql(query, Convention.RISINGWAVE, 0)


def test_eowc_run_with_the_oracle() -> None:
    runner = CliRunner()
    args = [str(EXAMPLES / "tumble.sql"), str(EXAMPLES / "bids.jsonl"), "--close"]
    oracle = runner.invoke(main, ["run", *args, "--oracle", "duckdb"])
    reference = runner.invoke(main, ["run", *args])
    assert oracle.exit_code == 0 and oracle.output == reference.output
    refused = runner.invoke(main, ["run", *args, "--oracle", "duckdb", "--with-epoch"])
    assert refused.exit_code == 2 and "--oracle duckdb" in refused.output


def test_the_oracle_refuses_match_recognize_by_name() -> None:
    """DuckDB has no MATCH_RECOGNIZE: the oracle says so instead of answering (the pattern
    example is left out of the worked examples above for this reason only)."""
    parsed = parse_script((EXAMPLES / "pattern.sql").read_text(encoding="utf-8"))
    log = load_arrival_log(str(EXAMPLES / "ticks.jsonl"), parsed.sources).log
    with pytest.raises(OracleUnsupported, match="does not translate MATCH_RECOGNIZE"):
        oracle_eowc(parsed.query, log, Convention.RISINGWAVE, close=True)
