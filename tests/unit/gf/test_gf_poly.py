"""Polynomial arithmetic over GF(2^m) against galois (small) and our schoolbook paths (large)."""

from __future__ import annotations

import functools

import galois
import numpy as np
import pytest

from dpspark import gf
from dpspark.gf import MODULI, GF2m, modulus_string

MS = sorted(MODULI)


@functools.cache
def gal(m: int) -> type:
    return galois.GF(2**m, irreducible_poly=modulus_string(m), verify=False)


def rand(rng: np.random.Generator, F: GF2m, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, (n, F.w), dtype=np.uint64)


def to_galois(F: GF2m, a: np.ndarray) -> galois.Poly:
    G = gal(F.m)
    return galois.Poly(G(F.to_int(a)[::-1]) if a.shape[0] else G([0]))


def from_galois(F: GF2m, p: galois.Poly, length: int) -> np.ndarray:
    out = F.zeros(length)
    c = [int(v) for v in p.coeffs[::-1]]
    if any(c):
        out[: len(c)] = F.from_int(c)
    return out


@pytest.mark.parametrize("m", MS)
def test_small_ops_match_galois(m: int) -> None:
    rng = np.random.default_rng(m)
    F = GF2m(m)
    a, b = rand(rng, F, 6), rand(rng, F, 4)
    b[-1] = F.from_int(7)  # non-monic divisor
    pa, pb = to_galois(F, a), to_galois(F, b)
    assert np.array_equal(gf.poly_mul(F, a, b), from_galois(F, pa * pb, 9))
    assert np.array_equal(gf.poly_mul_schoolbook(F, a, b), from_galois(F, pa * pb, 9))
    assert np.array_equal(gf.poly_add(F, a, b), from_galois(F, pa + pb, 6))
    q, r = gf.poly_divmod(F, a, b)
    assert np.array_equal(q, from_galois(F, pa // pb, 3))
    assert np.array_equal(r, from_galois(F, pa % pb, 3))
    assert np.array_equal(gf.poly_derivative(F, a), from_galois(F, pa.derivative(), 5))
    x = rand(rng, F, 3)
    expect = [int(v) for v in pa(gal(m)(F.to_int(x)))]
    assert F.to_int(gf.horner_many(F, a, x)) == expect
    assert F.to_int(gf.horner(F, a, x[1], "table")) == expect[1]
    assert F.to_int(gf.horner(F, a, x[1], "clmul")) == expect[1]


@pytest.mark.parametrize("m", MS)
def test_karatsuba_matches_schoolbook(m: int) -> None:
    rng = np.random.default_rng(10 + m)
    F = GF2m(m)
    for na, nb in [(1, 1), (1, 300), (49, 49), (97, 50), (300, 301), (1000, 999), (2500, 130), (777, 2049)]:
        a, b = rand(rng, F, na), rand(rng, F, nb)
        assert np.array_equal(gf.poly_mul(F, a, b), gf.poly_mul_schoolbook(F, a, b)), (na, nb)
    assert gf.poly_mul(F, F.zeros(0), rand(rng, F, 3)).shape == (0, F.w)


def test_parallel_karatsuba_matches_schoolbook() -> None:
    rng = np.random.default_rng(3)
    F = GF2m(128)
    for na, nb in [(4096, 4096), (5000, 4300), (4100, 9000)]:
        a, b = rand(rng, F, na), rand(rng, F, nb)
        assert np.array_equal(gf.poly_mul(F, a, b), gf.poly_mul_schoolbook(F, a, b))


@pytest.mark.parametrize("m", MS)
def test_divmod_identity_including_newton_path(m: int) -> None:
    rng = np.random.default_rng(20 + m)
    F = GF2m(m)
    for na, nb in [(10, 3), (3, 10), (200, 70), (700, 300), (1500, 1499), (2000, 100)]:
        a, b = rand(rng, F, na), rand(rng, F, nb)
        q, r = gf.poly_divmod(F, a, b)
        assert r.shape[0] == nb - 1
        back = gf.poly_add(F, gf.poly_mul(F, q, b), r) if q.shape[0] else r
        assert np.array_equal(gf.poly_trim(F, back), gf.poly_trim(F, a)), (na, nb)
        assert np.array_equal(gf.poly_rem(F, a, b), r)
    with pytest.raises(ZeroDivisionError):
        gf.poly_divmod(F, rand(rng, F, 3), F.zeros(4))


def test_inverse_series() -> None:
    rng = np.random.default_rng(5)
    F = GF2m(128)
    g = rand(rng, F, 500)
    g[0] = F.ones(())
    h = gf.poly_inv_series(F, g, 777)
    prod = gf.poly_mul_low(F, g, h, 777)
    assert np.array_equal(prod, np.concatenate([F.ones(1), F.zeros(776)]))
    with pytest.raises(ValueError):
        gf.poly_inv_series(F, F.zeros(3), 5)


@pytest.mark.parametrize("m", MS)
def test_horner_methods_agree(m: int) -> None:
    rng = np.random.default_rng(30 + m)
    F = GF2m(m)
    c = rand(rng, F, 3001)
    xs = rand(rng, F, 19)
    many = gf.horner_many(F, c, xs)
    for i in (0, 7, 18):
        assert np.array_equal(gf.horner(F, c, xs[i], "clmul"), many[i])
        assert np.array_equal(gf.horner(F, c, xs[i], "table"), many[i])
        assert np.array_equal(gf.horner(F, c, xs[i], "agg"), many[i])
    assert np.array_equal(gf.horner_many(F, c, xs, "generic"), many)
    # p(x) by explicit powers
    pw = F.pow(np.broadcast_to(xs[3], (3001, F.w)).copy(), 1)
    powers = F.ones(3001)
    for k in range(1, 3001):
        powers[k] = F.mul(powers[k - 1], pw[0])
    assert np.array_equal(np.bitwise_xor.reduce(F.mul(c, powers), axis=0), many[3])
    # degenerate inputs
    assert not gf.horner(F, F.zeros(0), xs[0]).any()
    assert np.array_equal(gf.horner(F, c[:1], xs[0]), c[0])


@pytest.mark.parametrize("m", MS)
def test_horner_agg_block_edges_match_galois(m: int) -> None:
    """Lengths around the kernel's block size (full blocks on PCLMUL lanes, a scalar top block) vs galois."""
    from dpspark.gf.horner_kernels import VB

    rng = np.random.default_rng(40 + m)
    F = GF2m(m)
    G = gal(m)
    xs = rand(rng, F, 3)
    xs[0] = F.zeros(())
    xs[1] = F.ones(())
    gx = G(F.to_int(xs))
    for n in (1, 2, VB - 1, VB, VB + 1, 2 * VB, 3 * VB + 5):
        c = rand(rng, F, n)
        expect = [int(v) for v in to_galois(F, c)(gx)]
        assert F.to_int(gf.horner_many(F, c, xs)) == expect, n
        assert F.to_int(gf.horner(F, c, xs[2])) == expect[2], n
    # all-ones words: every carry-less product and fold is exercised at full width
    c = np.full((2 * VB + 3, F.w), np.uint64(2**64 - 1))
    x = np.full((1, F.w), np.uint64(2**64 - 1))
    expect = int(to_galois(F, c)(G(F.to_int(x)))[0])
    assert F.to_int(gf.horner(F, c, x[0])) == expect


@pytest.mark.parametrize("m", MS)
def test_horner_read_only_and_strided_views(m: int, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Coefficients from a read-only memory map (as the lookup library hands them over) and strided views."""
    rng = np.random.default_rng(50 + m)
    F = GF2m(m)
    c = rand(rng, F, 1234)
    xs = rand(rng, F, 5)
    ref = gf.horner_many(F, c, xs, "generic")
    path = tmp_path / "coeffs.bin"
    c.tofile(path)
    mm = np.memmap(path, dtype=np.uint64, mode="r", shape=c.shape)
    ro = np.frombuffer(c.tobytes(), dtype=np.uint64).reshape(c.shape)
    assert not ro.flags.writeable and not mm.flags.writeable
    for view in (mm, ro):
        assert np.array_equal(gf.horner_many(F, view, xs), ref)
        for i in range(2):
            for meth in ("auto", "table", "clmul"):
                assert np.array_equal(gf.horner(F, view, xs[i], meth), ref[i])
    # a non-contiguous view (every other coefficient) is copied once and evaluated correctly
    wide = np.zeros((2 * c.shape[0], F.w), np.uint64)
    wide[::2] = c
    wide.setflags(write=False)
    assert np.array_equal(gf.horner(F, wide[::2], xs[3]), ref[3])
    assert np.array_equal(gf.horner_many(F, wide[::2], xs), ref)


def test_horner_many_parallel_split_matches_generic() -> None:
    """Enough work to split the points over the pool; odd point count, rows around the block size."""
    from dpspark.gf.poly import PARALLEL_HORNER_MIN

    rng = np.random.default_rng(60)
    for m in (128, 192):
        F = GF2m(m)
        xs = rand(rng, F, 21)
        c = rand(rng, F, PARALLEL_HORNER_MIN // 16 + 7)
        assert np.array_equal(gf.horner_many(F, c, xs), gf.horner_many(F, c, xs, "generic"))


def test_poly_error_paths() -> None:
    F = GF2m(64)
    with pytest.raises(ValueError):
        gf.poly_mul(F, np.zeros((3, 2), np.uint64), F.zeros(3))
    with pytest.raises(TypeError):
        gf.poly_mul(F, np.zeros((3, 1), np.int64), F.zeros(3))
    with pytest.raises(ValueError):
        gf.poly_mul(F, np.zeros((3, 2, 1), np.uint64), F.zeros(3))
    with pytest.raises(ValueError):
        gf.horner(F, F.zeros(3), F.zeros(2))
    with pytest.raises(ValueError):
        gf.horner(F, F.zeros(3), F.zeros(()), method="fft")
    with pytest.raises(ValueError):
        gf.horner_many(F, F.zeros(3), F.zeros(2), method="fft")
