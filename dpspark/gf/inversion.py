"""Batch inversion in GF(2^m) from the multiply and square kernels alone (no inversion kernel to compile).

A product tree replaces Montgomery's sequential prefix products: level j + 1 holds the products of
adjacent pairs of level j (an odd last element moves up alone), the root (the product of all elements)
is inverted by the Itoh-Tsujii chain a^-1 = a^(2^m - 2), and the inverse of each element comes down the
tree: (xy)^-1 * y = x^-1 and (xy)^-1 * x = y^-1. That is about 3n products, as in Montgomery's trick, but
each level is one vectorised call of ``mul_arrays`` (which every build compiles anyway), so a cold build
no longer compiles a batch-inversion kernel of its own (5.5 CPU s, issue 35 §1). The results are the
field inverses, so they are identical to any other inversion's.

Every loop runs a count fixed by the batch size or by m (public); no element value steers a branch.
"""

from __future__ import annotations

import numpy as np

from dpspark.gf.lazy_kernels import K

U64 = np.uint64


def _mul(a: np.ndarray, b: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Row-wise a * b of two (n, w) C-contiguous writeable arrays (the build's one ``mul_arrays`` signature)."""
    out = np.empty_like(a)
    K.mul_arrays(a, b, taps, out)
    return out


def _itoh_tsujii(x: np.ndarray, m: int, taps: np.ndarray) -> np.ndarray:
    """x^(2^m - 2) for the rows of ``x`` (n, w): beta_k = x^(2^k - 1) along the binary digits of m - 1.

    beta_{2k} = beta_k^(2^k) * beta_k and beta_{k+1} = beta_k^2 * x; then x^-1 = beta_{m-1}^2.
    """
    beta = x.copy()
    k = 1
    for bit in range((m - 1).bit_length() - 2, -1, -1):  # public count: the bits of m - 1
        t = beta.copy()
        for _ in range(k):  # public count: k < m
            K.sqr_arrays(t, taps, t)
        beta = _mul(t, beta, taps)
        k *= 2
        if (m - 1) >> bit & 1:
            K.sqr_arrays(beta, taps, beta)
            beta = _mul(beta, x, taps)
            k += 1
    out = np.empty_like(beta)
    K.sqr_arrays(beta, taps, out)
    return out


def batch_inverse(a: np.ndarray, m: int, taps: np.ndarray) -> np.ndarray:
    """a[i]^-1 for every row of ``a`` (n, w); the caller has checked that no row is zero (0 would map to 0)."""
    n = a.shape[0]
    if n == 0:
        return a.copy()
    # up: pair products; each level keeps its (even, odd) halves as C-contiguous copies for the way down
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    cur = np.array(a, dtype=U64, order="C")  # a writeable copy: the kernels take one array type only
    while cur.shape[0] > 1:  # about log2(n) levels, public
        h = cur.shape[0] // 2
        even = np.ascontiguousarray(cur[0 : 2 * h : 2])
        odd = np.ascontiguousarray(cur[1 : 2 * h : 2])
        last = cur[2 * h :].copy() if cur.shape[0] & 1 else None
        levels.append((even, odd, last))
        up = _mul(even, odd, taps)
        cur = up if last is None else np.concatenate([up, last])
    inv = _itoh_tsujii(cur, m, taps)
    # down: the inverse of each pair product gives both members' inverses
    for even, odd, last in reversed(levels):
        h = even.shape[0]
        pair = np.ascontiguousarray(inv[:h])
        nxt = np.empty((2 * h + (last is not None), a.shape[1]), dtype=U64)
        nxt[0 : 2 * h : 2] = _mul(pair, odd, taps)
        nxt[1 : 2 * h : 2] = _mul(pair, even, taps)
        if last is not None:
            nxt[2 * h] = inv[h]
        inv = nxt
    return inv
