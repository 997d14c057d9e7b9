"""Certified integer weights of the strict-time discrete Gaussian.

Everything here is exact integer arithmetic or python-flint arb balls
(rigorous error bounds); a value that decides a weight is either an exact
integer or the unique integer inside a certified ball. No float is used.

The Gaussian part of the weight at y is floor(W * exp(-y^2 / (2 sigma^2))). It is
computed by a multiplicative recurrence on fixed-point integers with one-sided
rounding (lower and upper bounds carried separately), and an arb evaluation
decides the rare points where the two bounds straddle an integer.
"""

from __future__ import annotations

from contextlib import contextmanager
from fractions import Fraction
from typing import Iterator

from flint import arb, ctx, fmpq
from gmpy2 import mpz

#: largest precision (bits) an arb floor evaluation may escalate to before giving up
MAX_PREC = 1 << 14


@contextmanager
def precision(bits: int) -> Iterator[None]:
    """Run arb arithmetic at ``bits`` of working precision (restores the previous setting)."""
    old = ctx.prec
    ctx.prec = bits
    try:
        yield
    finally:
        ctx.prec = old


def q(x: Fraction | int) -> fmpq:
    """An exact fmpq from a Fraction or int."""
    x = Fraction(x)
    return fmpq(x.numerator, x.denominator)


def exact_fraction(a: arb) -> Fraction:
    """The exact rational value of an arb with zero radius (e.g. ``ball.upper()``)."""
    if not a.is_finite():
        raise ArithmeticError("not a finite number")
    man, exp = a.man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << -exp)


#: precision for reading a ball's endpoint: wide enough that no rounding happens for the balls here
#: (arb rounds endpoints outward anyway, so the bound stays valid even if it did)
_ENDPOINT_PREC = 4096


def upper(a: arb) -> Fraction:
    """A rational upper bound of every point of the ball ``a``."""
    with precision(_ENDPOINT_PREC):
        return exact_fraction(a.upper())


def lower(a: arb) -> Fraction:
    """A rational lower bound of every point of the ball ``a``."""
    with precision(_ENDPOINT_PREC):
        return exact_fraction(a.lower())


def half_inv_sigma2(sigma: Fraction) -> Fraction:
    """1 / (2 sigma^2), exactly."""
    return 1 / (2 * sigma * sigma)


def gauss_arb(W: int, sigma: Fraction, y: int) -> arb:
    """W * exp(-y^2 / (2 sigma^2)) as an arb ball at the current precision (direct, no recurrence)."""
    return arb(W) * arb(q(-(y * y) * half_inv_sigma2(sigma))).exp()


def gauss_floor_direct(W: int, sigma: Fraction, y: int, prec: int) -> int:
    """floor(W * exp(-y^2/(2 sigma^2))), certified by arb; precision doubles (publicly bounded) until unique."""
    p = prec
    while p <= MAX_PREC:
        with precision(p):
            f = gauss_arb(W, sigma, y).floor().unique_fmpz()
        if f is not None:
            return int(f)
        p *= 2
    raise ArithmeticError(f"could not decide floor(W exp(-y^2/2sigma^2)) at y={y} within {MAX_PREC} bits")


def theta_ball(sigma: Fraction, prec: int) -> arb:
    """theta(sigma) = sum_{z in Z} exp(-z^2/(2 sigma^2)) as a certified ball, sigma >= 1.

    Poisson summation (the Jacobi theta transformation):
    theta = sigma sqrt(2 pi) (1 + 2 sum_{k>=1} exp(-2 pi^2 sigma^2 k^2)). The sum is
    cut after k0 terms; the rest is at most e^{-c (k0+1)^2} / (1 - e^{-c}),
    c = 2 pi^2 sigma^2, and enters the ball as [0, that bound].
    """
    if sigma < 1:
        raise ValueError("theta_ball assumes sigma >= 1")
    with precision(prec + 32):
        pi = arb.pi()
        c = 2 * pi * pi * arb(q(sigma * sigma))
        k0 = 2
        while 20 * (k0 + 1) ** 2 < prec + 64:  # c >= 19.7 since sigma >= 1: e^{-c k^2} < 2^{-28 k^2}
            k0 += 1
        total = arb(1)
        for k in range(1, k0 + 1):
            total += 2 * (-(c * (k * k))).exp()
        tail = 2 * (-(c * ((k0 + 1) ** 2))).exp() / (1 - (-c).exp())
        total += arb(0).union(tail.upper())
        return arb(q(sigma)) * (2 * pi).sqrt() * total


def _fixed_point_seeds(sigma: Fraction, P: int) -> tuple[int, int, int, int]:
    """Integer bounds (rlo, rhi, qlo, qhi) of 2^P e^{-1/2s^2} and 2^P e^{-1/s^2} (arb enclosures)."""
    a = half_inv_sigma2(sigma)
    with precision(P + 64):
        r0 = arb(q(-a)).exp() * (1 << P)
        qq = arb(q(-2 * a)).exp() * (1 << P)
        return (
            int(r0.lower().floor().unique_fmpz()),
            int(r0.upper().ceil().unique_fmpz()),
            int(qq.lower().floor().unique_fmpz()),
            int(qq.upper().ceil().unique_fmpz()),
        )


def gauss_floor_table(W: int, sigma: Fraction, T: int, P: int) -> list[int]:
    """floor(W exp(-y^2/(2 sigma^2))) for y in [0, T], certified.

    exp(-(y+1)^2/2s^2) = exp(-y^2/2s^2) * r_y with r_y = exp(-1/2s^2) * exp(-1/s^2)^y.
    Both products are carried at scale 2^P as a floor (a lower bound) and a
    ceiling (an upper bound) of exact integer products, seeded with arb
    enclosures of the two constants. When floor(W lo) and floor(W hi) agree
    they are the certified floor; otherwise a direct arb evaluation decides.
    The error grows like y^2 units of 2^-P, so P = bits + 2 bitlen(T) + 40 leaves
    about 2^-40 relative slack at the edge of the body.
    """
    rlo, rhi, qlo, qhi = (mpz(v) for v in _fixed_point_seeds(sigma, P))  # GMP: ~20% faster here
    Wz = mpz(W)
    one = mpz(1) << P
    out = [0] * (T + 1)
    out[0] = W
    elo = ehi = one
    for y in range(1, T + 1):
        elo = (elo * rlo) >> P
        ehi = min(one, ((ehi * rhi) >> P) + 1)
        rlo = (rlo * qlo) >> P
        rhi = ((rhi * qhi) >> P) + 1
        a = (Wz * elo) >> P
        out[y] = int(a) if a == (Wz * ehi) >> P else gauss_floor_direct(W, sigma, y, P + 64)
    return out


def last_positive(W: int, sigma: Fraction, cap: int, prec: int) -> int:
    """T = max{y in [0, cap] : floor(W e^{-y^2/2s^2}) >= 1}, by bisection (needs floor(...) = 0 at cap)."""
    lo, hi = 0, cap  # floor >= 1 at lo (W >= 1), = 0 at hi
    if gauss_floor_direct(W, sigma, hi, prec) != 0:
        raise ArithmeticError("cap is not past the Gaussian body")
    while hi - lo > 1:  # about log2(cap) rounds, public
        mid = (lo + hi) // 2
        if gauss_floor_direct(W, sigma, mid, prec) >= 1:
            lo = mid
        else:
            hi = mid
    return lo


def tail_bound(W: int, sigma: Fraction, R: int, prec: int) -> Fraction:
    """Rational upper bound on sum_{k != 0} W exp(-(y + k m)^2 / 2sigma^2) over |y| <= R, m = 2R+1.

    |y + k m| >= R + 1 + (|k| - 1) m and (R+1+j m)^2 >= (R+1)^2 + 2 j m (R+1), so the
    sum is at most 2 W e^{-(R+1)^2/2s^2} / (1 - e^{-m (R+1)/s^2}).
    """
    m = 2 * R + 1
    a = half_inv_sigma2(sigma)
    # A wide window (large data_radius) makes the bound astronomically small, and its exact upper endpoint
    # billions of bits long. With x = (R+1)^2 a and m (R+1) a >= 1 the denominator is >= 1 - e^-2 > 1/2, so
    # the bound is <= 4 W e^-x <= 2^(2 + bitlen(W) - x) <= 2^-2prec once x >= 2 prec + bitlen(W) + 2.
    if m * (R + 1) * a >= 1 and (R + 1) ** 2 * a >= 2 * prec + W.bit_length() + 2:
        return Fraction(1, 1 << (2 * prec))
    with precision(prec):
        num = 2 * arb(W) * arb(q(-(R + 1) ** 2 * a)).exp()
        den = 1 - arb(q(-2 * m * (R + 1) * a)).exp()
        return upper(num / den)
