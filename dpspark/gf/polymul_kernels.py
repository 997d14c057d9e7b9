"""numba kernels for products of polynomials over GF(2^m).

Polynomials are (n, w) uint64 arrays of reduced coefficients, ascending degree.
The kernels here accumulate *unreduced* coefficient products (2w words each)
and reduce once per output coefficient at the end (``reduce_rows``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpspark.gf.clmul import CACHE, clmul64
from dpspark.gf.kernels import mul_acc, reduce_row

U64 = np.uint64


@njit(cache=CACHE, nogil=True)
def xor_rows(dst, d0, src, s0, n):  # type: ignore[no-untyped-def]
    """dst[d0 : d0 + n] ^= src[s0 : s0 + n], row by row.

    An explicit loop rather than ``dst[a:b] ^= src[c:d]``: numba compiles array-to-slice assignment with a
    formatted shape-mismatch error (string joins, about 9 CPU s of compiling in a cold cache) and a ufunc loop.
    """
    for i in range(n):
        for j in range(dst.shape[1]):
            dst[d0 + i, j] ^= src[s0 + i, j]


@njit(cache=CACHE, nogil=True)
def xor_new(a, a0, b, b0, n):  # type: ignore[no-untyped-def]
    """A new array a[a0 : a0 + n] ^ b[b0 : b0 + n] (see :func:`xor_rows`)."""
    out = np.empty((n, a.shape[1]), U64)
    for i in range(n):
        for j in range(a.shape[1]):
            out[i, j] = a[a0 + i, j] ^ b[b0 + i, j]
    return out


@njit(cache=CACHE, nogil=True)
def school_unreduced(a, b, out):  # type: ignore[no-untyped-def]
    """out[i+j] ^= a[i]*b[j] (unreduced, out has 2w columns)."""
    na, w = a.shape
    nb = b.shape[0]
    if w == 2:
        # word-level Karatsuba: 3 carry-less products per coefficient pair
        for i in range(na):
            a0 = a[i, 0]
            a1 = a[i, 1]
            am = a0 ^ a1
            for j in range(nb):
                b0 = b[j, 0]
                b1 = b[j, 1]
                l00, h00 = clmul64(a0, b0)
                l11, h11 = clmul64(a1, b1)
                lm, hm = clmul64(am, b0 ^ b1)
                lm ^= l00 ^ l11
                hm ^= h00 ^ h11
                k = i + j
                out[k, 0] ^= l00
                out[k, 1] ^= h00 ^ lm
                out[k, 2] ^= hm ^ l11
                out[k, 3] ^= h11
        return
    for i in range(na):
        for j in range(nb):
            k = i + j
            for p in range(w):
                x = a[i, p]
                for q in range(w):
                    lo, hi = clmul64(x, b[j, q])
                    out[k, p + q] ^= lo
                    out[k, p + q + 1] ^= hi


@njit(cache=CACHE, nogil=True)
def karatsuba_unreduced(a, b, out, thr):  # type: ignore[no-untyped-def]
    """out[0:na+nb-1] ^= a*b, unreduced; schoolbook once min(na, nb) <= thr."""
    na = a.shape[0]
    nb = b.shape[0]
    w = a.shape[1]
    if na == 0 or nb == 0:
        return
    if na <= thr or nb <= thr:
        school_unreduced(a, b, out)
        return
    n = max(na, nb)
    h = (n + 1) // 2
    if na <= h:
        # unbalanced: cut b into pieces of length na
        for s in range(0, nb, na):
            e = min(nb, s + na)
            karatsuba_unreduced(a, b[s:e], out[s : s + na + e - s - 1], thr)
        return
    if nb <= h:
        for s in range(0, na, nb):
            e = min(na, s + nb)
            karatsuba_unreduced(a[s:e], b, out[s : s + nb + e - s - 1], thr)
        return
    la = na - h
    lb = nb - h
    z0 = np.zeros((2 * h - 1, 2 * w), U64)
    karatsuba_unreduced(a[:h], b[:h], z0, thr)
    z2 = np.zeros((la + lb - 1, 2 * w), U64)
    karatsuba_unreduced(a[h:], b[h:], z2, thr)
    sa = a[:h].copy()
    xor_rows(sa, int(0), a, h, la)
    sb = b[:h].copy()
    xor_rows(sb, int(0), b, h, lb)
    z1 = np.zeros((2 * h - 1, 2 * w), U64)
    karatsuba_unreduced(sa, sb, z1, thr)
    xor_rows(z1, int(0), z0, int(0), 2 * h - 1)
    xor_rows(z1, int(0), z2, int(0), la + lb - 1)
    xor_rows(out, int(0), z0, int(0), 2 * h - 1)
    xor_rows(out, 2 * h, z2, int(0), la + lb - 1)
    mlen = min(2 * h - 1, na + nb - 1 - h)
    xor_rows(out, h, z1, int(0), mlen)


@njit(cache=CACHE, nogil=True)
def reduce_rows(acc, taps, out):  # type: ignore[no-untyped-def]
    """out[i] = acc[i] mod the field modulus for every unreduced 2w-word row."""
    w = out.shape[1]
    for i in range(acc.shape[0]):
        reduce_row(acc[i], taps, w, out, i)


@njit(cache=CACHE, nogil=True)
def monic_level_products(src, n, s, taps, dst):  # type: ignore[no-untyped-def]
    """One subproduct-tree level: multiply sibling monic nodes of size s.

    Node j of a level covers points [j*s, min((j+1)*s, n)) and is stored as its
    non-leading coefficients in src at the same rows (degree = number of
    points, leading 1 implicit). (z^s1 + A)(z^s2 + B) = AB + z^s1 B + z^s2 A + z^(s1+s2).
    """
    w = src.shape[1]
    acc = np.zeros((2 * s, 2 * w), U64)
    for start in range(0, n, 2 * s):
        mid = min(start + s, n)
        end = min(start + 2 * s, n)
        s1 = mid - start
        s2 = end - mid
        if s2 == 0:
            for i in range(start, end):
                for j in range(w):
                    dst[i, j] = src[i, j]
            continue
        acc[: s1 + s2] = 0
        school_unreduced(src[start:mid], src[mid:end], acc)
        for i in range(s1 + s2 - 1):
            reduce_row(acc[i], taps, w, dst, start + i)
        for j in range(w):
            dst[start + s1 + s2 - 1, j] = U64(0)
        for i in range(s2):
            for j in range(w):
                dst[start + s1 + i, j] ^= src[mid + i, j]
        for i in range(s1):
            for j in range(w):
                dst[start + s2 + i, j] ^= src[start + i, j]


@njit(cache=CACHE, nogil=True)
def monic_level_lincomb(tree_lo, vals, n, s, taps, dst):  # type: ignore[no-untyped-def]
    """One level of the linear-combination tree, children of size s.

    r = r_L * M_R + r_R * M_L with M_* = z^s* + (stored low coefficients).
    r_L*M_R = r_L*R + z^s2 r_L (deg < s1+s2), likewise for the other term.
    """
    w = vals.shape[1]
    acc = np.zeros((2 * s, 2 * w), U64)
    for start in range(0, n, 2 * s):
        mid = min(start + s, n)
        end = min(start + 2 * s, n)
        s1 = mid - start
        s2 = end - mid
        if s2 == 0:
            for i in range(start, end):
                for j in range(w):
                    dst[i, j] = vals[i, j]
            continue
        acc[: s1 + s2] = 0
        school_unreduced(vals[start:mid], tree_lo[mid:end], acc)
        school_unreduced(vals[mid:end], tree_lo[start:mid], acc)
        for i in range(s1 + s2 - 1):
            reduce_row(acc[i], taps, w, dst, start + i)
        for j in range(w):
            dst[start + s1 + s2 - 1, j] = U64(0)
        for i in range(s1):
            for j in range(w):
                dst[start + s2 + i, j] ^= vals[start + i, j]
        for i in range(s2):
            for j in range(w):
                dst[start + s1 + i, j] ^= vals[mid + i, j]


@njit(cache=CACHE, nogil=True)
def monic_level_remainders(tree_lo, vals, n, s, taps, dst):  # type: ignore[no-untyped-def]
    """One level of the remainder tree: parent remainders (size <= 2s) mod children (size s).

    Schoolbook division by the monic child z^sc + C: for the top coefficient
    t of the running remainder at degree d >= sc, subtract t*z^(d-sc)*C.
    """
    w = vals.shape[1]
    acc = np.zeros(2 * w, U64)
    tmp = np.zeros((1, w), U64)
    buf = np.zeros((2 * s, w), U64)
    for start in range(0, n, 2 * s):
        mid = min(start + s, n)
        end = min(start + 2 * s, n)
        plen = end - start
        for child in range(2):
            c0 = start if child == 0 else mid
            c1 = mid if child == 0 else end
            sc = c1 - c0
            if sc == 0:
                continue
            for i in range(plen):
                for j in range(w):
                    buf[i, j] = vals[start + i, j]
            for d in range(plen - 1, sc - 1, -1):
                for i in range(sc):
                    # buf[d - sc + i] ^= buf[d] * C[i]
                    for j in range(2 * w):
                        acc[j] = U64(0)
                    for p in range(w):
                        x = buf[d, p]
                        for q in range(w):
                            lo, hi = clmul64(x, tree_lo[c0 + i, q])
                            acc[p + q] ^= lo
                            acc[p + q + 1] ^= hi
                    reduce_row(acc, taps, w, tmp, int(0))
                    for j in range(w):
                        buf[d - sc + i, j] ^= tmp[0, j]
            for i in range(sc):
                for j in range(w):
                    dst[c0 + i, j] = buf[i, j]


@njit(cache=CACHE, nogil=True)
def eval_blocks(vals, points, n, s, taps, out):  # type: ignore[no-untyped-def]
    """Evaluate the remainder of each node of size s at that node's own points (Horner)."""
    w = vals.shape[1]
    acc = np.zeros(2 * w, U64)
    st = np.zeros((1, w), U64)
    for start in range(0, n, s):
        end = min(start + s, n)
        for k in range(start, end):
            for j in range(w):
                st[0, j] = U64(0)
            for i in range(end - 1, start - 1, -1):
                for j in range(2 * w):
                    acc[j] = U64(0)
                for p in range(w):
                    x = st[0, p]
                    for q in range(w):
                        lo, hi = clmul64(x, points[k, q])
                        acc[p + q] ^= lo
                        acc[p + q + 1] ^= hi
                reduce_row(acc, taps, w, st, int(0))
                for j in range(w):
                    st[0, j] ^= vals[i, j]
            for j in range(w):
                out[k, j] = st[0, j]


@njit(cache=CACHE, nogil=True)
def monic_divmod_school(a, blo, taps, q):  # type: ignore[no-untyped-def]
    """Long division of a (modified in place into the remainder) by z^d + blo.

    q receives the na - d quotient coefficients; a[:d] is the remainder after.
    """
    na, w = a.shape
    d = blo.shape[0]
    acc = np.zeros(2 * w, U64)
    tmp = np.zeros((1, w), U64)
    for top in range(na - 1, d - 1, -1):
        for j in range(w):
            q[top - d, j] = a[top, j]
        for i in range(d):
            for j in range(2 * w):
                acc[j] = U64(0)
            for p in range(w):
                x = a[top, p]
                for r in range(w):
                    lo, hi = clmul64(x, blo[i, r])
                    acc[p + r] ^= lo
                    acc[p + r + 1] ^= hi
            reduce_row(acc, taps, w, tmp, int(0))
            for j in range(w):
                a[top - d + i, j] ^= tmp[0, j]
        for j in range(w):
            a[top, j] = U64(0)


@njit(cache=CACHE, nogil=True)
def monic_level_scaled(tree_lo, vals, n, s, taps, dst):  # type: ignore[no-untyped-def]
    """One level of the scaled remainder tree (transposed products), children of size s.

    ``vals`` holds, at each parent's rows, its scaled remainder reversed: Yr of
    length d = s1 + s2 with Yr[k] = c_(d-k), c_j the coefficient of x^-j in
    f / M_parent. A child's reversed scaled remainder is a middle product with
    its sibling M' = z^s' + B': (B' * Yr)[s' : d] + Yr[0 : d - s'].
    One reduction per output coefficient.
    """
    w = vals.shape[1]
    acc = np.zeros(2 * w, U64)
    for start in range(0, n, 2 * s):
        mid = min(start + s, n)
        end = min(start + 2 * s, n)
        d = end - start
        if end == mid:
            for i in range(start, end):
                for j in range(w):
                    dst[i, j] = vals[i, j]
            continue
        for child in range(2):
            o0 = start if child == 0 else mid  # output rows (this child)
            c = mid - start if child == 0 else end - mid  # this child's size
            b0 = mid if child == 0 else start  # the sibling's stored coefficients
            sb = d - c  # sibling size
            for kk in range(c):
                k = sb + kk
                for j in range(2 * w):
                    acc[j] = U64(0)
                lo = k - d + 1
                if lo < 0:
                    lo = 0
                hi = sb - 1
                if hi > k:
                    hi = k
                for i in range(lo, hi + 1):
                    mul_acc(tree_lo, b0 + i, vals, start + k - i, acc, w)
                reduce_row(acc, taps, w, dst, o0 + kk)
                for j in range(w):
                    dst[o0 + kk, j] ^= vals[start + kk, j]


@njit(cache=CACHE, nogil=True)
def newton_unwrap(r, p, p2, exps, hi, e):  # type: ignore[no-untyped-def]
    """Recover coefficients p..p2-1 of a product P = G H from r = P mod (z^(2p) + sum_{x in exps} z^x).

    Known: P[0:p] = 1, 0, ..., 0 (H inverts G to precision p); exps ascending with exps[0] = 1.
    The wrapped part is P_hi * L (P_hi = P[2p:], L = sum z^x), so r[k] = P[k] + (P_hi L)[k]; for
    k < p this is a unit-triangular system for P_hi (L has the z^1 term), solved forward.
    hi (p - 1 rows) receives P_hi, e (p2 - p rows) receives P[p:p2].
    """
    w = r.shape[1]
    for k in range(1, p):
        for j in range(w):
            hi[k - 1, j] = r[k, j]
        for q in range(1, exps.shape[0]):
            x = exps[q]
            if x > k:
                break
            for j in range(w):
                hi[k - 1, j] ^= hi[k - x, j]
    for k in range(p, p2):
        for j in range(w):
            e[k - p, j] = r[k, j]
        for q in range(exps.shape[0]):
            x = exps[q]
            i = k - x
            if 0 <= i < p - 1:
                for j in range(w):
                    e[k - p, j] ^= hi[i, j]


@njit(cache=CACHE, nogil=True)
def middle_school_unreduced(a, c, out):  # type: ignore[no-untyped-def]
    """out[k] ^= sum_i a[i] * c[k + n - 1 - i] (unreduced, 2w columns), n = len(a), len(c) = 2n - 1."""
    n, w = a.shape
    if w == 2:
        # aggregated word Karatsuba: L, H, M summed over i, combined once per output
        for k in range(n):
            l0 = U64(0)
            l1 = U64(0)
            h0 = U64(0)
            h1 = U64(0)
            m0 = U64(0)
            m1 = U64(0)
            for i in range(n):
                a0 = a[i, 0]
                a1 = a[i, 1]
                j = k + n - 1 - i
                b0 = c[j, 0]
                b1 = c[j, 1]
                lo, hi = clmul64(a0, b0)
                l0 ^= lo
                l1 ^= hi
                lo, hi = clmul64(a1, b1)
                h0 ^= lo
                h1 ^= hi
                lo, hi = clmul64(a0 ^ a1, b0 ^ b1)
                m0 ^= lo
                m1 ^= hi
            o0 = l0
            o1 = l1 ^ m0 ^ l0 ^ h0
            o2 = h0 ^ m1 ^ l1 ^ h1
            o3 = h1
            out[k, 0] ^= o0
            out[k, 1] ^= o1
            out[k, 2] ^= o2
            out[k, 3] ^= o3
        return
    for k in range(n):
        for i in range(n):
            mul_acc(a, i, c, k + n - 1 - i, out[k], w)


@njit(cache=CACHE, nogil=True)
def middle_karatsuba_unreduced(a, c, out, thr):  # type: ignore[no-untyped-def]
    """The middle product of :func:`middle_school_unreduced` by Karatsuba (Hanrot, Quercia, Zimmermann).

    For even n = 2h, with MP_h the half-size middle product, c_lo = c[0:2h-1], c_mid = c[h:3h-1],
    c_hi = c[2h:4h-1] and beta = MP_h(a0 + a1, c_mid):
    out[:h] = beta + MP_h(a1, c_lo + c_mid), out[h:] = beta + MP_h(a0, c_hi + c_mid).
    Three half-size middle products instead of four; odd n or n <= thr is schoolbook.
    """
    n = a.shape[0]
    if n <= thr or n % 2 == 1:
        middle_school_unreduced(a, c, out)
        return
    h = n // 2
    w2 = out.shape[1]
    beta = np.zeros((h, w2), U64)
    sa = xor_new(a, int(0), a, h, h)
    middle_karatsuba_unreduced(sa, c[h : 3 * h - 1], beta, thr)
    d = xor_new(c, int(0), c, h, 2 * h - 1)
    middle_karatsuba_unreduced(a[h:], d, out[:h], thr)
    d = xor_new(c, 2 * h, c, h, 2 * h - 1)
    middle_karatsuba_unreduced(a[:h], d, out[h:], thr)
    xor_rows(out, int(0), beta, int(0), h)
    xor_rows(out, h, beta, int(0), h)


@njit(cache=CACHE, nogil=True)
def monic_level_scaled_kara(tree_lo, vals, n, s, taps, dst, r0, r1, thr):  # type: ignore[no-untyped-def]
    """:func:`monic_level_scaled` for the parents starting in [r0, r1), full parents by Karatsuba middle products.

    A child's reversed scaled remainder is (B' * Yr)[s : 2s] + Yr[0 : s] with B' its sibling's s stored
    coefficients; (B' * Yr)[s + k] = sum_i B'[i] Yr[1 + k + s - 1 - i], the middle product of B' and Yr[1:2s].
    Partial parents (the last of a level) take the schoolbook kernel.
    """
    w = vals.shape[1]
    acc = np.zeros((s, 2 * w), U64)
    for start in range(r0, r1, 2 * s):
        mid = min(start + s, n)
        end = min(start + 2 * s, n)
        if end - mid != s:
            monic_level_scaled(tree_lo[start:end], vals[start:end], end - start, s, taps, dst[start:end])
            continue
        for child in range(2):
            o0 = start if child == 0 else mid
            b0 = mid if child == 0 else start
            acc[:] = 0
            middle_karatsuba_unreduced(tree_lo[b0 : b0 + s], vals[start + 1 : start + 2 * s], acc, thr)
            for k in range(s):
                reduce_row(acc[k], taps, w, dst, o0 + k)
                for j in range(w):
                    dst[o0 + k, j] ^= vals[start + k, j]
