"""The k-ary sampler (RSSS Algorithm 3, Thm 1.4) with exact integer noise: noisy counts, clip, normalise, draw.

Algorithm (one batch of units; n = max_units public, k = universe size public):

1. c_j = number of units whose symbol is j (one exact count pass);
2. w_j = GeoSample_{n, eps~}(c_j): the two-sided geometric mechanism at e^{eps~} = p/q <= e^eps, clamped to
   [0, n] (Balcer-Vadhan Alg 4.8, Thm 4.7; one uniform per symbol). The clamp at 0 is RSSS's "clip negatives";
3. output j with probability w_j / W, W = sum w (uniform when W = 0) - :mod:`dpspark.mechanisms.samplers.categorical`.

Privacy (pure DP). Under AddRemove(n) one unit moves one count by 1, so step 2 is eps~-DP for the count
vector (Thm 4.7(i)) plus the rng's bias on that one draw (``bias_epsilon(1)`` when d is not a power of two);
step 3 reads only w: post-processing. Under Substitute(n) two counts move: 2 eps~ by group privacy (the two
coordinates are independent, so this is also what a direct proof gives).

Exact l1 projection. For w >= 0 with W > 0, w/W is an l1 projection of w/N onto the simplex for every N > 0
(if W >= N, scaling down keeps every coordinate below w_j/N; if W < N, scaling up keeps it above; both attain
the lower bound |W/N - 1|). So clip-then-normalise IS RSSS's projection step, in exact rationals.

Accuracy (RSSS Thm 1.4, with the add/remove calibration). With N units drawn i.i.d. from P and p^ = c/N,
E[p^] = P, so d_TV(Q, P) <= 1/2 E||w/W - p^||_1 <= E||w/N - p^||_1 (projection) <= sum_j E|w_j - c_j| / N
<= k E|Z| / N, since clamping to [0, n] never moves w_j away from c_j in [0, n]. For the two-sided geometric
Z at e^{eps~} = p/q, E|Z| = 2pq / (p^2 - q^2) = 1 / sinh(eps~) exactly, so

    d_TV(Q, P) <= k / (N sinh eps~)   and   N >= k / (alpha sinh eps~) units suffice for alpha.

(The W = 0 default keeps the bound: ||uniform - p^||_1 <= 2 = 2 ||w/N - p^||_1 there.)
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Sequence

import numpy as np

from dpspark.noise import GeoSample, choose_exp_eps
from dpspark.noise.counting_base import CountingMechanism
from dpspark.rng import RandomSource
from dpspark.mechanisms.samplers.categorical import draw_index, implemented_law, uniform_cdf_count

#: The largest universe the k-ary sampler takes (every symbol gets a noisy count).
KARY_MAX_K = 10_000_000


def kary_counting(n: int, epsilon: Fraction) -> GeoSample:
    """GeoSample on [0, n] with e^{eps~} = p/q <= e^epsilon (epsilon-DP per count under add/remove)."""
    return GeoSample(n=n, exp_eps=choose_exp_eps(2 * epsilon))


def mean_abs_noise(exp_eps: Fraction) -> Fraction:
    """E|Z| = 2pq / (p^2 - q^2) = 1/sinh(eps~) for the two-sided geometric law at e^{eps~} = p/q (exact)."""
    p, q = exp_eps.numerator, exp_eps.denominator
    return Fraction(2 * p * q, p * p - q * q)


def tv_bound(k: int, units: int, exp_eps: Fraction) -> Fraction:
    """RSSS Thm 1.4's bound k E|Z| / N = k / (N sinh eps~) on d_TV(output law, P) with N units (capped at 1)."""
    return min(Fraction(1), k * mean_abs_noise(exp_eps) / units)


def min_units_for(k: int, alpha: Fraction, exp_eps: Fraction) -> int:
    """The smallest N with k / (N sinh eps~) <= alpha (exact ceiling)."""
    need = k * mean_abs_noise(exp_eps) / alpha
    return -((-need.numerator) // need.denominator)


def dense_counts(indices: Sequence[int], counts: Sequence[int], k: int) -> np.ndarray:
    """The length-k count vector from sparse (index, count) pairs."""
    out = np.zeros(k, dtype=np.int64)
    if len(indices):
        out[np.asarray(indices, dtype=np.int64)] = np.asarray(counts, dtype=np.int64)
    return out


def noisy_weights(indices: Sequence[int], counts: Sequence[int], k: int, mech: CountingMechanism,
                  rng: RandomSource) -> np.ndarray:
    """w_j = M(c_j, U_j) for every symbol j in [0, k) (one independent uniform each; clamped to [0, n])."""
    return mech.draw_many(dense_counts(indices, counts, k), rng)


def kary_sample(indices: Sequence[int], counts: Sequence[int], k: int, mech: CountingMechanism,
                rng: RandomSource) -> int:
    """One draw of RSSS Alg 3 from one batch's sparse counts: a symbol index in [0, k)."""
    return draw_index(noisy_weights(indices, counts, k, mech, rng), rng)


def kary_sample_batches(batches: Sequence[tuple[Sequence[int], Sequence[int]]], k: int, mech: CountingMechanism,
                        rng: RandomSource) -> list[int]:
    """One draw per disjoint batch (parallel composition: each unit sits in exactly one batch)."""
    return [kary_sample(idx, cnt, k, mech, rng) for idx, cnt in batches]


# --- exact laws (tests and benchmarks; small k and n) -----------------------------------------------
def implemented_pmf(mech: CountingMechanism, c: int, lam: int | None) -> list[Fraction]:
    """Exact pmf of M(c, U) over [0, n]: ``lam`` None for an exact uniform U, else the rng's reduction."""
    d = mech.d
    cdf = [mech.scaled_cdf(c, z) for z in range(-1, mech.n + 1)]
    if lam is None:
        return [Fraction(cdf[i + 1] - cdf[i], d) for i in range(mech.n + 1)]
    probs = [uniform_cdf_count(d, f, lam) for f in cdf]
    return [probs[i + 1] - probs[i] for i in range(mech.n + 1)]


def exact_output_law(counts: Sequence[int], mech: CountingMechanism, lam: int | None) -> list[Fraction]:
    """Exact law of :func:`kary_sample` for a dense count vector: sum over every noisy vector w in [0, n]^k."""
    k = len(counts)
    if (mech.n + 1) ** k > 200_000:
        raise ValueError("exact_output_law enumerates [0, n]^k; keep (n+1)^k <= 200000")
    pmfs = [implemented_pmf(mech, int(c), lam) for c in counts]
    law = [Fraction(0)] * k
    for w in itertools.product(range(mech.n + 1), repeat=k):
        pw = Fraction(1)
        for j, wj in enumerate(w):
            pw *= pmfs[j][wj]
        if pw == 0:
            continue
        draw = implemented_law(list(w), lam) if lam is not None else _ideal_draw(list(w))
        for j in range(k):
            law[j] += pw * draw[j]
    return law


def _ideal_draw(w: list[int]) -> list[Fraction]:
    total = sum(w)
    if total == 0:
        return [Fraction(1, len(w))] * len(w)
    return [Fraction(x, total) for x in w]
