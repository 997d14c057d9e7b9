"""Empty-bin samplers G : [1, d0] -> [0, n] with d0 = 2^m (docs/balcer-vadhan-notes.md §C3).

CompactHistogram stores h(x) = G(iota(p(phi(x)))), so for a bin outside the
data's support the released value is G(U0) with U0 uniform on [1, d0]. Both
samplers here are non-decreasing, so every preimage G^{-1}(v) is an integer
interval [lo(v), hi(v)] and the intervals tile [1, d0] in order of v; the
construction draws u_x uniformly from the interval of the noisy count v_x.

* :class:`RoundedCdfSampler` (docs/balcer-vadhan-notes.md §C3, derived): F_G(v) =
  ceil(2^m F_{M,0}(v) / d), G(u0) = min{v : F_G(v) >= u0}. Production sampler.
* :class:`BlockSampler` (paper Algorithm 8.5 / Lemma 8.4): block = floor(d0/d),
  rem = d0 mod d, f(u0) maps [1, d0] onto [1, d] with the blocks of size
  block+1 at the LOW end, G(u0) = M(0, f(u0)). Test-only reference (its m has
  to be thousands of bits at realistic sizes, docs/balcer-vadhan-notes.md §E8).

Privacy-relevant bounds (exact rationals). Write m_0(v) = Pr[M(0,U) = v] and
g(v) = Pr[G(U0) = v]. :meth:`EmptyBinSampler.ratio_bounds` returns certified
rationals (eps_a, eps_b) with

    e^{-eps_a} m_0(v) <= g(v) <= e^{eps_b} m_0(v)   for every v in [0, n],

using ln(x) <= x - 1 for the upper side and ln(1/x) <= 1/x - 1 for the lower.

Both samplers are stochastically below M(0, U): F_G(v)/d0 >= F_{M,0}(v)/d for
every v, so M's accuracy carries over to the empty bins (tests check this
exactly).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any

from dpspark.noise import CountingMechanism, FastSample, GeoSample


def min_scaled_pmf_at_zero(mechanism: CountingMechanism) -> int:
    """Exact min over v in [0, n] of d * m_0(v) = F_{M,0}(v) - F_{M,0}(v-1) (an integer >= 1).

    Closed forms (tests compare them with a scan of every v):

    * GeoSample (and FastSample's GeoSample fallback), e^{eps~} = p/q: the
      differences are p^n (v = 0), q^v p^(n-1-v) (p-q) (0 < v < n, decreasing)
      and q^n (v = n), so the minimum is q^(n-1) min(q, p-q) (for n = 1: min(p, q)).
      This is NOT gamma/(n+1) of d (docs/balcer-vadhan-notes.md §E8).
    * FastSample with t < n: every difference is d' + (g-1)(n+1) dF'(v) with
      dF' >= 0, and dF'(n) = 0, so the minimum is d' = (p+q) p^t, i.e.
      m_0 >= gamma/(n+1).
    * Any other mechanism: a scan of every v (n <= 100000).
    """
    if isinstance(mechanism, FastSample) and mechanism.fallback is not None:
        mechanism = mechanism.fallback
    if isinstance(mechanism, GeoSample):
        p, q, n = mechanism.p, mechanism.q, mechanism.n
        if n == 1:
            return min(p, q)
        return q ** (n - 1) * min(q, p - q)
    if isinstance(mechanism, FastSample) and not mechanism.forced_t and mechanism.t < mechanism.n:
        return int(mechanism._dprime)
    if mechanism.n > 100_000:
        raise ValueError("no closed form for this mechanism and n is too large to scan")
    prev = 0
    best = mechanism.d
    for v in range(mechanism.n + 1):
        cur = mechanism.scaled_cdf(0, v)
        best = min(best, cur - prev)
        prev = cur
    return best


class EmptyBinSampler(ABC):
    """A non-decreasing G : [1, 2^m] -> [0, n] built on a counting mechanism M."""

    kind: str

    def __init__(self, mechanism: CountingMechanism, m: int) -> None:
        if not isinstance(mechanism, CountingMechanism):
            raise TypeError("mechanism must be a dpspark.noise.CountingMechanism")
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError("m must be an int >= 1")
        self.mechanism = mechanism
        self.n = mechanism.n
        self.m = m
        self.d0 = 1 << m
        self.d = mechanism.d

    # -------------------------------------------------------------- the CDF

    @abstractmethod
    def cdf(self, v: int) -> int:
        """F_G(v) = #{u0 in [1, d0] : G(u0) <= v} for v in [-1, n] (F_G(-1) = 0, F_G(n) = d0)."""

    def preimage(self, v: int) -> tuple[int, int]:
        """The exact interval [lo, hi] = G^{-1}(v) within [1, d0] (empty iff lo > hi)."""
        self._check_v(v)
        return self.cdf(v - 1) + 1, self.cdf(v)

    def scaled_pmf(self, v: int) -> int:
        """d0 * g(v) = |G^{-1}(v)|."""
        lo, hi = self.preimage(v)
        return hi - lo + 1

    def sample(self, u0: int) -> int:
        """G(u0) = min{v in [0, n] : F_G(v) >= u0}: exactly ceil(log2(n+1)) CDF evaluations."""
        if isinstance(u0, bool) or not isinstance(u0, int) or not 1 <= u0 <= self.d0:
            raise ValueError("u0 must be an int in [1, 2^m]")
        pos = -1  # invariant: F_G(pos) < u0
        last = self.n - 1
        step = 1 << (self.n.bit_length() - 1)
        while step:
            probe = pos + step
            value = self.cdf(probe if probe <= last else last)
            if probe <= last and value < u0:
                pos = probe
            step >>= 1
        return pos + 1

    def _check_v(self, v: int) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= self.n:
            raise ValueError(f"v must be a count in [0, n] = [0, {self.n}]")

    # -------------------------------------------------------------- privacy

    @abstractmethod
    def ratio_bounds(self) -> tuple[Fraction, Fraction]:
        """Certified rationals (eps_a, eps_b): e^{-eps_a} m_0(v) <= g(v) <= e^{eps_b} m_0(v) for all v."""

    def sampler_epsilon(self) -> Fraction:
        """max(eps_a, eps_b): a certified rational upper bound on max_v |ln(g(v)/m_0(v))|."""
        a, b = self.ratio_bounds()
        return max(a, b)

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready parameters a reader needs to recompute G (with M's own describe())."""


class RoundedCdfSampler(EmptyBinSampler):
    """F_G(v) = ceil(2^m F_{M,0}(v) / d); G(u0) = min{v : F_G(v) >= u0} (docs/balcer-vadhan-notes.md §C3).

    |F_G(v) - F_G(v-1) - 2^m dF(v)/d| < 1 for every v, so with
    eta = d / (2^m min_v dF(v)) (exact, :func:`min_scaled_pmf_at_zero`):
    1 - eta < g(v)/m_0(v) < 1 + eta, hence eps_b = eta and eps_a = eta/(1-eta).
    Requires eta < 1 (every preimage non-empty); :meth:`valid` reports it.
    """

    kind = "rounded-cdf"

    def __init__(self, mechanism: CountingMechanism, m: int) -> None:
        super().__init__(mechanism, m)
        self.min_scaled_pmf = min_scaled_pmf_at_zero(mechanism)
        self.eta = Fraction(self.d, self.d0 * self.min_scaled_pmf)

    def valid(self) -> bool:
        """True iff eta < 1, i.e. every v has a non-empty preimage and the bounds are finite."""
        return self.eta < 1

    def cdf(self, v: int) -> int:
        if v < 0:
            return 0
        if v >= self.n:
            return self.d0
        return -((-(self.mechanism.scaled_cdf(0, v) << self.m)) // self.d)

    def ratio_bounds(self) -> tuple[Fraction, Fraction]:
        if not self.valid():
            raise ValueError("2^m is too small for this mechanism: eta = d/(2^m min dF) >= 1")
        return self.eta / (1 - self.eta), self.eta

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "m": self.m,
            "rule": "F_G(v) = ceil(2^m * F_M(0, v) / d); G(u0) = min{v in [0,n] : F_G(v) >= u0}; "
            "u0 = (integer of the field element) + 1",
            "d": hex(self.d),
            "min_scaled_pmf_at_zero": hex(self.min_scaled_pmf),
        }


class BlockSampler(EmptyBinSampler):
    """Paper Algorithm 8.5 (Lemma 8.4): G(u0) = M(0, f(u0)), test-only reference for toy sizes.

    With block = floor(d0/d) and rem = d0 mod d (d0 = block*d + rem), f(u0) =
    ceil(u0/(block+1)) if u0 <= rem*(block+1), else ceil((u0-rem)/block): values
    1..rem of [1, d] get block+1 preimages, rem+1..d get block (the big blocks at
    the LOW end). f+(u) = max{u0 : f(u0) <= u} = block*u + min(u, rem), and
    F_G(v) = f+(F_{M,0}(v)). Lemma 8.4(ii): block*d/d0 <= g(v)/m_0(v) <= (block+1)*d/d0.
    """

    kind = "block"

    def __init__(self, mechanism: CountingMechanism, m: int) -> None:
        super().__init__(mechanism, m)
        if self.d0 < self.d:
            raise ValueError("Algorithm 8.5 needs d0 = 2^m >= d")
        self.block, self.rem = divmod(self.d0, self.d)

    def f(self, u0: int) -> int:
        """The map [1, d0] -> [1, d] of Algorithm 8.5."""
        if not 1 <= u0 <= self.d0:
            raise ValueError("u0 must be in [1, 2^m]")
        b, r = self.block, self.rem
        if u0 <= r * (b + 1):
            return -(-u0 // (b + 1))
        return -(-(u0 - r) // b)

    def f_plus(self, u: int) -> int:
        """max{u0 : f(u0) <= u} = block*u + min(u, rem), for u in [0, d]."""
        return self.block * u + min(u, self.rem)

    def cdf(self, v: int) -> int:
        if v < 0:
            return 0
        if v >= self.n:
            return self.d0
        return self.f_plus(self.mechanism.scaled_cdf(0, v))

    def sample(self, u0: int) -> int:
        """G(u0) = M(0, f(u0)) (agrees with the CDF search of the base class; tests check it)."""
        return self.mechanism.sample(0, self.f(u0))

    def ratio_bounds(self) -> tuple[Fraction, Fraction]:
        hi = Fraction((self.block + 1) * self.d, self.d0)
        lo = Fraction(self.block * self.d, self.d0)
        return max(Fraction(0), 1 / lo - 1), max(Fraction(0), hi - 1)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "m": self.m,
            "rule": "Algorithm 8.5: G(u0) = M(0, f(u0)), big blocks at the low end",
            "d": hex(self.d),
            "block": hex(self.block),
            "rem": hex(self.rem),
        }


SAMPLERS: dict[str, type[EmptyBinSampler]] = {"rounded-cdf": RoundedCdfSampler, "block": BlockSampler}
