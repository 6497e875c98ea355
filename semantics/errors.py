"""The errors a user sees: each says where, what was found and what was expected."""

from __future__ import annotations


class EowcError(Exception):
    """Base of every error the toolkit reports to a user."""


class PlanError(EowcError):
    """The query cannot be planned or is not valid under its emit mode."""


class SqlError(EowcError):
    """The SQL text is not in the supported subset; names the offending fragment (the user's
    own text) and, once the script reader knows it, the line and column (from 1) in the script
    where it is, with that line of the script and a caret under the offending part."""

    def __init__(self, message: str, fragment: str | None = None, line: int | None = None,
                 column: int | None = None, excerpt: str | None = None, width: int = 1) -> None:
        self.reason, self.fragment, self.line, self.column = message, fragment, line, column
        self.excerpt, self.width = excerpt, width
        where = f"line {line}, column {column}: " if line is not None else ""
        text = f"{where}{message}: {fragment}" if fragment else f"{where}{message}"
        if excerpt is not None and column is not None:
            text += f"\n  {excerpt}\n  {' ' * (column - 1)}{'^' * max(1, width)}"
        super().__init__(text)

    def at(self, line: int, column: int, excerpt: str | None = None, width: int = 1,
           fragment: str | None = None) -> SqlError:
        """The same error, placed at ``line`` and ``column`` of the script (``excerpt``: that
        line, ``width``: how many of its characters the caret underlines; ``fragment``: the
        user's text of the offending part, instead of the one the error names)."""
        return SqlError(self.reason, fragment if fragment is not None else self.fragment, line,
                        column, excerpt, width)


class InputError(EowcError):
    """An arrival log line is malformed: names the file, the line (None when the file as a
    whole is at fault) and what was expected."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path, self.line, self.reason = path, line, message
        super().__init__(f"{path}:{line}: {message}" if line is not None else f"{path}: {message}")


class RunError(EowcError):
    """A run cannot start or finish for a reason outside the query and its input: Java, Spark,
    the work directory or its checkpoint. The message names what it is about (a path, a
    setting), so the command line does not prefix it with the query file."""
