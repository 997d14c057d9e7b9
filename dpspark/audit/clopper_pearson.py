"""Clopper-Pearson confidence bounds for a binomial proportion (floats: analysis only).

The auditor's statistics never decide a released value; they decide whether a
test *reports* a privacy violation, so floating point is allowed here (rule 1
of the developers' guide). The beta quantile is computed without scipy: the
regularised incomplete beta function by its continued fraction (modified
Lentz), inverted by bisection.

One-sided bounds at level alpha, for k successes in n trials:

* lower(k, n, alpha) = the alpha-quantile of Beta(k, n-k+1) (0 when k = 0),
  so Pr_p[lower(X, n, alpha) > p] <= alpha for every p;
* upper(k, n, alpha) = the (1-alpha)-quantile of Beta(k+1, n-k) (1 when k = n),
  so Pr_p[upper(X, n, alpha) < p] <= alpha for every p.
"""

from __future__ import annotations

import math

_TINY = 1e-300
_EPS = 1e-15


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of I_x(a, b) (Numerical Recipes' betacf, modified Lentz); x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    max_iter = 10_000 + int(20 * math.sqrt(max(a, b)))  # report
    for m in range(1, max_iter + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b) for a, b > 0 (the Beta(a, b) CDF at x)."""
    if a <= 0 or b <= 0:
        raise ValueError("betainc needs a, b > 0")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)  # report
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a  # report
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b  # report


def beta_quantile(p: float, a: float, b: float) -> float:
    """The p-quantile of Beta(a, b): x with I_x(a, b) = p, by bisection to double precision."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    lo, hi = 0.0, 1.0
    for _ in range(200):  # report: bisection on [0, 1]; stops when the interval no longer shrinks
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if betainc(a, b, mid) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _check(k: int, n: int, alpha: float) -> None:
    if isinstance(k, bool) or isinstance(n, bool) or not isinstance(k, int) or not isinstance(n, int):
        raise TypeError("k and n must be ints")
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 1/2), got {alpha}")


def cp_lower(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower bound on p from k successes in n trials, error <= alpha."""
    _check(k, n, alpha)
    if k == 0:
        return 0.0
    return beta_quantile(alpha, k, n - k + 1)


def cp_upper(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound on p from k successes in n trials, error <= alpha."""
    _check(k, n, alpha)
    if k == n:
        return 1.0
    return 1.0 - beta_quantile(alpha, n - k, k + 1)  # symmetry keeps the small tail alpha accurate
