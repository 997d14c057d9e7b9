"""The default calibration against the exact k-fold delta of the implemented law (k <= 3): soundness and tightness.

For Delta = 1 the pair (P, P + 1) dominates every adaptive step (docs/bounded-noise.md, section 3), so the exact
delta of k queries is delta = sum_y (P^k(y) - e^eps Q^k(y))_+ with Q(y) = P(y - 1), over y in Z^k. It is computed
here from the exact integer weights w (P(y) = w_|y| / d) with a sorted-ratio sweep: for each (k-1)-fold prefix
with integer masses (A, B), the last coordinate contributes exactly the outputs whose ratio a/b exceeds
e^eps B / A, a prefix of the outputs sorted by their exact rational ratio; that prefix is found by comparisons
A a > e^eps B b decided with arb balls (never equal: e^eps is irrational), and its masses are exact integer
prefix sums. So delta = (I_P - e^eps I_Q) / d^k with exact integers I_P, I_Q, evaluated as a tight arb ball.
No float decides anything.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction
from functools import cmp_to_key

import pytest

from dpspark.noise.bounded import BoundedNoise
from dpspark.noise.bounded_calibrate import calibrate


def _greater(x: int, y: int, eps: Fraction) -> bool:
    """x > e^eps * y for integers x, y >= 0 (y > 0), decided by arb at rising precision."""
    from flint import arb, ctx, fmpq

    prec = max(x.bit_length(), y.bit_length()) + 64
    old = ctx.prec
    try:
        while True:
            ctx.prec = prec
            v = arb(x) - arb(fmpq(eps.numerator, eps.denominator)).exp() * arb(y)
            if v > 0:
                return True
            if v < 0:
                return False
            prec *= 2
    finally:
        ctx.prec = old


def exact_kfold_delta(noise: BoundedNoise, k: int, eps: Fraction):
    """The exact delta(eps) of k compositions of (P, P + 1) for the implemented pmf, as a tight arb ball."""
    from flint import arb, ctx, fmpq

    M, d = noise.M, noise.d
    w = noise.half_weights()

    def W(y: int) -> int:
        return w[abs(y)] if abs(y) < M else 0

    singles = [(W(y), W(y - 1)) for y in range(-(M - 1), M + 1) if W(y)]  # (a, b), a > 0

    def by_ratio_desc(u, v):  # a/b descending, b = 0 (infinite ratio) first; exact integer comparison
        return (v[0] * u[1] > u[0] * v[1]) - (v[0] * u[1] < u[0] * v[1])

    singles.sort(key=cmp_to_key(by_ratio_desc))
    pre_a, pre_b = [0], [0]
    for a, b in singles:
        pre_a.append(pre_a[-1] + a)
        pre_b.append(pre_b[-1] + b)
    prefixes = Counter([(1, 1)])
    for _ in range(k - 1):
        nxt: Counter = Counter()
        for (A, B), m in prefixes.items():
            for a, b in singles:
                nxt[(A * a, B * b)] += m
        prefixes = nxt
    IP = IQ = 0
    for (A, B), m in prefixes.items():
        # count t of singles with A a > e^eps B b (a prefix of the sorted list)
        lo, hi = 0, len(singles)
        while lo < hi:
            mid = (lo + hi) // 2
            a, b = singles[mid]
            if B * b == 0 or _greater(A * a, B * b, eps):
                lo = mid + 1
            else:
                hi = mid
        IP += m * A * pre_a[lo]
        IQ += m * B * pre_b[lo]
    old = ctx.prec
    ctx.prec = 2 * (max(IP.bit_length(), IQ.bit_length()) + 64)
    try:
        return (arb(IP) - arb(fmpq(eps.numerator, eps.denominator)).exp() * arb(IQ)) / arb(d) ** k
    finally:
        ctx.prec = old


def _meets(M: int, family: str, bits: int, k: int, eps: Fraction, delta: Fraction) -> bool:
    from flint import arb, fmpq

    v = exact_kfold_delta(BoundedNoise(M, family, bits), k, eps)
    t = arb(fmpq(delta.numerator, delta.denominator))
    assert not v.overlaps(t), "exact delta too close to the target to decide"
    return v < t


def exact_minimum_M(family: str, bits: int, k: int, eps: Fraction, delta: Fraction, start: int) -> int:
    """Smallest M (bisection boundary, checked on both sides) whose exact delta meets the target, tables at bits."""
    lo, hi = max(3, start // 4), start
    assert _meets(hi, family, bits, k, eps, delta) and not _meets(lo, family, bits, k, eps, delta)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _meets(mid, family, bits, k, eps, delta):
            hi = mid
        else:
            lo = mid
    return hi


def test_exact_delta_matches_brute_force_at_tiny_M():
    """The sweep equals the brute-force sum over all outputs (k = 2, M = 5, both families)."""
    from flint import arb, ctx, fmpq

    from dpspark.exact import exp_lower_bound

    eps = Fraction(1, 2)
    for fam in ("p1", "p2"):
        noise = BoundedNoise(5, fam, bits=20)
        pmf = noise.pmf()
        r = exp_lower_bound(eps, 80)
        brute = Fraction(0)
        for y in itertools.product(range(-4, 6), repeat=2):
            P = pmf.get(y[0], 0) * pmf.get(y[1], 0)
            Q = pmf.get(y[0] - 1, 0) * pmf.get(y[1] - 1, 0)
            if P > r * Q:
                brute += P - r * Q
        v = exact_kfold_delta(noise, 2, eps)
        old = ctx.prec
        ctx.prec = 400
        try:
            b = arb(fmpq(brute.numerator, brute.denominator))
            assert (v - b).upper() <= 0  # brute uses r <= e^eps: it is the larger one
            assert (b - v).upper() < arb(2) ** -60
        finally:
            ctx.prec = old


GRID = [
    ("p2", 1, "1", "1e-3"), ("p2", 1, "1/2", "1e-6"), ("p1", 1, "1", "1e-6"), ("p2", 1, "1/10", "1e-10"),
    ("p2", 2, "1", "1e-3"), ("p2", 2, "1/2", "1e-6"), ("p1", 2, "1", "1e-4"),
    ("p2", 3, "1", "1e-3"), ("p2", 3, "1", "1e-6"), ("p1", 3, "3/2", "1e-4"),
]


@pytest.mark.parametrize("family,k,eps,delta", GRID)
def test_calibrated_M_is_sound_and_within_115_of_exact_minimum(family: str, k: int, eps: str, delta: str) -> None:
    """Soundness: the exact delta at the certified M is <= delta. Tightness: M <= 1.15 x the exact minimum."""
    cal = calibrate(k, eps, delta, family=family)
    e, t = Fraction(eps), Fraction(delta)
    assert _meets(cal.M, family, cal.bits, k, e, t)
    m_exact = exact_minimum_M(family, cal.bits, k, e, t, cal.M)
    assert cal.M <= Fraction(115, 100) * m_exact, (cal.M, m_exact)


def test_mutant_certifier_without_composition_is_caught():
    """A calibration that certifies k = 1 for k = 3 queries gives an M whose exact 3-fold delta misses the target."""
    cal1 = calibrate(1, "1", "1e-3")
    assert not _meets(cal1.M, "p2", cal1.bits, 3, Fraction(1), Fraction(1, 1000))
