"""The checker: a parsed query inside the supported subset becomes a :class:`DPQuery`; anything else is refused.

Refused, each with a message that names the construct and says what to write instead (:class:`SqlError`,
raised before any data is read or any budget is spent): a statement other than one ``SELECT``, a query
without the DP clause, ``SELECT *``, ``DISTINCT``, ``LIMIT``/``OFFSET``, ``ORDER BY``, ``HAVING``,
``QUALIFY``, a window (``OVER``), a subquery or a CTE, a join other than one inner or left join of a public
table on equal columns of the same name, an unknown table or a public one in ``FROM``, a column neither
aggregated nor in ``GROUP BY``, an unknown or non-DP
function, a ``GROUP BY`` on anything but columns and an aggregate without a name. An aggregate given without
``contribution_bounds_per_group`` has its bounds chosen privately (GROUP BY queries; compile.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection

from sqlglot import exp

from dpspark.engine.predicate import Predicate
from dpspark.sql.dialect import AGGREGATES, DPAggregate, DPClause, parse_query
from dpspark.sql.errors import SqlError
from dpspark.sql.literals import exact_number, name_of, number_text, sql_text
from dpspark.sql.options import Options, parse_options
from dpspark.sql.where import where_filter

#: the SELECT's clauses that are refused, and what to write instead
_REFUSED = {
    "with_": "WITH (a common table expression) is not supported: write the query on the table itself",
    "distinct": "SELECT DISTINCT is not supported: GROUP BY the columns instead",
    "limit": "LIMIT is not supported: a release holds every group; filter the release after (to_pandas())",
    "offset": "OFFSET is not supported: a release holds every group",
    "order": "ORDER BY is not supported: noisy values are ordered after the release (to_pandas().sort_values())",
    "having": "HAVING is not supported: a condition on a noisy value filters the release after (to_pandas())",
    "qualify": "QUALIFY is not supported: windows are not DP aggregates",
    "windows": "a WINDOW clause is not supported: windows are not DP aggregates",
    "laterals": "LATERAL is not supported: query one table",
    "kind": "SELECT AS STRUCT/VALUE is not supported: select group columns and DP aggregates",
    "into": "SELECT INTO is not supported: the release is written to its output folder",
    "prewhere": "PREWHERE is not supported: use WHERE",
    "connect": "CONNECT BY is not supported",
    "sample": "TABLESAMPLE is not supported",
    "locks": "FOR UPDATE is not supported",
    "match": "MATCH_RECOGNIZE is not supported",
    "cluster": "CLUSTER BY is not supported",
    "distribute": "DISTRIBUTE BY is not supported",
    "sort": "SORT BY is not supported",
    "settings": "SETTINGS is not supported",
    "format": "FORMAT is not supported",
    "options": "OPTIONS at the end of the query are not supported: write them after WITH DIFFERENTIAL_PRIVACY",
    "exclude": "SELECT * EXCEPT is not supported: name the columns",
    "operation_modifiers": "query modifiers are not supported",
}
_ALLOWED = {"expressions", "from_", "where", "group", "hint", "joins"}
_NAMED_ARGS = ("contribution_bounds_per_group",)
_NEEDS_BOUNDS = ("SUM", "AVG", "VAR_POP", "STDDEV_POP", "PERCENTILE_CONT")


@dataclass(frozen=True)
class SqlAggregate:
    """One DP aggregate of the SELECT list: its alias, SQL function, dpspark kind and exact parameters."""

    name: str
    function: str
    kind: str
    column: str | None
    lo: str | None = None
    hi: str | None = None
    q: str | None = None
    #: "sqrt" for STDDEV_POP: the release holds the variance, stated ``post = "sqrt"``; readers show its root
    post: str | None = None

    @property
    def shown(self) -> tuple[str, ...]:
        """The names a reader shows beside ``name`` (a standard deviation's variance and interval ends)."""
        return tuple(f"{self.name}{s}" for s in STDDEV_SHOWN) if self.post == "sqrt" else ()


#: a standard deviation's ``to_pandas()`` also shows ``<name>_variance``, ``<name>_lo`` and ``<name>_hi``
STDDEV_SHOWN = ("_variance", "_lo", "_hi")


@dataclass(frozen=True)
class DPQuery:
    """A checked query (public: the analyst's own text and parameters)."""

    text: str
    table: str
    options: Options
    by: tuple[str, ...]
    aggregates: tuple[SqlAggregate, ...]
    where: Predicate | None
    #: a join: (the other table, the join columns, "inner" or "left"), or None
    join: tuple[str, tuple[str, ...], str] | None = None
    #: the joined table is private (a join of two private tables: on the unit only, checked by the compiler)
    private_join: bool = False


def _statement_kind(tree: Any) -> str:
    if isinstance(tree, exp.SetOperation):
        return type(tree).__name__.upper() + " (a set operation)"
    return type(tree).__name__.upper()


def check_query(text: Any, *, private: Collection[str], public: Collection[str] = ()) -> DPQuery:
    """Parse and check ``text`` against the session's tables (``private``: the private table's names,
    ``public``: the public ones); :class:`SqlError` names the first unsupported construct."""
    tree = parse_query(text)
    if isinstance(tree, exp.Subquery):
        raise SqlError("a parenthesised query (a subquery) is not supported: write one SELECT")
    if not isinstance(tree, exp.Select):
        raise SqlError(f"only a SELECT WITH DIFFERENTIAL_PRIVACY query runs; this is a {_statement_kind(tree)} "
                       "statement")
    if tree.args.get("with_"):
        raise SqlError(_REFUSED["with_"])
    for node in tree.walk():
        if isinstance(node, exp.Window):
            raise SqlError(f"a window ({sql_text(node)}) is not supported: windows are not DP aggregates; "
                           "GROUP BY instead")
        if node is not tree and isinstance(node, (exp.Query, exp.Subquery)):
            raise SqlError(f"a subquery ({sql_text(node)}) is not supported: write one SELECT on the table")
        if isinstance(node, exp.Star) and not isinstance(node.parent, DPAggregate):
            raise SqlError("SELECT * is not supported: name the GROUP BY columns and the DP aggregates")
    hint = tree.args.get("hint")
    if not isinstance(hint, DPClause):
        raise SqlError("the query has no differential-privacy clause: write SELECT WITH DIFFERENTIAL_PRIVACY "
                       "OPTIONS (epsilon = ..., ...) ...")
    for key, value in tree.args.items():
        if key in _ALLOWED or value is None or value == [] or value is False:
            continue
        raise SqlError(_REFUSED.get(key, f"the query's {key} clause is not supported"))
    options = parse_options(hint)
    table, alias = _from(tree, private, public)
    join = _join(tree, table, alias, private, public)
    tables = {table, alias} | ({join[0], join[3]} if join else set())

    def column(node: Any) -> str:
        qualifier = node.table
        if qualifier and qualifier not in tables:
            raise SqlError(f"column {sql_text(node)}: unknown table {qualifier!r}; the query reads {table!r}")
        if not isinstance(node.this, exp.Identifier):
            raise SqlError(f"{sql_text(node)} is not a column name")
        return str(node.this.this)

    by = _group_by(tree, column)
    aggregates = []
    for item in tree.expressions:
        if isinstance(item, exp.Column):
            name = column(item)
            if name not in by:
                raise SqlError(f"column {name!r} is neither aggregated nor in GROUP BY: add it to GROUP BY, or "
                               "aggregate it (COUNT, SUM, AVG, VAR_POP, STDDEV_POP, PERCENTILE_CONT)")
            continue
        if isinstance(item, exp.Alias) and isinstance(item.this, DPAggregate):
            aggregates.append(_aggregate(item.alias, item.this, column))
            continue
        _refuse_item(item)
    if not aggregates:
        raise SqlError("the SELECT list has no DP aggregate: add one, e.g. COUNT(*) AS n")
    names = [a.name for a in aggregates]
    names += [n for a in aggregates for n in a.shown]
    if len(set(names)) != len(names):
        raise SqlError("two aggregates have the same name: give each its own AS name")
    where = tree.args.get("where")
    predicate = where_filter(where.this, column) if where is not None else None
    return DPQuery(text, table, options, by, tuple(aggregates), predicate, join[:3] if join else None,
                   bool(join) and join[0] in private)


def _join(tree: Any, table: str, alias: str | None, private: Collection[str],
          public: Collection[str]) -> tuple[str, tuple[str, ...], str, str | None] | None:
    """(the public table, the join columns, "inner"/"left", its alias) of the query's one JOIN, or None."""
    joins = tree.args.get("joins") or []
    if not joins:
        return None
    if len(joins) > 1:
        raise SqlError("more than one JOIN is not supported: join the private table with one public table")
    j = joins[0]
    node = j.this
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier) or any(
            v for k, v in node.args.items() if k not in ("this", "alias")):
        raise SqlError(f"JOIN {sql_text(node)} is not supported: join one public table of the session by name")
    name = str(node.name)
    if name == table:
        raise SqlError(f"JOIN {name}: a join of the private table with itself is not supported")
    if name not in public and name not in private:
        raise SqlError(f"JOIN {name}: {name!r} is not a table of the session; a public table (public_tables=) "
                       "joins on its key columns, another private table on the privacy unit column")
    side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
    if kind not in ("", "INNER", "OUTER") or side not in ("", "LEFT") or (kind == "OUTER" and side != "LEFT"):
        raise SqlError(f"{' '.join(w for w in (side, kind) if w)} JOIN is not supported: write JOIN (inner) or "
                       "LEFT JOIN")
    for key in ("method", "global_", "hint", "match_condition", "directed", "pivots"):
        if j.args.get(key):
            raise SqlError(f"JOIN {name}: the {key} modifier is not supported")
    dim_alias = node.alias or None
    using = j.args.get("using")
    on = j.args.get("on")
    if bool(using) == (on is not None):
        raise SqlError(f"JOIN {name}: give USING (column, ...) or ON {table}.column = {name}.column")
    if using:
        cols = tuple(name_of(c, f"JOIN {name} USING") for c in using)
    else:
        cols = tuple(_on_columns(on, {table, alias} - {None}, {name, dim_alias} - {None}, name))
    if len(set(cols)) != len(cols):
        raise SqlError(f"JOIN {name}: a join column is named twice")
    return name, cols, "left" if side == "LEFT" else "inner", dim_alias


def _on_columns(on: Any, mine: set[Any], theirs: set[Any], name: str) -> list[str]:
    """The columns of ``ON a.c = b.c [AND ...]`` (the same name on both sides: the join dpspark runs)."""
    items = list(on.flatten()) if isinstance(on, exp.And) else [on]
    cols = []
    for item in items:
        if isinstance(item, exp.Paren):
            item = item.this
        if not (isinstance(item, exp.EQ) and isinstance(item.this, exp.Column)
                and isinstance(item.expression, exp.Column)):
            raise SqlError(f"JOIN {name} ON {sql_text(item)}: a join is on equal columns, "
                           f"ON <private>.column = {name}.column")
        a, b = item.this, item.expression
        if a.table in theirs and b.table in mine:
            a, b = b, a
        if not (a.table in mine and b.table in theirs) or a.name != b.name:
            raise SqlError(f"JOIN {name} ON {sql_text(item)}: join a column of the FROM table with {name}'s column "
                           f"of the same name, qualified: ON <private>.c = {name}.c (or USING (c))")
        cols.append(str(a.name))
    return cols


def _from(tree: Any, private: Collection[str], public: Collection[str]) -> tuple[str, str | None]:
    """(the private table FROM names, its alias)."""
    source = tree.args.get("from_")
    if source is None:
        raise SqlError("the query has no FROM: name the private table, FROM <table>")
    node = source.this
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise SqlError(f"FROM {sql_text(node)} is not supported: name one table")
    for key, value in node.args.items():
        if key not in ("this", "alias") and value:
            raise SqlError(f"FROM {sql_text(node)}: a qualified, sampled or table-function source is not "
                           "supported; name one table of the session")
    name = str(node.name)
    alias = node.alias or None
    if name in public:
        raise SqlError(f"FROM {name}: {name!r} is a public table; FROM names the private table "
                       f"({', '.join(map(repr, sorted(private)))})")
    if name not in private:
        known = sorted([*private, *public])
        raise SqlError(f"unknown table {name!r}; the session's tables are {', '.join(map(repr, known))}")
    return name, alias


def _group_by(tree: Any, column: Any) -> tuple[str, ...]:
    group = tree.args.get("group")
    if group is None:
        return ()
    for key, value in group.args.items():
        if key != "expressions" and value:
            raise SqlError(f"GROUP BY {key.upper().replace('_', ' ')} is not supported: GROUP BY columns")
    by = []
    for node in group.expressions:
        if not isinstance(node, exp.Column):
            raise SqlError(f"GROUP BY {sql_text(node)} is not supported: GROUP BY column names only")
        by.append(column(node))
    if len(set(by)) != len(by):
        raise SqlError("GROUP BY names a column twice")
    return tuple(by)


def _refuse_item(item: Any) -> None:
    if isinstance(item, DPAggregate):
        raise SqlError(f"{sql_text(item)} has no name: write {sql_text(item)} AS <name>")
    inner = item.this if isinstance(item, exp.Alias) else item
    if isinstance(item, exp.Alias) and isinstance(inner, exp.Column):
        raise SqlError(f"{sql_text(item)}: a GROUP BY column takes no alias; select it by its name")
    if isinstance(inner, exp.AggFunc):
        raise SqlError(f"{sql_text(inner)} is not a DP aggregate: use COUNT, SUM, AVG, VAR_POP, STDDEV_POP or "
                       "PERCENTILE_CONT")
    if isinstance(inner, exp.Anonymous):
        raise SqlError(f"unknown function {str(inner.this).upper()}: the DP aggregates are COUNT, SUM, AVG, "
                       "VAR_POP, STDDEV_POP and PERCENTILE_CONT")
    if isinstance(inner, exp.Func):
        raise SqlError(f"the function {sql_text(inner)} is not supported in SELECT: select GROUP BY columns and "
                       "DP aggregates of columns")
    raise SqlError(f"SELECT item {sql_text(item)} is neither a GROUP BY column nor a named DP aggregate")


def _aggregate(alias: str, call: DPAggregate, column: Any) -> SqlAggregate:
    fn = call.function
    args = list(call.expressions)
    named = {}
    while args and isinstance(args[-1], exp.Kwarg):
        kw = args.pop()
        key = name_of(kw.this, f"{fn}(...)").lower()
        if key not in _NAMED_ARGS:
            raise SqlError(f"{fn}: unknown argument {key!r}; the DP argument is contribution_bounds_per_group")
        named[key] = kw.expression
    where = f"{fn}(...) AS {alias}"
    if any(isinstance(a, exp.Kwarg) for a in args):
        raise SqlError(f"{where}: named arguments go after the positional ones")
    for a in args:
        if isinstance(a, exp.Distinct):
            raise SqlError(f"{fn}(DISTINCT ...) is not supported: count rows (COUNT(*)), or GROUP BY the column")
    if fn == "COUNT":
        if named:
            raise SqlError(f"{where}: COUNT takes no contribution_bounds_per_group; the rows a unit adds per group "
                           "are OPTIONS (max_rows_per_group = c)")
        if len(args) != 1:
            raise SqlError(f"{where}: write COUNT(*) or COUNT(column)")
        if isinstance(args[0], exp.Star):
            return SqlAggregate(alias, fn, "count", None)
        return SqlAggregate(alias, fn, "count", _column_arg(args[0], where, column))
    want = 2 if fn == "PERCENTILE_CONT" else 1
    if len(args) != want:
        shape = "PERCENTILE_CONT(column, q)" if fn == "PERCENTILE_CONT" else f"{fn}(column)"
        raise SqlError(f"{where}: write {shape} (optionally with contribution_bounds_per_group => (lo, hi))")
    col = _column_arg(args[0], where, column)
    q = None
    if fn == "PERCENTILE_CONT":
        q = number_text(args[1], f"{where}: the percentile")
        if not 0 < exact_number(args[1], where) < 1:
            raise SqlError(f"{where}: the percentile must lie strictly between 0 and 1")
    bounds = named.get("contribution_bounds_per_group")
    if bounds is None:  # chosen privately (the groups family's bounds step; docs/sql.md)
        if fn == "STDDEV_POP":  # the variance aggregate, its bounds chosen privately; the root is post-processing
            return SqlAggregate(alias, fn, "variance", col, None, None, q, post="sqrt")
        return SqlAggregate(alias, fn, AGGREGATES[fn], col, None, None, q)
    if not isinstance(bounds, exp.Tuple) or len(bounds.expressions) != 2:
        raise SqlError(f"{where}: contribution_bounds_per_group is a pair: => (lo, hi)")
    lo, hi = (number_text(b, f"{where}: contribution_bounds_per_group") for b in bounds.expressions)
    if fn == "STDDEV_POP":  # the variance aggregate; the square root is post-processing (dpspark.lookup.stddev)
        return SqlAggregate(alias, fn, "variance", col, lo, hi, q, post="sqrt")
    return SqlAggregate(alias, fn, AGGREGATES[fn], col, lo, hi, q)


def _column_arg(node: Any, where: str, column: Any) -> str:
    if not isinstance(node, exp.Column):
        raise SqlError(f"{where}: the argument {sql_text(node)} is not a column; aggregate a column (no "
                       "expression, cast or function)")
    return str(column(node))
