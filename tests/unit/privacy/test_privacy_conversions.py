"""Measure conversions: certified bounds bracket mpmath references, CKS <= Bun-Steinke, and soundness has teeth.

Soundness reference: the Gaussian mechanism with sensitivity 1 and sigma^2 = 1/(2 rho)
is exactly rho-zCDP, and its exact (eps, delta) curve is
delta_G(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), mu = sqrt(2 rho)
(Balle-Wang 2018, Thm 8). Any sound rho-zCDP => (eps, delta) conversion must give
delta_G(eps) <= delta; the check below evaluates it with mpmath at 60 digits.
"""

from __future__ import annotations

from fractions import Fraction as F
from typing import Callable

import mpmath
import pytest

from dpspark.privacy import (
    ApproxDP,
    LogEpsilon,
    PrivacyError,
    PureDP,
    ZCDP,
    cks_alpha,
    cks_epsilon_upper,
    pure_to_zcdp,
    zcdp_to_approx_dp,
    zcdp_to_approx_dp_cks,
)

mpmath.mp.dps = 60
GRID = [(F(1, 1000), F(1, 10**6)), (F(1, 50), F(1, 10**9)), (F(1, 2), F(1, 10**9)), (F(1, 2), F(1, 100)),
        (F(3), F(1, 10**12)), (F(40), F(1, 10**5)), (F(1, 10**5), F(1, 2**200))]


def mp(x: F) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def bs_ref(rho: F, delta: F) -> mpmath.mpf:
    return mp(rho) + 2 * mpmath.sqrt(mp(rho) * mpmath.log(1 / mp(delta)))


def cks_eps_ref(rho: F, delta: F, alpha: F) -> mpmath.mpf:
    a = mp(alpha)
    return a * mp(rho) + (mpmath.log(1 / mp(delta)) + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)


def cks_delta_ref(rho: F, eps: F, alpha: F) -> mpmath.mpf:
    """CKS20 Cor. 13's delta at one alpha, as printed: exp((a-1)(a rho - eps))/(a-1) * (1 - 1/a)^a."""
    a = mp(alpha)
    return mpmath.exp((a - 1) * (a * mp(rho) - mp(eps))) / (a - 1) * (1 - 1 / a) ** a


def gaussian_delta(rho: F, eps: F) -> mpmath.mpf:
    mu = mpmath.sqrt(2 * mp(rho))
    e = mp(eps)
    return mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)


def assert_sound(conversion: Callable[[ZCDP, F], ApproxDP]) -> None:
    """Fails when a conversion claims (eps, delta) that the exactly rho-zCDP Gaussian mechanism violates."""
    for rho, delta in GRID:
        got = conversion(ZCDP(rho), delta)
        assert got.delta == delta
        assert gaussian_delta(rho, got.epsilon.as_fraction()) <= mp(delta), (rho, delta, got)


@pytest.mark.parametrize("rho, delta", GRID)
def test_bun_steinke_is_a_tight_certified_upper_bound(rho: F, delta: F) -> None:
    eps = zcdp_to_approx_dp(ZCDP(rho), delta).epsilon.as_fraction()
    r = bs_ref(rho, delta)
    assert r <= mp(eps) <= r + mpmath.mpf(2) ** -61
    assert eps.denominator <= 2**64  # on the 2^-64 grid


@pytest.mark.parametrize("rho, delta", GRID)
def test_cks_bound_is_certified_valid_and_below_bun_steinke(rho: F, delta: F) -> None:
    alpha = cks_alpha(rho, delta)
    eps = zcdp_to_approx_dp_cks(ZCDP(rho), delta).epsilon.as_fraction()
    r = cks_eps_ref(rho, delta, alpha)
    assert max(r, 0) <= mp(eps) <= max(r, 0) + mpmath.mpf(2) ** -61
    # the corollary as printed (delta as a function of eps), at our alpha and eps: our algebra solved it right
    assert cks_delta_ref(rho, eps, alpha) <= mp(delta) * (1 + mpmath.mpf(10) ** -40)
    bs = zcdp_to_approx_dp(ZCDP(rho), delta).epsilon.as_fraction()
    assert eps < bs


@pytest.mark.parametrize("rho, delta", GRID[1:5])
def test_cks_alpha_is_near_the_continuous_optimum(rho: F, delta: F) -> None:
    def eps_of(t: mpmath.mpf) -> mpmath.mpf:
        return t * mp(rho) + (mpmath.log(1 / mp(delta)) + (t - 1) * mpmath.log(1 - 1 / t) - mpmath.log(t)) / (t - 1)

    best = mpmath.findroot(lambda t: mpmath.diff(eps_of, t), mp(cks_alpha(rho, delta)))
    got = mp(zcdp_to_approx_dp_cks(ZCDP(rho), delta).epsilon.as_fraction())
    assert eps_of(best) <= got <= eps_of(best) * (1 + mpmath.mpf(10) ** -6)


def test_explicit_alpha_and_degenerate_cases() -> None:
    assert zcdp_to_approx_dp_cks(ZCDP("1/2"), "1e-9", alpha=20).epsilon.as_fraction() == cks_epsilon_upper("1/2", "1e-9", 20)
    assert zcdp_to_approx_dp(ZCDP(0), "1e-9") == ApproxDP(0, "1e-9")
    assert zcdp_to_approx_dp_cks(ZCDP(0), "1e-9") == ApproxDP(0, "1e-9")
    assert zcdp_to_approx_dp_cks(ZCDP("1/2"), 1) == ApproxDP(0, 1)
    # tiny rho, large delta: the CKS value is negative and clamps to 0, which the corollary allows
    assert cks_eps_ref(F(1, 10**6), F(1, 2), F(2)) < 0
    assert zcdp_to_approx_dp_cks(ZCDP(F(1, 10**6)), F(1, 2), alpha=2).epsilon.as_fraction() == 0
    for bad in (0, "-1/2", "3/2"):
        with pytest.raises(PrivacyError):
            zcdp_to_approx_dp(ZCDP("1/2"), bad)
    with pytest.raises(PrivacyError):
        cks_epsilon_upper("1/2", "1e-9", 1)


def test_conversions_are_sound_against_the_gaussian_mechanism() -> None:
    assert_sound(zcdp_to_approx_dp)
    assert_sound(zcdp_to_approx_dp_cks)


def test_an_unsound_conversion_is_caught() -> None:
    """Mutant: rho + sqrt(rho ln(1/delta)) (the factor 2 dropped), computed with the same certified rounding."""
    from dpspark.privacy import certified

    def mutant(m: ZCDP, delta: F) -> ApproxDP:
        return ApproxDP(certified.upper(lambda q: q(m.rho) + (q(m.rho) * (-q(delta).log())).sqrt()), delta)

    with pytest.raises(AssertionError):
        assert_sound(mutant)



def assert_solves_the_corollary(conversion: Callable[[ZCDP, F, F], F]) -> None:
    """Fails when eps(alpha) does not satisfy CKS20 Cor. 13 as printed: delta(eps, alpha) <= delta."""
    for rho, delta in GRID:
        alpha = cks_alpha(rho, delta)
        assert cks_delta_ref(rho, conversion(ZCDP(rho), delta, alpha), alpha) <= mp(delta) * (1 + mpmath.mpf(10) ** -40)


def test_a_wrong_cks_rearrangement_is_caught() -> None:
    """Mutant: a ln(1 - 1/a) instead of (a - 1) ln(1 - 1/a) when solving the corollary for eps."""
    from dpspark.privacy import certified

    def ours(m: ZCDP, delta: F, alpha: F) -> F:
        return cks_epsilon_upper(m.rho, delta, alpha)

    def mutant(m: ZCDP, delta: F, alpha: F) -> F:
        return certified.upper(
            lambda q: q(alpha) * q(m.rho) + (-q(delta).log() + q(alpha) * (-1 / q(alpha)).log1p() - q(alpha).log()) / (q(alpha) - 1)
        )

    assert_solves_the_corollary(ours)
    with pytest.raises(AssertionError):
        assert_solves_the_corollary(mutant)


@pytest.mark.parametrize("eps", ["0", "1/3", "1", "5"])
def test_pure_to_zcdp_exact_for_rationals(eps: str) -> None:
    assert pure_to_zcdp(PureDP(eps)).rho == F(eps) ** 2 / 2


@pytest.mark.parametrize("r, f", [(F(3, 2), F(1, 2**126)), (F(1001, 1000), F(0)), (F(20), F(1, 3))])
def test_pure_to_zcdp_certified_upper_for_log_epsilons(r: F, f: F) -> None:
    rho = pure_to_zcdp(PureDP(LogEpsilon(r, f))).rho
    true = (mpmath.log(mp(r)) + mp(f)) ** 2 / 2
    assert true <= mp(rho) <= true + mpmath.mpf(2) ** -60


def test_pure_to_zcdp_is_sound_for_randomized_response() -> None:
    """Randomized response with ratio r is ln(r)-DP; its Renyi divergences must stay <= alpha * rho."""
    r = F(3)
    rho = mp(pure_to_zcdp(PureDP(LogEpsilon(r))).rho)
    p, q = mp(r) / (1 + mp(r)), 1 / (1 + mp(r))
    for a in [mpmath.mpf(k) / 4 for k in range(5, 200)]:
        d = mpmath.log(p**a * q ** (1 - a) + q**a * p ** (1 - a)) / (a - 1)
        assert d <= a * rho
