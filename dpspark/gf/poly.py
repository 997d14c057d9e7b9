"""Polynomials over GF(2^m): (n, w) uint64 arrays of coefficients, ascending degree.

Row i is the coefficient of z^i (a field element in the layout of
:mod:`dpspark.gf.field`). The zero polynomial may be any all-zero array,
including shape (0, w); functions do not trim unless they say so.

Multiplication is schoolbook below ``KARATSUBA_THRESHOLD`` coefficients,
Karatsuba up to ``FFT_THRESHOLD`` (both accumulate unreduced 2w-word products
and reduce once per output coefficient), and the additive FFT of
:mod:`dpspark.gf.additive_fft` above. Large products use a small thread pool
(the numba kernels release the GIL). Division by a monic polynomial is
schoolbook for short quotients and Newton iteration on reversed polynomials
otherwise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from dpspark.gf import horner_kernels as HK
from dpspark.gf import kernels as K
from dpspark.gf import polymul_kernels as PK
from dpspark.gf.field import GF2m

#: Below this many coefficients (of the shorter factor) Karatsuba falls back to schoolbook.
KARATSUBA_THRESHOLD = 48
#: Products whose shorter factor has at least this many coefficients use the thread pool.
PARALLEL_MIN = 2048
#: From this many coefficients (of the shorter factor) on, products use the additive FFT.
FFT_THRESHOLD = 2048
#: Below this quotient length division is schoolbook; above, Newton iteration.
NEWTON_THRESHOLD = 64
#: Points per pass over the coefficients in ``horner_many`` (their power tables stay in L1/L2).
HORNER_CHUNK = 16
#: ``horner_many`` splits the points over the pool from this many point-coefficient pairs on.
PARALLEL_HORNER_MIN = 1 << 20

_POOL: ThreadPoolExecutor | None = None


def threads() -> int:
    """Worker threads for large products (env DPSPARK_GF_THREADS, default min(2, cpus))."""
    env = os.environ.get("DPSPARK_GF_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(2, os.cpu_count() or 1))


def pool() -> ThreadPoolExecutor:
    """The shared worker pool."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=threads(), thread_name_prefix="dpspark-gf")
    return _POOL


def _in_pool_worker() -> bool:
    # a worker waiting on tasks of its own pool could deadlock; such calls stay serial
    return threading.current_thread().name.startswith("dpspark-gf")


def _check(field: GF2m, a: np.ndarray, name: str) -> np.ndarray:
    a = field.check(a, name)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a polynomial of shape (n, {field.w})")
    return a


# ---------------------------------------------------------------- basics


def poly_trim(field: GF2m, a: np.ndarray) -> np.ndarray:
    """Drop zero leading (highest-degree) coefficients; the zero polynomial becomes (0, w)."""
    a = _check(field, a, "a")
    nz = np.flatnonzero(a.any(axis=1))
    return a[: (nz[-1] + 1 if nz.size else 0)]


def poly_degree(field: GF2m, a: np.ndarray) -> int:
    """Degree (-1 for the zero polynomial)."""
    return poly_trim(field, a).shape[0] - 1


def poly_add(field: GF2m, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b (length max(len a, len b))."""
    a = _check(field, a, "a")
    b = _check(field, b, "b")
    if a.shape[0] < b.shape[0]:
        a, b = b, a
    out = a.copy()
    out[: b.shape[0]] ^= b
    return out


def poly_derivative(field: GF2m, a: np.ndarray) -> np.ndarray:
    """Formal derivative: in characteristic 2, i*c_i is c_i for odd i and 0 for even i."""
    a = _check(field, a, "a")
    n = a.shape[0]
    out = np.zeros((max(n - 1, 0), field.w), dtype=np.uint64)
    out[0::2] = a[1::2]
    return out


def poly_scale(field: GF2m, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """c * a for a field element c of shape (w,)."""
    a = _check(field, a, "a")
    if a.shape[0] == 0:
        return a.copy()
    return field.mul(a, field.check(c, "c").reshape(1, field.w))


# ---------------------------------------------------------------- products


def _unreduced(a: np.ndarray, b: np.ndarray, karatsuba: bool) -> np.ndarray:
    out = np.zeros((a.shape[0] + b.shape[0] - 1, 2 * a.shape[1]), dtype=np.uint64)
    if karatsuba:
        PK.karatsuba_unreduced(a, b, out, KARATSUBA_THRESHOLD)
    else:
        PK.school_unreduced(a, b, out)
    return out


def _unreduced_parallel(a: np.ndarray, b: np.ndarray, depth: int) -> Callable[[], np.ndarray]:
    """Split the top ``depth`` Karatsuba levels into pool tasks; returns a thunk for the result."""
    na, nb = a.shape[0], b.shape[0]
    h = (max(na, nb) + 1) // 2
    if depth == 0 or na <= h or nb <= h or min(na, nb) < PARALLEL_MIN:
        fut: Future[np.ndarray] = pool().submit(_unreduced, a, b, True)
        return fut.result
    la, lb = na - h, nb - h
    sa = a[:h].copy()
    sa[:la] ^= a[h:]
    sb = b[:h].copy()
    sb[:lb] ^= b[h:]
    g0 = _unreduced_parallel(a[:h], b[:h], depth - 1)
    g2 = _unreduced_parallel(a[h:], b[h:], depth - 1)
    g1 = _unreduced_parallel(sa, sb, depth - 1)

    def combine() -> np.ndarray:
        z0, z1, z2 = g0(), g1(), g2()
        out = np.zeros((na + nb - 1, z0.shape[1]), dtype=np.uint64)
        z1 ^= z0
        z1[: la + lb - 1] ^= z2
        out[: 2 * h - 1] ^= z0
        out[2 * h : 2 * h + la + lb - 1] ^= z2
        mlen = min(2 * h - 1, na + nb - 1 - h)
        out[h : h + mlen] ^= z1[:mlen]
        return out

    return combine


def _reduce(field: GF2m, acc: np.ndarray) -> np.ndarray:
    out = np.empty((acc.shape[0], field.w), dtype=np.uint64)
    PK.reduce_rows(acc, field.taps, out)
    return out


def poly_mul_schoolbook(field: GF2m, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b by the quadratic method (reference for tests)."""
    a = _check(field, a, "a")
    b = _check(field, b, "b")
    if a.shape[0] == 0 or b.shape[0] == 0:
        return field.zeros(0)
    return _reduce(field, _unreduced(a, b, False))


def poly_mul_karatsuba(field: GF2m, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b by Karatsuba with lazy reduction (schoolbook below ``KARATSUBA_THRESHOLD``)."""
    a = _check(field, a, "a")
    b = _check(field, b, "b")
    if a.shape[0] == 0 or b.shape[0] == 0:
        return field.zeros(0)
    if min(a.shape[0], b.shape[0]) >= PARALLEL_MIN and threads() > 1 and not _in_pool_worker():
        acc = _unreduced_parallel(a, b, 2)()
    else:
        acc = _unreduced(a, b, True)
    return _reduce(field, acc)


def poly_mul(field: GF2m, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b (length len a + len b - 1).

    Karatsuba below ``FFT_THRESHOLD`` coefficients in the shorter factor, the
    additive FFT above; a much longer factor is cut into pieces of twice the
    shorter length so the transform size follows the shorter factor.
    """
    from dpspark.gf.additive_fft import fft_mul

    a = _check(field, a, "a")
    b = _check(field, b, "b")
    na, nb = a.shape[0], b.shape[0]
    if na == 0 or nb == 0:
        return field.zeros(0)
    if min(na, nb) < FFT_THRESHOLD:
        return poly_mul_karatsuba(field, a, b)
    if na < nb:
        a, b, na, nb = b, a, nb, na
    ex = pool() if threads() > 1 and not _in_pool_worker() else None
    if na <= 4 * nb:
        return fft_mul(field, a, b, ex)
    out = field.zeros(na + nb - 1)
    step = 2 * nb
    for s in range(0, na, step):
        piece = a[s : s + step]
        out[s : s + piece.shape[0] + nb - 1] ^= fft_mul(field, piece, b, ex)
    return out


def poly_mul_low(field: GF2m, a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """(a * b) mod z^k, as exactly k coefficients."""
    a = _check(field, a, "a")[:k]
    b = _check(field, b, "b")[:k]
    out = field.zeros(k)
    if a.shape[0] and b.shape[0]:
        p = poly_mul(field, a, b)[:k]
        out[: p.shape[0]] = p
    return out


# ---------------------------------------------------------------- division


def poly_inv_series(field: GF2m, g: np.ndarray, k: int) -> np.ndarray:
    """h with g*h = 1 mod z^k, for g(0) = 1, by Newton iteration h <- h + h(1 - g h)."""
    g = _check(field, g, "g")
    if k <= 0:
        return field.zeros(0)
    if g.shape[0] == 0 or g[0, 0] != 1 or g[0, 1:].any():
        raise ValueError("poly_inv_series needs constant coefficient 1")
    h = field.ones(1).reshape(1, field.w)
    p = 1
    while p < k:
        p2 = min(2 * p, k)
        if p >= FFT_THRESHOLD:
            c = _newton_step_fft(field, np.ascontiguousarray(g[:p2]), h, p, p2)
        else:
            e = poly_mul_low(field, g[:p2], h, p2)[p:p2]
            c = poly_mul_low(field, h[: p2 - p], e, p2 - p)
        h = np.concatenate([h, c])
        p = p2
    return h


def _newton_step_fft(field: GF2m, g: np.ndarray, h: np.ndarray, p: int, p2: int) -> np.ndarray:
    """The Newton correction h (g h - 1) / z^p mod z^(p2 - p) with transforms of size 2p only (p a power of two).

    The transform of size 2^t multiplies modulo the subspace polynomial
    s_t(z) = z^(2^t) + L(z), L = sum of z^(2^i) over the i < t with binomial(t, i)
    odd (the Cantor-basis subspace is the kernel of (z^2 + z)^(o t)). g h has
    3p - 1 coefficients, so its top part wraps onto L times it; the known low
    part g h = 1 mod z^p lets :func:`newton_unwrap` undo the wrap (the middle
    product trick), and the transform of h serves both products of the step.
    """
    from dpspark.gf import additive_fft as AF

    t = (2 * p - 1).bit_length()
    exps = np.array([1 << i for i in range(t) if (t & i) == i], dtype=np.int64)
    ex = pool() if threads() > 1 and not _in_pool_worker() else None
    if ex is not None:
        fut = ex.submit(AF.forward, field, g, t)
        fh = AF.forward(field, h, t)
        fg = fut.result()
    else:
        fg = AF.forward(field, g, t)
        fh = AF.forward(field, h, t)
    K.mul_arrays(fg, fh, field.taps, fg)
    r = AF.inverse(field, fg, t)
    hi = field.zeros(p - 1)
    e = field.zeros(p2 - p)
    PK.newton_unwrap(r, p, p2, exps, hi, e)
    fe = AF.forward(field, e, t)
    K.mul_arrays(fe, fh, field.taps, fe)
    return AF.inverse(field, fe, t)[: p2 - p]


def _monic_divmod(field: GF2m, a: np.ndarray, blo: np.ndarray, binv: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(q, r) for a divided by z^d + blo, d = len(blo); r has exactly d coefficients."""
    d = blo.shape[0]
    na = a.shape[0]
    if na <= d:
        r = field.zeros(d)
        r[:na] = a
        return field.zeros(0), r
    k = na - d
    if k < NEWTON_THRESHOLD or d < NEWTON_THRESHOLD:
        work = a.copy()
        q = field.zeros(k)
        PK.monic_divmod_school(work, blo, field.taps, q)
        return q, np.ascontiguousarray(work[:d])
    if binv is None or binv.shape[0] < k:
        revb = np.concatenate([field.ones(1).reshape(1, field.w), blo[::-1][:k - 1]]) if k > 1 else field.ones(1).reshape(1, field.w)
        binv = poly_inv_series(field, np.ascontiguousarray(revb), k)
    qrev = poly_mul_low(field, np.ascontiguousarray(a[::-1][:k]), binv[:k], k)
    q = np.ascontiguousarray(qrev[::-1])
    r = a[:d].copy()
    r ^= poly_mul_low(field, blo, q[:d], d)
    return q, r


def poly_divmod(field: GF2m, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q, r) with a = q*b + r and deg r < deg b; ZeroDivisionError for b = 0.

    r has exactly deg(b) coefficients; q has max(len a - deg b, 0).
    """
    a = _check(field, a, "a")
    b = poly_trim(field, _check(field, b, "b"))
    if b.shape[0] == 0:
        raise ZeroDivisionError("polynomial division by zero")
    lc = b[-1]
    monic = bool(lc[0] == 1 and not lc[1:].any())
    if monic:
        return _monic_divmod(field, a, np.ascontiguousarray(b[:-1]))
    lcinv = field.inv(lc)
    q, r = _monic_divmod(field, a, poly_scale(field, np.ascontiguousarray(b[:-1]), lcinv))
    return poly_scale(field, q, lcinv), r


def poly_rem(field: GF2m, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a mod b (exactly deg b coefficients)."""
    return poly_divmod(field, a, b)[1]


# ---------------------------------------------------------------- evaluation


def _horner_agg(field: GF2m, coeffs: np.ndarray, xs: np.ndarray, out: np.ndarray) -> None:
    """out[k] = p(xs[k]) by the aggregated-reduction kernels of :mod:`dpspark.gf.horner_kernels`."""
    k, w = xs.shape
    if k == 0:
        return
    b = HK.VB
    xp = np.empty((k, b + 1, w), dtype=np.uint64)
    xm = np.empty((k, b + 1), dtype=np.uint64)
    HK.powers_table(xs, field.taps, xp, xm)
    if HK.HARDWARE and w >= 2:
        HK.horner_agg_vec(coeffs, xp, xm, field.taps, out, HORNER_CHUNK)
    else:
        HK.horner_agg(coeffs, xp, xm, field.taps, out, HORNER_CHUNK)


def horner(field: GF2m, coeffs: np.ndarray, x: np.ndarray, method: str = "auto") -> np.ndarray:
    """p(x) for one point x of shape (w,); coeffs ascending, shape (l, w).

    coeffs may be a read-only view (e.g. of a memory-mapped file); a
    C-contiguous one is used in place, anything else is copied once.

    method: "agg" (blocks of powers x^0..x^B with one reduction per block;
    128-bit PCLMULQDQ lanes for m >= 128), "table" (byte-window table
    for the fixed x^4, four interleaved chains), "clmul" (four interleaved
    carry-less chains in x^4) or "auto" (= "agg", the fastest here by 3-20x).
    """
    coeffs = _check(field, coeffs, "coeffs")
    x = field.check(x, "x")
    if x.shape != (field.w,):
        raise ValueError(f"x must be one element of shape ({field.w},)")
    if method == "auto":
        method = "agg"
    if method == "agg":
        out = field.zeros(1)
        _horner_agg(field, coeffs, x.reshape(1, field.w), out)
        return out[0]
    if method == "clmul":
        return K.horner_clmul(coeffs, x.reshape(1, field.w), field.taps)
    if method == "table":
        if coeffs.shape[0] < 64:
            return K.horner_table(coeffs, field.mul_table(x))
        xp = np.stack([field.ones(()), x, field.square(x), field.pow(x, 3)])
        return K.horner_table4(coeffs, field.mul_table(field.pow(x, 4)), xp, field.taps)
    raise ValueError("method must be 'auto', 'agg', 'clmul' or 'table'")


def horner_many(field: GF2m, coeffs: np.ndarray, xs: np.ndarray, method: str = "auto") -> np.ndarray:
    """p(x) for each row of xs (shape (k, w)).

    method "auto" = "agg": the aggregated-reduction kernel, ``HORNER_CHUNK``
    points per pass over the coefficients, points split over the pool when
    the work is large; "generic": the reference kernel (one reduced multiply
    per coefficient and point, blocks of 8 points).
    """
    coeffs = _check(field, coeffs, "coeffs")
    xs = _check(field, xs, "xs")
    out = np.zeros_like(xs)
    k = xs.shape[0]
    if method == "auto":
        method = "agg"
    if method not in ("agg", "generic"):
        raise ValueError("method must be 'auto', 'agg' or 'generic'")
    if k == 0:
        return out

    def run(s: int, e: int) -> None:
        if method == "agg":
            _horner_agg(field, coeffs, xs[s:e], out[s:e])
        else:
            K.horner_many(coeffs, xs[s:e], field.taps, out[s:e])

    if k >= 2 and k * coeffs.shape[0] >= PARALLEL_HORNER_MIN and threads() > 1 and not _in_pool_worker():
        # split the keys over the pool (the kernels release the GIL)
        step = -(-k // threads())
        futs = [pool().submit(run, s, min(k, s + step)) for s in range(0, k, step)]
        for f in futs:
            f.result()
    else:
        run(0, k)
    return out
