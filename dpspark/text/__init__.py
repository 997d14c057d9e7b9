"""Numbers in words: exact when short, ``2^k`` for large powers of two, else a 3-digit decimal with "…".

Display only (the plan text, ``inspect``, ``lookup``, error messages): no value printed here decides anything.
Mechanisms and the runner format numbers with this module instead of importing the read library.

:func:`readable` shortens a number; :func:`rounded`, :func:`bound_text` and :func:`confidence` round a bound
the safe way (an upper bound up, a confidence down), so a printed number stays a true statement;
:func:`readable_text` shortens the long numbers inside words a mechanism wrote. The submodules put whole
statements into words: :mod:`dpspark.text.statements` (privacy and accuracy), :mod:`dpspark.text.counted`
(what a histogram counted), :mod:`dpspark.text.plan` (the ``--dry-run`` plan).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from dpspark.release.exactjson import frac_log2, frac_to_str

__all__ = ["MAX_DIGITS", "bound_text", "confidence", "readable", "readable_text", "rounded", "short"]

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


# --- bounds as short decimals (a guarantee's number is rounded the safe way) ------------------------------------
def _pow10_floor(x: Fraction) -> int:
    """The integer e with 10^e <= x < 10^(e+1), exactly (x > 0)."""
    log2 = frac_log2(x)
    assert log2 is not None
    e = math.floor(log2 * math.log10(2))  # report: a first guess, corrected exactly below
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def _decimal_text(m: int, s: int) -> str:
    """m * 10^-s as a plain decimal (m > 0), without trailing zeros after the point."""
    if s <= 0:
        return str(m * 10 ** (-s))
    digits = str(m).rjust(s + 1, "0")
    whole, frac = digits[:-s], digits[-s:].rstrip("0")
    return whole + ("." + frac if frac else "")


def rounded(x: Fraction | int, digits: int = 3, up: bool = True) -> tuple[str, bool]:
    """``x`` rounded up (``up``) or down to ``digits`` significant digits: (text, exact).

    ``exact`` is True when the text is ``x`` itself. A plain decimal for 1e-4 <= |x| < 1e6, else scientific
    (``9.25e-7``). Rounding a bound the safe way (an upper bound up, a confidence down) keeps the printed
    number a true statement; the manifest holds the exact value.
    """
    v = Fraction(x)
    if v == 0:
        return "0", True
    if v < 0:
        text, exact = rounded(-v, digits, not up)
        return "-" + text, exact
    e = _pow10_floor(v)
    s = digits - 1 - e
    scaled = v * Fraction(10) ** s
    m = math.ceil(scaled) if up else math.floor(scaled)
    if m >= 10**digits:  # rounding carried into the next power of ten
        m, e, s = m // 10, e + 1, s - 1
    exact = Fraction(m) / Fraction(10) ** s == v
    if -4 <= e < 6:
        return _decimal_text(m, s), exact
    return f"{_decimal_text(m, digits - 1)}e{e}", exact


def bound_text(x: Fraction | int, digits: int = 3) -> str:
    """An upper bound for display: ``"= 1e-9"`` or ``"= 572.5"`` when a short decimal is exact, else
    ``"<= 9.25e-7"`` (``digits`` significant digits, rounded up)."""
    v = Fraction(x)
    for d in range(digits, 7):
        text, exact = rounded(v, d, up=True)
        if exact:
            return f"= {text}"
    return f"<= {rounded(v, digits, up=True)[0]}"


def confidence(beta: Fraction | int) -> str:
    """1 - ``beta`` as a decimal a reader can take in, never above the truth: ``0.95``, ``0.9874``, ``1 - 2.3e-12``.

    Three significant digits of beta are kept: the decimal is 1 - beta rounded down at that place; below
    beta = 10^-6 it is written ``1 - <beta rounded up>``.
    """
    b = Fraction(beta)
    if b <= 0:
        return "1"
    if b >= 1:
        return "0"
    e = _pow10_floor(b)
    if e < -6:
        return "1 - " + rounded(b, 3, up=True)[0]
    places = 2 - e
    m = math.floor((1 - b) * 10**places)
    return _decimal_text(m, places)


#: an exact integer or rational written in a text (a long one is shortened by :func:`readable_text`)
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?:/(\d+))?(?![\w])(?!\.\d)")
#: a confidence written as 1 - p/q (printed as a decimal, rounded down)
_ONE_MINUS = re.compile(r"(?<![\w./])1 - (\d+)/(\d+)(?![\w/^])(?!\.\d)")
_LONG_RUN = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))
#: a number written with more digits than this is never parsed (Python's int() refuses 4300 digits, and a
#: quadratic conversion of a hostile text would stall a reader): it prints as ``<N digits>``
MAX_PARSED_DIGITS = 1200


def _long(*parts: str | None) -> bool:
    return any(p is not None and len(p) > MAX_PARSED_DIGITS for p in parts)


def readable_text(text: str) -> str:
    """``text`` with every integer or rational longer than :data:`MAX_DIGITS` digits shortened (:func:`readable`),
    and every confidence ``1 - p/q`` written as a decimal (:func:`confidence`).

    For words a mechanism wrote with exact numbers in them (theorems, conditions, recorded parameters): what
    is printed has no run of more than :data:`MAX_DIGITS` digits; the manifest keeps the exact text.
    """

    def shorten(match: "re.Match[str]") -> str:
        num, den = match.group(1), match.group(2)
        if len(num) <= MAX_DIGITS and (den is None or len(den) <= MAX_DIGITS):
            return match.group(0)
        if _long(num, den):
            return match.group(0)  # left to _LONG_RUN below: never parsed
        if den is not None and int(den) == 0:
            return match.group(0)
        return readable(Fraction(int(num), int(den or 1)))

    def one_minus(match: "re.Match[str]") -> str:
        if _long(match.group(1), match.group(2)) or int(match.group(2)) == 0:
            return match.group(0)
        return confidence(Fraction(int(match.group(1)), int(match.group(2))))

    out = _ONE_MINUS.sub(one_minus, text)
    out = _NUMBER.sub(shorten, out)
    return _LONG_RUN.sub(lambda m: f"<{len(m.group(0))} digits>", out)  # a run glued to letters: still short
