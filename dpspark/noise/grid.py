"""Large scales: round a statistic to a public grid G and add discrete Gaussian noise in grid units.

For x, x' in R^D with ||x - x'||_2 <= Delta, rounding each coordinate to the
nearest multiple of G (ties up) gives integer vectors a = round(x/G),
a' = round(x'/G) with a - a' = (x - x')/G - (r - r'), where r, r' are the
rounding errors, each coordinate in (-1/2, 1/2]. So |r_i - r'_i| < 1 and

    ||a - a'||_2 <= ||x - x'||_2 / G + ||r - r'||_2 <= Delta / G + sqrt(D).

:func:`grid_sensitivity` returns a certified rational upper bound on that
(the square root rounded up exactly), to feed ``l2_rho`` / ``smallest_sigma``.
Releasing G * (noisy a) is post-processing.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt
from typing import Sequence

import numpy as np

from dpspark.errors import DPSparkError
from dpspark.exact import RationalLike, parse_rational


class GridError(DPSparkError, ValueError):
    """Invalid grid parameters."""


def ceil_isqrt(n: int) -> int:
    """The smallest integer k >= 0 with k^2 >= n."""
    if n <= 0:
        return 0
    return isqrt(n - 1) + 1


def sqrt_upper(x: RationalLike, bits: int = 64) -> Fraction:
    """A rational upper bound U >= sqrt(x) with U - sqrt(x) <= 2^-bits (x >= 0), exact integer arithmetic."""
    v = parse_rational(x, "x")
    if v < 0:
        raise GridError(f"sqrt_upper needs x >= 0, got {v}")
    scaled = v * (1 << (2 * bits))  # sqrt(x) = sqrt(x 4^bits) / 2^bits
    n = -((-scaled.numerator) // scaled.denominator)  # ceil(x 4^bits) >= x 4^bits
    return Fraction(ceil_isqrt(n), 1 << bits)


def grid_sensitivity(
    grid: RationalLike,
    dims: int,
    *,
    l2: RationalLike | None = None,
    l2_squared: RationalLike | None = None,
    bits: int = 64,
) -> Fraction:
    """Certified upper bound on the l2 sensitivity in grid units: ||Delta||_2 / G + sqrt(D).

    Give the statistic's l2 sensitivity as ``l2`` (an upper bound) or exactly as
    ``l2_squared`` (then its square root is rounded up here).
    """
    G = parse_rational(grid, "grid")
    if G <= 0:
        raise GridError(f"grid must be > 0, got {G}")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise GridError(f"dims must be an int >= 1, got {dims!r}")
    if (l2 is None) == (l2_squared is None):
        raise GridError("give exactly one of l2 and l2_squared")
    if l2 is not None:
        delta = parse_rational(l2, "l2")
        if delta < 0:
            raise GridError("l2 must be >= 0")
        part = delta / G
    else:
        sq = parse_rational(l2_squared, "l2_squared")
        if sq < 0:
            raise GridError("l2_squared must be >= 0")
        part = sqrt_upper(sq / (G * G), bits)
    return part + sqrt_upper(dims, bits)


def to_grid(values: Sequence[RationalLike], grid: RationalLike) -> list[int]:
    """round(x / G) for each value, ties up: floor(x/G + 1/2), exactly."""
    G = parse_rational(grid, "grid")
    if G <= 0:
        raise GridError(f"grid must be > 0, got {G}")
    out = []
    for v in values:
        t = parse_rational(v, "value") / G + Fraction(1, 2)
        out.append(t.numerator // t.denominator)
    return out


def to_grid_int64(values: np.ndarray, grid: int) -> np.ndarray:
    """to_grid for an int64 array and an integer grid G >= 1: floor((2x + G) / (2G)), exact in int64."""
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise GridError("to_grid_int64 needs an integer grid >= 1")
    x = np.asarray(values)
    if x.dtype.kind not in "iu":
        raise TypeError("values must be an integer array")
    x = x.astype(np.int64)
    if x.size and (np.abs(x).max() > (1 << 61) or grid > (1 << 60)):
        raise GridError("values too large for exact int64 rounding")
    return np.floor_divide(2 * x + grid, 2 * grid)
