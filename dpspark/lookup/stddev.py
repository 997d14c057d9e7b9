"""A standard deviation released as its variance (``post = "sqrt"``): the root and its interval, for display.

A ``groups`` aggregate of kind ``variance`` with ``post = "sqrt"`` (SQL's ``STDDEV_POP``) stores the exact
released variance v and its bar e; readers show the standard deviation. It is post-processing of a private
output, so it costs nothing, and floats are fine here (display only, never a check or a statement).

**The interval.** The bar says |V - v| <= e with probability >= 1 - beta, V >= 0 the true variance. Then V
lies in [max(v - e, 0), v + e], and since the square root is increasing on [0, inf), sqrt(V) lies in
[sqrt(max(v - e, 0)), sqrt(max(v + e, 0))] with the same probability: ``lo`` and ``hi`` (each rounded outward
by one float step). The value is sqrt(max(v, 0)) (the variance clamped at 0 first); ``error`` = the larger
distance from it to either end, a symmetric bar that contains the interval.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["POSTS", "stddev_bar"]

#: the post-processing a released aggregate may name, and the kind it applies to
POSTS = {"sqrt": "variance"}


def stddev_bar(variance: Fraction | None, error: Fraction | None) -> tuple[float | None, ...]:
    """(sd, lo, hi, error) of a released variance and its bar (None where the variance is undefined)."""
    if variance is None:
        return None, None, None, None
    sd = math.sqrt(float(max(variance, Fraction(0))))  # report
    if error is None:
        return sd, None, None, None
    lo = math.nextafter(math.sqrt(float(max(variance - error, Fraction(0)))), 0.0)  # report
    hi = math.nextafter(math.sqrt(float(max(variance + error, Fraction(0)))), math.inf)  # report
    return sd, max(lo, 0.0), hi, max(sd - lo, hi - sd)  # report
