"""The executors are an independent oracle: they import nothing of the reference
interpreter's engines or operators but the aggregate functions (a fold shared on purpose and
tested on its own), so a differential test of an executor against the reference compares two
implementations (``tests/test_reference_mutants.py`` shows that it then catches a bug in the
reference's operators).

Checked on the source, by ``ast``: every import statement of ``executors/`` (the Spark
executors included), at any depth, relative ones resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import eowc.executors

EXECUTORS = Path(eowc.executors.__file__).parent
#: What the executors must not import: the reference's engines and operators ...
FORBIDDEN = ("eowc.semantics.engines", "eowc.semantics.operators")
#: ... but for these modules, shared with the reference on purpose.
SHARED = ("eowc.semantics.operators.aggregates",)
#: Modules under executors/ that are not eowc's executors, and what of the reference they may
#: import: Spark's own operators (``spark-native``, a peer engine judged by the reference,
#: which validates and splits a query as the reference does) and the Spark oracle (which
#: reports late rows as the reference's records). Neither implements an operator of ours.
NOT_EXECUTORS = {
    "spark/native.py": {"eowc.semantics.engines.interpreter.Emission",
                        "eowc.semantics.engines.interpreter.check_runs_under_eowc",
                        "eowc.semantics.engines.multi_input.sources_of",
                        "eowc.semantics.engines.multi_input.split_multi_input"},
    "spark/oracle.py": {"eowc.semantics.engines.inputs.LateRow"},
}


def _package_of(path: Path) -> str:
    return "eowc.executors" + "".join(f".{p}" for p in path.parent.relative_to(EXECUTORS).parts)


def _imported(source: str, package: str) -> list[tuple[int, str]]:
    """Each module or name the code ``source`` of ``package`` imports (``from m import n``
    counts as ``m.n``), with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _forbidden(module: str) -> bool:
    if any(module == s or module.startswith(s + ".") for s in SHARED):
        return False
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def test_the_executors_import_no_engine_and_no_operator_of_the_reference() -> None:
    files = sorted(EXECUTORS.rglob("*.py"))
    assert len(files) > 10, f"the executors' sources were not found under {EXECUTORS}"
    offending = [f"{path.relative_to(EXECUTORS.parent)}:{line}: {module}"
                 for path in files
                 for line, module in _imported(path.read_text(encoding="utf-8"), _package_of(path))
                 if _forbidden(module) and
                 module not in NOT_EXECUTORS.get(path.relative_to(EXECUTORS).as_posix(), ())]
    assert not offending, "the executors import the reference's internals:\n" + "\n".join(offending)


def test_the_check_sees_a_forbidden_import() -> None:
    """The check itself: it finds the imports it must refuse, in every form."""
    source = ("import eowc.semantics.engines\n"
              "from eowc.semantics import operators\n"
              "from eowc.semantics.operators import aggregates, over\n"
              "from ..semantics.engines.interpreter import run_eowc\n"
              "def f():\n    from eowc.semantics.operators.pattern import compile_pattern\n")
    modules = _imported(source, "eowc.executors")
    assert [(line, m) for line, m in modules if _forbidden(m)] == [
        (1, "eowc.semantics.engines"), (2, "eowc.semantics.operators"),
        (3, "eowc.semantics.operators.over"),
        (4, "eowc.semantics.engines.interpreter.run_eowc"),
        (6, "eowc.semantics.operators.pattern.compile_pattern")]
