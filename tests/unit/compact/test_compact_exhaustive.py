"""Exhaustive exact privacy check of CompactHistogram over GF(2^6) (the issue's acceptance test).

For every dataset D over a tiny universe (total <= n units) the exact law of the
released polynomial p is enumerated: every u in [1, d] of the counting
mechanism (through the production M.sample), every target u_x in the production
sampler's preimage interval, and every R of degree <= n - |S| (p = L_S + Z_S R,
computed with galois, which is exact at m = 6). Checks, with exact integers:

* every polynomial of degree <= n is produced by exactly one (targets, R) pair
  (the bijection behind "no filler points");
* the product formula Pr_D[p] = d0^-l prod_s m_{c_s}(v_s)/g(v_s), with v_s read
  back from p by evaluation and G;
* for every add/remove neighbour pair (including a unit creating a new bin),
  Pr_D[p] <= (p/q) * e^{sampler_epsilon} Pr_D'[p] for every p, both ways;
* the broken sampler of mutant 4 violates it.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from functools import cache
from math import lcm

import galois
import numpy as np
import pytest
from tests.unit.compact.test_compact_samplers import ShortZeroPreimage

from dpspark.mechanisms.compact import BlockSampler, RoundedCdfSampler
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.noise import FastSample, GeoSample
from dpspark.exact import exp_lower_bound

M_BITS = 6
D0 = 1 << M_BITS
GF = galois.GF(2**M_BITS, compile="python-calculate")  # no numba JIT warm-up (about 45 s)


def datasets(universe: int, n: int) -> list[tuple[int, ...]]:
    return [c for c in itertools.product(range(n + 1), repeat=universe) if sum(c) <= n]


@cache
def basis(support: tuple[int, ...], ell: int) -> tuple[np.ndarray, np.ndarray]:
    """Lagrange basis polys of phi(S) (rows, ell coefficients ascending) and Z_S (ell coefficients)."""
    xs = GF(list(support))
    rows = []
    for i in range(len(support)):
        ys = GF([1 if j == i else 0 for j in range(len(support))])
        c = galois.lagrange_poly(xs, ys).coeffs[::-1]
        row = GF.Zeros(ell)
        row[: len(c)] = c
        rows.append(row)
    z = galois.Poly.Roots(xs).coeffs[::-1] if support else GF([1])
    zrow = GF.Zeros(ell)
    zrow[: len(z)] = z
    return (np.array(rows) if rows else np.zeros((0, ell), dtype=int)), np.array(zrow)


def target_weights(sampler: EmptyBinSampler, c: int) -> list[Fraction]:
    """Pr[u_x = u] for u in [1, d0] given true count c: every u of M, then uniform on the preimage."""
    mech = sampler.mechanism
    hits = [0] * (sampler.n + 1)
    for u in range(1, mech.d + 1):
        hits[mech.sample(c, u)] += 1
    w = [Fraction(0)] * (D0 + 1)
    for v in range(sampler.n + 1):
        lo, hi = sampler.preimage(v)
        for u in range(lo, hi + 1):
            w[u] += Fraction(hits[v], mech.d * (hi - lo + 1))
    return w[1:]


def law(sampler: EmptyBinSampler, counts: tuple[int, ...], ell: int | None = None) -> tuple[np.ndarray, int]:
    """Exact law of p as (numerators indexed by sum_i coeff_i 64^i, common denominator); l = n + 1 by default."""
    n = sampler.n
    ell = n + 1 if ell is None else ell
    support = tuple(x for x, c in enumerate(counts) if c > 0)
    k = len(support)
    rows, zrow = basis(support, ell)
    weights = [target_weights(sampler, counts[x]) for x in support]
    den_w = lcm(*[w.denominator for ws in weights for w in ws]) if weights else 1
    num_w = [np.array([int(w * den_w) for w in ws], dtype=object) for ws in weights]
    # enumerate every targets tuple (field values u - 1) and every R
    grids = np.array(list(itertools.product(range(D0), repeat=k + (ell - k))), dtype=np.int64).reshape(-1, ell)
    ys, rs = GF(grids[:, :k]), GF(grids[:, k:])
    coeffs = GF.Zeros((grids.shape[0], ell))
    for i in range(k):
        coeffs += ys[:, i : i + 1] * GF(rows[i]).reshape(1, ell)
    z = GF(zrow)
    for j in range(ell - k):  # + Z_S * R
        shifted = GF.Zeros((grids.shape[0], ell))
        shifted[:, j : j + k + 1] = rs[:, j : j + 1] * z[: k + 1].reshape(1, k + 1)
        coeffs += shifted
    idx = (coeffs.view(np.ndarray).astype(np.int64) * (D0 ** np.arange(ell))).sum(axis=1)
    assert np.unique(idx).size == D0**ell == idx.size  # each polynomial exactly once
    num = np.ones(grids.shape[0], dtype=object)
    for i in range(k):
        num = num * num_w[i][grids[:, i]]
    out = np.zeros(D0**ell, dtype=object)
    out[idx] = num
    return out, den_w**k * D0 ** (ell - k)


def check_product_formula(sampler: EmptyBinSampler, counts: tuple[int, ...], pmf: np.ndarray, den: int) -> None:
    n, ell = sampler.n, sampler.n + 1
    mech = sampler.mechanism
    support = [x for x, c in enumerate(counts) if c > 0]
    allp = np.array(list(itertools.product(range(D0), repeat=ell)), dtype=np.int64)[:, ::-1]  # ascending coeffs
    idx = (allp * (D0 ** np.arange(ell))).sum(axis=1)
    g_of_u = np.array([sampler.sample(u) for u in range(1, D0 + 1)])
    formula_num = np.ones(allp.shape[0], dtype=object)
    formula_den = D0**ell
    for x in support:
        vals = GF.Zeros(allp.shape[0])
        for j in reversed(range(ell)):  # Horner at phi(x) = x
            vals = vals * GF(x) + GF(allp[:, j])
        v = g_of_u[vals.view(np.ndarray).astype(np.int64)]
        pm = mech.pmf(counts[x])
        g = [Fraction(sampler.scaled_pmf(w), D0) for w in range(n + 1)]
        f = [pm[w] / g[w] for w in range(n + 1)]
        common = lcm(*[q.denominator for q in f])
        table = np.array([int(q * common) for q in f], dtype=object)
        formula_num = formula_num * table[v]
        formula_den *= common
    assert np.all(pmf[idx] * formula_den == formula_num * den)


def max_violation(sampler: EmptyBinSampler, universe: int, check_formula: bool) -> list[str]:
    """Neighbour pairs (add one unit) whose exact ratio exceeds (p/q) e^{sampler_epsilon}; [] if none."""
    mech = sampler.mechanism
    bound = mech.exp_eps * exp_lower_bound(sampler.sampler_epsilon())  # <= the claimed e^eps
    laws = {}
    for c in datasets(universe, sampler.n):
        laws[c] = law(sampler, c)
        if check_formula:
            check_product_formula(sampler, c, *laws[c])
    bad = []
    best = Fraction(0)
    for c in laws:
        for x in range(universe):
            c2 = tuple(v + (i == x) for i, v in enumerate(c))
            if c2 not in laws:
                continue
            (a, da), (b, db) = laws[c], laws[c2]
            for (p1, d1), (p2, d2) in (((a, da), (b, db)), ((b, db), (a, da))):
                # p1/d1 <= bound * p2/d2  <=>  p1 d2 bound.den <= bound.num p2 d1
                ok = p1 * (d2 * bound.denominator) <= p2 * (bound.numerator * d1)
                if not np.all(ok):
                    bad.append(f"{c} vs {c2}")
                pos = np.flatnonzero(p2 != 0)
                j = pos[np.argmax((p1[pos] * d2 / d1) / p2[pos])]  # float only to locate the max
                best = max(best, Fraction(int(p1[j]) * d2, int(p2[j]) * d1))
    if not bad:
        if isinstance(mech, GeoSample):
            assert best >= mech.exp_eps  # tight up to the sampler term: interior geometric ratios are p/q
        assert best <= bound
    return bad


SLOW = pytest.mark.slow  # n = 2: 64^3 polynomials per dataset, about a minute each
CASES = [
    pytest.param(lambda: RoundedCdfSampler(GeoSample(n=1, exp_eps=Fraction(2)), M_BITS), 4, id="geo n=1 e=2 rounded"),
    pytest.param(lambda: BlockSampler(GeoSample(n=1, exp_eps=Fraction(3, 2)), M_BITS), 4, id="geo n=1 e=3/2 block"),
    pytest.param(
        lambda: RoundedCdfSampler(FastSample(n=1, gamma="1/2", exp_eps=Fraction(9)), M_BITS), 4, id="fast n=1 t=0 rounded"
    ),
    pytest.param(
        lambda: RoundedCdfSampler(GeoSample(n=2, exp_eps=Fraction(3, 2)), M_BITS), 3, id="geo n=2 rounded", marks=SLOW
    ),
    pytest.param(lambda: BlockSampler(GeoSample(n=2, exp_eps=Fraction(2)), M_BITS), 3, id="geo n=2 block", marks=SLOW),
    pytest.param(
        lambda: RoundedCdfSampler(FastSample(n=2, gamma="1/2", exp_eps=Fraction(4)), M_BITS), 3, id="fast n=2 t=1", marks=SLOW
    ),
]


@pytest.mark.parametrize("make,universe", CASES)
def test_exhaustive_privacy(make, universe: int) -> None:
    sampler = make()
    if isinstance(sampler.mechanism, FastSample):
        assert sampler.mechanism.fallback is None and sampler.mechanism.t_is_private
    assert sampler.sampler_epsilon() < 1
    assert max_violation(sampler, universe, check_formula=True) == []


def test_exhaustive_catches_mutant_short_zero() -> None:
    sampler = ShortZeroPreimage(GeoSample(n=1, exp_eps=Fraction(2)), M_BITS)
    assert max_violation(sampler, 3, check_formula=False) != []
