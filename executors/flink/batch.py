"""Flink SQL in batch mode as an oracle for scalar expressions and aggregates
(``verify/conformance.py``): Flink computes each expression over rows given as a ``VALUES``
table, and says the type it gave the result.

Run in a Flink environment (``eowc engine env flink RELEASE``): ``python -m
eowc.executors.flink.batch`` reads one request from stdin, ``{"columns": [[name, Flink type],
...], "rows": [[value, ...], ...], "expressions": [SQL, ...], "group_by": SQL or null}``
(values as :func:`_field` writes them to the CSV file Flink reads: numbers, strings, booleans,
null; times and decimals as strings), and writes one answer to stdout: per expression
``{"type": Flink's type, "values": [...]}`` (one value per row; with ``group_by``,
``{"groups": [[key, value], ...]}``), or ``{"error": Flink's reason}``. Values come back as
JSON: times as ``YYYY-MM-DD HH:MM:SS[.ffffff]``, decimals as strings.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

#: How a NULL is written in the CSV file the rows go to (an empty string is a value).
NULL = "\\N"


def _field(value: Any) -> str:
    """A value of a request row as a field of the CSV file Flink reads."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _json(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        text = value.isoformat(sep=" ")
        return text[:-7] if text.endswith(".000000") else text
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def evaluate(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Each expression of ``request`` computed by Flink in batch mode (see the module): the
    rows are a CSV file read by Flink's filesystem connector; all expressions go in one query,
    and one by one only if it fails (to say which one Flink refuses)."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    tables = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    tables.get_config().set("table.local-time-zone", "UTC")
    tables.get_config().set("parallelism.default", "1")
    columns = request["columns"]
    folder = Path(tempfile.mkdtemp(prefix="eowc-flink-batch-"))
    with open(folder / "rows.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([_field(v) for v in row] for row in request["rows"])
    declared = ", ".join(f"`{name}` {flink_type}" for name, flink_type in columns)
    tables.execute_sql(f"CREATE TEMPORARY TABLE t ({declared}) WITH ('connector' = 'filesystem', "
                       f"'path' = '{folder.as_uri()}', 'format' = 'csv', "
                       f"'csv.null-literal' = '{NULL}')")
    group, expressions = request.get("group_by"), request["expressions"]
    together = _run(tables, expressions, group)
    if "error" not in together:
        return together["answers"]
    answers = []
    for expression in expressions:
        one = _run(tables, [expression], group)
        answers.append(one["answers"][0] if "answers" in one else one)
    return answers


def _run(tables: Any, expressions: list[str], group: str | None) -> dict[str, Any]:
    """The expressions in one query: ``{"answers": [...]}``, or ``{"error": Flink's reason}``."""
    def query(texts: list[str]) -> str:
        listed = ", ".join(f"{e} AS v{k}" for k, e in enumerate(texts))
        return (f"SELECT {group} AS g, {listed} FROM t GROUP BY {group}" if group
                else f"SELECT {listed} FROM t")
    try:
        table = tables.sql_query(query(expressions))
        types = [str(c.getDataType().getLogicalType().asSummaryString())
                 for c in table._j_table.getResolvedSchema().getColumns()]
        # a time as Flink prints it (PyFlink's datetime conversion goes through floats)
        texts = [f"CAST({e} AS STRING)" if t.startswith("TIMESTAMP") else e
                 for e, t in zip(expressions, types[1:] if group else types, strict=True)]
        table = tables.sql_query(query(texts))
        with table.execute().collect() as results:
            got = [[_json(x) for x in row] for row in results]
    except Exception as error:  # noqa: BLE001 - Flink's refusal, in its words
        causes = [ln.strip() for ln in str(error).splitlines() if ln.strip().startswith("Caused by")]
        lines = causes or [ln for ln in str(error).splitlines() if ln.strip()]
        return {"error": lines[-1] if causes else (lines[0] if lines else type(error).__name__)}
    answers = []
    for k in range(len(expressions)):
        if group:
            answers.append({"type": types[k + 1], "groups": [[row[0], row[k + 1]] for row in got]})
        else:
            answers.append({"type": types[k], "values": [row[k] for row in got]})
    return {"answers": answers}


if __name__ == "__main__":
    json.dump(evaluate(json.load(sys.stdin)), sys.stdout)
