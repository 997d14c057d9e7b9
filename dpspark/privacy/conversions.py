"""Conversions between measures and between neighbour relations, each a theorem (see docs/privacy.md).

Measures (every result is exact or a certified rational upper bound):

* :func:`pure_to_zcdp`: eps-DP => (eps^2 / 2)-zCDP (Bun-Steinke 2016, Prop. 1.4).
* :func:`zcdp_to_approx_dp`: rho-zCDP => (rho + 2 sqrt(rho ln(1/delta)), delta)-DP
  for every delta in (0, 1) (Bun-Steinke 2016, Prop. 1.3).
* :func:`zcdp_to_approx_dp_cks`: rho-zCDP => (eps, delta)-DP whenever
  delta >= exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a for some a > 1
  (Canonne-Kamath-Steinke 2020, Prop. 12 / Cor. 13). Solved for eps:
  eps(a) = a rho + (ln(1/delta) + (a-1) ln(1 - 1/a) - ln a) / (a - 1).
  Every a > 1 gives a valid bound, so a is chosen by a deterministic search on a
  rational grid and only the chosen a's value is certified.

Relations (group privacy: docs/privacy.md section 4; Bun-Steinke 2016's group
privacy proposition for zCDP): a guarantee for one step gives, for k steps,
k eps (pure); (k eps, delta sum_{i<k} e^(i eps)) (approximate); k^2 rho (zCDP).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

from dpspark.exact import parse_rational
from dpspark.privacy import certified
from dpspark.privacy.errors import PrivacyError
from dpspark.privacy.measures import ApproxDP, Measure, PureDP, ZCDP
from dpspark.privacy.relations import Relation, steps

#: Default grid of certified results: upper bounds are multiples of 2^-DEFAULT_BITS.
DEFAULT_BITS = 64


# ---------------------------------------------------------------------------------------------
# measure conversions
# ---------------------------------------------------------------------------------------------


def pure_to_zcdp(measure: PureDP, bits: int = DEFAULT_BITS) -> ZCDP:
    """eps-DP => (eps^2/2)-zCDP (Bun-Steinke 2016, Prop. 1.4).

    Exact for a rational eps; for eps = ln(r) + f, rho is a certified upper
    bound U^2/2 with U >= eps, rounded up onto the 2^-bits grid.
    """
    eps = measure.epsilon
    if eps.is_rational:
        return ZCDP(eps.extra * eps.extra / 2)
    u = eps.upper(bits + 8)
    return ZCDP(certified.round_up(u * u / 2, bits))


def _check_delta(delta: Any) -> Fraction:
    d = parse_rational(delta, "delta")
    if not 0 < d <= 1:
        raise PrivacyError(f"converting zCDP to (eps, delta)-DP needs 0 < delta <= 1, got {d}")
    return d


def zcdp_to_approx_dp(measure: ZCDP, delta: Any, bits: int = DEFAULT_BITS) -> ApproxDP:
    """rho-zCDP => (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (Bun-Steinke 2016, Prop. 1.3).

    epsilon is a certified rational upper bound (2^-bits grid, within 2^(2-bits)).
    """
    d = _check_delta(delta)
    rho = measure.rho
    if rho == 0 or d == 1:
        return ApproxDP(0, d)
    eps_hi = certified.upper(lambda q: q(rho) + 2 * (q(rho) * (-q(d).log())).sqrt(), bits)
    return ApproxDP(eps_hi, d)


def cks_epsilon_upper(rho: Any, delta: Any, alpha: Any, bits: int = DEFAULT_BITS) -> Fraction:
    """Certified upper bound on eps(alpha) = alpha rho + (ln(1/delta) + (alpha-1) ln(1-1/alpha) - ln alpha)/(alpha-1).

    By CKS 2020 Cor. 13 a rho-zCDP mechanism is (eps(alpha), delta)-DP for any
    rational alpha > 1 (when eps(alpha) < 0 it is (0, delta)-DP, since the
    delta of that corollary decreases in eps). Rounded up onto the 2^-bits grid.
    """
    r = parse_rational(rho, "rho")
    d = _check_delta(delta)
    a = parse_rational(alpha, "alpha")
    if a <= 1:
        raise PrivacyError(f"alpha must be > 1, got {a}")

    def expr(q: Any) -> Any:
        qa = q(a)
        return qa * q(r) + (-q(d).log() + (qa - 1) * (-1 / qa).log1p() - qa.log()) / (qa - 1)

    return certified.upper(expr, bits)


# alpha = 1 + t with t on the grid t_k = floor(2^(k/1024) * 2^32) / 2^32 * 2^(k div 1024), from exact integer roots
_GRID = 1024
_K_MIN, _K_MAX = -24 * _GRID, 64 * _GRID


@lru_cache(maxsize=None)
def _root(j: int) -> int:
    """floor(2^(j/_GRID) * 2^32), exactly (an integer _GRID-th root)."""
    import gmpy2  # lazy: its import (with importlib.metadata) is ~0.1 s of a read command's start; no reader needs it

    return int(gmpy2.iroot(gmpy2.mpz(1) << (j + 32 * _GRID), _GRID)[0])


def _grid_t(k: int) -> Fraction:
    whole, j = divmod(k, _GRID)
    return Fraction(_root(j) << whole, 1 << 32) if whole >= 0 else Fraction(_root(j), 1 << (32 - whole))


def cks_alpha(rho: Any, delta: Any) -> Fraction:
    """A good rational alpha > 1 for :func:`cks_epsilon_upper` (deterministic search; any alpha is valid).

    Coarse scan over t = alpha - 1 in powers of two from 2^-24 to 2^64, then a
    ternary search on the 2^(1/1024)-spaced grid around the best point. Values
    are compared by their certified upper bounds, ties to the smaller t.
    """
    r = parse_rational(rho, "rho")
    d = _check_delta(delta)
    if r <= 0:
        raise PrivacyError("cks_alpha needs rho > 0")
    cache: dict[int, Fraction] = {}

    def value(k: int) -> Fraction:
        if k not in cache:
            cache[k] = cks_epsilon_upper(r, d, 1 + _grid_t(k), 48)
        return cache[k]

    best = min(range(_K_MIN, _K_MAX + 1, _GRID), key=lambda k: (value(k), k))
    lo, hi = max(_K_MIN, best - _GRID), min(_K_MAX, best + _GRID)
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if value(m1) <= value(m2):
            hi = m2
        else:
            lo = m1
    k = min(range(lo, hi + 1), key=lambda k: (value(k), k))
    return 1 + _grid_t(k)


def zcdp_to_approx_dp_cks(
    measure: ZCDP, delta: Any, bits: int = DEFAULT_BITS, alpha: Any = None
) -> ApproxDP:
    """rho-zCDP => (eps, delta)-DP by Canonne-Kamath-Steinke 2020, Cor. 13 (tighter than Bun-Steinke).

    eps is the certified upper bound :func:`cks_epsilon_upper` at ``alpha``
    (default: :func:`cks_alpha`), clamped at 0.
    """
    d = _check_delta(delta)
    rho = measure.rho
    if rho == 0 or d == 1:
        return ApproxDP(0, d)
    a = cks_alpha(rho, d) if alpha is None else alpha
    return ApproxDP(max(Fraction(0), cks_epsilon_upper(rho, d, a, bits)), d)


# ---------------------------------------------------------------------------------------------
# group privacy and relations
# ---------------------------------------------------------------------------------------------


def group_privacy(measure: Measure, k: int, bits: int = DEFAULT_BITS) -> Measure:
    """The guarantee for datasets k steps apart, from one for a single step.

    Pure: k eps (exact). zCDP: k^2 rho (exact; Bun-Steinke 2016, group privacy).
    Approximate: (k eps, delta * sum_{i<k} e^(i eps)) (chain the k inequalities
    Pr[M(x_j) in S] <= e^eps Pr[M(x_{j+1}) in S] + delta), with e^eps replaced
    by the certified upper bound :meth:`LogEpsilon.exp_upper`, capped at 1.
    For k = 2 this is (2 eps, (1 + e^eps) delta).
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise PrivacyError(f"group size must be an int >= 1, got {k!r}")
    if k == 1:
        return measure
    if isinstance(measure, PureDP):
        return PureDP(measure.epsilon * k)
    if isinstance(measure, ZCDP):
        return ZCDP(measure.rho * k * k)
    if isinstance(measure, ApproxDP):
        if measure.delta == 0:
            return ApproxDP(measure.epsilon * k, 0)
        u = measure.epsilon.exp_upper(bits)
        factor = sum((u**i for i in range(k)), Fraction(0))
        return ApproxDP(measure.epsilon * k, min(Fraction(1), measure.delta * factor))
    raise TypeError(f"not a privacy measure: {type(measure).__name__}")


def convert_relation(measure: Measure, source: Relation, target: Relation, bits: int = DEFAULT_BITS) -> Measure:
    """The guarantee under ``target`` implied by ``measure`` under ``source`` (group privacy over relation steps).

    AddRemove(n) -> Substitute(m <= n): 2 eps; (2 eps, (1 + e^eps) delta); 4 rho.
    """
    return group_privacy(measure, steps(source, target), bits)


def truncation_to_unbounded(measure: Measure, bits: int = DEFAULT_BITS) -> Measure:
    """Guarantee under Unbounded of M(T(x)), where M has ``measure`` under AddRemove(n) and T keeps n units.

    T keeps the n units with the smallest keyed hash (key drawn fresh, never
    written, independent of the data). Adding one unit u to x changes T(x) by
    at most one add/remove step when |x| < n, or by nothing or a swap (remove
    the n-th smallest unit v, add u: two steps, the middle dataset has n - 1
    units) when |x| >= n. So T is 2-stable into AddRemove(n), and for each key
    M o T satisfies the 2-step group guarantee: 2 eps; (2 eps, (1 + e^eps)
    delta); 4 rho. Mixing over the independent key keeps each bound.
    """
    return group_privacy(measure, 2, bits)
