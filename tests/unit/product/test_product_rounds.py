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


def test_allocate_gives_each_round_its_size() -> None:
    needs = [Fraction(1000), Fraction(5000), Fraction(300)]
    sl = rd.allocate(needs, 100000, 1 << 12)
    assert sl[0][0] == 0 and sl[-1][1] == 1 << 12
    assert all(a[1] == b[0] for a, b in zip(sl, sl[1:]))
    assert all(rd.nominal_size(100000, lo, hi, 1 << 12) >= need for (lo, hi), need in zip(sl, needs))
    with pytest.raises(rd.NeedMoreUnits, match="units"):
        rd.allocate(needs, 6000, 1 << 12)
