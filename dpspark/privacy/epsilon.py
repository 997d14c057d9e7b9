"""Exact epsilons: ``ln(exp) + extra`` with rational ``exp`` > 0 and rational ``extra``.

Today's statements are of this form: a counting mechanism's ratio bound
e^eps~ = p/q is an exact rational and the randomness bias adds a rational
``bias_epsilon``; a plain rational epsilon is ``ln(1) + eps``. The set is
closed under addition (ln a + ln b = ln ab) and multiplication by a
non-negative integer (k ln a = ln a^k), which is all sequential composition and
group privacy need, so no rounding happens there.

Representation is unique: ln r1 + f1 = ln r2 + f2 with rationals forces
e^(f1 - f2) = r2/r1 to be rational, which by Lindemann-Weierstrass means
f1 = f2 and then r1 = r2. Hence dataclass equality is mathematical equality.
Order comparisons are decided with certified arithmetic
(:mod:`dpspark.privacy.certified`); they never round.

The usual form has exp >= 1 and extra >= 0; other forms arise only as
differences (a budget's remainder) and must still be >= 0 (checked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Union

from dpspark.exact import parse_rational
from dpspark.privacy import certified
from dpspark.privacy._encode import dec_frac, enc_frac, require_keys
from dpspark.privacy.errors import PrivacyError

#: Below this |extra|, exp_upper() uses e^f <= 1/(1 - f) (slack ~f^2), as the manifest's replacement delta does.
_TINY_EXTRA = Fraction(1, 1 << 32)


def _crude_ok(f: Fraction, bits: int) -> bool:
    """Whether 1 + f <= e^f <= 1/(1 - f) is tight enough: its relative width ~f^2 within 2^-(bits - 3)."""
    return abs(f) < _TINY_EXTRA and f * f <= Fraction(1, 1 << max(bits - 3, 0))


def _exp_scale(f: Fraction) -> int:
    """Extra grid bits so that an absolute 2^-(bits + scale) error on e^f is relative 2^-bits (e^f >= 4^-ceil(-f))."""
    return 2 + 2 * max(0, math.ceil(-f))


def _sign_ln_plus(r: Fraction, f: Fraction) -> int:
    """Sign of ln(r) + f (exact: 0 only for r = 1, f = 0)."""
    if r == 1:
        return (f > 0) - (f < 0)
    if (r > 1 and f >= 0) or (r < 1 and f <= 0):
        return 1 if r > 1 else -1
    # an exact rational bracket of ln r decides most comparisons without flint (a 0.2 s import on a read
    # command's start: a statement's ln(13/8) + 2^-126 against its budget); the sign is the same exact answer
    if Fraction(1, 1 << 64) <= r <= (1 << 64):  # else the series converges too slowly to decide anything
        lo, hi = certified.ln_series_bracket(r)
        if lo + f > 0:
            return 1
        if hi + f < 0:
            return -1
    return certified.decide_sign(lambda q: q(r).log() + q(f))


def _upper_exp(f: Fraction, bits: int) -> Fraction:
    """``certified.upper(e^f, bits)``, memoised on disk (:mod:`dpspark.disk_memo`) by f, bits and flint's release.

    The same value as computing it (it is the stored result of that computation): a read command that checks a
    statement's group privacy, or a release's plan check, then imports no flint (0.1-0.2 s of its start).
    """
    from dpspark.disk_memo import memoised

    return memoised("exp_upper", (f, bits, certified.flint_release()), EXP_UPPER_MODULES,
                    lambda: certified.upper(lambda q: q(f).exp(), bits), str, _upper_exp_decoder(f, bits))


#: the modules whose source decides :func:`_upper_exp` (the on-disk memo's key holds their digest)
EXP_UPPER_MODULES = ("dpspark.privacy.certified", "dpspark.privacy.epsilon")


def _upper_exp_decoder(f: Fraction, bits: int):  # type: ignore[no-untyped-def]
    def decode(raw: Any) -> Fraction:
        if not isinstance(raw, str):
            raise TypeError("not a rational string")
        u = Fraction(raw)
        # on the 2^-bits grid, and no smaller than the elementary lower bound e^f >= 1 + f (e^f > 0 for f < -1)
        if (u * (1 << bits)).denominator != 1 or u <= 0 or u < 1 + f:
            raise ValueError("not an upper bound of e^f on the grid")
        return u
    return decode


@dataclass(frozen=True, init=False)
class LogEpsilon:
    """The exact real number ln(exp) + extra (an epsilon). Build with ``LogEpsilon(exp, extra)`` or :meth:`of`."""

    exp: Fraction
    extra: Fraction

    def __init__(self, exp: Any = 1, extra: Any = 0) -> None:
        r = parse_rational(exp, "exp (e^epsilon part)")
        f = parse_rational(extra, "extra (rational epsilon part)")
        if r <= 0:
            raise PrivacyError(f"exp must be > 0, got {r}")
        if _sign_ln_plus(r, f) < 0:
            raise PrivacyError("an epsilon must be >= 0 (ln(exp) + extra is negative)")
        object.__setattr__(self, "exp", r)
        object.__setattr__(self, "extra", f)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def of(cls, value: "EpsilonLike", name: str = "epsilon") -> "LogEpsilon":
        """A LogEpsilon from a LogEpsilon or an exact rational (str/int/Fraction; a float raises TypeError)."""
        if isinstance(value, LogEpsilon):
            return value
        return cls(1, parse_rational(value, name))

    @classmethod
    def zero(cls) -> "LogEpsilon":
        """The epsilon 0."""
        return cls(1, 0)

    # -- exact arithmetic ---------------------------------------------------------------------
    def __add__(self, other: "EpsilonLike") -> "LogEpsilon":
        o = LogEpsilon.of(other)
        return LogEpsilon(self.exp * o.exp, self.extra + o.extra)

    __radd__ = __add__

    def __mul__(self, k: int) -> "LogEpsilon":
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise TypeError("a LogEpsilon can only be multiplied by a non-negative int (k ln r = ln r^k)")
        return LogEpsilon(self.exp**k, self.extra * k)

    __rmul__ = __mul__

    def __sub__(self, other: "EpsilonLike") -> "LogEpsilon":
        """The exact difference; raises PrivacyError when it would be negative."""
        o = LogEpsilon.of(other)
        return LogEpsilon(self.exp / o.exp, self.extra - o.extra)

    @property
    def is_rational(self) -> bool:
        """True when the value is the rational ``extra`` (exp == 1)."""
        return self.exp == 1

    def as_fraction(self) -> Fraction:
        """The value as a Fraction; raises PrivacyError unless :attr:`is_rational`."""
        if not self.is_rational:
            raise PrivacyError(f"ln({self.exp}) + {self.extra} is irrational; use upper()/lower()")
        return self.extra

    # -- certified comparisons ----------------------------------------------------------------
    def compare(self, other: "EpsilonLike") -> int:
        """-1, 0 or +1 as self <, =, > other; exact."""
        o = LogEpsilon.of(other)
        return _sign_ln_plus(self.exp / o.exp, self.extra - o.extra)

    def le(self, other: "EpsilonLike") -> bool:
        """Certified: self <= other."""
        return self.compare(other) <= 0

    def lt(self, other: "EpsilonLike") -> bool:
        """Certified: self < other."""
        return self.compare(other) < 0

    def __le__(self, other: "EpsilonLike") -> bool:
        return self.le(other)

    def __lt__(self, other: "EpsilonLike") -> bool:
        return self.lt(other)

    def __ge__(self, other: "EpsilonLike") -> bool:
        return self.compare(other) >= 0

    def __gt__(self, other: "EpsilonLike") -> bool:
        return self.compare(other) > 0

    # -- certified rational bounds ------------------------------------------------------------
    def bounds(self, bits: int = 64) -> tuple[Fraction, Fraction]:
        """Rationals (lo, hi) with lo <= self <= hi, hi - lo <= 2^(2 - bits); exact when rational."""
        if self.is_rational:
            return self.extra, self.extra
        lo, hi = certified.ln_bounds(self.exp, bits)
        return lo + self.extra, hi + self.extra

    def upper(self, bits: int = 64) -> Fraction:
        """A certified rational upper bound (within 2^(2 - bits)); the value itself when rational."""
        return self.bounds(bits)[1]

    def lower(self, bits: int = 64) -> Fraction:
        """A certified rational lower bound (within 2^(2 - bits)); the value itself when rational."""
        return self.bounds(bits)[0]

    def exp_upper(self, bits: int = 64) -> Fraction:
        """A certified rational upper bound on e^self = exp * e^extra.

        Exact (``exp``) when extra = 0; ``exp / (1 - extra)`` when |extra| < 2^-32 and its
        slack (about f^2) is within the requested precision (e^f <= 1/(1 - f) for f < 1, the
        form the release manifests already use); else exp times an arb upper bound on e^extra
        with relative precision about 2^-bits.
        """
        f = self.extra
        if f == 0:
            return self.exp
        if _crude_ok(f, bits):
            return self.exp / (1 - f)
        return self.exp * _upper_exp(f, bits + _exp_scale(f))

    def exp_lower(self, bits: int = 64) -> Fraction:
        """A certified rational lower bound on e^self (exact when extra = 0, else 1 + f <= e^f when tiny)."""
        f = self.extra
        if f == 0:
            return self.exp
        if _crude_ok(f, bits):
            return self.exp * (1 + f)
        return self.exp * certified.lower(lambda q: q(f).exp(), bits + _exp_scale(f))

    # -- description --------------------------------------------------------------------------
    def float_approx(self) -> float:
        """The value as a float, for reports only."""
        return (math.log(self.exp.numerator) - math.log(self.exp.denominator)) + float(self.extra)  # report

    def describe(self) -> dict[str, Any]:
        """Exact JSON-ready form {"form", "exp", "extra", "approx"}; ``approx`` is a float for display."""
        return {
            "form": "ln(exp) + extra",
            "exp": enc_frac(self.exp),
            "extra": enc_frac(self.extra),
            "approx": self.float_approx(),  # report
        }

    @classmethod
    def from_description(cls, obj: Any, where: str = "epsilon") -> "LogEpsilon":
        """Inverse of :meth:`describe` (``approx`` is ignored)."""
        d = require_keys(obj, ("exp", "extra"), where)
        return cls(dec_frac(d["exp"], f"{where}.exp"), dec_frac(d["extra"], f"{where}.extra"))

    def __repr__(self) -> str:
        return f"LogEpsilon({self})"

    def __str__(self) -> str:
        if self.is_rational:
            return _short(self.extra)
        f = self.extra
        extra = "" if f == 0 else f" + {_short(f)}" if f > 0 else f" - {_short(-f)}"
        return f"ln({_short(self.exp)}){extra}"


EpsilonLike = Union[LogEpsilon, str, int, Fraction]


def _short(x: Fraction) -> str:
    """A Fraction for display: exact when short, else an approximate power of two."""
    if max(x.numerator.bit_length(), x.denominator.bit_length()) <= 128:
        return str(x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    return f"{sign}~2^{math.log2(abs(x.numerator)) - math.log2(x.denominator):.2f}"  # report


def max_epsilon(values: "list[LogEpsilon]") -> LogEpsilon:
    """The largest of non-empty ``values`` (exact, certified comparisons)."""
    if not values:
        raise PrivacyError("max of no epsilons")
    best = values[0]
    for v in values[1:]:
        if v.compare(best) > 0:
            best = v
    return best
