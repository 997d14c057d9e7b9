"""Subproduct tree over GF(2^m): root products, multipoint evaluation, fast interpolation.

Tree layout (von zur Gathen & Gerhard, section 10.1). For n points x_0..x_{n-1},
level k has nodes of 2^k consecutive points: node j covers [j*2^k, min((j+1)*2^k, n)).
Each node polynomial M = prod (z - x_i) over its points is monic of degree
(its number of points), so a level stores only the non-leading coefficients of
every node, at the node's own rows: one (n, w) array per level. Level 0 holds
the points themselves (z - x = z + x in characteristic 2).

Small levels run in single numba calls over all nodes; levels of large nodes
call :func:`dpspark.gf.poly.poly_mul` per node (Karatsuba, threaded).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpspark.gf import polymul_kernels as PK
from dpspark.gf.field import GF2m
from dpspark.gf import additive_fft as AF
from dpspark.gf import kernels as K
from dpspark.gf.poly import (
    FFT_THRESHOLD,
    NEWTON_THRESHOLD,
    _in_pool_worker,
    _monic_divmod,
    poly_derivative,
    poly_inv_series,
    poly_mul,
    poly_mul_low,
    pool,
    threads,
)

#: Node size up to which a whole level is one numba call (schoolbook per node).
SMALL_NODE = 32
#: Middle products of at most this many coefficients are schoolbook inside the Karatsuba middle product.
MIDDLE_KARATSUBA_THRESHOLD = 16
#: Remainder-tree nodes of at most this size are evaluated directly (Horner at their points).
LEAF_NODE = 32
#: Evaluation's middle products: transposed transforms for nodes with cached spectra (3 transforms
#: per parent instead of 6), Karatsuba middle products below, levels split over the pool. False selects
#: the earlier plain-product path (kept for benchmarks and identity tests; the values are identical).
FAST_MIDDLE = True


def _check_points(field: GF2m, points: np.ndarray, name: str = "points") -> np.ndarray:
    points = field.check(points, name)
    if points.ndim != 2:
        raise ValueError(f"{name} must have shape (n, {field.w})")
    return points


def _node_ranges(n: int, s: int) -> list[tuple[int, int, int]]:
    """(start, mid, end) for every parent of two children of size s."""
    return [(st, min(st + s, n), min(st + 2 * s, n)) for st in range(0, n, 2 * s)]


def _for_nodes(ranges: list[tuple[int, int, int]], fn: Callable[[int, int, int], None]) -> None:
    """Run fn over the nodes, spread over the pool when there are several.

    A lone node runs in the caller's thread, where its big products may use the pool themselves.
    """
    if len(ranges) > 1 and threads() > 1:
        list(pool().map(lambda r: fn(*r), ranges))
    else:
        for r in ranges:
            fn(*r)


def _rem_long(field: GF2m, a: np.ndarray, blo: np.ndarray, binv: np.ndarray | None = None) -> np.ndarray:
    """a mod (z^d + blo), d = len(blo), exactly d coefficients; cheap when len(a) >> d.

    One division of a by a degree-d divisor would invert the reversed divisor
    to precision len(a) - d (Newton iteration over the whole length). Instead
    a is consumed in pieces of d coefficients from the top, r <- (r z^d + piece)
    mod M, so every division has a quotient of at most d coefficients and they
    all share one inverse series of precision d (``binv``, computed if not
    given): O((len a / d) M(d)). For large d the transforms of the inverse
    series and of the divisor are computed once for all pieces.
    """
    d = blo.shape[0]
    n = a.shape[0]
    if n <= 2 * d or d < NEWTON_THRESHOLD:
        return _monic_divmod(field, a, blo)[1]
    if binv is None:
        one = field.ones(1).reshape(1, field.w)
        revb = np.concatenate([one, blo[::-1][: d - 1]])
        binv = poly_inv_series(field, np.ascontiguousarray(revb), d)
    fft = d >= FFT_THRESHOLD
    if fft:
        from dpspark.gf import parallel_fft as PF

        t = (2 * d - 1).bit_length()
        fbinv, fblo = _forward_all(field, (np.ascontiguousarray(binv[:d]), blo), t)
    r = np.ascontiguousarray(a[n - d :])  # fewer than d + 1 coefficients: already reduced
    end = n - d
    while end > 0:
        start = max(0, end - d)
        piece = np.concatenate([a[start:end], r])
        if fft and end - start == d:
            # quotient (d coefficients) = rev(rev(piece)[:d] * binv mod z^d); remainder = low d of piece - q blo
            fq = PF.forward(field, np.ascontiguousarray(piece[::-1][:d]), t)
            qrev = _inverse_of_sum(field, ((fq, fbinv),), t)[:d]
            fq = PF.forward(field, np.ascontiguousarray(qrev[::-1]), t)
            r = piece[:d] ^ _inverse_of_sum(field, ((fq, fblo),), t)[:d]
        else:
            r = _monic_divmod(field, piece, blo, binv)[1]
        end = start
    return r


def _forward_all(field: GF2m, parts: tuple[np.ndarray, ...], t: int) -> list[np.ndarray]:
    """Additive-FFT values (size 2^t) of each part, spread over the pool from the caller's thread."""
    if len(parts) > 1 and threads() > 1 and not _in_pool_worker():
        return list(pool().map(lambda a: AF.forward(field, a, t), parts))
    from dpspark.gf import parallel_fft as PF

    return [PF.forward(field, a, t) for a in parts]


def _inverse_of_sum(field: GF2m, pairs: tuple[tuple[np.ndarray, np.ndarray], ...], t: int) -> np.ndarray:
    """The 2^t coefficients of sum fa * fb (pointwise products of transform values)."""
    acc = np.empty_like(pairs[0][0])
    K.mul_arrays(pairs[0][0], pairs[0][1], field.taps, acc)
    if len(pairs) > 1:
        tmp = np.empty_like(acc)
        for fa, fb in pairs[1:]:
            K.mul_arrays(fa, fb, field.taps, tmp)
            acc ^= tmp
    from dpspark.gf import parallel_fft as PF  # imported on first use: a small lookup never needs it

    return PF.inverse(field, acc, t)


def _scaled_level(field: GF2m, child: np.ndarray, vals: np.ndarray, n: int, s: int, dst: np.ndarray) -> None:
    """One scaled-remainder level by Karatsuba middle products, its parents split over the pool."""
    parents = -(-n // (2 * s))
    parts = min(threads(), parents) if not _in_pool_worker() else 1

    def run(p0: int, p1: int) -> None:
        PK.monic_level_scaled_kara(child, vals, n, s, field.taps, dst, p0 * 2 * s, min(n, p1 * 2 * s), MIDDLE_KARATSUBA_THRESHOLD)

    if parts > 1:
        step = -(-parents // parts)
        futs = [pool().submit(run, p, min(parents, p + step)) for p in range(0, parents, step)]
        for fut in futs:
            fut.result()
    else:
        run(0, parents)


class SubproductTree:
    """The subproduct tree of n >= 1 points (distinctness is checked by :func:`interpolate`)."""

    def __init__(self, field: GF2m, points: np.ndarray) -> None:
        """Build every level bottom-up: O(M(n) log n) field operations."""
        points = _check_points(field, points)
        n = points.shape[0]
        if n == 0:
            raise ValueError("a subproduct tree needs at least one point")
        self.field = field
        self.n = n
        self.levels: list[np.ndarray] = [points.copy()]
        # spectra[level]: for the children of every full parent (two nodes of size s = 2^level,
        # s >= FFT_THRESHOLD), the size-2s additive-FFT values of the child's stored coefficients
        # at rows [2 c0, 2 c0 + 2s) (c0 = the child's first row). Computed once for the
        # product, reused by evaluate and linear_combination (two forward transforms fewer each).
        self.spectra: dict[int, np.ndarray] = {}
        # partial[level]: (left transform, right transform, t) for the one parent of two unequal children
        # at that level, when both are large and balanced enough for a transform (FAST_MIDDLE only)
        self.fast = FAST_MIDDLE
        self.partial: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        s = 1
        while s < n:
            src = self.levels[-1]
            dst = np.empty_like(src)
            if s <= SMALL_NODE:
                PK.monic_level_products(src, n, s, field.taps, dst)
            else:
                spec = np.empty((2 * n, field.w), np.uint64) if s >= FFT_THRESHOLD and n >= 2 * s else None
                if spec is not None:
                    self.spectra[len(self.levels) - 1] = spec
                lv = len(self.levels) - 1
                _for_nodes(_node_ranges(n, s), lambda st, mid, end: self._product_node(lv, src, dst, st, mid, end, spec))
            self.levels.append(dst)
            s *= 2

    def _full_spectra(self, level: int, st: int, mid: int, end: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The cached transforms of the two children (at ``level``) of the parent [st, end), if full."""
        spec = self.spectra.get(level)
        if spec is None or mid - st != end - mid:
            return None
        s = mid - st
        return spec[2 * st : 2 * st + 2 * s], spec[2 * mid : 2 * mid + 2 * s]

    def _spectra(self, level: int, st: int, mid: int, end: int) -> tuple[np.ndarray, np.ndarray, int] | None:
        """(left, right, t): the children's cached transforms of size 2^t >= end - st - 1, full or partial parent."""
        full = self._full_spectra(level, st, mid, end)
        if full is not None:
            return full[0], full[1], (2 * (mid - st) - 1).bit_length()
        part = self.partial.get(level)
        if part is not None and mid - st == 1 << level and end == self.n:
            return part
        return None

    def _product_node(self, level: int, src: np.ndarray, dst: np.ndarray, st: int, mid: int, end: int, spec: np.ndarray | None) -> None:
        if mid == end:
            dst[st:end] = src[st:end]
            return
        s1, s2 = mid - st, end - mid
        a, b = src[st:mid], src[mid:end]
        if spec is not None and s1 == s2:
            t = (2 * s1 - 1).bit_length()
            fa, fb = _forward_all(self.field, (a, b), t)
            spec[2 * st : 2 * st + 2 * s1] = fa
            spec[2 * mid : 2 * mid + 2 * s1] = fb
            prod = _inverse_of_sum(self.field, ((fa, fb),), t)[: s1 + s2 - 1]
        elif self.fast and s2 >= FFT_THRESHOLD and s1 <= 4 * s2:
            # the last, partial parent of a level: transforms of size 2^t >= s1 + s2 - 1, kept for
            # evaluate and linear_combination like the full parents' (exact; same product as poly_mul)
            t = (s1 + s2 - 2).bit_length()
            fa, fb = _forward_all(self.field, (a, b), t)
            self.partial[level] = (fa, fb, t)
            prod = _inverse_of_sum(self.field, ((fa, fb),), t)[: s1 + s2 - 1]
        else:
            prod = poly_mul(self.field, a, b)
        dst[st : end - 1] = prod
        dst[end - 1] = 0
        dst[st + s1 : end] ^= b
        dst[st + s2 : end] ^= a

    def node_size(self, level: int) -> int:
        """Number of points per node at ``level`` (the last node may have fewer)."""
        return 1 << level

    def root(self) -> np.ndarray:
        """prod (z - x_i) as n + 1 coefficients (monic)."""
        return np.concatenate([self.levels[-1], self.field.ones(1).reshape(1, self.field.w)])

    # ------------------------------------------------------------ evaluation

    def evaluate(self, coeffs: np.ndarray) -> np.ndarray:
        """f(x_i) for every point, by the scaled remainder tree (transposed products).

        Bernstein's scaled remainder tree / the transposed multipoint evaluation
        of Bostan, Lecerf and Schost (2003): with c^v_j the coefficient of x^-j
        in f / M_v (j = 1..deg M_v), a child u with sibling u' has
        c^u_j = sum_i m'_i c^v_(j+i) (M_u' = sum m'_i z^i), a middle product,
        and a leaf z + x_i has c_1 = f(x_i). Only the root needs a power-series
        inverse; every node below costs one middle product per child instead of
        an inverse series and two products (vzGG Alg 10.5, kept as
        :meth:`evaluate_by_division`). Both give the same exact values.
        """
        field = self.field
        coeffs = _check_points(field, coeffs, "coeffs")
        n = self.n
        top = len(self.levels) - 1
        root_lo = self.levels[top][:n]
        # c_j (j = 1..n) = coefficient j-1 of rev(f) / rev(M) mod z^n; stored reversed. The inverse
        # series of rev(M) also serves the reduction of a longer f modulo M.
        one = field.ones(1).reshape(1, field.w)
        revm = np.ascontiguousarray(np.concatenate([one, root_lo[::-1][: n - 1]]))
        minv = poly_inv_series(field, revm, n)
        if coeffs.shape[0] > n:
            f = _rem_long(field, coeffs, root_lo, minv)
        else:
            f = field.zeros(n)
            f[: coeffs.shape[0]] = coeffs
        c = poly_mul_low(field, np.ascontiguousarray(f[::-1]), minv, n)
        vals = np.ascontiguousarray(c[::-1])
        level = top
        while level > 0:
            s = 1 << (level - 1)
            dst = np.empty_like(vals)
            child = self.levels[level - 1]
            if FAST_MIDDLE and self.fast and s < FFT_THRESHOLD:
                _scaled_level(field, child, vals, n, s, dst)
            elif s <= SMALL_NODE:
                PK.monic_level_scaled(child, vals, n, s, field.taps, dst)
            else:
                src = vals
                lv = level - 1
                _for_nodes(_node_ranges(n, s), lambda st, mid, end: self._scaled_node(lv, child, src, dst, st, mid, end))
            vals = dst
            level -= 1
        return vals

    def _scaled_node(self, level: int, child: np.ndarray, vals: np.ndarray, dst: np.ndarray, st: int, mid: int, end: int) -> None:
        field = self.field
        if mid == end:
            dst[st:end] = vals[st:end]
            return
        yr = vals[st:end]
        s1, s2 = mid - st, end - mid
        bl, br = child[st:mid], child[mid:end]
        spectra = self._spectra(level, st, mid, end) if self.fast and FAST_MIDDLE else None
        if spectra is not None:
            # (B * Yr)[sb : d] (sb = the sibling's size) by the transposition principle: one E^-T of the
            # reversed Yr shared by both children, one pointwise product and one E^T per child
            from dpspark.gf import parallel_fft as PF
            from dpspark.gf import transposed_fft as TF

            fbl, fbr, t = spectra
            d = s1 + s2
            y = field.zeros(1 << t)
            k = min(d, 1 << t)  # entries of the reversed Yr beyond d - 2 never meet a coefficient of B
            y[:k] = yr[::-1][:k]
            gy = PF.transposed(field, y, t, False)
            if threads() > 1 and not _in_pool_worker():
                fut = pool().submit(TF.middle_product_from, field, gy, fbl, t, s2)
                left = TF.middle_product_from(field, gy, fbr, t, s1)
                right = fut.result()
            else:
                left = TF.middle_product_from(field, gy, fbr, t, s1)
                right = TF.middle_product_from(field, gy, fbl, t, s2)
            left ^= yr[:s1]
            right ^= yr[:s2]
            dst[st:mid] = left
            dst[mid:end] = right
            return
        cached = self._full_spectra(level, st, mid, end)
        if cached is not None:
            # (B * Yr)[s : 2s] = high half of B * Yr[:s] + low half of B * Yr[s:]: four products
            # of size s from two new forward transforms (the children's are cached) and four inverses
            s = s1
            t = (2 * s - 1).bit_length()
            fbl, fbr = cached
            fy0, fy1 = _forward_all(field, (yr[:s], yr[s:]), t)

            def half(fb: np.ndarray) -> np.ndarray:
                out = _inverse_of_sum(field, ((fy0, fb),), t)[s : 2 * s]
                out ^= _inverse_of_sum(field, ((fy1, fb),), t)[:s]
                return out

            if threads() > 1 and not _in_pool_worker():
                fut = pool().submit(half, fbl)
                left = half(fbr)
                right = fut.result()
            else:
                left = half(fbr)
                right = half(fbl)
            left ^= yr[:s]
            right ^= yr[:s]
            dst[st:mid] = left
            dst[mid:end] = right
            return
        d = s1 + s2
        dst[st:mid] = poly_mul(field, br, yr)[s2:d] ^ yr[:s1]
        dst[mid:end] = poly_mul(field, bl, yr)[s1:d] ^ yr[:s2]

    def evaluate_by_division(self, coeffs: np.ndarray) -> np.ndarray:
        """f(x_i) for every point, by the remainder tree (vzGG Alg 10.5): the reference for tests and benchmarks."""
        field = self.field
        coeffs = _check_points(field, coeffs, "coeffs")
        n = self.n
        top = len(self.levels) - 1
        vals = _rem_long(field, coeffs, self.levels[top][:n])
        level = top
        while (1 << level) > LEAF_NODE:
            s = 1 << (level - 1)
            dst = np.empty_like(vals)
            if s <= SMALL_NODE:
                PK.monic_level_remainders(self.levels[level - 1], vals, n, s, field.taps, dst)
            else:
                child = self.levels[level - 1]
                _for_nodes(_node_ranges(n, s), lambda st, mid, end: self._rem_node(child, vals, dst, st, mid, end))
            vals = dst
            level -= 1
        out = np.empty_like(vals)
        PK.eval_blocks(vals, self.levels[0], n, 1 << level, field.taps, out)
        return out

    def _rem_node(self, child: np.ndarray, vals: np.ndarray, dst: np.ndarray, st: int, mid: int, end: int) -> None:
        parent = vals[st:end]

        def one(c0: int, c1: int) -> None:
            dst[c0:c1] = _monic_divmod(self.field, parent, child[c0:c1])[1]

        if mid == end:
            one(st, mid)
        elif threads() > 1 and not _in_pool_worker():
            fut = pool().submit(one, mid, end)
            one(st, mid)
            fut.result()
        else:
            one(st, mid)
            one(mid, end)

    # ------------------------------------------------------------ linear combination

    def linear_combination(self, c: np.ndarray) -> np.ndarray:
        """sum_i c_i * M / (z - x_i) with M the root product (vzGG Alg 10.9); n coefficients."""
        field = self.field
        vals = _check_points(field, c, "c").copy()
        if vals.shape[0] != self.n:
            raise ValueError("need one value per point")
        n = self.n
        for level in range(1, len(self.levels)):
            s = 1 << (level - 1)
            dst = np.empty_like(vals)
            child = self.levels[level - 1]
            if s <= SMALL_NODE:
                PK.monic_level_lincomb(child, vals, n, s, field.taps, dst)
            else:
                src = vals
                lv = level - 1
                _for_nodes(_node_ranges(n, s), lambda st, mid, end: self._lincomb_node(lv, child, src, dst, st, mid, end))
            vals = dst
        return vals

    def _lincomb_node(self, level: int, child: np.ndarray, vals: np.ndarray, dst: np.ndarray, st: int, mid: int, end: int) -> None:
        if mid == end:
            dst[st:end] = vals[st:end]
            return
        s1, s2 = mid - st, end - mid
        vl, vr = vals[st:mid], vals[mid:end]
        cached = self._spectra(level, st, mid, end)
        if cached is not None:
            # vl * B_R + vr * B_L summed in the transform domain: one inverse
            fbl, fbr, t = cached
            fl, fr = _forward_all(self.field, (vl, vr), t)
            dst[st : end - 1] = _inverse_of_sum(self.field, ((fl, fbr), (fr, fbl)), t)[: s1 + s2 - 1]
        else:
            dst[st : end - 1] = poly_mul(self.field, vl, child[mid:end])
            dst[st : end - 1] ^= poly_mul(self.field, vr, child[st:mid])
        dst[end - 1] = 0
        dst[st + s2 : end] ^= vl
        dst[st + s1 : end] ^= vr


def vanishing_poly(field: GF2m, points: np.ndarray) -> np.ndarray:
    """prod (z - x_i) over the given points, n + 1 coefficients ascending (monic); [1] for none."""
    points = _check_points(field, points)
    if points.shape[0] == 0:
        return field.ones(1).reshape(1, field.w)
    return SubproductTree(field, points).root()


def multipoint_eval(field: GF2m, coeffs: np.ndarray, points: np.ndarray) -> np.ndarray:
    """f(x_i) for every point (shape (n, w)), via the subproduct/remainder tree."""
    points = _check_points(field, points)
    if points.shape[0] == 0:
        return field.zeros(0)
    return SubproductTree(field, points).evaluate(coeffs)


def interpolate(field: GF2m, points: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The unique f of degree < n with f(x_i) = y_i (vzGG Alg 10.11); n coefficients.

    Raises ValueError if the points are not pairwise distinct (detected as a
    zero of M' at some point, without revealing which).
    """
    points = _check_points(field, points)
    values = _check_points(field, values, "values")
    n = points.shape[0]
    if values.shape[0] != n:
        raise ValueError("points and values must have the same length")
    if n == 0:
        return field.zeros(0)
    tree = SubproductTree(field, points)
    dm = poly_derivative(field, tree.root())
    s = tree.evaluate(dm)
    try:
        sinv = field.inv(s)
    except ZeroDivisionError:
        raise ValueError("interpolation points must be pairwise distinct") from None
    return tree.linear_combination(field.mul(values, sinv))


__all__ = ["SubproductTree", "interpolate", "multipoint_eval", "vanishing_poly"]
