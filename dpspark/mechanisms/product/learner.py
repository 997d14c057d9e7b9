"""KLSU PPDE (Algorithm 7, Thm 5.2): learn a product distribution on {0,1}^d privately, q in [0,1]^d exactly.

Privacy claim
-------------
rho-zCDP under Substitute(n) and AddRemove(n), exactly as the product sampler (:mod:`dpspark.mechanisms.product.rounds`):
each round is a certified discrete Gaussian on a truncated sum with Delta^2 = min(|S|, 2C) (min(|S|, C) under
add/remove) and sigma with Delta^2 rho(1) <= rho; rounds read disjoint hash batches of the unit ids, so the
run is max_r rho_r <= rho (KLSU Thm 5.1 / parallel composition). q is post-processing.

Algorithm (u_r = 2^-r, R = max(2, bitlen(d - 1) - 1), so u_R in [2/d, 4/d) for d >= 8)
-------------------------------------------------------------------------------------
* Partitioning round 1 on all coordinates (no truncation): orient (flip j iff p~_j > 1/2, public); lock j
  with q_j = clamp(p~_j, [1/8, 9/16]) if min(p~, 1 - p~) >= 3/16, else pass it on.
* Partitioning round r = 2..R-1 on S_r with ceiling C_r: lock j, q_j = clamp(p~_j, [u_r/4, u_r]), if
  p~_j >= 3u_r/8; else pass.
* Final round R on S_R: q_j = clamp(p~_j, [0, u_R]). Flipped coordinates release 1 - q_j.

Constants [derived from the tail bounds; KLSU states them up to O(.)]
------------------------------------------------------------------
L = ln(8 (d + n) R / beta) rounded up. Required accuracy |p~ - p| <= e_r (deviation and noise each
<= e_r/2 by :func:`~dpspark.mechanisms.product.rounds.size_needed`, each failing w.p. <= 2e^{-L}):

* r < R: e_r = min(u_r/8, alpha sqrt(7 u_r / (128 d))). Then the invariants hold (locked: p in [u_r/4, u_r)
  or, in round 1, oriented p in [1/8, 9/16]; passed: p < u_{r+1}) and each locked coordinate has
  chi^2 term (p - q)^2 / (q (1 - q)) <= e_r^2 / ((u_r/4)(7/16)) <= alpha^2 / (2d);
* r = R: e_R = alpha / (4d). On A = {p_j >= 1/d}: q >= p - e >= 3/(4d), 1 - q >= 1/2, so the term is
  <= (8d/3) e^2 <= alpha^2/(6d); on B = {p_j < 1/d}: sum |p_j - q_j| <= d e_R = alpha/4.

KL(P||Q) over the coordinates of A is at most their chi^2 sum <= alpha^2/2 (KL <= chi^2), so
TV(P, Q) <= TV_A + TV_B <= sqrt(KL_A / 2) + sum_B |p - q| <= alpha/2 + alpha/4 < alpha, except w.p.
4 d R e^{-L} + R n e^{-L} (+ floor mass) <= beta/2 + (tiny) <= beta (truncations: Bernstein ceilings).
n = sum of the round sizes = O(d L / alpha^2 + d L / (alpha sqrt(rho))) (KLSU Thm 5.2).
Test of the claim (KL over A, TV bound, at a stated confidence): tests/unit/product/test_product_learner.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpspark.exact import RationalLike, parse_rational
from dpspark.mechanisms.product import rounds as rd
from dpspark.rng import RandomSource


#: orient coordinates in round 1 (KLSU/RSSS's flip of biases above 1/2); tests switch it off as a mutant
_ORIENT = True


def round_count(d: int) -> int:
    """R = max(2, bitlen(d - 1) - 1)."""
    return max(2, (d - 1).bit_length() - 1)


def u(r: int) -> Fraction:
    """u_r = 2^-r."""
    return Fraction(1, 1 << r)


def clamp(x: Fraction, lo: Fraction, hi: Fraction) -> Fraction:
    """min(max(x, lo), hi), exactly."""
    return min(max(x, lo), hi)


@dataclass(frozen=True)
class LearnerPlan(rd.RoundSizes):
    """Every public constant of one product-learner release (data-free)."""

    d: int
    n: int
    rho: Fraction
    alpha: Fraction
    beta: Fraction
    batches: int
    R: int
    L: Fraction
    errors: tuple[Fraction, ...]
    needs: tuple[Fraction, ...]
    slices: tuple[tuple[int, int], ...]
    worst_sigmas: tuple[Fraction, ...]

    @classmethod
    def build(cls, d: int, n: int, rho: RationalLike, alpha: RationalLike, beta: RationalLike, *,
              batches: int = rd.DEFAULT_BATCHES, enforce: bool = True) -> "LearnerPlan":
        """The plan; with ``enforce`` it refuses (NeedMoreUnits) when n is below the rounds' total need."""
        rho_f, alpha_f, beta_f = (parse_rational(v, k) for v, k in ((rho, "rho"), (alpha, "alpha"), (beta, "beta")))
        if d < 1 or n < 1:
            raise rd.NeedMoreUnits("d and n must be >= 1")
        if rho_f <= 0 or not 0 < alpha_f <= 1 or not 0 < beta_f < 1:
            raise ValueError("rho must be > 0, alpha in (0, 1] and beta in (0, 1)")
        R = round_count(d)
        L = rd.ln_upper(8 * (d + n) * R / beta_f)
        errors, needs, sigmas = [], [], []
        for r in range(1, R + 1):
            c = d if r == 1 else rd.ceiling(u(r), d, L)
            s = rd.noise_sigma(d, c, rho_f, n)
            e = min(u(r) / 8, alpha_f * rd.sqrt_down(Fraction(7) * u(r) / (128 * d))) if r < R else alpha_f / (4 * d)
            errors.append(e)
            sigmas.append(s)
            needs.append(rd.size_needed(min(u(r), Fraction(1, 4)), e, s, L))
        if enforce:
            slices = rd.allocate(needs, n, batches)
        else:
            slices = rd.allocate_proportional(needs, batches)
        return cls(d, n, rho_f, alpha_f, beta_f, batches, R, L, tuple(errors), tuple(needs), tuple(slices),
                   tuple(sigmas))


    def failure_bound(self) -> Fraction:
        """Pr[some round misses its accuracy or truncates a record] <= this (exact rational; <= beta)."""
        eL = self.beta / (8 * (self.d + self.n) * self.R)
        fm = max(rd.floor_mass(rd.gaussian(s, self.n)) for s in self.worst_sigmas)
        return 4 * self.d * self.R * eL + self.R * self.n * eL + 2 * self.d * self.R * fm

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready plan."""
        names = [f"partitioning {r}" for r in range(1, self.R)] + ["final"]
        return {
            "d": self.d, "n": self.n, "rho": str(self.rho), "alpha": str(self.alpha), "beta": str(self.beta),
            "R": self.R, "L": str(self.L), "hash_batches": self.batches, "n_needed": self.n_needed,
            "failure_bound": str(self.failure_bound()),
            "rounds": [{"name": nm, "batches": list(sl), "nominal_size": str(self.size(i)),
                        "required_error": str(self.errors[i]), "worst_case_sigma": str(self.worst_sigmas[i])}
                       for i, (nm, sl) in enumerate(zip(names, self.slices))],
        }


@dataclass
class LearnerRun:
    """The public outcome: q (exact rationals, original orientation) and the locking structure."""

    q: list[Fraction]
    flips: list[bool]
    locked_in: list[int]          # per coordinate: the round that set q_j (R = final round)
    rounds: list[dict[str, Any]] = field(default_factory=list)


def run_learner(plan: LearnerPlan, aggregate: rd.Aggregate, rng: RandomSource) -> LearnerRun:
    """KLSU Alg 7 over the aggregate oracle (module docstring)."""
    d, R = plan.d, plan.R
    flips = [False] * d
    q: list[Fraction] = [Fraction(0)] * d
    locked_in = [R] * d
    records: list[dict[str, Any]] = []
    active = list(range(d))
    for r in range(1, R + 1):
        if not active:
            break
        c = len(active) if r == 1 else rd.ceiling(u(r), len(active), plan.L)
        lo, hi = plan.slices[r - 1]
        sigma = rd.noise_sigma(len(active), c, plan.rho, plan.n)
        mech = rd.gaussian(sigma, plan.n)
        name = "final" if r == R else f"partitioning {r}"
        query = rd.RoundQuery(r - 1, name, tuple(active), tuple(flips[j] for j in active), c, lo, hi, plan.batches)
        noisy = rd.release_round(aggregate(query), mech, rng)
        m = plan.size(r - 1)
        records.append({"name": name, "coordinates": len(active), "ceiling": c, "sigma": str(sigma),
                        "batches": [lo, hi],
                        "rho_substitute": str(rd.round_rho(mech, len(active), c, "substitute")),
                        "rho_add_remove": str(rd.round_rho(mech, len(active), c, "add_remove"))})
        rest = []
        for j, cj in zip(active, noisy):
            p = Fraction(cj) / m
            if r == 1:
                flips[j] = _ORIENT and p > Fraction(1, 2)
                p = 1 - p if flips[j] else p
            if r == R:
                q[j] = clamp(p, Fraction(0), u(R))
            elif p >= 3 * u(r) / 8:
                q[j] = clamp(p, u(r) / 4, Fraction(9, 16) if r == 1 else u(r))
                locked_in[j] = r
            else:
                rest.append(j)
        active = rest
    q = [1 - x if f else x for x, f in zip(q, flips)]
    return LearnerRun(q, flips, locked_in, records)
