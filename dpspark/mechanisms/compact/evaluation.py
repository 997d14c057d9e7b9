"""Lookups in a compact histogram: h(x) = G(iota(p(phi(x)))).

Evaluation paths (exact, dpspark.gf): one key uses ``horner``; a batch uses
``horner_many`` (aggregated-reduction Horner, a few keys per pass over the
coefficients) unless :func:`use_multipoint` predicts the subproduct-tree
``multipoint_eval`` to be cheaper. Both paths give identical values; only the
time differs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpspark.mechanisms.compact.construct import points_of_indexes
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.gf import GF2m, horner, horner_many, multipoint_eval
from dpspark.gf.warmup import ensure_compiled

#: Batches of fewer keys always use Horner (see :func:`use_multipoint` for larger ones).
MULTIPOINT_MIN = 4096


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
    ensure_compiled(compile_now=False)  # one progress line when numba's cache is cold
    if k == 1:
        return horner(field, coeffs, points[0]).reshape(1, field.w)
    if use_multipoint(k, coeffs.shape[0]):
        return multipoint_eval(field, coeffs, points)
    return horner_many(field, coeffs, points)


def lookup(field: GF2m, coeffs: np.ndarray, sampler: EmptyBinSampler, indexes: Sequence[int]) -> list[int]:
    """The released counts h(x) = G(iota(p(phi(x)))) for each 0-based index x."""
    return [sampler.sample(u) for u in evaluate(field, coeffs, indexes)]
