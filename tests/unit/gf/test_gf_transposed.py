"""Transposed additive FFTs, middle products and the fast scaled remainder tree: identical to the references."""

from __future__ import annotations

import numpy as np
import pytest

from dpspark.gf import MODULI, GF2m
from dpspark.gf import additive_fft as A
from dpspark.gf import polymul_kernels as PK
from dpspark.gf import subproduct as SP
from dpspark.gf import transposed_fft as T
from dpspark.gf.poly import FFT_THRESHOLD, poly_mul, poly_mul_schoolbook

MS = sorted(MODULI)


def rand(rng: np.random.Generator, F: GF2m, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, (n, F.w), dtype=np.uint64)


def matvec_t(F: GF2m, cols: list[np.ndarray], y: np.ndarray) -> np.ndarray:
    """(A^T y)[i] = sum_j A[j, i] y[j], with cols[i] = A e_i."""
    out = F.zeros(len(cols))
    for i, col in enumerate(cols):
        prods = F.mul(col, y)
        out[i] = np.bitwise_xor.reduce(prods, axis=0)
    return out


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("t", [1, 2, 3, 5])
def test_transposed_transforms_are_the_matrix_transposes(m: int, t: int) -> None:
    F = GF2m(m)
    n = 1 << t
    eye = [np.ascontiguousarray(F.ones(n) * 0) for _ in range(n)]
    for i, e in enumerate(eye):
        e[i, 0] = 1
    fwd_cols = [A.forward(F, e, t) for e in eye]
    inv_cols = [A.inverse(F, e, t) for e in eye]
    rng = np.random.default_rng(1000 * m + t)
    for _ in range(3):
        y = rand(rng, F, n)
        assert np.array_equal(T.forward_t(F, y, t), matvec_t(F, fwd_cols, y))
        assert np.array_equal(T.inverse_t(F, y, t), matvec_t(F, inv_cols, y))


@pytest.mark.parametrize("m", MS)
def test_middle_product_matches_schoolbook(m: int) -> None:
    F = GF2m(m)
    rng = np.random.default_rng(m)
    for s in (1, 2, 4, 8, 32, 256):
        for lb in sorted({1, s // 2 + 1, s}):
            b, y = rand(rng, F, lb), rand(rng, F, 2 * s)
            assert np.array_equal(T.middle_product(F, b, y), poly_mul_schoolbook(F, b, y)[s : 2 * s]), (s, lb)


def test_middle_product_large_and_bad_shapes() -> None:
    F = GF2m(128)
    rng = np.random.default_rng(7)
    s = 4096
    b, y = rand(rng, F, s), rand(rng, F, 2 * s)
    assert np.array_equal(T.middle_product(F, b, y), poly_mul(F, b, y)[s : 2 * s])
    with pytest.raises(ValueError):
        T.middle_product(F, b[:3], y[:6])  # 2s = 6: s not a power of two
    with pytest.raises(ValueError):
        T.middle_product(F, b[:5], y[:8])  # b longer than s


def test_middle_product_from_unequal_parts() -> None:
    """(B * Y)[sb : sb + c] for sb != c, with Y reversed and cut to the transform size (the partial parent)."""
    F = GF2m(64)
    rng = np.random.default_rng(11)
    for sb, c in ((5, 3), (3, 5), (9, 7), (16, 1), (1, 16)):
        d = sb + c
        t = (d - 2).bit_length()
        b, y = rand(rng, F, sb), rand(rng, F, d)
        yr = F.zeros(1 << t)
        k = min(d, 1 << t)
        yr[:k] = y[::-1][:k]
        got = T.middle_product_from(F, T.inverse_t(F, yr, t), A.forward(F, b, t), t, c)
        assert np.array_equal(got, poly_mul_schoolbook(F, b, y)[sb:d]), (sb, c)


@pytest.mark.parametrize("m", MS)
def test_karatsuba_middle_product_kernel(m: int) -> None:
    F = GF2m(m)
    rng = np.random.default_rng(3 * m)
    for n in (1, 2, 3, 8, 12, 64, 100):
        a, c = rand(rng, F, n), rand(rng, F, 2 * n - 1)
        ref = np.zeros((n, 2 * F.w), np.uint64)
        PK.middle_school_unreduced(a, c, ref)
        got = np.zeros((n, 2 * F.w), np.uint64)
        PK.middle_karatsuba_unreduced(a, c, got, 4)
        assert np.array_equal(got, ref), n
        red = F.zeros(n)
        PK.reduce_rows(got, F.taps, red)
        assert np.array_equal(red, poly_mul_schoolbook(F, a, c)[n - 1 : 2 * n - 1]), n


def both_paths(F: GF2m, pts: np.ndarray, f: np.ndarray, c: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> list[list[np.ndarray]]:
    out = []
    for fast in (False, True):
        monkeypatch.setattr(SP, "FAST_MIDDLE", fast)
        tree = SP.SubproductTree(F, pts)
        out.append([tree.root(), tree.evaluate(f), tree.linear_combination(c)])
    return out


@pytest.mark.parametrize("m", [64, 128])
@pytest.mark.parametrize("n", [1, 2, 3, 33, 100, 1000, 2 * FFT_THRESHOLD + 57])
def test_fast_tree_paths_are_identical(m: int, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    F = GF2m(m)
    rng = np.random.default_rng(m + n)
    pts, f, c = rand(rng, F, n), rand(rng, F, n + 5), rand(rng, F, n)
    old, new = both_paths(F, pts, f, c, monkeypatch)
    for a, b in zip(old, new):
        assert np.array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("n", [3 * FFT_THRESHOLD + 8, 6 * FFT_THRESHOLD + 1, 8 * FFT_THRESHOLD])
def test_fast_tree_paths_are_identical_with_partial_parents(m: int, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizes whose last parent has two large unequal children (the cached partial spectra) and a power of two."""
    F = GF2m(m)
    rng = np.random.default_rng(7 * m + n)
    pts, f, c = rand(rng, F, n), rand(rng, F, 2 * n + 3), rand(rng, F, n)
    old, new = both_paths(F, pts, f, c, monkeypatch)
    for a, b in zip(old, new):
        assert np.array_equal(a, b)
    monkeypatch.setattr(SP, "FAST_MIDDLE", True)
    if n % (2 * FFT_THRESHOLD) > FFT_THRESHOLD:
        assert SP.SubproductTree(F, pts).partial  # the partial-parent path really ran


@pytest.mark.parametrize("m", [64, 128, 192])
def test_two_thread_transforms_are_identical(m: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpspark.gf import parallel_fft as PF

    monkeypatch.setattr(PF, "PARALLEL_LOG", 6)
    monkeypatch.setenv("DPSPARK_GF_THREADS", "2")
    F = GF2m(m)
    rng = np.random.default_rng(5 * m)
    for t in (6, 7, 10):
        a = rand(rng, F, 1 << t)
        assert np.array_equal(PF.forward(F, a, t), A.forward(F, a, t))
        assert np.array_equal(PF.forward(F, a[:40], t), A.forward(F, a[:40], t))
        assert np.array_equal(PF.inverse(F, a, t), A.inverse(F, a, t))
        assert np.array_equal(PF.transposed(F, a, t, True), T.forward_t(F, a, t))
        assert np.array_equal(PF.transposed(F, a, t, False), T.inverse_t(F, a, t))


def test_the_two_thread_top_steps_compile_no_kernel_of_their_own() -> None:
    """The top-level steps of the two-thread transforms run inside the block kernels (their ``only`` argument):
    on main each was a numba kernel of its own, about 100 CPU s of compiling that no warmup covered (issue 35)."""
    from numba.core.registry import CPUDispatcher

    from dpspark.gf import additive_fft as AF
    from dpspark.gf import transposed_fft as TF

    assert not isinstance(AF.top_step, CPUDispatcher) and not isinstance(TF.top_step, CPUDispatcher)
    F = GF2m(64)
    rng = np.random.default_rng(11)
    a = rand(rng, F, 1 << 4)
    tab = AF.tables(F, 4)
    whole, steps = a.copy(), a.copy()
    AF.afft_forward_block(whole, 0, 4, tab.tw, tab.tw_off, tab.pts, tab.pts_off, F.taps, -1)
    AF.top_step(steps, 4, tab.tw, tab.tw_off, tab.pts, tab.pts_off, F.taps, 0)
    for blk in (0, 8):
        AF.afft_forward_block(steps, blk, 3, tab.tw, tab.tw_off, tab.pts, tab.pts_off, F.taps, -1)
    AF.top_step(steps, 4, tab.tw, tab.tw_off, tab.pts, tab.pts_off, F.taps, 1)
    assert np.array_equal(whole, steps) and not np.array_equal(whole, a)
