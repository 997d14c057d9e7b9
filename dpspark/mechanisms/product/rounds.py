"""Exact pieces shared by the product sampler and the product learner: one *round* and its noise.

A round reads a slice of the hash batches (unit u is in batch H_key(u) mod B, a keyed hash of its id alone),
keeps the active coordinates S of each record (flipped by a public mask), splits them into consecutive
*groups* G_1, G_2, ... with public ceilings C_1, C_2, ..., truncates each group on its own - y_G = x[G] if
popcount(x[G]) <= C_G, else the zero vector - and sums. It also counts the records of the slice. Everything
that decides a record's contribution (S, the flips, the groups, the ceilings, the slice) is public: a
function of the plan and of earlier rounds' noisy output only, never of other records.

Sensitivity of one round (exact; tested by enumeration in tests/unit/product/test_product_privacy.py). For
binary y, y' in {0,1}^G with popcounts <= C, ||y - y'||_2^2 = |y xor y'| <= min(|G|, |y| + |y'|), so per group

* Substitute(n) (change one record, n public): Delta_G^2 = min(|G|, 2C_G), and the count does not move;
* AddRemove(n) (add or remove one record): Delta_G^2 = min(|G|, C_G), and the count moves by one.

Every shift is in {-1, 0, 1}. Group G's coordinates get the certified discrete Gaussian at sigma_G and the
count its own at sigma_0, so the round's certified rho is sum_G Delta_G^2 rho_G(1) (+ rho_0(1) under
add/remove; :func:`dpspark.noise.dgauss.vector_rho`: independent coordinates add their rho, Canonne-Kamath-
Steinke 2020 with the certificate of the implemented law). :func:`group_sigma` makes a group's share rho_G
cover Delta_sub^2 rho_G(1) and Delta_ar^2 rho_G(1) / (1 - KAPPA); :func:`count_sigma` gives the count
KAPPA of the round's budget. So a round with budget rho_round is rho_round-zCDP under both relations.

The noisy count makes every estimate a ratio c~ / N~ of two noisy sums over the *same* records: nothing
divides by the public max_units, so data with fewer units than max_units are not biased towards 0 (issue 25).
How rounds compose (sequentially on the same units, or in parallel on disjoint batches) is stated where
they are run: :mod:`dpspark.mechanisms.product.learner`, :mod:`dpspark.mechanisms.product.sampler`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import isqrt
from typing import Callable, Sequence

import numpy as np

from dpspark.errors import DPSparkError
from dpspark.noise.dgauss import MAX_SIGMA, DiscreteGaussian, sigma_grid_next, vector_rho
from dpspark.rng import RandomSource

#: a rational upper bound on ln 2 = 0.693147...
LN2_UP = Fraction(6932, 10000)
#: hash batches the units are split into (rounds get slices of them)
DEFAULT_BATCHES = 1 << 16
#: the count coordinate's share of a round's add/remove budget (it costs nothing under substitution)
KAPPA = Fraction(1, 64)


class NeedMoreUnits(DPSparkError, ValueError):
    """The stated accuracy needs more units than privacy.max_units allows the data to hold."""


def need_more_units_text(need: int, n: int, what: str) -> str:
    """The refusal when max_units < the n the accuracy needs (no advice that would bias a result)."""
    return (f"the stated {what} needs at least {need} units, and privacy.max_units = {n} says the data holds at "
            f"most {n}: raise alpha (or rho); only if the data really holds at least {need} units, raise "
            "max_units to an upper bound on them (the estimates divide by a noisy count of the units, so a "
            "max_units above the data's size costs accuracy nowhere and biases nothing)")


def ln_upper(x: Fraction) -> Fraction:
    """A rational upper bound on ln x (x >= 1): ln 2 * log2(ceil x) <= 0.6932 * bitlen(ceil(x)^16 - 1) / 16."""
    c = -((-x.numerator) // x.denominator)
    if c < 1:
        raise ValueError("ln_upper needs x >= 1")
    return LN2_UP * Fraction((c**16 - 1).bit_length() if c > 1 else 0, 16)


def sqrt_up(x: Fraction, bits: int = 40) -> Fraction:
    """A rational r >= sqrt(x), within 2^-bits."""
    scaled = x * (1 << (2 * bits))
    s = isqrt(-((-scaled.numerator) // scaled.denominator))
    if s * s * scaled.denominator < scaled.numerator:
        s += 1
    return Fraction(s, 1 << bits)


def sqrt_down(x: Fraction, bits: int = 40) -> Fraction:
    """A rational r <= sqrt(x), within 2^-bits."""
    scaled = x * (1 << (2 * bits))
    return Fraction(isqrt(scaled.numerator // scaled.denominator), 1 << bits)


def ceil_int(x: Fraction) -> int:
    """ceil(x) for a rational x."""
    return -((-x.numerator) // x.denominator)


def ceiling_mass(v: Fraction, size: int, L: Fraction) -> int:
    """C = min(|S|, ceil(v + sqrt(2vL) + 2L/3)): Bernstein's bound on a record's popcount over S of mean <= v.

    The popcount X of independent bits over S has mean and variance <= v, so
    Pr[X >= v + t] <= exp(-t^2 / (2(v + t/3))) <= e^{-L} at t = sqrt(2vL) + 2L/3
    (Bernstein; t^2 >= 2L(v + t/3) since t >= L/3 + sqrt(L^2/9 + 2vL)). C is increasing in v.
    """
    c = v + sqrt_up(2 * v * L) + Fraction(2, 3) * L
    return min(size, ceil_int(c))


def ceiling(u: Fraction, size: int, L: Fraction) -> int:
    """:func:`ceiling_mass` when every coordinate of S has bias <= u (mass v = u|S|)."""
    return ceiling_mass(u * size, size, L)


def tail_mass_bound(v: Fraction, c: int, size: int) -> Fraction:
    """A certified upper bound on E[X 1{X > C}] for a popcount X over ``size`` independent bits of mean <= v.

    E[X 1{X > C}] = (C + 1) Pr[X >= C + 1] + sum_{k >= C + 2} Pr[X >= k] (summation by parts), and for
    k > v Chernoff's Pr[X >= k] <= b(k) = e^{k - v} (v / k)^k (the bound grows with the mean, so v may
    exceed it). b(k + 1) / b(k) <= e v / (k + 1), so the sum is <= b(C + 2) / (1 - e v / (C + 3)) once
    C + 3 > e v. The value 0 at C >= size (no record exceeds it); 1-valued terms where C is too small.
    """
    from dpspark.privacy.certified import upper

    if c >= size or v == 0:
        return Fraction(0)
    if 4 * (c + 3) <= 11 * v or c + 1 < v:  # C + 3 <= 2.75 v < e v (no geometric tail) or k < v: vacuous
        return Fraction(size)

    def expr(q):  # type: ignore[no-untyped-def]
        def b(k: int):  # type: ignore[no-untyped-def]
            return (q(Fraction(k) - v)).exp() * (q(v) / q(Fraction(k))) ** k
        ratio = q(Fraction(1)).exp() * q(v) / q(Fraction(c + 3))
        return (c + 1) * b(c + 1) + b(c + 2) / (1 - ratio)

    return upper(expr, 64)


def tail_ceiling(v: Fraction, size: int, eta: Fraction) -> int:
    """The smallest C with :func:`tail_mass_bound` (v, C) <= eta (|S| when none is): a bisection over [0, |S|].

    Truncating each record's popcount at C then moves the expected sum of the group by at most eta (an
    expectation over the data: what a sampler's output law needs, RSSS; not a bound on every record).
    """
    lo, hi = 0, size  # invariant: the bound at hi is <= eta (0 at |S|)
    for _ in range(size.bit_length() + 1):  # public bound on the bisection steps
        if lo >= hi:
            break
        mid = (lo + hi) // 2
        if tail_mass_bound(v, mid, size) <= eta:
            hi = mid
        else:
            lo = mid + 1
    return hi


def sensitivity_sq(size: int, ceil_c: int, relation: str = "substitute") -> int:
    """Delta^2 of one group's sum vector (module docstring): min(|G|, 2C) or min(|G|, C) under add/remove."""
    if relation == "substitute":
        return min(size, 2 * ceil_c)
    if relation == "add_remove":
        return min(size, ceil_c)
    raise ValueError(f"relation must be 'substitute' or 'add_remove', got {relation!r}")


@lru_cache(maxsize=1024)
def gaussian(sigma: Fraction, radius: int) -> DiscreteGaussian:
    """The (cached) certified discrete Gaussian at ``sigma`` whose window holds sums in [0, radius]."""
    return DiscreteGaussian(sigma=sigma, data_radius=radius)


def round_rho(mech: DiscreteGaussian, size: int, ceil_c: int, relation: str = "substitute") -> Fraction:
    """Certified rho of one group: Delta^2 coordinates shifted by one (vector_rho of the implemented law)."""
    return vector_rho(mech, [1] * sensitivity_sq(size, ceil_c, relation))


def _grid_sigma(need_sq: Fraction) -> Fraction:
    """The smallest 3-digit grid sigma with sigma^2 >= need_sq; refused above the sampler's 10^4."""
    sigma = sigma_grid_next(sqrt_up(need_sq, 20))
    if sigma > MAX_SIGMA:
        raise NeedMoreUnits(f"a round needs noise sigma above {MAX_SIGMA}: rho is too small for this many columns")
    return sigma


def group_sigma(size: int, ceil_c: int, rho: Fraction, radius: int, reserve: Fraction = KAPPA) -> Fraction:
    """The smallest grid sigma whose certified rho covers ``rho``: Delta_sub^2 rho(1) <= rho and
    Delta_ar^2 rho(1) <= (1 - reserve) rho (``reserve`` = KAPPA when the round's count pays from it, else 0)."""
    sub, ar = sensitivity_sq(size, ceil_c, "substitute"), sensitivity_sq(size, ceil_c, "add_remove")
    charge = max(Fraction(sub), Fraction(ar) / (1 - reserve))
    sigma = _grid_sigma(charge / (2 * rho))
    for _ in range(100):  # public bound; a step only if the certificate had eta > 0 at this sigma
        mech = gaussian(sigma, radius)
        if vector_rho(mech, [1] * sub) <= rho and vector_rho(mech, [1] * ar) <= (1 - reserve) * rho:
            return sigma
        sigma = _grid_sigma(sigma * sigma * Fraction(1001, 1000) ** 2)
    raise DPSparkError("no grid sigma certifies the group's rho")  # pragma: no cover


def nominal_sigma(size: int, ceil_c: int, rho: Fraction, reserve: Fraction = KAPPA) -> Fraction:
    """The grid sigma :func:`group_sigma` starts from (no certificate: for comparing groupings only)."""
    sub, ar = sensitivity_sq(size, ceil_c, "substitute"), sensitivity_sq(size, ceil_c, "add_remove")
    return _grid_sigma(max(Fraction(sub), Fraction(ar) / (1 - reserve)) / (2 * rho))


def count_sigma(rho: Fraction, radius: int, share: Fraction = KAPPA) -> Fraction:
    """The smallest grid sigma_0 whose certified rho(1) is <= ``share`` rho (the count coordinate of a round;
    its groups were calibrated with ``reserve = share``)."""
    sigma = _grid_sigma(1 / (2 * share * rho))
    for _ in range(100):  # public bound (as group_sigma)
        if gaussian(sigma, radius).zcdp_rho(1) <= share * rho:
            return sigma
        sigma = _grid_sigma(sigma * sigma * Fraction(1001, 1000) ** 2)
    raise DPSparkError("no grid sigma certifies the count's rho")  # pragma: no cover


def noise_sigma(size: int, ceil_c: int, rho: Fraction, radius: int) -> Fraction:
    """One group taking a whole round's budget, no count (the benchmarks' naive mean)."""
    return group_sigma(size, ceil_c, rho, radius, Fraction(0))


def abs_tail(mech: DiscreteGaussian, t: int) -> Fraction:
    """Pr[|Z| > t] of the implemented law, exactly (scaled-CDF differences): (F(-t-1) + 2^bits - F(t)) / 2^bits."""
    if t >= mech.R:
        return Fraction(0)
    return Fraction(mech.scaled_cdf(-t - 1) + mech.d - mech.scaled_cdf(t), mech.d)


def abs_quantile(mech: DiscreteGaussian, tail: Fraction) -> int:
    """The smallest integer t >= 0 with Pr[|Z| > t] <= ``tail`` under the implemented law (exact; a bisection
    over [0, R], at most bitlen(R) + 1 steps: a public bound)."""
    lo, hi = 0, mech.R  # invariant: abs_tail(hi) <= tail (0 at R)
    for _ in range(mech.R.bit_length() + 1):
        if lo >= hi:
            break
        mid = (lo + hi) // 2
        if abs_tail(mech, mid) <= tail:
            hi = mid
        else:
            lo = mid + 1
    return hi


def second_moment_upper(mech: DiscreteGaussian) -> Fraction:
    """E[Z^2] of the implemented law <= sigma^2 + (f + e + 2) * sum_{|y| <= R} y^2 / 2^bits.

    w(y) <= W g(y) + f + e + 1 (+ centre_add at 0, which adds no y^2) with W * theta <= 2^bits, and the
    ideal discrete Gaussian has E[Z^2] <= sigma^2 (Canonne-Kamath-Steinke 2020).
    """
    R = mech.R
    return mech.sigma**2 + Fraction((mech.floor + mech.extra + 2) * R * (R + 1) * (2 * R + 1), 3 * mech.d)


def floor_mass(mech: DiscreteGaussian) -> Fraction:
    """Mass the implemented law puts beyond the ideal one anywhere: (f + e + 2 + centre_add) m / 2^bits."""
    return Fraction((mech.floor + mech.extra + 2 + mech.centre_add) * mech.m, mech.d)


def deviation(v: Fraction, units: int | Fraction, L: Fraction) -> Fraction:
    """sqrt(2 v N L) + 2L/3: a count of N independent bits of variance <= v misses its mean by more than
    this w.p. <= 2e^{-L} (Bernstein, both tails)."""
    return sqrt_up(2 * v * units * L) + Fraction(2, 3) * L


def size_needed(v: Fraction, e: Fraction, sigma: Fraction, L: Fraction) -> Fraction:
    """The m with sqrt(2vmL) + 2L/3 <= e m / 2 (Bernstein deviation) and sigma sqrt(2L) <= e m / 2 (noise).

    The first is a quadratic in s = sqrt(m): (e/2)s^2 - sqrt(2vL)s - 2L/3 >= 0 for
    s >= (sqrt(2vL) + sqrt(2vL + 4eL/3)) / e. At that m, a Binomial-type count with variance <= v m
    misses its mean by more than e m / 2 w.p. <= 2e^{-L}, and N_Z(0, sigma^2) (sigma^2-subgaussian,
    Canonne-Kamath-Steinke 2020) exceeds e m / 2 in absolute value w.p. <= 2e^{-L}.
    """
    s = (sqrt_up(2 * v * L) + sqrt_up(2 * v * L + Fraction(4, 3) * e * L)) / e
    return max(s * s, 2 * sigma * sqrt_up(2 * L) / e)


def smallest_units(ok: Callable[[int], bool], start: int = 2, cap: int = 1 << 62) -> int:
    """The smallest N >= start with ``ok(N)`` for a monotone public predicate (doubling, then bisection)."""
    hi = max(start, 2)
    while not ok(hi):  # public: at most ~62 doublings
        if hi >= cap:
            return cap
        hi *= 2
    lo = max(start, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


@dataclass(frozen=True)
class RoundQuery:
    """One round's public parameters: what every record contributes, and which batches are read.

    ``groups`` splits ``active`` into consecutive parts (size, ceiling); empty means one group of all active
    coordinates at ``ceiling``. A record x in a batch of [batch_lo, batch_hi) contributes, group by group,
    (x[G] xor flip) if its popcount is at most the group's ceiling, else zeros; the answer is the sum of the
    contributions (exact ints), followed by the number of records read when ``count`` is set.
    """

    index: int
    name: str
    active: tuple[int, ...]
    flip: tuple[bool, ...]
    ceiling: int
    batch_lo: int
    batch_hi: int
    batches: int
    groups: tuple[tuple[int, int], ...] = ()
    count: bool = False

    def __post_init__(self) -> None:
        if len(self.flip) != len(self.active):
            raise ValueError("one flip per active coordinate")
        if not 0 <= self.batch_lo < self.batch_hi <= self.batches:
            raise ValueError("the batch slice must be a non-empty part of [0, batches)")
        if self.groups and sum(s for s, _ in self.groups) != len(self.active):
            raise ValueError("the groups must cover the active coordinates")

    @property
    def parts(self) -> tuple[tuple[int, int], ...]:
        """(size, ceiling) of each consecutive group of the active coordinates."""
        return self.groups or ((len(self.active), self.ceiling),)


Aggregate = Callable[[RoundQuery], Sequence[int]]


def nominal_size(n: int, lo: int, hi: int, batches: int) -> Fraction:
    """E[units in batches [lo, hi)] = n (hi - lo) / B when n units are hashed uniformly into B batches."""
    return Fraction(n * (hi - lo), batches)


def truncate(rows: np.ndarray, query: RoundQuery) -> np.ndarray:
    """The per-record contributions y (int64, one row per record) of ``query`` (reference implementation)."""
    idx = list(query.active)
    y = rows[:, idx].astype(np.int64) ^ np.asarray(query.flip, dtype=np.int64)
    start = 0
    for size, c in query.parts:
        part = y[:, start:start + size]
        part *= (part.sum(axis=1) <= c)[:, None]
        start += size
    return y


def batch_of(ids: Sequence[int], key: bytes, batches: int) -> np.ndarray:
    """H_key(id) mod B with keyed BLAKE2b of the id alone (the reference for the in-memory oracle)."""
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(int(i).to_bytes(16, "big", signed=True), key=key, digest_size=8).digest(),
                        "big") % batches for i in ids), dtype=np.int64, count=len(ids))


class RowsOracle:
    """The aggregate oracle on in-memory 0/1 rows with unit ids (tests): batches by keyed hash of the id."""

    def __init__(self, rows: np.ndarray, ids: Sequence[int], key: bytes, batches: int = DEFAULT_BATCHES) -> None:
        self.rows = np.asarray(rows, dtype=np.int64)
        self.batch = batch_of(ids, key, batches)
        self.batches = batches
        self.queries: list[RoundQuery] = []

    def __call__(self, query: RoundQuery) -> list[int]:
        if query.batches != self.batches:
            raise ValueError("the oracle and the query disagree on B")
        self.queries.append(query)
        sel = (self.batch >= query.batch_lo) & (self.batch < query.batch_hi)
        out = [int(v) for v in truncate(self.rows[sel], query).sum(axis=0)]
        return out + [int(sel.sum())] if query.count else out


@dataclass(frozen=True)
class RoundNoise:
    """The public noise of one round: sigma_G per group (``parts`` as in the query) and the count's sigma_0."""

    parts: tuple[tuple[int, int], ...]
    sigmas: tuple[Fraction, ...]
    sigma0: Fraction | None
    radius: int

    def rho(self, relation: str) -> Fraction:
        """Certified rho of the round (module docstring): sum over groups, plus the count under add/remove."""
        total = sum((round_rho(gaussian(s, self.radius), size, c, relation)
                     for (size, c), s in zip(self.parts, self.sigmas)), Fraction(0))
        if self.sigma0 is not None and relation == "add_remove":
            total += gaussian(self.sigma0, self.radius).zcdp_rho(1)
        return total

    def record(self) -> dict[str, object]:
        """The round's public noise, exact strings, for the release's ``rounds_run``."""
        return {"groups": [{"size": size, "ceiling": c, "sigma": str(s)} for (size, c), s in zip(self.parts, self.sigmas)],
                "count_sigma": None if self.sigma0 is None else str(self.sigma0),
                "rho_substitute": str(self.rho("substitute")), "rho_add_remove": str(self.rho("add_remove"))}


def release_round(sums: Sequence[int], noise: RoundNoise, rng: RandomSource) -> tuple[list[int], int | None]:
    """(c~ per active coordinate, N~ or None): independent certified discrete Gaussian draws, exact ints."""
    out: list[int] = []
    start = 0
    for (size, _), sigma in zip(noise.parts, noise.sigmas):
        part = np.asarray(list(sums[start:start + size]), dtype=np.int64)
        if size:
            out += [int(v) for v in gaussian(sigma, noise.radius).add_many(part, rng)]
        start += size
    if noise.sigma0 is None:
        return out, None
    return out, int(gaussian(noise.sigma0, noise.radius).add(int(sums[start]), rng))


def positive(count: int | None) -> int:
    """The noisy count as a divisor: max(N~, 1) (post-processing; the estimates divide by it)."""
    return max(int(count or 0), 1)
