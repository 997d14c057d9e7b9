"""Quantiles per group: an exact exponential mechanism over a public grid (docs/groups.md §E).

Candidates and cells. The released value is one of the B + 1 public points v_j = lo + (hi - lo) j / B
(B = the spec's ``bins``). The engine counts a group's values (clipped to [lo, hi]) in B + 1 cells, cell j
holding the values nearest to v_j (:meth:`~dpspark.mechanisms.groups.aggregates.Aggregate.grid_point`), so
a value that *is* a candidate point (integer data on an integer grid) is counted at its own point.

Score. With h_0..h_B the cell counts of a group, n = sum h, L_j = h_0 + ... + h_(j-1) (rows in cells
below v_j's), G_j = h_(j+1) + ... + h_B (rows above) and q = a/b in lowest terms,

    S_j = max(b L_j - a n,  b G_j - (b - a) n,  0) = b max(L_j - q n,  G_j - (1 - q) n,  0).

S_j / b is the rank error of v_j in rows: 0 exactly when v_j's cell holds the q-quantile (at most q n rows
below it and at most (1 - q) n above), so the best score is always 0. Adding a row moves the first term by
+(b - a) (below) or -a (at or above), the second by -(b - a) (below or at) or +a (above): each by at most
s = max(a, b - a), so S moves by at most c s when a unit adds c rows to the group. A rank step moves S by b,
and b / s lies in [1, 2] (2 for the median: twice the resolution of the utility |L_j - floor(q n)|). The
score is quantised to T_j = floor(S_j / d) with d = max(1, floor(c s / 64)), so that a huge denominator b
does not blow up the weight table; T moves by at most Delta_T = ceil(c s / d) (<= 65 d-steps for c s).

Exact weights. With a rational base r = p/q' <= e^(x) (certified), x = eps~ / (2 k Delta_T), and rho = 1/r,
the table w_V = floor(w_(V-1) rho), w_0 = 2^P (V = 0..cap) is computed in exact integers; each floor loses
less than 1, so 2^P rho^V - V <= w_V <= 2^P rho^V, and P is chosen with 2^P rho^cap >= cap 2^64: every entry
is within a relative eta = 2^-64 below the exact 2^P rho^V. The cap has (B + 1) rho^cap <= 2^-64; cap and P
come from one-sided bounds on ln r, not from r^cap, and the table is memoised (dyadic.py). A group's weights are w_(min(T_j, cap)) (the
utility -min(T_j, cap) has sensitivity Delta_T too), Pr[v_j] = w_j / sum_i w_i.

Privacy. For neighbours D, D', Pr[j | D] / Pr[j | D'] <= rho^(-Delta_T) rho^(-Delta_T) / (1 - eta)^2
(McSherry-Talwar 2007, Thm 6, with the floors' two one-sided errors), and a unit changes k groups:
**pure eps = ln(r^(2 k Delta_T)) + 4 k eta + bias_epsilon(k)** (ln(1/(1-eta)) <= 2 eta).

Why the factor 2 stays (issue 34 §4). McSherry-Talwar's monotone case (eps Delta instead of 2 eps Delta) needs
every score to move the same way between neighbours. This score does not: a row added at x moves the q n
target of every candidate, so candidates between x and the quantile get *closer* (S falls) while the others
get farther (S rises). The loss is tight on a fine grid already at one row: D = {v_B}, D' = D + {v_1} (median)
lowers the score of v_1..v_(B-1) by Delta_T and raises v_0's by Delta_T, so Pr[v_0 | D] / Pr[v_0 | D'] =
r^(Delta_T) (1 + (B - 1)) / (1 + (B - 1) r^(-Delta_T)) -> r^(2 Delta_T) as B grows (0.995 of the stated eps at
B = 256, eps = 1; the 0.5-0.79 an n <= 8 check found is the B <= 4 value of this ratio). The general certified
bound r^(Delta_T) (1 + B) / (1 + B r^(-Delta_T)) (at least one candidate has score 0 and weight w_0 in both
laws, no weight exceeds w_0) gains only ln((r^Delta_T + B) / (1 + B)) (1% of eps at B = 64, eps = 1): not
worth a second statement. tests/unit/groups/test_quantile_tight.py holds the enumeration oracle.

Draw: ONE uniform. X = rng.bits(Lw), Lw = bitlen((B+1) w_0) + lam, u = floor(X W / 2^Lw) + 1 in [1, W]
(the rng's multiply-shift reduction with a public length: every u has probability within a factor
1 +- 2^-lam of 1/W), and the output is the least j with w_0 + ... + w_j >= u, found in exactly
ceil(log2(B + 2)) comparisons. No loop depends on the data.

Rank-error bound. The best candidate has T = 0 and weight 2^P; the B others weigh at most 2^P rho^t each
when T >= t, so Pr[T_out >= t] <= (1 + 2^-lam) B rho^t. With t_beta the least t for which that is
<= beta: **with probability >= 1 - beta, S_out <= d t_beta - 1, i.e. at most q n + e rows lie in cells
below the released point's and at most (1 - q) n + e above it, e = (d t_beta - 1) / b rows**.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dpspark.exact import clog2
from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError
from dpspark.mechanisms.groups.dyadic import CAP_BITS, ETA_BITS, MAX_CAP, dyadic_table, least_level
from dpspark.mechanisms.groups.laws import exp_eps_below
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource, bias_epsilon

#: score quantisation keeps Delta_T near this many steps (at most one more)
SCORE_STEPS = 64
__all__ = ["CAP_BITS", "ETA_BITS", "MAX_CAP", "SCORE_STEPS", "QuantileLaw"]


def _eta_extra(k: int) -> Fraction:
    """4 k eta: the floors' share of epsilon over k groups."""
    return Fraction(4 * k, 1 << ETA_BITS)


class QuantileLaw:
    """The exact exponential mechanism of one quantile aggregate (module docstring)."""

    def __init__(self, agg: Aggregate, bounds: Bounds, epsilon: Fraction, lam: int) -> None:
        if agg.q is None or agg.grid is None:
            raise GroupsError(f"aggregate {agg.name!r} is not a quantile")
        self.agg, self.k, self.lam = agg, bounds.k, lam
        self.a, self.b = agg.q.numerator, agg.q.denominator
        self.B = agg.grid
        self.s = max(self.a, self.b - self.a)
        cs = bounds.c * self.s
        self.d = max(1, cs // SCORE_STEPS)
        self.delta_t = -(-cs // self.d)
        target = epsilon - bias_epsilon(self.k, lam) - _eta_extra(self.k)
        if target <= 0:
            raise GroupsError(f"aggregate {agg.name!r}: epsilon share too small")
        self.base = exp_eps_below(target / (2 * self.k * self.delta_t))
        # the cap, the precision and the table: certified cheaply and memoised (dyadic.py)
        self.cap, self.P, self.table = dyadic_table(self.base, self.B + 1, f"aggregate {agg.name!r}")
        self.w_bits = ((self.B + 1) * self.table[0]).bit_length() + lam
        self.rounds = clog2(self.B + 2)

    # -- privacy and accuracy (data-free) --------------------------------------------------------
    def epsilon(self) -> LogEpsilon:
        """ln(r^(2 k Delta_T)) + 4 k eta + bias_epsilon(k), exactly."""
        return LogEpsilon(self.base ** (2 * self.k * self.delta_t), _eta_extra(self.k) + bias_epsilon(self.k, self.lam))

    def rank_steps(self, beta: Fraction) -> int:
        """t_beta: the least t <= cap with (1 + 2^-lam) B r^(-t) <= beta (GroupsError when beta is too small).

        r^(-t) is bounded by the table entry: w_t >= 2^P r^(-t) (1 - eta), so the test
        (1 + 2^-lam) B w_t <= beta 2^P (1 - eta) implies it (a certified, slightly conservative t_beta).
        """
        grow = Fraction((1 << self.lam) + 1, 1 << self.lam)
        t = least_level(self.table, beta * (1 << self.P) * (1 - Fraction(1, 1 << ETA_BITS)) / (grow * self.B))
        if t is None:
            raise GroupsError(f"aggregate {self.agg.name!r}: beta below 2^-{CAP_BITS} is not supported")
        return t

    def rank_error(self, beta: Fraction) -> Fraction:
        """e: rows of rank error of the released point (module docstring), with probability >= 1 - beta."""
        return Fraction(max(self.d * self.rank_steps(beta) - 1, 0), self.b)

    # -- with data -------------------------------------------------------------------------------
    def scores(self, cells: Sequence[int]) -> list[int]:
        """S_j for j = 0..B (B + 1 entries, whatever the counts)."""
        if len(cells) != self.B + 1:
            raise GroupsError(f"aggregate {self.agg.name!r}: expected {self.B + 1} cell counts per group")
        a, b = self.a, self.b
        n = sum(cells)
        out, below = [], 0
        for h in cells:
            above = n - below - h
            out.append(max(b * below - a * n, b * above - (b - a) * n, 0))
            below += h
        return out

    def levels(self, cells: Sequence[int]) -> list[int]:
        """V_j = min(floor(S_j / d), cap): the table index of each candidate."""
        return [min(s // self.d, self.cap) for s in self.scores(cells)]

    def levels_many(self, cells: np.ndarray) -> np.ndarray:
        """:meth:`levels` of every row of an int64 (groups, B + 1) matrix of cell counts, vectorised (exact while
        b n stays below 2^62, checked by the caller's public bound)."""
        a, b = self.a, self.b
        n = cells.sum(axis=1, keepdims=True)
        below = np.cumsum(cells, axis=1) - cells
        above = n - below - cells
        s = np.maximum(np.maximum(b * below - a * n, b * above - (b - a) * n), 0)
        return np.minimum(s // self.d, self.cap)

    def weights(self, cells: Sequence[int]) -> list[int]:
        """w_(V_j) for every candidate."""
        return [self.table[v] for v in self.levels(cells)]

    def pmf(self, cells: Sequence[int]) -> list[Fraction]:
        """The exact law w_j / W (before the rng's 1 +- 2^-lam factor)."""
        w = self.weights(cells)
        total = sum(w)
        return [Fraction(x, total) for x in w]

    def draw_level_index(self, levels: Sequence[int], rng: RandomSource) -> int:
        """j from ONE uniform by a fixed-round inverse CDF over the weights of ``levels`` (module docstring)."""
        table = self.table
        cum, acc = [], 0
        for v in levels:
            acc += table[v]
            cum.append(acc)
        u = ((rng.bits(self.w_bits) * acc) >> self.w_bits) + 1
        pos, last = -1, self.B  # invariant: cum[pos] < u (cum[-1] read as 0)
        step = 1 << (self.rounds - 1)
        while step:
            probe = pos + step
            value = cum[min(probe, last)]
            if probe <= last and value < u:
                pos = probe
            step >>= 1
        return pos + 1

    def draw_level_indexes(self, levels: np.ndarray, rng: RandomSource) -> list[int]:
        """:meth:`draw_level_index` for every row of a (groups, B + 1) level matrix, in order: the same uniforms
        (one ``rng.bits(w_bits)`` per group, in order) and the same outputs, the big-integer sums and the
        fixed-round search done column-wise."""
        G = len(levels)
        if G == 0:
            return []
        weights = np.array(self.table, dtype=object)[levels]
        cum = np.cumsum(weights, axis=1)
        totals = cum[:, -1].tolist()
        us = np.empty(G, dtype=object)
        us[:] = [((rng.bits(self.w_bits) * w) >> self.w_bits) + 1 for w in totals]
        pos = np.full(G, -1, dtype=np.int64)
        rows = np.arange(G)
        last = self.B
        step = 1 << (self.rounds - 1)
        while step:  # fixed rounds: ceil(log2(B + 2)), whatever the data
            probe = pos + step
            value = cum[rows, np.minimum(probe, last)]
            go = (probe <= last) & (value < us).astype(bool)
            pos = np.where(go, probe, pos)
            step >>= 1
        return (pos + 1).tolist()

    def draw_index(self, cells: Sequence[int], rng: RandomSource) -> int:
        """j for one group's cell counts (one uniform)."""
        return self.draw_level_index(self.levels(cells), rng)

    def release(self, cells: Sequence[int], rng: RandomSource) -> Fraction:
        """The released candidate point v_j."""
        return self.agg.point(self.draw_index(cells, rng))

    def describe(self) -> dict[str, Any]:
        return {"noise": "exponential_mechanism", "bins": self.B, "q": str(self.agg.q), "base": str(self.base),
                "score_sensitivity": self.delta_t, "score_step": self.d, "table_entries": self.cap + 1,
                "table_bits": self.P, "uniform_bits": self.w_bits}
