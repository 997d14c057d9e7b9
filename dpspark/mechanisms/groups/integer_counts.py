"""Released counts as integers, by post-processing (issue 34 §3).

A count is drawn on the grid G = c / g (:mod:`.laws`), so with c = 5 and g = 2 it is a multiple of 2.5. The
release shows round(x) = floor(x + 1/2) instead. The true count N is an integer, so whenever |x - N| <= e:
|round(x) - N| <= |round(x) - x| + |x - N| <= 1/2 + e, and an integer at most e + 1/2 is at most floor(e + 1/2).
**The bar floor(e + 1/2) holds whenever e held** (same probability, no epsilon: post-processing), and it equals e
when e is an integer.
"""

from __future__ import annotations

from fractions import Fraction


def integer_count(x: Fraction) -> Fraction:
    """floor(x + 1/2), as an integer-valued Fraction (ties go up)."""
    return Fraction((2 * x.numerator + x.denominator) // (2 * x.denominator))


def integer_bar(e: Fraction) -> Fraction:
    """floor(e + 1/2): the bar of :func:`integer_count` when |x - N| <= e and N is an integer."""
    return integer_count(Fraction(e))
