"""Tree-to-tree rewrites of a statement before it is planned (the rewrites work fills this
in; here only the entry point the script reader calls)."""

from __future__ import annotations

from sqlglot import exp


def rewrite(tree: exp.Expression, dialect: str) -> exp.Expression:
    """``tree`` rewritten by the rules (none yet)."""
    return tree
