"""Exact privacy verifier for counting mechanisms (small n).

For a mechanism M with integer scaled CDF F_{M,c}, the verifier

* builds the exact pmf of M(c, U) as Fractions from scaled-CDF differences
  (never from a closed form, docs/balcer-vadhan-notes.md §E2);
* checks that ``sample(c, u)`` implements that CDF, at every interval edge
  u in {F(z-1)+1, F(z)} and a few interior points, and over every u when d is
  tiny (docs/balcer-vadhan-notes.md §E4);
* computes the exact worst privacy ratio max over c, c' = c +- 1 and z of
  Pr[M(c)=z] / Pr[M(c')=z], infinite if some z is possible under c only.

Nothing here uses floating point; ratios are Fractions compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpspark.noise.counting_base import CountingMechanism

#: enumerate every u when d is at most this
FULL_ENUMERATION_LIMIT = 1 << 16


@dataclass(frozen=True)
class PrivacyReport:
    """The exact worst-case privacy ratio of a counting mechanism."""

    worst_ratio: Fraction | None  # None means infinite (some output impossible under a neighbour)
    c: int
    c_prime: int
    z: int

    def within(self, exp_eps: Fraction) -> bool:
        """True iff the worst ratio is <= exp_eps, compared exactly."""
        return self.worst_ratio is not None and self.worst_ratio <= exp_eps


def exact_pmf(mech: CountingMechanism, c: int) -> list[Fraction]:
    """Exact pmf of M(c, U) over [0, n] from scaled-CDF differences."""
    return mech.pmf(c)


def check_sampler(mech: CountingMechanism, c: int, interior_points: int = 3) -> None:
    """Assert that ``sample(c, .)`` is non-decreasing and agrees with the scaled CDF.

    Raises AssertionError naming the first disagreement.
    """
    cdf = [mech.scaled_cdf(c, z) for z in range(-1, mech.n + 1)]
    for i in range(1, len(cdf)):
        if cdf[i] < cdf[i - 1]:
            raise AssertionError(f"scaled CDF decreases at c={c}, z={i - 1}")
    if cdf[-1] != mech.d or cdf[0] != 0:
        raise AssertionError(f"scaled CDF does not run from 0 to d at c={c}")
    if mech.d <= FULL_ENUMERATION_LIMIT:
        prev = 0
        for u in range(1, mech.d + 1):
            z = mech.sample(c, u)
            if z < prev:
                raise AssertionError(f"sample(c={c}, u) decreases at u={u}")
            if not cdf[z] < u <= cdf[z + 1]:
                raise AssertionError(f"sample(c={c}, u={u}) = {z} disagrees with the scaled CDF")
            prev = z
        return
    for z in range(mech.n + 1):
        lo, hi = cdf[z] + 1, cdf[z + 1]  # u in [F(z-1)+1, F(z)] must map to z
        if lo > hi:
            continue
        points = {lo, hi}
        span = hi - lo
        for k in range(1, interior_points + 1):
            points.add(lo + span * k // (interior_points + 1))
        for u in sorted(points):
            got = mech.sample(c, u)
            if got != z:
                raise AssertionError(f"sample(c={c}, u=F({z - 1})+{u - cdf[z]}) = {got}, expected {z}")
        if lo > 1 and mech.sample(c, lo - 1) >= z:
            raise AssertionError(f"sample(c={c}) is not the generalised inverse of F at z={z}")


def worst_privacy_ratio(mech: CountingMechanism) -> PrivacyReport:
    """Exact max over neighbouring counts c, c' = c +- 1 and outputs z of Pr[M(c)=z]/Pr[M(c')=z]."""
    pmfs = [exact_pmf(mech, c) for c in range(mech.n + 1)]
    worst: Fraction | None = Fraction(0)
    where = (0, 0, 0)
    for c in range(mech.n + 1):
        for c2 in (c - 1, c + 1):
            if not 0 <= c2 <= mech.n:
                continue
            for z in range(mech.n + 1):
                a, b = pmfs[c][z], pmfs[c2][z]
                if a == 0:
                    continue
                if b == 0:
                    return PrivacyReport(None, c, c2, z)
                r = a / b
                if worst is not None and r > worst:
                    worst, where = r, (c, c2, z)
    return PrivacyReport(worst, *where)


def verify_mechanism(mech: CountingMechanism, claimed_exp_eps: Fraction | None = None) -> PrivacyReport:
    """Run every exact check; raise AssertionError unless the mechanism is e^eps-DP as claimed.

    ``claimed_exp_eps`` defaults to the mechanism's own ``exp_eps``.
    """
    claim = mech.exp_eps if claimed_exp_eps is None else claimed_exp_eps
    for c in range(mech.n + 1):
        check_sampler(mech, c)
    report = worst_privacy_ratio(mech)
    if not report.within(claim):
        shown = "infinite" if report.worst_ratio is None else str(report.worst_ratio)
        raise AssertionError(
            f"privacy violated: Pr[M({report.c})={report.z}] / Pr[M({report.c_prime})={report.z}] = {shown} > {claim}"
        )
    return report
