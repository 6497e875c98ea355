"""The SQL dialects eowc reads: RisingWave's and Flink's streaming SQL, as sqlglot dialects.

Both read the same tree, so the planner reads one shape whichever dialect wrote the query:

* ``WATERMARK FOR c AS <expr>`` inside ``CREATE TABLE``/``CREATE SOURCE``: an
  :class:`sqlglot.exp.WatermarkColumnConstraint` in the column list;
* ``APPEND ONLY`` after the column list: an :class:`AppendOnlyProperty` of the CREATE;
  connector clauses (``WITH (...)``, ``FORMAT ... ENCODE ...``) are read and ignored;
* a trailing ``EMIT ON WINDOW CLOSE``: the query's ``emit`` argument (:data:`EMIT`);
* ``ON CONFLICT ...`` after it: an :class:`OnConflictProperty` (which eowc refuses);
  Flink's ``METADATA [FROM 'key'] [VIRTUAL]`` columns: a :class:`MetadataColumnConstraint`;
* window table functions, in Flink's form ``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))``
  (also with named arguments, ``DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => ...``) and
  RisingWave's ``TUMBLE(t, ts, size)``: a table whose ``this`` is the call
  ``TUMBLE(t, ts, size)`` (RisingWave's argument order, which is Flink's, SEMANTICS.md §2b),
  its first argument a table; the ``PARTITION BY`` keys of ``SESSION``/``COUNT_TUMBLE``/
  ``COUNT_HOP`` follow the constant arguments (``SESSION(t, ts, gap, k1, k2)``);
* ``MATCH_RECOGNIZE (...)``;
* window frames: ``ROWS``/``RANGE`` frames with ``EXCLUDE ...`` (the frame's ``exclude``
  argument, the words as a string, e.g. ``"CURRENT ROW"``) and RisingWave's session frame
  ``SESSION WITH GAP <interval>`` (a frame of kind ``"SESSION"`` whose ``start`` is the gap).

RisingWave folds unquoted identifiers to lower case, as PostgreSQL does; Flink keeps their case
and quotes identifiers with backquotes. Flink's dialect reads expressions as the RisingWave one
does (both follow the SQL standard's grammar, Calcite's in Flink), so one planner reads both.

Every node the parser builds knows where it is in the text it read (:func:`text_span`).
:func:`detect_dialect` tells which dialect a script is written in (a comment
``-- eowc: dialect=NAME`` decides).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import NormalizationStrategy
from sqlglot.dialects.risingwave import RisingWave
from sqlglot.parsers.risingwave import RisingWaveParser
from sqlglot.tokens import TokenType

#: The window table functions, by the name a query calls them.
WINDOW_TABLE_FUNCTIONS = ("TUMBLE", "HOP", "CUMULATE", "SESSION", "COUNT_TUMBLE", "COUNT_HOP")

#: The window table functions that take ``PARTITION BY`` keys after their table.
_PARTITIONED = ("SESSION", "COUNT_TUMBLE", "COUNT_HOP")

#: Flink's names of the window table functions' parameters, in their positional order.
_PARAMETERS = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}

#: The key of a query's trailing ``EMIT ON WINDOW CLOSE`` in its arguments.
EMIT = "emit"

#: The meta keys of a node's span in the text it was parsed from (start, end exclusive).
_START, _END = "text_start", "text_end"


class AppendOnlyProperty(exp.Property):
    """``APPEND ONLY`` after a CREATE TABLE's column list: the table only receives inserts."""

    arg_types: dict[str, bool] = {}


class OnConflictProperty(exp.Property):
    """RisingWave's ``ON CONFLICT {DO NOTHING | OVERWRITE | DO UPDATE IF NOT NULL}`` after a
    CREATE TABLE: what an insert with an existing primary key does (``this``: the words)."""

    arg_types: dict[str, bool] = {"this": True}


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """Flink's ``METADATA [FROM 'key'] [VIRTUAL]`` on a column: the connector fills it from
    the record's metadata; to eowc it is a column the rows carry."""

    arg_types: dict[str, bool] = {"this": False, "virtual": False}


def text_span(node: exp.Expression) -> tuple[int, int] | None:
    """Where ``node`` is in the statement text it was parsed from: (start, end), end
    exclusive; None for a node the planner built."""
    start, end = node.meta.get(_START), node.meta.get(_END)
    if start is None or end is None:
        return None
    return start, end


class _StreamingParser(RisingWaveParser):
    """The parser of both dialects: RisingWave's, with the streaming hooks."""

    #: ``SESSION(...)`` is a call wherever an expression may be (Flink's legacy ``GROUP BY
    #: SESSION(ts, gap)``), not only a table function in FROM.
    FUNC_TOKENS = {*RisingWaveParser.FUNC_TOKENS, TokenType.SESSION}

    PROPERTY_PARSERS = {
        **RisingWaveParser.PROPERTY_PARSERS,
        "APPEND": lambda self: self._parse_append_only(),
        "ON": lambda self: self._parse_on_conflict_property(),
    }

    CONSTRAINT_PARSERS = {
        **RisingWaveParser.CONSTRAINT_PARSERS,
        "METADATA": lambda self: self.expression(MetadataColumnConstraint(
            this=self._match(TokenType.FROM) and self._parse_string(),
            virtual=self._match_text_seq("VIRTUAL"))),
    }

    def _parse_on_conflict_property(self) -> exp.Expression | None:
        """``ON CONFLICT ...`` (any other ``ON`` is not a property: None, nothing read)."""
        start = self._prev
        if not self._match_text_seq("CONFLICT"):
            self._retreat(self._index - 1)
            return None
        for words in (("DO", "NOTHING"), ("OVERWRITE",), ("DO", "UPDATE", "IF", "NOT", "NULL")):
            if self._match_text_seq(*words):
                node = self.expression(OnConflictProperty(this=exp.var(" ".join(words))))
                _place(node, start.start, self._prev.end + 1)
                return node
        self.raise_error("expected ON CONFLICT DO NOTHING, OVERWRITE or DO UPDATE IF NOT NULL")
        return None

    def _parse_as_command(self, start: Any) -> exp.Expression:
        """A statement sqlglot does not understand is an error where it stopped (sqlglot
        would keep its text as an opaque command)."""
        token = self._curr if self._index < len(self._tokens) else self._prev
        self.raise_error(f"unexpected {token.text!r}", token)
        return exp.Command(this=start.text)

    def _parse_append_only(self) -> exp.Expression | None:
        if not self._match_text_seq("ONLY"):
            self.raise_error("expected APPEND ONLY")
        return self.expression(AppendOnlyProperty())

    # -- EMIT ON WINDOW CLOSE ------------------------------------------------------------------

    def _parse_query_modifiers(self, this: Any) -> Any:
        this = super()._parse_query_modifiers(this)
        start = self._curr
        if isinstance(this, exp.Query) and self._at_emit() and \
                self._match_text_seq("EMIT", "ON", "WINDOW", "CLOSE"):
            emit = exp.Var(this="EMIT ON WINDOW CLOSE")
            _place(emit, start.start, self._prev.end + 1)
            this.set(EMIT, emit)
            if self._index < len(self._tokens) and self._curr.token_type is not TokenType.SEMICOLON:
                self.raise_error("EMIT ON WINDOW CLOSE must end the query", start)
        return this

    def _at_emit(self) -> bool:
        words = [self._tokens_at(i) for i in range(4)]
        return all(w is not None for w in words) and \
            [w.text.upper() for w in words] == ["EMIT", "ON", "WINDOW", "CLOSE"]

    def _parse_table_alias(self, *args: Any, **kwargs: Any) -> Any:
        return None if self._at_emit() else super()._parse_table_alias(*args, **kwargs)

    def _parse_alias(self, this: Any, explicit: bool = False) -> Any:
        return this if self._at_emit() else super()._parse_alias(this, explicit)

    # -- window table functions ----------------------------------------------------------------

    def _parse_table(self, *args: Any, **kwargs: Any) -> exp.Expression | None:
        if not kwargs.get("schema") and self._at_window_table_function():
            return self._parse_window_table_function()
        return super()._parse_table(*args, **kwargs)

    def _at_window_table_function(self) -> bool:
        def call_at(i: int) -> bool:
            name, paren = self._tokens_at(i), self._tokens_at(i + 1)
            return (name is not None and paren is not None
                    and name.text.upper() in WINDOW_TABLE_FUNCTIONS
                    and paren.token_type is TokenType.L_PAREN)
        first, second = self._tokens_at(0), self._tokens_at(1)
        if first is not None and second is not None and first.token_type is TokenType.TABLE \
                and second.token_type is TokenType.L_PAREN:
            return call_at(2)
        return call_at(0)

    def _tokens_at(self, offset: int) -> Any:
        index = self._index + offset
        return self._tokens[index] if 0 <= index < len(self._tokens) else None

    def _parse_window_table_function(self) -> exp.Expression:
        """``TABLE(F(TABLE t [PARTITION BY k, ...], DESCRIPTOR(c), args))`` (also with Flink's
        named arguments, ``DATA => TABLE t, TIMECOL => DESCRIPTOR(c), SIZE => ...``) or
        ``F(t, c, args)``, as ``F(t, c, args, k, ...)``, with its alias."""
        wrapped = self._match(TokenType.TABLE)
        if wrapped:
            self._match_l_paren()
        name = self._curr
        function = name.text.upper()
        self._advance()
        self._match_l_paren()
        arguments: list[exp.Expression] = []
        named: dict[str, exp.Expression] = {}
        keys: list[exp.Expression] = []
        while True:
            parameter = self._parse_parameter_name()
            argument = self._window_table_argument(not arguments and not named)
            if argument is None:
                self.raise_error(f"expected an argument of {function}")
            elif parameter is not None:
                named[parameter] = argument
            else:
                arguments.append(argument)
            if self._match(TokenType.PARTITION_BY):
                if function not in _PARTITIONED:
                    self.raise_error(f"PARTITION BY is allowed in {', '.join(_PARTITIONED)}, "
                                     f"not in {function}", self._prev)
                keys.extend(self._parse_partition_keys())
            if not self._match(TokenType.COMMA):
                break
        if named:
            arguments += self._in_order(function, named)
        self._match_r_paren()
        if wrapped:
            self._match_r_paren()
        call = self.expression(exp.Anonymous(this=function, expressions=[*arguments, *keys]))
        _place(call, name.start, self._prev.end + 1)
        table_node = exp.Table(this=call)
        _place(table_node, name.start, self._prev.end + 1)
        alias = self._parse_table_alias(alias_tokens=self.TABLE_ALIAS_TOKENS)
        if alias:
            table_node.set("alias", alias)
        return table_node

    def _parse_parameter_name(self) -> str | None:
        """``NAME =>`` before a named argument: the name."""
        after = self._tokens_at(1)
        if after is not None and after.token_type is TokenType.FARROW:
            name = self._curr.text.upper()
            self._advance(2)
            return name
        return None

    def _window_table_argument(self, first: bool) -> exp.Expression | None:
        """The table (``TABLE t``, ``t``, a subquery), ``DESCRIPTOR(c)``, or an expression."""
        if self._match(TokenType.TABLE) or (first and self._curr.token_type is not TokenType.L_PAREN):
            return self._parse_table_argument()
        if self._curr.text.upper() == "DESCRIPTOR" and self._next is not None \
                and self._next.token_type is TokenType.L_PAREN:
            self._advance(2)
            column = self._parse_column()
            self._match_r_paren()
            return column
        return self._parse_disjunction()

    def _parse_partition_keys(self) -> list[exp.Expression]:
        """``k1, k2`` after PARTITION BY, up to the DESCRIPTOR that follows them."""
        keys = [self._parse_column()]
        while self._curr is not None and self._curr.token_type is TokenType.COMMA and not (
                self._next is not None and (self._next.text.upper() == "DESCRIPTOR" or (
                    self._tokens_at(2) is not None
                    and self._tokens_at(2).token_type is TokenType.FARROW))):
            self._advance()
            keys.append(self._parse_column())
        return keys

    def _in_order(self, function: str, named: dict[str, exp.Expression]) -> list[exp.Expression]:
        """Named arguments in the order of the positional form."""
        order = _PARAMETERS.get(function, ())
        unknown = sorted(set(named) - set(order))
        if unknown:
            self.raise_error(f"{function} has no parameter {unknown[0]} (its parameters: "
                             f"{', '.join(order)})")
        present = [p for p in order if p in named]
        if present != list(order[:len(present)]):
            missing = next(p for p in order if p not in named)
            self.raise_error(f"{function} needs its parameter {missing}")
        return [named[p] for p in present]

    def _parse_table_argument(self) -> exp.Expression | None:
        """A table function's table: a name (``t``, ``TABLE t``, ``s.t``) or a subquery."""
        if self._curr is not None and self._curr.token_type is TokenType.L_PAREN:
            return self._parse_disjunction()
        return self._parse_table_parts()

    # -- where a function call is (sqlglot returns it inside its OVER window) ---------------

    def _parse_function_call(self, *args: Any, **kwargs: Any) -> exp.Expression | None:
        first = self._index
        result = super()._parse_function_call(*args, **kwargs)
        function = result
        while isinstance(function, exp.Window | exp.Filter | exp.WithinGroup | exp.IgnoreNulls
                         | exp.RespectNulls):
            function = function.this
        if isinstance(function, exp.Expression) and first < len(self._tokens):
            _place(function, self._tokens[first].start, self._tokens[self._call_end(first)].end + 1)
        return result

    def _call_end(self, first: int) -> int:
        """The index of the token that ends the call whose name is token ``first``: its
        closing parenthesis, or the name when it has none."""
        if first + 1 >= len(self._tokens) or self._tokens[first + 1].token_type is not TokenType.L_PAREN:
            return first
        depth = 0
        for index in range(first + 1, len(self._tokens)):
            kind = self._tokens[index].token_type
            depth += 1 if kind is TokenType.L_PAREN else -1 if kind is TokenType.R_PAREN else 0
            if depth == 0:
                return index
        return first

    # -- window frames -------------------------------------------------------------------------

    def _parse_partition_and_order(self) -> tuple[list[exp.Expression], exp.Expression | None]:
        partition, order = super()._parse_partition_and_order()
        start = self._curr
        if self._match_text_seq("SESSION", "WITH", "GAP"):
            gap = self._parse_bitwise()
            spec = exp.WindowSpec(kind="SESSION", start=gap)
            if self._match_text_seq("EXCLUDE"):  # RisingWave's grammar allows it here too
                words = next((w for w in (("CURRENT", "ROW"), ("GROUP",), ("TIES",), ("NO", "OTHERS"))
                              if self._match_text_seq(*w)), None)
                if words is None:
                    self.raise_error("Expected CURRENT ROW, GROUP, TIES or NO OTHERS after EXCLUDE")
                spec.set("exclude", " ".join(words))
            _place(spec, start.start, self._prev.end + 1)
            self._session_frames.append(spec)
        return partition, order

    def _parse_window(self, this: exp.Expression | None, alias: bool = False) -> exp.Expression | None:
        depth = len(self._session_frames)
        window = super()._parse_window(this, alias)
        if isinstance(window, exp.Window):
            if len(self._session_frames) > depth:
                window.set("spec", self._session_frames.pop())
            spec = window.args.get("spec")
            if spec is not None and text_span(spec) is None:
                self._place_frame(spec)
            exclude = spec.args.get("exclude") if spec is not None else None
            if isinstance(exclude, exp.Expression):
                spec.set("exclude", " ".join(exclude.name.upper().split()))
        return window

    def _place_frame(self, spec: exp.Expression) -> None:
        """Place a ``ROWS``/``RANGE``/``GROUPS`` frame just read: from its kind to the
        closing parenthesis of its OVER clause (the token just read)."""
        depth = 0
        for index in range(self._index - 2, -1, -1):
            token = self._tokens[index]
            depth += 1 if token.token_type is TokenType.R_PAREN else \
                -1 if token.token_type is TokenType.L_PAREN else 0
            if depth < 0:
                return
            if depth == 0 and token.text.upper() in ("ROWS", "RANGE", "GROUPS"):
                _place(spec, token.start, self._tokens[self._index - 2].end + 1)
                return

    @property
    def _session_frames(self) -> list[exp.WindowSpec]:
        frames = self.__dict__.setdefault("_session_frame_stack", [])
        return frames


def _place(node: exp.Expression, start: int, end: int) -> None:
    node.meta[_START], node.meta[_END] = start, end


def _spanning(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of the parser, recording in each node it returns the span of the tokens it
    read, widened to its children's spans and to what other methods that returned it read."""

    @functools.wraps(method)
    def parse(self: Any, *args: Any, **kwargs: Any) -> Any:
        first = self._index
        result = method(self, *args, **kwargs)
        if isinstance(result, exp.Expression) and self._index > first and self._prev is not None:
            start = self._tokens[first].start if first < len(self._tokens) else self._prev.start
            end = self._prev.end + 1
            for span in (text_span(result), *map(text_span, result.iter_expressions())):
                if span is not None:
                    start, end = min(start, span[0]), max(end, span[1])
            _place(result, start, end)
        return result

    return parse


for _name, _method in inspect.getmembers(_StreamingParser, inspect.isfunction):
    if _name.startswith("_parse_") and _name != "_parse_wrapped":  # (x) is not x
        setattr(_StreamingParser, _name, _spanning(_method))


class EowcRisingWave(RisingWave):
    """RisingWave's streaming SQL: PostgreSQL's lexical rules (unquoted identifiers fold to
    lower case, ``"quoted"`` ones keep their case)."""

    class Tokenizer(RisingWave.Tokenizer):
        KEYWORDS = {
            **RisingWave.Tokenizer.KEYWORDS,
            "MATCH_RECOGNIZE": TokenType.MATCH_RECOGNIZE,
        }

    Parser = _StreamingParser


class EowcFlink(EowcRisingWave):
    """Flink SQL: identifiers keep their case, quoted with backquotes (```order```)."""

    NORMALIZATION_STRATEGY = NormalizationStrategy.CASE_SENSITIVE

    class Tokenizer(EowcRisingWave.Tokenizer):
        IDENTIFIERS = ["`", '"']
        KEYWORDS = {
            **EowcRisingWave.Tokenizer.KEYWORDS,
            "TIMESTAMP_LTZ": TokenType.TIMESTAMPLTZ,
        }


#: The dialects by the name ``--dialect`` gives them.
DIALECTS: dict[str, type[EowcRisingWave]] = {"risingwave": EowcRisingWave, "flink": EowcFlink}

#: Marks of a Flink script, and of a RisingWave one (:func:`detect_dialect`).
_FLINK_MARKS = re.compile(r"`|\bDESCRIPTOR\s*\(|'connector'\s*=|\bPROCTIME\s*\(|\bTIMESTAMP_LTZ\b"
                          r"|\bTO_TIMESTAMP_LTZ\s*\(|\bTABLE\s*\(\s*(TUMBLE|HOP|CUMULATE|SESSION)",
                          re.IGNORECASE)
_RISINGWAVE_MARKS = re.compile(r"\bEMIT\s+ON\s+WINDOW\s+CLOSE\b|\bAPPEND\s+ONLY\b|\bCREATE\s+SOURCE\b"
                               r"|\bFORMAT\s+\w+\s+ENCODE\b|\bTIMESTAMPTZ\b|::|\bSESSION\s+WITH\s+GAP\b"
                               r"|\bFROM\s+(TUMBLE|HOP)\s*\(\s*\w", re.IGNORECASE)
_COMMENTS_AND_STRINGS = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", re.DOTALL)


#: A comment that names a script's dialect: ``-- eowc: dialect=flink``.
_DIALECT_COMMENT = re.compile(r"--\s*eowc:\s*dialect\s*=\s*(risingwave|flink)\b", re.IGNORECASE)


def dialect_comment(dialect: str) -> str:
    """The comment that names ``dialect`` in a script (:func:`detect_dialect` follows it)."""
    return f"-- eowc: dialect={dialect}"


def detect_dialect(text: str) -> str:
    """The dialect a script is written in: the one a comment ``-- eowc: dialect=NAME`` names;
    else ``flink`` when it has more marks only Flink SQL has (backquotes, ``DESCRIPTOR(...)``,
    ``TABLE(TUMBLE(...))``, ``'connector' = ...`` properties, ``PROCTIME()``,
    ``TIMESTAMP_LTZ``) than marks only RisingWave's has (``EMIT ON WINDOW CLOSE``, ``APPEND
    ONLY``, ``CREATE SOURCE``, ``FORMAT ... ENCODE``, ``TUMBLE(t, ts, ...)``);
    ``risingwave`` otherwise."""
    named = _DIALECT_COMMENT.search(text)
    if named is not None:
        return named.group(1).lower()
    code = _COMMENTS_AND_STRINGS.sub(lambda m: " " if not m.group().startswith("'") else
                                     ("'connector'" if m.group().lower() == "'connector'" else "''"),
                                     text)
    flink = len(_FLINK_MARKS.findall(code))
    risingwave = len(_RISINGWAVE_MARKS.findall(code))
    return "flink" if flink > risingwave else "risingwave"


def dialect_named(name: str, text: str) -> tuple[str, type[EowcRisingWave]]:
    """The dialect ``--dialect name`` asks for (``auto``: :func:`detect_dialect` of ``text``),
    and its name."""
    chosen = detect_dialect(text) if name == "auto" else name
    if chosen not in DIALECTS:
        raise ValueError(f"unknown dialect {name!r} (risingwave, flink or auto)")
    return chosen, DIALECTS[chosen]
