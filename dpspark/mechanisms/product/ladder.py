"""The bucketing ladder both product mechanisms run, and the grouping of its buckets in one final round.

Ladder (KLSU Alg 7's partitioning / RSSS Alg 4's bucketing, u_r = 2^-r), rounds r = 1..K on ONE set of units
(sequential: every round reads the same slice, round r spends its fixed share rho_r):

* round 1, all d coordinates, no truncation, and the count of the units (noisy N~): p~ = c~ / max(N~, 1);
  orient (flip j iff p~_j > 1/2, public); bucket 1 = {oriented p~ >= 3/16}; the rest passes;
* round r = 2..K on the passed set S_r (oriented), ceiling C_r = ceiling_mass(u_r (|S_r| + |B_{r-1}|), |S_r|, L):
  bucket r = {p~ >= 3 u_r / 8}; the rest passes. Whatever is left after round K is bucket K + 1.

If every estimate is within u_r/8 of its bias (1/16 in round 1), bucket 1 holds oriented biases in
[1/8, 9/16], bucket r in [u_r/4, u_r) and the rest bucket biases below u_{K+1}; those are the invariants the
accuracy proofs use. Same units in every round, so S_r depends on the records; the ceiling is still a
Bernstein bound because, on the invariants, S_r lies in the FIXED set T_r = {j : oriented p_j < u_r} (r >= 2:
u_r <= 1/4 < 7/16, so those coordinates' orientation is fixed too), and T_r is inside S_r plus bucket r - 1
(bucket r - 2 and above hold biases >= u_r): its mass is <= u_r (|S_r| + |B_{r-1}|), and the popcount over
S_r is at most the popcount over T_r (one Bernstein event per record and level, union bound).

Final round (:func:`choose_groups`): the non-empty buckets, in order, are cut into consecutive groups, each
truncated at its own ceiling, with budget rho_G = rho_F sum_{r in G} omega_r / sum_{non-empty r} omega_r. The
public weights omega_r and the guaranteed noise sigma*_r of bucket r (SLACK times the certified sigma of a
worst-case bucket r: |B_r| = d, its worst mass, budget omega_r rho_F) are fixed by the plan. A grouping is
allowed only if every group's sigma is <= sigma*_r for each of its buckets, and the single buckets always
are; so whatever grouping the (heuristic) objective picks, every coordinate's noise is <= sigma* of its
bucket, which is all the accuracy proofs use. The choice reads only public values (bucket sizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

from dpspark.mechanisms.product import rounds as rd
from dpspark.rng import RandomSource

#: sigma*_r = SLACK x the worst-case certified sigma (room to merge buckets; the proofs use sigma*)
SLACK = Fraction(5, 4)


def u(r: int) -> Fraction:
    """u_r = 2^-r."""
    return Fraction(1, 1 << r)


def upper_bias(r: int) -> Fraction:
    """The invariant's upper bound of an oriented bias in bucket r: 9/16 for bucket 1, else u_r."""
    return Fraction(9, 16) if r == 1 else u(r)


def lower_bias(r: int, rest: int) -> Fraction:
    """The invariant's lower bound: 1/8 for bucket 1, u_r/4 for 2 <= r < rest, 0 for the rest bucket."""
    if r == rest:
        return Fraction(0)
    return Fraction(1, 8) if r == 1 else u(r) / 4


def worst_ceiling(r: int, d: int, L: Fraction) -> int:
    """The ladder ceiling of round r at its worst (|S_r| + |B_{r-1}| = d): d for round 1."""
    return d if r == 1 else rd.ceiling(u(r), d, L)


def ladder_weights(d: int, K: int, L: Fraction) -> list[Fraction]:
    """Budget shares of rounds 1..K: proportional to sqrt(worst Delta^2) / e_r (e_1 = 1/16, e_r = u_r/8), the
    square root of the proven noise needs (a compromise, chosen on simulations), each at least 1/(8K)."""
    raw = [rd.sqrt_up(Fraction(rd.sensitivity_sq(d, worst_ceiling(r, d, L)))) / (Fraction(1, 16) if r == 1 else u(r) / 8)
           for r in range(1, K + 1)]
    total = sum(raw, Fraction(0))
    floored = [max(x / total, Fraction(1, 8 * K)) for x in raw]
    s = sum(floored, Fraction(0))
    return [x / s for x in floored]


@dataclass(frozen=True)
class LadderPlan:
    """Rounds 1..K of the ladder on one set of units: budgets, worst-case sigmas and the count's sigma."""

    d: int
    K: int
    L: Fraction
    rhos: tuple[Fraction, ...]
    radius: int
    worst_sigmas: tuple[Fraction, ...]
    sigma0: Fraction

    @classmethod
    def build(cls, d: int, K: int, L: Fraction, rho: Fraction, radius: int) -> "LadderPlan":
        """Budget ``rho`` split by :func:`ladder_weights`; the worst sigma of each round (|S| = d)."""
        rhos = tuple(rho * w for w in ladder_weights(d, K, L))
        sig = tuple(rd.group_sigma(d, worst_ceiling(r, d, L), rhos[r - 1], radius,
                                   rd.KAPPA if r == 1 else Fraction(0)) for r in range(1, K + 1))
        return cls(d, K, L, rhos, radius, sig, rd.count_sigma(rhos[0], radius))

    def describe(self) -> list[dict[str, Any]]:
        """The rounds, exact strings."""
        return [{"name": f"bucketing {r}", "rho": str(self.rhos[r - 1]), "worst_case_sigma": str(self.worst_sigmas[r - 1]),
                 **({"count_sigma": str(self.sigma0)} if r == 1 else {})} for r in range(1, self.K + 1)]


@dataclass
class LadderRun:
    """The ladder's public outcome: orientation, bucket of each coordinate (K + 1 = rest), the noisy count."""

    flips: list[bool]
    bucket: list[int]
    count: int
    rounds: list[dict[str, Any]]


def run_ladder(plan: LadderPlan, aggregate: rd.Aggregate, rng: RandomSource, lo: int, hi: int, batches: int,
               tag: str = "", orient: bool = True) -> LadderRun:
    """Rounds 1..K on the units of batches [lo, hi) (module docstring); ``orient`` False: no flips (a mutant)."""
    d, K = plan.d, plan.K
    flips = [False] * d
    bucket = [K + 1] * d
    active = list(range(d))
    records: list[dict[str, Any]] = []
    count = 1
    prev_locked = 0
    for r in range(1, K + 1):
        if not active:
            break
        size = len(active)
        c = size if r == 1 else rd.ceiling_mass(u(r) * (size + prev_locked), size, plan.L)
        sigma = rd.group_sigma(size, c, plan.rhos[r - 1], plan.radius, rd.KAPPA if r == 1 else Fraction(0))
        noise = rd.RoundNoise(((size, c),), (sigma,), plan.sigma0 if r == 1 else None, plan.radius)
        name = f"bucketing {r}{tag}"
        query = rd.RoundQuery(r - 1, name, tuple(active), tuple(flips[j] for j in active), c, lo, hi, batches,
                              count=r == 1)
        noisy, n_tilde = rd.release_round(aggregate(query), noise, rng)
        if r == 1:
            count = rd.positive(n_tilde)
        records.append({"name": name, "coordinates": size, "batches": [lo, hi], **noise.record()})
        rest = []
        for j, cj in zip(active, noisy):
            if r == 1:
                flips[j] = orient and 2 * cj > count
                oriented = count - cj if flips[j] else cj
                locked = 16 * oriented >= 3 * count
            else:
                locked = 8 * cj >= 3 * u(r) * count
            if locked:
                bucket[j] = r
            else:
                rest.append(j)
        prev_locked = size - len(rest)
        active = rest
    return LadderRun(flips, bucket, count, records)


@dataclass(frozen=True)
class FinalPlan:
    """The final round's public constants: budget, bucket weights omega_r and guaranteed sigma*_r (r = 1..K+1)."""

    rho: Fraction
    omega: tuple[Fraction, ...]
    star: tuple[Fraction, ...]
    worst_sigmas: tuple[Fraction, ...]
    radius: int
    reserve: Fraction

    @classmethod
    def build(cls, rho: Fraction, need: Sequence[Fraction], worst_ceilings: Sequence[int], d: int, radius: int,
              reserve: Fraction) -> "FinalPlan":
        """omega_r proportional to ``need[r]`` (a proven-need weight), each at least 1/(8 (K + 1)) of the budget
        (so no bucket's guaranteed noise runs past the sampler's sigma range), sigma*_r = SLACK x the certified
        worst sigma."""
        total = sum(need, Fraction(0))
        floor = Fraction(1, 8 * len(need))
        raw = [max(x / total, floor) for x in need]
        omega = tuple(x / sum(raw, Fraction(0)) for x in raw)
        worst = tuple(rd.group_sigma(d, c, rho * w, radius, reserve) for c, w in zip(worst_ceilings, omega))
        return cls(rho, omega, tuple(SLACK * s for s in worst), worst, radius, reserve)


@dataclass(frozen=True)
class Group:
    """One group of the final round: its buckets, its member coordinates (in order), ceiling and sigma."""

    buckets: tuple[int, ...]
    members: tuple[int, ...]
    ceiling: int
    sigma: Fraction


def choose_groups(final: FinalPlan, bucket: Sequence[int], ceiling_of: Callable[[tuple[int, ...], int], int],
                  objective: Callable[[tuple[int, ...], Fraction], Fraction]) -> list[Group]:
    """Consecutive groups of the non-empty buckets (module docstring): the allowed grouping of least
    ``objective`` (sum over groups; a heuristic of the empirical error), by dynamic programming.

    ``ceiling_of(buckets, size)``: the group's ceiling; ``objective(buckets, sigma)``: its cost (exact).
    """
    sizes: dict[int, int] = {}
    for b in bucket:
        sizes[b] = sizes.get(b, 0) + 1
    rs = sorted(sizes)
    w_total = sum((final.omega[r - 1] for r in rs), Fraction(0))

    def rho_of(g: tuple[int, ...]) -> Fraction:
        return final.rho * sum((final.omega[r - 1] for r in g), Fraction(0)) / w_total

    def shape(g: tuple[int, ...]) -> tuple[int, int]:
        size = sum(sizes[r] for r in g)
        return size, ceiling_of(g, size)

    k = len(rs)
    best: list[Fraction | None] = [Fraction(0)] + [None] * k
    prev = [0] * (k + 1)
    for i in range(1, k + 1):
        for j in range(i):
            g = tuple(rs[j:i])
            size, c = shape(g)
            sigma = rd.nominal_sigma(size, c, rho_of(g), final.reserve)
            if len(g) > 1 and sigma > min(final.star[r - 1] for r in g):
                continue
            if best[j] is None:
                continue
            val = best[j] + objective(g, sigma)  # type: ignore[operator]
            if best[i] is None or val < best[i]:  # type: ignore[operator]
                best[i], prev[i] = val, j
    cuts, i = [], k
    while i > 0:
        cuts.append((prev[i], i))
        i = prev[i]
    out: list[Group] = []
    for j, i in reversed(cuts):
        g = tuple(rs[j:i])
        size, c = shape(g)
        sigma = rd.group_sigma(size, c, rho_of(g), final.radius, final.reserve)
        parts = [g] if sigma <= min(final.star[r - 1] for r in g) else [(r,) for r in g]
        for part in parts:  # a merged group whose certificate moved sigma past a sigma*: its single buckets
            psize, pc = shape(part)
            psigma = sigma if part == g else rd.group_sigma(psize, pc, rho_of(part), final.radius, final.reserve)
            if psigma > final.star[part[0] - 1]:  # pragma: no cover - monotonicity of the certified sigma
                raise ArithmeticError("a single bucket's sigma exceeds its guaranteed sigma*")
            members = tuple(jj for jj, b in enumerate(bucket) if b in part)
            out.append(Group(part, members, pc, psigma))
    return out


def final_query(groups: Sequence[Group], flips: Sequence[bool], index: int, name: str, lo: int, hi: int,
                batches: int, count: bool) -> rd.RoundQuery:
    """The final round's query: every group's coordinates in order, each truncated at its own ceiling."""
    active = tuple(j for g in groups for j in g.members)
    return rd.RoundQuery(index, name, active, tuple(flips[j] for j in active), max(g.ceiling for g in groups),
                         lo, hi, batches, groups=tuple((len(g.members), g.ceiling) for g in groups), count=count)
