"""Count-level simulation of the aggregate oracle for accuracy tests and benchmarks (never for a release).

Data drawn i.i.d. from a product distribution P and hashed uniformly into B batches give, for a slice of
k batches, M ~ Binomial(n, k/B) units and, given M, independent c_j ~ Binomial(M, p_j) per coordinate
(oriented by the query's flips). Rounds that read the same slice read the *same* units: the simulation
keeps one draw per slice, so a learner's sequential rounds see one data set, as on real data. Truncation is
ignored: a record exceeds a ceiling only rarely, which the plans count in their bounds. numpy's generator
here simulates *data*, not noise.
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
        self._slices: dict[tuple[int, int, int], tuple[int, np.ndarray]] = {}

    def _slice(self, lo: int, hi: int, batches: int) -> tuple[int, np.ndarray]:
        """(units, per-coordinate counts) of one slice, drawn once; disjoint slices are independent given n."""
        key = (lo, hi, batches)
        if key not in self._slices:
            share = (hi - lo) / batches  # report
            left = self.n - sum(m for m, _ in self._slices.values())
            taken = sum((h - l) / b for (l, h, b) in self._slices)  # report: share already drawn
            size = int(self.gen.binomial(left, min(1.0, share / max(1e-300, 1.0 - taken)))) if left else 0
            self._slices[key] = (size, self.gen.binomial(size, self.p))
        return self._slices[key]

    def __call__(self, query: RoundQuery) -> list[int]:
        size, counts = self._slice(query.batch_lo, query.batch_hi, query.batches)
        c = counts[list(query.active)]
        c = np.where(np.asarray(query.flip, dtype=bool), size - c, c)
        out = [int(v) for v in c]
        return out + [size] if query.count else out


def product_rows(p: Sequence[float], n: int, gen: np.random.Generator) -> np.ndarray:  # report: simulated data
    """n rows (int8) drawn from the product distribution with biases ``p`` (simulated data)."""
    return (gen.random((n, len(p))) < np.asarray(p)[None, :]).astype(np.int8)  # report
