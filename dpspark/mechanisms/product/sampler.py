"""RSSS Algorithm 4 (Thm 5.1 => Thm 1.6): one private sample from a product distribution on {0,1}^d.

Privacy claim
-------------
rho-zCDP under Substitute(n) (RSSS's neighbours: one record replaced, n public) and under AddRemove(n).
Every round is a certified discrete Gaussian on a truncated sum vector with Delta^2 = min(|S|, 2C)
(Substitute; min(|S|, C) under add/remove), sigma chosen on a grid so that Delta^2 * rho(1) <= rho
(:mod:`dpspark.mechanisms.product.rounds`); rounds read disjoint hash batches of the unit ids, so they compose in
parallel (adaptively): the run is max_r rho_r <= rho (RSSS Lemma 5.2). The final Bernoulli draws are
post-processing.

Algorithm (u_r = 2^-r, R = max(2, bitlen(d - 1)) so u_R <= 1/d)
---------------------------------------------------------------
* Bucketing round 1 on all d coordinates (no truncation: C = d): p~ = c~/m. Orient: flip j iff p~_j > 1/2
  (RSSS's footnote; the flip is public). Assign bucket 1 = {min(p~, 1 - p~) >= 3/16}; pass the rest.
* Bucketing round r = 2..R-1 on the passed set S_r (flipped), ceiling C_r = ceiling(u_r, |S_r|, L):
  bucket r = {p~ >= 3u_r/8}; the rest passes. Whatever is left after round R-1 is bucket R.
* Sampling round r = 1..R on fresh batches, coordinates B_r, ceiling C'_r (bucket 1: no truncation):
  c~ = c + N_Z(0, sigma'^2), v = clip(c~, 0, m'), output bit ~ Ber(v/m') (exact: a uniform integer), flipped
  back.

Constants [derived; RSSS states them only up to O(.)]
----------------------------------------------------
L = ln(16 (d + n) R / alpha) (rounded up), so e^{-L} <= alpha / (16 (d + n) R). Batch sizes are nominal
(m = n k / B for k of the B hash batches; with a random hash a batch count is a sum of n independent
Bernoulli(p k / B), mean p m, variance <= p m), and :func:`~dpspark.mechanisms.product.rounds.size_needed` makes the
Bernstein deviation and the noise each at most e m / 2 except w.p. 2e^{-L} each (+ the implemented law's
floor mass):

* bucketing round r: e = u_r/8 (so |p~ - p| <= u_r/8: assigned coordinates have p >= u_r/4, passed ones
  p < u_{r+1}; round 1: oriented biases in [1/8, 9/16]), variance bound v = min(u_r, 1/4);
* sampling round r < R: e = u_r/4, so c~ stays in [0, m'] (no clipping) except w.p. 4e^{-L};
* sampling round R (p < u_R <= 1/d): m' >= 2 d sigma_bar / alpha, where sigma_bar^2 >= E[Z^2] of the
  implemented law; then the clipping bias E[(-c~)_+]/m' <= E|Z|/(2 m') <= alpha/(4d) per coordinate.
* Every record's popcount over a round's coordinates exceeds its ceiling w.p. <= e^{-L} (Bernstein,
  :func:`~dpspark.mechanisms.product.rounds.ceiling`) whenever the invariants hold.

Then (RSSS Thm 5.1's argument: the output is a product distribution, so TV is subadditive over coordinates)
TV(output law, P) <= Pr[some bucketing step fails] + sum_j |E[y_j] - p_j|
<= 4 d R e^{-L} + 2 R n e^{-L} (bucketing deviations, truncations) + d * alpha/(4d) (last bucket)
+ d * 2 sqrt((m' u_r + sigma_bar^2) 4 e^{-L}) / m' (rare clipping elsewhere, Cauchy-Schwarz) + floor mass
<= alpha/4 + alpha/4 + (tiny) <= alpha: :meth:`SamplerPlan.accuracy_bound` computes the exact rational sum.
Statistical test of the claim and of the unbiasedness lemma: tests/unit/product/test_product_sampler.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpspark.exact import RationalLike, parse_rational
from dpspark.mechanisms.product import rounds as rd
from dpspark.rng import RandomSource


def bucket_count(d: int) -> int:
    """R = max(2, bitlen(d - 1)): u_R = 2^-R <= 1/d."""
    return max(2, (d - 1).bit_length())


def u(r: int) -> Fraction:
    """u_r = 2^-r."""
    return Fraction(1, 1 << r)


@dataclass(frozen=True)
class SamplerPlan(rd.RoundSizes):
    """Every public constant of one product-sampler release (data-free)."""

    d: int
    n: int
    rho: Fraction
    alpha: Fraction
    batches: int
    R: int
    L: Fraction
    needs: tuple[Fraction, ...]          # R-1 bucketing sizes then R sampling sizes (worst case |S| = d)
    slices: tuple[tuple[int, int], ...]  # the hash-batch slice of each of those 2R - 1 rounds
    worst_sigmas: tuple[Fraction, ...]

    @classmethod
    def build(cls, d: int, n: int, rho: RationalLike, alpha: RationalLike, *, batches: int = rd.DEFAULT_BATCHES,
              enforce: bool = True) -> "SamplerPlan":
        """The plan; with ``enforce`` it refuses (NeedMoreUnits) when n is below the rounds' total need."""
        rho_f, alpha_f = parse_rational(rho, "rho"), parse_rational(alpha, "alpha")
        if d < 1 or n < 1:
            raise rd.NeedMoreUnits("d and n must be >= 1")
        if rho_f <= 0 or not 0 < alpha_f <= 1:
            raise ValueError("rho must be > 0 and alpha in (0, 1]")
        R = bucket_count(d)
        L = rd.ln_upper(16 * (d + n) * R / alpha_f)
        needs, sigmas = [], []
        for r in range(1, R):
            c = d if r == 1 else rd.ceiling(u(r), d, L)
            s = rd.noise_sigma(d, c, rho_f, n)
            sigmas.append(s)
            needs.append(rd.size_needed(min(u(r), Fraction(1, 4)), u(r) / 8, s, L))
        for r in range(1, R + 1):
            c = d if r == 1 else rd.ceiling(u(r), d, L)
            s = rd.noise_sigma(d, c, rho_f, n)
            sigmas.append(s)
            need = rd.size_needed(min(u(r), Fraction(1, 4)), u(r) / 4 if r < R else Fraction(1, 2), s, L)
            if r == R:
                sbar = rd.sqrt_up(rd.second_moment_upper(rd.gaussian(s, n)))
                need = max(need, 2 * d * sbar / alpha_f)
            needs.append(need)
        if enforce:
            slices = rd.allocate(needs, n, batches)
        else:  # benchmarks: run at any n, sizes in proportion to the needs
            slices = rd.allocate_proportional(needs, batches)
        return cls(d, n, rho_f, alpha_f, batches, R, L, tuple(needs), tuple(slices), tuple(sigmas))


    def accuracy_bound(self) -> Fraction:
        """The exact rational TV bound of the module docstring (<= alpha when n >= n_needed)."""
        eL = self.alpha / (16 * (self.d + self.n) * self.R)  # >= e^{-L}
        R, d = self.R, self.d
        total = 4 * d * R * eL + 2 * R * self.n * eL
        fm = max(rd.floor_mass(rd.gaussian(s, self.n)) for s in self.worst_sigmas)
        total += 2 * d * R * fm
        for r in range(1, R + 1):
            i = R - 1 + r - 1
            m = self.size(i)
            mech = rd.gaussian(self.worst_sigmas[i], self.n)
            var = rd.second_moment_upper(mech)
            rare = 2 * rd.sqrt_up((m * u(r) + var) * 4 * eL) / m
            if r == R:
                total += d * (rd.sqrt_up(var) / (2 * m) + rare)
            else:
                total += d * rare
        return total

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready plan."""
        names = [f"bucketing {r}" for r in range(1, self.R)] + [f"sampling {r}" for r in range(1, self.R + 1)]
        return {
            "d": self.d, "n": self.n, "rho": str(self.rho), "alpha": str(self.alpha), "R": self.R,
            "L": str(self.L), "hash_batches": self.batches, "n_needed": self.n_needed,
            "accuracy_bound": str(self.accuracy_bound()),
            "rounds": [{"name": nm, "batches": list(sl), "nominal_size": str(self.size(i)),
                        "worst_case_sigma": str(self.worst_sigmas[i])}
                       for i, (nm, sl) in enumerate(zip(names, self.slices))],
        }


@dataclass
class SamplerRun:
    """The public outcome of one run: the sample and the (post-processed) bucket structure."""

    sample: list[int]
    flips: list[bool]
    buckets: list[list[int]]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: Pr[sample_j = 1 | the noisy counts] = clip(c~_j, 0, m') / m' (flipped back): exact, for accuracy tests only
    probabilities: list[Fraction] = field(default_factory=list)


def _round(plan: SamplerPlan, i: int, name: str, active: list[int], flips: list[bool], c: int,
           aggregate: rd.Aggregate, rng: RandomSource, offset: int, total: int) -> tuple[list[int], Fraction, dict[str, Any]]:
    """Run one round: the truncated sums of ``active`` on slice i, noised; returns (c~, m, public record)."""
    lo, hi = plan.slices[i]
    sigma = rd.noise_sigma(len(active), c, plan.rho, plan.n)
    mech = rd.gaussian(sigma, plan.n)
    q = rd.RoundQuery(i, name, tuple(active), tuple(flips[j] for j in active), c, lo + offset, hi + offset, total)
    noisy = rd.release_round(aggregate(q), mech, rng)
    rec = {"name": name, "coordinates": len(active), "ceiling": c, "sigma": str(sigma),
           "batches": [lo + offset, hi + offset],
           "rho_substitute": str(rd.round_rho(mech, len(active), c, "substitute")),
           "rho_add_remove": str(rd.round_rho(mech, len(active), c, "add_remove"))}
    return noisy, plan.size(i), rec


def run_sampler(plan: SamplerPlan, aggregate: rd.Aggregate, rng: RandomSource, *, offset: int = 0,
                total_batches: int | None = None) -> SamplerRun:
    """RSSS Alg 4 over the aggregate oracle (module docstring). ``offset``: this sample's first hash batch."""
    d, R = plan.d, plan.R
    B = total_batches or plan.batches
    flips = [False] * d
    buckets: list[list[int]] = []
    records: list[dict[str, Any]] = []
    # bucketing round 1: orientation and bucket 1, no truncation
    noisy, m, rec = _round(plan, 0, "bucketing 1", list(range(d)), flips, d, aggregate, rng, offset, B)
    records.append(rec)
    b1, passed = [], []
    for j, cj in enumerate(noisy):
        flips[j] = 2 * cj > m  # p~ > 1/2
        oriented = m - cj if flips[j] else Fraction(cj)
        (b1 if 16 * oriented >= 3 * m else passed).append(j)
    buckets.append(b1)
    for r in range(2, R):
        if not passed:
            buckets.append([])
            continue
        c = rd.ceiling(u(r), len(passed), plan.L)
        noisy, m, rec = _round(plan, r - 1, f"bucketing {r}", passed, flips, c, aggregate, rng, offset, B)
        records.append(rec)
        br, rest = [], []
        for j, cj in zip(passed, noisy):
            (br if cj * 8 >= 3 * u(r) * m else rest).append(j)  # p~ >= 3 u_r / 8
        buckets.append(br)
        passed = rest
    buckets.append(passed)
    sample = [0] * d
    probs = [Fraction(0)] * d
    for r in range(1, R + 1):
        br = buckets[r - 1]
        if not br:
            continue
        c = len(br) if r == 1 else rd.ceiling(u(r), len(br), plan.L)
        i = R - 1 + r - 1
        noisy, m, rec = _round(plan, i, f"sampling {r}", br, flips, c, aggregate, rng, offset, B)
        records.append(rec)
        for j, cj in zip(br, noisy):
            sample[j] = bernoulli_clipped(cj, m, rng) ^ int(flips[j])
            pj = min(max(Fraction(cj), Fraction(0)), m) / m
            probs[j] = 1 - pj if flips[j] else pj
    return SamplerRun(sample, flips, buckets, records, probs)


def bernoulli_clipped(noisy: int, m: Fraction, rng: RandomSource) -> int:
    """One draw of Ber(clip(noisy, 0, m) / m), exactly: U uniform on [1, a] against clip(noisy) * b, m = a/b."""
    a, b = m.numerator, m.denominator
    v = min(max(noisy, 0) * b, a)
    return int(rng.uniform(a) <= v)

