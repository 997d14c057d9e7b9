"""Subproduct tree: root products, multipoint evaluation and interpolation round trips."""

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


def distinct(rng: np.random.Generator, F: GF2m, n: int) -> np.ndarray:
    x = rand(rng, F, n)
    x[:, 0] = np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(1)  # distinct low words
    return x


@pytest.mark.parametrize("m", MS)
def test_small_interpolation_matches_galois(m: int) -> None:
    rng = np.random.default_rng(m)
    F, G = GF2m(m), gal(m)
    x, y = distinct(rng, F, 6), rand(rng, F, 6)
    f = gf.interpolate(F, x, y)
    lag = galois.lagrange_poly(G(F.to_int(x)), G(F.to_int(y)))
    expect = F.zeros(6)
    c = [int(v) for v in lag.coeffs[::-1]]
    expect[: len(c)] = F.from_int(c)
    assert np.array_equal(f, expect)
    root = gf.vanishing_poly(F, x)
    prod = galois.Poly([1], field=G)
    for xi in F.to_int(x):
        prod *= galois.Poly([1, xi], field=G)
    assert F.to_int(root) == [int(v) for v in prod.coeffs[::-1]]


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 32, 33, 64, 100, 257, 1000])
def test_interpolate_then_evaluate(m: int, n: int) -> None:
    rng = np.random.default_rng(1000 * m + n)
    F = GF2m(m)
    x, y = distinct(rng, F, n), rand(rng, F, n)
    f = gf.interpolate(F, x, y)
    assert f.shape == (n, F.w)
    assert np.array_equal(gf.horner_many(F, f, x), y)
    assert np.array_equal(gf.multipoint_eval(F, f, x), y)


def test_interpolate_large_round_trip() -> None:
    rng = np.random.default_rng(9)
    F = GF2m(128)
    n = 6000  # exercises the threaded per-node levels and the Newton divisions
    x, y = distinct(rng, F, n), rand(rng, F, n)
    f = gf.interpolate(F, x, y)
    sample = np.arange(0, n, 97)
    assert np.array_equal(gf.horner_many(F, f, x[sample]), y[sample])
    assert np.array_equal(gf.multipoint_eval(F, f, x), y)


@pytest.mark.parametrize("m", MS)
def test_multipoint_agrees_with_horner(m: int) -> None:
    rng = np.random.default_rng(50 + m)
    F = GF2m(m)
    x = rand(rng, F, 700)
    for length in (1, 50, 700, 1900):
        f = rand(rng, F, length)
        assert np.array_equal(gf.multipoint_eval(F, f, x), gf.horner_many(F, f, x)), length
    # many more coefficients than points: the root division runs piecewise (uneven last piece)
    f = rand(rng, F, 40 * 97 + 13)
    assert np.array_equal(gf.multipoint_eval(F, f, x[:97]), gf.horner_many(F, f, x[:97], "generic"))


@pytest.mark.parametrize("m", MS)
def test_vanishing_poly(m: int) -> None:
    rng = np.random.default_rng(70 + m)
    F = GF2m(m)
    x = rand(rng, F, 300)
    v = gf.vanishing_poly(F, x)
    assert v.shape == (301, F.w)
    assert np.array_equal(v[-1], F.ones(()))
    assert not gf.horner_many(F, v, x).any()
    other = rand(rng, F, 20)
    assert gf.horner_many(F, v, other).any(axis=1).all()  # random points are not roots (prob ~ 300*2^-m)
    assert np.array_equal(gf.vanishing_poly(F, F.zeros(0)), F.ones(1))
    # vanishing poly of two halves multiplies out
    v1, v2 = gf.vanishing_poly(F, x[:120]), gf.vanishing_poly(F, x[120:])
    assert np.array_equal(gf.poly_mul(F, v1, v2), v)


def test_interpolation_error_paths() -> None:
    F = GF2m(128)
    rng = np.random.default_rng(1)
    x = distinct(rng, F, 50)
    x[30] = x[7]
    with pytest.raises(ValueError, match="distinct"):
        gf.interpolate(F, x, rand(rng, F, 50))
    with pytest.raises(ValueError, match="same length"):
        gf.interpolate(F, x[:10], rand(rng, F, 9))
    with pytest.raises(ValueError):
        gf.interpolate(F, np.zeros((4, 3), np.uint64), np.zeros((4, 3), np.uint64))
    with pytest.raises(ValueError):
        gf.SubproductTree(F, F.zeros(0))
    assert gf.interpolate(F, F.zeros(0), F.zeros(0)).shape == (0, 2)


def test_compact_lookup_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """dpspark.mechanisms.compact.evaluation.evaluate_points gives the same values whichever path its dispatch picks."""
    import importlib

    L = importlib.import_module("dpspark.mechanisms.compact.evaluation")
    real = L.use_multipoint
    assert not real(L.MULTIPOINT_MIN - 1, 10**9)
    assert real(10**5, 10**6) and not real(10**4, 10**4)
    rng = np.random.default_rng(91)
    F = GF2m(128)
    c = rand(rng, F, 3000)
    c.setflags(write=False)
    x = rand(rng, F, 300)
    monkeypatch.setattr(L, "use_multipoint", lambda k, ell: True)
    via_tree = L.evaluate_points(F, c, x)
    monkeypatch.setattr(L, "use_multipoint", lambda k, ell: False)
    via_horner = L.evaluate_points(F, c, x)
    assert np.array_equal(via_tree, via_horner)
    assert np.array_equal(via_horner, gf.horner_many(F, c, x, "generic"))
