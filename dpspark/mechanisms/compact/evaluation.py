"""Lookups in a compact histogram: h(x) = G(iota(p(phi(x)))).

Evaluation paths (exact, dpspark.gf): a few keys (:func:`use_numpy`) use
:mod:`dpspark.gf.numpy_eval`, byte-window tables in numpy, so a lookup never
waits for numba to compile or even load (issue 35 §1); a batch uses
``horner_many`` (aggregated-reduction Horner, a few keys per pass over the
coefficients) unless :func:`use_multipoint` predicts the subproduct-tree
``multipoint_eval`` to be cheaper. Every path gives identical values (tests
compare them); only the time differs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from dpspark.gf import numpy_eval
from dpspark.gf.field import GF2m
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler

#: Batches of fewer keys always use Horner (see :func:`use_multipoint` for larger ones).
MULTIPOINT_MIN = 4096
#: Most keys of a batch evaluated by numpy_eval (each costs 2.5 ms at m = 128 even for a short polynomial).
NUMPY_MAX_KEYS = 8
#: Most point-coefficient pairs, times (m/64)^2, evaluated by numpy_eval: about 1.2 s of CPU at every m.
NUMPY_MAX_WORK = 1 << 24


def _numba_lookup_ready() -> bool:
    """Whether this process already holds the numba Horner kernels (compiled or loaded from the cache)."""
    module = sys.modules.get("dpspark.gf.horner_kernels")
    return module is not None and any(getattr(module, name).signatures
                                      for name in ("horner_agg", "horner_agg_vec") if hasattr(module, name))


def use_numpy(keys: int, ell: int, m: int = 128) -> bool:
    """Whether ``keys`` points on ``ell`` coefficients are evaluated without numba.

    numpy_eval's CPU cost per key is about 2.5 ms plus 0.3 us per coefficient at m = 128, both growing as
    (m/64)^2: at l = 10^5 + 1 it measured 13 ms (m = 64), 34 ms (m = 128) and 0.16 s (m = 256); at
    l = 10^6 + 1, 0.07, 0.25 and 1.3 s (process CPU). The numba kernels cost about 2 ns per key and
    coefficient, but importing numba and loading them from its cache costs about 1 s of CPU, and compiling
    them on a fresh install 20 s or more. So numpy takes one key, or a few keys of bounded work, unless
    this process has the numba kernels already. Either path gives the same values.
    """
    if _numba_lookup_ready():
        return False
    w = m // 64
    return keys == 1 or (keys <= NUMPY_MAX_KEYS and keys * ell * w * w <= NUMPY_MAX_WORK)


def use_multipoint(keys: int, ell: int) -> bool:
    """Whether a batch of ``keys`` points on a polynomial of ``ell`` coefficients goes to multipoint_eval.

    Integer cost model in units of 10^-10 CPU seconds at m = 128 on the 2-core
    bench machine (scripts/bench/compact.py), with L = bit length of ``keys``:
    Horner 21 * keys * l (about 2.1 ns per key and coefficient, fitted over
    l = 10^4..10^6, 64..10^5 keys); multipoint 3200 * L^2 * keys (tree and
    scaled remainder tree) + 6500 * L * l (reducing p modulo the root
    piecewise). The multipoint constants were 8000 and 13000 before the
    scaled remainder tree; they were rescaled to its measured 18.9 s CPU for
    10^5 keys at l = 10^6 (tree 1.7 s, reduction 5.6 s, rest the tree
    phases), which puts the crossover near 4000-8000 keys at l = 10^6.
    """
    if keys < MULTIPOINT_MIN:
        return False
    lg = keys.bit_length()
    return 3200 * lg * lg * keys + 6500 * lg * ell < 21 * keys * ell


def evaluate(field: GF2m, coeffs: np.ndarray, indexes: Sequence[int]) -> list[int]:
    """iota(p(phi(x))) = int(p(phi(x))) + 1 in [1, 2^m] for each 0-based index x."""
    idx = [int(i) for i in indexes]
    if any(i < 0 or i >> field.m for i in idx):
        raise ValueError(f"indexes must lie in [0, 2^{field.m})")
    if not idx:
        return []
    from dpspark.mechanisms.compact.construct import points_of_indexes  # the build's module: numba

    vals = evaluate_points(field, coeffs, points_of_indexes(field, idx))
    ints = field.to_int(vals)
    assert isinstance(ints, list)
    return [v + 1 for v in ints]


def evaluate_points(field: GF2m, coeffs: np.ndarray, points: np.ndarray) -> np.ndarray:
    """p(x) (shape (k, w)) for each row x of ``points`` (k, w): the evaluation-path switch above."""
    coeffs = field.check(coeffs, "coeffs")
    points = field.check(points, "points")
    k = points.shape[0]
    if k == 0:
        return field.zeros(0)
    if use_numpy(k, coeffs.shape[0], field.m):
        return numpy_eval.evaluate_many(field.m, coeffs, points)
    from dpspark.gf import horner_many, multipoint_eval
    from dpspark.gf.warmup import ensure_compiled

    ensure_compiled(compile_now=False)  # one progress line when numba's cache is cold
    if use_multipoint(k, coeffs.shape[0]):
        return multipoint_eval(field, coeffs, points)
    return horner_many(field, coeffs, points)


def lookup(field: GF2m, coeffs: np.ndarray, sampler: EmptyBinSampler, indexes: Sequence[int]) -> list[int]:
    """The released counts h(x) = G(iota(p(phi(x)))) for each 0-based index x."""
    return [sampler.sample(u) for u in evaluate(field, coeffs, indexes)]
