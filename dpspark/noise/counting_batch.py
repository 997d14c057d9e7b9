"""Batched sampling of a counting mechanism, decided from the top 63 bits of each U.

A counting mechanism outputs M(c, u) = min{z in [0, n] : F(z) >= u}. With the
multiply-shift draw u = floor(X d / 2^L) + 1 (dpspark.rng), F(z) < u iff
F(z) 2^L <= X d iff C(z) <= x, where C(z) = F(z)/d and x = X/2^L. So
M(c, u) = clamp(min{z : C(z) > x}, 0, n), for any strictly increasing
extension of C to all integers z. Every output is this minimum; *how* it is
found does not matter, so the batch finds it with a table lookup instead of
the scalar path's ceil(log2(n+1)) big-integer comparisons:

* x is known to lie in [N/2^63, (N+1)/2^63), N = the draw's 63-bit prefix
  (:meth:`dpspark.rng._ByteSource.lazy_uniforms`).
* Both mechanisms have C(c + j) 2^63 = A_c + W(j), A_c >= 0 depending on c
  only and W strictly increasing in j. ``wtab`` holds exact floors of W on a
  window of j; A_c is 0 (GeoSample) or (c+1) 2^63 / D (FastSample,
  D = (n+1) g), computed in int64 within 2 below the truth. So the true value
  lies in [A~_c + wtab[k], A~_c + wtab[k] + E).
* The comparison at j is *decided* true if A~_c + wtab[k] + E <= N and false if
  A~_c + wtab[k] >= N + 1. One ``searchsorted`` counts the decided-true prefix
  of the window; if the next entry is decided false, the first false j is
  known exactly. If it lies beyond the window (FastSample's tails,
  where C is linear in z), min{z : C(z) > x} = floor(x D) - (0 or (g-1)(n+1)),
  decided when floor(x D) is the same at both ends of x's interval.
* Otherwise the count is a *tie* and is redone exactly by the scalar search
  with the full-width u (its remaining bits are read only then). Without a tie
  the output is the exact minimum, hence identical to the scalar path.

Timing caveat (strict time): the vectorised part runs the same numpy
operations for every batch of a given size (numpy's binary search may vary by
a step per element), but each tie costs one scalar exact draw (tens of
microseconds at d ~ 2^12000). A tie needs x's 2^-63 cell within E cells of a
value C(c + j) of the window, or, for FastSample's linear tails (probability
about gamma), an integer inside x D's interval of width D/2^63 (always, if
D >= 2^63). So Pr[tie] <= E (2t + 2) / 2^63 + Pr[tail] min(1, D / 2^63) per
draw: about 2^-50 at n = 10^9, eps = 1/10, gamma = 2^-70. Tie counts are kept
in memory for benchmarks (``CountingMechanism.batch_ties``) and are never
logged or written to a release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_S63 = np.uint64(63)


def mulhi(a: np.ndarray, b: int) -> np.ndarray:
    """floor(a * b / 2^64) for a uint64 array a and a constant 0 <= b < 2^64, exactly (32-bit limbs)."""
    b1, b0 = np.uint64(b >> 32), np.uint64(b & 0xFFFFFFFF)
    a1, a0 = a >> _S32, a & _M32
    u = a1 * b0 + ((a0 * b0) >> _S32)
    w = a0 * b1 + (u & _M32)
    return a1 * b1 + (u >> _S32) + (w >> _S32)


def floor_times_over_2_63(a: np.ndarray, b: int) -> np.ndarray:
    """floor(a * b / 2^63) for a uint64 array a <= 2^63 and a constant 0 <= b < 2^63 (result < 2^63)."""
    hi = mulhi(a, b)
    lo = a * np.uint64(b)  # the product mod 2^64 (numpy wraps unsigned arrays)
    return (hi << _ONE) | (lo >> _S63)


@dataclass(frozen=True)
class BatchTables:
    """Public per-mechanism tables of :func:`batch_sample` (see the module docstring)."""

    wtab: np.ndarray  # int64, non-decreasing: floor(W(jlo + k) 2^63)
    jlo: int
    error: int  # E: the true C(c+j) 2^63 lies in [A~_c + wtab[k], A~_c + wtab[k] + E)
    #: FastSample only: (floor(2^63/D), floor(frac(2^63/D) 2^64), D, (g-1)(n+1)); None for A_c = 0
    #: and for tails that the clamp to [0, n] already decides (GeoSample).
    uniform: tuple[int, int, int, int] | None = None


def batch_sample(counts: np.ndarray, top: np.ndarray, n: int, tables: BatchTables, error: int) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, ties) for int64 ``counts`` in [0, n] and 63-bit prefixes ``top``; outputs under ``ties`` are void.

    ``error`` (>= tables.error) is the E used; a larger one only makes more ties (test hook).
    """
    c = counts
    wtab, size = tables.wtab, len(tables.wtab)
    if tables.uniform is not None:
        rint, rho, big_d, shift = tables.uniform
        c1 = c + 1
        a = c1 * np.int64(rint) + mulhi(c1.astype(np.uint64), rho).astype(np.int64)  # A_c - 2 < a <= A_c
        y2 = top - a
    else:
        y2 = top
    k = np.searchsorted(wtab, y2 - error, side="right")  # decided true: wtab[k'] <= N - E - a for k' < k
    # tie iff the next entry is not decided false either (wtab[k] <= N - a); one gather, not a second search
    tie = wtab[np.minimum(k, size - 1)] <= y2
    tie &= k < size
    z = c + (tables.jlo + k)
    if tables.uniform is not None:
        low, high = k == 0, k == size
        if big_d >= 1 << 63:
            tie |= low | high
        else:
            u = top.astype(np.uint64)
            f = floor_times_over_2_63(u, big_d).astype(np.int64)  # floor(N D / 2^63)
            g = floor_times_over_2_63(u + _ONE, big_d).astype(np.int64)  # floor((N+1) D / 2^63)
            # floor(x D) for x in [N, N+1)/2^63 ranges over [f, ceil((N+1)D/2^63) - 1]; decided iff that is {f}
            exact_end = ((u + _ONE) * np.uint64(big_d)) & np.uint64((1 << 63) - 1) == 0
            undecided = (g - exact_end.astype(np.int64)) != f
            tie |= (low | high) & undecided
            z = np.where(low, f, np.where(high, f - shift, z))
    np.clip(z, 0, n, out=z)
    return z, tie
