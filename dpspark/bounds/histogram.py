"""The bounds step: a pure-DP noisy histogram over bit-length cells, the chosen range and its clipped-rows bound.

**Claim.** Let h = (h_0, ..., h_(CELLS-1)) be the per-cell row counts of one value column after the family's
contribution bounding, so that adding or removing one unit changes h by at most Delta = k c in l1 norm
(k groups times c rows per unit, each row in one cell) and every count lies in [0, n] (n = max_units k c).
:class:`BoundsLaw` releases h~_j = M(h_j) for every cell, M = FastSample on [0, n] at e^eps~ = p/q
(:mod:`dpspark.noise.fastsample`). The release is eps_b-DP under AddRemove with

    eps_b = ln((p/q)^Delta) + bias_epsilon(min(Delta, CELLS)),

**Theorem.** FastSample's pointwise likelihood ratio between neighbouring counts c, c + 1 is at most p/q
(Balcer-Vadhan 2018, Thm 4.10 with the tight truncation t*, dpspark.noise.fastsample); a count moved by m
moves the ratio by at most (p/q)^m (triangle inequality), and the cells are drawn independently, so a vector
moved by Delta in l1 norm has ratio at most (p/q)^Delta; at most min(Delta, CELLS) draws change, each with
the rng's multiplicative bias (dpspark.rng.bias_epsilon). p/q is the largest rational with
(p/q)^Delta <= e^(eps - bias) (certified: dpspark.noise.exp_eps.exp_eps_at_most).

Everything after the draw is post-processing of h~ (:meth:`BoundsLaw.choose`): a cell counts when h~_j is above
the public strong noise floor, or above the weak floor and within two cells of a counted cell (a lone noisy cell
far out is not followed; a real tail is contiguous in bit lengths); the others count as empty, and [lo, hi] is the narrowest run of cells [a, b] (never an overflow
cell) whose kept mass leaves at most ``tail`` of the kept mass on each side (extended to 0 when 0 < 3 lo < hi or
lo < 3 hi < 0: one-signed data whose low cells are lost in the noise clips nothing at 0, and the range grows
by at most a half).

**Clipped rows** (:func:`outside_bound`). The rows a range clips lie in the cells outside it,
O = {j < a'} u {j > b'}, a set chosen from h~: [a', b'] = [a, b], or, when lo was extended to 0, a' = the cell
[0, 2^E_MIN) (a value below lo = 0 lies in a negative cell; when hi was extended, b' = the cell just below 0).
With probability >= 1 - beta,

    sum_(j in O) h_j  <=  sum_(j in O) h~_j + t(|O|, k)

for *every* O of the P = (CELLS - 2)(CELLS - 1)/2 possible ranges at once (a union bound, each at beta' / P,
beta' = beta - CELLS gamma for the uniform draws), so the bound holds for the chosen one whatever the noise
chose. Per cell (no uniform draw), h~ = clamp(h + Z_t, 0, n) with |Z_t| <= t* (FastSample's truncation):
a cell with h <= n - t* never reaches the top clamp, so h - h~ = min(h, -Z_t) <= -Z_t, whose moment
generating function is at most the two-sided geometric's G(u) (mean zero: the noise enters with its sign;
the truncation moves mass to 0 and only lowers it); any cell has h - h~ <= (-Z_t)^+, at most phi(u) (the
one-sided bound of :func:`deficit_bound`). A cell with h > n - t* reads h~ >= h - t* > n - 2 t*, so the
k = |{j in O : h~_j > n - 2 t*}| cells of O given phi include every such cell of O; t(m, k) grows with k,
so it is at least the bound for the (unobserved) true set. Chernoff over the independent cells:
Pr[sum >= t] <= phi^k G^(m - k) u^-t, with certified logarithms (upper over lower). Without truncation
(FastSample's exact GeoSample fallback when t* >= n) every cell takes phi (k = m). No assumption on the
data: cell counts in [0, n] only. The former bound (:func:`deficit_bound`) summed the shortfall
(h_j - h~_j)^+ of all CELLS cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from dpspark.bounds.cells import CELLS, EDGES
from dpspark.errors import DPSparkError
from dpspark.exact import clog2
from dpspark.privacy import LogEpsilon
from dpspark.rng import DEFAULT_LAMBDA, RandomSource, bias_epsilon

#: FastSample's uniform-mixture probability (far below any beta a release states)
GAMMA = Fraction(1, 1 << 64)
#: extra denominator bits of the rational e^eps~ (relative loss of eps about 2^-EXTRA_BITS)
EXTRA_BITS = 12
#: default share of the release budget spent on the bounds, and the default mass left outside on each side
DEFAULT_SHARE = Fraction(1, 10)
DEFAULT_TAIL = Fraction(1, 100)
#: the noise floor's odds: some empty cell reads above the floor with probability <= 1/FLOOR_ODDS
FLOOR_ODDS = 1000
#: a cell above the weak floor (odds WEAK_ODDS) counts when it lies within two cells of a counted one
WEAK_ODDS = 10


class BoundsError(DPSparkError, ValueError):
    """A bounds-step parameter that cannot work (data-free; the message holds no data)."""


@dataclass(frozen=True)
class BoundsChoice:
    """The chosen bounds of one column: lo, hi (exact), the cells [a, b] and the clipped-rows bound at beta."""

    lo: Fraction
    hi: Fraction
    a: int
    b: int
    clipped_bound: int
    beta: Fraction
    #: the noisy kept mass (post-processing, stated)
    noisy_rows: int

    def describe(self) -> dict[str, Any]:
        return {"lo": str(self.lo), "hi": str(self.hi), "rows_clipped_at_most": self.clipped_bound,
                "clipped_bound_confidence": str(1 - self.beta), "noisy_rows": self.noisy_rows}


class BoundsLaw:
    """The noisy bit-length histogram of one column (module docstring: claim and theorem)."""

    def __init__(self, epsilon: Fraction, sensitivity: int, max_count: int, lam: int = DEFAULT_LAMBDA,
                 tail: Fraction = DEFAULT_TAIL) -> None:
        from dpspark.noise.fastsample import FastSample

        if not isinstance(epsilon, Fraction) or epsilon <= 0:
            raise BoundsError("the bounds step needs an exact epsilon > 0")
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
            raise BoundsError("the bounds step's sensitivity must be an int >= 1")
        if not 0 < tail < Fraction(1, 2):
            raise BoundsError("the bounds tail must lie in (0, 1/2)")
        self.sensitivity, self.lam, self.tail = sensitivity, lam, tail
        self.bias = bias_epsilon(min(sensitivity, CELLS), lam)
        self.exp_eps = law_exp_eps(epsilon, sensitivity, lam)
        self.mech = FastSample(n=max(1, max_count), exp_eps=self.exp_eps, gamma=GAMMA)

    def epsilon(self) -> LogEpsilon:
        """eps_b = ln((p/q)^Delta) + bias (module docstring)."""
        return LogEpsilon(self.exp_eps ** self.sensitivity, self.bias)

    def draw(self, counts: Sequence[int], rng: RandomSource) -> list[int]:
        """One FastSample draw per cell, in cell order (exactly CELLS draws: strict time)."""
        if len(counts) != CELLS:
            raise BoundsError(f"the bounds histogram has {CELLS} cells")
        return [int(v) for v in self.mech.draw_many([int(c) for c in counts], rng)]

    def floor(self) -> int:
        """The public noise floor: a noisy count at most this is read as an empty cell. An empty cell exceeds it
        with probability <= 1/(FLOOR_ODDS CELLS), so no empty cell anywhere does w.p. >= 1 - 1/FLOOR_ODDS (a
        spurious far cell would stretch the range to it)."""
        return self.mech.accuracy(Fraction(1, FLOOR_ODDS * CELLS))

    def choose(self, noisy: Sequence[int], beta: Fraction) -> BoundsChoice:
        """The narrowest cells [a, b] leaving at most ``tail`` of the kept noisy mass on each side, and the
        clipped-rows bound at ``beta`` (post-processing of the noisy histogram only)."""
        strong, weak = self.floor(), self.mech.accuracy(Fraction(1, WEAK_ODDS * CELLS))
        keep = [v > strong for v in noisy]
        for order in (range(CELLS), range(CELLS - 1, -1, -1)):  # two sweeps: weak cells joined to strong ones
            step = 1 if order.step == 1 else -1
            for j in order:
                near = [keep[i] for i in (j - step, j - 2 * step) if 0 <= i < CELLS]
                keep[j] = keep[j] or (noisy[j] > weak and any(near))
        mass = [v if k else 0 for v, k in zip(noisy, keep)]
        kept = sum(mass)
        inner = range(1, CELLS - 1)  # never an overflow cell
        if kept == 0:  # nothing stands out of the noise: the public default [-1, 1]
            a, b = EDGES.index(Fraction(-1)), EDGES.index(Fraction(1)) - 1
        else:
            allowed = self.tail * kept
            a, below = 1, mass[0]
            while a + 1 < CELLS - 1 and below + mass[a] <= allowed:  # public bound: CELLS
                below += mass[a]
                a += 1
            b, above = CELLS - 2, mass[CELLS - 1]
            while b - 1 >= a and above + mass[b] <= allowed:
                above += mass[b]
                b -= 1
        assert a in inner and b in inner and a <= b
        lo, hi = EDGES[a], EDGES[b + 1]
        zero = EDGES.index(Fraction(0))  # the cell [0, 2^E_MIN)
        first, last = a, b  # the cells the range keeps whole: the clipped rows lie in the others
        if 0 < 3 * lo < hi:  # a one-signed range spanning more than its distance to 0: extend it to 0
            lo, first = Fraction(0), zero
        elif lo < 3 * hi < 0:
            hi, last = Fraction(0), zero - 1
        out = [j for j in range(CELLS) if j < first or j > last]
        top = self.near_top()
        clipped = min(self.mech.n * CELLS, sum(noisy[j] for j in out)
                      + self.outside(beta, len(out), sum(1 for j in out if noisy[j] > top)))
        return BoundsChoice(lo, hi, a, b, clipped, beta, kept)

    def near_top(self) -> int:
        """A noisy count above this may be a cell whose true count reaches the top clamp (h > n - t*): n - 2 t*,
        or -1 without truncation (GeoSample: every cell may) (module docstring, "Clipped rows")."""
        if self.mech.fallback is not None:
            return -1
        return self.mech.n - 2 * self.mech.t

    def outside(self, beta: Fraction, m: int, top: int) -> int:
        """t(m, k): the clipped-rows slack for a range leaving m cells outside, k of them read above
        :meth:`near_top` (module docstring): :func:`outside_bound`."""
        gamma = self.mech.gamma if self.mech.fallback is None else Fraction(0)
        return outside_bound(self.exp_eps, CELLS, m, top, beta, gamma)

    def deficit(self, beta: Fraction) -> int:
        """t with Pr[sum_j (h_j - h~_j)^+ > t] <= beta over all CELLS cells (module docstring): :func:`deficit_bound`."""
        gamma = self.mech.gamma if self.mech.fallback is None else Fraction(0)
        return deficit_bound(self.exp_eps, CELLS, beta, gamma)

    def describe(self) -> dict[str, Any]:
        return {"histogram": f"{CELLS} signed bit-length cells", "sensitivity": self.sensitivity,
                "exp_eps": str(self.exp_eps), "tail": str(self.tail), "fastsample": self.mech.describe()}


def law_exp_eps(epsilon: Fraction, sensitivity: int, lam: int = DEFAULT_LAMBDA) -> Fraction:
    """e^eps~ = p/q of the law: the largest rational (at the law's precision) with (p/q)^Delta <= e^(eps - bias)."""
    from dpspark.noise.exp_eps import exp_eps_at_most

    target = (epsilon - bias_epsilon(min(sensitivity, CELLS), lam)) / sensitivity
    if target <= 0:
        raise BoundsError("the bounds step's epsilon share is too small")
    inv = -((-target.denominator) // target.numerator)
    return exp_eps_at_most(target, 1 << (clog2(max(inv, 1)) + EXTRA_BITS))


def certainly_refused(epsilon: Fraction, sensitivity: int, max_count: int, lam: int = DEFAULT_LAMBDA) -> bool:
    """True only when ``BoundsLaw(epsilon, sensitivity, max_count)`` would certainly raise: FastSample's t* search
    refuses once a power of two hi < t* has 2 hi bits(p) > 2 MAX_D_BITS (dpspark.noise.fastsample.tight_t), and
    the largest power of two below t* is >= t*/2. t* >= L = (bits(x) - 1) (693/1000) q/(p - q) with
    x = floor(2 (g - 1)(n + 1) q / (p - q)) (ln x >= (bits(x) - 1) ln 2 and ln(p/q) <= (p - q)/q), so
    L bits(p) > 2 MAX_D_BITS implies the refusal. Exact and cheap: the search itself takes seconds to fail."""
    from dpspark.noise import bigint

    try:
        r = law_exp_eps(epsilon, sensitivity, lam)
    except BoundsError:
        return True
    p, q, g = r.numerator, r.denominator, GAMMA.denominator // GAMMA.numerator
    x = 2 * (g - 1) * (max(1, max_count) + 1) * q // (p - q)
    lower = Fraction(693, 1000) * max(0, x.bit_length() - 1) * Fraction(q, p - q)
    return lower * p.bit_length() > 2 * bigint.MAX_D_BITS


def deficit_bound(exp_eps: Fraction, m: int, beta: Fraction, gamma: Fraction, candidates: int = 16) -> int:
    """A certified t with Pr[sum of m independent (c_j - M(c_j))^+ >= t] <= beta, M = FastSample at e^eps~ = p/q.

    (c - M)^+ <= (-Z)^+ (clamping to [0, n] never lowers M below c + Z when M < c; the truncation at +-t* only
    shrinks |Z|), except on the uniform branch (probability gamma per cell: m gamma by a union bound). With
    r = q/p, X = (-Z)^+ is 0 w.p. 1/(1+r) and a >= 1 w.p. (1-r) r^a / (1+r), so for 1 < u < 1/r
    E[u^X] = phi(u) = 1/(1+r) + (1-r) r u / ((1+r)(1 - r u)) and Chernoff gives Pr[S >= t] <= phi(u)^m u^-t.
    t = ceil((m ln phi(u) + ln(1/beta')) / ln u) with certified logarithms (upper over lower), the least over a
    public grid of u, beta' = beta - m gamma.
    """
    from dpspark.privacy.certified import ln_bounds

    left = beta - m * gamma
    if left <= 0:
        raise BoundsError("beta is below the noise's uniform-mixture probability")
    r = Fraction(exp_eps.denominator, exp_eps.numerator)
    best: int | None = None
    for i in range(1, candidates):  # public count
        u = 1 + (1 / r - 1) * Fraction(i, candidates)
        phi = 1 / (1 + r) + (1 - r) * r * u / ((1 + r) * (1 - r * u))
        top = m * ln_bounds(phi)[1] + ln_bounds(1 / left)[1]
        t = (top / ln_bounds(u)[0]).__ceil__()
        best = t if best is None else min(best, t)
    assert best is not None
    return max(0, best)


def outside_bound(exp_eps: Fraction, cells: int, m: int, top: int, beta: Fraction, gamma: Fraction,
                  candidates: int = 24) -> int:
    """A certified t with Pr[sum_(j in O) (h_j - h~_j) >= t] <= beta' / P for each outside set O of m cells, k = ``top``
    of them taking the one-sided law and the others the mean-zero one (module docstring, "Clipped rows").

    P = (cells - 2)(cells - 1)/2 ranges [a, b], 1 <= a <= b <= cells - 2; beta' = beta - cells gamma. With
    r = q/p and 1 < u < 1/r: G(u) = (1 - r)^2 / ((1 - r u)(1 - r/u)) (E[u^(-Z)], Z two-sided geometric) and
    phi(u) = 1/(1 + r) + (1 - r) r u / ((1 + r)(1 - r u)) (E[u^((-Z)^+)]); t = ceil((k ln phi + (m - k) ln G
    + ln(P/beta')) / ln u), certified logarithms (upper over lower), the least over a public grid of u.
    """
    from dpspark.privacy.certified import ln_bounds

    if cells < 3 or not 1 <= m <= cells or not 0 <= top <= m:
        raise BoundsError("the outside set has 1 to cells cells (of at least 3), top of them near the top")
    left = beta - cells * gamma
    if left <= 0:
        raise BoundsError("beta is below the noise's uniform-mixture probability")
    r = Fraction(exp_eps.denominator, exp_eps.numerator)
    union = ln_bounds((cells - 2) * (cells - 1) / (2 * left))[1]
    best: int | None = None
    for i in range(1, candidates):  # public count: a geometric grid of u - 1 towards 0, then a linear one
        for u in (1 + (1 / r - 1) / (1 << i), 1 + (1 / r - 1) * Fraction(i, candidates)):
            g = (1 - r) ** 2 / ((1 - r * u) * (1 - r / u))
            phi = 1 / (1 + r) + (1 - r) * r * u / ((1 + r) * (1 - r * u))
            logs = (top * ln_bounds(phi)[1] if top else 0) + ((m - top) * ln_bounds(g)[1] if m > top else 0)
            t = ((logs + union) / ln_bounds(u)[0]).__ceil__()
            best = t if best is None else min(best, t)
    assert best is not None
    return max(0, best)


def choose_scale_bits(lo: Fraction, hi: Fraction, epsilon: Fraction, target_bits: int = 16,
                      max_magnitude_bits: int = 50) -> int:
    """scale_bits for a fixed-point scale S = 2^s from public bounds and the release's epsilon.

    The quantum 1/S is at most (hi - lo) min(1, eps) / 2^target_bits (rounding stays far below the noise),
    clamped to [0, 64] and so that max(|lo|, |hi|) S <= 2^max_magnitude_bits (the engine's fast exact path;
    with |lo|, |hi| <= 2^61 (cells.E_MAX) and s >= 0 every (H - L)^2 stays below 2^126). Data-free given the
    bounds: it cannot fail.
    """
    width = hi - lo
    if width <= 0:
        raise BoundsError("the bounds must satisfy lo < hi")
    want = Fraction(1 << target_bits) / (width * min(Fraction(1), epsilon))  # S >= want
    s = clog2(max(1, want.__ceil__()))
    top = max(abs(lo), abs(hi))
    cap = max_magnitude_bits - clog2(max(1, top.__ceil__()))
    return max(0, min(s, cap, 64))
