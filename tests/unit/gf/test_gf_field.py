"""GF(2^m) element arithmetic, cross-checked against galois and the field axioms."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import galois
import numpy as np
import pytest

from dpspark.gf import MODULI, GF2m, modulus_int, modulus_string
from dpspark.gf import clmul as C
from dpspark.rng import SeededRandom

MS = sorted(MODULI)


@functools.cache
def gal(m: int) -> type:
    return galois.GF(2**m, irreducible_poly=modulus_string(m), verify=False)


def rand_ints(rng: np.random.Generator, m: int, k: int) -> list[int]:
    return [int.from_bytes(rng.bytes(m // 8), "little") for _ in range(k)]


def rand_elems(rng: np.random.Generator, F: GF2m, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, (n, F.w), dtype=np.uint64, endpoint=False)


@pytest.mark.parametrize("m", MS)
def test_modulus_irreducible(m: int) -> None:
    poly = galois.Poly.Int(modulus_int(m), field=galois.GF(2))
    assert poly.degree == m
    assert poly.is_irreducible()
    assert str(poly) == modulus_string(m)


@pytest.mark.parametrize("m", MS)
def test_ops_match_galois(m: int) -> None:
    rng = np.random.default_rng(m)
    F, G = GF2m(m), gal(m)
    ai, bi = rand_ints(rng, m, 12), rand_ints(rng, m, 12)
    ai[0], bi[1] = 1, (1 << m) - 1  # edge values
    a, b = F.from_int(ai), F.from_int(bi)
    ga, gb = G(ai), G(bi)
    assert F.to_int(F.add(a, b)) == [int(v) for v in ga + gb]
    assert F.to_int(F.mul(a, b)) == [int(v) for v in ga * gb]
    assert F.to_int(F.square(a)) == [int(v) for v in ga**2]
    assert F.to_int(F.inv(a)) == [int(v) for v in ga**-1]
    assert F.to_int(F.div(a, b)) == [int(v) for v in ga / gb]
    for e in (0, 1, 2, 3, 1000003):
        assert F.to_int(F.pow(a, e)) == [int(v) for v in ga**e]
    assert np.array_equal(F.pow(a, 2**m - 2), F.inv(a))
    tab = F.mul_table(a[3])
    assert F.to_int(F.mul_fixed(tab, b)) == [int(v) for v in ga[3] * gb]


@pytest.mark.parametrize("m", MS)
def test_field_axioms_large(m: int) -> None:
    rng = np.random.default_rng(100 + m)
    F = GF2m(m)
    a, b, c = (rand_elems(rng, F, 2000) for _ in range(3))
    assert np.array_equal(F.mul(a, F.add(b, c)), F.add(F.mul(a, b), F.mul(a, c)))
    assert np.array_equal(F.mul(F.mul(a, b), c), F.mul(a, F.mul(b, c)))
    assert np.array_equal(F.mul(a, b), F.mul(b, a))
    assert np.array_equal(F.mul(a, F.inv(a)), F.ones(2000))
    assert np.array_equal(F.square(a), F.mul(a, a))
    assert np.array_equal(F.pow(a, 2**m - 1), F.ones(2000))  # Lagrange: a^(2^m - 1) = 1
    assert np.array_equal(F.mul(a, F.ones(())), a)  # broadcasting a single element
    assert not F.mul(a, F.zeros(())).any()
    assert np.array_equal(F.mul_fixed(F.mul_table(c[7]), a), F.mul(a, c[7]))
    # 2-D batch shapes are preserved
    assert F.mul(a.reshape(40, 50, F.w), b.reshape(40, 50, F.w)).shape == (40, 50, F.w)


def test_soft_and_hardware_clmul_agree() -> None:
    from numba import njit

    @njit
    def both(xs, ys):  # type: ignore[no-untyped-def]
        bad = 0
        for i in range(xs.shape[0]):
            l1, h1 = C.clmul64_sw(xs[i], ys[i])
            l2, h2 = C.clmul64(xs[i], ys[i])
            if l1 != l2 or h1 != h2:
                bad += 1
        return bad

    rng = np.random.default_rng(7)
    xs = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    ys = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    xs[:2] = [0, 2**64 - 1]
    ys[:2] = [2**64 - 1, 2**64 - 1]
    assert both(xs, ys) == 0
    # and against a Python reference on a few
    for x, y in zip(xs[:20], ys[:20]):
        r, xx, yy = 0, int(x), int(y)
        while yy:
            if yy & 1:
                r ^= xx
            xx <<= 1
            yy >>= 1
        lo, hi = C.clmul64_sw(x, y)
        assert int(lo) | (int(hi) << 64) == r


@pytest.mark.slow
def test_forced_software_mode_matches_galois() -> None:
    code = (
        "import galois; from dpspark.gf import GF2m, modulus_string, CLMUL_HARDWARE\n"
        "assert not CLMUL_HARDWARE\n"
        "F = GF2m(128); G = galois.GF(2**128, irreducible_poly=modulus_string(128), verify=False)\n"
        "a = [3**70 % 2**128, 5**50 % 2**128]; b = [7**40 % 2**128, 2**127 + 1]\n"
        "assert F.to_int(F.mul(F.from_int(a), F.from_int(b))) == [int(v) for v in G(a) * G(b)]\n"
    )
    env = dict(os.environ, DPSPARK_GF_SOFT_CLMUL="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=600)


@pytest.mark.parametrize("m", MS)
def test_int_and_bytes_round_trip(m: int) -> None:
    rng = np.random.default_rng(200 + m)
    F = GF2m(m)
    ints = rand_ints(rng, m, 50) + [0, 1, (1 << m) - 1, 1 << (m - 1)]
    a = F.from_int(ints)
    assert a.shape == (len(ints), F.w) and a.dtype == np.uint64
    assert F.to_int(a) == ints
    assert F.to_int(F.from_int(ints[0])) == ints[0]
    # word order: word 0 holds bits 0..63
    if F.w > 1:
        assert F.from_int(1 << 64 | 5).tolist() == [5, 1] + [0] * (F.w - 2)
    assert F.from_int((1 << m) - 2).tolist() == [2**64 - 2] + [2**64 - 1] * (F.w - 1)
    bs = F.to_bytes(a)
    assert bs == [v.to_bytes(m // 8, "big") for v in ints]
    assert np.array_equal(F.from_bytes(bs), a)
    assert np.array_equal(F.from_bytes(bs[0]), a[0])
    assert F.to_bytes(a[0]) == bs[0]


def test_random_bits_uses_rng_source() -> None:
    F = GF2m(128)
    x = F.from_random_bits(SeededRandom(5), 10)
    y = F.from_random_bits(SeededRandom(5), 10)
    assert x.shape == (10, 2) and np.array_equal(x, y)
    v = SeededRandom(5).bits(10 * 128)
    assert F.to_int(x) == [(v >> (128 * i)) & ((1 << 128) - 1) for i in range(10)]


def test_error_paths() -> None:
    for bad in (63, 0, 32, 129, 512):
        with pytest.raises(ValueError, match="unsupported field degree"):
            GF2m(bad)
    with pytest.raises(TypeError):
        GF2m(128.0)  # type: ignore[arg-type]
    F = GF2m(128)
    assert GF2m(128) is F
    with pytest.raises(TypeError, match="uint64"):
        F.mul(np.zeros((3, 2), np.int64), F.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 2\)"):
        F.mul(np.zeros((3, 4), np.uint64), F.zeros(3))
    with pytest.raises(TypeError):
        F.add([1, 2], F.zeros(()))  # type: ignore[arg-type]
    with pytest.raises(ZeroDivisionError):
        F.inv(F.from_int([3, 0, 5]))
    with pytest.raises(ValueError, match="out of range"):
        F.from_int(1 << 128)
    with pytest.raises(ValueError, match="out of range"):
        F.from_int(-1)
    with pytest.raises(ValueError, match="16 bytes"):
        F.from_bytes(b"\x00" * 15)
    with pytest.raises(ValueError):
        F.mul_table(F.zeros(2))
