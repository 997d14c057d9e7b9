"""Private counts of units and a private quantile of per-unit contribution counts (family-free).

Two pure-DP releases of integer statistics in which one privacy unit moves **one coordinate by at most 1**
under add/remove of that unit:

* :class:`NoisyCount` - a count of units (``units``), clamped to the public range [0, cap] (clamping is
  1-Lipschitz, so the clamped count still moves by at most 1);
* :class:`CountQuantile` - the histogram of a per-unit contribution count ``v >= 1`` (distinct groups of the
  unit, or its most rows in one group) over power-of-two buckets: bucket ``j`` holds the units with
  ``2^(j-1) < v <= 2^j`` (bucket 0: ``v = 1``; the last bucket also every larger ``v``). Each unit lies in exactly
  one bucket, so adding or removing it changes one bucket's count by 1 (each count clamped to [0, cap]).
  The released limit is ``2^j`` for the smallest ``j`` whose noisy cumulative mass reaches the public
  ``fraction`` of the noisy total (post-processing; the top edge when no ``j`` does, 1 when the total is 0).
  This is the idea of PipelineDP's ``PrivateL0Calculator`` (a noisy histogram of contribution counts, then a
  quantile of it) with exact integer noise.

**Claim.** Each coordinate is released by FastSample (Balcer-Vadhan 2019, Alg. 4.11, Thm 4.10 with the tight
t*; :mod:`dpspark.noise.fastsample`) at ``e^eps~ = p/q``: for counts ``c, c'`` with ``|c - c'| <= 1`` and every
output ``z``, ``Pr[M(c) = z] <= (p/q) Pr[M(c') = z]``. The coordinates are drawn independently and one unit
changes one coordinate by at most 1, so the released vector (hence the chosen limit, by post-processing) is
``ln(p/q) + bias_epsilon(1)``-DP under add/remove of one unit; the one changed draw's multiply-shift bias
(:func:`dpspark.rng.bias_epsilon`) is paid inside the share: ``p/q <= e^(epsilon - bias)``, certified.
Strict time: one draw per coordinate, a public number of coordinates (``buckets``), each draw
``ceil(log2(cap + 1))`` CDF evaluations whatever the count is. No floating point anywhere.

``tests/unit/noise/test_count_quantile.py`` checks the exact output law of the whole mechanism (bucketing,
noise and choice) on every pair of neighbouring small inputs, and catches a mutant that counts a unit in
every bucket at or above its own (a cumulative histogram: B coordinates change).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dpspark.errors import ParameterError
from dpspark.exact import clog2
from dpspark.noise.exp_eps import exp_eps_at_most
from dpspark.noise.fastsample import FastSample
from dpspark.privacy import LogEpsilon
from dpspark.rng import DEFAULT_LAMBDA, RandomSource, bias_epsilon

__all__ = ["CountQuantile", "DEFAULT_CAP", "NoisyCount", "bucket_of", "power_histogram"]

#: the public range [0, cap] every released count is clamped to (units of a warehouse table stay far below)
DEFAULT_CAP = 1 << 40
#: FastSample's uniform-mixture probability (far below any error-bar beta)
GAMMA = Fraction(1, 1 << 64)
#: extra denominator bits of the rational e^eps: the rounding loses a relative ~2^-12 of eps
_EXTRA_BITS = 12


def _exp_eps(epsilon: Fraction, lam: int) -> Fraction:
    """The largest certified p/q <= e^(epsilon - bias_epsilon(1)) (the bias of the one changed draw)."""
    target = epsilon - bias_epsilon(1, lam)
    if target <= 0:
        raise ParameterError(f"epsilon {epsilon} is too small for a noisy count")
    inv = -((-target.denominator) // target.numerator)
    return exp_eps_at_most(target, 1 << (clog2(max(inv, 1)) + _EXTRA_BITS))


class NoisyCount:
    """A count that one unit moves by at most 1, released with FastSample on [0, cap] (module docstring)."""

    def __init__(self, epsilon: Any, *, cap: int = DEFAULT_CAP, lam: int = DEFAULT_LAMBDA) -> None:
        from dpspark.exact import parse_rational

        eps = parse_rational(epsilon, "epsilon")
        if eps <= 0:
            raise ParameterError("epsilon must be > 0")
        if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap < 1 << 62:
            raise ParameterError("cap must be an int in [1, 2^62)")
        self.cap, self.lam, self.requested = cap, lam, eps
        self.exp_eps = _exp_eps(eps, lam)
        self.mech = FastSample(n=cap, exp_eps=self.exp_eps, gamma=GAMMA)

    def epsilon(self) -> LogEpsilon:
        """ln(p/q) + bias_epsilon(1): one coordinate moved by at most 1, one biased draw."""
        return LogEpsilon(self.exp_eps, bias_epsilon(1, self.lam))

    def release(self, count: int, rng: RandomSource) -> int:
        """The noisy count of ``count`` (clamped to [0, cap] first): one draw."""
        return self.release_many([count], rng)[0]

    def release_many(self, counts: Sequence[int], rng: RandomSource) -> list[int]:
        """One independent noisy count per coordinate, in order (a public number of draws)."""
        clamped = np.array([min(max(int(c), 0), self.cap) for c in counts], dtype=np.int64)
        return [int(v) for v in self.mech.draw_many(clamped, rng)]

    def error(self, beta: Fraction) -> int:
        """The least a with Pr[|noisy - clamped count| > a] <= beta, exact (the implemented law)."""
        return self.mech.accuracy(beta)


def bucket_of(values: np.ndarray, buckets: int) -> np.ndarray:
    """The bucket of each per-unit count v >= 1: the least j with v <= 2^j, at most ``buckets - 1`` (integers)."""
    edges = np.array([1 << j for j in range(buckets)], dtype=np.int64)
    return np.minimum(np.searchsorted(edges, np.asarray(values, dtype=np.int64), side="left"), buckets - 1)


def power_histogram(values: np.ndarray, buckets: int) -> list[int]:
    """How many units fall in each power-of-two bucket (``values``: one count >= 1 per unit)."""
    return [int(x) for x in np.bincount(bucket_of(values, buckets), minlength=buckets)[:buckets]]


class CountQuantile:
    """A private ``fraction``-quantile of per-unit counts over ``buckets`` power-of-two buckets (module docstring).

    ``buckets`` = B: the chosen limit is one of 1, 2, 4, ..., 2^(B-1) (public).
    """

    def __init__(self, epsilon: Any, *, buckets: int, fraction: Any, cap: int = DEFAULT_CAP,
                 lam: int = DEFAULT_LAMBDA) -> None:
        from dpspark.exact import parse_rational

        if isinstance(buckets, bool) or not isinstance(buckets, int) or not 1 <= buckets <= 40:
            raise ParameterError("buckets must be an int in [1, 40]")
        self.fraction = parse_rational(fraction, "fraction")
        if not 0 < self.fraction <= 1:
            raise ParameterError("fraction must lie in (0, 1]")
        self.buckets = buckets
        self.count = NoisyCount(epsilon, cap=cap, lam=lam)

    def epsilon(self) -> LogEpsilon:
        """The histogram's epsilon: one bucket moved by at most 1 (that of :class:`NoisyCount`)."""
        return self.count.epsilon()

    def choose(self, noisy: Sequence[int]) -> int:
        """The limit 2^j for the least j whose noisy cumulative mass reaches ``fraction`` of the noisy total."""
        total = sum(noisy)
        if total == 0:
            return 1
        run = 0
        for j, h in enumerate(noisy):  # public bound: buckets
            run += h
            if run * self.fraction.denominator >= self.fraction.numerator * total:
                return 1 << j
        return 1 << (self.buckets - 1)  # unreachable (the full sum reaches the total); kept for clarity

    def release(self, histogram: Sequence[int], rng: RandomSource) -> tuple[int, list[int]]:
        """(the chosen limit, the noisy histogram) from the true bucket counts (:func:`power_histogram`)."""
        if len(histogram) != self.buckets:
            raise ParameterError(f"the histogram has {len(histogram)} buckets, expected {self.buckets}")
        noisy = self.count.release_many(histogram, rng)
        return self.choose(noisy), noisy

    def law(self, histogram: Sequence[int]) -> dict[int, Fraction]:
        """The exact law of the chosen limit (small cap only: enumerates every noisy histogram)."""
        from itertools import product

        pmfs = [self.count.mech.pmf(min(h, self.count.cap)) for h in histogram]
        out: dict[int, Fraction] = {}
        for noisy in product(range(self.count.cap + 1), repeat=self.buckets):
            p = Fraction(1)
            for pmf, z in zip(pmfs, noisy):
                p *= pmf[z]
            if p:
                limit = self.choose(noisy)
                out[limit] = out.get(limit, Fraction(0)) + p
        return out
