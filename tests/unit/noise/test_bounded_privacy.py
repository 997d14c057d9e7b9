"""Exact privacy checks of the bounded-noise certificate at tiny M, its mutants, and its tightness.

delta(eps) of the implemented law is computed exactly with rationals: for k
queries and a shift vector s, delta = sum_y (P(y) - e^eps Q(y))_+ with P the
product noise law and Q the shifted one. e^eps is replaced by a rational lower
bound r <= e^eps (dpspark.exact.exp_lower_bound), which can only increase the
sum, so the checked value is an exact upper bound on the true delta and is
within 2^-64 of it.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from dpspark.exact import exp_lower_bound
from dpspark.noise.bounded import BoundedNoise
from dpspark.noise.bounded_calibrate import (
    CalibrationRefused,
    certify_chernoff,
    reference_rule_accepts,
)

THETAS = (Fraction(1), Fraction(2), Fraction(4), Fraction(8))


def exact_delta(pmf: dict[int, Fraction], shifts: tuple[int, ...], r: Fraction) -> Fraction:
    """sum_y (P(y) - r Q(y))_+ over every output y of either law (exact rationals)."""
    support = [j for j, q in pmf.items() if q]
    outputs = set()
    for js in itertools.product(support, repeat=len(shifts)):
        outputs.add(js)
        outputs.add(tuple(j + s for j, s in zip(js, shifts)))
    total = Fraction(0)
    for y in outputs:
        P = Q = Fraction(1)
        for yi, s in zip(y, shifts):
            P *= pmf.get(yi, Fraction(0))
            Q *= pmf.get(yi - s, Fraction(0))
        if P > r * Q:
            total += P - r * Q
    return total


def worst_exact_delta(noise: BoundedNoise, k: int, sens: int, eps: Fraction) -> Fraction:
    r = exp_lower_bound(eps, 64)
    pmf = noise.pmf()
    # delta is invariant under permuting the queries and under s -> -s (symmetric pmf): one vector per class
    shifts = {
        min(tuple(sorted(v)), tuple(sorted(-x for x in v)))
        for v in itertools.product(range(-sens, sens + 1), repeat=k)
        if any(v)
    }
    return max(exact_delta(pmf, s, r) for s in shifts)


def best_certificate(noise: BoundedNoise, k: int, sens: int, eps: Fraction, certify=certify_chernoff) -> Fraction:
    best = None
    for J in range(0, noise.M - sens):
        for th in THETAS:
            try:
                c = certify(noise.M, noise.family, k, eps, sens, J, th, noise.bits, noise=noise)
            except CalibrationRefused:  # e.g. a zero weight inside this window
                continue
            best = c if best is None else min(best, c)
    assert best is not None
    return best


CASES = [(fam, M, k, 1) for fam in ("p1", "p2") for M in (4, 6) for k in (1, 2, 3)]
CASES += [(fam, 6, k, 2) for fam in ("p1", "p2") for k in (1, 2)]


@pytest.mark.parametrize("family,M,k,sens", CASES)
def test_exact_delta_is_below_certificate(family: str, M: int, k: int, sens: int) -> None:
    """The certified delta bounds the exact delta of the implemented law for every shift vector."""
    noise = BoundedNoise(M, family, bits=24)
    eps = Fraction(3, 2)
    exact = worst_exact_delta(noise, k, sens, eps)
    cert = best_certificate(noise, k, sens, eps)
    assert 0 < exact <= cert
    assert cert < 1  # the comparison is not vacuous
    # tightness at tiny M (report): the Chernoff certificate is within a small factor of the truth
    assert cert / exact < 8


def test_mutant_dropping_the_composition_is_caught() -> None:
    """A certifier that forgets k (certifies one query) falls below the exact delta of k = 3 queries."""
    noise = BoundedNoise(6, "p2", bits=24)
    eps = Fraction(3, 2)
    exact = worst_exact_delta(noise, 3, 1, eps)

    def one_query(M, fam, k, e, s, J, th, bits, noise=None):
        return certify_chernoff(M, fam, 1, e, s, J, th, bits, noise=noise)

    assert best_certificate(noise, 3, 1, eps, certify=one_query) < exact


def test_mutant_reference_acceptance_rule() -> None:
    """DK's reference rule calls s > (1 - L)/2 private; the exact delta there is large and we refuse."""
    M, J, sens = 4, 2, 2
    noise = BoundedNoise(M, "p2", bits=24)
    assert reference_rule_accepts(M, J, sens)  # the reference code would report delta = 0 here
    exact = worst_exact_delta(noise, 1, sens, Fraction(3, 2))
    assert exact > Fraction(1, 20)  # far from private at any small delta
    with pytest.raises(CalibrationRefused, match="not covered"):
        certify_chernoff(M, "p2", 1, Fraction(3, 2), sens, J, Fraction(1), 24, noise=noise)
    with pytest.raises(CalibrationRefused, match="not covered"):
        certify_chernoff(M, "p2", 1, Fraction(3, 2), sens, J, Fraction(1), 24)  # the large-M path too


def test_zero_weight_inside_window_is_refused() -> None:
    """A table whose weight vanishes inside the truncation window (coarse bits) is refused, not certified."""
    M = 40
    noise = BoundedNoise(M, "p2", bits=8)  # the outer weights round to 0
    w = noise.half_weights()
    assert w[M - 2] == 0
    with pytest.raises(CalibrationRefused, match="not covered"):
        certify_chernoff(M, "p2", 1, Fraction(1), 1, M - 3, Fraction(1), 8, noise=noise)


def test_taylor_certificate_bounds_exact_enumeration() -> None:
    """At M = 700 the large-M (Taylor-model) certificate is >= the exact-weights one and within 0.1% of it

    where the MGF term dominates (its tail term k*tau uses a convexity bound, about 1.3x the exact tail).
    """
    M, bits, J, th, k, eps = 700, 120, 650, Fraction(20), 50, Fraction(1)  # MGF-dominated (tail term tiny)
    noise = BoundedNoise(M, "p2", bits)
    exact = certify_chernoff(M, "p2", k, eps, 1, J, th, bits, noise=noise)
    taylor = certify_chernoff(M, "p2", k, eps, 1, J, th, bits)
    assert exact <= taylor <= exact * Fraction(1001, 1000)


@pytest.mark.parametrize("family,M,k", [("p1", 4, 3), ("p2", 6, 1), ("p2", 6, 2), ("p2", 6, 3)])
def test_pld_certificate_bounds_exact_delta(family: str, M: int, k: int) -> None:
    """The certified PLD composition is >= the exact delta and close to it at tiny M."""
    from dpspark.noise.bounded_pld import pld_delta

    noise = BoundedNoise(M, family, bits=24)
    eps = Fraction(3, 2)
    exact = worst_exact_delta(noise, k, 1, eps)
    pld = pld_delta(noise, k, eps, eta=Fraction(1, 1 << 10))
    assert exact <= pld <= exact * Fraction(3, 2)


def test_pld_mutant_rounding_losses_down_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PLD that rounds the privacy losses down instead of up undercuts the exact delta."""
    from dpspark.noise import bounded_pld

    noise = BoundedNoise(6, "p2", bits=24)
    eps = Fraction(3, 2)
    exact = worst_exact_delta(noise, 2, 1, eps)
    coarse = Fraction(1, 4)
    assert bounded_pld.pld_delta(noise, 2, eps, eta=coarse) >= exact
    monkeypatch.setattr(bounded_pld, "_ROUND_UP", False)
    assert bounded_pld.pld_delta(noise, 2, eps, eta=coarse) < exact


def test_log_concavity_check() -> None:
    from dpspark.noise.bounded_pld import is_log_concave

    assert not is_log_concave(BoundedNoise(30, "p2", bits=64))  # rounding breaks it in the far tail (|j| = 28)
    noise = BoundedNoise(30, "p2", bits=200)
    assert is_log_concave(noise)
    t = noise.table()
    t[3] = t[2] + 1  # weight 1 at |j| = 3 between two large ones: not log-concave
    bumped = BoundedNoise.from_table(30, "p2", 200, t)
    assert not is_log_concave(bumped)


@pytest.mark.parametrize("k", [1, 2])
def test_non_log_concave_table_is_certified_shift_by_shift(k: int) -> None:
    """Rounded weights need not be log-concave (DK Lemma 10.3 then fails): p2, M = 8, b = 10 has w_6 = 4, w_7 = 1.

    The Chernoff certificate bounds every shift 1..Delta itself, so it still bounds the exact delta of the
    implemented law over every shift vector; the PLD method, which needs the worst shift to be Delta, refuses.
    """
    from dpspark.noise.bounded_pld import PLDRefused, is_log_concave, pld_delta

    noise = BoundedNoise(8, "p2", bits=10)
    assert not is_log_concave(noise)
    eps = Fraction(3, 2)
    exact = worst_exact_delta(noise, k, 2, eps)
    cert = best_certificate(noise, k, 2, eps)
    assert 0 < exact <= cert < 1
    with pytest.raises(PLDRefused, match="log-concave"):
        pld_delta(noise, k, eps, sensitivity=2)
