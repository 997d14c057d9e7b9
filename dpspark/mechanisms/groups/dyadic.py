"""The dyadic weight table of the exponential mechanisms over a grid (quantile.py, joint_quantile.py).

For a rational base r = p/q > 1 (rho = q/p) and a public count C of candidates: the cap U with C rho^U <= 2^-CAP_BITS,
the precision P with 2^P rho^U >= U 2^ETA_BITS, and w_V = floor(w_(V-1) rho), w_0 = 2^P, V = 0..U. Each floor
loses less than 1, so 2^P rho^V - V <= w_V <= 2^P rho^V: every entry is within eta = 2^-ETA_BITS below the exact
2^P rho^V.

Cheap certification (issue 34 §4: the plan took ~30-80 s at small epsilon computing p^U for U in the millions).
U and P need not be the least such values, only valid ones, so they come from one-sided bounds on ln(p/q) with
x = (p - q)/q: ln(p/q) >= 2 (p - q)/(p + q) (so U = ceil(0.7 (CAP_BITS + bitlen C) (p + q) / (2 (p - q))) works,
ln 2 < 0.7, log2 C <= bitlen C) and log2(p/q) <= x / ln 2 < 1.4427 x (so P = ETA_BITS + bitlen U + ceil(1.4427 U x)
works). U overshoots the least valid cap by a few percent (0.7 / ln 2, bitlen C / log2 C). Tables are memoised per (p/q, C): a plan that is built twice, or several
aggregates with the same share, build one table.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from dpspark.mechanisms.groups.aggregates import GroupsError

#: the cap keeps C rho^cap <= 2^-CAP_BITS
CAP_BITS = 64
#: relative precision of the weight table: eta = 2^-ETA_BITS
ETA_BITS = 64
#: the largest weight table (entries)
MAX_CAP = 1 << 22

_LN2_ABOVE = Fraction(7, 10)
_INV_LN2_ABOVE = Fraction(14427, 10000)


def cap_and_bits(base: Fraction, count: int) -> tuple[int, int]:
    """(U, P) of the module docstring from one-sided bounds (no huge powers); U may exceed MAX_CAP."""
    p, q = base.numerator, base.denominator
    if p <= q:
        raise GroupsError("the exponential mechanism's base must exceed 1")
    need = _LN2_ABOVE * (CAP_BITS + count.bit_length()) * (p + q) / (2 * (p - q))
    cap = max(1, -(-need.numerator // need.denominator))
    grow = _INV_LN2_ABOVE * cap * Fraction(p - q, q)
    P = ETA_BITS + cap.bit_length() + -(-grow.numerator // grow.denominator)
    return cap, P


def dyadic_table(base: Fraction, count: int, what: str = "quantile") -> tuple[int, int, tuple[int, ...]]:
    """(cap, P, table) for rho = 1 / base and ``count`` candidates (module docstring); GroupsError past MAX_CAP
    (checked before any table is built)."""
    cap, P = cap_and_bits(base, count)
    if cap > MAX_CAP:
        raise GroupsError(f"{what}: the weight table would exceed {MAX_CAP} entries at this epsilon share; raise "
                          "epsilon or lower max_groups_per_unit / max_rows_per_group")
    return cap, P, _table(base, cap, P)


def least_level(table: tuple[int, ...], bound: Fraction) -> int | None:
    """The least t with table[t] <= bound (the table decreases), by bisection; None when even the last entry
    exceeds it. Exact: the tail-bound searches of the quantile laws (rank_steps)."""
    ok = lambda t: table[t] * bound.denominator <= bound.numerator  # noqa: E731
    if not ok(len(table) - 1):
        return None
    lo, hi = 0, len(table) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


@lru_cache(maxsize=16)
def _table(base: Fraction, cap: int, P: int) -> tuple[int, ...]:
    p, q = base.numerator, base.denominator
    w, table = 1 << P, []
    for _ in range(cap + 1):  # w_V = floor(w_(V-1) q / p): each floor loses < 1
        table.append(w)
        w = w * q // p
    return tuple(table)
