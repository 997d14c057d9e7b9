"""Polynomial evaluation over GF(2^m) at a few points with numpy alone: no numba, no compiler run.

A lookup of one key evaluates p(x) = sum_i c_i x^i once. The numba kernels do that in well under a
millisecond, but only after they are compiled (tens of seconds on a fresh install) or loaded from
numba's cache (importing numba alone costs about 0.3 s). This module does the same exact arithmetic with
byte-window tables and numpy gathers:

* multiplication by a fixed element X is GF(2)-linear, so X * y = XOR over the m/8 bytes y_k of y of
  T_X[k, y_k], with T_X[k, b] = X * (b << 8k) (a table of m/8 x 256 elements, built with m shifts);
* p(x) = sum_r (x^B)^r q_r(x), q_r(x) = sum_{b < B} c_{rB + b} x^b: with the tables of x^0..x^(B-1) every
  product c_{rB + b} x^b is one gather per byte, and the q_r form a polynomial of ceil(l/B) coefficients
  in x^B, evaluated the same way (three levels for l = 10^5 at B = 64).

The work is about l * m/8 gathered rows per point (10^5 coefficients at m = 128: 1.6 * 10^6 rows, tens of
milliseconds), so it serves lookups of a few keys; batches go to the numba kernels. Results are
bit-identical to ``dpspark.gf.horner`` (a test compares them over every supported m). Elements use the
layout of :mod:`dpspark.gf.field`: rows of m/64 little-endian uint64 words. Only numpy and the moduli.
"""

from __future__ import annotations

import sys

import numpy as np

from dpspark.gf.moduli import MODULI

#: Coefficients per block (a power of two): the tables of one level hold B * m/8 * 256 elements.
BLOCK = 64
#: Gathered rows per chunk of a level (bounds the temporary arrays at about 2^21 * m/8 bytes).
CHUNK_ROWS = 1 << 21

U64 = np.uint64


def _overflow(m: int) -> U64:
    """r(z) as one word, for z^m = r(z) (every tap is below 64)."""
    return U64(sum(1 << t for t in MODULI[m]))


def tables(m: int, xs: np.ndarray) -> np.ndarray:
    """T[q, j, k, b] = word q of xs[j] * (b << 8k), for every element of ``xs`` (n, w): shape (w, n, m/8, 256).

    Word-major, so that a gather of one word reads a flat uint64 array and the XOR over the bytes runs along
    the last (contiguous) axis.
    """
    n, w = xs.shape
    out = np.zeros((w, n, m // 8, 256), dtype=U64)
    ov = _overflow(m)
    cur = np.array(xs.T, dtype=U64, order="C")  # (w, n), a copy: cur = xs * z^i
    for i in range(m):  # public count (m)
        out[:, :, i >> 3, 1 << (i & 7)] = cur
        top = cur[w - 1] >> U64(63)
        carry = cur[:-1] >> U64(63)
        cur <<= U64(1)
        cur[1:] |= carry
        cur[0] ^= top * ov
    for j in range(8):  # entries b = lo + rest from the single-bit ones: linearity
        lo = 1 << j
        out[..., lo + 1 : 2 * lo] = out[..., 1:lo] ^ out[..., lo : lo + 1]
    return out


def _byte_index(ys: np.ndarray, nbytes: int) -> np.ndarray:
    """The m/8 little-endian bytes of each element of ``ys`` (..., w) as intp, shape (..., m/8)."""
    raw = ys if sys.byteorder == "little" else ys.astype("<u8")
    return np.ascontiguousarray(raw).view(np.uint8).reshape(*ys.shape[:-1], nbytes).astype(np.intp)


def _gather_sum(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """XOR over the last axis of ``idx`` of the table rows it indexes: shape idx.shape[:-1] + (w,)."""
    w = table.shape[0]
    out = np.empty((*idx.shape[:-1], w), dtype=U64)
    for q in range(w):  # w <= 4 words
        out[..., q] = np.bitwise_xor.reduce(table[q].reshape(-1)[idx], axis=-1)
    return out


def mul_fixed(m: int, table: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """X * y for each row y of ``ys`` (n, w), with ``table`` = tables(m, X[None]) (one element X)."""
    nbytes = m // 8
    return _gather_sum(table, _byte_index(ys, nbytes) + np.arange(nbytes, dtype=np.intp) * 256)


def _powers(m: int, x: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(x^0..x^(count-1) as (count, w), x^count): one table of x, then count products of one row."""
    w = x.shape[0]
    tab = tables(m, x.reshape(1, w))
    pw = np.zeros((count + 1, w), dtype=U64)
    pw[0, 0] = 1
    for i in range(count):  # public count (at most BLOCK)
        pw[i + 1] = mul_fixed(m, tab, pw[i : i + 1])[0]
    return pw[:count], pw[count]


def _block_sums(m: int, table: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """q_r = sum_b coeffs[rB + b] * X_b for the B elements X_b behind ``table`` (w, B, m/8, 256)."""
    w, B, nbytes, _ = table.shape
    rows = -(-coeffs.shape[0] // B)
    padded = np.zeros((rows * B, w), dtype=U64)
    padded[: coeffs.shape[0]] = coeffs
    blocks = padded.reshape(rows, B, w)
    base = ((np.arange(B, dtype=np.intp)[:, None] * nbytes + np.arange(nbytes, dtype=np.intp)) * 256).reshape(-1)
    out = np.empty((rows, w), dtype=U64)
    step = max(1, CHUNK_ROWS // (B * nbytes))
    for r0 in range(0, rows, step):  # public count: ceil(rows / step)
        part = blocks[r0 : r0 + step]
        idx = _byte_index(part, nbytes).reshape(part.shape[0], B * nbytes)
        idx += base
        out[r0 : r0 + step] = _gather_sum(table, idx)
    return out


def evaluate(m: int, coeffs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """p(x) for coefficients ``coeffs`` (l, w), ascending, and one point ``x`` (w,): shape (w,)."""
    if m not in MODULI:
        raise ValueError(f"unsupported field degree m={m}; supported: {sorted(MODULI)}")
    w = m // 64
    if coeffs.dtype != U64 or coeffs.ndim != 2 or coeffs.shape[1] != w or x.dtype != U64 or x.shape != (w,):
        raise ValueError(f"coeffs must be a (l, {w}) and x a ({w},) uint64 array for GF(2^{m})")
    c = coeffs
    while c.shape[0] > 1:  # about log_B(l) levels, public
        count = min(BLOCK, 1 << (c.shape[0] - 1).bit_length())
        pw, x = _powers(m, x, count)
        c = _block_sums(m, tables(m, pw), c)
    return c[0].copy() if c.shape[0] else np.zeros(w, dtype=U64)


def evaluate_many(m: int, coeffs: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """p(x) for each row of ``xs`` (k, w): k independent evaluations, shape (k, w)."""
    out = np.zeros(xs.shape, dtype=U64)
    for i in range(xs.shape[0]):  # the caller's batch size (public: it is the number of keys asked)
        out[i] = evaluate(m, coeffs, np.ascontiguousarray(xs[i]))
    return out
