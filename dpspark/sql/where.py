"""A query's ``WHERE`` as dpspark's filter grammar (:mod:`dpspark.engine.predicate`), built from the parsed tree.

Only the grammar's constructs translate: comparisons of a column with a literal, ``[NOT] IN`` a list of
literals, ``[NOT] BETWEEN``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT`` and parentheses. The text is
written back from the tree node by node (names backquoted, strings quoted, numbers as their literal's
text) and parsed again by the grammar, which compiles it to Arrow masks and Spark Columns: no SQL text
ever reaches an engine, and a function, a cast, arithmetic or a subquery is refused here, named.
"""

from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp

from dpspark.engine.predicate import Predicate, PredicateError, parse_predicate
from dpspark.sql.errors import SqlError
from dpspark.sql.literals import number_text, sql_text

_CMP = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
GRAMMAR = ("comparisons of a column with a literal, IN (...), BETWEEN, IS [NOT] NULL, AND, OR, NOT")


def quote_name(name: str) -> str:
    """A column name in the grammar's backquotes (a backquote doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _literal(node: Any) -> str:
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Literal) and node.is_string:
        return "'" + str(node.this).replace("'", "''") + "'"
    if isinstance(node, exp.Null):
        raise SqlError("WHERE: a comparison with NULL is never true; write column IS NULL or IS NOT NULL")
    if isinstance(node, (exp.Literal, exp.Neg)):
        return number_text(node, "WHERE")
    raise SqlError(f"WHERE: {sql_text(node)} is not a literal; {GRAMMAR} only")


def _is_literal(node: Any) -> bool:
    return isinstance(node, (exp.Boolean, exp.Literal, exp.Null)) or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal))


def render(node: Any, column: Callable[[Any], str]) -> str:
    """The grammar's text of one WHERE node; ``column`` maps a Column node to its (checked) name."""
    if isinstance(node, exp.Paren):
        return "(" + render(node.this, column) + ")"
    if isinstance(node, (exp.And, exp.Or)):  # a chain of one connective is one level (the grammar's depth)
        word = " AND " if isinstance(node, exp.And) else " OR "
        return "(" + word.join(render(item, column) for item in node.flatten()) + ")"
    if isinstance(node, exp.Not):
        return f"(NOT {render(node.this, column)})"
    if type(node) in _CMP:
        left, right = node.this, node.expression
        if isinstance(left, exp.Column) and _is_literal(right):
            return f"{quote_name(column(left))} {_CMP[type(node)]} {_literal(right)}"
        if isinstance(right, exp.Column) and _is_literal(left):
            return f"{_literal(left)} {_CMP[type(node)]} {quote_name(column(right))}"
        raise SqlError(f"WHERE: {sql_text(node)} does not compare a column with a literal; {GRAMMAR} only")
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise SqlError(f"WHERE: a subquery ({sql_text(node)}) is not supported; list the values: IN ('a', 'b')")
        if not isinstance(node.this, exp.Column) or not node.expressions:
            raise SqlError(f"WHERE: {sql_text(node)}: IN needs a column and a list of literals")
        return f"{quote_name(column(node.this))} IN ({', '.join(_literal(v) for v in node.expressions)})"
    if isinstance(node, exp.Between):
        if not isinstance(node.this, exp.Column):
            raise SqlError(f"WHERE: {sql_text(node)}: BETWEEN needs a column")
        return (f"{quote_name(column(node.this))} BETWEEN {_literal(node.args.get('low'))} "
                f"AND {_literal(node.args.get('high'))}")
    if isinstance(node, exp.Is):
        if isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Null):
            return f"{quote_name(column(node.this))} IS NULL"
        raise SqlError(f"WHERE: {sql_text(node)}: IS takes a column and NULL only")
    if isinstance(node, exp.Subquery) or isinstance(node, exp.Query):
        raise SqlError(f"WHERE: a subquery ({sql_text(node)}) is not supported")
    if isinstance(node, exp.Func):
        raise SqlError(f"WHERE: the function call {sql_text(node)} is not supported; {GRAMMAR} only")
    raise SqlError(f"WHERE: {sql_text(node)} is not supported; {GRAMMAR} only")


def where_filter(node: Any, column: Callable[[Any], str]) -> Predicate:
    """The WHERE clause's condition as a parsed filter (:class:`SqlError` for anything outside the grammar)."""
    text = render(node, column)
    try:
        return parse_predicate(text)
    except PredicateError as err:  # e.g. the grammar's limits on length, depth and list size
        raise SqlError(f"WHERE: {err}") from None
