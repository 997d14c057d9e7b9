"""The three integer noise laws a group statistic can be released with (docs/groups.md §C).

Every law releases a statistic x (an exact integer in fixed-point units, per-group sensitivity Delta,
public range [lo, hi]) on the public grid G = Delta / g:

    a = round(x / G) = floor(x g / Delta + 1/2),     released value  y = G (a + Z),

with Z integer noise. One unit moves x by at most Delta in at most k groups, so it moves a by at most
ceil(Delta / G) = g in at most k coordinates (floor(u + t) - floor(u) <= ceil(t)); |y - x| <= G |Z| + G/2
(floor(G/2) for an integer G, 0 for G = 1/j).

* :class:`PureLaw` - FastSample (Balcer-Vadhan Alg. 4.11 with the tight truncation; GeoSample when
  t* >= n) on the shifted range [0, n]: pointwise ratio <= (p/q) per unit step, so the k-coordinate
  vector is ln((p/q)^(k g)) + bias_epsilon(k) -DP (the k changed draws of a non-power-of-two range carry
  the rng's multiplicative bias, dpspark.rng.bias_epsilon). Per-group error bar: the exact
  ``accuracy(beta)`` of the implemented law (clamp and uniform mixture included).
* :class:`GaussianLaw` - the certified strict-time discrete Gaussian (CKS20 with the mixture
  certificate of the implemented law) on Z_m around the public centre of the range: each coordinate
  is zcdp_rho(g)-zCDP, k coordinates add: rho = k zcdp_rho(g) (Bun-Steinke 2016 Lemma 2.3).
  Error bar: least t with Pr[|Z| > t] <= beta on the exact law (no wrap-around while |Z| <= T).
* :class:`BoundedLaw` - Dagan-Kur bounded noise calibrated by dpspark.noise.bounded_calibrate for
  k m adaptive 1-sensitive queries (m statistics per aggregate share the law): (eps, certified delta)-DP
  on the implemented pmf, and **|y - x| <= G (M - 1) + G/2 with probability 1**.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import isqrt
from typing import Any

import numpy as np

from dpspark.exact import clog2
from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource, bias_epsilon

#: g for the pure law (rounding error Delta/4) and the largest g for the Gaussian
PURE_GRID = 2
MAX_GAUSS_GRID = 16
#: FastSample's uniform-mixture probability gamma = 2^-GAMMA_BITS (far below any error-bar beta)
GAMMA_BITS = 64
#: extra denominator bits of a rational e^eps: the rounding loses a relative ~2^-EXTRA_BITS of eps
EXTRA_BITS = 12


def round_grid(x: Any, delta: int, g: int) -> Any:
    """round(x / G) with G = delta / g, ties up, exactly (an int, or an int64/object numpy array)."""
    return (2 * x * g + delta) // (2 * delta)


#: int64 arithmetic is exact for a statistic while 2 |x| g + delta stays below this
INT64_SAFE = 1 << 62


def as_exact(xs: Any, int64: bool) -> np.ndarray:
    """The integers ``xs`` as int64 (``int64``: a public bound says they and their arithmetic fit) or Python ints."""
    arr = np.asarray(xs)
    if int64:
        return arr.astype(np.int64)
    out = np.empty(arr.size, dtype=object)
    out[:] = [int(v) for v in arr.tolist()]
    return out


def exp_eps_below(target: Fraction, extra_bits: int = EXTRA_BITS) -> Fraction:
    """The largest p/q <= e^target (certified) with q = 2^(clog2(ceil(1/target)) + extra_bits)."""
    from dpspark.noise.exp_eps import exp_eps_at_most

    inv = -((-target.denominator) // target.numerator)
    return exp_eps_at_most(target, 1 << (clog2(max(inv, 1)) + extra_bits))


def pure_accuracy(mech: Any, exp_eps: Fraction, beta: Fraction) -> int:
    """The least a with gamma + (1 - gamma) 2p/(p+q) (q/p)^(a+1) <= beta: a certified bound on FastSample's accuracy.

    FastSample's output is clamp(c + Z_t) w.p. 1 - gamma (Z_t: the two-sided geometric at p/q with the mass
    beyond +-t moved to 0) or uniform w.p. gamma. Clamping towards [0, n] never moves it away from c, and
    Pr[|Z_t| > a] <= Pr[|Z| > a] = 2p/(p+q) (q/p)^(a+1), so Pr[|M - c| > a] is at most the bound's left side
    (GeoSample, used when t* >= n, has no uniform part). Closed form: no CDF evaluation, whatever eps is.
    """
    from dpspark.noise.fastsample import FastSample

    p, q = exp_eps.numerator, exp_eps.denominator
    gamma = mech.gamma if isinstance(mech, FastSample) and mech.fallback is None else Fraction(0)
    if gamma >= beta:
        raise GroupsError("beta is below the noise's uniform-mixture probability; raise beta")
    target = (beta - gamma) / (1 - gamma) * (p + q) / (2 * p)  # need (q/p)^(a+1) <= target

    def ok(a: int) -> bool:
        return q ** (a + 1) * target.denominator <= target.numerator * p ** (a + 1)

    hi = 1
    while not ok(hi):  # doubling then bisection: public inputs only
        hi *= 2
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return min(lo, mech.n)


class _GridLaw:
    """Shared grid arithmetic: G, the shifted range of a, the rounding."""

    kind = "abstract"

    def __init__(self, delta: int, g: int, lo: int, hi: int) -> None:
        if delta < 1:
            raise GroupsError("a statistic's sensitivity must be >= 1")
        g = min(g, delta)  # a grid finer than 1 fixed-point unit gains nothing
        self.delta, self.g = delta, g
        self.lo, self.hi = lo, hi
        self.G = Fraction(delta, g)
        # |G round(x/G) - x| for integer x: 0 when G = 1/j, floor(G/2) for an integer G, else <= G/2
        G = self.G
        self.rounding = Fraction(0) if G.numerator == 1 else Fraction(G.numerator // 2) if G.denominator == 1 else G / 2
        self.a_lo, self.a_hi = round_grid(lo, delta, g), round_grid(hi, delta, g)

    def grid(self, x: int) -> int:
        """a = round(x / G)."""
        return round_grid(x, self.delta, self.g)

    @property
    def int64_safe(self) -> bool:
        """True when every statistic of the public range [lo, hi] rounds in int64 exactly (a public check)."""
        return 2 * max(abs(self.lo), abs(self.hi)) * self.g + self.delta + abs(self.a_lo) + abs(self.a_hi) < INT64_SAFE

    def grid_many(self, xs: np.ndarray) -> np.ndarray:
        """a = round(x / G) for every x: int64 when :attr:`int64_safe` (public), else Python ints (object)."""
        return round_grid(as_exact(xs, self.int64_safe), self.delta, self.g)

    def describe(self) -> dict[str, Any]:
        return {"noise": self.kind, "sensitivity": self.delta, "grid": str(self.G), "g": self.g}


class PureLaw(_GridLaw):
    """FastSample on [a_lo, a_hi] at e^eps~ = p/q per grid unit; pure DP (module docstring)."""

    kind = "pure"

    def __init__(self, delta: int, lo: int, hi: int, k: int, epsilon: Fraction, lam: int,
                 g: int = PURE_GRID) -> None:
        from dpspark.noise.fastsample import FastSample

        super().__init__(delta, g, lo, hi)
        self.k, self.lam = k, lam
        target = epsilon - bias_epsilon(k, lam)  # the rng bias is paid inside the share, not on top
        if target <= 0:
            raise GroupsError("epsilon share too small for pure noise")
        self.exp_eps = exp_eps_below(target / (k * self.g))
        self.mech = FastSample(n=max(1, self.a_hi - self.a_lo), exp_eps=self.exp_eps,
                               gamma=Fraction(1, 1 << GAMMA_BITS))

    def epsilon(self) -> LogEpsilon:
        """ln((p/q)^(k g)) + bias_epsilon(k): k coordinates, each moved <= g grid units, one biased draw each."""
        return LogEpsilon(self.exp_eps ** (self.k * self.g), bias_epsilon(self.k, self.lam))

    def release(self, x: int, rng: RandomSource) -> Fraction:
        """G (a_lo + M(a - a_lo, U)): one draw, ceil(log2(n+1)) CDF evaluations whatever x is."""
        return self.G * (self.a_lo + self.mech.draw(self.grid(x) - self.a_lo, rng))

    def draw_index_many(self, xs: np.ndarray, rng: RandomSource) -> np.ndarray:
        """M(a_i - a_lo, U_i) for every statistic x_i (the mechanism's output index in [0, n]), in order.

        The same law as one :meth:`release` per x (and, under a seeded source, the same draws): the
        batched FastSample sampler when the range fits int64, else one exact draw each.
        """
        from dpspark.noise.counting_base import BATCH_MAX_N

        if len(xs) == 0:
            return np.zeros(0, dtype=np.int64)
        a = self.grid_many(xs) - self.a_lo
        if self.mech.n <= BATCH_MAX_N and a.dtype != object:
            return self.mech.draw_many(a.astype(np.int64), rng)
        return np.array([self.mech.draw(int(c), rng) for c in a.tolist()], dtype=object)

    def release_many(self, xs: np.ndarray, rng: RandomSource) -> np.ndarray:
        """Grid units of every released value: a_lo + M (value = G times it), int64 or object."""
        return self.draw_index_many(xs, rng) + self.a_lo

    def error(self, beta: Fraction) -> Fraction:
        """|y - x| <= G a + G/2 with probability >= 1 - beta: a = :meth:`accuracy_bound` (beta)."""
        return self.G * self.accuracy_bound(beta) + self.rounding

    def accuracy_bound(self, beta: Fraction) -> int:
        """:func:`pure_accuracy` of this law's FastSample."""
        return pure_accuracy(self.mech, self.exp_eps, beta)

    always: Fraction | None = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "exp_eps": str(self.exp_eps), "fastsample": self.mech.describe()}


@lru_cache(maxsize=64)
def _gaussian(rho_each: Fraction, g: int, radius: int) -> Any:
    from dpspark.noise.dgauss import DiscreteGaussian, smallest_sigma

    return DiscreteGaussian(sigma=smallest_sigma(rho_each, g, data_radius=radius), data_radius=radius)


class GaussianLaw(_GridLaw):
    """Discrete Gaussian on Z_m around the range's centre; rho = k zcdp_rho(g) (module docstring)."""

    kind = "gaussian"

    def __init__(self, delta: int, lo: int, hi: int, k: int, rho: Fraction) -> None:
        from dpspark.noise.dgauss import DGaussError

        # the largest g <= 16 with sigma = g sqrt(k / 2 rho) <= 10^4 (exact integer test g^2 k <= 2 rho 10^8)
        g = max(1, min(MAX_GAUSS_GRID, delta, isqrt((2 * rho * 10**8 / k).__floor__())))
        super().__init__(delta, g, lo, hi)
        self.k = k
        self.centre = (self.a_lo + self.a_hi) // 2
        radius = max(self.a_hi - self.centre, self.centre - self.a_lo)
        if radius >= 1 << 48:
            raise GroupsError("the statistic's range exceeds the discrete Gaussian's window (2^48 grid units)")
        try:
            self.dg = _gaussian(rho / k, g, radius)
        except DGaussError as err:
            raise GroupsError(f"gaussian noise: {err}") from None
        self.rho = k * self.dg.zcdp_rho(g)
        if self.rho > rho:  # pragma: no cover - smallest_sigma certifies it
            raise GroupsError("internal error: the Gaussian's rho exceeds its share")

    def release(self, x: int, rng: RandomSource) -> Fraction:
        """G ((a + Z) mod m around the centre): one draw of bits(128), bitlen(m-1) CDF evaluations."""
        return self.G * int(self.dg.wrap(self.grid(x) + self.dg.draw(rng), self.centre))

    def release_many(self, xs: np.ndarray, rng: RandomSource) -> np.ndarray:
        """Grid units of every released value (value = G times it): the same draws as one release per x."""
        if len(xs) == 0:
            return np.zeros(0, dtype=np.int64)
        a = self.grid_many(xs)
        if a.dtype == object:
            return np.array([int(self.dg.wrap(int(v) + self.dg.draw(rng), self.centre)) for v in a.tolist()],
                            dtype=object)
        return self.dg.add_many(a.astype(np.int64), rng, self.centre)

    def error(self, beta: Fraction) -> Fraction:
        """G t + G/2 with t the least t <= T such that Pr[|Z| > t] <= beta on the exact law."""
        dg = self.dg
        lo, hi = 0, dg.T

        def tail_ok(t: int) -> bool:
            return (dg.d - dg.scaled_cdf(t) + dg.scaled_cdf(-t - 1)) * beta.denominator <= beta.numerator * dg.d

        if not tail_ok(hi):
            raise GroupsError("gaussian noise: beta is below the law's floor mass; raise beta")
        while lo < hi:
            mid = (lo + hi) // 2
            if tail_ok(mid):
                hi = mid
            else:
                lo = mid + 1
        return self.G * lo + self.rounding

    always: Fraction | None = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "sigma": str(self.dg.sigma), "rho": str(self.rho), "centre": self.centre}


@lru_cache(maxsize=32)
def bounded_calibration(queries: int, epsilon: Fraction, delta: Fraction, family: str) -> Any:
    """calibrate(queries, epsilon, delta, sensitivity=1, family) (cached: planning may ask twice)."""
    from dpspark.noise.bounded_calibrate import calibrate

    return calibrate(queries, epsilon, delta, sensitivity=1, family=family)


class BoundedLaw(_GridLaw):
    """Dagan-Kur bounded noise at g = 1: |y - x| <= Delta (M - 1) + Delta/2 always (module docstring)."""

    kind = "bounded"

    def __init__(self, delta: int, lo: int, hi: int, cal: Any, noise: Any) -> None:
        super().__init__(delta, 1, lo, hi)
        self.cal, self.noise = cal, noise
        self.always = self.G * (cal.M - 1) + self.rounding

    def release(self, x: int, rng: RandomSource) -> Fraction:
        """G (a + Z): one exact draw (d a power of two), bit_length(M) table look-ups."""
        return self.G * (self.grid(x) + self.noise.draw(rng))

    def release_many(self, xs: np.ndarray, rng: RandomSource) -> np.ndarray:
        """Grid units of every released value (value = G times it): the same draws as one release per x."""
        if len(xs) == 0:
            return np.zeros(0, dtype=np.int64)
        a = self.grid_many(xs)
        z = self.noise.draw_many(len(a), rng)
        if a.dtype == object:
            return np.array([int(v) + int(e) for v, e in zip(a.tolist(), z)], dtype=object)
        return a.astype(np.int64) + np.asarray(z, dtype=np.int64)

    def error(self, beta: Fraction) -> Fraction:
        """G b + G/2, b the certified least bound with Pr[|Z| > b] <= beta (never above the sure bound)."""
        from dpspark.noise.bounded_calibrate import bound_with_probability

        b = bound_with_probability(self.cal.M, self.cal.family, self.cal.bits, 1, beta)
        return self.G * b + self.rounding

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "calibration": self.cal.describe()}
