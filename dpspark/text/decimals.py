"""Released values as plain decimals (``46.4271``), for ``dpspark lookup`` and other tables a person reads.

Display only: a released value is post-processing of the DP output, so rounding it to the nearest decimal
changes no guarantee; an error bar is an upper bound and is rounded up (:func:`dpspark.text.rounded`), so the
printed bar stays a true statement. ``--exact`` prints the exact rationals instead.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpspark.text import MAX_DIGITS, _decimal_text, _pow10_floor, rounded

__all__ = ["bar_decimal", "value_decimal"]

#: significant digits of a released value in a table (an error bar keeps 3, rounded up)
VALUE_DIGITS = 6


def value_decimal(value: Fraction | int, digits: int = VALUE_DIGITS) -> str:
    """``value`` rounded to the nearest ``digits`` significant digits, as a plain decimal (``25842.7``,
    ``0.0333333``; scientific outside 1e-4 <= |value| < 1e6). An integer of at most
    :data:`~dpspark.text.MAX_DIGITS` digits is printed as is."""
    v = Fraction(value)
    if v == 0:
        return "0"
    if v < 0:
        return "-" + value_decimal(-v, digits)
    if v.denominator == 1 and len(str(v.numerator)) <= MAX_DIGITS:
        return str(v.numerator)
    e = _pow10_floor(v)
    s = digits - 1 - e
    m = math.floor(v * Fraction(10) ** s + Fraction(1, 2))  # nearest, ties up
    if m >= 10**digits:  # rounding carried into the next power of ten
        m, e, s = m // 10, e + 1, s - 1
    if -4 <= e < 6:
        return _decimal_text(m, s)
    return f"{_decimal_text(m, digits - 1)}e{e}"


def bar_decimal(bound: Fraction | int) -> str:
    """An error bar (an upper bound) as a short decimal rounded up: never below the exact bar."""
    return rounded(Fraction(bound), 3, up=True)[0]
