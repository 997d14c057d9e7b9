"""Numbers in words: exact when short, ``2^k`` for large powers of two, else a 3-digit decimal with "…".

Display only (the plan text, ``inspect``, ``lookup``, error messages): no value printed here decides anything.
Mechanisms and the runner format numbers with this module instead of importing the read library.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpspark.release.exactjson import frac_log2, frac_to_str

__all__ = ["MAX_DIGITS", "readable", "short"]

#: an exact rational is printed as is up to this many characters; longer ones as a decimal with "…"
_SHORT = 12
#: no printed integer is longer than this by default (``inspect --exact`` prints everything)
MAX_DIGITS = 20


def _power_of_two(x: int) -> int | None:
    return x.bit_length() - 1 if x > 0 and x & (x - 1) == 0 else None


def _decimal(a: Fraction) -> str:
    """A positive rational as a 3-significant-digit decimal followed by "…" (display only, never decides)."""
    log2 = frac_log2(a)
    assert log2 is not None
    log10 = log2 * math.log10(2)  # report
    if -4 <= log10 < 6:
        return f"{float(a):.3g}…"  # report
    exp10 = math.floor(log10)  # report
    mant = 10 ** (log10 - exp10)  # report
    if mant >= 9.995:  # report: rounding carried into the next power of ten
        mant, exp10 = 1.0, exp10 + 1  # report
    return f"{mant:.3g}e{exp10}…"  # report


def readable(value: Fraction | int) -> str:
    """A number a reader can take in: exact when short, ``2^k`` for powers of two, else ``0.0333…``.

    Never more than :data:`MAX_DIGITS` digits; exact values stay in the manifest
    and behind ``inspect --exact`` (:func:`short` with ``exact=True``).
    """
    v = Fraction(value)
    if v < 0:
        return "-" + readable(-v)
    if v == 0:
        return "0"
    if v.denominator == 1:
        k = _power_of_two(v.numerator)
        if k is not None and k >= 64:
            return f"2^{k}"
        text = str(v.numerator)
        return text if len(text) <= MAX_DIGITS else _decimal(v)
    if v.numerator == 1:
        k = _power_of_two(v.denominator)
        if k is not None and k >= 10:
            return f"2^-{k}"
    text = frac_to_str(v)
    return text if len(text) <= _SHORT else _decimal(v)


def short(value: Fraction, exact: bool = False) -> str:
    """The exact rational with ``exact``, else :func:`readable` (display only)."""
    return frac_to_str(value) if exact else readable(value)
