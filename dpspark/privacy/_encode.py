"""Exact JSON encoding of rationals: ints up to 128 bits as JSON ints, larger ones as hex strings."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpspark.privacy.errors import DescriptionError

#: Largest bit length of a numerator or denominator read back by default.
MAX_DECODE_BITS = 1 << 22


def enc_int(v: int) -> int | str:
    """An int as itself when it fits in 128 bits, else as a hex string (str() refuses > 4300 digits)."""
    return v if v.bit_length() <= 128 else hex(v)


def dec_int(v: Any, where: str, max_bits: int = MAX_DECODE_BITS) -> int:
    """Inverse of :func:`enc_int`; also accepts short decimal strings."""
    if isinstance(v, bool):
        raise DescriptionError(f"{where}: expected an integer, got a bool")
    if isinstance(v, int):
        out = v
    elif isinstance(v, str):
        text = v.strip()
        try:
            if text.lower().startswith(("0x", "-0x")):
                if len(text) > max_bits // 4 + 4:
                    raise DescriptionError(f"{where}: integer longer than {max_bits} bits")
                out = int(text, 16)
            else:
                if len(text) > 4300:
                    raise DescriptionError(f"{where}: decimal integer too long; use hex")
                out = int(text, 10)
        except ValueError:
            raise DescriptionError(f"{where}: cannot read {v[:40]!r} as an integer") from None
    else:
        raise DescriptionError(f"{where}: expected an integer, got {type(v).__name__}")
    if out.bit_length() > max_bits:
        raise DescriptionError(f"{where}: integer longer than {max_bits} bits")
    return out


def enc_frac(x: Fraction) -> dict[str, Any]:
    """A Fraction as {"num", "den"} (+ a float log2 for huge denominators, display only)."""
    out: dict[str, Any] = {"num": enc_int(x.numerator), "den": enc_int(x.denominator)}
    if x.denominator.bit_length() > 128:
        out["log2_approx"] = (math.log2(abs(x.numerator)) if x.numerator else float("-inf")) - math.log2(x.denominator)  # report
    return out


def dec_frac(obj: Any, where: str, max_bits: int = MAX_DECODE_BITS) -> Fraction:
    """Inverse of :func:`enc_frac` (extra keys such as log2_approx are ignored)."""
    if not isinstance(obj, dict) or "num" not in obj or "den" not in obj:
        raise DescriptionError(f"{where}: expected {{'num': ..., 'den': ...}}")
    num = dec_int(obj["num"], f"{where}.num", max_bits)
    den = dec_int(obj["den"], f"{where}.den", max_bits)
    if den <= 0:
        raise DescriptionError(f"{where}: denominator must be positive")
    return Fraction(num, den)


def require_keys(obj: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """``obj`` as a dict holding every key in ``keys``, or a DescriptionError."""
    if not isinstance(obj, dict):
        raise DescriptionError(f"{where}: expected an object, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise DescriptionError(f"{where}: missing {', '.join(missing)}")
    return obj
