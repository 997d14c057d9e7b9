"""The wrap-around tail bound stays an upper bound, and stays small, when the window is very wide."""

from __future__ import annotations

import time
from fractions import Fraction

from flint import arb

from dpspark.noise.dgauss import DiscreteGaussian
from dpspark.noise.dgauss_weights import half_inv_sigma2, precision, q, tail_bound, upper


def _formula(W: int, sigma: Fraction, R: int, prec: int) -> Fraction:
    m, a = 2 * R + 1, half_inv_sigma2(sigma)
    with precision(prec):
        return upper(2 * arb(W) * arb(q(-(R + 1) ** 2 * a)).exp() / (1 - arb(q(-2 * m * (R + 1) * a)).exp()))


def test_closed_form_is_above_the_formula_where_it_takes_over() -> None:
    sigma, W, prec = Fraction(3, 2), 1 << 120, 128
    a = half_inv_sigma2(sigma)
    R = next(r for r in range(1, 10**4) if (r + 1) ** 2 * a >= 2 * prec + W.bit_length() + 2)
    for r in (R, R + 1, 2 * R):
        assert tail_bound(W, sigma, r, prec) == Fraction(1, 1 << (2 * prec))
        assert _formula(W, sigma, r, prec) <= tail_bound(W, sigma, r, prec)
    assert tail_bound(W, sigma, R - 1, prec) == _formula(W, sigma, R - 1, prec)  # below the switch: the formula


def test_a_wide_window_is_fast() -> None:
    started = time.monotonic()
    DiscreteGaussian(sigma="3/2", data_radius=10**12)
    assert time.monotonic() - started < 30  # the uncapped exact endpoint took minutes or overflowed
