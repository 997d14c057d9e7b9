"""Literals and names of a parsed query, read exactly: a number is its literal's text, never a Python float."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpspark.sql.errors import SqlError

_DECIMAL = re.compile(r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
#: longest number literal read (its exponent is bounded too: no huge integers from "1e999999")
MAX_NUMBER_CHARS = 64
MAX_EXPONENT = 400


def sql_text(node: Any) -> str:
    """The node as the analyst wrote it (BigQuery spelling), for messages."""
    try:
        from dpspark.sql.dialect import DPBigQuery

        text = node.sql(dialect=DPBigQuery)
    except Exception:  # a node sqlglot cannot print: name its kind
        text = type(node).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def number_text(node: Any, where: str) -> str:
    """The exact decimal text of a (signed) number literal: ``1e-9`` stays "1e-9" (read as a rational later)."""
    sign = ""
    if isinstance(node, exp.Neg):
        sign, node = "-", node.this
    if not (isinstance(node, exp.Literal) and not node.is_string):
        raise SqlError(f"{where}: expected a number, got {sql_text(node)}")
    text = str(node.this)
    if len(text) > MAX_NUMBER_CHARS or not _DECIMAL.match(text):
        raise SqlError(f"{where}: {text!r} is not a decimal number")
    mantissa, _, exponent = text.lower().partition("e")
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise SqlError(f"{where}: the exponent of {text!r} is out of range")
    return sign + text


def exact_number(node: Any, where: str) -> Fraction:
    """The number literal as an exact rational (from its text)."""
    text = number_text(node, where)
    sign = -1 if text.startswith("-") else 1
    mantissa, _, exponent = text.lstrip("-").lower().partition("e")
    value = Fraction(mantissa) * Fraction(10) ** int(exponent or 0)
    return sign * value


def whole_number(node: Any, where: str) -> int:
    """A number literal that is an integer."""
    value = exact_number(node, where)
    if value.denominator != 1:
        raise SqlError(f"{where}: expected a whole number, got {sql_text(node)}")
    return int(value)


def name_of(node: Any, where: str) -> str:
    """An identifier (a bare or backquoted name, or a string literal) as its text."""
    if isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier):
        return str(node.this.this)
    if isinstance(node, (exp.Identifier, exp.Var)):
        return str(node.this)
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    if isinstance(node, exp.Table) and not node.args.get("db") and not node.args.get("catalog"):
        return str(node.name)
    raise SqlError(f"{where}: expected a name, got {sql_text(node)}")
