"""The rho a zCDP mechanism runs at, from the (epsilon, delta) budget a release spends.

The ledger and every config speak (epsilon, delta). A zCDP mechanism (the discrete Gaussian ones)
runs at rho and states rho-zCDP plus its certified conversion to (eps, delta) by Canonne-Kamath-Steinke
2020, Cor. 13 (:func:`dpspark.privacy.conversions.zcdp_to_approx_dp_cks`, an exact rational upper
bound). :func:`rho_within` picks rho so that this conversion is certified <= the configured epsilon at
the configured delta: the release therefore never spends more than the ledger recorded.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from dpspark.exact import parse_rational
from dpspark.mechanisms.base import MechanismSpecError

#: rho is chosen on the grid j / 2^RHO_BITS
RHO_BITS = 30


def converted_epsilon(rho: Fraction, delta: Fraction) -> Fraction:
    """The certified epsilon of rho-zCDP at ``delta`` (CKS20 Cor. 13; an exact rational upper bound)."""
    from dpspark.privacy.conversions import zcdp_to_approx_dp_cks
    from dpspark.privacy.measures import ZCDP

    return zcdp_to_approx_dp_cks(ZCDP(rho), delta).epsilon.as_fraction()


def rho_within(epsilon: Any, delta: Any, rho: Any = None) -> Fraction:
    """The rho to run at so that rho-zCDP is certified (epsilon, delta)-DP.

    With ``rho`` (a ``[privacy] rho`` option) that rho, refused (:class:`MechanismSpecError`) when its
    conversion exceeds epsilon. Without it, the largest rho = j / 2^30 whose conversion fits (a
    bisection over 2^30 grid points: 30 conversions, data-free).
    """
    eps = parse_rational(epsilon, "epsilon")
    d = parse_rational(delta, "delta")
    if eps <= 0 or not 0 < d < 1:
        raise MechanismSpecError("a zCDP mechanism needs epsilon > 0 and delta in (0, 1)")
    if rho is not None:
        r = parse_rational(rho, "rho")
        if r <= 0:
            raise MechanismSpecError("privacy.rho must be > 0")
        got = converted_epsilon(r, d)
        if got > eps:
            raise MechanismSpecError(
                f"privacy.rho = {r} is ({float(got):.6g}, {d})-DP (CKS20, certified), above privacy.epsilon = {eps}; "  # report
                "lower rho or raise epsilon")
        return r
    from dpspark.disk_memo import memoised

    # a pure function of (eps, delta) and the conversion's code: memoised on disk (30 certified conversions,
    # about 2 s in a cold process); a refusal is never stored
    return memoised("zcdp_rho", (eps, d, RHO_BITS), CONVERSION_MODULES, lambda: _largest_rho(eps, d),
                    str, _rho_decoder(eps, d))


#: the modules whose source decides :func:`_largest_rho` (the on-disk memo's key includes their digest)
CONVERSION_MODULES = ("dpspark.mechanisms.zcdp_budget", "dpspark.privacy.conversions", "dpspark.privacy.measures")


def _rho_decoder(eps: Fraction, d: Fraction):  # type: ignore[no-untyped-def]
    def decode(raw: Any) -> Fraction:
        if not isinstance(raw, str):
            raise TypeError("not a rational string")
        rho = Fraction(raw)
        if not 0 < rho <= eps or (rho * (1 << RHO_BITS)).denominator != 1:
            raise ValueError("not a rho on the grid below epsilon")
        return rho
    return decode


def _largest_rho(eps: Fraction, d: Fraction) -> Fraction:
    """The largest rho = j / 2^30 whose certified conversion is <= eps at d (a bisection: 30 conversions)."""
    scale = 1 << RHO_BITS
    lo, hi = 0, max(1, int(eps * scale))  # rho <= eps always (eps >= rho for any delta < 1)
    if converted_epsilon(Fraction(1, scale), d) > eps:
        raise MechanismSpecError(f"privacy.epsilon = {eps} at delta = {d} leaves no rho >= 2^-{RHO_BITS}")
    lo = 1
    while hi - lo > 1:  # invariant: lo fits, hi does not (or is the cap)
        mid = (lo + hi) // 2
        if converted_epsilon(Fraction(mid, scale), d) <= eps:
            lo = mid
        else:
            hi = mid
    if hi != lo and converted_epsilon(Fraction(hi, scale), d) <= eps:
        lo = hi
    return Fraction(lo, scale)


def rho_option(value: Any) -> Optional[Fraction]:
    """Parser of the ``[privacy] rho`` option (exact; a float is refused with a TypeError)."""
    return None if value is None else parse_rational(value, "privacy.rho")
