"""Additive FFT over GF(2^m): transform = evaluation at the span points, inverse, products."""

from __future__ import annotations

import numpy as np
import pytest

from dpspark import gf
from dpspark.gf import MODULI, GF2m
from dpspark.gf import additive_fft as A

MS = sorted(MODULI)


def rand(rng: np.random.Generator, F: GF2m, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, (n, F.w), dtype=np.uint64)


@pytest.mark.parametrize("m", MS)
def test_cantor_basis(m: int) -> None:
    F = GF2m(m)
    cb = A.cantor_basis(F, 24)
    assert cb[0] == 1
    for prev, cur in zip(cb, cb[1:]):
        e = F.from_int(cur)
        assert F.to_int(F.add(F.square(e), e)) == prev
    # linearly independent over GF(2): the span has 2^24 distinct elements iff the rank is 24
    rows, rank = list(cb), 0
    for bit in range(m - 1, -1, -1):
        piv = next((r for r in rows if (r >> bit) & 1), None)
        if piv is None:
            continue
        rows = [r ^ piv if (r >> bit) & 1 else r for r in rows if r is not piv]
        rank += 1
    assert rank == 24


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("t", [0, 1, 2, 3, 4, 7, 10])
def test_forward_is_evaluation_and_inverse_round_trips(m: int, t: int) -> None:
    rng = np.random.default_rng(100 * m + t)
    F = GF2m(m)
    f = rand(rng, F, 1 << t)
    pts = A.span_points(F, t)
    assert len({tuple(p) for p in pts.tolist()}) == 1 << t  # distinct points
    v = A.forward(F, f, t)
    assert np.array_equal(v, gf.horner_many(F, f, pts))
    assert np.array_equal(A.inverse(F, v, t), f)
    # shorter inputs are zero-padded
    g = f[: max(1, (1 << t) // 3)]
    assert np.array_equal(A.forward(F, g, t), gf.horner_many(F, g, pts))


def test_chunked_taylor_path() -> None:
    """Transforms above the cache chunk size (2^13) take the depth-first Taylor path."""
    rng = np.random.default_rng(4)
    F = GF2m(128)
    t = 15
    f = rand(rng, F, 1 << t)
    v = A.forward(F, f, t)
    assert np.array_equal(A.inverse(F, v, t), f)
    idx = np.array([0, 1, 2, 12345, (1 << t) - 1])
    assert np.array_equal(v[idx], gf.horner_many(F, f, A.span_points(F, t)[idx]))


@pytest.mark.parametrize("m", MS)
def test_fft_mul_matches_karatsuba(m: int) -> None:
    rng = np.random.default_rng(200 + m)
    F = GF2m(m)
    for na, nb in [(1, 1), (2, 3), (17, 16), (1000, 1000), (2048, 2049), (3000, 700), (5000, 4100)]:
        a, b = rand(rng, F, na), rand(rng, F, nb)
        assert np.array_equal(gf.fft_mul(F, a, b), gf.poly_mul_karatsuba(F, a, b)), (na, nb)


def test_poly_mul_unbalanced_chunks_use_fft() -> None:
    rng = np.random.default_rng(5)
    F = GF2m(128)
    a, b = rand(rng, F, 23000), rand(rng, F, 2100)  # ratio > 4: chunked FFT products
    assert np.array_equal(gf.poly_mul(F, a, b), gf.poly_mul_karatsuba(F, a, b))
    with pytest.raises(ValueError):
        A.forward(F, a[:9], 3)
    with pytest.raises(ValueError):
        A.inverse(F, a[:7], 3)
