"""Transposed additive FFTs and the middle product built on them (the transposition principle).

With E the forward transform of :mod:`dpspark.gf.additive_fft` (size N = 2^t,
coefficients -> values at the span points) and fB the values of a polynomial
B, multiplication by B modulo the subspace polynomial of the span is the
N x N matrix M_B = E^-1 diag(fB) E. Its transpose is
M_B^T = E^T diag(fB) E^-T, and for a B of at most s = N/2 coefficients the
first s entries of M_B^T Y are a middle product (no wrap: deg(B z^i) < N for
i < s). :func:`middle_product` uses that: one E^-T per Y, shared by every B,
and one E^T per B, against two forward and two inverse transforms for the
same output by plain products.

E is a product of elementary steps at every level L (see additive_fft):
E_L = C_L (E_(L-1) + E_(L-1)) P T, with T the Taylor expansion (XORs of one
block into another), P the even/odd split and C the butterfly
(u, v) -> (u + G v, u + G v + v). So

* E^T = T^T P^T (E^T + E^T) C^T: C^T on the way down, (u, v) -> (u', G u' + v)
  with u' = u + v; P^T interleaves and T^T runs the Taylor XORs reversed
  with source and destination swapped, on the way up;
* E^-T = C^-T (E^-T + E^-T) P T^-T: T^-T (the transposed inverse Taylor) and
  the split on the way down, C^-T on the way up, (u, v) -> (v' + u, v')
  with v' = G u + v.

Every step is exact (XORs and field products); tests compare against the
explicit matrices and against plain products.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpspark.gf.additive_fft import _CHUNK, _leaf_pairs, _xor_into, tables
from dpspark.gf.clmul import CACHE
from dpspark.gf.field import GF2m
from dpspark.gf.kernels import mul1_words, mul2_words, mul_row

U64 = np.uint64


@njit(cache=CACHE, nogil=True)
def _taylor_t_passes(f, blk, size, s_lo, s_hi):  # type: ignore[no-untyped-def]
    """Transpose of additive_fft._taylor_passes(s_hi -> s_lo): passes reversed, XORs mirrored."""
    w = f.shape[1]
    ff = f.reshape(-1)
    s = s_lo
    while s <= s_hi:
        q = s >> 2
        for b in range(blk, blk + size, s):
            _xor_into(ff, (b + 2 * q) * w, (b + q) * w, q * w)
            _xor_into(ff, (b + 3 * q) * w, (b + 2 * q) * w, q * w)
        s <<= 1


@njit(cache=CACHE, nogil=True)
def _taylor_t(f, blk, size):  # type: ignore[no-untyped-def]
    """T^T on f[blk:blk+size] (the transpose of additive_fft._taylor)."""
    if size <= _CHUNK:
        _taylor_t_passes(f, blk, size, int(4), size)
        return
    for b in range(blk, blk + size, _CHUNK):
        _taylor_t_passes(f, b, int(_CHUNK), int(4), int(_CHUNK))
    _taylor_t_passes(f, blk, size, 2 * _CHUNK, size)


@njit(cache=CACHE, nogil=True)
def _untaylor_t_passes(f, blk, size, s_hi, s_lo):  # type: ignore[no-untyped-def]
    """Transpose of additive_fft._untaylor_passes(s_lo -> s_hi)."""
    w = f.shape[1]
    ff = f.reshape(-1)
    s = s_hi
    while s >= s_lo:
        q = s >> 2
        for b in range(blk, blk + size, s):
            _xor_into(ff, (b + 3 * q) * w, (b + 2 * q) * w, q * w)
            _xor_into(ff, (b + 2 * q) * w, (b + q) * w, q * w)
        s >>= 1


@njit(cache=CACHE, nogil=True)
def _untaylor_t(f, blk, size):  # type: ignore[no-untyped-def]
    """T^-T on f[blk:blk+size] (the transpose of additive_fft._untaylor)."""
    if size <= _CHUNK:
        _untaylor_t_passes(f, blk, size, size, int(4))
        return
    _untaylor_t_passes(f, blk, size, size, 2 * _CHUNK)
    for b in range(blk, blk + size, _CHUNK):
        _untaylor_t_passes(f, b, int(_CHUNK), int(_CHUNK), int(4))


@njit(cache=CACHE, nogil=True)
def _fwd_t_down(f, blk, L, pts, pts_off, taps, acc, tmp):  # type: ignore[no-untyped-def]
    """C^T: (u | v) -> (u + v | G (u + v) + v)."""
    w = f.shape[1]
    half = 1 << (L - 1)
    go = pts_off[L]
    t1, t2, t3 = taps[0], taps[1], taps[2]
    if w == 2:
        for i in range(half):
            a, b = blk + i, blk + half + i
            u0 = f[a, 0] ^ f[b, 0]
            u1 = f[a, 1] ^ f[b, 1]
            f[a, 0] = u0
            f[a, 1] = u1
            m0, m1 = mul2_words(pts[go + i, 0], pts[go + i, 1], u0, u1, t1, t2, t3)
            f[b, 0] ^= m0
            f[b, 1] ^= m1
        return
    if w == 1:
        for i in range(half):
            a, b = blk + i, blk + half + i
            u0 = f[a, 0] ^ f[b, 0]
            f[a, 0] = u0
            f[b, 0] ^= mul1_words(pts[go + i, 0], u0, t1, t2, t3)
        return
    for i in range(half):
        for j in range(w):
            f[blk + i, j] ^= f[blk + half + i, j]
        mul_row(pts, go + i, f, blk + i, tmp, int(0), taps, acc)
        for j in range(w):
            f[blk + half + i, j] ^= tmp[0, j]


@njit(cache=CACHE, nogil=True)
def _fwd_t_up(f, blk, L, scratch):  # type: ignore[no-untyped-def]
    """P^T then T^T: interleave (g0 | g1), then the transposed Taylor expansion."""
    w = f.shape[1]
    size = 1 << L
    half = size >> 1
    for i in range(half):
        for j in range(w):
            scratch[blk + 2 * i, j] = f[blk + i, j]
            scratch[blk + 2 * i + 1, j] = f[blk + half + i, j]
    for i in range(size):
        for j in range(w):
            f[blk + i, j] = scratch[blk + i, j]
    _taylor_t(f, blk, size)


@njit(cache=CACHE, nogil=True)
def _inv_t_down(f, blk, L, scratch):  # type: ignore[no-untyped-def]
    """T^-T then P: the transposed inverse Taylor expansion, then split into (even | odd)."""
    w = f.shape[1]
    size = 1 << L
    half = size >> 1
    _untaylor_t(f, blk, size)
    for i in range(half):
        for j in range(w):
            scratch[blk + i, j] = f[blk + 2 * i, j]
            scratch[blk + half + i, j] = f[blk + 2 * i + 1, j]
    for i in range(size):
        for j in range(w):
            f[blk + i, j] = scratch[blk + i, j]


@njit(cache=CACHE, nogil=True)
def _inv_t_up(f, blk, L, pts, pts_off, taps, acc, tmp):  # type: ignore[no-untyped-def]
    """C^-T: (u | v) -> (G u + v + u | G u + v)."""
    w = f.shape[1]
    half = 1 << (L - 1)
    go = pts_off[L]
    t1, t2, t3 = taps[0], taps[1], taps[2]
    if w == 2:
        for i in range(half):
            a, b = blk + i, blk + half + i
            m0, m1 = mul2_words(pts[go + i, 0], pts[go + i, 1], f[a, 0], f[a, 1], t1, t2, t3)
            v0 = f[b, 0] ^ m0
            v1 = f[b, 1] ^ m1
            f[b, 0] = v0
            f[b, 1] = v1
            f[a, 0] ^= v0
            f[a, 1] ^= v1
        return
    if w == 1:
        for i in range(half):
            a, b = blk + i, blk + half + i
            v0 = f[b, 0] ^ mul1_words(pts[go + i, 0], f[a, 0], t1, t2, t3)
            f[b, 0] = v0
            f[a, 0] ^= v0
        return
    for i in range(half):
        mul_row(pts, go + i, f, blk + i, tmp, int(0), taps, acc)
        for j in range(w):
            v = f[blk + half + i, j] ^ tmp[0, j]
            f[blk + half + i, j] = v
            f[blk + i, j] ^= v


def _walk(f, t, pts, pts_off, taps, transposed_forward):  # type: ignore[no-untyped-def]
    """Depth-first walk (explicit stack) applying E^T (transposed_forward) or E^-T in place: a Python call of
    :func:`walk_block`, so one compiled copy serves every caller (see additive_fft.afft_forward)."""
    walk_block(f, 0, t, pts, pts_off, taps, transposed_forward, -1)


def top_step(f, t, pts, pts_off, taps, which):  # type: ignore[no-untyped-def]
    """One level-t step on the whole array: 0 C^T, 1 P^T T^T, 2 T^-T P, 3 C^-T (see additive_fft.top_step),
    run inside :func:`walk_block` (its ``only`` argument), so it compiles no kernel of its own."""
    walk_block(f, 0, t, pts, pts_off, taps, which < 2, which % 2)


@njit(cache=CACHE, nogil=True)
def walk_block(f, blk0, t, pts, pts_off, taps, transposed_forward, only):  # type: ignore[no-untyped-def]
    """E^T or E^-T of level t on the block f[blk0 : blk0 + 2^t], in place.

    ``only`` -1: all of it; 0: only the level-t first step; 1: only its last step (:func:`top_step`).
    """
    w = f.shape[1]
    acc = np.zeros(2 * w, U64)
    tmp = np.zeros((1, w), U64)
    scratch = np.empty(f.shape, U64)
    stack = np.empty((3 * t + 3, 3), np.int64)
    sp = 0
    if t > 0:
        stack[0, 0] = blk0
        stack[0, 1] = t
        stack[0, 2] = 1 if only == 1 else 0
        sp = 1
    while sp > 0:
        sp -= 1
        blk = stack[sp, 0]
        L = stack[sp, 1]
        if stack[sp, 2] == 0:
            if transposed_forward:
                _fwd_t_down(f, blk, L, pts, pts_off, taps, acc, tmp)
            else:
                _inv_t_down(f, blk, L, scratch)
            if only == 0:
                break
            stack[sp, 2] = 1
            sp += 1
            if L == 2:
                # both children are pairs: done here rather than as four stack entries
                _leaf_pairs(f, blk, int(4), bool(False))
            elif L > 2:
                half = 1 << (L - 1)
                stack[sp, 0] = blk + half
                stack[sp, 1] = L - 1
                stack[sp, 2] = 0
                stack[sp + 1, 0] = blk
                stack[sp + 1, 1] = L - 1
                stack[sp + 1, 2] = 0
                sp += 2
        elif transposed_forward:
            _fwd_t_up(f, blk, L, scratch)
        else:
            _inv_t_up(f, blk, L, pts, pts_off, taps, acc, tmp)


def forward_t(field: GF2m, y: np.ndarray, t: int) -> np.ndarray:
    """E^T y for a vector y of 2^t elements (a new array)."""
    if y.shape[0] != (1 << t):
        raise ValueError("need exactly 2^t entries")
    tab = tables(field, t)
    f = np.array(y, dtype=np.uint64, copy=True)
    _walk(f, t, tab.pts, tab.pts_off, field.taps, True)
    return f


def inverse_t(field: GF2m, y: np.ndarray, t: int) -> np.ndarray:
    """E^-T y for a vector y of 2^t elements (a new array)."""
    if y.shape[0] != (1 << t):
        raise ValueError("need exactly 2^t entries")
    tab = tables(field, t)
    f = np.array(y, dtype=np.uint64, copy=True)
    _walk(f, t, tab.pts, tab.pts_off, field.taps, False)
    return f


def middle_product_from(field: GF2m, gy: np.ndarray, fb: np.ndarray, t: int, c: int) -> np.ndarray:
    """(B * Y)[sb : sb + c] from gy = E^-T(reversed Y) and fb = E(B), sb = len B, len Y = sb + c <= 2^t + 1.

    gy is the transform of Y reversed (Y[d-1], ..., Y[0], d = sb + c), cut or zero-padded to 2^t.
    """
    from dpspark.gf import kernels as K

    acc = np.empty_like(gy)
    K.mul_arrays(gy, fb, field.taps, acc)
    tab = tables(field, t)
    _walk(acc, t, tab.pts, tab.pts_off, field.taps, True)
    return np.ascontiguousarray(acc[c - 1 :: -1])


def middle_product(field: GF2m, b: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(b * y)[s : 2s] for len(y) = 2s (s a power of two) and len(b) <= s: the s middle coefficients."""
    from dpspark.gf import additive_fft as AF

    n = y.shape[0]
    s = n // 2
    if n < 2 or n & (n - 1) or b.shape[0] > s:
        raise ValueError("need len(y) = 2s, s a power of two, and len(b) <= s")
    t = n.bit_length() - 1
    gy = inverse_t(field, np.ascontiguousarray(y[::-1]), t)
    return middle_product_from(field, gy, AF.forward(field, b, t), t, s)
