"""Quantiles per group: an exact exponential mechanism over a public grid (docs/groups.md §E).

Grid and utility. The public points v_j = lo + (hi - lo) j / B, j = 0..B (B = ``bins``), split [lo, hi]
into B cells; the engine supplies a group's cell counts h_0..h_{B-1} (values clipped to [lo, hi], cell
[v_i, v_{i+1}), the last one closed). With n = sum h, L_j = h_0 + ... + h_{j-1} (rows below v_j), the
target rank rho = floor(q n) (the rank of the floor(q n)-th order statistic) and

    U_j = |L_j - floor(q n)|     (the rank error of v_j, in rows),

adding or removing one row moves L_j by 0 or 1 and floor(q n) by 0 or 1 (0 < q < 1), so U_j moves by at
most 1; a unit adds at most c rows to a group: Delta_U = c (whatever q's denominator is, so the weight
table below does not grow with it).

Exact weights. With a rational base r = p/q <= e^(eps_q / (2 k Delta_U)) (certified) and
V_j = min(U_j - U*, U_cap), U* = min_j U_j, the weights are the integers

    w_j = p^(U_cap - V_j) q^(V_j)  (a public table of U_cap + 1 entries),   Pr[v_j] = w_j / sum_i w_i.

This is the exponential mechanism with utility -min(U_j, U* + U_cap): the factor r^(-U*) cancels, and
min(U_j, U* + U_cap) moves by at most Delta_U between neighbours because both arguments do. So each
group's output is (2 Delta_U ln r)-DP (McSherry-Talwar 2007, Thm 6), and a unit touches k groups:
**pure eps = ln(r^(2 k Delta_U)) + bias_epsilon(k)** (the cap is what keeps the weights to
U_cap log2(p) bits, instead of b n log2(p)).

Draw: ONE uniform. X = rng.bits(Lw), Lw = bitlen(W_max) + lam with the public W_max = (B+1) w_max,
u = floor(X W / 2^Lw) + 1 in [1, W] (the rng's multiply-shift reduction with a public length: every u
has probability within a factor 1 +- 2^-lam of 1/W, dpspark.rng.multiply_shift_preimages), and the
output is the least j with w_0 + ... + w_j >= u, found in exactly ceil(log2(B + 1)) comparisons.
No loop depends on the data: B + 1 utilities, B + 1 table look-ups, one draw, a fixed-round search.

Rank-error bound. The best point has V = 0 and weight w_max, so
Pr[V_out >= t] <= (1 + 2^-lam) B r^(-t). With t_beta the least t for which that is <= beta:
**with probability >= 1 - beta, |L_out - floor(q n)| <= min_j |L_j - floor(q n)| + t_beta - 1 rows**: the
released point's rank error exceeds the best grid point's by at most t_beta - 1 rows (the best point is
within one cell of the floor(q n)-th order statistic).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from dpspark.exact import clog2
from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError
from dpspark.mechanisms.groups.laws import exp_eps_below
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource, bias_epsilon

#: the cap keeps every weight >= 2^-CAP_BITS w_max / B, so rank-error bounds reach beta = 2^-CAP_BITS
CAP_BITS = 64
#: largest exact weight table (U_cap + 1 integers of U_cap log2(p) bits)
TABLE_LIMIT_BITS = 1 << 29


class QuantileLaw:
    """The exact exponential mechanism of one quantile aggregate (module docstring)."""

    def __init__(self, agg: Aggregate, bounds: Bounds, epsilon: Fraction, lam: int) -> None:
        if agg.q is None or agg.bins is None:
            raise GroupsError(f"aggregate {agg.name!r} is not a quantile")
        self.agg, self.k, self.lam = agg, bounds.k, lam
        self.a, self.b = agg.q.numerator, agg.q.denominator
        self.B = agg.bins
        self.delta_u = bounds.c
        target = epsilon - bias_epsilon(self.k, lam)
        if target <= 0:
            raise GroupsError(f"aggregate {agg.name!r}: epsilon share too small")
        self.base = exp_eps_below(target / (2 * self.k * self.delta_u))
        p, q = self.base.numerator, self.base.denominator
        # U_cap: least U with B (q/p)^U <= 2^-CAP_BITS (doubling then bisection; public inputs only)
        def small(u: int) -> bool:
            return self.B * q**u << CAP_BITS <= p**u
        hi = 1
        while not small(hi):
            hi *= 2
        lo = hi // 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if small(mid) else (mid, hi)
        self.cap = hi
        if self.cap * self.cap * p.bit_length() > TABLE_LIMIT_BITS:
            raise GroupsError(f"aggregate {agg.name!r}: the exact weight table would exceed 64 MiB at this epsilon "
                              "share; raise epsilon or lower max_groups_per_unit / max_rows_per_group")
        self.table = [p ** (self.cap - v) * q**v for v in range(self.cap + 1)]
        self.w_bits = ((self.B + 1) * self.table[0]).bit_length() + lam
        self.rounds = clog2(self.B + 1)

    # -- privacy and accuracy (data-free) --------------------------------------------------------
    def epsilon(self) -> LogEpsilon:
        """ln(r^(2 k Delta_U)) + bias_epsilon(k), exactly."""
        return LogEpsilon(self.base ** (2 * self.k * self.delta_u), bias_epsilon(self.k, self.lam))

    def rank_steps(self, beta: Fraction) -> int:
        """t_beta: the least t <= U_cap with (1 + 2^-lam) B r^(-t) <= beta (GroupsError when beta is too small)."""
        p, q = self.base.numerator, self.base.denominator
        grow = Fraction((1 << self.lam) + 1, 1 << self.lam)
        for_t = lambda t: grow * self.B * Fraction(q**t, p**t) <= beta  # noqa: E731
        if not for_t(self.cap):
            raise GroupsError(f"aggregate {self.agg.name!r}: beta below 2^-{CAP_BITS} is not supported")
        lo, hi = 0, self.cap
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if for_t(mid) else (mid + 1, hi)
        return lo

    def rank_error(self, beta: Fraction) -> int:
        """Rows of rank error beyond the best grid point's, with probability >= 1 - beta: t_beta - 1."""
        return max(self.rank_steps(beta) - 1, 0)

    # -- with data -------------------------------------------------------------------------------
    def utilities(self, cells: Sequence[int]) -> list[int]:
        """U_j = |L_j - floor(q n)| for j = 0..B (B + 1 entries, whatever the counts)."""
        if len(cells) != self.B:
            raise GroupsError(f"aggregate {self.agg.name!r}: expected {self.B} cell counts per group")
        target = (self.a * sum(cells)) // self.b
        out, below = [], 0
        for j in range(self.B + 1):
            out.append(abs(below - target))
            if j < self.B:
                below += cells[j]
        return out

    def weights(self, cells: Sequence[int]) -> list[int]:
        """w_j = table[min(U_j - U*, U_cap)]."""
        us = self.utilities(cells)
        best = min(us)
        return [self.table[min(u - best, self.cap)] for u in us]

    def pmf(self, cells: Sequence[int]) -> list[Fraction]:
        """The exact law w_j / W (before the rng's 1 +- 2^-lam factor)."""
        w = self.weights(cells)
        total = sum(w)
        return [Fraction(x, total) for x in w]

    def draw_index(self, cells: Sequence[int], rng: RandomSource) -> int:
        """j from ONE uniform by a fixed-round inverse CDF (module docstring)."""
        w = self.weights(cells)
        cum, acc = [], 0
        for x in w:
            acc += x
            cum.append(acc)
        u = ((rng.bits(self.w_bits) * acc) >> self.w_bits) + 1
        pos, last = -1, self.B  # invariant: cum[pos] < u (cum[-1] read as 0)
        step = 1 << (self.rounds - 1) if self.rounds else 0
        while step:
            probe = pos + step
            value = cum[min(probe, last)]
            if probe <= last and value < u:
                pos = probe
            step >>= 1
        return pos + 1

    def release(self, cells: Sequence[int], rng: RandomSource) -> Fraction:
        """The released grid point v_j."""
        return self.agg.grid_point(self.draw_index(cells, rng))

    def describe(self) -> dict[str, Any]:
        return {"noise": "exponential_mechanism", "bins": self.B, "q": str(self.agg.q), "base": str(self.base),
                "utility_sensitivity": self.delta_u, "utility_cap": self.cap, "uniform_bits": self.w_bits}
