"""numba kernels for Horner evaluation with aggregated (delayed) reduction.

For a point x, p(x) = sum_i c_i x^i is evaluated block by block from the top:

    acc <- acc * x^B + sum_{j < B} c_{base + j} x^j        (base = B * block)

with the powers x^0..x^B precomputed (reduced). Inside a block every product
is accumulated *unreduced* (2w words, carry-less) in scalar locals, and the
sum is reduced once per block. The only loop-carried dependency is
acc -> acc * x^B -> reduce, so the B - 1 coefficient products of a block are
independent and run at carry-less-multiply throughput; the cost per
coefficient is w^2 carry-less products (3 for m = 128 with aggregated
word-level Karatsuba, whose three partial sums are combined once per block).

Several points share one pass over the coefficients (``horner_agg`` over K
points): the coefficient block stays in L1 while each point's state is
updated.

Layouts: ``xp`` has shape (K, B + 1, w) with xp[k, j] = x_k^j; ``xm`` has
shape (K, B + 1) with xm[k, j] = xp[k, j, 0] ^ xp[k, j, 1] (only read for
w = 2); ``acc`` has shape (K, w) and holds the results on return. All
arithmetic is exact (carry-less words); the reduction folds the high half
through z^m = 1 + z^t1 + z^t2 + z^t3 (taps t1, t2, t3 < 32 nonzero).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpspark.gf.clmul import CACHE, clmul64
from dpspark.gf.kernels import mul_row

U64 = np.uint64


@njit(cache=CACHE, inline="always")
def _fold(h, t1, t2, t3):  # type: ignore[no-untyped-def]
    """(low word, bits shifted out) of h * (1 + z^t1 + z^t2 + z^t3)."""
    c = U64(64)
    lo = h ^ (h << t1) ^ (h << t2) ^ (h << t3)
    hi = (h >> (c - t1)) ^ (h >> (c - t2)) ^ (h >> (c - t3))
    return lo, hi


# ---------------------------------------------------------------- w = 1 (m = 64)


@njit(cache=CACHE, inline="always")
def _block1(coeffs, base, cnt, xp, k, a0, t1, t2, t3):  # type: ignore[no-untyped-def]
    B = xp.shape[1] - 1
    p0, p1 = clmul64(a0, xp[k, B, 0])
    p0 ^= coeffs[base, 0]
    for j in range(1, cnt):
        lo, hi = clmul64(coeffs[base + j, 0], xp[k, j, 0])
        p0 ^= lo
        p1 ^= hi
    f1, o = _fold(p1, t1, t2, t3)
    f2, _ = _fold(o, t1, t2, t3)
    return p0 ^ f1 ^ f2


# ---------------------------------------------------------------- w = 2 (m = 128)


@njit(cache=CACHE, inline="always")
def _block2(coeffs, base, cnt, xp, xm, k, a0, a1, t1, t2, t3):  # type: ignore[no-untyped-def]
    # aggregated Karatsuba: L = sum d0*y0, H = sum d1*y1, M = sum (d0^d1)*(y0^y1);
    # the product sum is L + (M + L + H) z^64 + H z^128, combined once per block
    B = xp.shape[1] - 1
    l0, l1 = clmul64(a0, xp[k, B, 0])
    h0, h1 = clmul64(a1, xp[k, B, 1])
    m0, m1 = clmul64(a0 ^ a1, xm[k, B])
    for j in range(1, cnt):
        d0 = coeffs[base + j, 0]
        d1 = coeffs[base + j, 1]
        lo, hi = clmul64(d0, xp[k, j, 0])
        l0 ^= lo
        l1 ^= hi
        lo, hi = clmul64(d1, xp[k, j, 1])
        h0 ^= lo
        h1 ^= hi
        lo, hi = clmul64(d0 ^ d1, xm[k, j])
        m0 ^= lo
        m1 ^= hi
    m0 ^= l0 ^ h0
    m1 ^= l1 ^ h1
    # the j = 0 term: c_base * x^0
    p0 = l0 ^ coeffs[base, 0]
    p1 = l1 ^ m0 ^ coeffs[base, 1]
    p2 = h0 ^ m1
    p3 = h1
    f2, o2 = _fold(p2, t1, t2, t3)
    f3, o3 = _fold(p3, t1, t2, t3)
    f4, _ = _fold(o3, t1, t2, t3)
    return p0 ^ f2 ^ f4, p1 ^ o2 ^ f3


# ---------------------------------------------------------------- w = 3 (m = 192)


@njit(cache=CACHE, inline="always")
def _block3(coeffs, base, cnt, xp, k, a0, a1, a2, t1, t2, t3):  # type: ignore[no-untyped-def]
    B = xp.shape[1] - 1
    p0 = coeffs[base, 0]
    p1 = coeffs[base, 1]
    p2 = coeffs[base, 2]
    p3 = U64(0)
    p4 = U64(0)
    p5 = U64(0)
    y0 = xp[k, B, 0]
    y1 = xp[k, B, 1]
    y2 = xp[k, B, 2]
    d0, d1, d2 = a0, a1, a2
    j = 0
    while True:
        lo, hi = clmul64(d0, y0)
        p0 ^= lo
        p1 ^= hi
        lo, hi = clmul64(d0, y1)
        p1 ^= lo
        p2 ^= hi
        lo, hi = clmul64(d0, y2)
        p2 ^= lo
        p3 ^= hi
        lo, hi = clmul64(d1, y0)
        p1 ^= lo
        p2 ^= hi
        lo, hi = clmul64(d1, y1)
        p2 ^= lo
        p3 ^= hi
        lo, hi = clmul64(d1, y2)
        p3 ^= lo
        p4 ^= hi
        lo, hi = clmul64(d2, y0)
        p2 ^= lo
        p3 ^= hi
        lo, hi = clmul64(d2, y1)
        p3 ^= lo
        p4 ^= hi
        lo, hi = clmul64(d2, y2)
        p4 ^= lo
        p5 ^= hi
        j += 1
        if j >= cnt:
            break
        d0 = coeffs[base + j, 0]
        d1 = coeffs[base + j, 1]
        d2 = coeffs[base + j, 2]
        y0 = xp[k, j, 0]
        y1 = xp[k, j, 1]
        y2 = xp[k, j, 2]
    f3, o3 = _fold(p3, t1, t2, t3)
    f4, o4 = _fold(p4, t1, t2, t3)
    f5, o5 = _fold(p5, t1, t2, t3)
    f6, _ = _fold(o5, t1, t2, t3)
    return p0 ^ f3 ^ f6, p1 ^ o3 ^ f4, p2 ^ o4 ^ f5


# ---------------------------------------------------------------- w = 4 (m = 256)


@njit(cache=CACHE, inline="always")
def _block4(coeffs, base, cnt, xp, k, a0, a1, a2, a3, t1, t2, t3):  # type: ignore[no-untyped-def]
    B = xp.shape[1] - 1
    p0 = coeffs[base, 0]
    p1 = coeffs[base, 1]
    p2 = coeffs[base, 2]
    p3 = coeffs[base, 3]
    p4 = U64(0)
    p5 = U64(0)
    p6 = U64(0)
    p7 = U64(0)
    y0 = xp[k, B, 0]
    y1 = xp[k, B, 1]
    y2 = xp[k, B, 2]
    y3 = xp[k, B, 3]
    d0, d1, d2, d3 = a0, a1, a2, a3
    j = 0
    while True:
        lo, hi = clmul64(d0, y0)
        p0 ^= lo
        p1 ^= hi
        lo, hi = clmul64(d0, y1)
        p1 ^= lo
        p2 ^= hi
        lo, hi = clmul64(d0, y2)
        p2 ^= lo
        p3 ^= hi
        lo, hi = clmul64(d0, y3)
        p3 ^= lo
        p4 ^= hi
        lo, hi = clmul64(d1, y0)
        p1 ^= lo
        p2 ^= hi
        lo, hi = clmul64(d1, y1)
        p2 ^= lo
        p3 ^= hi
        lo, hi = clmul64(d1, y2)
        p3 ^= lo
        p4 ^= hi
        lo, hi = clmul64(d1, y3)
        p4 ^= lo
        p5 ^= hi
        lo, hi = clmul64(d2, y0)
        p2 ^= lo
        p3 ^= hi
        lo, hi = clmul64(d2, y1)
        p3 ^= lo
        p4 ^= hi
        lo, hi = clmul64(d2, y2)
        p4 ^= lo
        p5 ^= hi
        lo, hi = clmul64(d2, y3)
        p5 ^= lo
        p6 ^= hi
        lo, hi = clmul64(d3, y0)
        p3 ^= lo
        p4 ^= hi
        lo, hi = clmul64(d3, y1)
        p4 ^= lo
        p5 ^= hi
        lo, hi = clmul64(d3, y2)
        p5 ^= lo
        p6 ^= hi
        lo, hi = clmul64(d3, y3)
        p6 ^= lo
        p7 ^= hi
        j += 1
        if j >= cnt:
            break
        d0 = coeffs[base + j, 0]
        d1 = coeffs[base + j, 1]
        d2 = coeffs[base + j, 2]
        d3 = coeffs[base + j, 3]
        y0 = xp[k, j, 0]
        y1 = xp[k, j, 1]
        y2 = xp[k, j, 2]
        y3 = xp[k, j, 3]
    f4, o4 = _fold(p4, t1, t2, t3)
    f5, o5 = _fold(p5, t1, t2, t3)
    f6, o6 = _fold(p6, t1, t2, t3)
    f7, o7 = _fold(p7, t1, t2, t3)
    f8, _ = _fold(o7, t1, t2, t3)
    return p0 ^ f4 ^ f8, p1 ^ o4 ^ f5, p2 ^ o5 ^ f6, p3 ^ o6 ^ f7


# ---------------------------------------------------------------- powers


@njit(cache=CACHE, nogil=True)
def powers_table(xs, taps, xp, xm):  # type: ignore[no-untyped-def]
    """xp[k, j] = xs[k]^j for j = 0..B (xp of shape (K, B + 1, w)); xm[k, j] = word 0 ^ word 1 (w >= 2)."""
    K, w = xs.shape
    nb = xp.shape[1]
    acc = np.zeros(2 * w, U64)
    for k in range(K):
        for q in range(w):
            xp[k, 0, q] = U64(0)
        xp[k, 0, 0] = U64(1)
        for j in range(1, nb):
            mul_row(xp[k], j - 1, xs, k, xp[k], j, taps, acc)
        if w >= 2:
            for j in range(nb):
                xm[k, j] = xp[k, j, 0] ^ xp[k, j, 1]


# ---------------------------------------------------------------- driver


@njit(cache=CACHE, nogil=True)
def horner_agg(coeffs, xp, xm, taps, acc, chunk):  # type: ignore[no-untyped-def]
    """acc[k] = p(x_k) for every point k (see the module docstring for xp, xm).

    B = xp.shape[1] - 1 coefficients per block; points are processed
    ``chunk`` at a time, each chunk in one top-down pass over the blocks.
    coeffs may be a read-only view.
    """
    n, w = coeffs.shape
    K = acc.shape[0]
    B = xp.shape[1] - 1
    t1 = taps[0]
    t2 = taps[1]
    t3 = taps[2]
    nblk = (n + B - 1) // B
    for k0 in range(0, K, chunk):
        k1 = min(K, k0 + chunk)
        for k in range(k0, k1):
            for q in range(w):
                acc[k, q] = U64(0)
        if n == 0:
            continue
        for blk in range(nblk - 1, -1, -1):
            base = blk * B
            cnt = min(B, n - base)
            if w == 1:
                for k in range(k0, k1):
                    acc[k, 0] = _block1(coeffs, base, cnt, xp, k, acc[k, 0], t1, t2, t3)
            elif w == 2:
                for k in range(k0, k1):
                    r0, r1 = _block2(coeffs, base, cnt, xp, xm, k, acc[k, 0], acc[k, 1], t1, t2, t3)
                    acc[k, 0] = r0
                    acc[k, 1] = r1
            elif w == 3:
                for k in range(k0, k1):
                    r0, r1, r2 = _block3(coeffs, base, cnt, xp, k, acc[k, 0], acc[k, 1], acc[k, 2], t1, t2, t3)
                    acc[k, 0] = r0
                    acc[k, 1] = r1
                    acc[k, 2] = r2
            else:
                for k in range(k0, k1):
                    r0, r1, r2, r3 = _block4(coeffs, base, cnt, xp, k, acc[k, 0], acc[k, 1], acc[k, 2], acc[k, 3], t1, t2, t3)
                    acc[k, 0] = r0
                    acc[k, 1] = r1
                    acc[k, 2] = r2
                    acc[k, 3] = r3


# ---------------------------------------------------------------- PCLMULQDQ on 128-bit lanes (w = 2, 3, 4)
#
# The scalar kernels above move every word between general and vector
# registers around each carry-less product, which caps them at a few cycles
# per product. The intrinsic below emits a whole block of B coefficients as
# straight-line LLVM IR on <2 x i64> vectors: each coefficient row is one
# vector load per 128-bit lane, the four products of a lane pair use the
# PCLMULQDQ immediate to select halves, and the sums stay in vector registers
# until the block's unreduced 2w-word total is returned. Only built on CPUs
# with PCLMULQDQ (the caller checks ``clmul.HARDWARE``).

from llvmlite import ir as _ir  # noqa: E402
from numba import types as _types  # noqa: E402
from numba.core import cgutils as _cg  # noqa: E402
from numba.extending import intrinsic as _intrinsic  # noqa: E402

from dpspark.gf.clmul import HARDWARE  # noqa: E402

#: Coefficients per block of the vector kernels (the powers table has VB + 1 rows per point).
VB = 16


def _make_vblock(w: int, nb: int):  # type: ignore[no-untyped-def]
    """Intrinsic (coeffs, base, xp, k, acc w-tuple) -> unreduced 2w-word sum (see horner_agg_vec).

    An element is ceil(w/2) lanes of two words; for odd w the last lane is a
    half lane (its word, then zero) and products of its missing upper half are skipped.
    """
    lanes = (w + 1) // 2
    half = [2 * lane + 1 >= w for lane in range(lanes)]

    @_intrinsic
    def vblock(typingctx, coeffs, base, xp, k, acc):  # type: ignore[no-untyped-def]
        ret = _types.UniTuple(_types.uint64, 2 * w)
        sig = ret(coeffs, base, xp, k, acc)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            c_ary = context.make_array(signature.args[0])(context, builder, args[0])
            x_ary = context.make_array(signature.args[2])(context, builder, args[2])
            i64 = _ir.IntType(64)
            v2 = _ir.VectorType(i64, 2)
            i8 = _ir.IntType(8)
            i32 = _ir.IntType(32)
            fnty = _ir.FunctionType(v2, [v2, v2, i8])
            pcl = _cg.get_or_insert_function(builder.module, fnty, "llvm.x86.pclmulqdq")
            base_v, k_v = args[1], args[3]
            wconst = _ir.Constant(base_v.type, w)
            c_ptr = builder.bitcast(c_ary.data, i64.as_pointer())
            x_ptr = builder.bitcast(x_ary.data, i64.as_pointer())

            def load_lane(ptr, word_index, is_half):  # type: ignore[no-untyped-def]
                p = builder.gep(ptr, [word_index])
                if is_half:  # one word: never read past the row (or the array)
                    return builder.insert_element(_ir.Constant(v2, None), builder.load(p, align=8), _ir.Constant(i32, 0))
                return builder.load(builder.bitcast(p, v2.as_pointer()), align=8)

            def c_lane(j, lane):  # type: ignore[no-untyped-def]
                row = builder.add(base_v, _ir.Constant(base_v.type, j))
                idx = builder.add(builder.mul(row, wconst), _ir.Constant(base_v.type, 2 * lane))
                return load_lane(c_ptr, idx, half[lane])

            def x_lane(j, lane):  # type: ignore[no-untyped-def]
                # xp[k, j, 2*lane] in a C-contiguous (K, nb + 1, w) array
                row = builder.add(builder.mul(k_v, _ir.Constant(k_v.type, nb + 1)), _ir.Constant(k_v.type, j))
                idx = builder.add(builder.mul(row, _ir.Constant(k_v.type, w)), _ir.Constant(k_v.type, 2 * lane))
                return load_lane(x_ptr, idx, half[lane])

            zero = _ir.Constant(v2, None)
            even = [zero] * (2 * lanes)  # E[e] at word offset 2e
            odd = [zero] * (2 * lanes - 1)  # O[o] at word offset 2o + 1

            def mac(xl, yl):  # type: ignore[no-untyped-def]
                for i in range(lanes):
                    for jj in range(lanes):
                        s = i + jj
                        even[s] = builder.xor(even[s], builder.call(pcl, [xl[i], yl[jj], _ir.Constant(i8, 0x00)]))
                        if not (half[i] or half[jj]):
                            even[s + 1] = builder.xor(even[s + 1], builder.call(pcl, [xl[i], yl[jj], _ir.Constant(i8, 0x11)]))
                        if not half[i]:  # x_hi * y_lo
                            odd[s] = builder.xor(odd[s], builder.call(pcl, [xl[i], yl[jj], _ir.Constant(i8, 0x01)]))
                        if not half[jj]:  # x_lo * y_hi
                            odd[s] = builder.xor(odd[s], builder.call(pcl, [xl[i], yl[jj], _ir.Constant(i8, 0x10)]))

            # acc * x^B
            accv = []
            for lane in range(lanes):
                v = builder.insert_element(zero, builder.extract_value(args[4], 2 * lane), _ir.Constant(i32, 0))
                if not half[lane]:
                    v = builder.insert_element(v, builder.extract_value(args[4], 2 * lane + 1), _ir.Constant(i32, 1))
                accv.append(v)
            mac(accv, [x_lane(nb, lane) for lane in range(lanes)])
            # c_base * x^0
            for lane in range(lanes):
                even[lane] = builder.xor(even[lane], c_lane(0, lane))
            for j in range(1, nb):
                mac([c_lane(j, lane) for lane in range(lanes)], [x_lane(j, lane) for lane in range(lanes)])
            words = [_ir.Constant(i64, 0)] * (2 * w)
            # (for odd w the skipped half-lane products leave everything from word 2w on zero)
            for e in range(len(even)):
                for h in range(2):
                    if 2 * e + h < 2 * w:
                        words[2 * e + h] = builder.xor(words[2 * e + h], builder.extract_element(even[e], _ir.Constant(i32, h)))
            for o in range(len(odd)):
                for h in range(2):
                    if 2 * o + 1 + h < 2 * w:
                        words[2 * o + 1 + h] = builder.xor(words[2 * o + 1 + h], builder.extract_element(odd[o], _ir.Constant(i32, h)))
            out = context.get_constant_undef(ret)
            for q in range(2 * w):
                out = builder.insert_value(out, words[q], q)
            return out

        return sig, codegen

    return vblock


if HARDWARE:
    _vblock2 = _make_vblock(2, VB)
    _vblock3 = _make_vblock(3, VB)
    _vblock4 = _make_vblock(4, VB)

    @njit(cache=CACHE, nogil=True)
    def horner_agg_vec(coeffs, xp, xm, taps, acc, chunk):  # type: ignore[no-untyped-def]
        """horner_agg for w in {2, 3, 4} and B = VB: full blocks on 128-bit PCLMULQDQ lanes.

        The top partial block (if any) uses the scalar block kernel.
        """
        n, w = coeffs.shape
        K = acc.shape[0]
        B = xp.shape[1] - 1
        t1 = taps[0]
        t2 = taps[1]
        t3 = taps[2]
        nblk = (n + B - 1) // B
        for k0 in range(0, K, chunk):
            k1 = min(K, k0 + chunk)
            for k in range(k0, k1):
                for q in range(w):
                    acc[k, q] = U64(0)
            if n == 0:
                continue
            for blk in range(nblk - 1, -1, -1):
                base = blk * B
                cnt = min(B, n - base)
                if w == 2:
                    for k in range(k0, k1):
                        if cnt < B:
                            r0, r1 = _block2(coeffs, base, cnt, xp, xm, k, acc[k, 0], acc[k, 1], t1, t2, t3)
                        else:
                            p0, p1, p2, p3 = _vblock2(coeffs, base, xp, k, (acc[k, 0], acc[k, 1]))
                            f2, o2 = _fold(p2, t1, t2, t3)
                            f3, o3 = _fold(p3, t1, t2, t3)
                            f4, _ = _fold(o3, t1, t2, t3)
                            r0 = p0 ^ f2 ^ f4
                            r1 = p1 ^ o2 ^ f3
                        acc[k, 0] = r0
                        acc[k, 1] = r1
                elif w == 3:
                    for k in range(k0, k1):
                        if cnt < B:
                            r0, r1, r2 = _block3(coeffs, base, cnt, xp, k, acc[k, 0], acc[k, 1], acc[k, 2], t1, t2, t3)
                        else:
                            p0, p1, p2, p3, p4, p5 = _vblock3(coeffs, base, xp, k, (acc[k, 0], acc[k, 1], acc[k, 2]))
                            f3, o3 = _fold(p3, t1, t2, t3)
                            f4, o4 = _fold(p4, t1, t2, t3)
                            f5, o5 = _fold(p5, t1, t2, t3)
                            f6, _ = _fold(o5, t1, t2, t3)
                            r0 = p0 ^ f3 ^ f6
                            r1 = p1 ^ o3 ^ f4
                            r2 = p2 ^ o4 ^ f5
                        acc[k, 0] = r0
                        acc[k, 1] = r1
                        acc[k, 2] = r2
                else:
                    for k in range(k0, k1):
                        if cnt < B:
                            r0, r1, r2, r3 = _block4(coeffs, base, cnt, xp, k, acc[k, 0], acc[k, 1], acc[k, 2], acc[k, 3], t1, t2, t3)
                        else:
                            p0, p1, p2, p3, p4, p5, p6, p7 = _vblock4(coeffs, base, xp, k, (acc[k, 0], acc[k, 1], acc[k, 2], acc[k, 3]))
                            f4, o4 = _fold(p4, t1, t2, t3)
                            f5, o5 = _fold(p5, t1, t2, t3)
                            f6, o6 = _fold(p6, t1, t2, t3)
                            f7, o7 = _fold(p7, t1, t2, t3)
                            f8, _ = _fold(o7, t1, t2, t3)
                            r0 = p0 ^ f4 ^ f8
                            r1 = p1 ^ o4 ^ f5
                            r2 = p2 ^ o5 ^ f6
                            r3 = p3 ^ o6 ^ f7
                        acc[k, 0] = r0
                        acc[k, 1] = r1
                        acc[k, 2] = r2
                        acc[k, 3] = r3

