"""A sequence of releases stated in different measures, composed: zCDP summed and converted once.

**Theorem (mixed composition).** Releases M_1, ..., M_k run in sequence on one dataset, each possibly chosen
after the outputs of the earlier ones, all under the same neighbour relation. Release i is rho_i-zCDP
(i in Z), eps_i-DP (i in P) or (eps_i, delta_i)-DP with delta_i > 0 (i in A). For every split of P into
P_z and P_x and every delta' in (0, 1 - Delta]:

    the sequence is (xi + eps_cks(rho, delta'), Delta + delta')-DP, where
    rho = sum_Z rho_i + sum_{P_z} eps_i^2 / 2,  xi = sum_{P_x} eps_i + sum_A eps_i,  Delta = sum_A delta_i,

and eps_cks(rho, delta') is any alpha's value of Canonne-Kamath-Steinke 2020 Cor. 13
(:func:`dpspark.privacy.conversions.cks_epsilon_upper`). With rho = 0 it is (xi, Delta)-DP (basic composition).

*Proof.* (a) An (eps, delta)-DP pair P, Q splits as P = (1 - delta) P' + delta P'', Q = (1 - delta) Q' + delta Q''
with P', Q' eps-indistinguishable (Murtagh-Vadhan 2016, Lemma 3.2): the mechanism is delta-approximately
(eps, 0)-zCDP in the sense of Bun-Steinke 2016, Def. 8.1 (D_alpha <= eps for every alpha). (b) eps-DP is
(eps^2/2)-zCDP (Bun-Steinke 2016, Prop. 1.4) and (eps, 0)-zCDP; rho-zCDP is (0, rho)-zCDP. (c) delta-approximate
(xi, rho)-zCDP composes adaptively, summing delta, xi and rho (Bun-Steinke 2016, Lemma 8.3). (d) On the
conditioned pair D_alpha <= xi + alpha rho, so CKS20 Prop. 12 at any alpha > 1 gives (xi + eps(alpha), delta')-DP
(their eps(alpha) is affine in the divergence bound); the mixture weight Delta adds to delta'. []

:func:`compose_entries` takes, of the rules below, the one with the least certified epsilon at its total delta;
each is the theorem's bound (or basic composition of the charged (eps, delta)):

* ``basic``: every release at its charged (eps, delta), summed (Dwork-Roth 2014, Thm 3.16);
* ``zcdp``: zCDP and pure releases in rho (P_z = P), (eps, delta) releases summed;
* ``zcdp+pure``: zCDP releases in rho, pure and (eps, delta) releases summed (P_x = P).

Every epsilon is a certified rational upper bound (arb balls, rounded up); no float decides anything.

*Scope.* The theorem composes releases whose mechanisms may be chosen adaptively, at parameters fixed in
advance; then each rule's value is a constant and so is their minimum. When an analyst also picks later
parameters after seeing earlier outputs, the rule that is least depends on the outputs, and a budget check
against it is a union of privacy filters, which no theorem we know covers. So the ledger does not admit
releases by this minimum: its admission check is one filter fixed when the total is declared
(:mod:`dpspark.ledger.compose`, docs/accounting.md). This module's minimum is a statement of a recorded
sequence for reports and benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Iterable, Optional

from dpspark.privacy.conversions import DEFAULT_BITS
from dpspark.privacy.errors import PrivacyError

#: certified epsilons are rounded up onto the 2^-CONVERSION_BITS grid: the grid of
#: :func:`~dpspark.privacy.conversions.zcdp_to_approx_dp_cks`, so a mechanism's rho chosen to fit its configured
#: epsilon (``rho_within``) converts here to the very same bound
CONVERSION_BITS = DEFAULT_BITS
RULES = ("basic", "zcdp", "zcdp+pure")


@dataclass(frozen=True)
class Entry:
    """One release as the ledger charged it: the charged (epsilon, delta) and its exact rho when it is zCDP."""

    epsilon: Fraction
    delta: Fraction
    rho: Optional[Fraction] = None
    law: Optional[str] = None  # the release's noise law (JSON, :mod:`dpspark.privacy.pld`), when it states one

    @property
    def kind(self) -> str:
        """``zcdp`` (rho stated), ``pure`` (delta = 0) or ``approx``."""
        if self.rho is not None:
            return "zcdp"
        return "pure" if self.delta == 0 else "approx"


@dataclass(frozen=True)
class Parts:
    """The theorem's exact parts: rho (converted once), xi (summed epsilon) and Delta (summed delta)."""

    rho: Fraction
    xi: Fraction
    delta: Fraction


@dataclass(frozen=True)
class Composed:
    """A composition's statement: (epsilon, delta)-DP, epsilon certified upward, by ``rule`` from ``parts``."""

    epsilon: Fraction
    delta: Fraction
    parts: Parts
    rule: str


def parts(entries: Iterable[Entry], rule: str) -> Parts:
    """The exact parts of ``rule`` (one of :data:`RULES`) over ``entries``."""
    if rule not in RULES:
        raise PrivacyError(f"unknown composition rule {rule!r}")
    rho = xi = delta = Fraction(0)
    for e in entries:
        kind = "approx" if rule == "basic" else e.kind
        if kind == "zcdp":
            rho += e.rho  # type: ignore[operator]
        elif kind == "pure" and rule == "zcdp":
            rho += e.epsilon * e.epsilon / 2
        else:
            xi += e.epsilon
            delta += e.delta
    return Parts(rho, xi, delta)


@lru_cache(maxsize=4096)
def converted_upper(rho: Fraction, delta: Fraction) -> Fraction:
    """Certified upper bound (>= 0) on CKS20's epsilon of rho-zCDP at ``delta`` (0 < delta < 1), cached."""
    from dpspark.privacy.conversions import cks_alpha, cks_epsilon_upper

    if rho == 0:
        return Fraction(0)
    if not 0 < delta < 1:
        raise PrivacyError(f"converting zCDP needs 0 < delta < 1, got {delta}")
    return max(Fraction(0), cks_epsilon_upper(rho, delta, cks_alpha(rho, delta), CONVERSION_BITS))


def statement_of(p: Parts, delta_total: Fraction, rule: str = "zcdp") -> Optional[Composed]:
    """The theorem's (epsilon, delta) for ``p`` with delta' = delta_total - Delta; None when no delta' is left.

    With rho = 0 the statement is (xi, Delta) (nothing to convert, delta_total unused beyond the check).
    """
    if p.rho == 0:
        return Composed(p.xi, p.delta, p, rule) if p.delta <= delta_total else None
    left = delta_total - p.delta
    if left <= 0 or delta_total >= 1:
        return None
    return Composed(p.xi + converted_upper(p.rho, left), delta_total, p, rule)


def compose_entries(entries: Iterable[Entry], delta_total: Fraction) -> Optional[Composed]:
    """The tightest of :data:`RULES` at ``delta_total``: least certified epsilon (ties: the earlier rule).

    None when no rule stays within ``delta_total`` (the (eps, delta) releases alone spend more delta).
    """
    es = list(entries)
    best: Optional[Composed] = None
    for rule in RULES:
        if rule == "zcdp+pure" and not any(e.kind == "pure" for e in es):
            continue  # same parts as "zcdp"
        got = statement_of(parts(es, rule), delta_total, rule)
        if got is not None and (best is None or got.epsilon < best.epsilon):
            best = got
    return best


def rho_of(entries: Iterable[Entry]) -> Optional[Fraction]:
    """The exact zCDP of the sequence: sum of rho, pure releases as eps^2/2; None if one has delta > 0."""
    total = Fraction(0)
    for e in entries:
        if e.kind == "approx":
            return None
        total += e.rho if e.rho is not None else e.epsilon * e.epsilon / 2
    return total
