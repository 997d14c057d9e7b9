"""Exact parameter parsing and certified rational bounds.

Privacy parameters decide probabilities, so they must be exact. They are
accepted as ``str`` ("1/10", "0.1", "2^-70"), ``int`` or ``Fraction``, and never
as ``float``, ``numpy.floating`` or ``Decimal``: ``Decimal(0.1)`` silently
carries the binary float's 55 significant bits, and ``0.1`` is not 1/10.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from numbers import Rational
from typing import Union

from dpspark.errors import ParameterError, ParameterTypeError

RationalLike = Union[str, int, Fraction]

_POWER = re.compile(r"^\s*(\d+)\s*(?:\^|\*\*)\s*\(?\s*(-?\d+)\s*\)?\s*$")


def parse_rational(value: object, name: str) -> Fraction:
    """Return ``value`` as an exact Fraction, or raise ParameterTypeError/ParameterError (a TypeError/ValueError) naming it.

    Accepted: int (not bool), Fraction (or any exact ``numbers.Rational``), and
    strings such as "1/10", "0.1", "1e-3", "2^-70" or "2**-70".
    """
    if isinstance(value, bool):
        raise ParameterTypeError(f"{name} must be a str, int or Fraction, not bool")
    if isinstance(value, float) or type(value).__module__ == "numpy" and "float" in type(value).__name__:
        raise ParameterTypeError(
            f"{name} was given as a float ({type(value).__name__}); floats are not exact "
            f"(0.1 is really 0.1000000000000000055511151231257827...). "
            f"Pass it as a string such as \"1/10\" or \"0.1\", an int, or a fractions.Fraction."
        )
    if isinstance(value, Decimal):
        raise ParameterTypeError(
            f"{name} was given as a Decimal; Decimal(0.1) silently carries a float's bits. "
            f"Pass it as a string such as \"1/10\", an int, or a fractions.Fraction."
        )
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, str):
        m = _POWER.match(value)
        if m:
            base, exp = int(m.group(1)), int(m.group(2))
            if base == 0 and exp < 0:
                raise ParameterError(f"{name}: {value!r} divides by zero")
            return Fraction(base) ** exp
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ParameterError(
                f"{name}: cannot read {value!r} as an exact rational; use forms like \"1/10\", \"0.1\" or \"2^-70\""
            ) from None
    raise ParameterTypeError(f"{name} must be a str, int or Fraction, got {type(value).__name__}")


def clog2(x: int) -> int:
    """Ceiling of log2(x) for an int x >= 1."""
    if x < 1:
        raise ValueError(f"clog2 needs x >= 1, got {x}")
    return (x - 1).bit_length()


def exp_lower_bound(r: Fraction, precision_bits: int = 128) -> Fraction:
    """A certified rational lower bound L <= e^r for rational r >= 0.

    Uses a Taylor partial sum (all terms positive, so every partial sum is a
    lower bound), stopped once a term is below 2^-precision_bits times the sum.
    The number of terms depends only on the public r.
    """
    if r < 0:
        raise ValueError("exp_lower_bound needs r >= 0")
    total = Fraction(0)
    term = Fraction(1)
    i = 0
    threshold = Fraction(1, 1 << precision_bits)
    # Terms grow while i < r, then shrink geometrically; the bound below is public.
    max_terms = 4 * int(r) + precision_bits + 8
    while i < max_terms:
        total += term
        i += 1
        term = term * r / i
        if i > r and term < threshold * total:
            break
    return total


def within_epsilon(exp_eps: Fraction, extra: Fraction, epsilon: Fraction) -> bool:
    """Certified check that ln(exp_eps) + extra <= epsilon (uses e^(eps-extra) >= L(eps)(1-extra))."""
    return exp_eps <= exp_lower_bound(epsilon) * (1 - extra)
