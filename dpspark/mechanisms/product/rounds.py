"""Exact pieces shared by the product sampler (RSSS Alg 4) and the product learner (KLSU Alg 7).

A *round* reads one disjoint slice of the hash batches (unit u is in batch H_key(u) mod B, a keyed hash of
its id alone), keeps the active coordinates S of each record (flipped by a public mask), truncates the
record - y = x[S] if popcount(x[S]) <= C, else the zero vector - and sums. Everything that decides a
record's contribution (S, the flips, C, the batch slice) is public: a function of the plan and of earlier
rounds' noisy output only, never of other records.

Sensitivity of one round (exact; tested by enumeration in tests/unit/product/test_product_privacy.py). For binary
y, y' in {0,1}^S with popcounts <= C, ||y - y'||_2^2 = |y xor y'| <= min(|S|, |y| + |y'|), so

* Substitute(n) (change one record, n public): Delta^2 = min(|S|, 2C);
* AddRemove(n) (add or remove one record): Delta^2 = min(|S|, C).

Each shift is in {-1, 0, 1}, so the certified rho of the round is Delta^2 * rho(1) of the implemented
discrete Gaussian (:func:`dpspark.noise.dgauss.vector_rho`: independent coordinates add their rho,
Canonne-Kamath-Steinke 2020 with the certificate of the implemented law). Rounds read disjoint batches,
so a record moves one round's sums only and the rounds compose in parallel, adaptively (Bun-Steinke 2016,
adaptive composition, applied round by round: the rounds before the changed record's round have the same law; given
their outputs that round is rho_r-zCDP; the later rounds' inputs are unchanged): the run is max_r rho_r-zCDP.
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
from dpspark.noise.dgauss import DiscreteGaussian, sigma_grid_next, vector_rho
from dpspark.rng import RandomSource

#: a rational upper bound on ln 2 = 0.693147...
LN2_UP = Fraction(6932, 10000)
#: hash batches the units are split into (rounds get disjoint slices of them)
DEFAULT_BATCHES = 1 << 16


class NeedMoreUnits(DPSparkError, ValueError):
    """max_units is below the number of units the plan needs for its stated accuracy."""


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


def ceiling(u: Fraction, size: int, L: Fraction) -> int:
    """C = min(|S|, ceil(u|S| + sqrt(2u|S|L) + 2L/3)): Bernstein's bound on a record's popcount over S.

    If every coordinate of S has bias <= u, the popcount X has mean and variance <= u|S|, and
    Pr[X >= u|S| + t] <= exp(-t^2 / (2(u|S| + t/3))) <= e^{-L} at t = sqrt(2u|S|L) + 2L/3
    (Bernstein; t^2 >= 2L(u|S| + t/3) since t >= L/3 + sqrt(L^2/9 + 2u|S|L)).
    """
    v = u * size
    c = v + sqrt_up(2 * v * L) + Fraction(2, 3) * L
    return min(size, -((-c.numerator) // c.denominator))


def sensitivity_sq(size: int, ceil_c: int, relation: str = "substitute") -> int:
    """Delta^2 of one round's sum vector (module docstring): min(|S|, 2C) or min(|S|, C) under add/remove."""
    if relation == "substitute":
        return min(size, 2 * ceil_c)
    if relation == "add_remove":
        return min(size, ceil_c)
    raise ValueError(f"relation must be 'substitute' or 'add_remove', got {relation!r}")


@lru_cache(maxsize=256)
def gaussian(sigma: Fraction, radius: int) -> DiscreteGaussian:
    """The (cached) certified discrete Gaussian at ``sigma`` whose window holds sums in [0, radius]."""
    return DiscreteGaussian(sigma=sigma, data_radius=radius)


def round_rho(mech: DiscreteGaussian, size: int, ceil_c: int, relation: str = "substitute") -> Fraction:
    """Certified rho of one round: Delta^2 coordinates shifted by one (vector_rho of the implemented law)."""
    return vector_rho(mech, [1] * sensitivity_sq(size, ceil_c, relation))


def noise_sigma(size: int, ceil_c: int, rho: Fraction, radius: int) -> Fraction:
    """The smallest grid sigma (3 digits) whose certified round rho under Substitute(n) is <= rho."""
    s2 = sensitivity_sq(size, ceil_c)
    need = Fraction(s2) / (2 * rho)
    sigma = sigma_grid_next(sqrt_up(need, 20))
    for _ in range(100):  # public bound; a step only if the certificate had eta > 0 at this sigma
        if round_rho(gaussian(sigma, radius), size, ceil_c) <= rho:
            return sigma
        sigma = sigma_grid_next(sigma * Fraction(1001, 1000))
    raise DPSparkError("no grid sigma certifies the round's rho")  # pragma: no cover


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


def size_needed(v: Fraction, e: Fraction, sigma: Fraction, L: Fraction) -> Fraction:
    """The m with sqrt(2vmL) + 2L/3 <= e m / 2 (Bernstein deviation) and sigma sqrt(2L) <= e m / 2 (noise).

    The first is a quadratic in s = sqrt(m): (e/2)s^2 - sqrt(2vL)s - 2L/3 >= 0 for
    s >= (sqrt(2vL) + sqrt(2vL + 4eL/3)) / e. At that m, a Binomial-type count with variance <= v m
    misses its mean by more than e m / 2 w.p. <= 2e^{-L}, and N_Z(0, sigma^2) (sigma^2-subgaussian,
    Canonne-Kamath-Steinke 2020) exceeds e m / 2 in absolute value w.p. <= 2e^{-L}.
    """
    s = (sqrt_up(2 * v * L) + sqrt_up(2 * v * L + Fraction(4, 3) * e * L)) / e
    return max(s * s, 2 * sigma * sqrt_up(2 * L) / e)


@dataclass(frozen=True)
class RoundQuery:
    """One round's public parameters: what every record contributes, and which batches are read.

    A record x in a batch of [batch_lo, batch_hi) contributes y = (x[active] xor flip) if its popcount is
    at most ``ceiling``, else the zero vector; the answer is sum y over those records (exact ints).
    """

    index: int
    name: str
    active: tuple[int, ...]
    flip: tuple[bool, ...]
    ceiling: int
    batch_lo: int
    batch_hi: int
    batches: int

    def __post_init__(self) -> None:
        if len(self.flip) != len(self.active):
            raise ValueError("one flip per active coordinate")
        if not 0 <= self.batch_lo < self.batch_hi <= self.batches:
            raise ValueError("the batch slice must be a non-empty part of [0, batches)")


Aggregate = Callable[[RoundQuery], Sequence[int]]


def allocate(needs: Sequence[Fraction], n: int, batches: int = DEFAULT_BATCHES) -> list[tuple[int, int]]:
    """Disjoint slices [lo, hi) of the B hash batches, one per round, with n k_r / B >= needs[r].

    k_r = ceil(need_r B / n); the batches left over go to the rounds in proportion to their needs (more data,
    same privacy). Raises :class:`NeedMoreUnits` (naming the n needed) when sum k_r > B.
    """
    ks = [max(1, -(-(need * batches) // n)) for need in needs]  # ceil(need B / n)
    total_need = sum(needs, Fraction(0))
    if sum(ks) > batches:
        need_n = -(-(total_need + len(needs)) // 1)
        raise NeedMoreUnits(
            f"the plan needs about {need_n} units (sum of the round sizes) for its accuracy; "
            f"privacy.max_units = {n} is too small: raise max_units or alpha (or rho)")
    left = batches - sum(ks)
    extra = [int(left * need / total_need) for need in needs]
    extra[-1] += left - sum(extra)
    out, lo = [], 0
    for k, e in zip(ks, extra):
        out.append((lo, lo + k + e))
        lo += k + e
    return out


def allocate_proportional(needs: Sequence[Fraction], batches: int = DEFAULT_BATCHES) -> list[tuple[int, int]]:
    """Disjoint slices covering all B batches in proportion to the needs (benchmarks: any n, no refusal)."""
    total = sum(needs, Fraction(0))
    ks = [max(1, int(batches * x / total)) for x in needs]
    ks[-1] += batches - sum(ks)
    if ks[-1] < 1:
        raise ValueError("too few batches for the rounds")
    out, lo = [], 0
    for k in ks:
        out.append((lo, lo + k))
        lo += k
    return out


def nominal_size(n: int, lo: int, hi: int, batches: int) -> Fraction:
    """E[units in batches [lo, hi)] = n (hi - lo) / B when n units are hashed uniformly into B batches."""
    return Fraction(n * (hi - lo), batches)


def truncate(rows: np.ndarray, query: RoundQuery) -> np.ndarray:
    """The per-record contributions y (int64, one row per record) of ``query`` (reference implementation)."""
    idx = list(query.active)
    y = rows[:, idx].astype(np.int64) ^ np.asarray(query.flip, dtype=np.int64)
    keep = y.sum(axis=1) <= query.ceiling
    return y * keep[:, None]


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
        return [int(v) for v in truncate(self.rows[sel], query).sum(axis=0)]


def release_round(sums: Sequence[int], mech: DiscreteGaussian, rng: RandomSource) -> list[int]:
    """c~ = c + Z per coordinate (independent certified discrete Gaussian draws), as exact ints."""
    if not len(sums):
        return []
    return [int(v) for v in mech.add_many(np.asarray(list(sums), dtype=np.int64), rng)]


class RoundSizes:
    """``n_needed`` and ``size(i)`` of a round plan with fields ``n``, ``batches``, ``needs`` and ``slices``."""

    n: int
    batches: int
    needs: tuple[Fraction, ...]
    slices: tuple[tuple[int, int], ...]

    @property
    def n_needed(self) -> int:
        """The units the stated accuracy needs: the sum of the round sizes, rounded up."""
        total = sum(self.needs, Fraction(0))
        return -(-total.numerator // total.denominator)

    def size(self, i: int) -> Fraction:
        """Nominal size m of round i (0-based)."""
        lo, hi = self.slices[i]
        return nominal_size(self.n, lo, hi, self.batches)
