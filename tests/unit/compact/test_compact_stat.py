"""Statistical per-query accuracy of CompactHistogram at realistic sizes (n = 1000, m = 64/128).

Each release has |S| = 100 non-zero bins and is read at 800 empty keys: given
the constraints at S, p's values at <= l - |S| further points are independent
and uniform, so those 800 reads are iid G(U0). Over R releases this gives iid
samples. Each check is a Hoeffding bound |freq - p| <= sqrt(ln(2/alpha)/(2N))
with alpha = 1e-7 per check, at most 10 checks per call: false alarm <= 1e-6.

The one-element-short preimage (mutant 4, ``ShortZeroPreimage``) changes g by
2^-m, far below any sample size; it is caught exactly in
test_compact_samplers.py (tiling) and test_compact_exhaustive.py (privacy).
Here a sampler that reads empty bins one too high (``ShiftedUp``) is caught.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from tests.unit.compact.test_compact_samplers import ShiftedUp

from dpspark.mechanisms.compact import CompactRelease, compact_histogram, compact_mechanism
from dpspark.rng import SeededRandom

ALPHA = 1e-7  # per check; <= 10 checks per call


def slack(n_samples: int) -> float:
    return math.sqrt(math.log(2 / ALPHA) / (2 * n_samples))  # report


def releases(n: int, universe: int, count: int, seed: int) -> tuple[list[CompactRelease], dict[int, int], list[int]]:
    mech = compact_mechanism(n, universe, "1", "1/20")
    gen = np.random.default_rng(seed)
    keys = sorted({int(x) for x in gen.integers(0, universe // 2, 100)})
    data = {k: 1 + (i % 9) for i, k in enumerate(keys)}
    assert sum(data.values()) <= n
    empties = [universe // 2 + int(x) for x in gen.choice(universe // 4, 800, replace=False)]
    out = [compact_histogram(data, universe, n, mech, SeededRandom(seed * 1000 + i), epsilon2="1/10") for i in range(count)]
    return out, data, empties


def failures(rels: list[CompactRelease], data: dict[int, int], empties: list[int]) -> list[str]:
    """Checks that fail: empty-bin CDF at 4 points, empty and non-empty per-query tails."""
    r0 = rels[0]
    a = r0.accuracy.a_per_query
    beta = float(r0.accuracy.beta_per_query)  # report
    empty_vals = np.concatenate([np.array(r.lookup(empties)) for r in rels])
    keys = sorted(data)
    nz_vals = np.concatenate([np.array(r.lookup(keys)) - np.array([data[k] for k in keys]) for r in rels])
    bad = []
    s_e, s_n = slack(empty_vals.size), slack(nz_vals.size)
    g = r0.sampler
    for v in (0, 1, 2, a):
        exact = g.cdf(v) / g.d0  # report
        if abs(float(np.mean(empty_vals <= v)) - exact) > s_e:  # report
            bad.append(f"empty-bin CDF at {v}")
    if float(np.mean(empty_vals > a)) > beta + s_e:  # report
        bad.append("empty-bin tail")
    if float(np.mean(np.abs(nz_vals) > a)) > beta + s_n:  # report
        bad.append("non-empty tail")
    return bad


@pytest.mark.parametrize("m_universe", [(64, 2**20), (128, 2**64)])
def test_per_query_accuracy(m_universe: tuple[int, int]) -> None:
    m, universe = m_universe
    rels, data, empties = releases(1000, universe, 8, seed=m)
    assert rels[0].m == m
    assert rels[0].accuracy.beta_per_query == Fraction(1, 20)
    # the exact empty-bin tail is itself within beta (stochastic dominance)
    g = rels[0].sampler
    assert (g.d0 - g.cdf(rels[0].accuracy.a_per_query)) * 20 <= g.d0
    assert failures(rels, data, empties) == []
    mutant = ShiftedUp(rels[0].mechanism, m)
    broken = [dataclasses.replace(r, sampler=mutant) for r in rels]
    assert "empty-bin CDF at 0" in failures(broken, data, empties)
