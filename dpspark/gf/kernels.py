"""numba kernels for GF(2^m) element arithmetic on (n, w) uint64 rows.

An element is a row of w = m/64 little-endian words (word 0 holds the
coefficients of z^0..z^63). The modulus is z^m + r(z) with r sparse; ``taps``
is a uint64 array of the exponents of r (all < 64, always containing 0).

Unreduced products live in 2w-word rows; XOR of unreduced products is the
unreduced product of the sum, which is what lets the polynomial kernels reduce
once per output coefficient instead of once per multiplication.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpspark.gf.clmul import CACHE, clmul64

U64 = np.uint64


@njit(cache=CACHE, inline="always")
def mul_acc(a, ai, b, bi, acc, w):  # type: ignore[no-untyped-def]
    """acc[0:2w] ^= unreduced a[ai] * b[bi]."""
    for p in range(w):
        x = a[ai, p]
        for q in range(w):
            lo, hi = clmul64(x, b[bi, q])
            acc[p + q] ^= lo
            acc[p + q + 1] ^= hi


@njit(cache=CACHE)
def reduce_row(acc, taps, w, out, oi):  # type: ignore[no-untyped-def]
    """out[oi] = acc (2w words) mod z^m + r(z); acc is left unchanged."""
    ov = U64(0)
    for j in range(w):
        v = acc[j]
        hj = acc[w + j]
        for k in range(taps.shape[0]):
            t = taps[k]
            v ^= hj << t
            if t != U64(0) and j > 0:
                v ^= acc[w + j - 1] >> (U64(64) - t)
        out[oi, j] = v
    hl = acc[2 * w - 1]
    for k in range(taps.shape[0]):
        t = taps[k]
        if t != U64(0):
            ov ^= hl >> (U64(64) - t)
    f = U64(0)
    for k in range(taps.shape[0]):
        f ^= ov << taps[k]
    out[oi, 0] ^= f


@njit(cache=CACHE, inline="always")
def _fold(h, t1, t2, t3):  # type: ignore[no-untyped-def]
    """(low word, bits shifted out) of h * (z^t1 + z^t2 + z^t3 + 1), taps < 64 and nonzero."""
    lo = h ^ (h << t1) ^ (h << t2) ^ (h << t3)
    c = U64(64)
    hi = (h >> (c - t1)) ^ (h >> (c - t2)) ^ (h >> (c - t3))
    return lo, hi


@njit(cache=CACHE, inline="always")
def mul1_words(a, b, t1, t2, t3):  # type: ignore[no-untyped-def]
    """a * b in GF(2^64) on single words (taps t1, t2, t3 and 0), in registers."""
    lo, hi = clmul64(a, b)
    f1, c1 = _fold(hi, t1, t2, t3)
    f2, _ = _fold(c1, t1, t2, t3)
    return lo ^ f1 ^ f2


@njit(cache=CACHE, inline="always")
def mul2_words(a0, a1, b0, b1, t1, t2, t3):  # type: ignore[no-untyped-def]
    """(a0 + a1 z^64)(b0 + b1 z^64) in GF(2^128) in registers: the arithmetic of mul_row's m = 128 path.

    Butterfly loops call this rather than mul_row: going through the tmp/acc arrays there cost
    about 5x (measured 55-65 against 11 ns per butterfly at m = 128).
    """
    l0, h0 = clmul64(a0, b0)
    l2, h2 = clmul64(a1, b1)
    lm, hm = clmul64(a0 ^ a1, b0 ^ b1)
    lm ^= l0 ^ l2
    hm ^= h0 ^ h2
    p1 = h0 ^ lm
    p2 = hm ^ l2
    f2, c2 = _fold(p2, t1, t2, t3)
    f3, c3 = _fold(h2, t1, t2, t3)
    f4, _ = _fold(c3, t1, t2, t3)
    return l0 ^ f2 ^ f4, p1 ^ c2 ^ f3


@njit(cache=CACHE, inline="always")
def mul_row(a, ai, b, bi, out, oi, taps, acc):  # type: ignore[no-untyped-def]
    """out[oi] = a[ai] * b[bi] (out may alias a or b); acc is 2w scratch.

    Inlined at every call site (a call costs more than the product: numba passes each array argument as
    a struct), so m = 64 and m = 128 multiply in registers. Wider fields inline :func:`mul_row_wide`, whose
    reduction is a call (:func:`reduce_row` compiles once: inlining it everywhere added about 7 CPU s to a cold
    build's compile for no measured speed, issue 35).
    """
    w = a.shape[1]
    if w == 2 and taps.shape[0] == 4:
        r0, r1 = mul2_words(a[ai, 0], a[ai, 1], b[bi, 0], b[bi, 1], taps[0], taps[1], taps[2])
        out[oi, 0] = r0
        out[oi, 1] = r1
    elif w == 1 and taps.shape[0] == 4:
        out[oi, 0] = mul1_words(a[ai, 0], b[bi, 0], taps[0], taps[1], taps[2])
    else:
        mul_row_wide(a, ai, b, bi, out, oi, taps, acc)


@njit(cache=CACHE, inline="always")
def mul_row_wide(a, ai, b, bi, out, oi, taps, acc):  # type: ignore[no-untyped-def]
    """:func:`mul_row` for any width: unreduced product into acc, then one reduction."""
    w = a.shape[1]
    for j in range(2 * w):
        acc[j] = U64(0)
    mul_acc(a, ai, b, bi, acc, w)
    reduce_row(acc, taps, w, out, oi)


@njit(cache=CACHE)
def sqr_row(a, ai, out, oi, taps, acc):  # type: ignore[no-untyped-def]
    """out[oi] = a[ai]^2 (squaring is linear in char 2: cross terms cancel)."""
    w = a.shape[1]
    for p in range(w):
        lo, hi = clmul64(a[ai, p], a[ai, p])
        acc[2 * p] = lo
        acc[2 * p + 1] = hi
    reduce_row(acc, taps, w, out, oi)


@njit(cache=CACHE, nogil=True)
def mul_arrays(a, b, taps, out):  # type: ignore[no-untyped-def]
    """out[i] = a[i] * b[i] for every row."""
    n, w = a.shape
    acc = np.zeros(2 * w, U64)
    for i in range(n):
        mul_row(a, i, b, i, out, i, taps, acc)


@njit(cache=CACHE, nogil=True)
def sqr_arrays(a, taps, out):  # type: ignore[no-untyped-def]
    """out[i] = a[i]^2 for every row."""
    n, w = a.shape
    acc = np.zeros(2 * w, U64)
    for i in range(n):
        sqr_row(a, i, out, i, taps, acc)


@njit(cache=CACHE)
def pow_row(a, ai, ebits, out, oi, taps, acc, tmp):  # type: ignore[no-untyped-def]
    """out[oi] = a[ai]^e, ebits = exponent bits most significant first.

    The loop runs len(ebits) rounds whatever the element; the exponent is public.
    """
    w = a.shape[1]
    for j in range(w):
        tmp[0, j] = U64(0)
    tmp[0, 0] = U64(1)
    for k in range(ebits.shape[0]):
        sqr_row(tmp, int(0), tmp, int(0), taps, acc)
        if ebits[k] != 0:
            mul_row(tmp, int(0), a, ai, tmp, int(0), taps, acc)
    for j in range(w):
        out[oi, j] = tmp[0, j]


@njit(cache=CACHE, nogil=True)
def pow_arrays(a, ebits, taps, out):  # type: ignore[no-untyped-def]
    """out[i] = a[i]^e for every row."""
    n, w = a.shape
    acc = np.zeros(2 * w, U64)
    tmp = np.zeros((1, w), U64)
    for i in range(n):
        pow_row(a, i, ebits, out, i, taps, acc, tmp)


@njit(cache=CACHE, nogil=True)
def count_zero_rows(a):  # type: ignore[no-untyped-def]
    """Number of all-zero rows."""
    n, w = a.shape
    c = 0
    for i in range(n):
        z = True
        for j in range(w):
            if a[i, j] != U64(0):
                z = False
        if z:
            c += 1
    return c


# ---------------------------------------------------------------- fixed operand


@njit(cache=CACHE, nogil=True)
def make_table(x, taps):  # type: ignore[no-untyped-def]
    """T[k, byte] = x * (byte << 8k) for the m/8 byte positions k of the other operand."""
    w = x.shape[1]
    nbytes = 8 * w
    tab = np.zeros((nbytes, 256, w), U64)
    cur = np.empty((1, w), U64)  # x * z^i
    for j in range(w):
        cur[0, j] = x[0, j]
    ov_taps = U64(0)
    for k in range(taps.shape[0]):
        ov_taps ^= U64(1) << taps[k]
    for k in range(nbytes):
        for bit in range(8):
            e = 1 << bit
            for j in range(w):
                tab[k, e, j] = cur[0, j]
            # cur *= z
            top = cur[0, w - 1] >> U64(63)
            for j in range(w - 1, 0, -1):
                cur[0, j] = (cur[0, j] << U64(1)) | (cur[0, j - 1] >> U64(63))
            cur[0, 0] = cur[0, 0] << U64(1)
            if top != U64(0):
                cur[0, 0] ^= ov_taps
        for b in range(3, 256):
            low = b & (-b)
            if low != b:
                for j in range(w):
                    tab[k, b, j] = tab[k, b ^ low, j] ^ tab[k, low, j]
    return tab


@njit(cache=CACHE)
def table_mul_row(tab, y, yi, out, oi):  # type: ignore[no-untyped-def]
    """out[oi] = x * y[yi] with tab = make_table(x); out may alias y."""
    w = y.shape[1]
    r0 = U64(0)
    r1 = U64(0)
    r2 = U64(0)
    r3 = U64(0)
    for wi in range(w):
        v = y[yi, wi]
        for bb in range(8):
            row = tab[8 * wi + bb, (v >> U64(8 * bb)) & U64(255)]
            r0 ^= row[0]
            if w > 1:
                r1 ^= row[1]
            if w > 2:
                r2 ^= row[2]
            if w > 3:
                r3 ^= row[3]
    out[oi, 0] = r0
    if w > 1:
        out[oi, 1] = r1
    if w > 2:
        out[oi, 2] = r2
    if w > 3:
        out[oi, 3] = r3


@njit(cache=CACHE, nogil=True)
def table_mul_arrays(tab, y, out):  # type: ignore[no-untyped-def]
    """out[i] = x * y[i] for the fixed x behind tab."""
    for i in range(y.shape[0]):
        table_mul_row(tab, y, i, out, i)


# ---------------------------------------------------------------- Horner


@njit(cache=CACHE, nogil=True)
def horner_table(coeffs, tab):  # type: ignore[no-untyped-def]
    """p(x) for coeffs ascending, x fixed through tab = make_table(x)."""
    n, w = coeffs.shape
    acc = np.zeros((1, w), U64)
    for i in range(n - 1, -1, -1):
        table_mul_row(tab, acc, int(0), acc, int(0))
        for j in range(w):
            acc[0, j] ^= coeffs[i, j]
    return acc[0]


@njit(cache=CACHE, nogil=True)
def horner_table4(coeffs, tab4, xp, taps):  # type: ignore[no-untyped-def]
    """p(x) with four interleaved table-driven chains in x^4; tab4 = make_table(x^4), xp = [1, x, x^2, x^3]."""
    n, w = coeffs.shape
    ch = np.zeros((4, w), U64)
    top = (n + 3) // 4
    for i in range(top - 1, -1, -1):
        base = 4 * i
        for r in range(4):
            table_mul_row(tab4, ch, r, ch, r)
            if base + r < n:
                for j in range(w):
                    ch[r, j] ^= coeffs[base + r, j]
    acc = np.zeros(2 * w, U64)
    res = np.zeros((1, w), U64)
    tmp = np.zeros((1, w), U64)
    for r in range(4):
        mul_row(ch, r, xp, r, tmp, int(0), taps, acc)
        for j in range(w):
            res[0, j] ^= tmp[0, j]
    return res[0]


@njit(cache=CACHE, nogil=True)
def horner_clmul(coeffs, x, taps):  # type: ignore[no-untyped-def]
    """p(x) with four interleaved Horner chains in x^4 (hides multiply latency).

    p(x) = sum_r x^r q_r(x^4), q_r having the coefficients c_{r + 4i}.
    """
    n, w = coeffs.shape
    acc = np.zeros(2 * w, U64)
    xp = np.zeros((5, w), U64)  # x^0..x^4
    xp[0, 0] = U64(1)
    for k in range(1, 5):
        mul_row(xp, k - 1, x, int(0), xp, k, taps, acc)
    ch = np.zeros((4, w), U64)
    a0 = np.zeros(2 * w, U64)
    a1 = np.zeros(2 * w, U64)
    a2 = np.zeros(2 * w, U64)
    a3 = np.zeros(2 * w, U64)
    top = (n + 3) // 4
    for i in range(top - 1, -1, -1):
        mul_row(ch, int(0), xp, int(4), ch, int(0), taps, a0)
        mul_row(ch, int(1), xp, int(4), ch, int(1), taps, a1)
        mul_row(ch, int(2), xp, int(4), ch, int(2), taps, a2)
        mul_row(ch, int(3), xp, int(4), ch, int(3), taps, a3)
        base = 4 * i
        for r in range(4):
            if base + r < n:
                for j in range(w):
                    ch[r, j] ^= coeffs[base + r, j]
    res = np.zeros((1, w), U64)
    tmp = np.zeros((1, w), U64)
    for r in range(4):
        mul_row(ch, r, xp, r, tmp, int(0), taps, acc)
        for j in range(w):
            res[0, j] ^= tmp[0, j]
    return res[0]


@njit(cache=CACHE, nogil=True)
def horner_many(coeffs, xs, taps, out):  # type: ignore[no-untyped-def]
    """out[k] = p(xs[k]); keys processed in blocks of 8 so each coefficient is read once per block."""
    n, w = coeffs.shape
    K = xs.shape[0]
    B = 8
    nblocks = (K + B - 1) // B
    for blk in range(nblocks):
        k0 = blk * B
        k1 = min(K, k0 + B)
        acc = np.zeros(2 * w, U64)
        st = np.zeros((B, w), U64)
        for i in range(n - 1, -1, -1):
            for k in range(k1 - k0):
                mul_row(st, k, xs, k0 + k, st, k, taps, acc)
                for j in range(w):
                    st[k, j] ^= coeffs[i, j]
        for k in range(k1 - k0):
            for j in range(w):
                out[k0 + k, j] = st[k, j]
