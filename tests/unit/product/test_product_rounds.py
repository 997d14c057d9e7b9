"""The derived constants of dpspark.mechanisms.product.rounds against the tail bounds they come from (exact or certified)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpspark.mechanisms.product import rounds as rd


def test_ln_and_sqrt_bounds() -> None:
    for x in (Fraction(1), Fraction(2), Fraction(3), Fraction(10**9, 7), Fraction(16 * 10**7 * 11, 1) / Fraction(1, 10)):
        assert rd.ln_upper(x) >= math.log(x)  # report: checking an upper bound against the float log
        assert rd.ln_upper(x) <= math.log(x) * 1.01 + 0.05  # report: and that it is tight
    for x in (Fraction(0), Fraction(2), Fraction(1, 3), Fraction(10**12 + 7)):
        assert rd.sqrt_down(x) ** 2 <= x <= rd.sqrt_up(x) ** 2
        assert rd.sqrt_up(x) - rd.sqrt_down(x) <= Fraction(2, 1 << 40)


def _binom_upper_tail(size: int, u: Fraction, c: int) -> Fraction:
    """Pr[Binomial(size, u) > c], exactly."""
    return sum((math.comb(size, k) * u**k * (1 - u) ** (size - k) for k in range(c + 1, size + 1)), Fraction(0))


@pytest.mark.parametrize("size,u,L", [(64, Fraction(1, 8), Fraction(5)), (120, Fraction(1, 32), Fraction(8)),
                                      (24, Fraction(1, 4), Fraction(3))])
def test_ceiling_is_a_bernstein_tail_bound(size: int, u: Fraction, L: Fraction) -> None:
    """A record whose coordinates all have bias u exceeds the ceiling w.p. <= e^{-L} (worst case: bias = u)."""
    c = rd.ceiling(u, size, L)
    tail = _binom_upper_tail(size, u, c)
    assert tail <= Fraction(math.exp(-float(L))) * Fraction(1001, 1000)  # report: e^-L as a float bound
    assert _binom_upper_tail(size, u, c // 2) > tail  # the ceiling is not vacuous


def _log_pmf(m: int, v: float, k: int) -> float:
    """Binomial(m, v) pmf at k via lgamma (report: a float check of a tail bound)."""
    return math.exp(math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1)
                    + k * math.log(v) + (m - k) * math.log1p(-v))  # report


@pytest.mark.parametrize("v,e,sigma,L", [(Fraction(1, 4), Fraction(1, 16), Fraction(5), Fraction(8)),
                                          (Fraction(1, 16), Fraction(1, 64), Fraction(3), Fraction(6))])
def test_size_needed_meets_both_tail_bounds(v: Fraction, e: Fraction, sigma: Fraction, L: Fraction) -> None:
    """At m = size_needed: Pr[|Bin(m, v) - v m| > e m / 2] <= 2 e^{-L}, and sigma sqrt(2L) <= e m / 2."""
    m = math.ceil(rd.size_needed(v, e, sigma, L))
    assert sigma * rd.sqrt_down(2 * L) <= e * m / 2
    lo, hi = float(v * m - e * m / 2), float(v * m + e * m / 2)  # report
    p = sum(_log_pmf(m, float(v), k) for k in range(m + 1) if k < lo or k > hi)  # report
    assert p <= 2 * math.exp(-float(L)) * 1.001  # report


def _exact_tail_mass(ps: list[Fraction], c: int) -> Fraction:
    """E[X 1{X > c}] for X = a sum of independent Bernoulli(p_i), exactly (Poisson-binomial pmf)."""
    pmf = [Fraction(1)]
    for p in ps:
        pmf = [a * (1 - p) + b * p for a, b in zip(pmf + [Fraction(0)], [Fraction(0)] + pmf)]
    return sum((k * w for k, w in enumerate(pmf) if k > c), Fraction(0))


@pytest.mark.parametrize("ps", [[Fraction(1, 20)] * 40, [Fraction(1, 8)] * 16 + [Fraction(1, 100)] * 30,
                                [Fraction(1, 3)] * 9, [Fraction(1, 2)] * 6])
def test_tail_mass_bound_is_above_the_exact_tail_mass(ps: list[Fraction]) -> None:
    """Chernoff's E[X 1{X > C}] bound against the exact Poisson-binomial value, at every C (mean <= v)."""
    v, size = sum(ps, Fraction(0)), len(ps)
    for c in range(size + 1):
        assert _exact_tail_mass(ps, c) <= rd.tail_mass_bound(v, c, size)
        assert _exact_tail_mass(ps, c) <= rd.tail_mass_bound(v + Fraction(1, 3), c, size)  # any v above the mean
    # not vacuous: the bound is small a few standard deviations up
    assert rd.tail_mass_bound(v, size // 2, size) < Fraction(1, 10) or size < 12


def test_tail_ceiling_is_the_smallest_ceiling_meeting_eta() -> None:
    for v, size, eta in ((Fraction(2), 1000, Fraction(1, 160)), (Fraction(1, 2), 50, Fraction(1, 1000)),
                         (Fraction(30), 1000, Fraction(1, 500)), (Fraction(5), 8, Fraction(1, 10**6))):
        c = rd.tail_ceiling(v, size, eta)
        assert rd.tail_mass_bound(v, c, size) <= eta
        assert c == 0 or rd.tail_mass_bound(v, c - 1, size) > eta
    # much below the union-bound ceiling at the same mass (the expectation needs far less)
    assert rd.tail_ceiling(Fraction(2), 1000, Fraction(1, 160)) < rd.ceiling_mass(Fraction(2), 1000, Fraction(20)) // 2


@pytest.mark.parametrize("size,c,rho", [(10, 10, Fraction(1, 2)), (300, 20, Fraction(1, 200)), (5, 1, Fraction(3))])
def test_group_and_count_sigmas_cover_their_budgets(size: int, c: int, rho: Fraction) -> None:
    """group_sigma: certified Delta_sub^2 rho(1) <= rho and Delta_ar^2 rho(1) <= (1 - KAPPA) rho; count_sigma:
    rho(1) <= KAPPA rho; and the grid step below would not do (sigma is the smallest on the grid)."""
    from dpspark.noise.dgauss import vector_rho

    radius = 1000
    s = rd.group_sigma(size, c, rho, radius)
    mech = rd.gaussian(s, radius)
    sub, ar = rd.sensitivity_sq(size, c), rd.sensitivity_sq(size, c, "add_remove")
    assert vector_rho(mech, [1] * sub) <= rho and vector_rho(mech, [1] * ar) <= (1 - rd.KAPPA) * rho
    below = s * Fraction(99, 100)
    assert below < 1 or max(Fraction(sub), ar / (1 - rd.KAPPA)) / (2 * below**2) > rho
    s0 = rd.count_sigma(rho, radius)
    assert rd.gaussian(s0, radius).zcdp_rho(1) <= rd.KAPPA * rho
    noise = rd.RoundNoise(((size, c),), (s,), s0, radius)
    assert noise.rho("substitute") <= rho and noise.rho("add_remove") <= rho


def test_smallest_units_is_the_least_n_of_a_monotone_predicate() -> None:
    assert rd.smallest_units(lambda n: n >= 1) == 2
    assert rd.smallest_units(lambda n: n * n >= 10**9) == 31623
    assert rd.smallest_units(lambda n: n >= 12345, start=100) == 12345
