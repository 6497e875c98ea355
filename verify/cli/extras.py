"""The optional extras of the ``eowc`` distribution (``pyproject.toml``), as the command line
reports them: a command that needs a package of an extra that is not installed says which
extra to install, in one line, instead of a traceback.

The extras: ``spark`` (PySpark and what it runs on: the Spark executors, ``--engine spark``,
``--oracle spark``), ``oracle`` (DuckDB: ``--oracle duckdb``), ``proofs`` (z3: ``eowc prove``)
and ``graph`` (matplotlib and pydot: ``eowc explain --format svg/png/dot``). Everything else
(the reference interpreter, the in-process executors, ``explain`` as text) needs none.
"""

from __future__ import annotations

#: The extra that installs each optional package, by its top-level import name.
EXTRA_OF_PACKAGE = {
    "pyspark": "spark", "py4j": "spark", "pandas": "spark", "pyarrow": "spark",
    "duckdb": "oracle",
    "z3": "proofs",
    "matplotlib": "graph", "pydot": "graph",
}


def missing_extra(error: ImportError) -> str | None:
    """What to tell the user when ``error`` is the import of an optional package that is not
    installed: the package and the ``pip install`` that brings it; None for any other import
    error (a bug, not a missing extra)."""
    package = (error.name or "").partition(".")[0]
    extra = EXTRA_OF_PACKAGE.get(package)
    if extra is None:
        return None
    return (f"this command needs {package}, which is not installed: "
            f"pip install 'eowc[{extra}]' (the {extra} extra)")
