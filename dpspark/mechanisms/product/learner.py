"""Private product distribution learner (KLSU PPDE, Alg 7, Thm 5.2, with sequential rounds): q in [0,1]^d exactly.

Algorithm (u_r = 2^-r, R = max(2, bitlen(d - 1) - 1), so u_R in [2/d, 4/d) for d >= 8)
-------------------------------------------------------------------------------------
All rounds read ALL the units (no partition of the data); the budget is split instead: the ladder
(:mod:`dpspark.mechanisms.product.ladder`: KLSU's partitioning rounds 1..R-1, with the noisy unit count N~ in
round 1) spends rho/4, the final round 3 rho/4. The final round estimates every coordinate once more, its
buckets cut into groups, each truncated at its own ceiling (:func:`ladder.choose_groups`) - so the light
coordinates, the ones KLSU's truncation is for, share one small ceiling and most of the budget:

* bucket 1 (oriented p~ >= 3/16 in round 1): q_j = clamp(p~_j, [1/8, 9/16]);
* bucket r = 2..R-1: q_j = clamp(p~_j, [u_r/4, u_r]);   * the rest (bucket R): q_j = clamp(p~_j, [0, u_R]);

with p~_j = c~_j / max(N~_F, 1) from the final round, N~_F the final round's own noisy count of the units
(FINAL_COUNT_SHARE of its add/remove budget; round 1's count, at KAPPA of the ladder's budget, only steers
the ladder); flipped coordinates release 1 - q_j. Dividing by the noisy count of the same units (not by
max_units) keeps q unbiased when the data hold fewer units than max_units (issue 25).

Per-feature error bars (issue 36, :func:`error_bars`): from public values only (the noisy counts, the sigmas,
the buckets), b_j with Pr[|q_j - f_j| > b_j] <= beta, f_j the data's own frequency of column j: the bar the
data's size supports, stated whatever alpha is. privacy.alpha is optional: unset, the plan never refuses
(its 1/10 only shapes the final round's weights) and no TV claim is made; set, the TV claim below is made
and a max_units below its n_needed is refused before any data is read.

Privacy claim
-------------
rho-zCDP under Substitute(n) and AddRemove(n). Every round is a set of certified discrete Gaussians on
truncated group sums (and round 1's count) whose certified rho is <= the round's fixed budget under both
relations (:mod:`dpspark.mechanisms.product.rounds`); the noise of a round is chosen from public earlier
outputs only, so the rounds compose adaptively (Bun-Steinke 2016, Lemma 2.3) to sum_r rho_r = rho/4 + 3rho/4
= rho. q is post-processing. Exact checks: tests/unit/product/test_product_privacy.py.

Accuracy [derived; KLSU state it up to O(.)]
--------------------------------------------
L = ln(8(d + n)R / beta) rounded up; n = max_units, N the units the data hold (N <= n). Events (each
failing w.p. <= 2e^{-L}, + the implemented law's floor mass for a draw): each count |N~ - N| <= t0 =
sigma_0 sqrt(2L) (round 1's for the ladder, the final round's own for the final estimates); for every
coordinate |c_j - p_j N| <= sqrt(2 v_j N L) + 2L/3 (Bernstein, v_j = p_j(1-p_j), one event per coordinate: all rounds read the same counts); every noise draw |Z| <= sigma sqrt(2L); and no
record exceeds a ceiling (one Bernstein event per record and level, the fixed sets of the ladder module:
(R - 1) n events of e^{-L}). On them an estimate of a coordinate with bias <= ubar, variance <= v and noise
<= sigma errs by at most (sqrt(2vNL) + 2L/3 + sigma sqrt(2L) + ubar t0) / (N - t0), decreasing in N:

* ladder round r: <= 1/16 (r = 1) or u_r/8 at its worst-case sigma, so the invariants hold (bucket 1:
  oriented p in [1/8, 9/16]; bucket r: [u_r/4, u_r); rest: p < u_R);
* final round, bucket r, at its guaranteed sigma*_r: <= e_r = min(u_r/8, alpha sqrt(7 u_r / (128 d))) (r < R)
  or alpha/(4d) (rest). Clamping to an interval that holds p never moves q away from p, and KLSU's argument
  goes through: each bucket-r coordinate has chi^2 term (p - q)^2 / (q(1 - q)) <= e_r^2 / ((u_r/4)(7/16))
  <= alpha^2/(2d); on A = {p_j >= 1/d} the rest's terms are <= (8d/3) e_R^2 <= alpha^2/(6d); on B =
  {p_j < 1/d} sum |p_j - q_j| <= d e_R = alpha/4. KL(P_A || Q_A) <= chi^2 <= alpha^2/2, so
  TV(P, Q) <= sqrt(KL_A / 2) + sum_B |p - q| <= alpha/2 + alpha/4 < alpha.

:attr:`LearnerPlan.n_needed` is the smallest N meeting every requirement; the claim holds for
n_needed <= N <= n with probability >= 1 - :meth:`LearnerPlan.failure_bound` (<= beta). Statistical test of
the claim: tests/unit/product/test_product_learner.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpspark.exact import RationalLike, parse_rational
from dpspark.mechanisms.product import ladder as ld
from dpspark.mechanisms.product import rounds as rd
from dpspark.rng import RandomSource

#: orient coordinates in round 1 (KLSU/RSSS's flip of biases above 1/2); tests switch it off as a mutant
_ORIENT = True
#: the ladder's share of rho (the final round gets the rest)
LADDER_SHARE = Fraction(1, 4)
#: the final round's own noisy count of the units: this share of its add/remove budget (its groups keep the
#: rest; under substitution the count is free). The final estimates divide by it: round 1's count has
#: KAPPA of the ladder's budget only, and its noise (times q) would dominate the error of every estimate
FINAL_COUNT_SHARE = Fraction(1, 8)
#: the per-feature error bars' split of beta: the ladder's draws of a coordinate (and its count) get this,
#: the final draw and the final count half of the rest each
BAR_LADDER_SHARE = Fraction(1, 8)

u = ld.u


def round_count(d: int) -> int:
    """R = max(2, bitlen(d - 1) - 1)."""
    return max(2, (d - 1).bit_length() - 1)


def clamp(x: Fraction, lo: Fraction, hi: Fraction) -> Fraction:
    """min(max(x, lo), hi), exactly."""
    return min(max(x, lo), hi)


def final_error(r: int, R: int, d: int, alpha: Fraction) -> Fraction:
    """e_r of the final round (module docstring)."""
    if r == R:
        return alpha / (4 * d)
    return min(u(r) / 8, alpha * rd.sqrt_down(Fraction(7) * u(r) / (128 * d)))


def interval(r: int, R: int) -> tuple[Fraction, Fraction]:
    """The clamp of bucket r: [1/8, 9/16], [u_r/4, u_r], or [0, u_R] for the rest."""
    if r == R:
        return Fraction(0), u(R)
    return (Fraction(1, 8), Fraction(9, 16)) if r == 1 else (u(r) / 4, u(r))


def final_worst_ceiling(r: int, d: int, L: Fraction) -> int:
    """A final group holding bucket r at its worst: no truncation with bucket 1, else mass u_r d over d."""
    return d if r == 1 else rd.ceiling(u(r), d, L)


def estimate_error(v: Fraction, sigma: Fraction, ubar: Fraction, t0: Fraction, N: int, L: Fraction) -> Fraction | None:
    """(sqrt(2vNL) + 2L/3 + sigma sqrt(2L) + ubar t0) / (N - t0) (module docstring), None when N <= t0 + 1."""
    if N <= t0 + 1:
        return None
    return (rd.deviation(v, N, L) + sigma * rd.sqrt_up(2 * L) + ubar * t0) / (N - t0)


@dataclass(frozen=True)
class LearnerPlan:
    """Every public constant of one product-learner release (data-free)."""

    d: int
    n: int
    rho: Fraction
    alpha: Fraction
    beta: Fraction
    batches: int
    R: int
    L: Fraction
    ladder: ld.LadderPlan
    final: ld.FinalPlan
    errors: tuple[Fraction, ...]
    n_needed: int
    final_sigma0: Fraction = Fraction(0)

    @classmethod
    def build(cls, d: int, n: int, rho: RationalLike, alpha: RationalLike, beta: RationalLike, *,
              batches: int = rd.DEFAULT_BATCHES, enforce: bool = True) -> "LearnerPlan":
        """The plan; with ``enforce`` it refuses (NeedMoreUnits) when max_units is below :attr:`n_needed`."""
        rho_f, alpha_f, beta_f = (parse_rational(v, k) for v, k in ((rho, "rho"), (alpha, "alpha"), (beta, "beta")))
        if d < 1 or n < 1:
            raise rd.NeedMoreUnits("d and n must be >= 1")
        if rho_f <= 0 or not 0 < alpha_f <= 1 or not 0 < beta_f < 1:
            raise ValueError("rho must be > 0, alpha in (0, 1] and beta in (0, 1)")
        R = round_count(d)
        L = rd.ln_upper(8 * (d + n) * R / beta_f)
        ladder = ld.LadderPlan.build(d, R - 1, L, rho_f * LADDER_SHARE, n)
        errors = tuple(final_error(r, R, d, alpha_f) for r in range(1, R + 1))
        ceilings = [final_worst_ceiling(r, d, L) for r in range(1, R + 1)]
        need = [Fraction(rd.sensitivity_sq(d, c)) / e**2 for c, e in zip(ceilings, errors)]
        rho_final = rho_f * (1 - LADDER_SHARE)
        final = ld.FinalPlan.build(rho_final, need, ceilings, d, n, FINAL_COUNT_SHARE)
        plan = cls(d, n, rho_f, alpha_f, beta_f, batches, R, L, ladder, final, errors, 0,
                   rd.count_sigma(rho_final, n, FINAL_COUNT_SHARE))
        object.__setattr__(plan, "n_needed", plan.units_needed())
        if enforce and n < plan.n_needed:
            raise rd.NeedMoreUnits(rd.need_more_units_text(plan.n_needed, n, "accuracy (alpha, beta)"))
        return plan

    @property
    def t0(self) -> Fraction:
        """The bound on the ladder's count noise: sigma_0 sqrt(2L)."""
        return self.ladder.sigma0 * rd.sqrt_up(2 * self.L)

    @property
    def t0_final(self) -> Fraction:
        """The bound on the final round's count noise: its sigma_0 sqrt(2L)."""
        return self.final_sigma0 * rd.sqrt_up(2 * self.L)

    def requirements(self) -> list[tuple[str, Fraction, Fraction, Fraction, Fraction, Fraction]]:
        """(name, variance bound v, sigma, bias bound ubar, target error, count noise bound) of every estimate
        the claim needs (the ladder divides by round 1's count, the final round by its own)."""
        out = []
        for r in range(1, self.R):  # ladder rounds at their worst sigma
            ub = Fraction(1) if r == 1 else u(r)
            out.append((f"bucketing {r}", min(ub, Fraction(1, 4)), self.ladder.worst_sigmas[r - 1], ub,
                        Fraction(1, 16) if r == 1 else u(r) / 8, self.t0))
        for r in range(1, self.R + 1):  # the final round, bucket r at its guaranteed sigma*
            ub = ld.upper_bias(r)
            out.append((f"final, bucket {r}", min(ub, Fraction(1, 4)), self.final.star[r - 1], ub, self.errors[r - 1],
                        self.t0_final))
        return out

    def units_needed(self) -> int:
        """The smallest N at which every requirement holds (each error bound decreases in N)."""
        best = 2
        for _, v, sigma, ub, e, t0 in self.requirements():
            def ok(N: int, v: Fraction = v, sigma: Fraction = sigma, ub: Fraction = ub, e: Fraction = e,
                   t0: Fraction = t0) -> bool:
                err = estimate_error(v, sigma, ub, t0, N, self.L)
                return err is not None and err <= e
            best = max(best, rd.smallest_units(ok))
        return best

    def failure_bound(self) -> Fraction:
        """Pr[some event of the module docstring fails] <= this (exact rational; <= beta)."""
        d, R, n = self.d, self.R, self.n
        eL = self.beta / (8 * (d + n) * R)  # >= e^{-L}
        sigmas = list(self.ladder.worst_sigmas) + list(self.final.worst_sigmas) + [self.ladder.sigma0, self.final_sigma0]
        fm = max(rd.floor_mass(rd.gaussian(s, n)) for s in sigmas)
        draws = 2 + R * d
        return eL * (2 * draws + 2 * d + (R - 1) * n) + draws * fm

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready plan."""
        return {
            "d": self.d, "max_units": self.n, "rho": str(self.rho), "alpha": str(self.alpha), "beta": str(self.beta),
            "R": self.R, "L": str(self.L), "hash_batches": self.batches, "n_needed": self.n_needed,
            "units": ("every round reads all units; estimates divide by a noisy count of them (max_units is only "
                      "an upper bound: the accuracy claim holds for n_needed <= N <= max_units units)"),
            "failure_bound": str(self.failure_bound()),
            "rounds": self.ladder.describe() + [
                {"name": "final", "rho": str(self.final.rho), "count_sigma": str(self.final_sigma0),
                 "buckets": [{"bucket": r, "budget_weight": str(self.final.omega[r - 1]),
                              "guaranteed_sigma": str(self.final.star[r - 1]),
                              "required_error": str(self.errors[r - 1])} for r in range(1, self.R + 1)]}],
        }


@dataclass
class LearnerRun:
    """The public outcome: q (exact rationals, original orientation), the bucket structure, the per-feature
    error bars (:func:`error_bars`) and whether no record can have been truncated (every ceiling >= its group)."""

    q: list[Fraction]
    flips: list[bool]
    locked_in: list[int]          # per coordinate: its bucket (R = the rest)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    bars: list[Fraction] = field(default_factory=list)
    untruncated: bool = True


def _ceiling_of(plan: LearnerPlan, bucket: list[int]):  # type: ignore[no-untyped-def]
    """A final group's ceiling: none with bucket 1; else the mass bound of the fixed set T_a (ladder module):
    u_a |B_{a-1}| + sum_{r >= a} u_r |B_r|, a = the group's first bucket."""
    sizes: dict[int, int] = {}
    for b in bucket:
        sizes[b] = sizes.get(b, 0) + 1

    def ceiling_of(g: tuple[int, ...], size: int) -> int:
        if 1 in g:
            return size
        a = min(g)
        v = u(a) * sizes.get(a - 1, 0) + sum((ld.upper_bias(r) * s for r, s in sizes.items() if r >= a), Fraction(0))
        return rd.ceiling_mass(v, size, plan.L)
    return ceiling_of, sizes


def run_learner(plan: LearnerPlan, aggregate: rd.Aggregate, rng: RandomSource) -> LearnerRun:
    """The ladder, then the grouped final round, over the aggregate oracle (module docstring)."""
    d, R, B = plan.d, plan.R, plan.batches
    lad = ld.run_ladder(plan.ladder, aggregate, rng, 0, B, B, orient=_ORIENT)
    flips = lad.flips
    ceiling_of, sizes = _ceiling_of(plan, lad.bucket)

    def objective(g: tuple[int, ...], sigma: Fraction) -> Fraction:  # chi^2 proxy: sigma^2 sum |B_r| / u_r
        return sigma * sigma * sum((Fraction(sizes[r]) / ld.upper_bias(r) for r in g), Fraction(0))

    groups = ld.choose_groups(plan.final, lad.bucket, ceiling_of, objective)
    query = ld.final_query(groups, flips, R - 1, "final", 0, B, B, count=True)
    noise = rd.RoundNoise(query.parts, tuple(g.sigma for g in groups), plan.final_sigma0, plan.n)
    noisy, n_final = rd.release_round(aggregate(query), noise, rng)
    count = rd.positive(n_final)
    q: list[Fraction] = [Fraction(0)] * d
    for j, cj in zip(query.active, noisy):
        lo, hi = interval(lad.bucket[j], R)
        p = clamp(Fraction(cj, count), lo, hi)
        q[j] = 1 - p if flips[j] else p
    rounds = lad.rounds + [{"name": "final", "coordinates": d, "batches": [0, B],
                            "buckets": [list(g.buckets) for g in groups], **noise.record()}]
    sigma_of = {j: g.sigma for g in groups for j in g.members}
    bars = error_bars(plan, lad.rounds, lad.bucket, lad.count, [sigma_of[j] for j in range(d)], int(n_final or 0))
    untruncated = all(grp["ceiling"] >= grp["size"] for r in rounds for grp in r["groups"])
    return LearnerRun(q, flips, list(lad.bucket), rounds, bars, untruncated)


def error_bars(plan: LearnerPlan, ladder_rounds: list[dict[str, Any]], bucket: list[int], ladder_count: int,
               sigmas: list[Fraction], final_count: int) -> list[Fraction]:
    """b_j with Pr[|q_j - f_j| > b_j] <= beta for each feature j, f_j the fraction of the units read whose
    column j is 1 (no record truncated); exact, from public values only (sigmas, buckets, the noisy counts).

    The final estimate is p~ = (c + Z) / N~ with N~ = N + Z_c its own noisy count, so p~ - f = (Z - f Z_c) / N~
    EXACTLY (oriented f; no true count in the bound). With |Z| <= t, |Z_c| <= t_c and f in the clamp interval
    [lo, hi] of the coordinate's bucket, |q - f| <= min(|p~ - f|, hi - lo) <= min((t + hi t_c) / N~, hi - lo)
    (clamping to an interval holding f moves q towards f). f lies in the interval when every ladder estimate
    of j was within the ladder module's margin (1/16 in round 1, u_r/8 in round r), which holds when
    (t_1 + t_0) / N~_1 <= 1/16 and (t_r + u_r t_0) / N~_1 <= u_r/8 (round r's active coordinates have oriented
    f <= u_r; the ladder's estimates are (Z_r - f Z_0) / N~_1 off). This is checked on the public values;
    when it fails, or a noisy count is below 1, the bar is the trivial 1.
    The t's are exact quantiles of the implemented laws (:func:`~.rounds.abs_quantile`): the ladder's draws of j
    and round 1's count share BAR_LADDER_SHARE beta, the final draw and the final count half the rest each.
    """
    beta, R = plan.beta, plan.R
    ladder_tail = beta * BAR_LADDER_SHARE / R  # round 1's count and at most R - 1 ladder draws of j
    final_tail = beta * (1 - BAR_LADDER_SHARE) / 2
    radius = plan.n
    t0 = rd.abs_quantile(rd.gaussian(plan.ladder.sigma0, radius), ladder_tail)
    tc = rd.abs_quantile(rd.gaussian(plan.final_sigma0, radius), final_tail)
    margin_ok = {}  # ladder round r -> whether its estimates were within the margin (public)
    for r, rec in enumerate(ladder_rounds, start=1):
        t = rd.abs_quantile(rd.gaussian(Fraction(rec["groups"][0]["sigma"]), radius), ladder_tail)
        f_hi, margin = (Fraction(1), Fraction(1, 16)) if r == 1 else (u(r), u(r) / 8)
        margin_ok[r] = ladder_count >= 1 and Fraction(t) + f_hi * t0 <= margin * ladder_count
    bars = []
    for j in range(plan.d):
        lo, hi = interval(bucket[j], R)
        rounds_of_j = range(1, min(bucket[j], R - 1) + 1)  # the ladder rounds j was active in
        if final_count < 1 or not all(margin_ok.get(r, False) for r in rounds_of_j):
            bars.append(Fraction(1))
            continue
        t = rd.abs_quantile(rd.gaussian(sigmas[j], radius), final_tail)
        bars.append(min(Fraction(t + hi * tc, final_count), hi - lo))
    return bars
