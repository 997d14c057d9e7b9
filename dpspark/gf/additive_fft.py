"""Additive FFT over GF(2^m) (Gao & Mateer 2010) and the polynomial product built on it.

The transform evaluates f (2^t coefficients) at the 2^t points of the GF(2)-span
of a basis b_1..b_t, point index i = sum_j bit_j(i) 2^(j-1) <-> sum_j bit_j(i) b_j.
One level, with basis (b_1..b_L):

1. g(x) = f(b_L x)                          (2^L multiplications by powers of b_L)
2. Taylor-expand g at x^2 + x: g = sum_i (g0_i + g1_i x)(x^2 + x)^i    (XORs only)
3. recurse on g0 and g1 with the basis delta_i = gamma_i^2 + gamma_i, gamma_i = b_i / b_L (i < L)
4. for each point G of span(gamma): f(b_L G) = u + G v and f(b_L (G + 1)) = u + G v + v.

The inverse undoes the steps in reverse order. Both walk the blocks depth
first (an explicit stack, no recursion) so small blocks stay in cache. The
basis is a reversed Cantor basis (c_t, ..., c_1), c_1 = 1, c_(j+1)^2 + c_(j+1) = c_j,
so b_L = 1 at every level and step 1 is free. The per-level span points depend
only on (m, t) and are cached.

Cost per transform of size 2^t: about t 2^(t-1) field multiplications and
about t^2 2^(t-1) element XORs (the Taylor expansions), so a product of two
degree-n polynomials costs O(n log^2 n).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from dpspark.gf.clmul import CACHE
from dpspark.gf.field import GF2m
from dpspark.gf.kernels import mul1_words, mul2_words, mul_row

U64 = np.uint64

#: Largest supported transform size 2^MAX_LOG (its span-point table holds 2^t elements).
MAX_LOG = 26


#: Taylor passes below this block size run depth-first inside cache-sized chunks.
_CHUNK = 1 << 13


@njit(cache=CACHE, nogil=True, inline="always")
def _xor_into(ff, dst, src, n):  # type: ignore[no-untyped-def]
    """ff[dst:dst+n] ^= ff[src:src+n] on the flat word array (ranges never overlap)."""
    for i in range(n):
        ff[dst + i] ^= ff[src + i]


@njit(cache=CACHE, nogil=True)
def _taylor_passes(f, blk, size, s_hi, s_lo):  # type: ignore[no-untyped-def]
    w = f.shape[1]
    ff = f.reshape(-1)
    s = s_hi
    while s >= s_lo:
        q = s >> 2
        for b in range(blk, blk + size, s):
            _xor_into(ff, (b + 2 * q) * w, (b + 3 * q) * w, q * w)
            _xor_into(ff, (b + q) * w, (b + 2 * q) * w, q * w)
        s >>= 1


@njit(cache=CACHE, nogil=True)
def _taylor(f, blk, size):  # type: ignore[no-untyped-def]
    """In-place Taylor expansion at x^2 + x of f[blk:blk+size] (size a power of two >= 1).

    Split f = f0 + x^(2q)(f1 + x^q f2) (q = size/4); with h = f1 + f2,
    f = (f0 + x^q h) + (x^2 + x)^q (h + x^q f2); recurse on both halves.
    """
    if size <= _CHUNK:
        _taylor_passes(f, blk, size, size, int(4))
        return
    _taylor_passes(f, blk, size, size, 2 * _CHUNK)
    for b in range(blk, blk + size, _CHUNK):
        _taylor_passes(f, b, int(_CHUNK), int(_CHUNK), int(4))


@njit(cache=CACHE, nogil=True)
def _untaylor_passes(f, blk, size, s_lo, s_hi):  # type: ignore[no-untyped-def]
    w = f.shape[1]
    ff = f.reshape(-1)
    s = s_lo
    while s <= s_hi:
        q = s >> 2
        for b in range(blk, blk + size, s):
            _xor_into(ff, (b + q) * w, (b + 2 * q) * w, q * w)
            _xor_into(ff, (b + 2 * q) * w, (b + 3 * q) * w, q * w)
        s <<= 1


@njit(cache=CACHE, nogil=True)
def _untaylor(f, blk, size):  # type: ignore[no-untyped-def]
    """Inverse of :func:`_taylor`."""
    if size <= _CHUNK:
        _untaylor_passes(f, blk, size, int(4), size)
        return
    for b in range(blk, blk + size, _CHUNK):
        _untaylor_passes(f, b, int(_CHUNK), int(4), int(_CHUNK))
    _untaylor_passes(f, blk, size, 2 * _CHUNK, size)


@njit(cache=CACHE, nogil=True)
def _fwd_prepare(f, blk, L, tw, tw_off, taps, acc, scratch):  # type: ignore[no-untyped-def]
    """Forward, going down: scale by b_L^i, Taylor-expand, split into (g0 | g1)."""
    w = f.shape[1]
    size = 1 << L
    half = size >> 1
    o = tw_off[L]
    if o >= 0:
        for i in range(1, size):
            mul_row(f, blk + i, tw, o + i, f, blk + i, taps, acc)
    _taylor(f, blk, size)
    for i in range(half):
        for j in range(w):
            scratch[blk + i, j] = f[blk + 2 * i, j]
            scratch[blk + half + i, j] = f[blk + 2 * i + 1, j]
    for i in range(size):
        for j in range(w):
            f[blk + i, j] = scratch[blk + i, j]


@njit(cache=CACHE, nogil=True)
def _fwd_combine(f, blk, L, pts, pts_off, taps, acc, tmp):  # type: ignore[no-untyped-def]
    """Forward, coming up: (u | v) -> (u + G v | u + G v + v)."""
    w = f.shape[1]
    half = 1 << (L - 1)
    go = pts_off[L]
    t1, t2, t3 = taps[0], taps[1], taps[2]
    if w == 2:
        for i in range(half):
            a, b = blk + i, blk + half + i
            m0, m1 = mul2_words(pts[go + i, 0], pts[go + i, 1], f[b, 0], f[b, 1], t1, t2, t3)
            u0 = f[a, 0] ^ m0
            u1 = f[a, 1] ^ m1
            f[a, 0] = u0
            f[a, 1] = u1
            f[b, 0] ^= u0
            f[b, 1] ^= u1
        return
    if w == 1:
        for i in range(half):
            a, b = blk + i, blk + half + i
            u0 = f[a, 0] ^ mul1_words(pts[go + i, 0], f[b, 0], t1, t2, t3)
            f[a, 0] = u0
            f[b, 0] ^= u0
        return
    for i in range(half):
        mul_row(pts, go + i, f, blk + half + i, tmp, int(0), taps, acc)
        for j in range(w):
            u = f[blk + i, j] ^ tmp[0, j]
            f[blk + i, j] = u
            f[blk + half + i, j] ^= u


@njit(cache=CACHE, nogil=True)
def _inv_split(f, blk, L, pts, pts_off, taps, acc, tmp):  # type: ignore[no-untyped-def]
    """Inverse, going down: (w0 | w1) -> (u | v)."""
    w = f.shape[1]
    half = 1 << (L - 1)
    go = pts_off[L]
    t1, t2, t3 = taps[0], taps[1], taps[2]
    if w == 2:
        for i in range(half):
            a, b = blk + i, blk + half + i
            v0 = f[b, 0] ^ f[a, 0]
            v1 = f[b, 1] ^ f[a, 1]
            f[b, 0] = v0
            f[b, 1] = v1
            m0, m1 = mul2_words(pts[go + i, 0], pts[go + i, 1], v0, v1, t1, t2, t3)
            f[a, 0] ^= m0
            f[a, 1] ^= m1
        return
    if w == 1:
        for i in range(half):
            a, b = blk + i, blk + half + i
            v0 = f[b, 0] ^ f[a, 0]
            f[b, 0] = v0
            f[a, 0] ^= mul1_words(pts[go + i, 0], v0, t1, t2, t3)
        return
    for i in range(half):
        for j in range(w):
            f[blk + half + i, j] ^= f[blk + i, j]  # v = w0 + w1
        mul_row(pts, go + i, f, blk + half + i, tmp, int(0), taps, acc)
        for j in range(w):
            f[blk + i, j] ^= tmp[0, j]  # u = w0 + G v


@njit(cache=CACHE, nogil=True)
def _inv_join(f, blk, L, itw, tw_off, taps, acc, scratch):  # type: ignore[no-untyped-def]
    """Inverse, coming up: interleave (g0 | g1), undo Taylor, divide by b_L^i."""
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
    _untaylor(f, blk, size)
    o = tw_off[L]
    if o >= 0:
        for i in range(1, size):
            mul_row(f, blk + i, itw, o + i, f, blk + i, taps, acc)


@njit(cache=CACHE, nogil=True)
def _leaf_pairs(f, blk, size, plain):  # type: ignore[no-untyped-def]
    """The size-2 transforms of every pair in f[blk:blk+size]: the level-1 span point is 0, so no product.

    E and E^-1 of a pair are both (a, b) -> (a, a + b) (``plain``); E^T and E^-T are (a, b) -> (a + b, b).
    """
    w = f.shape[1]
    for p in range(blk, blk + size, 2):
        for j in range(w):
            if plain:
                f[p + 1, j] ^= f[p, j]
            else:
                f[p, j] ^= f[p + 1, j]


def afft_forward(f, t, tw, tw_off, pts, pts_off, taps):  # type: ignore[no-untyped-def]
    """In place: f (2^t coefficients) -> its values at the 2^t span points.

    A Python call of the block kernel (not a kernel of its own): called from a kernel, numba would compile the
    block kernel again for the constant arguments' literal types, a second copy of the largest kernel here.
    """
    afft_forward_block(f, 0, t, tw, tw_off, pts, pts_off, taps, -1)


@njit(cache=CACHE, nogil=True)
def afft_forward_block(f, blk0, t, tw, tw_off, pts, pts_off, taps, only):  # type: ignore[no-untyped-def]
    """The level-t forward step and everything below it on the block f[blk0 : blk0 + 2^t], in place.

    ``only`` -1: all of it; 0: only the level-t prepare; 1: only the level-t combine (:func:`top_step`: the
    same compiled code, so the two-thread transforms compile no kernel of their own).
    """
    w = f.shape[1]
    acc = np.zeros(2 * w, U64)
    tmp = np.zeros((1, w), U64)
    scratch = np.empty(f.shape, U64)
    # depth-first walk with an explicit stack (blk, L, phase) keeps blocks cache-resident
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
            _fwd_prepare(f, blk, L, tw, tw_off, taps, acc, scratch)
            if only == 0:
                break
            stack[sp, 2] = 1
            sp += 1
            if L == 2:
                # both children are pairs: done here rather than as four stack entries
                _leaf_pairs(f, blk, int(4), bool(True))
            elif L > 2:
                half = 1 << (L - 1)
                stack[sp, 0] = blk + half
                stack[sp, 1] = L - 1
                stack[sp, 2] = 0
                stack[sp + 1, 0] = blk
                stack[sp + 1, 1] = L - 1
                stack[sp + 1, 2] = 0
                sp += 2
        else:
            _fwd_combine(f, blk, L, pts, pts_off, taps, acc, tmp)


def afft_inverse(f, t, itw, tw_off, pts, pts_off, taps):  # type: ignore[no-untyped-def]
    """In place: values at the 2^t span points -> the 2^t coefficients (a Python call, see :func:`afft_forward`)."""
    afft_inverse_block(f, 0, t, itw, tw_off, pts, pts_off, taps, -1)


@njit(cache=CACHE, nogil=True)
def afft_inverse_block(f, blk0, t, itw, tw_off, pts, pts_off, taps, only):  # type: ignore[no-untyped-def]
    """The level-t inverse step and everything below it on the block f[blk0 : blk0 + 2^t], in place.

    ``only`` -1: all of it; 0: only the level-t split; 1: only the level-t join (see :func:`afft_forward_block`).
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
            _inv_split(f, blk, L, pts, pts_off, taps, acc, tmp)
            if only == 0:
                break
            stack[sp, 2] = 1
            sp += 1
            if L == 2:
                # both children are pairs: done here rather than as four stack entries
                _leaf_pairs(f, blk, int(4), bool(True))
            elif L > 2:
                half = 1 << (L - 1)
                stack[sp, 0] = blk + half
                stack[sp, 1] = L - 1
                stack[sp, 2] = 0
                stack[sp + 1, 0] = blk
                stack[sp + 1, 1] = L - 1
                stack[sp + 1, 2] = 0
                sp += 2
        else:
            _inv_join(f, blk, L, itw, tw_off, taps, acc, scratch)



def top_step(f, t, tw, tw_off, pts, pts_off, taps, which):  # type: ignore[no-untyped-def]
    """One level-t step on the whole array: 0 forward prepare, 1 forward combine, 2 inverse split, 3 inverse join.

    With :func:`afft_forward_block` / :func:`afft_inverse_block` on the two halves in between, these
    give the same transform as one walk; the halves are independent, so two threads can run them. The step
    runs inside the block kernels themselves (their ``only`` argument): no kernel of its own to compile.
    """
    if which < 2:
        afft_forward_block(f, 0, t, tw, tw_off, pts, pts_off, taps, which)
    else:
        afft_inverse_block(f, 0, t, tw, tw_off, pts, pts_off, taps, which - 2)

def _solve_artin_schreier(field: GF2m, c: int) -> int:
    """A root y of y^2 + y = c in GF(2^m), by Gaussian elimination on the GF(2)-linear map."""
    m = field.m
    cols = field.to_int(field.add(field.square(field.from_int([1 << i for i in range(m)])), field.from_int([1 << i for i in range(m)])))
    # rows of the augmented system: bit r of sum_i y_i cols[i] must equal bit r of c
    rows = []
    for r in range(m):
        v = 0
        for i, col in enumerate(cols):  # type: ignore[arg-type]
            if (col >> r) & 1:
                v |= 1 << i
        rows.append((v, (c >> r) & 1))
    piv: dict[int, tuple[int, int]] = {}
    for v, rhs in rows:
        for bit, (pv, prhs) in piv.items():
            if (v >> bit) & 1:
                v ^= pv
                rhs ^= prhs
        if v == 0:
            if rhs:
                raise ValueError("y^2 + y = c has no root (trace of c is 1)")
            continue
        bit = v.bit_length() - 1
        for b2 in list(piv):
            pv, prhs = piv[b2]
            if (pv >> bit) & 1:
                piv[b2] = (pv ^ v, prhs ^ rhs)
        piv[bit] = (v, rhs)
    y = 0
    for bit, (pv, prhs) in piv.items():
        if prhs:
            y |= 1 << bit  # free variables set to 0; each pivot row is then y_bit = rhs
    return y


def cantor_basis(field: GF2m, t: int) -> list[int]:
    """c_1 = 1, c_(j+1)^2 + c_(j+1) = c_j: a Cantor basis of length t (exists for 2^k | m, t <= 2^k)."""
    out = [1]
    while len(out) < t:
        y = _solve_artin_schreier(field, out[-1])
        ye = field.from_int(y)
        if field.to_int(field.add(field.square(ye), ye)) != out[-1]:
            raise AssertionError("Artin-Schreier solve failed")
        out.append(y)
    return out[:t]


class FFTTables:
    """Per-level span points for transforms of size 2^t over one field.

    The basis is (c_t, ..., c_1) for a Cantor basis c: its last element is 1 at
    every level (delta_i = gamma_i^2 + gamma_i maps c_(j+1) to c_j), so the
    twist g(x) = f(b_L x) is the identity and costs nothing; ``tw_off`` is -1.
    """

    def __init__(self, field: GF2m, t: int) -> None:
        if not 0 <= t <= min(MAX_LOG, field.m):
            raise ValueError("transform size out of range")
        self.t = t
        w = field.w
        cb = cantor_basis(field, t) if t else []
        basis = [field.from_int(v) for v in reversed(cb)]
        self.basis = basis
        pt_parts = []
        tw_off = np.full(t + 1, -1, np.int64)
        pts_off = np.zeros(t + 1, np.int64)
        o_pt = 0
        for L in range(t, 0, -1):
            if field.to_int(basis[L - 1]) != 1:
                raise AssertionError("Cantor basis must end in 1 at every level")
            gam = basis[: L - 1]
            span = np.zeros((1 << (L - 1), w), np.uint64)
            for j, g in enumerate(gam):
                span[1 << j : 2 << j] = span[: 1 << j] ^ g
            pt_parts.append(span)
            pts_off[L] = o_pt
            o_pt += 1 << (L - 1)
            basis = [field.add(field.square(g), g) for g in gam]
        empty = np.zeros((0, w), np.uint64)
        self.tw = empty
        self.itw = empty
        self.pts = np.concatenate(pt_parts) if pt_parts else empty
        self.tw_off = tw_off
        self.pts_off = pts_off


_TABLES: dict[tuple[int, int], FFTTables] = {}
_LOCK = threading.Lock()


def tables(field: GF2m, t: int) -> FFTTables:
    """Cached :class:`FFTTables` for (field, t)."""
    key = (field.m, t)
    with _LOCK:
        tab = _TABLES.get(key)
        if tab is None:
            tab = FFTTables(field, t)
            _TABLES[key] = tab
    return tab


def span_points(field: GF2m, t: int) -> np.ndarray:
    """The 2^t evaluation points of the size-2^t transform, in output order (for tests)."""
    basis = tables(field, t).basis
    pts = field.zeros(1 << t)
    for j in range(t):
        pts[1 << j : 2 << j] = pts[: 1 << j] ^ basis[j]
    return pts


def forward(field: GF2m, coeffs: np.ndarray, t: int) -> np.ndarray:
    """Values of the polynomial (at most 2^t coefficients) at the span points."""
    if coeffs.shape[0] > (1 << t):
        raise ValueError("polynomial longer than the transform")
    tab = tables(field, t)
    f = field.zeros(1 << t)
    f[: coeffs.shape[0]] = coeffs
    afft_forward(f, t, tab.tw, tab.tw_off, tab.pts, tab.pts_off, field.taps)
    return f


def inverse(field: GF2m, values: np.ndarray, t: int) -> np.ndarray:
    """The 2^t coefficients of the polynomial with these values at the span points."""
    if values.shape[0] != (1 << t):
        raise ValueError("need exactly 2^t values")
    tab = tables(field, t)
    f = np.array(values, dtype=np.uint64, copy=True)
    afft_inverse(f, t, tab.itw, tab.tw_off, tab.pts, tab.pts_off, field.taps)
    return f


def fft_mul(field: GF2m, a: np.ndarray, b: np.ndarray, pool: object | None = None) -> np.ndarray:
    """a * b by evaluation at 2^t span points (2^t >= len a + len b - 1), pointwise product, inverse.

    With a ``concurrent.futures`` executor, the two forward transforms run concurrently.
    """
    from dpspark.gf import kernels as K

    n = a.shape[0] + b.shape[0] - 1
    t = max(0, (n - 1).bit_length())
    if pool is not None:
        fut = pool.submit(forward, field, a, t)  # type: ignore[attr-defined]
        fb = forward(field, b, t)
        fa = fut.result()
    else:
        fa = forward(field, a, t)
        fb = forward(field, b, t)
    K.mul_arrays(fa, fb, field.taps, fa)
    return inverse(field, fa, t)[:n]
