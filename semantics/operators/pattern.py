"""Pattern recognition: a subset of SQL's MATCH_RECOGNIZE (:class:`eowc.semantics.ir.plan.MatchRecognize`).

**Matching (batch, Q over INPUT).** Per partition, the rows in ORDER BY order (ties broken by
:func:`eowc.semantics.ir.plan.tie_break`) are searched from a start row for the pattern, a concatenation
of greedy quantified variables, as a regular expression over rows with backtracking (Oracle
and Flink): at every step the search first tries to give the current variable one more row
(if its quantifier allows and the row satisfies its DEFINE condition), and only when that
fails moves on to the next variable (if the quantifier's minimum is reached). The first
complete path in that order is the match. If no match starts at the start row, the search
starts at the next row. After a match it resumes after its last row (``AFTER MATCH SKIP PAST
LAST ROW``) or at the row after its first (``SKIP TO NEXT ROW``). A variable without DEFINE
matches every row; a condition holds only when it is TRUE (NULL fails it).

In DEFINE, ``col`` and ``V.col`` (``V`` the variable being defined) read the row being
classified; ``W.col`` for another variable ``W`` the last row mapped to ``W`` so far in the
match (NULL if none); ``PREV(x[, n])`` the row ``n`` (default 1) before the row ``x`` reads,
in the partition (NULL before its first row). A condition thus reads only its row and rows
before it. In MEASURES, ``V.col`` and ``LAST(V.col)`` read the last row mapped to ``V``
(unqualified: the match's last row), ``FIRST`` the first; COUNT/SUM/AVG/MIN/MAX fold the rows
mapped to ``V`` (every row of the match without a variable); MATCH_NUMBER() numbers a
partition's matches from 1.

**EOWC (the trigger :func:`eowc.semantics.rules.triggers.match_is_final`).** A *decision* is what one
search from a start row finds: a match, or that no match starts there. Its *reach* is the last
row the search read, counting the rows of paths it tried and abandoned before the match:
the match's last row, or a later one when a greedy quantifier asked for one more row, or
"the row after the last one that has arrived". A decision is final once the ORDER BY value
of its reach is complete (``time_is_complete``); a reach past the arrived rows is final only
at the end of the input. Decisions are taken in order, and a partition stops at its first
decision that is not final. This is exact: rows that can still arrive have incomplete times,
so they sort after every complete row, and a search that read only complete rows reads the
same rows, with the same conditions, over the final input. So the EOWC output is
prefix-closed (per partition, the matches emitted so far are the first matches of the final
result) and at the end of the input equals ``Q(INPUT)``.

Equivalently (:func:`eowc_matches`, the specification's form): run the matcher over the
*complete prefix* of each partition (its rows whose time is complete at ``W``) and keep the
decisions that did not ask for a row after that prefix.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from eowc.semantics.errors import PlanError
from eowc.semantics.ir.expr import Column, ColumnRef, Expr, Row, Schema, column_index, compile_expr
from eowc.semantics.ir.plan import (  # the type rules live with the plan
    AggCall,
    MatchAggregate,
    MatchRecognize,
    PatternRef,
    check_pattern_variable,
    measure_type,
    measure_types,  # noqa: F401  (re-exported: it lives with the plan)
    pattern_references,
    substitute,
)
from eowc.semantics.ir.values import SqlType
from eowc.semantics.operators.aggregates import aggregate_value, compile_aggregate
from eowc.semantics.operators.over import order_key_function
from eowc.semantics.rules.triggers import (
    CLOSED_WATERMARK,
    Convention,
    Watermark,
    match_is_final,
    time_is_complete,
)

#: A function of (partition rows, start of the match, position of the row, variables of the
#: rows start..position-1) to the value of one reference.
Resolver = Callable[[Sequence[Row], int, int, list[str]], Any]


def _pattern_nodes(expr: Expr, kinds: tuple[type, ...]) -> list[Any]:
    """The nodes of ``kinds`` in ``expr`` (plain column references count as ``PatternRef``)."""
    found: list[Any] = []

    def visit(node: Expr) -> Expr | None:
        if isinstance(node, ColumnRef):
            node = PatternRef(None, node.name)
        if isinstance(node, kinds):
            found.append(node)
            return node
        return None
    substitute(expr, visit)
    return found


@dataclass(frozen=True)
class Decision:
    """One search from row ``start``: ``labels`` the variable of each row of the match
    (None: no match starts at ``start``), ``reach`` the last row index the search read (the
    number of rows when it asked for one more than there are)."""

    start: int
    labels: tuple[str, ...] | None
    reach: int

    @property
    def end(self) -> int:
        """One past the match's last row."""
        assert self.labels is not None
        return self.start + len(self.labels)


@dataclass(frozen=True)
class CompiledPattern:
    """A MATCH_RECOGNIZE bound to its input schema."""

    node: MatchRecognize
    partition: Callable[[Row], Row]
    sort_key: Callable[[Row], Any]
    #: The ORDER BY value the trigger judges (the first ORDER BY column).
    order_value: Callable[[Row], Any]
    conditions: dict[str, Callable[[Sequence[Row], int, int, list[str]], bool]]
    measure_values: Callable[[Sequence[Row], Decision, int], tuple[Any, ...]]
    #: How many rows before a match's first row a condition can read (PREV's largest offset).
    back: int

    def search(self, rows: Sequence[Row], start: int) -> Decision:
        """The first match starting at ``rows[start]`` (greedy, with backtracking), or none;
        with the last row the search read."""
        terms, conditions = self.node.pattern, self.conditions
        count = len(terms)
        path: list[str] = []
        reach = start
        stack = [(0, 0, start)]  # (term, rows given to it, position): the paths still to try
        while stack:
            term_index, taken, position = stack.pop()
            del path[position - start:]
            if term_index == count:
                return Decision(start, tuple(path), reach)
            term = terms[term_index]
            if taken >= term.low:  # the less preferred choice: the next variable
                stack.append((term_index + 1, 0, position))
            if term.high is None or taken < term.high:  # preferred: one more row here
                reach = max(reach, position)
                condition = conditions.get(term.variable)
                if position < len(rows) and (condition is None or
                                             condition(rows, start, position, path)):
                    path.append(term.variable)
                    stack.append((term_index, taken + 1, position + 1))
        return Decision(start, None, reach)

    def needed_value(self, rows: Sequence[Row], decision: Decision) -> Any:
        """The ORDER BY value of the decision's reach, None past the arrived rows."""
        return self.order_value(rows[decision.reach]) if decision.reach < len(rows) else None

    def next_start(self, decision: Decision) -> int:
        """Where the search resumes after ``decision`` (AFTER MATCH SKIP)."""
        if decision.labels is None or self.node.skip == "to next row":
            return decision.start + 1
        return decision.end

    def decisions(self, rows: Sequence[Row], start: int = 0) -> Iterator[Decision]:
        """Every decision over one partition's sorted ``rows``, from ``start`` on."""
        while start < len(rows):
            decision = self.search(rows, start)
            yield decision
            start = self.next_start(decision)

    def result_row(self, key: Row, rows: Sequence[Row], decision: Decision, number: int) -> Row:
        """The output row of a match: the partition columns, then the measures."""
        return key + self.measure_values(rows, decision, number)


def _resolver(ref: PatternRef, defining: str, index: int) -> Resolver:
    variable, back = ref.variable, ref.back

    def resolve(rows: Sequence[Row], start: int, position: int, path: list[str]) -> Any:
        base: int | None = position
        if variable is not None and variable != defining:
            base = next((start + i for i in range(len(path) - 1, -1, -1)
                         if path[i] == variable), None)
        if base is None or base - back < 0:
            return None
        return rows[base - back][index]
    return resolve


def _condition(node: MatchRecognize, variable: str, expr: Expr
               ) -> Callable[[Sequence[Row], int, int, list[str]], bool]:
    schema = node.input.schema
    body, refs = pattern_references(expr)
    resolvers = []
    types = []
    for i, ref in enumerate(refs):
        if isinstance(ref, MatchAggregate):
            raise PlanError(f"DEFINE {variable}: {ref!r} is not supported in DEFINE (only the "
                            f"current row, var.col and PREV(...))")
        check_pattern_variable(node, ref.variable, f"DEFINE {variable}")
        index = column_index(schema, ref.column)
        resolvers.append(_resolver(ref, variable, index))
        types.append(Column(f"_ref{i}", schema[index].type))
    compiled = compile_expr(body, tuple(types))
    if compiled.type not in (SqlType.BOOLEAN, SqlType.NULL):
        raise PlanError(f"DEFINE {variable} must be a BOOLEAN condition, got "
                        f"{compiled.type.value}")
    evaluate = compiled.evaluate

    def holds(rows: Sequence[Row], start: int, position: int, path: list[str]) -> bool:
        return evaluate(tuple(r(rows, start, position, path) for r in resolvers)) is True
    return holds


def _measures(node: MatchRecognize, schema: Schema, tie: Callable[[Row], Any]
              ) -> Callable[[Sequence[Row], Decision, int], tuple[Any, ...]]:
    compiled = []
    for _, expr in node.measures:
        body, refs = pattern_references(expr)
        types = tuple(Column(f"_ref{i}", measure_type(node, r)) for i, r in enumerate(refs))
        compiled.append((compile_expr(body, types).evaluate, [_measure(r, schema, tie)
                                                               for r in refs]))

    def values(rows: Sequence[Row], decision: Decision, number: int) -> tuple[Any, ...]:
        assert decision.labels is not None
        members = rows[decision.start:decision.end]
        return tuple(evaluate(tuple(m(members, decision.labels, number) for m in parts))
                     for evaluate, parts in compiled)
    return values


def _measure(ref: Any, schema: Schema, tie: Callable[[Row], Any]
             ) -> Callable[[Sequence[Row], tuple[str, ...], int], Any]:
    if isinstance(ref, PatternRef):
        ref = MatchAggregate("last", ref.variable, ref.column)
    variable, function = ref.variable, ref.function
    if function == "match_number":
        return lambda members, labels, number: number

    def selected(members: Sequence[Row], labels: tuple[str, ...]) -> list[Row]:
        return [row for row, label in zip(members, labels, strict=True)
                if variable is None or label == variable]
    if function in ("first", "last"):
        index = column_index(schema, ref.column)
        at = 0 if function == "first" else -1

        def pick(members: Sequence[Row], labels: tuple[str, ...], number: int) -> Any:
            rows = selected(members, labels)
            return rows[at][index] if rows else None
        return pick
    argument = None if ref.column is None else ColumnRef(ref.column)
    fold = compile_aggregate(AggCall(function, argument), schema, None, tie)
    return lambda members, labels, number: aggregate_value(fold, selected(members, labels))


def compile_pattern(node: MatchRecognize, tie: Callable[[Row], Any]) -> CompiledPattern:
    """Bind ``node`` to its input schema; ``tie`` orders rows with equal ORDER BY values."""
    schema = node.input.schema
    _ = node.schema
    keys = [column_index(schema, k) for k in node.partition_by]
    order = order_key_function(tuple((ColumnRef(c), d) for c, d in node.order_by), schema)
    first = column_index(schema, node.order_by[0][0])
    conditions = {name: _condition(node, name, expr) for name, expr in node.define}
    back = max([r.back for _, e in node.define for r in _pattern_nodes(e, (PatternRef,))] + [0])
    return CompiledPattern(node, lambda row: tuple(row[i] for i in keys),
                           lambda row: (order(row), tie(row)), lambda row: row[first],
                           conditions, _measures(node, schema, tie), back)


def _partitions(compiled: CompiledPattern, rows: Sequence[Row]) -> dict[Row, list[Row]]:
    partitions: dict[Row, list[Row]] = {}
    for row in rows:
        partitions.setdefault(compiled.partition(row), []).append(row)
    return {key: sorted(members, key=compiled.sort_key) for key, members in partitions.items()}


def partition_matches(compiled: CompiledPattern, key: Row, rows: list[Row]) -> list[Row]:
    """One partition's result rows (Q over its rows, sorted), in match order."""
    out = []
    for decision in compiled.decisions(rows):
        if decision.labels is not None:
            out.append(compiled.result_row(key, rows, decision, len(out) + 1))
    return out


def pattern_results(compiled: CompiledPattern, rows: Sequence[Row]) -> list[Row]:
    """``Q(INPUT)``: every partition's matches, as output rows."""
    return [out for key, members in _partitions(compiled, rows).items()
            for out in partition_matches(compiled, key, members)]


def eowc_matches(compiled: CompiledPattern, rows: Sequence[Row], watermark: Watermark,
                 convention: Convention) -> list[Row]:
    """``Q'(INPUT, W)``: per partition, the matcher over its *complete prefix* (the rows whose
    ORDER BY value is complete at ``W``), keeping its decisions up to the first that asked
    for a row after that prefix (all of them at the end of the input)."""
    closed = watermark == CLOSED_WATERMARK
    out = []
    for key, members in _partitions(compiled, rows).items():
        prefix = [r for r in members
                  if closed or time_is_complete(compiled.order_value(r), watermark, convention)]
        number = 0
        for decision in compiled.decisions(prefix):
            if decision.reach >= len(prefix) and not closed:
                break
            if decision.labels is not None:
                number += 1
                out.append(compiled.result_row(key, prefix, decision, number))
    return out


class PatternPartition:
    """One partition in the streaming interpreter: its rows sorted (emitted rows dropped but
    for the ``back`` rows a condition may read before the next start), where the next search
    starts, and how many matches were emitted."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.keys: list[Any] = []
        self.start = 0
        self.matches = 0

    def add(self, compiled: CompiledPattern, row: Row) -> None:
        key = compiled.sort_key(row)
        at = bisect.bisect_right(self.keys, key)
        assert at >= self.start, "an admitted row sorts after every decided row"
        self.keys.insert(at, key)
        self.rows.insert(at, row)

    def pop_final(self, compiled: CompiledPattern, key: Row, watermark: Watermark,
                  convention: Convention) -> list[tuple[Any, Row]]:
        """The matches now final (:func:`match_is_final`), each with the sort key of its
        last row, in order; then the rows no later search reads are dropped."""
        done = []
        while self.start < len(self.rows):
            decision = compiled.search(self.rows, self.start)
            if not match_is_final(compiled.needed_value(self.rows, decision), watermark,
                                  convention):
                break
            if decision.labels is not None:
                self.matches += 1
                done.append((self.keys[decision.end - 1],
                             compiled.result_row(key, self.rows, decision, self.matches)))
            self.start = compiled.next_start(decision)
        cut = max(0, self.start - compiled.back)
        if cut:
            del self.rows[:cut], self.keys[:cut]
            self.start -= cut
        return done
