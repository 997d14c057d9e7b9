"""``WITH DIFFERENTIAL_PRIVACY OPTIONS (...)``: BigQuery's names mapped to dpspark's fields; anything else refused.

==========================  =============================================================================
option                      dpspark field
==========================  =============================================================================
``epsilon``                 the release's epsilon (exact, from the literal's text; required)
``delta``                   the release's delta (exact; needed for private key selection and global answers)
``privacy_unit_column``     ``privacy.unit_column`` (must be the session's unit column, if it has one)
``max_groups_contributed``  ``groups.max_groups_per_unit`` (k; ``auto`` or ``'auto'``: chosen privately)
``max_rows_per_group``      ``groups.max_rows_per_group`` (c; a dpspark extension; ``auto``: chosen privately;
                            ``max_rows_contributed`` is the same option)
``keys``                    a public table whose ``GROUP BY`` columns list the keys (a dpspark extension)
``noise``                   ``groups.noise``: 'auto', 'pure', 'zcdp', 'gaussian' or 'bounded' (extension)
``beta``                    ``privacy.beta``: the error bars hold with probability >= 1 - beta (extension)
``bounds_share``            the share of epsilon spent choosing bounds privately: ``groups.bounds_share`` (in
                            (0, 1)) with ``GROUP BY``, the answers' ``privacy.bounds_share`` (in (0, 1/2])
                            without (extension; default 1/10; only when an aggregate has no bounds)
==========================  =============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dpspark.sql.errors import SqlError
from dpspark.sql.literals import name_of, number_text, sql_text, whole_number

OPTION_NAMES = ("epsilon", "delta", "privacy_unit_column", "max_groups_contributed", "max_rows_per_group", "keys",
                "noise", "beta", "max_rows_contributed", "max_rows_per_unit", "bounds_share")


@dataclass(frozen=True)
class Options:
    """The validated OPTIONS (exact decimal strings for epsilon, delta and beta)."""

    epsilon: str
    delta: str | None = None
    unit_column: str | None = None
    max_groups_per_unit: int | str | None = None
    max_rows_per_group: int | str | None = None
    keys: str | None = None
    noise: str | None = None
    beta: str | None = None
    max_rows_per_unit: int | None = None  # a private join's rows kept per unit and table (L; owner: joins)
    bounds_share: str | None = None  # the share of epsilon for bounds chosen privately (exact text)


def _rational_text(node: Any, where: str) -> str:
    """epsilon/delta/beta: a number literal's exact text, or a string such as '1/3'."""
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    return number_text(node, where)


def _limit(node: Any, where: str) -> int | str:
    """A contribution limit: a whole number, or ``auto`` (bare or quoted): chosen privately."""
    if isinstance(node, (exp.Column, exp.Identifier, exp.Var)) or (isinstance(node, exp.Literal) and node.is_string):
        if name_of(node, where).lower() == "auto":
            return "auto"
        raise SqlError(f"{where}: expected a whole number or auto, got {sql_text(node)}")
    return whole_number(node, where)


def parse_options(clause: Any) -> Options:
    """The DP clause's options (:class:`SqlError` naming an unknown, repeated or malformed one)."""
    seen: dict[str, Any] = {}
    for item in clause.expressions:
        if not isinstance(item, exp.EQ):
            raise SqlError(f"OPTIONS: {sql_text(item)} is not 'name = value'")
        name = name_of(item.this, "OPTIONS").lower()
        if name not in OPTION_NAMES:
            raise SqlError(f"OPTIONS: unknown option {name!r}; the options are {', '.join(OPTION_NAMES)}")
        if name in seen:
            raise SqlError(f"OPTIONS: {name} is given twice")
        seen[name] = item.expression
    if "epsilon" not in seen:
        raise SqlError("OPTIONS: epsilon is missing; write OPTIONS (epsilon = 1, ...)")
    kw: dict[str, Any] = {"epsilon": _rational_text(seen["epsilon"], "OPTIONS epsilon")}
    for key in ("delta", "beta", "bounds_share"):
        if key in seen:
            kw[key] = _rational_text(seen[key], f"OPTIONS {key}")
    if "privacy_unit_column" in seen:
        kw["unit_column"] = name_of(seen["privacy_unit_column"], "OPTIONS privacy_unit_column")
    if "max_rows_contributed" in seen and "max_rows_per_group" in seen:
        raise SqlError("OPTIONS: max_rows_contributed and max_rows_per_group are the same option; give one")
    for key, field in (("max_groups_contributed", "max_groups_per_unit"), ("max_rows_per_group", "max_rows_per_group"),
                       ("max_rows_contributed", "max_rows_per_group")):
        if key in seen:
            kw[field] = _limit(seen[key], f"OPTIONS {key}")
    if "max_rows_per_unit" in seen:  # a private join's rows kept per unit and table: a number, never "auto"
        kw["max_rows_per_unit"] = whole_number(seen["max_rows_per_unit"], "OPTIONS max_rows_per_unit")
    if "keys" in seen:
        kw["keys"] = name_of(seen["keys"], "OPTIONS keys")
    if "noise" in seen:
        kw["noise"] = name_of(seen["noise"], "OPTIONS noise")
    return Options(**kw)
