"""Several quantiles of one column in ONE exponential mechanism over a public grid (issue 34 §4; JointExp).

Not released: this half-rank score has no data-free rank bar (an atom at a quantile lets wrong tuples tie the
true one); the groups release uses :mod:`.joint_split` (the split score). Kept for its polynomial sampler and
the dp_multiq benchmark on continuous data.

Gillenwater, Joseph and Kulesza (ICML 2021) release m quantiles jointly: one exponential mechanism over
non-decreasing tuples, whose utility sums, over the m + 1 gaps the tuple cuts the data into, the distance of
each gap's row count to its target. This is that mechanism on the public grid of :mod:`.quantile` (candidate
points v_p = lo + (hi - lo) p / B, p = 0..B, a row counted in the cell of its nearest point), with exact
integer weights and exact sampling.

Score. q_1 < ... < q_m in (0, 1), Q = lcm of their denominators, t_j = Q (q_j - q_(j-1)) (q_0 = 0, q_(m+1) = 1:
positive integers summing to Q). A candidate's position counts the rows below its cell twice and the rows in
its cell once: R_p = 2 L_p + h_p (L_p rows in cells below p, h_p in p's cell; R is non-decreasing in p), so a
point whose cell holds the quantile row is not penalised for it (as quantile.py's score; a half-rank
resolution). With a tuple o_1 <= ... <= o_m, the gaps are g_j = R_(o_j) - R_(o_(j-1)) (R_(o_0) = 0,
R_(o_(m+1)) = 2n) and

    s_j = |Q g_j - 2 t_j n|,   V_j = min(s_j, cap),   weight w(o) = prod_j w_(V_j)   (j = 1..m+1),

w_V the dyadic table of :mod:`.dyadic` for the base r (2^P rho^V (1 - eta) <= w_V <= 2^P rho^V, rho = 1/r).
One row added in cell x moves R_p by 2 (x < p), 1 (x = p) or 0 (x > p), non-decreasing in p, so the gaps
grow by e_j >= 0 with sum e_j = 2, and the targets by 2 t_j: sum_j |ds_j| <= sum_j |Q e_j - 2 t_j| <= 4 (Q - t_min)
(the worst puts both units in one gap). A unit adds c rows: **Delta = 4 c (Q - t_min)**; min(., cap) keeps it.
(Delta / 2Q = 2 (1 - min gap) is JointExp's add/remove sensitivity, in half-rank units.)

Privacy. The output law is w(o) / sum w over all tuples (sampled exactly, below). For neighbours,
w(o) / w'(o) <= rho^(-Delta) / (1 - eta)^(m+1) and the same for the normalisers, so with r <= e^(eps~/(2 k
Delta)) (certified) a unit changing k groups gives **pure eps = ln(r^(2 k Delta)) + 4 k (m+1) eta +
bias_epsilon(k m)** (McSherry-Talwar 2007, Thm 6; ln(1/(1-eta)) <= 2 eta; m biased uniforms per group). The
score is not monotone (quantile.py's docstring), so the factor 2 stays.

Sampling (exact, strict time). Forward: alpha_1(p) = w(V_1 at g = R_p); alpha_j(p) = sum_(p' <= p)
alpha_(j-1)(p') w_j(R_p - R_(p')), in exact integers (no rounding: the table is the only floor). The sum over
p' with R_(p') < R_p is a convolution over positions 0..2n, done by one big-integer product (Kronecker
substitution); the p' of p's own position add a running prefix. Backward: o_m from weights alpha_m(p)
w_(m+1)(2n - R_p), then o_j given o_(j+1) = p from alpha_j(p') w_(j+1)(R_p - R_(p')) [p' <= p] over ALL p'
(fixed work), each with ONE
uniform of a public bit length (:func:`_draw`): Pr[o] telescopes to w(o) / sum w. Work: O(m (B + R)) big
integers with R = the public bound on a group's rows (positions are padded to 2R + 1), or, when (B + 1)^2 is
the smaller, a direct sum over candidate pairs, O(m B^2) whatever R; either way whatever the data.

Rank error. Every tuple has |R_(o_j) / 2 - q_j n| <= S(o) / 2Q for each j (the position is a partial sum of
gaps, S = sum_j s_j). Pr[S(o) >= S_min + t] <= (1 + 2^-lam)^m C(B + m, m) rho^t / (1 - eta)^(m+1), S_min the best
tuple's score (<= (m + 1) Q / 2 + Q h_max, h_max the largest cell: atoms; 0-ish on continuous data).
"""

from __future__ import annotations

from fractions import Fraction
from math import comb, lcm
from typing import Any, Sequence

from dpspark.exact import clog2
from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.dyadic import ETA_BITS, dyadic_table, least_level
from dpspark.mechanisms.groups.laws import exp_eps_below
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource, bias_epsilon

def joint_arguments(qs: Sequence[Fraction], B: int, max_rows: int, what: str) -> list[Fraction]:
    """The checked public arguments of a joint law: increasing q in (0, 1), bins >= 1, an int row bound."""
    out = [Fraction(x) for x in qs]
    if not out or any(not 0 < x < 1 for x in out) or any(a >= b for a, b in zip(out, out[1:])):
        raise GroupsError(f"{what}: give increasing quantiles in (0, 1)")
    if B < 1:
        raise GroupsError(f"{what}: the grid needs bins >= 1")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 0:
        raise GroupsError(f"{what}: max_rows must be an int >= 0")
    return out


def gap_targets(qs: Sequence[Fraction]) -> tuple[int, list[int]]:
    """(Q, t): Q = lcm of the q denominators, t_j = Q (q_j - q_(j-1)) over the m + 1 gaps (q_0 = 0, q_(m+1) = 1)."""
    Q = lcm(*(x.denominator for x in qs))
    edges = [Fraction(0), *qs, Fraction(1)]
    return Q, [int((b - a) * Q) for a, b in zip(edges, edges[1:])]


def _draw(weights: Sequence[int], bits: int, rng: RandomSource) -> int:
    """The least i with w_0 + ... + w_i >= u, u = floor(X W / 2^bits) + 1 from ONE uniform X of ``bits`` bits (a
    public length >= bitlen(W) + lam), by a fixed-round search over the cumulative sums."""
    cum, acc = [], 0
    for w in weights:
        acc += w
        cum.append(acc)
    u = ((rng.bits(bits) * acc) >> bits) + 1
    last = len(cum) - 1
    pos, step = -1, 1 << (clog2(len(cum) + 1) - 1)
    while step:
        probe = pos + step
        if probe <= last and cum[min(probe, last)] < u:
            pos = probe
        step >>= 1
    return pos + 1


class JointQuantileLaw:
    """The joint exponential mechanism of m quantiles of one column (module docstring)."""

    def __init__(self, qs: Sequence[Fraction], B: int, c: int, k: int, epsilon: Fraction, lam: int,
                 max_rows: int, what: str = "joint quantiles", direct: bool | None = None) -> None:
        qs = joint_arguments(qs, B, max_rows, what)
        self.qs, self.B, self.c, self.k, self.lam, self.m = qs, B, c, k, lam, len(qs)
        self.max_rows = max_rows
        # the forward pass: a Kronecker product over the 2 max_rows + 1 positions, or a direct sum over the
        # (B + 1)^2 candidate pairs when that is cheaper (public parameters only)
        self.direct = (B + 1) ** 2 <= 64 * (2 * max_rows + 1) if direct is None else direct
        self.Q, self.t = gap_targets(qs)
        self.delta = 4 * c * (self.Q - min(self.t))
        target = epsilon - bias_epsilon(k * self.m, lam) - self._eta_extra()
        if target <= 0:
            raise GroupsError(f"{what}: epsilon share too small")
        self.base = exp_eps_below(target / (2 * k * self.delta))
        self.cap, self.P, self.table = dyadic_table(self.base, B + 1, what)
        self.tuples = comb(B + self.m, self.m)  # non-decreasing m-tuples of B + 1 points
        # public uniform lengths: a step's total is at most (B + 1)^m tuples' worth of 2^(P (m + 1))
        self.draw_bits = (self.tuples << (self.P * (self.m + 1))).bit_length() + lam

    def _eta_extra(self) -> Fraction:
        return Fraction(4 * self.k * (self.m + 1), 1 << ETA_BITS)

    # -- privacy (data-free) ---------------------------------------------------------------------
    def epsilon(self) -> LogEpsilon:
        """ln(r^(2 k Delta)) + 4 k (m + 1) eta + bias_epsilon(k m), exactly."""
        return LogEpsilon(self.base ** (2 * self.k * self.delta), self._eta_extra() + bias_epsilon(self.k * self.m,
                                                                                                   self.lam))

    def score_steps(self, beta: Fraction) -> int:
        """t_beta: the least t with (1 + 2^-lam)^m C(B + m, m) rho^t <= beta (1 - eta)^(m+1), certified through the
        table (w_t >= 2^P rho^t (1 - eta))."""
        grow = Fraction((1 << self.lam) + 1, 1 << self.lam) ** self.m
        eta = Fraction(1, 1 << ETA_BITS)
        t = least_level(self.table, beta * (1 << self.P) * (1 - eta) ** (self.m + 2) / (grow * self.tuples))
        if t is None:
            raise GroupsError("joint quantiles: beta too small for the table")
        return t

    # -- with data -------------------------------------------------------------------------------
    def _gap_weights(self, j: int, n: int) -> list[int]:
        """w_(min(|Q g - 2 t_j n|, cap)) for g = 0..2 max_rows (gap j, 0-based over the m + 1 gaps)."""
        Q, tn, cap, table = self.Q, 2 * self.t[j] * n, self.cap, self.table
        return [table[min(abs(Q * g - tn), cap)] for g in range(2 * self.max_rows + 1)]

    def weight(self, cells: Sequence[int], tup: Sequence[int]) -> int:
        """w(o) of one non-decreasing tuple (the oracle of the tests)."""
        ranks = self._ranks(cells)
        n = sum(cells)
        cuts = [0, *(ranks[p] for p in tup), 2 * n]
        out = 1
        for j in range(self.m + 1):
            out *= self.table[min(abs(self.Q * (cuts[j + 1] - cuts[j]) - 2 * self.t[j] * n), self.cap)]
        return out

    def _ranks(self, cells: Sequence[int]) -> list[int]:
        if len(cells) != self.B + 1 or any(isinstance(h, bool) or not isinstance(h, int) or h < 0 for h in cells):
            raise GroupsError(f"joint quantiles: expected {self.B + 1} non-negative cell counts")
        if sum(cells) > self.max_rows:
            raise GroupsError("joint quantiles: a group's statistics are outside their public range (an engine bug)")
        out, acc = [], 0
        for h in cells:
            out.append(2 * acc + h)  # R_p = 2 L_p + h_p
            acc += h
        return out

    def forward(self, cells: Sequence[int]) -> tuple[list[int], list[list[int]], list[Any]]:
        """(R, alpha_1..alpha_m, gap weights) of the module docstring, exactly."""
        L = self._ranks(cells)
        n = sum(cells)
        if self.direct:
            return self._forward_direct(L, n)
        gw: list[Any] = [self._gap_weights(j, n) for j in range(self.m + 1)]
        alphas = [[gw[0][x] for x in L]]
        for j in range(1, self.m):
            prev = alphas[-1]
            by_rank = [0] * (2 * self.max_rows + 1)  # beta(l) = sum of alpha over candidates of rank l
            for a, x in zip(prev, L):
                by_rank[x] += a
            below = _convolve_strict(by_rank, gw[j])  # gamma(l) = sum_(l' < l) beta(l') w_j(l - l')
            w0, cur, run, rank = gw[j][0], [], 0, -1
            for a, x in zip(prev, L):
                run = a if x != rank else run + a  # alpha_(j-1) over p' <= p of p's own rank
                rank = x
                cur.append(below[x] + w0 * run)
            alphas.append(cur)
        return L, alphas, gw

    def _forward_direct(self, L: list[int], n: int) -> tuple[list[int], list[list[int]], list[Any]]:
        """The forward pass as a direct sum over candidate pairs: O(m B^2) whatever the row bound and n."""
        gw: list[Any] = [_GapWeights(self, j, n) for j in range(self.m + 1)]
        alphas = [[gw[0][x] for x in L]]
        for j in range(1, self.m):
            prev, g = alphas[-1], gw[j]
            alphas.append([sum(prev[i] * g[x - L[i]] for i in range(p + 1)) for p, x in enumerate(L)])
        return L, alphas, gw

    def total(self, cells: Sequence[int]) -> int:
        """sum over all tuples of w(o) (the normaliser), from the forward pass."""
        L, alphas, gw = self.forward(cells)
        n = 2 * sum(cells)  # the last position, 2n
        return sum(a * gw[self.m][n - x] for a, x in zip(alphas[-1], L))

    def step_weights(self, L: list[int], alphas: list[list[int]], gw: list[list[int]], n: int, j: int,
                     p: int | None) -> list[int]:
        """The weights of o_j (0-based) given o_(j+1) = p (None for the last quantile): alpha_j(p') times the next
        gap's weight, zero for p' > p; one entry per candidate, whatever p."""
        if p is None:
            g = gw[self.m]
            return [a * g[n - x] for a, x in zip(alphas[j], L)]
        lp, g = L[p], gw[j + 1]
        return [a * g[lp - x] * (i <= p) for i, (a, x) in enumerate(zip(alphas[j], L))]

    def draw(self, cells: Sequence[int], rng: RandomSource) -> list[int]:
        """o_1 <= ... <= o_m (grid indexes) with probability w(o) / sum w, m uniforms (module docstring)."""
        L, alphas, gw = self.forward(cells)
        n = 2 * sum(cells)  # the last position, 2n
        out = [0] * self.m
        p: int | None = None
        for j in range(self.m - 1, -1, -1):
            p = _draw(self.step_weights(L, alphas, gw, n, j, p), self.draw_bits, rng)
            out[j] = p
        return out

    def law(self, cells: Sequence[int]) -> dict[tuple[int, ...], Fraction]:
        """The exact output law of :meth:`draw` (each step's uniform read as exact), by following every branch of
        the backward pass: for tests at small B and m."""
        L, alphas, gw = self.forward(cells)
        n = 2 * sum(cells)  # the last position, 2n
        out: dict[tuple[int, ...], Fraction] = {}

        def walk(j: int, p: int | None, suffix: tuple[int, ...], prob: Fraction) -> None:
            if j < 0:
                out[suffix] = out.get(suffix, Fraction(0)) + prob
                return
            w = self.step_weights(L, alphas, gw, n, j, p)
            total = sum(w)
            for i, x in enumerate(w):
                if x:
                    walk(j - 1, i, (i, *suffix), prob * Fraction(x, total))

        walk(self.m - 1, None, (), Fraction(1))
        return out

    def describe(self) -> dict[str, Any]:
        return {"noise": "joint_exponential_mechanism", "bins": self.B, "q": [str(x) for x in self.qs],
                "base": str(self.base), "score_sensitivity": self.delta, "table_entries": self.cap + 1,
                "table_bits": self.P, "uniform_bits": self.draw_bits}


class _GapWeights:
    """w_(min(|Q g - 2 t_j n|, cap)) on demand (the direct forward pass builds no list over the row bound)."""

    def __init__(self, law: JointQuantileLaw, j: int, n: int) -> None:
        self.Q, self.tn, self.cap, self.table = law.Q, 2 * law.t[j] * n, law.cap, law.table

    def __getitem__(self, g: int) -> int:
        return self.table[min(abs(self.Q * g - self.tn), self.cap)]


def _convolve_strict(a: list[int], b: list[int]) -> list[int]:
    """c(l) = sum_(l' < l) a(l') b(l - l') for l = 0..len(a)-1, exactly, by one big-integer product (Kronecker
    substitution: slots wider than any c(l), so no carry crosses a slot)."""
    n = len(a)
    if n == 1:
        return [0]
    import gmpy2

    width = max(x.bit_length() for x in a) + max(x.bit_length() for x in b) + n.bit_length() + 1
    width = -(-width // 8) * 8
    nbytes = width // 8
    pa = int.from_bytes(b"".join(x.to_bytes(nbytes, "little") for x in a), "little")
    pb = int.from_bytes(b"".join((0 if i == 0 else x).to_bytes(nbytes, "little") for i, x in enumerate(b[:n])),
                        "little")
    prod = int(gmpy2.mpz(pa) * gmpy2.mpz(pb))
    raw = prod.to_bytes(2 * n * nbytes + 1, "little")
    return [int.from_bytes(raw[i * nbytes:(i + 1) * nbytes], "little") for i in range(n)]
