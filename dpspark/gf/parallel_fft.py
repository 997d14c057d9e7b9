"""Large additive FFTs (plain and transposed) on two threads: the two halves below the top level run concurrently.

Every transform of :mod:`dpspark.gf.additive_fft` and :mod:`dpspark.gf.transposed_fft`
is a top-level step, two independent transforms of the halves, and another
top-level step. From ``PARALLEL_LOG`` on, and when the pool has a spare thread
(not from inside a pool worker), the halves run on two threads. The steps and
their order within each half are unchanged, so the results are identical.
"""

from __future__ import annotations

import numpy as np

from dpspark.gf import additive_fft as AF
from dpspark.gf import transposed_fft as TF
from dpspark.gf.field import GF2m
from dpspark.gf.poly import _in_pool_worker, pool, threads

#: Transforms of at least 2^PARALLEL_LOG points split their halves over two threads.
PARALLEL_LOG = 15


def _split(t: int) -> bool:
    return t >= PARALLEL_LOG and threads() > 1 and not _in_pool_worker()


def _halves(fn, f: np.ndarray, t: int, *args: object) -> None:  # type: ignore[no-untyped-def]
    half = 1 << (t - 1)
    fut = pool().submit(fn, f, half, t - 1, *args)
    fn(f, 0, t - 1, *args)
    fut.result()


def forward(field: GF2m, coeffs: np.ndarray, t: int) -> np.ndarray:
    """:func:`dpspark.gf.additive_fft.forward`, on two threads for large t."""
    if not _split(t) or coeffs.shape[0] > (1 << t):
        return AF.forward(field, coeffs, t)
    tab = AF.tables(field, t)
    f = field.zeros(1 << t)
    f[: coeffs.shape[0]] = coeffs
    AF.top_step(f, t, tab.tw, tab.tw_off, tab.pts, tab.pts_off, field.taps, 0)
    _halves(AF.afft_forward_block, f, t, tab.tw, tab.tw_off, tab.pts, tab.pts_off, field.taps, -1)
    AF.top_step(f, t, tab.tw, tab.tw_off, tab.pts, tab.pts_off, field.taps, 1)
    return f


def inverse(field: GF2m, values: np.ndarray, t: int) -> np.ndarray:
    """:func:`dpspark.gf.additive_fft.inverse`, on two threads for large t."""
    if not _split(t) or values.shape[0] != (1 << t):
        return AF.inverse(field, values, t)
    tab = AF.tables(field, t)
    f = np.array(values, dtype=np.uint64, copy=True)
    AF.top_step(f, t, tab.itw, tab.tw_off, tab.pts, tab.pts_off, field.taps, 2)
    _halves(AF.afft_inverse_block, f, t, tab.itw, tab.tw_off, tab.pts, tab.pts_off, field.taps, -1)
    AF.top_step(f, t, tab.itw, tab.tw_off, tab.pts, tab.pts_off, field.taps, 3)
    return f


def transposed(field: GF2m, y: np.ndarray, t: int, forward_t: bool) -> np.ndarray:
    """E^T y (``forward_t``) or E^-T y, a new array; on two threads for large t."""
    if not _split(t) or y.shape[0] != (1 << t):
        return TF.forward_t(field, y, t) if forward_t else TF.inverse_t(field, y, t)
    tab = AF.tables(field, t)
    f = np.array(y, dtype=np.uint64, copy=True)
    TF.top_step(f, t, tab.pts, tab.pts_off, field.taps, 0 if forward_t else 2)
    _halves(TF.walk_block, f, t, tab.pts, tab.pts_off, field.taps, forward_t, -1)
    TF.top_step(f, t, tab.pts, tab.pts_off, field.taps, 1 if forward_t else 3)
    return f
