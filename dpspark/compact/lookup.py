"""Lookups in a compact histogram: h(x) = G(iota(p(phi(x)))).

Evaluation paths (exact, dpspark.gf): one key uses ``horner``; a batch uses
``horner_many`` (one pass over the coefficients per block of keys) below
``MULTIPOINT_MIN`` keys and the subproduct-tree ``multipoint_eval`` from there
on, which is cheaper once the batch is comparable to l.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpspark.compact.construct import points_of_indexes
from dpspark.compact.samplers import EmptyBinSampler
from dpspark.gf import GF2m, horner, horner_many, multipoint_eval

#: From this many keys (and at least l/4 of them) on, batches use multipoint evaluation.
MULTIPOINT_MIN = 256


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
    if k == 1:
        return horner(field, coeffs, points[0]).reshape(1, field.w)
    if k >= MULTIPOINT_MIN and 4 * k >= coeffs.shape[0]:
        return multipoint_eval(field, coeffs, points)
    return horner_many(field, coeffs, points)


def lookup(field: GF2m, coeffs: np.ndarray, sampler: EmptyBinSampler, indexes: Sequence[int]) -> list[int]:
    """The released counts h(x) = G(iota(p(phi(x)))) for each 0-based index x."""
    return [sampler.sample(u) for u in evaluate(field, coeffs, indexes)]
