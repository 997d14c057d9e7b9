"""The transform-domain fast paths of dpspark.gf agree exactly with the reference algorithms.

Sizes are just above the FFT threshold so the cached child spectra, the scaled remainder tree's
shared transforms, the size-2p Newton step and the piecewise reduction with shared transforms all run,
on full and on ragged (odd-sized) nodes.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpspark.gf import GF2m, horner_many, interpolate, poly_derivative
from dpspark.gf import poly as P
from dpspark.gf import warmup as W
from dpspark.gf.subproduct import SubproductTree

N = 2 * P.FFT_THRESHOLD + 77


def _points(F: GF2m, n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).integers(0, 2**64, (n, F.w), dtype=np.uint64)
    x[:, 0] = np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(1)  # distinct
    return x


@pytest.mark.parametrize("length", [N, N - 5, 3 * N + 5])
def test_scaled_remainder_tree_matches_division_tree(length: int) -> None:
    F = GF2m(128)
    x = _points(F, N, 1)
    f = np.random.default_rng(length).integers(0, 2**64, (length, F.w), dtype=np.uint64)
    tree = SubproductTree(F, x)
    assert tree.spectra  # the cached-transform path is exercised
    assert np.array_equal(tree.evaluate(f), tree.evaluate_by_division(f))


def test_derivative_weights_and_interpolation_round_trip() -> None:
    F = GF2m(128)
    x = _points(F, N, 2)
    y = np.random.default_rng(3).integers(0, 2**64, (N, F.w), dtype=np.uint64)
    tree = SubproductTree(F, x)
    dm = poly_derivative(F, tree.root())
    assert np.array_equal(tree.evaluate(dm), horner_many(F, dm, x))
    f = interpolate(F, x, y)
    assert np.array_equal(horner_many(F, f, x), y)


@pytest.mark.parametrize("k", [P.FFT_THRESHOLD * 2, P.FFT_THRESHOLD * 2 + 1, 3 * P.FFT_THRESHOLD + 7])
def test_newton_fft_step_matches_product_newton(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    F = GF2m(128)
    g = np.random.default_rng(k).integers(0, 2**64, (k + 3, F.w), dtype=np.uint64)
    g[0] = 0
    g[0, 0] = 1
    fast = P.poly_inv_series(F, g, k)
    prod = P.poly_mul_low(F, g[:k], fast, k)
    assert prod[0, 0] == 1 and not prod[0, 1:].any() and not prod[1:].any()
    monkeypatch.setattr(P, "FFT_THRESHOLD", 1 << 40)  # reference: every step by plain products
    assert np.array_equal(P.poly_inv_series(F, g, k), fast)


def test_warmup_says_one_line_when_the_cache_is_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr(W, "_DONE", False)
    monkeypatch.setattr(W, "cache_missing", lambda names=None: True)
    monkeypatch.setattr(W, "compile_kernels", lambda names: (0.0, 0.0, 1))  # a stubbed compile: no kernels, no helper
    monkeypatch.delenv("DPSPARK_GF_SKIP_WARMUP", raising=False)
    W.ensure_compiled(lines.append)
    assert lines and "compiling" in lines[0]
    W.ensure_compiled(lines.append)  # once per process
    assert len(lines) <= 2
    lines.clear()
    monkeypatch.setattr(W, "_DONE", False)
    monkeypatch.setattr(W, "cache_missing", lambda names=None: False)
    W.ensure_compiled(lines.append)
    assert lines == []


def test_build_kernels_are_cached_after_a_build() -> None:
    W.compile_build()
    from dpspark.gf.clmul import CACHE

    if CACHE:
        assert not W.cache_missing(W.BUILD_KERNELS)
