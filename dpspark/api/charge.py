"""The one budget charge of a release: the session budget and the ledger, checked in one order, then spent.

Every entry point charges through :class:`Charge`: the CLI runner, :meth:`dpspark.Session.release`,
:meth:`dpspark.Session.answers` and its adaptive answers. The order is fixed:

1. the plan's data-free checks, which include the ledger's refusals (:meth:`dpspark.engine.plan.Plan.check`;
   run once: a plan already checked is not checked again);
2. the session budget and, given the plan, the ledger's refusals for this principal (:meth:`Charge.check`);
3. the ledger spend (its transaction re-checks the totals), then the session spend.

The ledger entry records the release's exact statement (its rho when it states rho-zCDP), the principal
(``Charge(principal=...)``, else $DPSPARK_PRINCIPAL) and a fresh release id (:func:`dpspark.engine.runner.spend_budget`).

A refusal by either spends neither. Nothing is ever refunded: a failure after the spend keeps it.
The runner takes the charge as a callable (``run_release(..., charge=...)``): the engine never imports this face.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.engine.plan import Plan
    from dpspark.engine.spec import ReleaseSpec

__all__ = ["Charge", "SessionBudgetExceeded", "check_ledger_charge", "statement_for"]


class SessionBudgetExceeded(DPSparkError, ValueError):
    """A release would overspend the session's budget (checked before any data is read)."""


def statement_for(spec: "ReleaseSpec") -> Any:
    """The privacy statement a session budget is charged for ``spec``: its configured (epsilon, delta)."""
    from dpspark.privacy import AddRemove, PrivacyStatement
    from dpspark.privacy.measures import ApproxDP, PureDP

    measure = PureDP(spec.epsilon) if spec.delta is None else ApproxDP(spec.epsilon, spec.delta)
    return PrivacyStatement(measure, AddRemove(spec.max_units), f"{spec.mechanism}: the configured budget "
                            "(an exact upper bound on the release's certified statement)")


class Charge:
    """The charge of one release: ``budget`` (a :class:`dpspark.privacy.Budget`, or None) pays ``statement``,
    and the spec's ledger (if any) pays the release's exact statement, charged to ``principal``. See the
    module docstring."""

    def __init__(self, budget: Any = None, statement: Any = None, principal: str | None = None) -> None:
        from dpspark.ledger.principal import check_principal

        self.budget = budget
        self.statement = statement
        #: the explicit principal (checked now, before anything runs); None: $DPSPARK_PRINCIPAL when a ledger charges
        self.principal = None if principal is None else check_principal(principal)

    @classmethod
    def for_spec(cls, spec: "ReleaseSpec", budget: Any = None, principal: str | None = None) -> "Charge":
        """The charge of ``spec`` against an optional session ``budget`` (and the spec's ledger)."""
        return cls(budget, None if budget is None else statement_for(spec), principal)

    def statement_of(self, plan: "Plan | None") -> Any:
        """What the session budget pays: the release's stated rho when the budget is in rho and the built
        mechanism states rho-zCDP (:func:`dpspark.ledger.statement.spend_rho`, as the ledger records it: a
        zCDP filter, docs/accounting.md), else the configured (epsilon, delta) (a basic filter)."""
        from dpspark.privacy.measures import ZCDP

        if plan is None or self.budget is None or not isinstance(self.budget.total, ZCDP):
            return self.statement
        from dpspark.ledger.statement import spend_rho
        from dpspark.privacy import AddRemove, PrivacyStatement

        rho = spend_rho(plan.spec, plan.mechanism)
        if rho is None:
            return self.statement
        return PrivacyStatement(ZCDP(rho), AddRemove(plan.spec.max_units),
                                f"{plan.spec.mechanism}: its stated rho-zCDP")

    def check(self, plan: "Plan | None" = None) -> None:
        """Refuse, spending nothing, when the session budget cannot pay the statement, or (given ``plan``)
        when the ledger would refuse this release for this principal. Before the plan, a budget in rho is
        checked only for a pure release (a release's rho is known from its built mechanism)."""
        from dpspark.privacy.measures import ZCDP

        statement = self.statement_of(plan)
        early_rho = plan is None and self.budget is not None and isinstance(self.budget.total, ZCDP)
        if self.budget is not None and not (early_rho and not statement.pure) \
                and not self.budget.can_spend(statement):
            raise SessionBudgetExceeded(
                f"this release ({statement.measure.text()}) exceeds the session budget left: "
                f"{self.budget.remaining.text()}; nothing was read and nothing was spent")
        if plan is not None:
            check_ledger_charge(plan.spec, plan.mechanism, self.principal)

    def __call__(self, plan: "Plan") -> Any:
        """Check, then spend (ledger first); returns the ledger's (ledger, record), or None without a ledger."""
        from dpspark.engine.runner import spend_budget

        plan.check()  # the ledger's refusals (a no-op for a plan already checked)
        self.check(plan)
        spent = spend_budget(plan.spec, plan.mechanism, self.principal)
        if self.budget is not None:
            self.budget.spend(self.statement_of(plan))  # never refunded
        return spent


def check_ledger_charge(spec: "ReleaseSpec", mech: Any, principal: str | None) -> None:
    """The ledger's refusals of this exact charge (rho when stated, the principal's limit), writing nothing
    (:func:`dpspark.engine.checks.check_ledger`: a missing ledger file is checked as an empty one)."""
    from dpspark.engine.checks import check_ledger
    from dpspark.ledger import resolve_principal

    check_ledger(spec, mech, resolve_principal(principal), named=True)
