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
    coeffs = field.check(coeffs, "coeffs")
    pts = points_of_indexes(field, idx)
    if len(idx) == 1:
        vals = horner(field, coeffs, pts[0]).reshape(1, field.w)
    elif len(idx) >= MULTIPOINT_MIN and 4 * len(idx) >= coeffs.shape[0]:
        vals = multipoint_eval(field, coeffs, pts)
    else:
        vals = horner_many(field, coeffs, pts)
    ints = field.to_int(vals)
    assert isinstance(ints, list)
    return [v + 1 for v in ints]


def lookup(field: GF2m, coeffs: np.ndarray, sampler: EmptyBinSampler, indexes: Sequence[int]) -> list[int]:
    """The released counts h(x) = G(iota(p(phi(x)))) for each 0-based index x."""
    return [sampler.sample(u) for u in evaluate(field, coeffs, indexes)]
