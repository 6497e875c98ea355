"""The documentation corpus: RisingWave's and Flink's own examples, with the rows their docs print.

Each case is a folder ``tests/docs_corpus/<engine>/<name>/`` (see ``docs/sql/corpus.md``):
``query.sql`` (the docs' statement, verbatim, after the DDL), ``events.jsonl`` (the docs' input
rows as an arrival log), ``expected.jsonl`` (the docs' result table, transcribed by hand: one
object per printed row, keyed by the docs' column names, values as the docs print them),
``case.json`` (engine, category, convention, ``close``, the docs-to-eowc column names) and
``source.md`` (where it comes from, and every liberty taken).

:func:`check_case` says how far eowc gets with a case: whether the script parses, whether the
reference interpreter runs it over the events, and whether its result is the documented one.
The result compared is the final one: the EOWC output after all epochs (and after the end of
input with ``close``), or the final table of an emit-on-update query; both as a multiset, since
the docs' tables are ordered for reading only.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from eowc.semantics.engines.interpreter import run_eowc, run_update, snapshots
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import load_arrival_log
from eowc.semantics.ir.values import to_external
from eowc.semantics.rules.triggers import Convention

CORPUS = Path(__file__).resolve().parent
ENGINES = ("risingwave", "flink")


@dataclass(frozen=True)
class Case:
    """One documented example: its query, input and the result its docs print."""

    engine: str
    name: str
    folder: Path
    category: str
    convention: Convention
    close: bool
    #: the docs' column name -> eowc's output column name, where they differ
    columns: Mapping[str, str]
    #: eowc output columns the docs' table leaves out (each one explained in source.md)
    undocumented_columns: tuple[str, ...]
    expected: tuple[Mapping[str, Any], ...]

    @property
    def id(self) -> str:
        return f"{self.engine}/{self.name}"

    @property
    def query_text(self) -> str:
        return (self.folder / "query.sql").read_text(encoding="utf-8")

    @property
    def events_path(self) -> Path:
        return self.folder / "events.jsonl"


@dataclass(frozen=True)
class Outcome:
    """How far eowc gets with a case; ``error`` is the first line of what stopped it."""

    parses: bool
    runs: bool
    documented: bool
    error: str | None = None
    stage: str = field(init=False)

    def __post_init__(self) -> None:
        stage = "documented output" if self.documented else "wrong output" if self.runs \
            else "run" if self.parses else "parse"
        object.__setattr__(self, "stage", stage)


def load_case(folder: Path) -> Case:
    meta = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    lines = (folder / "expected.jsonl").read_text(encoding="utf-8").splitlines()
    return Case(engine=meta["engine"], name=folder.name, folder=folder, category=meta["category"],
                convention=Convention(meta["convention"]), close=bool(meta["close"]),
                columns=dict(meta.get("columns", {})),
                undocumented_columns=tuple(meta.get("undocumented_columns", ())),
                expected=tuple(json.loads(line) for line in lines if line.strip()))


def load_cases(root: Path = CORPUS) -> list[Case]:
    """Every case of the corpus, by engine then name."""
    return [load_case(folder) for engine in ENGINES
            for folder in sorted((root / engine).iterdir()) if (folder / "case.json").exists()]


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def final_result(script: Script, case: Case) -> list[dict[str, Any]]:
    """The final result of the script's query over the case's events, as output records: the
    EOWC output after all epochs, or the emit-on-update table after the last epoch."""
    query = script.query
    log = load_arrival_log(str(case.events_path), script.sources).log
    if query.emit_on_window_close:
        rows = [emission.row for emission in run_eowc(query, log, case.convention, case.close)]
    else:
        changes = list(run_update(query, log, case.convention))
        rows = snapshots(changes, len(log.epochs))[-1] if log.epochs else []
    return [{c.name: to_external(v, c.type) for c, v in zip(query.schema, row, strict=True)}
            for row in rows]


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}(:\d{2})?)?")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
#: An array as RisingWave (PostgreSQL) prints it: ``{a,b,c}``, ``{}``.
_ARRAY = re.compile(r"\{(.*)\}")


def normalized(value: Any) -> Any:
    """A value as the docs print it or as eowc writes it, in one comparable form: a timestamp
    (the docs' ``2020-04-15 08:05`` is ``08:05:00``, ``08:09:59.999`` is ``.999000``), an exact
    number (``4.00`` = ``4.0`` = ``4``), a boolean, NULL, an array (RisingWave's printed
    ``{a,b,c}``, unquoted elements, ``NULL`` for NULL, = eowc's list ``["a", "b", "c"]``: the
    tuple of its normalized elements), or the text itself."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, list | tuple):
        return tuple(normalized(element) for element in value)
    if isinstance(value, str) and (printed := _ARRAY.fullmatch(value.strip())):
        elements = printed.group(1).split(",") if printed.group(1) else []
        return tuple(None if e.strip() == "NULL" else normalized(e) for e in elements)
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value)).normalize()
    text = str(value).strip()
    if _TIMESTAMP.fullmatch(text):
        return datetime.fromisoformat(text)
    if _NUMBER.fullmatch(text):
        try:
            return Decimal(text).normalize()
        except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
            return text
    return text


def _rows(records: Iterable[Mapping[str, Any]], names: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(normalized(record[n]) for n in names) for record in records)


def _text(value: Any) -> str:
    return "NULL" if value is None else f"{value:f}" if isinstance(value, Decimal) else str(value)


def _show(rows: Counter[tuple[Any, ...]]) -> str:
    return "; ".join(f"({', '.join(_text(v) for v in row)})"
                     + (f" x{n}" if n > 1 else "") for row, n in list(rows.items())[:4]) \
        + (" ..." if len(rows) > 4 else "")


def difference(case: Case, actual: list[dict[str, Any]], output_columns: list[str]) -> str | None:
    """None if ``actual`` (eowc's records, with ``output_columns``) is the docs' table as a
    multiset, with the case's column names mapped; else what differs."""
    documented = [case.columns.get(name, name) for name in case.expected[0]] if case.expected \
        else [c for c in output_columns if c not in case.undocumented_columns]
    compared = [c for c in output_columns if c not in case.undocumented_columns]
    if sorted(documented) != sorted(compared):
        return (f"columns differ: the docs have {', '.join(documented)}; eowc has "
                f"{', '.join(compared)}")
    by_eowc_name = [{case.columns.get(k, k): v for k, v in row.items()} for row in case.expected]
    want, got = _rows(by_eowc_name, compared), _rows(actual, compared)
    if want == got:
        return None
    missing, unexpected = want - got, got - want
    return (f"{sum(got.values())} rows, the docs print {sum(want.values())}"
            + (f"; missing: {_show(missing)}" if missing else "")
            + (f"; not in the docs: {_show(unexpected)}" if unexpected else ""))


def check_case(case: Case) -> Outcome:
    """Parse, run and compare one case; any exception stops it at its stage (a traceback is
    a finding, reported by its type and first line)."""
    try:
        script = parse_script(case.query_text)
    except Exception as error:  # noqa: BLE001 - every failure is a result here
        return Outcome(False, False, False, first_line(error))
    try:
        actual = final_result(script, case)
    except Exception as error:  # noqa: BLE001
        return Outcome(True, False, False, first_line(error))
    wrong = difference(case, actual, [c.name for c in script.query.schema])
    return Outcome(True, True, wrong is None, wrong)
