"""Certified rational bounds on transcendental expressions (ln, exp, sqrt) of rationals.

Every value is computed as an arb ball (python-flint: a midpoint and a radius
that provably enclose the true real number) and then read back *exactly* as
the two rationals mid - rad and mid + rad, which are rounded outward onto a
dyadic grid. No float is used anywhere. When a ball is too wide for the
requested precision the working precision is doubled; the number of rounds
depends only on the public inputs and is capped.

flint is imported lazily: reading or describing a statement needs no numerics.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from dpspark.privacy.errors import PrivacyError

#: First and largest working precision (bits) of the arb evaluations.
START_PREC = 128
MAX_PREC = 1 << 20

ArbFn = Callable[[Callable[[Fraction], Any]], Any]
"""An expression builder: called with ``q`` (Fraction -> arb ball), returns an arb ball."""


def _flint() -> Any:
    import flint  # lazy: 60 ms import, not needed to read statements

    return flint


def flint_release() -> str:
    """The installed python-flint's dist-info name (its arb decides certificates), without importing flint.

    Part of the key of every memoised certified value (:mod:`dpspark.disk_memo`): another flint, another key.
    """
    import importlib.util
    import os

    spec = importlib.util.find_spec("flint")
    if spec is None or not spec.origin:
        return "?"
    site = os.path.dirname(os.path.dirname(spec.origin))
    try:
        return ",".join(sorted(n for n in os.listdir(site) if n.lower().startswith("python_flint-")))
    except OSError:
        return "?"


def _to_fraction(pair: tuple[Any, Any]) -> Fraction:
    man, exp = int(pair[0]), int(pair[1])
    return Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << -exp)


def ball_bounds(ball: Any) -> tuple[Fraction, Fraction]:
    """The exact rational endpoints (mid - rad, mid + rad) of a finite arb ball."""
    if not ball.is_finite():
        raise PrivacyError("certified evaluation failed: the enclosure is not finite (argument out of domain?)")
    mid = _to_fraction(ball.mid().man_exp())
    rad = _to_fraction(ball.rad().man_exp())
    return mid - rad, mid + rad


def round_up(x: Fraction, bits: int) -> Fraction:
    """The least multiple of 2^-bits that is >= x."""
    scaled = x * (1 << bits)
    return Fraction(-((-scaled.numerator) // scaled.denominator), 1 << bits)


def round_down(x: Fraction, bits: int) -> Fraction:
    """The greatest multiple of 2^-bits that is <= x."""
    scaled = x * (1 << bits)
    return Fraction(scaled.numerator // scaled.denominator, 1 << bits)


def _evaluate(expr: ArbFn, prec: int) -> tuple[Fraction, Fraction]:
    flint = _flint()
    with flint.ctx.workprec(prec):
        def q(x: Fraction) -> Any:
            x = Fraction(x)
            return flint.arb(flint.fmpq(x.numerator, x.denominator))

        return ball_bounds(expr(q))


def enclose(expr: ArbFn, bits: int = 64) -> tuple[Fraction, Fraction]:
    """Rationals (lo, hi) on the 2^-bits grid with lo <= value <= hi and hi - lo <= 2^(2 - bits).

    ``expr(q)`` builds the expression from arb balls ``q(fraction)``.
    """
    prec = max(START_PREC, bits + 32)
    while True:
        lo, hi = _evaluate(expr, prec)
        if hi - lo <= Fraction(1, 1 << bits):
            return round_down(lo, bits), round_up(hi, bits)
        if prec >= MAX_PREC:
            raise PrivacyError(f"certified evaluation did not reach 2^-{bits} at {prec} bits of precision")
        prec *= 2


def upper(expr: ArbFn, bits: int = 64) -> Fraction:
    """A certified upper bound on the expression's value, within 2^(2 - bits) of it."""
    return enclose(expr, bits)[1]


def lower(expr: ArbFn, bits: int = 64) -> Fraction:
    """A certified lower bound on the expression's value, within 2^(2 - bits) of it."""
    return enclose(expr, bits)[0]


def decide_sign(expr: ArbFn) -> int:
    """+1 or -1: the sign of a value the caller knows to be non-zero (raises if not decided by MAX_PREC)."""
    prec = START_PREC
    while True:
        lo, hi = _evaluate(expr, prec)
        if lo > 0:
            return 1
        if hi < 0:
            return -1
        if prec >= MAX_PREC:
            raise PrivacyError("cannot decide the sign of a privacy amount (is it exactly zero?)")
        prec *= 2


#: Terms of the series in :func:`ln_series_bracket` (a public constant: its time does not depend on the value).
LN_SERIES_TERMS = 12
#: An argument whose numerator or denominator is longer is first rounded outward onto the 2^-LN_SERIES_GRID grid
#: (ln is increasing, so ln(x rounded down) <= ln x <= ln(x rounded up)): the series' Fractions grow as x^25
#: (0.2 ms at 8 bits, about 1 s at 4096), and a composed epsilon's exp has hundreds of bits
LN_SERIES_GRID = 120


def _series(x: Fraction, terms: int, upper: bool) -> Fraction:
    """A bound on ln x (x > 0): the partial sum of 2 atanh((x - 1)/(x + 1)), plus its tail bound if ``upper``."""
    y = Fraction(x - 1, x + 1)
    y2 = y * y
    power, total = y, Fraction(0)
    for k in range(terms):
        total += power / (2 * k + 1)
        power *= y2
    tail = 2 * abs(power) / ((2 * terms + 1) * (1 - y2))
    total *= 2
    if y >= 0:
        return total + tail if upper else total
    return total if upper else total - tail


def ln_series_bracket(x: Fraction, terms: int = LN_SERIES_TERMS) -> tuple[Fraction, Fraction]:
    """Exact rationals (lo, hi) with lo <= ln(x) <= hi for a rational x > 0, without flint (no import, no rounding
    of the result: every step is exact rational arithmetic or an outward rounding of the argument).

    ln x = 2 atanh(y) = 2 sum_{k>=0} y^(2k+1) / (2k+1) with y = (x - 1)/(x + 1), |y| < 1. Every term has the
    sign of y, and the tail after ``terms`` terms is at most 2|y|^(2t+1) / ((2t+1)(1 - y^2)) in absolute value
    (a geometric bound on 1/(2k+1) <= 1/(2t+1)), so the partial sum and the partial sum plus that bound
    enclose ln x. A long x is first rounded outward (LN_SERIES_GRID). Tight for x near 1 (the epsilons of
    statements); wide for x far from 1, where callers fall back on :func:`ln_bounds`.
    """
    if x <= 0:
        raise PrivacyError("ln needs a positive argument")
    x = Fraction(x)
    lo_x = hi_x = x
    if max(x.numerator.bit_length(), x.denominator.bit_length()) > LN_SERIES_GRID:
        scaled = x * (1 << LN_SERIES_GRID)
        down = scaled.numerator // scaled.denominator
        lo_x = Fraction(down, 1 << LN_SERIES_GRID) if down > 0 else x  # x < 2^-120: kept (slow but exact)
        hi_x = Fraction(-(-scaled.numerator // scaled.denominator), 1 << LN_SERIES_GRID)
    return _series(lo_x, terms, upper=False), _series(hi_x, terms, upper=True)


def ln_bounds(x: Fraction, bits: int = 64) -> tuple[Fraction, Fraction]:
    """Certified (lo, hi) around ln(x) for a rational x > 0."""
    if x <= 0:
        raise PrivacyError("ln needs a positive argument")
    return enclose(lambda q: q(x).log(), bits)


def exp_bounds(x: Fraction, bits: int = 64) -> tuple[Fraction, Fraction]:
    """Certified (lo, hi) around e^x for a rational x (absolute precision 2^-bits)."""
    return enclose(lambda q: q(x).exp(), bits)


def sqrt_bounds(x: Fraction, bits: int = 64) -> tuple[Fraction, Fraction]:
    """Certified (lo, hi) around sqrt(x) for a rational x >= 0."""
    if x < 0:
        raise PrivacyError("sqrt needs a non-negative argument")
    return enclose(lambda q: q(x).sqrt(), bits)
