"""The Gaussian mechanism as a *reporting* baseline for the bounded noise (floats; never used for a release).

``gaussian_sigma`` is the exact analytic calibration of Balle and Wang 2018
(Theorem 8): for l2-sensitivity D the Gaussian mechanism N(0, sigma^2) is
(eps, delta)-DP iff Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D) <= delta.
k queries of sensitivity 1 have D = sqrt(k). ``gaussian_max_error`` is the t with
Pr[max_i |N(0, sigma^2)_i| > t] = beta for k i.i.d. draws. Every line here is
report-grade floating point.
"""

from __future__ import annotations

import math


def _log_phi(x: float) -> float:
    """ln Phi(x), accurate far into the lower tail."""
    if x > -30:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2)))  # report
    # Mills-ratio asymptotics below -30 (relative error < 1e-7)
    return -x * x / 2 - math.log(-x) - 0.5 * math.log(2 * math.pi) + math.log1p(-1 / x**2 + 3 / x**4)  # report


def _log_delta(sigma: float, k: float, eps: float) -> float:
    d = math.sqrt(k)  # report
    a = d / (2 * sigma) - eps * sigma / d  # report
    b = -d / (2 * sigma) - eps * sigma / d  # report
    la, lb = _log_phi(a), _log_phi(b)  # report
    r = eps + lb - la  # report
    if r >= 0:
        return -math.inf  # report
    return la + math.log1p(-math.exp(r))  # report


def gaussian_sigma(k: float, eps: float, delta: float) -> float:
    """Smallest sigma with the Gaussian mechanism (eps, delta)-DP for k 1-sensitive queries (BW18 Thm 8)."""
    target = math.log(delta)  # report
    lo, hi = 1.0, 1.0  # report
    while _log_delta(hi, k, eps) > target:
        hi *= 2  # report
    while _log_delta(lo, k, eps) <= target:
        lo /= 2  # report
    for _ in range(200):
        mid = math.sqrt(lo * hi)  # report
        if _log_delta(mid, k, eps) > target:
            lo = mid  # report
        else:
            hi = mid  # report
    return hi  # report


def gaussian_max_error(sigma: float, k: float, beta: float) -> float:
    """t with Pr[max of k |N(0, sigma^2)| > t] = beta."""
    q = -math.expm1(math.log1p(-beta) / k)  # report: per-draw two-sided tail
    lo, hi = 0.0, 100.0  # report
    for _ in range(200):
        mid = (lo + hi) / 2  # report
        if math.erfc(mid / math.sqrt(2)) > q:  # report: the Gaussian baseline's quantiles (comparison only)
            lo = mid  # report
        else:
            hi = mid  # report
    return sigma * hi  # report
