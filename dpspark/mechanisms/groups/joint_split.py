"""Several quantiles of one column in ONE exponential mechanism with a data-free rank bar (issue 34 §4).

Why not :mod:`.joint_quantile`'s score. That score places a candidate at its half-rank position R_p = 2 L_p + h_p,
so an atom (many rows in one cell) at a quantile costs the *true* tuple a score of about Q h, and a wrong tuple
can tie it: all n rows in one cell p, q = (1/3, 2/3): (p, p) and (v, p) for every cell v below p both score 4n,
so the first quantile lands below the data with probability > 1/2 at any n
(``test_the_half_rank_score_has_no_data_free_bar``).
No bar from public parameters covers that law.

The split score. Candidates are the B + 1 grid points; a group's cell counts h_0..h_B give L_p (rows in cells
below p) and U_p = L_p + h_p. Work in units of 1/Q rows, Q = lcm of the q denominators, T_j = Q q_j,
t_j = T_j - T_(j-1) (T_0 = 0, T_(m+1) = Q; positive integers summing to Q). A non-decreasing tuple o lets quantile
j cut its cell anywhere: y_j in I(o_j) = [Q L_(o_j), Q U_(o_j)] (an atom's rows may fall on either side), and

    S(o) = min over y of  sum_(j=1..m+1) |y_j - y_(j-1) - t_j n|     (y_0 = 0, y_(m+1) = Q n).

With e_j = y_j - T_j n this is the least total variation of a path 0 -> e_1 -> ... -> e_m -> 0 through the
intervals I(o_j) - T_j n. Its minimiser is greedy: stay while feasible, else move to the nearest end (by
induction the optimal cost-to-here is c + |e - a| for one point a, so the clamp is optimal), i.e.
y_j = clamp(y_(j-1) + t_j n, I(o_j)): S is computed exactly in integers in m clamps
(``test_split_score_is_the_least_over_every_cut``). A crossing y_j < y_(j-1) can only occur inside one cell, and
replacing both by a common value in between does not raise the cost, so the minimum over monotone y is the same.

Sensitivity. Let D' = D plus one row in cell x. Map a monotone y feasible for D to y'_j = y_j + Q [o_j > x]
(feasible for D'), and a monotone y' feasible for D' to y_j = y'_j - Q [o_j > x] for o_j != x, min(y'_j, Q U_x)
for o_j = x (feasible for D). Both shifts are non-decreasing 0/1 (times Q) sequences in j ending at 1 (y_(m+1):
Q n -> Q (n + 1)), so the gaps move by Q e_j with e in {0, 1}, sum e = 1, and the targets by t_j:
sum_j |Q e_j - t_j| <= 2 (Q - t_min). Hence |S_D(o) - S_D'(o)| <= 2 (Q - t_min) per row, and a unit that adds
c rows to a group moves S by at most **Delta = 2 c (Q - t_min)** (JointExp's 2 (1 - min gap), Gillenwater et al.
2021, in 1/Q rows). The score is quantised to V = min(floor(S / d), cap), d = max(1, floor(Delta / 64)), which
moves by at most Delta_T = ceil(Delta / d).

Law and privacy. Weights w_V of the dyadic table (:mod:`.dyadic`) for the base r <= e^(eps~ / (2 k Delta_T))
over the N = C(B + m, m) tuples: Pr[o] = w_(V(o)) / W. McSherry-Talwar 2007, Thm 6, with the floors' factor:
**pure eps = ln(r^(2 k Delta_T)) + 4 k eta + bias_epsilon(k)** (one uniform per group, k groups per unit).

Draw (exact, strict time). The work is fixed: every tuple's level (m vectorised clamps over N tuples), the count
of tuples per level, ONE uniform u in [1, W] (the rng's multiply-shift reduction at a public length), the level V
whose cumulative weight first reaches u (fixed-round search over cap + 1 levels), and the offset
(u - W_(<V) - 1) // w_V among that level's tuples in their public order: each tuple gets exactly w_V values of u.
N is capped (:data:`MAX_TUPLES`), so the rule that uses this law is public.

Rank bar (data-free). The true tuple (each o_j the cell holding the q_j-quantile row, T_j n in I(o_j)) has
S = 0 and weight w_0 = 2^P; the N - 1 others weigh at most w_t when V >= t. So
Pr[V >= t] <= (1 + 2^-lam) (N - 1) w_t / 2^P, and t_beta is the least t for which that is <= beta, checked on the
exact table entries. On V <= t_beta - 1: S <= d t_beta - 1, and the path 0 -> e_j -> 0 has total variation
>= 2 |e_j|, so dist(T_j n, I(o_j)) <= S / 2. **With probability >= 1 - beta, for every j at once, at most
q_j n + E rows lie in cells below o_j's and at most (1 - q_j) n + E above it, E = (d t_beta - 1) / (2Q) rows**
(the single quantile's statement, :mod:`.quantile`, for all m quantiles jointly).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from itertools import combinations_with_replacement
from math import comb
from typing import Any, Sequence

import numpy as np

from dpspark.exact import clog2
from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.dyadic import ETA_BITS, dyadic_table, least_level
from dpspark.mechanisms.groups.joint_quantile import gap_targets, joint_arguments
from dpspark.mechanisms.groups.laws import exp_eps_below
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource, bias_epsilon

#: the largest tuple space the exact joint law enumerates (public: C(bins + m, m) <= this, else independent)
MAX_TUPLES = 1 << 22
#: score quantisation keeps Delta_T near this many steps (as quantile.py)
SCORE_STEPS = 64


def tuple_count(B: int, m: int) -> int:
    """N = C(B + m, m): the non-decreasing m-tuples of B + 1 grid points."""
    return comb(B + m, m)


@lru_cache(maxsize=4)
def _tuples(B: int, m: int) -> np.ndarray:
    """Every non-decreasing m-tuple of 0..B, in lexicographic order (public; (N, m) int32)."""
    flat = np.fromiter((x for t in combinations_with_replacement(range(B + 1), m) for x in t), dtype=np.int32,
                       count=tuple_count(B, m) * m)
    out = flat.reshape(-1, m)
    out.setflags(write=False)
    return out


class SplitJointLaw:
    """The joint exponential mechanism of m quantiles of one column with the split score (module docstring)."""

    def __init__(self, qs: Sequence[Fraction], B: int, c: int, k: int, epsilon: Fraction, lam: int,
                 max_rows: int, what: str = "joint quantiles") -> None:
        qs = joint_arguments(qs, B, max_rows, what)
        self.qs, self.B, self.c, self.k, self.lam, self.m = qs, B, c, k, lam, len(qs)
        self.max_rows, self.what = max_rows, what
        self.N = tuple_count(B, self.m)
        if self.N > MAX_TUPLES:
            raise GroupsError(f"{what}: {self.N} tuples exceed the joint law's {MAX_TUPLES}; lower bins or use "
                              "quantiles = \"independent\"")
        self.Q, self.t = gap_targets(qs)
        # every position and score is at most 2 (m + 2) Q max_rows: int64 exact below 2^62 (public check)
        if 2 * (self.m + 2) * self.Q * max(max_rows, 1) >= 1 << 62:
            raise GroupsError(f"{what}: the quantiles' common denominator times the row bound is too large for the "
                              "exact joint law; use quantiles = \"independent\"")
        raw = 2 * c * (self.Q - min(self.t))
        self.d = max(1, raw // SCORE_STEPS)
        self.delta_t = -(-raw // self.d)
        target = epsilon - bias_epsilon(k, lam) - self._eta_extra()
        if target <= 0:
            raise GroupsError(f"{what}: epsilon share too small")
        self.base = exp_eps_below(target / (2 * k * self.delta_t))
        self.cap, self.P, self.table = dyadic_table(self.base, self.N, what)
        self.draw_bits = (self.N * self.table[0]).bit_length() + lam
        self.rounds = clog2(self.cap + 2)

    def _eta_extra(self) -> Fraction:
        return Fraction(4 * self.k, 1 << ETA_BITS)

    # -- privacy and accuracy (data-free) --------------------------------------------------------
    def epsilon(self) -> LogEpsilon:
        """ln(r^(2 k Delta_T)) + 4 k eta + bias_epsilon(k), exactly."""
        return LogEpsilon(self.base ** (2 * self.k * self.delta_t), self._eta_extra() + bias_epsilon(self.k, self.lam))

    def rank_steps(self, beta: Fraction) -> int:
        """t_beta: the least t <= cap with (1 + 2^-lam) (N - 1) w_t <= beta 2^P, on the exact table entries."""
        t = least_level(self.table, Fraction(beta) * (1 << self.P) * (1 << self.lam)
                        / (((1 << self.lam) + 1) * max(self.N - 1, 1)))
        if t is None:
            raise GroupsError(f"{self.what}: beta too small for the weight table")
        return t

    def rank_error(self, beta: Fraction) -> Fraction:
        """E: rows of rank error of every released point at once, with probability >= 1 - beta."""
        return Fraction(max(self.d * self.rank_steps(beta) - 1, 0), 2 * self.Q)

    # -- with data -------------------------------------------------------------------------------
    def _bounds(self, cells: Sequence[int]) -> tuple[np.ndarray, np.ndarray, int]:
        if len(cells) != self.B + 1 or any(isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 0
                                           for h in cells):
            raise GroupsError(f"{self.what}: expected {self.B + 1} non-negative cell counts")
        h = np.asarray(cells, dtype=np.int64)
        n = int(h.sum())
        if n > self.max_rows:
            raise GroupsError(f"{self.what}: a group's statistics are outside their public range (an engine bug)")
        upper = np.cumsum(h)
        return (upper - h) * self.Q, upper * self.Q, n

    def scores(self, cells: Sequence[int]) -> np.ndarray:
        """S(o) for every tuple, in the public tuple order (int64; m clamps, module docstring)."""
        lo, hi, n = self._bounds(cells)
        tup = _tuples(self.B, self.m)
        y = np.zeros(self.N, dtype=np.int64)
        s = np.zeros(self.N, dtype=np.int64)
        for j in range(self.m):
            want = y + self.t[j] * n
            y = np.minimum(np.maximum(want, lo[tup[:, j]]), hi[tup[:, j]])
            s += np.abs(y - want)
        s += np.abs(self.Q * n - y - self.t[self.m] * n)
        return s

    def levels(self, cells: Sequence[int]) -> np.ndarray:
        """V(o) = min(floor(S(o) / d), cap) for every tuple."""
        return np.minimum(self.scores(cells) // self.d, self.cap)

    def law(self, cells: Sequence[int]) -> dict[tuple[int, ...], Fraction]:
        """The exact law w_(V(o)) / W (before the rng's 1 +- 2^-lam factor): for tests at small B and m."""
        lv = self.levels(cells).tolist()
        w = [self.table[v] for v in lv]
        total = sum(w)
        return {tuple(int(x) for x in o): Fraction(x, total) for o, x in zip(_tuples(self.B, self.m), w)}

    def draw(self, cells: Sequence[int], rng: RandomSource) -> list[int]:
        """o_1 <= ... <= o_m (grid indexes) with probability w_(V(o)) / W, from ONE uniform (fixed work)."""
        lv = self.levels(cells)
        counts = np.bincount(lv, minlength=self.cap + 1).tolist()
        cum, acc = [], 0
        for cnt, w in zip(counts, self.table):
            acc += cnt * w
            cum.append(acc)
        u = ((rng.bits(self.draw_bits) * acc) >> self.draw_bits) + 1
        pos, last, step = -1, self.cap, 1 << (self.rounds - 1)
        while step:  # fixed rounds: the least level whose cumulative weight reaches u
            probe = pos + step
            if probe <= last and cum[min(probe, last)] < u:
                pos = probe
            step >>= 1
        level = pos + 1
        below = cum[level - 1] if level else 0
        offset = (u - below - 1) // self.table[level]
        index = int(np.flatnonzero(lv == level)[offset])
        return [int(x) for x in _tuples(self.B, self.m)[index]]

    def describe(self) -> dict[str, Any]:
        return {"noise": "joint_exponential_mechanism", "score": "split (an atom's rows on either side)",
                "bins": self.B, "q": [str(x) for x in self.qs], "tuples": self.N, "base": str(self.base),
                "score_sensitivity": self.delta_t, "score_step": self.d, "table_entries": self.cap + 1,
                "table_bits": self.P, "uniform_bits": self.draw_bits}
