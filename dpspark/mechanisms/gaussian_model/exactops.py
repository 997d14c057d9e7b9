"""Exact integer kernels on the driver: norm tests and Gram matrices of int64 rows, with no overflow.

* :func:`exact_sq_norms`: ||y||^2 per row as Python ints, from int64 limbs (no float at all).
* :func:`exact_gram`: Y^T Y exactly. Y is split into L limbs of s bits (the top one signed), and each
  limb product L_p^T L_q runs on float64 BLAS. Every partial sum is an integer of magnitude at most
  m 2^(2s) < 2^53 (m rows, |limb| <= 2^s), so float64 represents each partial sum exactly and the
  result is exact; :func:`limb_bits` picks the largest such s. The limb products are recombined as
  Python ints.
* :func:`exact_apply`: y = x M^T as int64 via float64 BLAS on limbs of x and M (d 2^(2s) < 2^53), with a
  proven bound that the int64 recombination cannot overflow (else None: the caller uses Python ints).
* :func:`exact_norm_le`: the norm test ||y||^2 <= T for every row at once, on int64 limb digit sums.
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
    single_thread_blas()
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
        for q in range(p, count):
            part = limbs[p].T @ limbs[q]  # report: every partial sum is an integer below 2^53: exact
            exact = np.rint(part).astype(np.int64)
            if q != p:
                exact = exact + exact.T  # L_q^T L_p = (L_p^T L_q)^T; each < 2^53, the sum < 2^54
            total = total + exact.astype(object) * (1 << (s * (p + q)))
    return [[int(total[i, j]) for j in range(d)] for i in range(d)]


_BLAS_LIMITED = False


def single_thread_blas() -> None:
    """Limit BLAS to one thread in this process (once).

    Why: on a loaded 2-core machine a multi-threaded BLAS spins its threads against Spark's workers; a
    10^4 x 100 Gram took 0.8 s multi-threaded and 0.005 s single-threaded. Exactness does not depend on it.
    """
    global _BLAS_LIMITED
    if _BLAS_LIMITED:
        return
    _BLAS_LIMITED = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only speed depends on it
        return
    threadpool_limits(1, user_api="blas")


def _limb_count(top: int, s: int) -> int:
    """Limbs of s bits (top one signed, |top limb| <= 2^s) that cover integers of magnitude <= top."""
    return max(1, -(-(int(top).bit_length() + 1) // s))


def apply_bits(d: int) -> int:
    """The limb budget B of :func:`exact_apply`: the largest B with d 2^B < 2^53, so a float64 dot product of
    d products of an s-bit and a t-bit limb (s + t = B, magnitudes <= 2^s and 2^t) has every partial sum
    an integer below 2^53: exact."""
    b = 52
    while b > 2 and d * (1 << b) >= 1 << 53:
        b -= 1
    return b


def exact_apply(x: np.ndarray, matrix: np.ndarray) -> np.ndarray | None:
    """y = x M^T exactly as int64 for int64 rows x and an int64 matrix M, or None when int64 cannot be proven.

    M is split into limbs of t bits and x into limbs of s = B - t bits (B = :func:`apply_bits`; lower limbs
    in [0, 2^width), the top limb signed, all of magnitude <= 2^width); t covers M in one limb when M is
    small enough, else t = B / 2. Each limb product X_p M_q^T runs on float64 BLAS and is exact
    (d 2^(s+t) < 2^53). The recombination sum_pq X_p M_q^T 2^(sp + tq) runs in int64 only if the sum of
    the magnitudes of all its terms, bounded by sum_pq max|X_p| 2^(sp) max_i sum_k |M_q[i,k]| 2^(tq),
    is below 2^63 (then no partial sum can overflow); otherwise None (the caller takes Python ints).
    """
    single_thread_blas()
    x = np.asarray(x, dtype=np.int64)
    m = np.asarray(matrix, dtype=np.int64)
    d = m.shape[1]
    budget = apply_bits(d)
    top_x = int(np.abs(x).max(initial=0))
    top_m = int(np.abs(m).max(initial=0))
    t = top_m.bit_length() + 1 if top_m.bit_length() + 1 <= budget - budget // 4 else budget // 2
    s = budget - t
    xl = _limbs(x, s, _limb_count(top_x, s))
    ml = _limbs(m, t, _limb_count(top_m, t))
    bound = 0
    for p, xp in enumerate(xl):
        xp_max = int(np.abs(xp).max(initial=0))
        for q, mq in enumerate(ml):
            row_l1 = int(np.abs(mq).sum(axis=1).max(initial=0))
            bound += (xp_max * row_l1) << (s * p + t * q)
    if bound >= 1 << 63:
        return None
    out = np.zeros((x.shape[0], m.shape[0]), dtype=np.int64)
    xf = [v.astype(np.float64) for v in xl]  # report: exact small integers (|limb| <= 2^s)
    for q, mq in enumerate(ml):
        mf = np.ascontiguousarray(mq.T.astype(np.float64))  # report: exact small integers
        for p, xp in enumerate(xf):
            part = xp @ mf  # report: every partial sum is an integer below 2^53: exact
            out += part.astype(np.int64) << np.int64(s * p + t * q)
    return out


def exact_norm_le(y: np.ndarray, bound: int) -> np.ndarray:
    """Exact boolean ||y_r||^2 <= bound per row of an int64 matrix, vectorised (no float, no Python loop per row).

    Each entry is split into three 24-bit limbs (two in [0, 2^24), the top one |.| <= 2^15); the limb
    products summed over a row are < d 2^48, and the five digit sums c_k = sum_{p+q=k} (1 or 2) part_pq
    are < 3 d 2^48 < 2^63 for d < 2^12 (the top limb's products are smaller). A carry pass makes digits 0..3 lie in [0, 2^24); the norm and the
    bound (split the same way, top digit capped above every possible norm) are then compared digit-wise
    from the top, exactly.
    """
    y = np.asarray(y, dtype=np.int64)
    rows, d = y.shape
    if d >= 1 << 12:
        raise ValueError("too many columns for the int64 limb norm")
    bound = int(bound)
    if bound < 0:
        return np.zeros(rows, dtype=bool)
    s = 24
    lo, hi = _limbs(y, s, 2)
    hl, hh = _limbs(hi, s, 2)
    limbs = [lo, hl, hh]
    digits = [np.zeros(rows, dtype=np.int64) for _ in range(5)]
    for p in range(3):
        for q in range(p, 3):
            part = np.einsum("ij,ij->i", limbs[p], limbs[q])  # each product <= 2^48, d of them: < 2^60
            digits[p + q] += part * (2 if p != q else 1)
    mask = np.int64((1 << s) - 1)
    for k in range(4):
        digits[k + 1] += digits[k] >> s  # floor: the value sum_k digit_k 2^(24 k) is unchanged
        digits[k] &= mask
    # every ||y||^2 < d 2^126 < 2^138: a bound's top digit above 2^42 keeps every row
    tops = [(bound >> (s * k)) & ((1 << s) - 1) for k in range(4)] + [min(bound >> (4 * s), 1 << 62)]
    le = digits[0] <= tops[0]
    for k in range(1, 5):
        le = (digits[k] < tops[k]) | ((digits[k] == tops[k]) & le)
    return le
