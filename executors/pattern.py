"""MATCH_RECOGNIZE in the executors: the matcher, and what a partition keeps between batches.

Per partition, rows in ORDER BY order (:mod:`eowc.executors.ordering`) are searched from a
start row for the pattern, a concatenation of greedy quantified variables. Each variable
takes as many rows as its quantifier and DEFINE condition allow; when the rest of the
pattern then fails, it gives back one row at a time (down to its minimum) before the search
gives up at this start (Oracle's and Flink's preference order). A variable without DEFINE
takes any row; a condition holds only when TRUE. After a match the next search starts after
its last row (``AFTER MATCH SKIP PAST LAST ROW``) or at the row after its first (``SKIP TO
NEXT ROW``); after no match, at the next row.

In DEFINE, ``col`` and ``V.col`` for the variable ``V`` being defined read the row being
classified; ``W.col`` for another variable the last row given to ``W`` so far (NULL if none);
``PREV(x, n)`` the row ``n`` positions before the row ``x`` reads, in the partition (NULL
before its first). In MEASURES, ``V.col`` and ``LAST(V.col)`` read the last row given to
``V`` (without a variable: the match's last row), ``FIRST`` the first, COUNT/SUM/AVG/MIN/MAX
fold the rows given to ``V`` (all rows of the match without one), ``MATCH_NUMBER()`` numbers
a partition's matches from 1.

Under EMIT ON WINDOW CLOSE a search's outcome (a match, or none at this start) is final once
the last row it looked at is complete (:func:`eowc.semantics.rules.triggers.match_is_final`);
a search that asked for a row that has not arrived is final only at the end of the input.

Written for the executors, independently of the reference interpreter's matcher (which walks
a stack of choices one row at a time): here each variable first takes its longest run, then
gives rows back one at a time. Shared with the reference: the aggregate functions of MEASURES
(:mod:`eowc.semantics.operators.aggregates`, tested on their own).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from eowc.executors.ordering import order_by_key
from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Column, ColumnRef, Expr, Row, Schema, column_index, compile_expr
from eowc.semantics.ir.plan import AggCall, MatchAggregate, MatchRecognize, PatternRef
from eowc.semantics.ir.values import SqlType
from eowc.semantics.operators.aggregates import aggregate_value, compile_aggregate, result_type
from eowc.semantics.rules.triggers import Convention, Watermark, match_is_final

#: A DEFINE condition: (partition rows, match start, position classified, variables so far).
Condition = Callable[[Sequence[Row], int, int, list[str]], bool]


@dataclass(frozen=True)
class Outcome:
    """What one search from row ``start`` found: the variable of each row of the match
    (``labels``; None: no match starts there), and ``reach``, the last position it looked at
    (the number of rows when it asked for one that has not arrived)."""

    start: int
    labels: tuple[str, ...] | None
    reach: int

    @property
    def end(self) -> int:
        """One past the match's last row."""
        assert self.labels is not None
        return self.start + len(self.labels)


def _lift(expr: Expr, refs: list[Expr]) -> Expr:
    """``expr`` with each row reference (a column, ``V.col``, ``PREV``, a measure function)
    replaced by the column ``_ref{i}`` of its place in ``refs`` (appended when new)."""
    if isinstance(expr, ColumnRef):
        expr = PatternRef(None, expr.name)
    if isinstance(expr, PatternRef | MatchAggregate):
        if expr not in refs:
            refs.append(expr)
        return ColumnRef(f"_ref{refs.index(expr)}")

    def lifted(value: Any) -> Any:
        if isinstance(value, Expr):
            return _lift(value, refs)
        if isinstance(value, tuple):
            return tuple(lifted(v) for v in value)
        return value
    return replace(expr, **{f.name: lifted(getattr(expr, f.name)) for f in fields(expr)})  # type: ignore[call-overload]


@dataclass(frozen=True)
class PatternMatcher:
    """A MATCH_RECOGNIZE bound to its input schema."""

    node: MatchRecognize
    partition: Callable[[Row], Row]
    sort_key: Callable[[Row], Any]
    #: The first ORDER BY column's value: what the trigger judges.
    order_value: Callable[[Row], Any]
    conditions: dict[str, Condition]
    measures: Callable[[Sequence[Row], tuple[str, ...], int], tuple[Any, ...]]
    #: The most rows before a match's first row a condition reads (PREV's largest offset).
    back: int

    def search(self, rows: Sequence[Row], start: int) -> Outcome:
        """The first match from ``rows[start]`` in the preference order, or none. ``taken``
        holds, per variable placed so far, where its rows begin and how many it took; a
        variable that cannot reach its minimum makes the last one that can give back a row
        do so."""
        terms, conditions, n = self.node.pattern, self.conditions, len(rows)
        labels: list[str] = []
        taken: list[list[int]] = []
        reach = position = start
        while len(taken) < len(terms):
            term = terms[len(taken)]
            holds, variable, high = conditions.get(term.variable), term.variable, term.high
            run = 0  # the longest run of rows the variable can take here
            while high is None or run < high:
                q = position + run
                if q > reach:
                    reach = q
                if q >= n or (holds is not None and not holds(rows, start, q, labels)):
                    break
                labels.append(variable)
                run += 1
            if run >= term.low:
                taken.append([position, run])
                position += run
                continue
            del labels[position - start:]
            while taken and taken[-1][1] == terms[len(taken) - 1].low:
                del labels[taken.pop()[0] - start:]
            if not taken:
                return Outcome(start, None, reach)
            last = taken.pop()
            last[1] -= 1  # give back one row and try the rest of the pattern again
            position = last[0] + last[1]
            del labels[position - start:]
            taken.append(last)
        return Outcome(start, tuple(labels), reach)

    def next_start(self, outcome: Outcome) -> int:
        """Where the next search starts (AFTER MATCH SKIP)."""
        if outcome.labels is None or self.node.skip == "to next row":
            return outcome.start + 1
        return outcome.end


@dataclass
class PatternRows:
    """One partition between batches: its rows in order (those before the next search
    dropped but for the ``back`` rows PREV may read), their sort keys, where the next search
    starts, and how many matches it had."""

    rows: list[Row] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    start: int = 0
    matches: int = 0

    def add(self, matcher: PatternMatcher, row: Row) -> None:
        key = matcher.sort_key(row)
        at = bisect.bisect_right(self.keys, key)
        assert at >= self.start, "an admitted row sorts after every searched row"
        self.keys.insert(at, key)
        self.rows.insert(at, row)

    def pop_final(self, matcher: PatternMatcher, part: Row, watermark: Watermark,
                  convention: Convention) -> list[tuple[Any, Row]]:
        """The matches whose search is final, each with its last row's sort key, in order:
        the partition key and the measures. The searches stop at the first that is not."""
        done = []
        while self.start < len(self.rows):
            outcome = matcher.search(self.rows, self.start)
            looked_at = self.rows[outcome.reach] if outcome.reach < len(self.rows) else None
            if not match_is_final(None if looked_at is None else matcher.order_value(looked_at),
                                  watermark, convention):
                break
            if outcome.labels is not None:
                self.matches += 1
                members = self.rows[outcome.start:outcome.end]
                done.append((self.keys[outcome.end - 1],
                             part + matcher.measures(members, outcome.labels, self.matches)))
            self.start = matcher.next_start(outcome)
        cut = max(0, self.start - matcher.back)
        if cut:
            del self.rows[:cut], self.keys[:cut]
            self.start -= cut
        return done


def _row_reader(ref: PatternRef, defining: str, at: int
                ) -> Callable[[Sequence[Row], int, int, list[str]], Any]:
    """The value a DEFINE reference reads, for the row at ``position`` being classified."""
    variable, back = ref.variable, ref.back
    own = variable is None or variable == defining

    def read(rows: Sequence[Row], start: int, position: int, labels: list[str]) -> Any:
        base = position
        if not own:
            for i in range(len(labels) - 1, -1, -1):
                if labels[i] == variable:
                    base = start + i
                    break
            else:
                return None
        if base - back < 0:
            return None
        return rows[base - back][at]
    return read


def _checked(node: MatchRecognize, variable: str | None, where: str) -> None:
    if variable is not None and variable not in {t.variable for t in node.pattern}:
        raise PlanError(f"{where}: {variable} is not a variable of PATTERN ({node.pattern_sql()})")


def _condition(node: MatchRecognize, variable: str, expr: Expr) -> Condition:
    schema = node.input.schema
    refs: list[Expr] = []
    body = _lift(expr, refs)
    readers, columns = [], []
    for i, ref in enumerate(refs):
        if not isinstance(ref, PatternRef):
            raise PlanError(f"DEFINE {variable}: {ref!r} is not supported in DEFINE (only the "
                            f"current row, var.col and PREV(...))")
        _checked(node, ref.variable, f"DEFINE {variable}")
        at = column_index(schema, ref.column)
        readers.append(_row_reader(ref, variable, at))
        columns.append(Column(f"_ref{i}", schema[at].type))
    compiled = compile_expr(body, tuple(columns))
    if compiled.type not in (SqlType.BOOLEAN, SqlType.NULL):
        raise PlanError(f"DEFINE {variable} must be a BOOLEAN condition, got {compiled.type.value}")
    evaluate = compiled.evaluate

    def holds(rows: Sequence[Row], start: int, position: int, labels: list[str]) -> bool:
        return evaluate(tuple(r(rows, start, position, labels) for r in readers)) is True
    return holds


def _measure_part(ref: Expr, schema: Schema, tie: Callable[[Row], Any]
                  ) -> tuple[SqlType, Callable[[Sequence[Row], tuple[str, ...], int], Any]]:
    """A measure's row reference: its type, and its value over a match's rows and labels."""
    if isinstance(ref, PatternRef):
        if ref.back:
            raise PlanError(f"{ref!r} in MEASURES is not supported (PREV only in DEFINE)")
        ref = MatchAggregate("last", ref.variable, ref.column)
    assert isinstance(ref, MatchAggregate)
    function, variable = ref.function, ref.variable
    if function == "match_number":
        return SqlType.BIGINT, lambda members, labels, number: number

    def given(members: Sequence[Row], labels: tuple[str, ...]) -> list[Row]:
        if variable is None:
            return list(members)
        return [row for row, label in zip(members, labels, strict=True) if label == variable]
    if function in ("first", "last"):
        assert ref.column is not None
        at = column_index(schema, ref.column)
        pick = 0 if function == "first" else -1

        def edge(members: Sequence[Row], labels: tuple[str, ...], number: int) -> Any:
            rows = given(members, labels)
            return rows[pick][at] if rows else None
        return schema[at].type, edge
    call = AggCall(function, None if ref.column is None else ColumnRef(ref.column))
    fold = compile_aggregate(call, schema, None, tie)
    return result_type(call, schema), \
        lambda members, labels, number: aggregate_value(fold, given(members, labels))


def _measures(node: MatchRecognize, tie: Callable[[Row], Any]
              ) -> Callable[[Sequence[Row], tuple[str, ...], int], tuple[Any, ...]]:
    schema = node.input.schema
    measures = []
    for _, expr in node.measures:
        refs: list[Expr] = []
        body = _lift(expr, refs)
        parts = []
        for ref in refs:
            _checked(node, getattr(ref, "variable", None), f"MEASURES {ref!r}")
            parts.append(_measure_part(ref, schema, tie))
        columns = tuple(Column(f"_ref{i}", t) for i, (t, _) in enumerate(parts))
        measures.append((compile_expr(body, columns).evaluate, [value for _, value in parts]))

    def values(members: Sequence[Row], labels: tuple[str, ...], number: int) -> tuple[Any, ...]:
        return tuple(evaluate(tuple(v(members, labels, number) for v in parts))
                     for evaluate, parts in measures)
    return values


def _largest_prev(expr: Expr) -> int:
    refs: list[Expr] = []
    _lift(expr, refs)
    return max((r.back for r in refs if isinstance(r, PatternRef)), default=0)


def pattern_matcher(node: MatchRecognize, tie: Callable[[Row], Any]) -> PatternMatcher:
    """Bind ``node``; ``tie`` orders rows with equal ORDER BY values."""
    schema = node.input.schema
    _ = node.schema
    keys = [column_index(schema, k) for k in node.partition_by]
    order = order_by_key(tuple((ColumnRef(c), d) for c, d in node.order_by), schema)
    first = column_index(schema, node.order_by[0][0])
    return PatternMatcher(node, lambda row: tuple(row[i] for i in keys),
                          lambda row: (order(row), tie(row)), lambda row: row[first],
                          {name: _condition(node, name, expr) for name, expr in node.define},
                          _measures(node, tie),
                          max((_largest_prev(e) for _, e in node.define), default=0))
