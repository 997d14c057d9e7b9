"""One private sample from a product distribution on {0,1}^d (RSSS Alg 4, Thm 5.1 => Thm 1.6, restructured).

Algorithm (u_r = 2^-r, R = max(2, bitlen(d - 1)) so u_R <= 1/d)
---------------------------------------------------------------
The sample's hash batches are split once: the first share s (public) are the ladder's units D1, the rest
the sampling units D2 (a unit is in one of them, by a keyed hash of its id).

* On D1, the ladder of :mod:`dpspark.mechanisms.product.ladder` (RSSS's bucketing rounds 1..K, orientation,
  the noisy count of D1), spending rho over its K rounds.
* On D2, ONE sampling round (rho): the non-empty buckets cut into consecutive groups, each truncated at its
  own ceiling C_G = :func:`~dpspark.mechanisms.product.rounds.tail_ceiling` (v_G, |G|, eta_G) with v_G =
  sum_{r in G} ubar_r |B_r| (bucket 1 untruncated), and the noisy count M~ of D2; then
  y_j ~ Ber(clip(c~_j, 0, m) / m) with m = max(M~, 1) (an exact uniform integer), flipped back.
* Fallback (s = 0, K = 0): no ladder; one round on all the units, no truncation - the naive noisy-mean
  sampler - when the plan predicts the ladder cannot pay for its share of the data.

(s, K) is chosen by the plan from public values only (d, rho, alpha, n = max_units): the K deepest rounds
whose worst-case noise at s n units resolves each round's threshold (noise <= half of it), and the s that
maximises the light group's units per unit of noise, (1 - s) n / sigma_light (a heuristic, chosen on
simulations; the privacy proof never uses it, the accuracy bound below is computed for the chosen plan).
Dividing by noisy counts of the units read, never by max_units, keeps the sample unbiased when the data hold
fewer units than max_units (issue 25).

Privacy claim
-------------
rho-zCDP under Substitute(n) (RSSS's neighbours) and AddRemove(n). Each round's certified rho is <= its budget
under both relations (:mod:`dpspark.mechanisms.product.rounds`: group sums, and the count, which moves only
under add/remove). D1's rounds read the same units and compose adaptively: sum rho_r = rho (Bun-Steinke 2016,
Lemma 2.3). D1 and D2 are disjoint, so a unit moves D1's rounds or D2's round, never both; D2's parameters are
chosen from D1's public output, so given that output D2's round is rho-zCDP and D1's law does not depend
on D2's units: the run is max(rho, rho) = rho. Several samples use disjoint batch groups (parallel). The
Bernoulli draws are post-processing.

Accuracy [derived; RSSS state it up to O(.)]
--------------------------------------------
L = ln(16 (d + n) R / alpha) rounded up, e^{-L} <= alpha / (16 (d + n) R). With N units in the sample's
batches, N1 ~ Bin(N, s) of them in D1 and M = N - N1 in D2 (a random hash), off probability 2e^{-L} each
side of sN by sqrt(2 s(1-s) N L) + 2L/3. D1: the ladder's events and requirements (as the learner's
bucketing rounds: count, per-coordinate Bernstein, noise draws, no truncation; estimates within 1/16 and u_r/8)
give the invariants (bucket 1: oriented p in [1/8, 9/16]; bucket r: [u_r/4, u_r); rest: p < u_{K+1}).
Given D1's outcome on them, D2's records are fresh and i.i.d.:

* y' (the same draws from the UNtruncated counts c'): Pr[y != y'] <= sum_j E[c'_j - c_j] / (M - t0)
  <= eta M / (M - t0), since sum_{j in G} E[c'_j - c_j] = M E[pop_G 1{pop_G > C_G}] <= M eta_G (Chernoff,
  :func:`~dpspark.mechanisms.product.rounds.tail_mass_bound`; sum_G eta_G <= eta = alpha / 16);
* given M and M~ (|M~ - M| <= t0 = sigma_0 sqrt(2L), else w.p. 2e^{-L}), the c'_j are independent
  Bin(M, p_j), so y' is a product and TV <= sum_j |E[y'_j | M, M~] - p_j| (the law is a mixture over M, M~ of
  such products: convexity of TV). Per coordinate of bucket r, with sigma <= sigma*_r (second moment
  <= sbar^2): p t0 / (M - t0) (the ratio) + E[(-X)_+] / (M - t0) + E[(X - M~)_+] / (M - t0), X = c' + Z;
  E[(-X)_+] <= sbar / 2 (X >= Z), or <= sqrt((M ubar + sbar^2)(2e^{-L} + floor mass)) when
  M lower_r / 2 clears both the Bernstein deviation and sigma sqrt(2L) (Cauchy-Schwarz: RSSS's rare
  clipping); E[(X - M~)_+] likewise with M (1 - ubar) - t0, else <= t0 + sbar/2 (c' <= M <= M~ + t0).

So TV(output law, P) <= Pr[a D1 or split event fails] + 2e^{-L} + floor mass + eta M/(M - t0)
+ d max_r (per-coordinate bound of bucket r): :meth:`SamplerPlan.tv_bound` computes it exactly at the worst
N1, M of the split; :attr:`SamplerPlan.n_needed` is the smallest N with tv_bound <= alpha, and the claim holds
for n_needed <= N <= n. Statistical tests: tests/unit/product/test_product_sampler.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpspark.exact import RationalLike, parse_rational
from dpspark.mechanisms.product import ladder as ld
from dpspark.mechanisms.product import rounds as rd
from dpspark.rng import RandomSource

u = ld.u
#: the D1 shares the plan chooses from (0: the fallback)
SHARES = (Fraction(1, 4), Fraction(3, 8), Fraction(1, 2))
#: the count's share of the sampling round when it truncates (free there under add/remove), and in the fallback
D2_RESERVE, FALLBACK_RESERVE = Fraction(1, 4), Fraction(1, 64)
#: a ladder round is kept when its worst-case noise is at most 1/Z0 of its threshold (heuristic)
Z0 = 2


def bucket_count(d: int) -> int:
    """R = max(2, bitlen(d - 1)): u_R = 2^-R <= 1/d."""
    return max(2, (d - 1).bit_length())


def threshold(r: int) -> Fraction:
    """Ladder round r's threshold on the oriented bias: 3/16 (r = 1) or 3 u_r / 8."""
    return Fraction(3, 16) if r == 1 else 3 * u(r) / 8


def sbar(sigma: Fraction, radius: int) -> Fraction:
    """sqrt(E[Z^2]) bound for every implemented law of sigma' <= sigma: sigma^2 plus the floor term of the
    next grid sigma's law (the floor term grows with sigma)."""
    mech = rd.gaussian(rd.sigma_grid_next(sigma), radius)
    return rd.sqrt_up(sigma * sigma + rd.second_moment_upper(mech) - mech.sigma**2)


def choose_schedule(d: int, n: int, rho: Fraction, alpha: Fraction, L: Fraction, R: int) -> tuple[Fraction, int]:
    """(s, K) from public values only (module docstring); (0, 0) is the fallback."""
    eta = alpha / 16
    best = (Fraction(0), 0, n / rd.nominal_sigma(d, d, rho, FALLBACK_RESERVE))
    for s in SHARES:
        K = 0
        for k in range(1, R):
            w = ld.ladder_weights(d, k, L)
            if all(rd.nominal_sigma(d, ld.worst_ceiling(r, d, L), rho * w[r - 1], Fraction(0)) <= threshold(r) * s * n / Z0
                   for r in range(1, k + 1)):
                K = k
        if K == 0:
            continue
        c = rd.tail_ceiling(u(K + 1) * d, d, eta / (K + 1))
        value = (1 - s) * n / rd.nominal_sigma(d, c, rho, D2_RESERVE)
        if value > best[2]:
            best = (s, K, value)
    return best[0], best[1]


@dataclass(frozen=True)
class SamplerPlan:
    """Every public constant of one product-sampler release (data-free), for one sample's batches."""

    d: int
    n: int
    rho: Fraction
    alpha: Fraction
    batches: int
    R: int
    L: Fraction
    share: Fraction
    K: int
    split: int
    ladder: ld.LadderPlan | None
    final: ld.FinalPlan
    eta: Fraction
    n_needed: int

    @classmethod
    def build(cls, d: int, n: int, rho: RationalLike, alpha: RationalLike, *, batches: int = rd.DEFAULT_BATCHES,
              enforce: bool = True, schedule: tuple[Fraction, int] | None = None) -> "SamplerPlan":
        """The plan; with ``enforce`` it refuses (NeedMoreUnits) when max_units is below :attr:`n_needed`.
        ``schedule`` (s, K) overrides the plan's choice (tests)."""
        rho_f, alpha_f = parse_rational(rho, "rho"), parse_rational(alpha, "alpha")
        if d < 1 or n < 1:
            raise rd.NeedMoreUnits("d and n must be >= 1")
        if rho_f <= 0 or not 0 < alpha_f <= 1:
            raise ValueError("rho must be > 0 and alpha in (0, 1]")
        R = bucket_count(d)
        L = rd.ln_upper(16 * (d + n) * R / alpha_f)
        s, K = schedule if schedule is not None else choose_schedule(d, n, rho_f, alpha_f, L, R)
        eta = alpha_f / 16
        if K == 0:
            split, lad = 0, None
            final = ld.FinalPlan.build(rho_f, [Fraction(1)], [d], d, n, FALLBACK_RESERVE)
        else:
            split = max(1, min(batches - 1, int(s * batches)))
            lad = ld.LadderPlan.build(d, K, L, rho_f, n)
            ceilings = [d] + [rd.tail_ceiling(u(r) * d, d, eta / (K + 1)) for r in range(2, K + 2)]
            coef = [2 * rd.sqrt_up(2 * L) / ld.lower_bias(r, K + 1) for r in range(1, K + 1)] + [2 * d / alpha_f]
            need = [rd.sensitivity_sq(d, c) * k * k for c, k in zip(ceilings, coef)]
            final = ld.FinalPlan.build(rho_f, need, ceilings, d, n, D2_RESERVE)
        plan = cls(d, n, rho_f, alpha_f, batches, R, L, s, K, split, lad, final, eta, 0)
        object.__setattr__(plan, "n_needed", rd.smallest_units(lambda N: plan.tv_bound(N) <= alpha_f))
        if enforce and n < plan.n_needed:
            raise rd.NeedMoreUnits(rd.need_more_units_text(plan.n_needed, n, "TV bound (alpha)"))
        return plan

    @property
    def e_l(self) -> Fraction:
        """A rational upper bound on e^{-L}."""
        return self.alpha / (16 * (self.d + self.n) * self.R)

    def _fm(self, sigmas: list[Fraction]) -> Fraction:
        return max(rd.floor_mass(rd.gaussian(rd.sigma_grid_next(s), self.n)) for s in sigmas)

    def _d1_failure(self, n1: Fraction) -> Fraction | None:
        """Pr[a D1 event fails] at n1 units, or None when a ladder requirement fails there."""
        from dpspark.mechanisms.product.learner import estimate_error

        lad = self.ladder
        assert lad is not None
        t0 = lad.sigma0 * rd.sqrt_up(2 * self.L)
        N = int(n1)
        for r in range(1, self.K + 1):
            ub = Fraction(1) if r == 1 else u(r)
            err = estimate_error(min(ub, Fraction(1, 4)), lad.worst_sigmas[r - 1], ub, t0, N, self.L)
            if err is None or err > (Fraction(1, 16) if r == 1 else u(r) / 8):
                return None
        draws = 1 + self.K * self.d
        fm = self._fm(list(lad.worst_sigmas) + [lad.sigma0])
        return self.e_l * (2 * draws + 2 * self.d + (self.K - 1) * self.n) + draws * fm

    def _coordinate(self, r: int, M: Fraction, t0: Fraction) -> Fraction:
        """The per-coordinate bound of bucket r at M units in D2 (module docstring)."""
        rest = self.K + 1
        ub = Fraction(1) if self.K == 0 else ld.upper_bias(r)
        lower = Fraction(0) if self.K == 0 else ld.lower_bias(r, rest)
        star = self.final.star[r - 1]
        sb = sbar(star, self.n)
        noise = star * rd.sqrt_up(2 * self.L)
        fm = self._fm([star])
        rare = rd.sqrt_up((M * ub + sb * sb) * (2 * self.e_l + fm))
        dev = rd.deviation(min(ub, Fraction(1, 4)), M, self.L)
        low_gap = M * lower / 2
        low = rare if low_gap >= dev and low_gap >= noise and lower > 0 else sb / 2
        high_gap = (M * (1 - ub) - t0) / 2
        # above M~ >= M - t0: rare when the gap clears both tails, else E[(c' + Z - M~)_+] <= t0 + E[Z_+] (c' <= M)
        high = rare if high_gap >= dev and high_gap >= noise else t0 + sb / 2
        return (ub * t0 + low + high) / (M - t0)

    def tv_bound(self, N: int) -> Fraction:
        """The exact TV bound of the module docstring with N units in the sample's batches (1 if vacuous)."""
        L, d = self.L, self.d
        t0 = rd.count_sigma(self.final.rho, self.n) * rd.sqrt_up(2 * L)
        s = Fraction(self.split, self.batches)
        total = Fraction(0)
        if self.K == 0:
            M = Fraction(N)
        else:
            dev = rd.deviation(s * (1 - s), N, L)
            n1, M = s * N - dev, (1 - s) * N - dev
            if n1 < 2:
                return Fraction(1)
            fail = self._d1_failure(n1)
            if fail is None:
                return Fraction(1)
            total += fail + 2 * self.e_l
        if M <= t0 + 1:
            return Fraction(1)
        fm0 = rd.floor_mass(rd.gaussian(rd.count_sigma(self.final.rho, self.n), self.n))
        total += 2 * self.e_l + fm0 + self.eta * M / (M - t0)
        total += d * max(self._coordinate(r, M, t0) for r in range(1, self.K + 2))
        return min(Fraction(1), total)

    def accuracy_bound(self) -> Fraction:
        """The TV bound at the fewest units the claim covers, N = n_needed (<= alpha)."""
        return self.tv_bound(self.n_needed)

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready plan."""
        rounds = [] if self.ladder is None else [{**r, "units": "D1"} for r in self.ladder.describe()]
        rounds.append({"name": "sampling", "units": "D2" if self.K else "all", "rho": str(self.final.rho),
                       "buckets": [{"bucket": r, "budget_weight": str(self.final.omega[r - 1]),
                                    "guaranteed_sigma": str(self.final.star[r - 1])} for r in range(1, self.K + 2)]})
        return {
            "d": self.d, "units_bound_per_sample": self.n, "rho": str(self.rho), "alpha": str(self.alpha), "R": self.R,
            "L": str(self.L), "hash_batches": self.batches, "ladder_share": str(Fraction(self.split, self.batches)),
            "ladder_rounds": self.K, "n_needed": self.n_needed, "accuracy_bound": str(self.accuracy_bound()),
            "units": ("estimates divide by noisy counts of the units each part reads (max_units is only an upper "
                      "bound: the TV claim holds for n_needed <= N <= max_units units)"),
            "rounds": rounds,
        }


@dataclass
class SamplerRun:
    """The public outcome of one run: the sample and the (post-processed) bucket structure."""

    sample: list[int]
    flips: list[bool]
    buckets: list[list[int]]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: Pr[sample_j = 1 | the noisy counts] = clip(c~_j, 0, m) / m (flipped back): exact, for accuracy tests only
    probabilities: list[Fraction] = field(default_factory=list)


def _groups(plan: SamplerPlan, bucket: list[int]) -> list[ld.Group]:
    """The sampling round's groups: tail ceilings on the fresh units' masses, the clipping proxy as objective."""
    sizes: dict[int, int] = {}
    for b in bucket:
        sizes[b] = sizes.get(b, 0) + 1
    eta_g = plan.eta / (plan.K + 1)

    def ceiling_of(g: tuple[int, ...], size: int) -> int:
        if plan.K == 0 or 1 in g:
            return size
        return rd.tail_ceiling(sum((ld.upper_bias(r) * sizes[r] for r in g), Fraction(0)), size, eta_g)

    def objective(g: tuple[int, ...], sigma: Fraction) -> Fraction:  # clipping proxy: sigma |G|
        return sigma * sum(sizes[r] for r in g)

    return ld.choose_groups(plan.final, bucket, ceiling_of, objective)


def run_sampler(plan: SamplerPlan, aggregate: rd.Aggregate, rng: RandomSource, *, offset: int = 0,
                total_batches: int | None = None) -> SamplerRun:
    """The ladder on D1, then one sampling round on D2 (module docstring). ``offset``: the sample's first batch."""
    d, K = plan.d, plan.K
    B = total_batches or plan.batches
    lo, mid, hi = offset, offset + plan.split, offset + plan.batches
    if K == 0:
        flips, bucket, rounds = [False] * d, [1] * d, []
    else:
        assert plan.ladder is not None
        lad = ld.run_ladder(plan.ladder, aggregate, rng, lo, mid, B)
        flips, bucket, rounds = lad.flips, lad.bucket, lad.rounds
    groups = _groups(plan, bucket)
    query = ld.final_query(groups, flips, K, "sampling", mid, hi, B, count=True)
    sigma0 = rd.count_sigma(plan.final.rho, plan.n)
    noise = rd.RoundNoise(query.parts, tuple(g.sigma for g in groups), sigma0, plan.n)
    noisy, m_tilde = rd.release_round(aggregate(query), noise, rng)
    m = rd.positive(m_tilde)
    rounds.append({"name": "sampling", "coordinates": d, "batches": [mid, hi],
                   "buckets": [list(g.buckets) for g in groups], **noise.record()})
    sample, probs = [0] * d, [Fraction(0)] * d
    for j, cj in zip(query.active, noisy):
        sample[j] = bernoulli_clipped(cj, m, rng) ^ int(flips[j])
        pj = Fraction(min(max(cj, 0), m), m)
        probs[j] = 1 - pj if flips[j] else pj
    buckets = [[j for j in range(d) if bucket[j] == r] for r in range(1, K + 2)]
    return SamplerRun(sample, flips, buckets, rounds, probs)


def bernoulli_clipped(noisy: int, m: int | Fraction, rng: RandomSource) -> int:
    """One draw of Ber(clip(noisy, 0, m) / m), exactly: U uniform on [1, a] against clip(noisy) * b, m = a/b."""
    m = Fraction(m)
    a, b = m.numerator, m.denominator
    v = min(max(noisy, 0) * b, a)
    return int(rng.uniform(a) <= v)
