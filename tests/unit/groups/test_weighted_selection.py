"""Weighted key selection for k > 1 (issue 34 §2): integer l2 weights, certified discrete Gaussian, exact new-key law."""

from __future__ import annotations

from fractions import Fraction
from math import isqrt

import pytest

from dpspark.mechanisms.groups.weighted_selection import WeightedSelection, _new_key_delta, weights
from dpspark.noise.dgauss import l2_rho, vector_rho
from dpspark.rng import SeededRandom


def _small() -> WeightedSelection:
    """eps = 4, delta = 1/100, k = 2, W = 16: sigma = 14.4, a support of 749 points (exact enumeration)."""
    return WeightedSelection(Fraction(4), Fraction(1, 100), 2, scale=16)


def _keep_by_enumeration(sel: WeightedSelection, x: int) -> Fraction:
    """Pr[rep((min(x, 2T) + Z) mod M) >= tau], summing the implemented pmf over its whole support."""
    dg = sel.dg
    x = min(x, sel.cap)
    return sum((p for y, p in zip(range(-dg.R, dg.R + 1), dg.pmf()) if int(dg.wrap(x + y, dg.T)) >= sel.tau),
               Fraction(0))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7])
def test_weights_are_the_largest_integers_within_the_l2_ball(k: int) -> None:
    for scale in (4, 64, 1000):
        w = weights(k, scale)
        for m, wm in enumerate(w, start=1):
            assert m * wm * wm <= scale * scale < m * (wm + 1) ** 2


def test_the_unit_rho_is_the_stated_rho_and_broken_weights_exceed_it() -> None:
    """Every unit's shift vector (m keys of weight w(m)) has certified rho <= the stated l2 rho; the mutant
    weight isqrt(W^2 / m) + 1 (norm above W) exceeds it."""
    sel = WeightedSelection(Fraction(1, 2), Fraction(1, 10**6), 4)
    stated = l2_rho(sel.dg, sel.scale)
    assert stated == sel.rho
    for m, wm in enumerate(sel.w, start=1):
        assert vector_rho(sel.dg, [wm] * m) <= stated
    assert vector_rho(sel.dg, [isqrt(sel.scale**2 // 2) + 1] * 2) > stated


def test_new_key_law_is_exact_and_within_the_stated_delta() -> None:
    """The keep probability (scaled CDF, wrap-around included) equals the pmf's sum; the new-key term meets delta."""
    sel = _small()
    for x in (0, 1, sel.w[-1], sel.w[0], sel.tau - 1, sel.tau, sel.tau + 3, sel.cap, sel.cap + 50):
        assert sel.keep_probability(x) == _keep_by_enumeration(sel, x)
    exact_new = max(1 - (1 - _keep_by_enumeration(sel, wm)) ** m for m, wm in enumerate(sel.w, start=1))
    assert exact_new == sel.delta_t
    assert sel.delta() == sel.delta_g + sel.eps_g.exp_upper() * exact_new <= Fraction(1, 100)
    assert sel.epsilon().le(4)


def test_a_threshold_for_k_key_units_only_is_caught() -> None:
    """Mutant: tau set for units with k keys (weight w(k)); a one-key unit's key (weight W) then leaks."""
    sel = _small()
    budget = (Fraction(1, 100) - sel.delta_g) / sel.eps_g.exp_upper()
    lo = sel.scale
    while 1 - (1 - _keep_at(sel, sel.w[-1], lo)) ** sel.k > budget:  # the least tau for w(k)-weight keys alone
        lo += 1
    assert lo < sel.tau
    assert _keep_at(sel, sel.w[0], lo) > budget


def _keep_at(sel: WeightedSelection, x: int, tau: int) -> Fraction:
    old = sel.tau
    sel.tau = tau
    try:
        return _keep_by_enumeration(sel, x)
    finally:
        sel.tau = old


def test_selection_saturates_and_draws_once_per_key() -> None:
    sel = WeightedSelection(Fraction(1, 2), Fraction(1, 10**6), 4)
    assert sel.keep_probability(sel.cap) > 1 - Fraction(1, 10**20)
    assert _new_key_delta(sel.dg, sel.w, sel.tau) == sel.delta_t
    kept = sel.select([1, sel.cap, 10**12], SeededRandom(2))
    assert kept[1:] == [True, True] and len(kept) == 3
