"""Chi-square critical values for statistical tests (floats: analysis only, never a release)."""

import math


def chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution for even df (closed form)."""
    if df % 2:
        raise ValueError("use an even number of degrees of freedom")
    m = df // 2
    half = x / 2.0
    term = 1.0
    total = 1.0
    for i in range(1, m):
        term *= half / i
        total += term
    return math.exp(-half) * total


def chi2_critical(df: int, alpha: float) -> float:
    """Smallest x with P[chi2_df > x] <= alpha (df made even by rounding up)."""
    df += df % 2
    lo, hi = 0.0, 10.0 * df + 200.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if chi2_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return hi
