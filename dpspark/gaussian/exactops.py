"""Exact integer kernels on the driver: norm tests and Gram matrices of int64 rows, with no overflow.

* :func:`exact_sq_norms`: ||y||^2 per row as Python ints, from int64 limbs (no float at all).
* :func:`exact_gram`: Y^T Y exactly. Y is split into L limbs of s bits (the top one signed), and each
  limb product L_p^T L_q runs on float64 BLAS. Every partial sum is an integer of magnitude at most
  m 2^(2s) < 2^53 (m rows, |limb| <= 2^s), so float64 represents each partial sum exactly and the
  result is exact; :func:`limb_bits` picks the largest such s. The limb products are recombined as
  Python ints.
"""

from __future__ import annotations

import numpy as np


def limb_bits(rows: int) -> int:
    """The largest s with rows * 2^(2s) < 2^53 (so every float64 partial sum of limb products is exact)."""
    s = 26
    while s > 1 and rows * (1 << (2 * s)) >= 1 << 53:
        s -= 1
    return s


def _limbs(y: np.ndarray, s: int, count: int) -> list[np.ndarray]:
    """y = sum_p limb_p 2^(p s) with limb_p in [0, 2^s) for p < count - 1 and the top limb signed."""
    out = []
    rest = y.astype(np.int64)
    mask = np.int64((1 << s) - 1)
    for _ in range(count - 1):
        out.append(rest & mask)
        rest = rest >> s  # floor division by 2^s: exact on int64
    out.append(rest)
    return out


def exact_sq_norms(y: np.ndarray) -> list[int]:
    """Exact ||y_r||^2 for every row of an int64 matrix, as Python ints (int64 limbs, object recombination)."""
    y = np.asarray(y, dtype=np.int64)
    if y.size == 0:
        return [0] * y.shape[0]
    d = y.shape[1]
    s = 24
    lo, hi = _limbs(y, s, 2)
    # |hi| <= 2^39, so hi^2 <= 2^78 would overflow: split hi once more (3 limbs of 24 bits cover 2^63)
    hl, hh = _limbs(hi, s, 2)  # hi = hh 2^24 + hl, |hh| <= 2^15
    limbs = [lo, hl, hh]
    if d * (1 << 48) >= 1 << 63:
        raise ValueError("too many columns for the int64 limb norm")
    total = np.zeros(y.shape[0], dtype=object)
    for p in range(3):
        for q in range(p, 3):
            part = np.sum(limbs[p] * limbs[q], axis=1)  # each product < 2^48, d of them < 2^63
            factor = (2 if p != q else 1) << (s * (p + q))
            total = total + part.astype(object) * factor
    return [int(v) for v in total]


def exact_gram(y: np.ndarray) -> list[list[int]]:
    """Exact Y^T Y of an int64 matrix (m x d) as Python ints, via float64 BLAS on limbs (module docstring)."""
    y = np.asarray(y, dtype=np.int64)
    m, d = y.shape
    if m == 0:
        return [[0] * d for _ in range(d)]
    s = limb_bits(m)
    top = int(np.abs(y).max())
    count = max(1, -(-(top.bit_length() + 1) // s))
    limbs = [limb.astype(np.float64) for limb in _limbs(y, s, count)]  # report: exact small integers (< 2^s)
    total = np.zeros((d, d), dtype=object)
    for p in range(count):
        for q in range(count):
            part = limbs[p].T @ limbs[q]  # report: every partial sum is an integer below 2^53: exact
            total = total + np.rint(part).astype(np.int64).astype(object) * (1 << (s * (p + q)))
    return [[int(total[i, j]) for j in range(d)] for i in range(d)]
