"""Weighted key selection for k > 1: integer l2-normalised weights, a certified discrete Gaussian, a threshold.

Issue 34 §2 (docs/groups.md §F). After bounding, each unit keeps m <= k keys and gives each of them the
integer weight

    w(m) = isqrt(floor(W^2 / m)),   the largest integer with m w^2 <= W^2,

so every unit's weight vector has l2 norm <= W exactly (integers, no rounding up). A key's score S is the sum
of the weights of the units that kept it. The key is released iff

    rep((min(S, 2T) + Z) mod M) >= tau,

Z the certified strict-time discrete Gaussian of :mod:`dpspark.noise.dgauss` at sigma (one draw per observed
key), rep the representative in the public window [T - R, T + R] (centre T, data radius T, R = 2T, M = 2R + 1,
T the law's body half-width). Clamping at 2T is 1-Lipschitz per coordinate, so the l2 bound survives it.

Theorem (Gopi et al. 2020's weighted-Gaussian set union, here on the implemented law). Let D' = D plus one
unit U that keeps the set K_U (|K_U| = m <= k), A = the keys observed in D, N = K_U minus A (new keys).

* On A the two score vectors differ by U's weights, l2 <= W: the wrapped noisy scores are rho-zCDP with
  rho = ``l2_rho(dg, W)`` (CKS20 with the mixture certificate of the implemented law; independent
  coordinates add), hence (eps, delta_g)-DP by the certified CKS20 Cor. 13 conversion.
* A new key j is released with probability P(w(m)) (exact, from the law's scaled CDF; no other key's
  output depends on it), so Pr[some new key released] <= delta_t := max_{m <= k} 1 - (1 - P(w(m)))^m.
* Pr[M(D') in E] <= Pr[M_A(D') in E] + delta_t <= e^eps Pr[M(D) in E] + delta_g + delta_t, and
  Pr[M(D) in E] <= e^eps Pr[M_A(D') in E] + delta_g <= e^eps (Pr[M(D') in E] + delta_t) + delta_g.

So the selection is **(eps, delta_g + e^eps delta_t)-DP** (e^eps by its certified upper bound). tau is the least
integer whose delta_t meets its share; the delta split between delta_g and delta_t is chosen on a public grid
to minimise tau (in weight units, data-free). Compared with the separate law at eps/k per key (basic
composition), a unit with one key gives it its whole weight W while the noise is paid once for the l2 ball.

Strict time: the calibration uses public parameters only; each observed key costs one clamp, one draw
(``rounds`` CDF evaluations) and one comparison.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import isqrt
from typing import Any, Sequence

import numpy as np

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource

#: l2 norm of a unit's weight vector (integer weights: w(1) = W, w(2) = 45, w(3) = 36, w(4) = 32 at W = 64)
WEIGHT_SCALE = 64
#: the public grid of delta_t / delta the calibration tries
SPLITS = tuple(Fraction(j, 8) for j in range(1, 8))


def weights(k: int, scale: int = WEIGHT_SCALE) -> list[int]:
    """w(m) = isqrt(floor(W^2 / m)) for m = 1..k (index m - 1): m w(m)^2 <= W^2 exactly."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise GroupsError("weighted selection needs k >= 1")
    return [isqrt(scale * scale // m) for m in range(1, k + 1)]


def _rho_for(epsilon: Fraction, delta_g: Fraction) -> Fraction:
    """A rho whose certified CKS20 conversion at delta_g is <= epsilon (public search, a few conversions)."""
    from dpspark.privacy.conversions import zcdp_to_approx_dp_cks
    from dpspark.privacy.measures import ZCDP

    # Bun-Steinke's eps = rho + 2 sqrt(rho L) is looser than CKS20, so rho = (sqrt(L + eps) - sqrt(L))^2 >=
    # eps^2 / (4 (L + eps)) passes it; L >= ln(1/delta_g) from bit lengths (ln 2 < 7/10), exact rationals
    inv = -((-delta_g.denominator) // delta_g.numerator)  # ceil(1/delta_g)
    L = Fraction(7 * inv.bit_length(), 10)
    lo = Fraction(isqrt(((epsilon * epsilon / (4 * (L + epsilon))) * 2**80).__floor__()), 2**40) ** 2
    best = None
    for j in range(12, -1, -1):  # rho = lo (1 + j/24): the largest that CKS20 certifies (public loop)
        rho = lo * (1 + Fraction(j, 24))
        if rho > 0 and zcdp_to_approx_dp_cks(ZCDP(rho), delta_g).epsilon.le(LogEpsilon.of(epsilon)):
            best = rho
            break
    if best is None:
        raise GroupsError("weighted key selection: no rho fits this epsilon and delta")
    return best


class WeightedSelection:
    """The weighted-Gaussian threshold law of the module docstring, calibrated at (epsilon, delta) for k keys."""

    def __init__(self, epsilon: Fraction, delta: Fraction, k: int, scale: int = WEIGHT_SCALE,
                 splits: Sequence[Fraction] = SPLITS) -> None:
        if epsilon <= 0 or not 0 < delta < 1:
            raise GroupsError("key selection needs epsilon > 0 and delta in (0, 1)")
        self.k, self.scale = k, scale
        self.w = weights(k, scale)
        best: tuple[Any, ...] | None = None
        for f in splits:  # public grid: the split with the lowest threshold (in weight units), first on a tie
            cand = self._calibrate(epsilon, delta, f)
            if cand is not None and (best is None or cand[0] < best[0]):
                best = cand
        if best is None:
            raise GroupsError("weighted key selection: no threshold fits this delta; raise delta")
        self.tau, self.dg, self.rho, self.eps_g, self.delta_g, self.delta_t = best
        self.cap = 2 * self.dg.T

    def _calibrate(self, epsilon: Fraction, delta: Fraction, f: Fraction) -> tuple[Any, ...] | None:
        from dpspark.noise.dgauss import DGaussError, DiscreteGaussian, l2_rho, smallest_sigma
        from dpspark.privacy.conversions import zcdp_to_approx_dp_cks
        from dpspark.privacy.measures import ZCDP

        delta_g = delta * (1 - f)
        rho = _rho_for(epsilon, delta_g)
        try:
            sigma = smallest_sigma(rho, self.scale)
            T = DiscreteGaussian(sigma=sigma).T
            dg = _law(sigma, T)
        except DGaussError:
            return None
        rho_c = l2_rho(dg, self.scale)
        conv = zcdp_to_approx_dp_cks(ZCDP(rho_c), delta_g)
        if not conv.epsilon.le(LogEpsilon.of(epsilon)):
            return None
        budget_t = (delta - delta_g) / conv.epsilon.exp_upper()
        lo, hi = self.scale, 2 * dg.T
        if _new_key_delta(dg, self.w, hi) > budget_t:
            return None
        while lo < hi:  # delta_t decreases in tau (public bisection)
            mid = (lo + hi) // 2
            if _new_key_delta(dg, self.w, mid) <= budget_t:
                hi = mid
            else:
                lo = mid + 1
        return lo, dg, rho_c, conv.epsilon, delta_g, _new_key_delta(dg, self.w, lo)

    # --- the statement ----------------------------------------------------------------------------------
    def epsilon(self) -> LogEpsilon:
        """The certified CKS20 epsilon of the noisy scores."""
        return self.eps_g

    def delta(self) -> Fraction:
        """delta_g + e^eps delta_t (e^eps by its certified upper bound)."""
        return self.delta_g + self.eps_g.exp_upper() * self.delta_t

    def keep_probability(self, score: int) -> Fraction:
        """Pr[key kept | its score], exactly, on the implemented law."""
        return _keep(self.dg, min(score, self.cap), self.tau)

    # --- the draw ---------------------------------------------------------------------------------------
    def select(self, scores: Sequence[int], rng: RandomSource) -> list[bool]:
        """Keep decisions for the observed keys' scores, in order: one draw each (the batched sampler, the
        same draws as one ``add`` per key)."""
        for s in scores:
            if isinstance(s, bool) or not isinstance(s, int) or s < 1:
                raise GroupsError("an observed key's weighted score must be an int >= 1 (an engine bug; no value is "
                                  "shown)")
        x = np.minimum(np.asarray(scores, dtype=object), self.cap).astype(np.int64)  # clamp first: int64-safe
        return (self.dg.add_many(x, rng, self.dg.T) >= self.tau).tolist()

    def describe(self) -> dict[str, Any]:
        return {"selection": "weighted Gaussian threshold (integer l2-normalised weights, certified discrete "
                             "Gaussian)", "weights": self.w, "l2_norm": self.scale, "sigma": str(self.dg.sigma),
                "threshold": self.tau, "rho": str(self.rho), "delta_noise": str(self.delta_g),
                "delta_new_keys": str(self.delta_t)}


@lru_cache(maxsize=16)
def _law(sigma: Fraction, T: int) -> Any:
    """The discrete Gaussian at sigma with data radius T (window [T - R, T + R], R = 2T: scores in [0, 2T])."""
    from dpspark.noise.dgauss import DiscreteGaussian

    return DiscreteGaussian(sigma=sigma, data_radius=T)


def _cdf(dg: Any, z: int) -> int:
    """d Pr[Z <= z] on the law's support [-R, R] (clamped outside)."""
    if z < -dg.R:
        return 0
    if z >= dg.R:
        return dg.d
    return dg.scaled_cdf(z)


def _keep(dg: Any, x: int, tau: int) -> Fraction:
    """Pr[rep((x + Z) mod M) >= tau] for 0 <= x <= 2T, window centre T (see the module docstring).

    v = x + Z lies in [x - R, x + R]. In the window [T - R, T + R] rep(v) = v; v > T + R wraps to v - M
    <= x - R - 1 < tau; v < T - R wraps to v + M >= x + R + 1 > tau (tau <= 2T <= R + T... and x + R + 1 > 2T).
    """
    T, R = dg.T, dg.R
    inside = _cdf(dg, T + R - x) - _cdf(dg, tau - x - 1)
    below = _cdf(dg, T - R - x - 1)
    return Fraction(max(inside, 0) + below, dg.d)


def _new_key_delta(dg: Any, w: Sequence[int], tau: int) -> Fraction:
    """max over m of Pr[some of m new keys of weight w(m) is kept] = 1 - (1 - P(w(m)))^m, exactly."""
    return max(1 - (1 - _keep(dg, wm, tau)) ** m for m, wm in enumerate(w, start=1))
