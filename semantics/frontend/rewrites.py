"""Tree-to-tree rewrites of the SQL that RisingWave and Flink users write into the forms the
planner reads, in sqlglot's optimizer style: each rule is one small function from a syntax
tree to a syntax tree, :data:`RULES` lists them in the order they run, and :func:`rewrite`
applies them all to one statement before it is planned. A rule leaves every tree it does not
recognize as it was; a form it recognizes but cannot express is refused by name
(docs/sql/rewrites.md has each form, how each engine reads it and what eowc reads it as).

* :func:`lateral_unnest`: ``FROM t CROSS JOIN unnest(t.arr) AS u(x)`` as ``unnest(arr) AS x``
  in the SELECT list of a subquery over ``t`` (other forms of unnest in FROM are refused);
* :func:`inline_ctes`: ``WITH name AS (query) ...`` reads each name as its query, written
  as a subquery where the name is used;
* :func:`named_windows`: ``OVER w ... WINDOW w AS (...)`` and ``OVER (w ROWS ...)``;
* :func:`comma_joins`: ``FROM a, b WHERE <condition>`` as ``a JOIN b ON`` the conjuncts of
  the condition that relate b to the relations before it (an interval or window join
  written in WHERE is the same plan as the one written with ON);
* :func:`legacy_group_windows`: Flink's ``GROUP BY TUMBLE(ts, size)`` (HOP, SESSION) with
  ``TUMBLE_START``/``TUMBLE_END``/``TUMBLE_ROWTIME`` as the window table function;
* :func:`top_n_conditions`: the rank conditions of a TopN (``rn < N + 1``, ``N >= rn``,
  ``rn = 1``, ``rn BETWEEN 1 AND N``, with other conditions) as ``rn <= N``;
* :func:`subquery_joins`: ``x [NOT] IN (SELECT y FROM r WHERE c)`` and ``[NOT] EXISTS (...)``
  in WHERE as a LEFT SEMI (ANTI) JOIN of r ON c (Flink's window semi/anti joins).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from eowc.semantics.errors import SqlError
from eowc.semantics.ir.plan import AGGREGATE_ALIASES, AGGREGATE_FUNCTIONS

DIALECTS = ("risingwave", "flink")

Rule = Callable[[exp.Expression], exp.Expression]


def _text(node: exp.Expression) -> str:
    return node.sql(dialect="risingwave")


class Refused(SqlError):
    """A form a rule recognizes but cannot read, refused by name; ``node`` is where it is in
    the statement (the script reader gives its line and column)."""

    def __init__(self, message: str, node: exp.Expression, fragment: str | None = None) -> None:
        super().__init__(message, fragment if fragment is not None else _text(node))
        self.node = node


def _bottom_up(tree: exp.Expression, kind: type[exp.Expression],
               rule: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """``rule`` applied to every node of ``kind`` in ``tree``, the innermost first (a rule
    reads the queries inside the one it rewrites as already rewritten). ``tree`` is changed in
    place: :func:`rewrite` works on a copy of the statement."""
    for node in reversed(list(tree.find_all(kind, bfs=False))):
        rewritten = rule(node)
        if rewritten is node:
            continue
        if node is tree:
            tree = rewritten
        else:
            node.replace(rewritten)
    return tree


def _selects(rule: Callable[[exp.Select], exp.Expression]) -> Rule:
    """``rule`` applied to every SELECT of a tree (a subquery, a union's sides, a CTE)."""

    def apply(tree: exp.Expression) -> exp.Expression:
        return _bottom_up(tree, exp.Select, rule)  # type: ignore[arg-type]

    apply.__name__, apply.__doc__ = rule.__name__, rule.__doc__
    return apply


def _conjuncts(condition: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition (none for no condition)."""
    if condition is None:
        return []
    while isinstance(condition, exp.Paren) and isinstance(condition.this, exp.And):
        condition = condition.this
    if isinstance(condition, exp.And):
        return [part for side in (condition.this, condition.expression)
                for part in _conjuncts(side)]
    return [condition]


def _and(parts: list[exp.Expression]) -> exp.Expression | None:
    return exp.and_(*parts, copy=False) if parts else None


def _from_key(tree: exp.Select) -> str:
    return "from_" if "from_" in tree.arg_types else "from"


def _with_key(tree: exp.Expression) -> str:
    return "with_" if "with_" in tree.arg_types else "with"


# ---------------------------------------------------------------------------------------------
# unnest in FROM


@_selects
def lateral_unnest(tree: exp.Select) -> exp.Expression:
    """``FROM r CROSS JOIN unnest(r.arr) AS u(x)`` (Flink's ``CROSS JOIN UNNEST(arr) AS u (x)``,
    PostgreSQL's ``FROM r, unnest(r.arr) AS u(x)``) as ``FROM (SELECT *, unnest(arr) AS x
    FROM r) AS r``: each row of ``r`` once per element of its array, the element as ``x``
    (named ``u`` without a column list), no row for an empty or NULL array, as the lateral
    join does. ``u.x`` reads ``x``. ``WITH ORDINALITY AS u(x, n)`` adds ``unnest(
    generate_series(1, cardinality(arr))) AS n``: zipped with the elements, each one's position
    from 1. unnest in FROM otherwise (alone, beside a join, with several arrays) is refused by
    name."""
    joins = tree.args.get("joins") or []
    from_ = tree.args.get(_from_key(tree))
    if from_ is not None and isinstance(from_.this, exp.Unnest):
        raise Refused("unnest in FROM without a table is not supported: write SELECT "
                      "unnest(arr) FROM t, or FROM t CROSS JOIN unnest(t.arr) AS u(x)", from_.this)
    lateral = [j for j in joins if isinstance(j.this, exp.Unnest)]
    if not lateral:
        return tree
    join = lateral[0]
    unnest = join.this
    if len(joins) > 1 or not isinstance(from_.this, exp.Table | exp.Subquery) or \
            isinstance(from_.this.this, exp.Anonymous) or join.args.get("on") or \
            (join.kind or "").upper() not in ("", "CROSS") or join.side:
        raise Refused("unnest in FROM is supported only as FROM t CROSS JOIN unnest(t.arr) AS "
                      "u(x) (one table, nothing else joined): write unnest(arr) in the SELECT "
                      "list of a subquery", unnest)
    if len(unnest.expressions) != 1:
        raise Refused("unnest of several arrays in FROM is not supported: write unnest(a), "
                      "unnest(b) in the SELECT list", unnest)
    alias = unnest.args.get("alias")
    columns = alias.columns if alias is not None else []
    # WITH ORDINALITY: sqlglot holds its column's name here (True: unnamed, PostgreSQL's
    # "ordinality"; False: none)
    ordinality = unnest.args.get("offset")
    if ordinality is True:
        ordinality = exp.to_identifier("ordinality")
    if len(columns) > 1:
        raise Refused("unnest of one array gives one column (and its ordinality): name them AS "
                      "u(x) or AS u(x, n) WITH ORDINALITY", unnest)
    name = columns[0].name if columns else alias.name if alias is not None and alias.name \
        else "unnest"
    relation = from_.this.copy()
    table = relation.alias_or_name
    array = unnest.expressions[0]
    items = [exp.alias_(exp.Explode(this=array.copy()), name)]
    if isinstance(ordinality, exp.Identifier):  # each element's position, from 1: zipped with the elements
        positions = exp.GenerateSeries(start=exp.Literal.number(1), end=exp.Anonymous(
            this="cardinality", expressions=[array.copy()]))
        items.append(exp.alias_(exp.Explode(this=positions), ordinality.name))
    inner = exp.select(exp.Star(), *items).from_(relation)
    tree = tree.copy()
    tree.set("joins", None)
    tree.set(_from_key(tree), exp.From(this=exp.Subquery(this=inner, alias=exp.TableAlias(
        this=exp.to_identifier(table)))))
    called = alias.name if alias is not None else None
    for column in list(tree.find_all(exp.Column)):
        if called and column.table == called:
            column.set("table", None)
    return tree


# ---------------------------------------------------------------------------------------------
# WITH


def _inlined(node: exp.Expression, ctes: dict[str, exp.Expression]) -> exp.Expression:
    """``node`` with every table reference to a name of ``ctes`` replaced by that query, as a
    subquery called by the reference's alias (or the name). A table function's table argument
    (``TUMBLE(name, ts, ...)``) names a relation too."""

    def replace(reference: exp.Expression) -> exp.Expression:
        if isinstance(reference, exp.Table) and isinstance(reference.this, exp.Identifier) \
                and not reference.args.get("db") and reference.name in ctes:
            alias = reference.alias or reference.name
            return exp.Subquery(this=ctes[reference.name].copy(),
                                alias=exp.TableAlias(this=exp.to_identifier(alias)))
        if isinstance(reference, exp.Column) and isinstance(reference.parent, exp.Anonymous) \
                and reference.arg_key == "expressions" and reference.parent.expressions[0] is reference \
                and isinstance(reference.parent.parent, exp.Table) and not reference.table \
                and reference.name in ctes:
            return exp.Subquery(this=ctes[reference.name].copy())
        return reference

    return node.transform(replace)


def inline_ctes(tree: exp.Expression) -> exp.Expression:
    """``WITH a AS (q1), b AS (q2) query``: ``query`` with each use of ``a`` read as ``(q1)``
    and of ``b`` as ``(q2)``; a CTE may read the ones before it (RisingWave and Flink both
    read a non-recursive CTE as its query written in place). ``WITH RECURSIVE`` is refused."""

    def inline(node: exp.Expression) -> exp.Expression:
        with_ = node.args.get(_with_key(node)) if isinstance(node, exp.Query) else None
        if not isinstance(with_, exp.With):
            return node
        if with_.args.get("recursive"):
            raise Refused("WITH RECURSIVE is not supported", with_)
        ctes: dict[str, exp.Expression] = {}
        for cte in with_.expressions:
            if cte.args.get("alias") and cte.args["alias"].columns:
                raise Refused(f"a column list after the CTE name {cte.alias} is not supported: "
                              f"name the columns in its SELECT", cte)
            ctes[cte.alias] = _inlined(cte.this, ctes)
        body = node.copy()
        body.set(_with_key(body), None)
        return _inlined(body, ctes)

    return _bottom_up(tree, exp.Query, inline)


# ---------------------------------------------------------------------------------------------
# WINDOW w AS (...)


def _named(window: exp.Window, definitions: dict[str, exp.Window]) -> exp.Window:
    """``f() OVER w`` or ``f() OVER (w ORDER BY ... ROWS ...)`` with the definition of ``w``
    written in: a reference may add ORDER BY when ``w`` has none and a frame when ``w`` has
    none, never PARTITION BY (SQL's rule for refining a named window, PostgreSQL's and so
    RisingWave's)."""
    name = window.args["alias"].name
    if name not in definitions:
        known = ", ".join(definitions) or "none"
        raise Refused(f"window {name} is not defined (the WINDOW clause defines: {known})",
                      window)
    definition = definitions[name]
    if window.args.get("partition_by"):
        raise Refused(f"OVER ({name} PARTITION BY ...) is not supported: a reference to window "
                      f"{name} cannot add PARTITION BY", window)
    for part, words in (("order", "ORDER BY"), ("spec", "a frame")):
        if window.args.get(part) and definition.args.get(part):
            raise Refused(f"window {name} already has {words}: OVER ({name} ...) cannot "
                          f"give another", window)
    named = exp.Window(this=window.this.copy(), over=window.args.get("over"))
    for part in ("partition_by", "order", "spec"):
        value = window.args.get(part) or definition.args.get(part)
        if value:
            named.set(part, [v.copy() for v in value] if isinstance(value, list) else value.copy())
    return named


@_selects
def named_windows(tree: exp.Select) -> exp.Expression:
    """``SELECT f() OVER w ... WINDOW w AS (PARTITION BY k ORDER BY ts ROWS ...)``: each
    ``OVER w`` (and ``OVER (w ...)``) with the definition of ``w`` written in. A definition
    may name an earlier one (``WINDOW w2 AS (w1 ROWS ...)``)."""
    windows = tree.args.get("windows")
    if not windows:
        return tree
    definitions: dict[str, exp.Window] = {}
    for definition in windows:
        spec = definition.copy()
        if spec.args.get("alias"):  # WINDOW w2 AS (w1 ...)
            spec = _named(spec, definitions)
        definitions[definition.this.name] = spec
    tree = tree.copy()
    tree.set("windows", None)
    return tree.transform(lambda node: _named(node, definitions)
                          if isinstance(node, exp.Window) and node.args.get("alias") else node)


# ---------------------------------------------------------------------------------------------
# FROM a, b WHERE ...


def _is_comma_join(join: exp.Join) -> bool:
    """``FROM a, b`` (sqlglot reads ``a JOIN b`` without ON the same way)."""
    return not any(join.args.get(k) for k in ("on", "using", "kind", "side", "method"))


@_selects
def comma_joins(tree: exp.Select) -> exp.Expression:
    """``FROM a, b, c WHERE p1 AND p2 AND ...``: each comma-joined relation is inner-joined ON
    the conjuncts of WHERE that name it and only relations before it (by their qualifiers,
    ``a.k = b.k``), in their order; the other conjuncts stay in WHERE. An inner join keeps
    the same rows whether a conjunct is in ON or in WHERE, so this is the query's meaning;
    it makes ``FROM a, b WHERE a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL ... AND b.ts`` the
    interval join that ``a JOIN b ON`` the same conditions is. A relation that no conjunct
    relates to the ones before it would be a cross join, which is refused."""
    joins = tree.args.get("joins") or []
    if not any(_is_comma_join(j) for j in joins):
        return tree
    tree = tree.copy()
    joins = tree.args["joins"]
    aliases = [tree.args[_from_key(tree)].this.alias_or_name, *(j.this.alias_or_name for j in joins)]
    where = tree.args.get("where")
    kept: list[exp.Expression] = []
    moved: dict[int, list[exp.Expression]] = {}
    unqualified = False
    for conjunct in _conjuncts(where.this if where is not None else None):
        columns = list(conjunct.find_all(exp.Column))
        unqualified |= any(not c.table for c in columns)
        named = {aliases.index(c.table) for c in columns if c.table in aliases}
        last = max(named, default=0)
        if len(named) >= 2 and _is_comma_join(joins[last - 1]):
            moved.setdefault(last, []).append(conjunct)
        else:
            kept.append(conjunct)
    for position, join in enumerate(joins, start=1):
        if not _is_comma_join(join):
            continue
        if position not in moved:
            hint = " (qualify its columns: a.k = b.k)" if unqualified else ""
            before = ", ".join(aliases[:position])
            raise Refused(f"a join needs an ON condition: {aliases[position]} is joined by a "
                          f"comma, but no condition in WHERE relates it to {before}{hint} (a "
                          f"cross join is not supported)", join.this)
        join.set("on", _and(moved[position]))
    tree.set("where", exp.Where(this=_and(kept)) if kept else None)
    return tree


# ---------------------------------------------------------------------------------------------
# GROUP BY TUMBLE(ts, size)

#: Flink's legacy group window functions: the window table function each is, and its arity
#: (the time attribute, then the sizes: TUMBLE(ts, size), HOP(ts, slide, size), SESSION(ts, gap)).
_GROUP_WINDOWS = {"TUMBLE": ("TUMBLE", 2), "HOP": ("HOP", 3), "SESSION": ("SESSION", 2)}
#: The auxiliary functions of a legacy group window and the window column each reads.
_AUXILIARY = {"START": "window_start", "END": "window_end", "ROWTIME": "window_time"}


def _group_window(tree: exp.Select) -> exp.Anonymous | None:
    group = tree.args.get("group")
    calls = [g for g in (group.expressions if group else [])
             if isinstance(g, exp.Anonymous) and g.name.upper() in _GROUP_WINDOWS]
    if len(calls) > 1:
        raise Refused("GROUP BY has more than one group window", calls[1],
                      ", ".join(map(_text, calls)))
    return calls[0] if calls else None


def _auxiliary(node: exp.Expression, family: str) -> str | None:
    """``window_start`` for ``TUMBLE_START(...)`` (``family`` TUMBLE), etc., else None."""
    if not isinstance(node, exp.Anonymous):
        return None
    name = node.name.upper()
    if name.startswith(family + "_"):
        suffix = name[len(family) + 1:]
        if suffix == "PROCTIME":
            raise Refused(f"{name} is not supported: eowc has no processing time", node)
        return _AUXILIARY.get(suffix)
    return None


@_selects
def legacy_group_windows(tree: exp.Select) -> exp.Expression:
    """Flink's legacy group windows, ``SELECT TUMBLE_START(ts, INTERVAL '1' MINUTE), k, ...
    FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), k``, as the window table function:
    ``FROM TUMBLE(t, ts, size) GROUP BY window_start, window_end, k``, each
    ``TUMBLE_START``/``TUMBLE_END`` read as ``window_start``/``window_end`` and
    ``TUMBLE_ROWTIME`` as ``window_time`` (``window_end - 1 ms``, a time attribute; it joins
    the GROUP BY when used). ``HOP(ts, slide, size)`` is ``HOP(t, ts, slide, size)`` (the
    same argument order); ``SESSION(ts, gap)`` is a session window per value of the other
    GROUP BY keys (Flink's legacy sessions are per group), so those keys must be columns."""
    call = _group_window(tree)
    if call is None:
        return tree
    kind = call.name.upper()
    function, arity = _GROUP_WINDOWS[kind]
    args = call.expressions
    if len(args) != arity or not isinstance(args[0], exp.Column):
        shape = {"TUMBLE": "TUMBLE(time_column, size)", "HOP": "HOP(time_column, slide, size)"
                 }.get(kind, "SESSION(time_column, gap)")
        raise Refused(f"expected GROUP BY {shape}", call)
    from_ = tree.args.get(_from_key(tree))
    relation = from_.this if from_ is not None else None
    if tree.args.get("joins") or not isinstance(relation, exp.Table | exp.Subquery) or (
            isinstance(relation, exp.Table) and not isinstance(relation.this, exp.Identifier)):
        raise Refused(f"GROUP BY {kind}(...) reads one table or subquery: window a join in a "
                      f"subquery first", call)
    tree = tree.copy()
    group = tree.args["group"]
    keys = [g for g in group.expressions if not (isinstance(g, exp.Anonymous)
                                                  and g.name.upper() in _GROUP_WINDOWS)]
    table = relation.copy() if isinstance(relation, exp.Subquery) else exp.to_table(relation.name)
    if isinstance(table, exp.Subquery):
        table.set("alias", None)
    partition: list[exp.Expression] = []
    if function == "SESSION":
        if not all(isinstance(k, exp.Column) for k in keys):
            raise Refused("GROUP BY SESSION(...) with an expression key is not supported: group "
                          "by columns", group)
        partition = [exp.column(k.name) for k in keys]
    window = exp.Table(this=exp.Anonymous(
        this=function, expressions=[table, exp.column(args[0].name),
                                    *(a.copy() for a in args[1:]), *partition]))
    if relation.alias:
        window.set("alias", exp.TableAlias(this=exp.to_identifier(relation.alias)))
    used: set[str] = set()

    def auxiliary(node: exp.Expression) -> exp.Expression:
        column = _auxiliary(node, kind)
        if column is None:
            return node
        if [_text(a) for a in node.expressions] != [_text(a) for a in args]:
            raise Refused(f"{node.name}(...) must repeat the arguments of GROUP BY {kind}(...)",
                          node)
        used.add(column)
        return exp.column(column)

    for part in ("expressions", "having", "order", "qualify"):
        value = tree.args.get(part)
        if isinstance(value, list):
            tree.set(part, [v.transform(auxiliary) for v in value])
        elif value is not None:
            tree.set(part, value.transform(auxiliary))
    windows = [c for c in ("window_start", "window_end", "window_time")
               if c != "window_time" or c in used]
    group.set("expressions", [*map(exp.column, windows), *keys])
    tree.set(_from_key(tree), exp.From(this=window))
    return tree


# ---------------------------------------------------------------------------------------------
# GROUP BY GROUPING SETS / ROLLUP / CUBE

#: The columns of a window table function's rows that make an aggregate a window aggregate.
_WINDOW_BOUNDS = ("window_start", "window_end")
#: The clauses that order a query's result (a union's, not one of its sides').
_ORDERING = ("order", "limit", "offset")


def _set_items(node: exp.Expression) -> list[exp.Expression]:
    """The keys of one written grouping set: ``(a, b)`` two, ``(a)`` and ``a`` one, ``()`` none."""
    if isinstance(node, exp.Tuple):
        return list(node.expressions)
    if isinstance(node, exp.Paren):
        return [node.this]
    return [node]


def _sets_of(node: exp.Expression) -> list[list[exp.Expression]]:
    """The grouping sets one element of a GROUP BY list stands for, in SQL's order: a key is
    the one set of itself; ``ROLLUP (a, b)`` is ``(a, b), (a), ()``; ``CUBE (a, b)`` is every
    subset, ``(a, b), (a), (b), ()``; ``GROUPING SETS (s1, s2, ...)`` is the sets its items
    stand for, one after the other (an item may be a ROLLUP or a CUBE)."""
    if isinstance(node, exp.GroupingSets):
        return [s for item in node.expressions for s in _sets_of(item)]
    if isinstance(node, exp.Rollup):
        parts = [_set_items(e) for e in node.expressions]
        return [[k for part in parts[:n] for k in part] for n in range(len(parts), -1, -1)]
    if isinstance(node, exp.Cube):
        parts = [_set_items(e) for e in node.expressions]
        count = len(parts)
        return [[k for i, part in enumerate(parts) if mask >> (count - 1 - i) & 1 for k in part]
                for mask in range(2 ** count - 1, -1, -1)]
    return [_set_items(node)]


def _same_key(a: exp.Expression, b: exp.Expression) -> bool:
    """Whether two written keys are the same one (``t.k`` and ``k`` are)."""
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        return a.name == b.name and (not a.table or not b.table or a.table == b.table)
    return _text(a) == _text(b)


def _grouping_sets(group: exp.Group) -> list[list[exp.Expression]]:
    """The grouping sets of a GROUP BY list: the cross product of its elements' sets (``GROUP
    BY w, ROLLUP (a)`` is ``(w, a), (w)``), each set without repeated keys."""
    sets: list[list[exp.Expression]] = [[]]
    for element in group.expressions:
        sets = [left + right for left in sets for right in _sets_of(element)]
    unique: list[list[exp.Expression]] = []
    for keys in sets:
        kept: list[exp.Expression] = []
        for key in keys:
            if not any(_same_key(key, k) for k in kept):
                kept.append(key)
        unique.append(kept)
    return unique


def _is_aggregate_call(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        return AGGREGATE_ALIASES.get(name, name) in AGGREGATE_FUNCTIONS
    return isinstance(node, exp.AggFunc | exp.WithinGroup)


def _key_value(key: exp.Expression, items: list[exp.Expression]) -> exp.Expression:
    """What a GROUP BY key stands for in the select list: ``GROUP BY 2`` the second item,
    ``GROUP BY s`` the item ``... AS s`` (unless that item is the column ``s`` itself)."""
    if isinstance(key, exp.Literal) and not key.is_string and key.name.isdigit() \
            and 1 <= int(key.name) <= len(items):
        item = items[int(key.name) - 1]
        return item.this if isinstance(item, exp.Alias) else item
    if isinstance(key, exp.Column) and not key.table:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias == key.name and \
                    not (isinstance(item.this, exp.Column) and item.this.name == key.name):
                return item.this
    return key


def _grouping_bits(call: exp.Expression, grouped: list[exp.Expression],
                   keys: list[exp.Expression], items: list[exp.Expression]) -> exp.Expression:
    """``GROUPING(a, b)`` (and ``GROUPING_ID``) in the set ``grouped``: the bits of its
    arguments, the first the most significant, each 1 when that key is not grouped (the row
    aggregates over every value of it)."""
    value = 0
    for argument in call.expressions:
        argument = _key_value(argument, items)
        if not any(_same_key(argument, k) for k in keys):
            raise Refused(f"{call.key.upper()}({_text(argument)}): {_text(argument)} is not a "
                          f"GROUP BY key", call)
        value = value * 2 + (not any(_same_key(argument, k) for k in grouped))
    return exp.Literal.number(value)


def _in_set(node: exp.Expression, grouped: list[exp.Expression], nulled: list[exp.Expression],
            keys: list[exp.Expression], items: list[exp.Expression]) -> exp.Expression:
    """``node`` (a select item or HAVING) as the query of one grouping set reads it: each key
    not in the set is NULL there (outside aggregate calls, whose arguments are the rows'),
    each ``GROUPING(...)`` its constant."""
    if isinstance(node, exp.Grouping | exp.GroupingId):
        return _grouping_bits(node, grouped, keys, items)
    if _is_aggregate_call(node) or isinstance(node, exp.Window):
        return node.copy()
    if not isinstance(node, exp.Identifier | exp.DataType) and \
            any(_same_key(node, k) for k in nulled):
        return exp.Null()
    copy = node.copy()
    for name, value in node.args.items():
        if isinstance(value, exp.Expression):
            copy.set(name, _in_set(value, grouped, nulled, keys, items))
        elif isinstance(value, list):
            copy.set(name, [_in_set(v, grouped, nulled, keys, items)
                            if isinstance(v, exp.Expression) else v for v in value])
    return copy


def _named_as_written(item: exp.Expression, written: exp.Expression) -> exp.Expression:
    """A select item read in one grouping set, under the name the written item gives its
    column (a key read as NULL, a GROUPING(...) read as a number, is still called so)."""
    if item is written or isinstance(written, exp.Alias) or type(item) is type(written):
        return item
    name = written.name if isinstance(written, exp.Column) else written.sql_name().lower()
    return exp.alias_(item, name)


def _refuse_window_sets(sets: list[list[exp.Expression]], group: exp.Group) -> None:
    """A window aggregate groups every set by its window: ``window_start`` and ``window_end``
    in one set are in all (Flink requires both in GROUP BY, outside GROUPING SETS)."""
    for bound in _WINDOW_BOUNDS:
        holding = [any(isinstance(k, exp.Column) and k.name == bound for k in s) for s in sets]
        if any(holding) and not all(holding):
            missing = sets[holding.index(False)]
            written = "(" + ", ".join(map(_text, missing)) + ")"
            raise Refused(f"GROUPING SETS, ROLLUP and CUBE on a window aggregate: every grouping "
                          f"set must hold window_start and window_end (Flink requires both in "
                          f"GROUP BY, outside GROUPING SETS), but the set {written} has no "
                          f"{bound}", group)


def _one_set(tree: exp.Select, grouped: list[exp.Expression],
             keys: list[exp.Expression]) -> exp.Select:
    """The query of one grouping set: ``tree`` grouped by ``grouped``, the other keys NULL."""
    items = tree.expressions
    nulled = [_key_value(k, items) for k in keys if not any(_same_key(k, g) for g in grouped)]
    branch = tree.copy()
    branch.set("expressions", [_named_as_written(_in_set(item, grouped, nulled, keys, items), item)
                               for item in items])
    having = tree.args.get("having")
    if having is not None:
        branch.set("having", exp.Having(this=_in_set(having.this, grouped, nulled, keys, items)))
    branch.set("group", exp.Group(expressions=[k.copy() for k in grouped]) if grouped else None)
    return branch


@_selects
def grouping_sets(tree: exp.Select) -> exp.Expression:
    """``GROUP BY w, GROUPING SETS ((a), ())``, ``ROLLUP (a, b)`` and ``CUBE (a, b)`` as the
    ``UNION ALL`` of one aggregate per grouping set (SQL's definition), each grouped by its
    set, the keys of the other sets NULL in its rows (outside aggregate calls), and
    ``GROUPING(k, ...)``/``GROUPING_ID(k, ...)`` the constant bits of its set (1: k is not
    grouped). A set repeated gives its rows again. HAVING filters each set's groups; ORDER BY
    and LIMIT order the union. A window aggregate (one grouped by ``window_start`` and
    ``window_end``) must hold both in every set, as Flink requires: each set is then a window
    aggregate of its own, emitted on window close as one is. ``GROUPING(...)`` in a query
    with a plain GROUP BY is its one set's constant."""
    group = tree.args.get("group")
    calls = [n for n in tree.find_all(exp.Grouping, exp.GroupingId) if _owner(n) is tree]
    if group is None:
        if calls:
            raise Refused(f"{calls[0].key.upper()}(...) needs a GROUP BY", calls[0])
        return tree
    if not any(isinstance(e, exp.GroupingSets | exp.Rollup | exp.Cube) for e in group.expressions):
        if not calls:
            return tree
        keys = list(group.expressions)
        return _one_set(tree, keys, keys)
    sets = _grouping_sets(group)
    _refuse_window_sets(sets, group)
    keys: list[exp.Expression] = []
    for key in (k for s in sets for k in s):
        if not any(_same_key(key, k) for k in keys):
            keys.append(key)
    branches = [_one_set(tree, s, keys) for s in sets]
    if len(branches) == 1:
        return branches[0]
    for branch in branches:
        for clause in _ORDERING:
            branch.set(clause, None)
    union: exp.Expression = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=False, copy=False)
    for clause in _ORDERING:
        if tree.args.get(clause) is not None:
            union.set(clause, tree.args[clause].copy())
    return union


def _owner(node: exp.Expression) -> exp.Select | None:
    """The SELECT a node belongs to (the innermost one around it)."""
    return node.find_ancestor(exp.Select)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# TopN: WHERE rn <= N


def _row_numbers(tree: exp.Select) -> set[str]:
    """The names the FROM subquery of ``tree`` gives its ``ROW_NUMBER() OVER (...)``."""
    from_ = tree.args.get(_from_key(tree))
    if from_ is None or not isinstance(from_.this, exp.Subquery) or tree.args.get("joins") \
            or not isinstance(from_.this.this, exp.Select):
        return set()
    return {item.alias for item in from_.this.this.expressions if isinstance(item, exp.Alias)
            and isinstance(item.this, exp.Window) and isinstance(item.this.this, exp.RowNumber)}


def _constant(node: exp.Expression) -> int | None:
    """The value of a whole-number constant (``3``, ``2 + 1``, ``(5 - 1)``), else None."""
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit():
        return int(node.name)
    if isinstance(node, exp.Neg):
        value = _constant(node.this)
        return None if value is None else -value
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        left, right = _constant(node.this), _constant(node.expression)
        if left is None or right is None:
            return None
        return {exp.Add: left + right, exp.Sub: left - right, exp.Mul: left * right}[type(node)]
    return None


#: A comparison read from the other side: ``3 >= rn`` is ``rn <= 3``.
_FLIPPED = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT, exp.EQ: exp.EQ}


def _rank_limit(conjunct: exp.Expression, ranks: set[str]) -> tuple[str, int] | None:
    """``(rn, N)`` when ``conjunct`` keeps exactly the rows with ``rn <= N``: ``rn <= N``,
    ``rn < N + 1``, ``N >= rn``, ``rn = 1``, ``rn BETWEEN 1 AND N``; else None."""
    if isinstance(conjunct, exp.Between):
        low, high = _constant(conjunct.args["low"]), _constant(conjunct.args["high"])
        if isinstance(conjunct.this, exp.Column) and conjunct.this.name in ranks \
                and low is not None and low <= 1 and high is not None:
            return conjunct.this.name, high
        return None
    if type(conjunct) not in _FLIPPED:
        return None
    op, column, value = type(conjunct), conjunct.this, _constant(conjunct.expression)
    if not isinstance(column, exp.Column):
        op, column, value = _FLIPPED[op], conjunct.expression, _constant(conjunct.this)
    if not isinstance(column, exp.Column) or column.name not in ranks or value is None:
        return None
    if op is exp.LTE:
        return column.name, value
    if op is exp.LT:
        return column.name, value - 1
    if op is exp.EQ and value == 1:
        return column.name, 1
    return None


@_selects
def top_n_conditions(tree: exp.Select) -> exp.Expression:
    """A TopN's rank condition over ``ROW_NUMBER() OVER (...) AS rn`` in any of its written
    forms (``rn < N + 1``, ``N >= rn``, ``rn = 1``, ``rn BETWEEN 1 AND N``) as ``rn <= N``,
    which the planner reads as a TopN. Other conditions of the same WHERE filter the TopN's
    rows (they do not take part in the ranking: RisingWave's and Flink's ``WHERE rownum <= N
    [AND conditions]``), so they move to a query over it."""
    ranks = _row_numbers(tree)
    where = tree.args.get("where")
    if not ranks or where is None:
        return tree
    conjuncts = _conjuncts(where.this)
    limits = [(c, _rank_limit(c, ranks)) for c in conjuncts]
    found = [(c, limit) for c, limit in limits if limit is not None]
    if len(found) != 1 or found[0][1][1] < 1:
        return tree
    conjunct, (rank, n) = found[0]
    condition = exp.LTE(this=exp.column(rank), expression=exp.Literal.number(n))
    rest = [c.copy() for c in conjuncts if c is not conjunct]
    tree = tree.copy()
    if not rest:
        tree.set("where", exp.Where(this=condition))
        return tree
    from_ = tree.args[_from_key(tree)].this
    alias = from_.alias or "_top_n"
    inner = exp.select("*").from_(from_.copy()).where(condition)
    tree.set(_from_key(tree), exp.From(this=exp.Subquery(
        this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias)))))
    tree.set("where", exp.Where(this=_and(rest)))
    return tree


# ---------------------------------------------------------------------------------------------
# IN / EXISTS subqueries as semi and anti joins


def _membership(conjunct: exp.Expression) -> tuple[bool, exp.Select, exp.Expression | None] | None:
    """``(negated, subquery, value)`` of ``value [NOT] IN (subquery)`` and ``[NOT] EXISTS
    (subquery)`` (value None), or None for any other condition."""
    negated = False
    while isinstance(conjunct, (exp.Paren, exp.Not)):
        negated ^= isinstance(conjunct, exp.Not)
        conjunct = conjunct.this
    if isinstance(conjunct, exp.Exists) and isinstance(conjunct.this, exp.Select):
        return negated, conjunct.this, None
    query = conjunct.args.get("query") if isinstance(conjunct, exp.In) else None
    if query is not None:
        inner = query.this if isinstance(query, exp.Subquery) else query
        if not isinstance(inner, exp.Select):
            raise Refused("IN (subquery) over a UNION is not supported (one relation, filtered "
                          "by a WHERE condition, is)", conjunct)
        return negated, inner, conjunct.this
    return None


def _matching_condition(negated: bool, subquery: exp.Select, value: exp.Expression | None,
                        node: exp.Expression, alias: str) -> exp.Expression | None:
    """The join condition of the subquery's rows that make a left row kept (SEMI) or dropped
    (ANTI): the correlation (its WHERE), and for IN the value equal to the subquery's column;
    for NOT IN also a NULL on either side (``x NOT IN (..., NULL)`` is unknown, so the row is
    dropped, as it is when x is NULL and the subquery has a row)."""
    where = subquery.args.get("where")
    parts = _conjuncts(_qualified_by(where.this.copy(), alias) if where is not None else None)
    if value is not None:
        item = _qualified_by(subquery.expressions[0].unalias().copy(), alias)
        equal: exp.Expression = exp.EQ(this=value.copy(), expression=item)
        if negated:
            equal = exp.Paren(this=exp.or_(equal, exp.Is(this=value.copy(), expression=exp.Null()),
                                           exp.Is(this=item.copy(), expression=exp.Null())))
        parts.append(equal)
    if not parts:
        raise Refused("an uncorrelated EXISTS (subquery) is not supported: correlate it with the "
                      "outer query (a window join reads L.window_start = R.window_start AND "
                      "L.window_end = R.window_end)", node)
    return _and(parts)


def _qualified_by(condition: exp.Expression, alias: str) -> exp.Expression:
    """``condition`` (a part of the subquery) with each unqualified column named as the
    subquery's relation's (in the subquery an unqualified name is its own relation's column)."""
    for column in condition.find_all(exp.Column):
        if not column.table and not isinstance(column.this, exp.Star):
            column.set("table", exp.to_identifier(alias))
    return condition


def _refuse_unreadable_subquery(subquery: exp.Select, value: exp.Expression | None,
                                node: exp.Expression) -> None:
    """A subquery a semi or anti join reads: one relation, its rows filtered by a condition
    (for IN, one column), nothing grouped, ordered, limited or nested."""
    word = "IN" if value is not None else "EXISTS"
    for clause in ("joins", "group", "having", "order", "limit", "distinct", "qualify", "with"):
        if subquery.args.get(clause):
            raise Refused(f"{word} (subquery) with {clause.upper()} in the subquery is not "
                          f"supported (one relation, filtered by a WHERE condition, is)", node)
    from_ = subquery.args.get("from_") or subquery.args.get("from")
    if from_ is None:
        raise Refused(f"{word} (subquery) without a FROM is not supported", node)
    filtered = [*subquery.expressions, *([subquery.args["where"]] if subquery.args.get("where") else [])]
    if any(isinstance(n, (exp.Select, exp.AggFunc, exp.Window)) for part in filtered for n in part.walk()):
        raise Refused(f"{word} (subquery) with an aggregate, an OVER window or a nested subquery "
                      f"is not supported", node)
    if value is not None and (len(subquery.expressions) != 1 or
                              isinstance(subquery.expressions[0], exp.Star)):
        raise Refused("IN (subquery) needs a subquery of one column", node)
    if not from_.this.alias_or_name:
        raise Refused(f"the relation of an {word} (subquery) needs a name: give it an alias "
                      f"(... ) R WHERE ...)", node)


@_selects
def subquery_joins(tree: exp.Select) -> exp.Expression:
    """A WHERE conjunct ``x IN (SELECT y FROM r WHERE c)`` or ``EXISTS (SELECT ... FROM r
    WHERE c)`` as ``FROM l LEFT SEMI JOIN r ON c [AND x = y]``, and ``NOT IN`` / ``NOT EXISTS``
    as a LEFT ANTI JOIN (Flink's window semi/anti joins, where c correlates the two sides'
    window_start and window_end): each left row is kept once if a row of r matches it, or
    only if none does. ``x NOT IN (...)`` is unknown when a matching row of r has a NULL y or
    x is NULL, so the anti join's condition is ``c AND (x = y OR x IS NULL OR y IS NULL)``.
    One such subquery per WHERE, over a FROM of one relation; any other subquery is refused."""
    where = tree.args.get("where")
    parts = _conjuncts(where.this) if where is not None else []
    found = [(part, m) for part in parts if (m := _membership(part)) is not None]
    if not found:
        return tree
    if len(found) > 1:
        raise Refused("more than one IN/EXISTS subquery in a WHERE is not supported", found[1][0])
    part, (negated, subquery, value) = found[0]
    if tree.args.get("joins"):
        raise Refused("an IN/EXISTS subquery in the WHERE of a join is not supported: join "
                      "in a subquery first", part)
    _refuse_unreadable_subquery(subquery, value, part)
    inner_from = subquery.args.get("from_") or subquery.args.get("from")
    relation = inner_from.this.copy()
    outer_from = tree.args.get("from_") or tree.args.get("from")
    outer = outer_from.this.alias_or_name if outer_from is not None else ""
    if value is not None and outer:  # in WHERE an unqualified name is the outer relation's
        value = _qualified_by(value.copy(), outer)
    condition = _matching_condition(negated, subquery, value, part, relation.alias_or_name)
    tree = tree.copy()
    kind = "ANTI" if negated else "SEMI"
    tree.append("joins", exp.Join(this=relation, side="LEFT", kind=kind, on=condition))
    rest = _and([p.copy() for p in parts if p is not part])
    tree.set("where", exp.Where(this=rest) if rest is not None else None)
    return tree


# ---------------------------------------------------------------------------------------------

#: The rewrites, in the order they run: a CTE is inlined before the rules read the queries
#: it holds; the join's relations are known before a group window is read over one.
RULES: list[Rule] = [lateral_unnest, inline_ctes, named_windows, comma_joins, legacy_group_windows,
                     grouping_sets, top_n_conditions, subquery_joins]


def rewrite(tree: exp.Expression, dialect: str) -> exp.Expression:
    """``tree`` (one statement as sqlglot read it in ``dialect``, ``risingwave`` or ``flink``)
    with every rule of :data:`RULES` applied. The forms both engines share are read alike;
    Flink's legacy group windows are read in either dialect (RisingWave has no meaning of its
    own for ``GROUP BY TUMBLE(ts, size)``)."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r} (expected one of {', '.join(DIALECTS)})")
    tree = tree.copy()
    for rule in RULES:
        tree = rule(tree)
    return tree
