"""The SQL front end of MATCH_RECOGNIZE (the subset of :mod:`eowc.semantics.operators.pattern`): sqlglot's
:class:`sqlglot.exp.MatchRecognize` to a :class:`eowc.semantics.ir.plan.MatchRecognize`.

Read: PARTITION BY columns, ORDER BY columns, MEASURES (``expr AS name``, over FIRST/LAST,
``var.col``, COUNT(var.*)/COUNT(*), SUM/AVG/MIN/MAX(var.col), MATCH_NUMBER()), ONE ROW PER
MATCH, AFTER MATCH SKIP PAST LAST ROW / TO NEXT ROW, PATTERN as a concatenation of variables
with the greedy quantifiers ``+``, ``*``, ``?``, ``{n}``, ``{n,}``, ``{n,m}``, and DEFINE
conditions over the current row, ``var.col`` and ``PREV(x[, n])``. Everything else is refused
with a :class:`SqlError` that names the fragment. Pattern variables are case-insensitive
(kept upper case).
"""

from __future__ import annotations

import re

from sqlglot import exp

from eowc.semantics.errors import PlanError, SqlError
from eowc.semantics.frontend.expressions import DIALECT, Hook, translate
from eowc.semantics.ir.expr import Expr
from eowc.semantics.ir.plan import MatchAggregate, MatchRecognize, PatternRef, PatternTerm, Plan

#: One token of a PATTERN: a variable, a quantifier, or anything else (refused).
_PATTERN_TOKEN = re.compile(
    r"\s*(?:(?P<variable>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<quantifier>[+*?]|\{\s*\d*\s*(?:,\s*\d*\s*)?\})(?P<reluctant>\?)?"
    r"|(?P<other>\{-|-\}|.))")
_REFUSED = {"|": "alternation |", "(": "grouping ( )", ")": "grouping ( )",
            "^": "the anchor ^", "$": "the anchor $", "{-": "exclusion {- -}",
            "-}": "exclusion {- -}"}


def parse_pattern(text: str) -> tuple[PatternTerm, ...]:
    """``A B+ C{1,3}`` to its terms; a SqlError naming any fragment outside the subset."""
    terms: list[PatternTerm] = []
    position = 0
    quantifiable = False  # the previous token was a variable
    text = text.strip()
    while position < len(text):
        token = _PATTERN_TOKEN.match(text, position)
        assert token is not None
        position = token.end()
        if token["variable"]:
            if token["variable"].upper() == "PERMUTE":
                raise SqlError("PERMUTE in PATTERN is not supported", text)
            terms.append(PatternTerm(token["variable"].upper()))
            quantifiable = True
        elif token["quantifier"]:
            quantifier = token["quantifier"].strip()
            if not quantifiable:
                raise SqlError(f"quantifier {quantifier} must follow a pattern variable", text)
            quantifiable = False
            if token["reluctant"]:
                raise SqlError(f"the reluctant quantifier {quantifier}? is not supported "
                               f"(only greedy quantifiers)", text)
            terms[-1] = PatternTerm(terms[-1].variable, *_bounds(quantifier, text))
        elif token["other"].strip():
            other = token["other"]
            raise SqlError(f"{_REFUSED.get(other, repr(other))} in PATTERN is not supported "
                           f"(only a concatenation of variables with +, *, ?, {{n}}, {{n,}}, "
                           f"{{n,m}})", text)
    if not terms:
        raise SqlError("an empty PATTERN", text)
    return tuple(terms)


def _bounds(quantifier: str, text: str) -> tuple[int, int | None]:
    simple = {"+": (1, None), "*": (0, None), "?": (0, 1)}
    if quantifier in simple:
        return simple[quantifier]
    inside = quantifier[1:-1].replace(" ", "")
    low_text, comma, high_text = inside.partition(",")
    if not low_text:
        raise SqlError(f"the quantifier {quantifier} (no lower bound) is not supported: write "
                       f"{{0,m}}", text)
    low = int(low_text)
    high = low if not comma else (int(high_text) if high_text else None)
    if high is not None and (high < low or high == 0):
        raise SqlError(f"the quantifier {quantifier} matches no rows", text)
    return low, high


def _column_name(node: exp.Expression, what: str, fragment: str) -> str:
    if not isinstance(node, exp.Column) or node.table or isinstance(node.this, exp.Star):
        raise SqlError(f"{what} must be a plain column", fragment)
    return node.name


def _variable(node: exp.Column, variables: set[str], fragment: str) -> str | None:
    if not node.table:
        return None
    name = node.table.upper()
    if name not in variables:
        raise SqlError(f"{name} is not a variable of the PATTERN", fragment)
    return name


def _define_hook(variables: set[str]) -> Hook:
    def hook(node: exp.Expression) -> Expr | None:
        fragment = node.sql(dialect=DIALECT)
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise SqlError("var.* is only allowed in COUNT in MEASURES", fragment)
            return PatternRef(_variable(node, variables, fragment), node.name)
        if isinstance(node, exp.Anonymous) and node.name.upper() == "PREV":
            args = node.expressions
            if not 1 <= len(args) <= 2 or not isinstance(args[0], exp.Column):
                raise SqlError("expected PREV(column) or PREV(var.column [, n])", fragment)
            back = 1
            if len(args) == 2:
                if not (isinstance(args[1], exp.Literal) and not args[1].is_string
                        and args[1].name.isdigit()):
                    raise SqlError("PREV's offset must be a constant integer >= 0", fragment)
                back = int(args[1].name)
            inner = hook(args[0])
            assert isinstance(inner, PatternRef)
            return PatternRef(inner.variable, inner.column, back)
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("NEXT", "CLASSIFIER",
                                                                     "MATCH_NUMBER"):
            raise SqlError(f"{node.name.upper()}() is not supported in DEFINE", fragment)
        if isinstance(node, exp.First | exp.Last | exp.AggFunc):
            raise SqlError("aggregates and FIRST/LAST are not supported in DEFINE (only the "
                           "current row, var.col and PREV(...))", fragment)
        return None
    return hook


_MEASURE_FUNCTIONS: dict[type, str] = {exp.First: "first", exp.Last: "last", exp.Sum: "sum",
                                       exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}


def _measure_hook(variables: set[str]) -> Hook:
    def hook(node: exp.Expression) -> Expr | None:
        fragment = node.sql(dialect=DIALECT)
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise SqlError("var.* is only allowed in COUNT", fragment)
            return PatternRef(_variable(node, variables, fragment), node.name)
        if type(node) in _MEASURE_FUNCTIONS or isinstance(node, exp.Count):
            function = "count" if isinstance(node, exp.Count) else _MEASURE_FUNCTIONS[type(node)]
            argument = node.this
            if isinstance(argument, exp.Distinct) or node.expressions:
                raise SqlError(f"{function.upper()} takes one column (no DISTINCT) in MEASURES",
                               fragment)
            if function == "count" and isinstance(argument, exp.Star):
                return MatchAggregate("count")
            if not isinstance(argument, exp.Column):
                raise SqlError(f"{function.upper()} in MEASURES takes var.column (or column)",
                               fragment)
            variable = _variable(argument, variables, fragment)
            if isinstance(argument.this, exp.Star):
                if function != "count":
                    raise SqlError("var.* is only allowed in COUNT", fragment)
                return MatchAggregate("count", variable)
            return MatchAggregate(function, variable, argument.name)
        if isinstance(node, exp.Anonymous) and node.name.upper() == "MATCH_NUMBER":
            if node.expressions:
                raise SqlError("MATCH_NUMBER() takes no argument", fragment)
            return MatchAggregate("match_number")
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("PREV", "NEXT",
                                                                     "CLASSIFIER"):
            raise SqlError(f"{node.name.upper()}() is not supported in MEASURES", fragment)
        if isinstance(node, exp.AggFunc):
            raise SqlError("only COUNT, SUM, AVG, MIN, MAX, FIRST and LAST are supported in "
                           "MEASURES", fragment)
        return None
    return hook


def _words(node: exp.Expression | None) -> str:
    return "" if node is None else " ".join(node.sql(dialect=DIALECT).upper().split())


def _fragment(node: exp.MatchRecognize) -> str:
    """The clause as SQL text for messages (sqlglot cannot print it without DEFINE)."""
    copy = node.copy()
    if copy.args.get("define") is None:
        copy.set("define", [])
    return copy.sql(dialect=DIALECT)


def match_recognize(plan: Plan, node: exp.MatchRecognize) -> MatchRecognize:
    """The plan node of ``node`` over ``plan``."""
    fragment = _fragment(node)
    rows = _words(node.args.get("rows"))
    if rows and rows != "ONE ROW PER MATCH":
        raise SqlError(f"{rows} is not supported (only ONE ROW PER MATCH)", rows)
    after = _words(node.args.get("after"))
    skips = {"": "past last row", "AFTER MATCH SKIP PAST LAST ROW": "past last row",
             "AFTER MATCH SKIP TO NEXT ROW": "to next row"}
    if after not in skips:
        raise SqlError(f"{after} is not supported (only AFTER MATCH SKIP PAST LAST ROW and "
                       f"SKIP TO NEXT ROW)", after)
    pattern_node = node.args.get("pattern")
    if pattern_node is None:
        raise SqlError("MATCH_RECOGNIZE needs a PATTERN", fragment)
    pattern = parse_pattern(pattern_node.name)
    variables = {t.variable for t in pattern}
    partition = tuple(_column_name(p, "a PARTITION BY item", p.sql(dialect=DIALECT))
                      for p in node.args.get("partition_by") or [])
    order_node = node.args.get("order")
    if order_node is None:
        raise SqlError("MATCH_RECOGNIZE needs ORDER BY", fragment)
    order = []
    for item in order_node.expressions:
        order.append((_column_name(item.this, "an ORDER BY item", item.sql(dialect=DIALECT)),
                      bool(item.args.get("desc"))))
    measures = []
    for measure in node.args.get("measures") or []:
        frame = measure.args.get("window_frame")
        if frame and (frame if isinstance(frame, str) else _words(frame)).upper() == "RUNNING":
            raise SqlError("RUNNING measures are not supported (ONE ROW PER MATCH reads the "
                           "final values)", measure.sql(dialect=DIALECT))
        item = measure.this
        if not isinstance(item, exp.Alias):
            raise SqlError("a measure needs a name: <expression> AS <name>",
                           item.sql(dialect=DIALECT))
        measures.append((item.alias, translate(item.this, _measure_hook(variables))))
    define = []
    for item in node.args.get("define") or []:
        name = item.alias.upper()
        if name not in variables:
            raise SqlError(f"DEFINE {name}: not a variable of the PATTERN",
                           item.sql(dialect=DIALECT))
        define.append((name, translate(item.this, _define_hook(variables))))
    try:
        result = MatchRecognize(plan, partition, tuple(order), tuple(measures), pattern,
                                tuple(define), skips[after])
        _ = result.schema
    except PlanError as error:
        raise SqlError(str(error), fragment) from None
    return result
