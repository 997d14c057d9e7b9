"""Exact numbers in JSON: integers and rationals as strings.

JSON numbers lose precision in most readers beyond 2^53, and Python refuses
``str()`` of an int with more than 4300 decimal digits, so every exact value in
a manifest is a string:

* an integer is decimal (``"-12"``) when it has at most ``DECIMAL_DIGITS``
  digits, else lowercase hex (``"0x1f..."``, ``"-0x..."``);
* a rational is ``"p"`` or ``"p/q"`` with q >= 2 and gcd(p, q) = 1, each part
  written as an integer above.

Parsers bound the text length before converting, so a hostile manifest cannot
make them allocate or compute much.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

#: Integers with up to this many bits are written in decimal (well under Python's 4300-digit limit).
DECIMAL_BITS = 3000
#: Longest exact string accepted by the parsers (hex digits of a ~64-Mbit number).
MAX_EXACT_CHARS = 1 << 24

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,1199}|0x[0-9a-f]+)")
_PART = r"(?:0|[1-9][0-9]{0,1199}|0x[0-9a-f]+)"
_FRAC = re.compile(rf"(-?{_PART})(?:/({_PART}))?")


def int_to_str(value: int) -> str:
    """Exact string of an int: decimal when small, ``0x`` hex beyond ``DECIMAL_BITS`` bits."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    if value.bit_length() <= DECIMAL_BITS:
        return str(value)
    return ("-" if value < 0 else "") + hex(abs(value))


def _parse_part(text: str) -> int:
    if text.startswith("-"):
        return -_parse_part(text[1:])
    return int(text, 16) if text.startswith("0x") else int(text)


def str_to_int(text: object, max_bits: int | None = None) -> int:
    """Parse :func:`int_to_str` output; ``ValueError`` on anything else or above ``max_bits`` bits."""
    if not isinstance(text, str) or len(text) > MAX_EXACT_CHARS or not _INT.fullmatch(text):
        raise ValueError("not an exact integer string")
    value = _parse_part(text)
    if max_bits is not None and value.bit_length() > max_bits:
        raise ValueError(f"integer has more than {max_bits} bits")
    return value


def frac_to_str(value: Fraction | int) -> str:
    """Exact string of a rational: ``"p"`` or ``"p/q"``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int_to_str(value)
    if not isinstance(value, Fraction):
        raise TypeError(f"expected a Fraction, got {type(value).__name__}")
    if value.denominator == 1:
        return int_to_str(value.numerator)
    return f"{int_to_str(value.numerator)}/{int_to_str(value.denominator)}"


def str_to_frac(text: object, max_bits: int = 4096) -> Fraction:
    """Parse :func:`frac_to_str` output (lowest terms, denominator >= 2 when written).

    Parts above ``max_bits`` bits are refused before any gcd: CPython's gcd is
    quadratic (about 4 s at 2^20 bits, 80 s at 2^22), so the bound is what keeps
    a hostile manifest from stalling a reader.
    """
    if not isinstance(text, str) or len(text) > MAX_EXACT_CHARS:
        raise ValueError("not an exact rational string")
    match = _FRAC.fullmatch(text)
    if not match:
        raise ValueError("not an exact rational string")
    num = _parse_part(match.group(1))
    den = 1 if match.group(2) is None else _parse_part(match.group(2))
    if max(num.bit_length(), den.bit_length()) > max_bits:
        raise ValueError(f"rational has a part above {max_bits} bits")
    if match.group(2) is None:
        return Fraction(num)
    value = Fraction(num, den)  # one gcd
    if den < 2 or value.denominator != den:
        raise ValueError("rational is not in lowest terms with a denominator >= 2")
    return value


def frac_log2(value: Fraction) -> float | None:
    """log2 of a positive rational as a float, for display only (None for 0)."""
    if value <= 0:
        return None
    return math.log2(value.numerator) - math.log2(value.denominator)  # report


def frac_float(value: Fraction) -> float:
    """A rational as a float for display (0.0 on underflow, never an exception)."""
    try:
        return float(value)  # report
    except OverflowError:
        return math.inf if value > 0 else -math.inf  # report
