"""Auditing CompactHistogram: an output view for events, a toy-field pipeline, and the exact law at one bin.

Why a toy field. The production release works over GF(2^m) with m >= 64
(``dpspark.mechanisms.compact.SUPPORTED_M``). A one-element error in an empty-bin
preimage (the issue's mutant 4) moves probability 2^-m, so at m = 64 a
black-box audit would need about 10^21 runs. Over GF(2^6) (the field of the
exhaustive test) one element is 1/64 of the mass and a few thousand runs catch
it. :func:`toy_compact_histogram` is Algorithm 8.2 exactly as
:func:`dpspark.mechanisms.compact.compact_histogram` runs it (the production
``noisy_counts``, ``draw_targets``, samplers and ``compact_privacy``; p = L_S +
Z_S R with R from one ``rng.bits`` draw), only over a small field GF(2^m),
m = 2 * 3^j in {2, 6}, modulus z^m + z^(m/2) + 1 (BV Lemma 8.1; docs/balcer-vadhan-notes.md §C1).

Exact law at one bin (the derived identity of :mod:`dpspark.mechanisms.compact.privacy`).
For neighbours D (bin x with count c >= 1) and D' (x empty, everything else
equal), Pr_D[p] / Pr_D'[p] = d0 * w_c(iota(p(phi(x)))), where w_c(u) is the
probability that x's target is u. So the privacy loss of the whole release
depends only on the field value at x, and :func:`field_value_law` /
:func:`exact_new_bin_ratios` give it exactly (rationals, interval by
interval, at any m, including m = 64).

Floats: none here decide a released value; the toy release is audit-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpspark.mechanisms.compact.construct import draw_targets
from dpspark.mechanisms.compact.privacy import compact_privacy
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.noise import CountingMechanism
from dpspark.mechanisms.histogram.basic import noisy_counts
from dpspark.mechanisms.histogram.inputs import CountsLike, check_counts, check_mechanism
from dpspark.mechanisms.histogram.result import PrivacyStatement
from dpspark.rng import RandomSource

#: Toy fields m = 2 * 3^j with the modulus z^m + z^(m/2) + 1 (irreducible over GF(2), [Lin99]).
TOY_MODULI: dict[int, int] = {2: 0b111, 6: 0b1001001}


# ------------------------------------------------------------------ output view for events


@dataclass(frozen=True)
class CompactView:
    """What an auditor reads from one compact release at the watched bins.

    ``counts`` = looked-up counts h(x) = G(iota(p(phi(x)))) (``as_dict`` makes the
    standard histogram events work); ``field_values`` = iota(p(phi(x))) in [1, 2^m].
    """

    counts: Mapping[int, int]
    field_values: Mapping[int, int]
    privacy: PrivacyStatement | None = None

    def as_dict(self) -> dict[int, int]:
        """The looked-up counts of the watched bins (every watched bin has one: nothing is ever absent)."""
        return dict(self.counts)


# ------------------------------------------------------------------ toy field GF(2^m), m in {2, 6}


class ToyField:
    """GF(2^m) on Python ints (bit i = coefficient of z^i), for m in :data:`TOY_MODULI`."""

    def __init__(self, m: int) -> None:
        if m not in TOY_MODULI:
            raise ValueError(f"toy field degree must be one of {sorted(TOY_MODULI)}")
        self.m = m
        self.size = 1 << m
        self.modulus = TOY_MODULI[m]

    def mul(self, a: int, b: int) -> int:
        """a * b mod the modulus (carry-less product, then reduction)."""
        out = 0
        while b:
            if b & 1:
                out ^= a
            b >>= 1
            a <<= 1
            if a >> self.m:
                a ^= self.modulus
        return out

    def inv(self, a: int) -> int:
        """a^(2^m - 2) = a^-1 for a != 0."""
        if a == 0:
            raise ZeroDivisionError("0 has no inverse")
        out, base, e = 1, a, self.size - 2
        while e:
            if e & 1:
                out = self.mul(out, base)
            base = self.mul(base, base)
            e >>= 1
        return out

    def poly_mul(self, a: Sequence[int], b: Sequence[int]) -> list[int]:
        """Product of coefficient lists (ascending)."""
        out = [0] * (len(a) + len(b) - 1)
        for i, x in enumerate(a):
            if x:
                for j, y in enumerate(b):
                    out[i + j] ^= self.mul(x, y)
        return out

    def horner(self, coeffs: Sequence[int], x: int) -> int:
        """p(x) for ascending coefficients."""
        acc = 0
        for c in reversed(coeffs):
            acc = self.mul(acc, x) ^ c
        return acc

    def conditioned_polynomial(self, ell: int, points: Sequence[int], values: Sequence[int], rng: RandomSource) -> list[int]:
        """p = L_S + Z_S R of degree < ell through (points[i], values[i]); R from one rng.bits draw (as production)."""
        k = len(points)
        if not 0 <= k < ell or len(values) != k or len(set(points)) != k:
            raise ValueError("need k < ell distinct points and one value each")
        raw = rng.bits((ell - k) * self.m)
        r = [(raw >> (self.m * i)) & (self.size - 1) for i in range(ell - k)]
        z = [1]
        for s in points:
            z = self.poly_mul(z, [s, 1])  # (z - s) = (z + s) in characteristic 2
        lag = [0] * ell
        for i, (xi, yi) in enumerate(zip(points, values)):
            basis, den = [1], 1
            for j, xj in enumerate(points):
                if j != i:
                    basis = self.poly_mul(basis, [xj, 1])
                    den = self.mul(den, xi ^ xj)
            scale = self.mul(yi, self.inv(den))
            for t, c in enumerate(basis):
                lag[t] ^= self.mul(scale, c)
        p = self.poly_mul(z, r) + [0] * ell
        return [p[t] ^ lag[t] for t in range(ell)]


@dataclass(frozen=True)
class ToyCompactRelease:
    """A compact release over a toy field: coefficients (ascending ints), the sampler and the claim."""

    coefficients: tuple[int, ...]
    field: ToyField
    sampler: EmptyBinSampler
    privacy: PrivacyStatement
    parameters: dict[str, Any] = field(default_factory=dict)

    def field_values(self, indexes: Sequence[int]) -> list[int]:
        """iota(p(phi(x))) = int(p(x)) + 1 for each 0-based index x."""
        return [self.field.horner(self.coefficients, x) + 1 for x in indexes]

    def lookup(self, indexes: Sequence[int]) -> list[int]:
        """h(x) = G(iota(p(phi(x)))) for each 0-based index x."""
        return [self.sampler.sample(u) for u in self.field_values(indexes)]


def toy_compact_histogram(
    counts: CountsLike,
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    sampler: EmptyBinSampler,
    rng: RandomSource,
) -> ToyCompactRelease:
    """Algorithm 8.2 over GF(2^sampler.m), m in {2, 6}: the production steps on a toy field (audit only).

    The claim is the production one for this (M, G): ``compact_privacy(M, G, rng.lam).add_remove(n)``.
    """
    check_mechanism(mechanism, n)
    fld = ToyField(sampler.m)
    if not 1 <= universe_size <= fld.size:
        raise ValueError(f"the toy universe must fit in GF(2^{fld.m})")
    keys, values = check_counts(counts, universe_size, n)
    noisy = noisy_counts(keys, dict(zip(keys, values)), mechanism, rng)
    targets = draw_targets(sampler, noisy, rng)
    coeffs = fld.conditioned_polynomial(n + 1, keys, [u - 1 for u in targets], rng)
    return ToyCompactRelease(
        coefficients=tuple(coeffs),
        field=fld,
        sampler=sampler,
        privacy=compact_privacy(mechanism, sampler, rng.lam).add_remove(mechanism.n),
        parameters={"m": fld.m, "modulus": hex(fld.modulus), "ell": n + 1, "n": n},
    )


# ------------------------------------------------------------------ exact law at one bin


@dataclass(frozen=True)
class LawPiece:
    """Every u in [lo, hi] has probability ``prob`` of being the bin's field value."""

    lo: int
    hi: int
    prob: Fraction


def field_value_law(mechanism: CountingMechanism, sampler: EmptyBinSampler, c: int) -> list[LawPiece]:
    """Exact law of iota(p(phi(x))) for a bin x with true count c, through ``sampler.preimage``.

    c = 0 (x outside the support): uniform on [1, d0]. c >= 1: the noisy count v
    has probability m_c(v), then the target is uniform on preimage(v). Elements
    of [1, d0] no preimage covers get probability 0 (a piece of its own).
    """
    d0 = sampler.d0
    if c == 0:
        return [LawPiece(1, d0, Fraction(1, d0))]
    pmf = mechanism.pmf(c)
    weight: dict[tuple[int, int], Fraction] = {}
    for v in range(sampler.n + 1):
        lo, hi = sampler.preimage(v)
        if hi >= lo and pmf[v]:
            weight[lo, hi] = weight.get((lo, hi), Fraction(0)) + pmf[v] / (hi - lo + 1)
    # split [1, d0] at every interval edge: overlapping or missing intervals stay exact
    edges = sorted({1, d0 + 1} | {e for lo, hi in weight for e in (lo, hi + 1)})
    pieces = []
    for a, b in zip(edges, edges[1:]):
        prob = sum((w for (lo, hi), w in weight.items() if lo <= a and b - 1 <= hi), Fraction(0))
        pieces.append(LawPiece(a, b - 1, prob))
    return pieces


def exact_new_bin_ratios(mechanism: CountingMechanism, sampler: EmptyBinSampler, c: int = 1) -> tuple[Fraction, Fraction]:
    """(max, min) over field values u of Pr_D[p] / Pr_D'[p] = d0 * w_c(u), exactly.

    D has the bin with count c, D' has it empty (all else equal). The D vs D'
    loss is ln(max); the D' vs D loss is ln(1 / min), infinite iff min = 0.
    """
    ratios = [piece.prob * sampler.d0 for piece in field_value_law(mechanism, sampler, c)]
    return max(ratios), min(ratios)


def event_probability(law: list[LawPiece], lo: int, hi: int) -> Fraction:
    """Pr[field value in [lo, hi]] under ``law`` (exact)."""
    total = Fraction(0)
    for piece in law:
        a, b = max(lo, piece.lo), min(hi, piece.hi)
        if a <= b:
            total += piece.prob * (b - a + 1)
    return total
