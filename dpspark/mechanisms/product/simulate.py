"""Count-level simulation of the aggregate oracle for accuracy tests and benchmarks (never for a release).

Data drawn i.i.d. from a product distribution P and hashed uniformly into B batches give, for a slice of
k batches, M ~ Binomial(n, k/B) units and, given M, independent c_j ~ Binomial(M, p_j) per coordinate
(oriented by the query's flips). Truncation is ignored: a record exceeds a ceiling only w.p. <= e^{-L},
which the plans count in their failure bounds. numpy's generator here simulates *data*, not noise.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpspark.mechanisms.product.rounds import RoundQuery


class SimulatedCounts:
    """The aggregate oracle of n fresh rows from the product distribution with biases ``p`` (floats, # report)."""

    def __init__(self, p: Sequence[float], n: int, gen: np.random.Generator) -> None:  # report: simulated data
        self.p = np.asarray(p, dtype=float)  # report: simulated data only
        self.n = n
        self.gen = gen

    def __call__(self, query: RoundQuery) -> list[int]:
        share = (query.batch_hi - query.batch_lo) / query.batches  # report
        size = int(self.gen.binomial(self.n, share))
        p = self.p[list(query.active)]
        p = np.where(np.asarray(query.flip, dtype=bool), 1.0 - p, p)  # report
        return [int(v) for v in self.gen.binomial(size, p)]


def product_rows(p: Sequence[float], n: int, gen: np.random.Generator) -> np.ndarray:  # report: simulated data
    """n rows (int8) drawn from the product distribution with biases ``p`` (simulated data)."""
    return (gen.random((n, len(p))) < np.asarray(p)[None, :]).astype(np.int8)  # report
