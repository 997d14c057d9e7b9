"""How a :class:`dpspark.Session` and its budget print: numbers a reader takes in, the exact values one step away.

``Session.remaining`` is a :class:`BudgetLeft`: it prints as ``eps = 1, delta = 9e-9`` (numbers rounded up, so
the printed amount is never below the exact one) and behaves as the exact :mod:`dpspark.privacy` measure it
holds (``.measure``; ``.epsilon``, ``.delta``, ``.rho`` and comparisons go to it). Display only.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["BudgetLeft", "budget_words", "charges_words", "session_html", "session_repr"]


def budget_words(measure: Any) -> str:
    """A budget measure as short numbers (``eps = 1, delta = 9e-9``; None: "no session budget")."""
    if measure is None:
        return "none"
    from dpspark.text.statements import measure_words

    return measure_words(measure)


class BudgetLeft:
    """The exact budget left (:attr:`measure`), printed as numbers (see the module docstring)."""

    __slots__ = ("measure",)

    def __init__(self, measure: Any) -> None:
        self.measure = measure

    def __getattr__(self, name: str) -> Any:
        if name == "measure":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.measure, name)

    def __eq__(self, other: object) -> bool:
        return self.measure == (other.measure if isinstance(other, BudgetLeft) else other)

    def __hash__(self) -> int:
        return hash(self.measure)

    def __str__(self) -> str:
        return budget_words(self.measure)

    def __repr__(self) -> str:
        return f"budget left: {budget_words(self.measure)}"

    def _repr_html_(self) -> str:
        return f"<b>budget left</b>: {html.escape(budget_words(self.measure))}"


def charges_words(session: Any) -> str:
    """What the session's charges bought: ``4 charge(s): 3 release(s), 1 failed after its charge (spent)``.

    A release that fails after its charge keeps its spend (never refunded), so it is listed as charged. Counted
    from the session budget's history; without a session budget only the releases made are known.
    """
    made = len(session.releases)
    declared = len(getattr(session, "declared_answers", None) or ())
    parts = [f"{made} release(s)"]
    if declared:
        parts.append(f"{declared} adaptive answers declaration(s)")
    if session.budget is None:
        return ", ".join(parts)
    charged = len(session.budget.history)
    failed = max(0, charged - made - declared)
    if failed:
        parts.append(f"{failed} failed after its charge (spent, not refunded)")
    return ", ".join(parts) if len(parts) == 1 else f"{charged} charge(s): " + ", ".join(parts)


def session_repr(session: Any) -> str:
    """One line: the units, the budget (total, spent, left) and what the charges bought (failures included)."""
    unit = session.unit_column or "one row"
    if session.budget is None:
        budget = "no session budget"
    else:
        budget = (f"budget {budget_words(session.budget.total)}; spent {budget_words(session.budget.spent)}; "
                  f"left {budget_words(session.budget.remaining)}")
    units = "no limit on units" if session.max_units is None else f"n <= {session.max_units} units"
    return f"<dpspark Session: {units} ({unit}); {budget}; {charges_words(session)}>"


def session_html(session: Any) -> str:
    """The session in a notebook: the budget spent and left as numbers, and the releases made."""
    n = "no limit (groups and answers only)" if session.max_units is None else f"at most {session.max_units}"
    rows = [("units", f"{n} ({session.unit_column or 'one row per unit'})")]
    if session.budget is None:
        rows.append(("budget", "no session budget"))
    else:
        rows += [("budget", budget_words(session.budget.total)), ("spent", budget_words(session.budget.spent)),
                 ("left", budget_words(session.budget.remaining))]
    if session.ledger is not None:
        rows.append(("ledger", f"{session.ledger} (dataset {session.dataset})"))
    rows.append(("charges", charges_words(session)))
    rows.append(("releases", ", ".join(str(p) for p in session.releases) or "none yet"))
    cells = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                    f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<div><b>dpspark Session</b><table>{cells}</table></div>"
