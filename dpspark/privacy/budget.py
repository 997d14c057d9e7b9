"""A privacy budget that statements are spent from by exact sequential composition.

The budget is a measure under one relation (a Session's: AddRemove(n) for
dpspark configs). :meth:`Budget.spend` converts the statement to that relation
(group privacy), composes it with everything spent so far
(:func:`dpspark.privacy.composition.compose`) and refuses, with
:class:`~dpspark.privacy.errors.BudgetExceeded` and no change, when the total
would exceed the budget. Comparisons are exact (certified for ln terms).

What fits which budget:
* PureDP budget: pure statements only.
* ApproxDP budget: pure and approximate statements. A zCDP statement must be
  converted first (``statement.to_approx_dp(delta)``), because the delta to
  spend on it is a choice.
* ZCDP budget: zCDP and pure statements (a pure eps counts as eps^2/2).
"""

from __future__ import annotations

from typing import Any, Optional

from dpspark.privacy.composition import compose
from dpspark.privacy.conversions import DEFAULT_BITS
from dpspark.privacy.errors import BudgetExceeded, IncompatibleMeasures
from dpspark.privacy.measures import ApproxDP, Measure, PureDP, ZCDP, measure_from_budget
from dpspark.privacy.relations import Relation
from dpspark.privacy.statement import PrivacyStatement


def _fits(spent: Measure, total: Measure) -> bool:
    if isinstance(total, ZCDP):
        return isinstance(spent, ZCDP) and spent.rho <= total.rho
    if isinstance(spent, ZCDP):
        return False
    if isinstance(total, PureDP) and not isinstance(spent, PureDP):
        return spent.delta == 0 and spent.epsilon.le(total.epsilon)
    return spent.delta <= total.delta and spent.epsilon.le(total.epsilon)


class Budget:
    """A total measure under ``relation``; ``spend(statement)`` composes exactly or raises BudgetExceeded."""

    def __init__(self, total: Any, relation: Relation, bits: int = DEFAULT_BITS) -> None:
        """``total``: a measure, or a dict {"epsilon"[, "delta"]} / {"rho"} of exact values."""
        self.total: Measure = measure_from_budget(total)
        self.relation = relation
        self.bits = bits
        self._spent: Optional[Measure] = None
        self._history: list[PrivacyStatement] = []

    @property
    def spent(self) -> Optional[Measure]:
        """The exact composition of everything spent (None before the first spend)."""
        return self._spent

    @property
    def history(self) -> tuple[PrivacyStatement, ...]:
        """The spent statements, converted to the budget's relation, in order."""
        return tuple(self._history)

    def _after(self, statement: PrivacyStatement) -> tuple[PrivacyStatement, Measure]:
        st = statement.under(self.relation, self.bits)
        m = st.measure
        if isinstance(self.total, PureDP) and not st.pure:
            raise IncompatibleMeasures("a pure-DP budget accepts only pure statements")
        if isinstance(self.total, ApproxDP) and isinstance(m, ZCDP):
            raise IncompatibleMeasures(
                "an (eps, delta) budget needs zCDP statements converted first: statement.to_approx_dp(delta)"
            )
        if isinstance(self.total, ZCDP) and isinstance(m, ApproxDP) and m.delta > 0:
            raise IncompatibleMeasures("a zCDP budget cannot absorb an (eps, delta > 0) statement")
        if isinstance(m, ApproxDP) and m.delta == 0:
            m = PureDP(m.epsilon)
        parts = [m] if self._spent is None else [self._spent, m]
        if isinstance(self.total, ZCDP):
            parts.insert(0, ZCDP(0))  # makes compose() count pure steps as eps^2/2-zCDP
        return st, compose(parts, self.bits)

    def can_spend(self, statement: PrivacyStatement) -> bool:
        """True when :meth:`spend` would accept ``statement`` (no change is made)."""
        _, new = self._after(statement)
        return _fits(new, self.total)

    def spend(self, statement: PrivacyStatement) -> Measure:
        """Charge ``statement``; returns the new exact total spent. BudgetExceeded (no change) when over."""
        st, new = self._after(statement)
        if not _fits(new, self.total):
            raise BudgetExceeded(
                f"spending {st.measure.text()} would bring the total to {new.text()}, "
                f"above the budget {self.total.text()} under [{self.relation.text()}]"
            )
        self._spent = new
        self._history.append(st)
        return new

    @property
    def remaining(self) -> Measure:
        """The exact budget left: total minus spent, per coordinate (eps exact, ln terms kept symbolic)."""
        s = self._spent
        t = self.total
        if s is None:
            return t
        if isinstance(t, ZCDP):
            return ZCDP(t.rho - s.rho)  # type: ignore[union-attr]
        if isinstance(t, PureDP):
            return PureDP(t.epsilon - s.epsilon)  # type: ignore[union-attr]
        return ApproxDP(t.epsilon - s.epsilon, t.delta - s.delta)  # type: ignore[union-attr]

    def describe(self) -> dict[str, Any]:
        """JSON-ready: total, spent, remaining and the relation."""
        return {
            "relation": self.relation.describe(),
            "total": self.total.describe(),
            "spent": None if self._spent is None else self._spent.describe(),
            "remaining": self.remaining.describe(),
        }

    def __repr__(self) -> str:
        return f"Budget(total={self.total!r}, spent={self._spent!r}, relation={self.relation!r})"

