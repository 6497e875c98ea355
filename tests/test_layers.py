"""The package is layered (docs/architecture.md): every import statement of every module, at
module level or inside a function, read with ``ast`` and resolved to module names.

* no import cycle among the eowc modules;
* ``eowc.semantics`` imports neither ``eowc.executors`` nor ``eowc.verify``, and
  ``eowc.executors`` does not import ``eowc.verify``;
* nothing in the repository imports the bare ``semantics``, ``executors`` or ``verify``;
* PySpark is imported only under ``eowc.executors.spark`` and by the Spark executors of
  ``eowc.verify.spark``;
* an import inside a function is of an optional third-party package (or of an eowc module that
  needs one when imported), so that it is not loaded eagerly: nothing else hides there;
* no rule asks which engine a convention is (``convention is Convention.SPARK``): it reads a
  field of the convention's :class:`~eowc.semantics.rules.triggers.BoundaryRules` instead.

Each check first shows that it sees what it looks for (a graph of the real size, the imports
it resolves), so that it cannot pass on an empty scan.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The repository's folders and the package each installs as (pyproject.toml's package-dir).
PACKAGES = {"semantics": "eowc.semantics", "executors": "eowc.executors", "verify": "eowc.verify"}
#: The third-party packages of the optional extras: the only ones a function may import.
OPTIONAL = {"pyspark", "pyflink", "py4j", "pandas", "pyarrow", "duckdb", "z3", "matplotlib", "pydot"}
#: Where PySpark may be imported: the Spark plumbing and the Spark executors of verify.
SPARK_MODULES = ("eowc.executors.spark", "eowc.verify.spark")


@dataclass(frozen=True)
class Import:
    """One imported name of an import statement: ``target`` (a module, or ``module.name``),
    where it is, and whether it runs inside a function or only for type checkers."""

    module: str
    target: str
    line: int
    in_function: bool
    type_checking: bool


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def imports_of(module: str, path: Path) -> Iterator[Import]:
    """Every name imported anywhere in the file, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno, in_function, type_checking)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                yield Import(module, f"{base}.{alias.name}", node.lineno, in_function, type_checking)
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        checking = type_checking or isinstance(node, ast.If) and _is_type_checking(node)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, inner, checking)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), False, False)


ALL_IMPORTS = [i for module, path in MODULES.items() for i in imports_of(module, path)]


def eowc_module(target: str) -> str | None:
    """The eowc module an import target names (``eowc.a.b.name`` -> ``eowc.a.b``), or None."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def import_graph(imports: list[Import]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for i in imports:
        target = eowc_module(i.target) if i.target.startswith("eowc.") else None
        if target is not None and target != i.module:
            graph.add_edge(i.module, target)
    return graph


def test_the_scan_sees_the_whole_package() -> None:
    graph = import_graph(ALL_IMPORTS)
    assert len(MODULES) > 80 and graph.number_of_edges() > 400
    assert graph.has_edge("eowc.semantics.engines.interpreter", "eowc.semantics.rules.triggers")
    # a relative import inside a package is resolved too
    relative = [i for i in ALL_IMPORTS if i.module == "eowc.semantics.rules.triggers"]
    assert any(i.target == "eowc.semantics.ir.windows.Window" for i in relative)


def test_no_import_cycles() -> None:
    cycles = sorted(nx.simple_cycles(import_graph(ALL_IMPORTS)), key=lambda c: (len(c), c))
    assert not cycles, f"{len(cycles)} import cycles:\n" + "\n".join(
        " -> ".join([*cycle, cycle[0]]) for cycle in cycles)


def test_a_cycle_is_found() -> None:
    """The check on a graph with one more import: ir.values importing the interpreter."""
    extra = Import("eowc.semantics.ir.values", "eowc.semantics.engines.interpreter.run_eowc", 1,
                   True, False)
    cycles = list(nx.simple_cycles(import_graph([*ALL_IMPORTS, extra])))
    assert any("eowc.semantics.ir.values" in c and "eowc.semantics.engines.interpreter" in c
               for c in cycles)


@pytest.mark.parametrize("lower, upper", [("eowc.semantics", "eowc.executors"),
                                          ("eowc.semantics", "eowc.verify"),
                                          ("eowc.executors", "eowc.verify")])
def test_layers_import_downwards(lower: str, upper: str) -> None:
    upward = [f"{i.module}:{i.line} imports {i.target}" for i in ALL_IMPORTS
              if _within(i.module, lower) and _within(i.target, upper)]
    assert not upward, "\n".join(upward)
    assert any(_within(i.module, upper) and _within(i.target, lower) for i in ALL_IMPORTS) or \
        upper == "eowc.verify" and lower == "eowc.executors"  # the check sees imports across


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _repository_files() -> list[Path]:
    skipped = {".git", ".venv", "build", "dist", "eowc.egg-info", "__pycache__"}
    return [p for p in sorted(ROOT.rglob("*.py")) if not skipped & set(p.relative_to(ROOT).parts)]


BARE = re.compile(r"^\s*(?:from\s+(?:semantics|executors|verify)(?:\.\w+)*\s+import\b"
                  r"|import\s+(?:semantics|executors|verify)\b)"
                  r"|-m\s+(?:semantics|executors|verify)\.", re.MULTILINE)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def bare_imports(path: Path) -> list[str]:
    """Imports of the bare top-level names: import statements, and the code in string
    literals that a test or a script runs (``python -c``, ``-m``); docstrings are prose."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [f"{_shown(path)}:{node.lineno}" for node in ast.walk(tree)
             if isinstance(node, ast.Import) and any(a.name.split(".")[0] in PACKAGES for a in node.names)
             or isinstance(node, ast.ImportFrom) and not node.level
             and (node.module or "").split(".")[0] in PACKAGES]
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and n.body and isinstance(n.body[0], ast.Expr)
                  and isinstance(n.body[0].value, ast.Constant)}
    found += [f"{_shown(path)}:{node.lineno} (in a string)" for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings and BARE.search(node.value)]
    return found


def test_nothing_imports_the_bare_package_names() -> None:
    files = _repository_files()
    folders = {p.relative_to(ROOT).parts[0] for p in files}
    assert {"tests", "benchmarks", "docs", "semantics", "executors", "verify"} <= folders
    assert (ROOT / "docs" / "examples" / "tiny_engine.py") in files
    found = [hit for path in files for hit in bare_imports(path)]
    assert not found, "imports of bare semantics/executors/verify:\n" + "\n".join(found)


def test_bare_imports_are_found(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    bare = "from " + "semantics"  # split, so that this file's own scan does not see it
    sample.write_text(f'"""{bare} import x: a docstring is prose."""\nimport os\n'
                      f'{bare}.ir import plan\n{"import"} executors\n'
                      f'CODE = "from " "verify.x import y"\n', encoding="utf-8")
    assert len(bare_imports(sample)) == 3


def test_pyspark_only_in_the_spark_modules() -> None:
    spark = [i for i in ALL_IMPORTS if i.target.split(".")[0] == "pyspark"]
    assert any(_within(i.module, "eowc.executors.spark") for i in spark)  # it sees them
    outside = [f"{i.module}:{i.line} imports {i.target}" for i in spark
               if not any(_within(i.module, m) for m in SPARK_MODULES)]
    assert not outside, "\n".join(outside)


def test_pyflink_only_in_the_flink_modules() -> None:
    flink = [i for i in ALL_IMPORTS if i.target.split(".")[0] == "pyflink"]
    assert any(_within(i.module, "eowc.executors.flink") for i in flink)  # it sees them
    outside = [f"{i.module}:{i.line} imports {i.target}" for i in flink
               if not _within(i.module, "eowc.executors.flink")]
    assert not outside, "\n".join(outside)


def _needs_an_extra() -> set[str]:
    """The eowc modules that import an optional package when imported (directly, or through
    the eowc modules they import at module level)."""
    eager = [i for i in ALL_IMPORTS if not i.in_function and not i.type_checking]
    direct = {i.module for i in eager if i.target.split(".")[0] in OPTIONAL}
    graph = import_graph(eager)
    return {m for m in MODULES if direct & (nx.descendants(graph, m) | {m})}


def test_imports_inside_functions_only_defer_optional_packages() -> None:
    """The command line and every other module import at module level; an import inside a
    function is only there to load an optional extra's package on first use (directly, or
    through an eowc module that needs one when imported: the Spark runner, the z3 proofs)."""
    needs_extra = _needs_an_extra()
    assert {"eowc.executors.spark.runner", "eowc.semantics.proofs.trigger_proofs"} <= needs_extra
    assert "eowc.verify.cli.main" not in needs_extra  # `eowc` starts without any extra
    hidden = []
    for i in ALL_IMPORTS:
        if not i.in_function or i.target.split(".")[0] in OPTIONAL:
            continue
        target = eowc_module(i.target) if i.target.startswith("eowc.") else None
        if target is None or target not in needs_extra:
            hidden.append(f"{i.module}:{i.line} imports {i.target} inside a function")
    assert not hidden, "\n".join(hidden)


#: A branch on which engine a convention is: ``convention is Convention.SPARK``,
#: ``c is not FLINK``, ``convention in (Convention.SPARK, ...)``, ``== Convention.FLINK``.
ENGINE_BRANCH = re.compile(r"(?:\bis(?:\s+not)?|==|!=|\bin)\s*[(\[]?\s*(?:Convention\.)?"
                           r"(?:RISINGWAVE|SPARK|FLINK)\b")


#: ``for c in (SPARK, FLINK)``: an iteration over conventions, not a branch.
ITERATION = re.compile(r"\bfor\s+[\w, ]+\s+$")


def convention_branches(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [f"{_shown(path)}:{n}: {line.strip()}" for n, line in enumerate(lines, 1)
            if any(not ITERATION.search(line[:match.start()])
                   for match in ENGINE_BRANCH.finditer(line.split("#")[0]))]


def test_rules_read_the_convention_instead_of_naming_the_engine() -> None:
    found = [hit for path in MODULES.values() for hit in convention_branches(path)]
    assert not found, f"{len(found)} branches on the engine:\n" + "\n".join(found)


def test_engine_branches_are_found(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("if convention is Convention.SPARK:\n    pass\n"
                      "x = 1 if c is not FLINK else 2\n"
                      "y = convention in (Convention.SPARK, Convention.FLINK)\n"
                      "z = convention.closing_offset  # is Convention.FLINK in a comment\n"
                      "for c in (SPARK, FLINK):\n    pass\n",
                      encoding="utf-8")
    assert len(convention_branches(sample)) == 3
