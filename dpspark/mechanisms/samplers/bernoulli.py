"""The bounded-bias Bernoulli sampler (RSSS Thm 6.1) and its product over d columns (RSSS Thms 6.4, 1.8).

For each binary column j with count c_j (units whose value is 1) and the public n = max_units:

    p~_j = clip(c_j / n, [1/4, 3/4]) = max(n, min(3n, 4 c_j)) / (4n),   output bit_j ~ Ber(p~_j),

drawn exactly from one uniform integer u in [1, 4n]: bit = 1 iff u <= max(n, min(3n, 4c)). No noise is added.

Privacy (pure DP, exact). Write P(c) = max(n, min(3n, 4c)) / (4n) on c in [0, n]. Moving c by one moves P by
at most 1/n, and P, 1 - P >= 1/4, so each output's probability changes by a factor <= 1 + 4/n (RSSS Thm 6.1).
Exactly: P(c+1)/P(c) is 1 below c0 = floor(n/4), (4 c0 + 4)/n at c0 (P(c0) = 1/4), (c + 1)/c for
c1 = ceil(n/4) <= c while 4c + 4 <= 3n (decreasing), and <= that past the upper clip; so the largest ratio
r(n) is attained at c0 or c1, and 1 - P(c) = P(n - c) gives the same ratio for the bit 0.
So one column is ln(r)-DP with r <= 1 + 4/n, equal when 4 | n.
One unit moves every column's count by at most one, and the d bits are drawn independently, so the product
is d ln(r)-DP (exact: the ratio of a product law is the product of the ratios).
The same bound holds under AddRemove(n) and under Substitute(n): the algorithm reads only the counts and the
public n, never the actual number of units N <= n, and both relations move each count by at most one.
The rng's reduction adds ``bias_epsilon(1)`` per column when 4n is not a power of two.

Accuracy (RSSS Thm 6.1 / 6.4). Assume exactly N = n units drawn i.i.d. with column biases p_j in [1/3, 2/3].
If |p^_j - p_j| <= 1/12 then p^_j = c_j/n is in [1/4, 3/4] and the clip does nothing; always |p~ - p^| <= 1/4.
So |E[p~_j] - p_j| <= 1/4 Pr[|p^_j - p_j| > 1/12] <= 1/4 * 2 e^{-2n/144} = e^{-n/72}/2 (Hoeffding), and
d_TV(product law, P) <= sum_j |E p~_j - p_j| <= d e^{-n/72} / 2 <= d 2^{-1 - floor(144 n / 7200)}
(e^{-x} <= 2^{-1.44 x} since log2 e > 1.44). With N < n units the estimate c/n has E = p N/n: biased.

What the mechanism runs: a floored unit count (issue 25)
---------------------------------------------------------
``bernoulli_sampler`` does not divide by max_units. With N the units of the batch (exact; at most max_units,
the engine truncates the rest) and a public floor n0 (a multiple of 4, the smallest that meets the privacy
target), it divides by D = max(N, n0): p~ = clip(c / D, [1/4, 3/4]) = max(D, min(3D, 4c)) / (4D), unbiased
(c / N) whenever N >= n0. The bit is 1 iff X 4D < 4D p~ 2^L for X = rng.bits(L), L = bitlen(4 max_units) + lam
public (strict time): Pr = ceil(4D p~ 2^L / (4D)) / 2^L, within [p~, p~ + 2^-L].

Privacy (pure, exact). A neighbour moves (c, N) to (c', N') with |c' - c| <= 1 and, when N' != N, N' = N +- 1
and c' - c in {0, +-1} of the same sign (the added or removed unit). Same D: |P - P'| <= 1/D. D' = D + 1:
|c/D - c'/(D + 1)| = |c - (c' - c) D| / (D(D + 1)) <= 1/(D + 1), as 0 <= c <= D. The clip is 1-Lipschitz and
P, 1 - P >= 1/4, so every output's probability ratio is <= 1 + 4/D <= 1 + 4/n0 = r(n0) (n0 divisible by 4:
attained at D = n0, c = n0/4). The rounding adds at most 2^-L to a probability >= 1/4, so an implemented ratio
is <= r (1 + 2^(2-L)) <= r (1 + a)/(1 - a), a = 2^-lam (L >= lam + 3): ``bias_epsilon(1)`` per column.
Product over d independent columns: d ln(1 + 4/n0) + bias_epsilon(d).

zCDP (certified). Every pair of ideal probabilities lies in the hexagon H = {x, y in [1/4, 3/4], |x - y| <= h},
h = 1/n0 (above), and the implemented pairs in H + [0, 2^-L]^2. exp((alpha - 1) D_alpha(Ber(x) || Ber(y))) is
jointly convex for alpha > 1, so its maximum over that polytope is at a vertex: a vertex of H plus a corner of
the box (:func:`floor_column_rho`), and sup_alpha D_alpha / alpha is certified with arb balls as in
:func:`column_rho`.

Accuracy: with N >= n0 units the bound above holds with N in place of n (the estimate is c/N); with N < n0
the estimate c/n0 is biased by p (n0 - N)/n0: the floor privacy needs, declared and stated in the plan.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

from dpspark.rng import RandomSource, bias_epsilon


def clipped_numerator(c: int, n: int) -> int:
    """4n p~ = max(n, min(3n, 4c)): the numerator of the clipped bias over the denominator 4n."""
    return max(n, min(3 * n, 4 * c))


def clipped_bias(c: int, n: int) -> Fraction:
    """p~ = clip(c/n, [1/4, 3/4]) exactly."""
    return Fraction(clipped_numerator(c, n), 4 * n)


def column_ratio(n: int) -> Fraction:
    """r(n) = max over neighbouring counts of one column's output-probability ratio (<= 1 + 4/n; = when 4 | n)."""
    if n < 1:
        raise ValueError("the bounded-bias sampler needs n >= 1")
    cands = {n // 4, -(-n // 4)}
    return max(Fraction(clipped_numerator(c + 1, n), clipped_numerator(c, n)) for c in cands if c + 1 <= n)


def column_bias_draws(n: int) -> int:
    """1 when the per-column uniform on [1, 4n] uses the biased reduction (4n not a power of two), else 0."""
    m = 4 * n
    return 0 if m & (m - 1) == 0 else 1


def exp_epsilon(n: int, d: int) -> Fraction:
    """e^eps of the product over d columns without the rng bias: r^d."""
    return column_ratio(n) ** d


def bias_extra(n: int, d: int, lam: int) -> Fraction:
    """The rng's extra epsilon over the d columns (0 when 4n is a power of two)."""
    return bias_epsilon(d * column_bias_draws(n), lam)


def tv_bound(n: int, d: int) -> Fraction:
    """A rational upper bound d 2^{-1 - floor(1.44 n / 72)} >= d e^{-n/72} / 2 on the product's TV (exactly n units)."""
    # the exponent is capped at 4096 bits (a looser, still valid bound): 2^(0.02 n) for a large n would not
    # fit in memory, let alone in the release's exact numbers
    return min(Fraction(1), Fraction(d, 1 << min(1 + (144 * n) // 7200, 4096)))


def draw_bit(c: int, n: int, rng: RandomSource) -> int:
    """Ber(p~) from one uniform integer u in [1, 4n]: 1 iff u <= 4n p~ (an exact threshold)."""
    return 1 if rng.uniform(4 * n) <= clipped_numerator(c, n) else 0


def bernoulli_sample(counts: Sequence[int], n: int, rng: RandomSource) -> list[int]:
    """One row of d bits, one independent exact Bernoulli per column count."""
    for c in counts:
        if not 0 <= c <= n:
            raise ValueError("every column count must lie in [0, n]")
    return [draw_bit(int(c), n, rng) for c in counts]


def min_n_for_epsilon(epsilon_exp_upper: Fraction, d: int) -> int:
    """The smallest n >= 2 with r(n)^d <= ``epsilon_exp_upper`` (a rational lower bound on e^eps is safe).

    r(n) is not monotone in n, so the search scans down from an n that works: with
    r <= 1 + 4/n, (1 + 4/n)^d <= E holds once n >= 4d/(E^(1/d) - 1); the scan below is over public values.
    """
    if epsilon_exp_upper <= 1:
        raise ValueError("epsilon must be > 0")
    lo, hi = 2, 4
    while (1 + Fraction(4, hi)) ** d > epsilon_exp_upper:  # public doubling: at most ~log2(n) steps
        hi *= 2
    # (1 + 4/n)^d is decreasing: the smallest n with (1 + 4/n)^d <= E lies in (hi/2, hi]
    a, b = max(lo, hi // 2), hi
    while a < b:
        mid = (a + b) // 2
        if (1 + Fraction(4, mid)) ** d <= epsilon_exp_upper:
            b = mid
        else:
            a = mid + 1
    best = a
    # r(n) <= 1 + 4/n, with equality when 4 | n: look a few n below for an exact r(n)^d that already fits
    for m in range(max(2, best - 3), best):
        if column_ratio(m) ** d <= epsilon_exp_upper:
            return m
    return best


# ----------------------------------------------------------------------------- exact zCDP (certified Renyi bound)
#: Finest alpha cell ratio in :func:`column_rho` (a cell costs at most a factor (1 + 1/256)^2).
_ALPHA_STEP = Fraction(257, 256)


def implemented_one(threshold: int, n: int, lam: int) -> Fraction:
    """Pr[bit = 1] of the implemented draw: Pr[rng.uniform(4n) <= threshold] under the multiply-shift reduction."""
    m = 4 * n
    if m & (m - 1) == 0:
        return Fraction(threshold, m)
    L = m.bit_length() + lam
    return Fraction(-((-threshold << L) // m), 1 << L)  # ceil(threshold 2^L / m) / 2^L


def _sup_renyi_over_alpha(a: Fraction, b: Fraction, prec: int = 192) -> Any:
    """An arb upper bound on sup_{alpha > 1} D_alpha(Ber(a) || Ber(b)) / alpha.

    D_alpha is non-decreasing in alpha, so on a cell [x, y] the ratio is <= D_y / x, and past alpha = A it is
    <= D_inf / A with D_inf = ln max(a/b, (1-a)/(1-b)). Cells start as [2^i, 2^(i+1)]; the cell with the
    largest bound is split until it is narrower than y/x <= 257/256, and the result is that largest bound
    (every other cell, and the tail, is below it), within about (1 + 1/256)^2 of the supremum.
    """
    import heapq

    from flint import arb, ctx, fmpq

    old = ctx.prec
    ctx.prec = prec
    try:
        A, B_, A1, B1 = (arb(fmpq(x.numerator, x.denominator)) for x in (a, b, 1 - a, 1 - b))
        lA, lB, lA1, lB1 = A.log(), B_.log(), A1.log(), B1.log()
        d_inf = (lA - lB).max(lA1 - lB1)

        def q(x: Fraction) -> Any:
            return arb(fmpq(x.numerator, x.denominator))

        def bound(x: Fraction, y: Fraction) -> Any:
            al = q(y)  # D_y = ln(a^y b^(1-y) + (1-a)^y (1-b)^(1-y)) / (y - 1), in logs for large alpha
            s = (al * lA + (1 - al) * lB).exp() + (al * lA1 + (1 - al) * lB1).exp()
            return arb((s.log() / (al - 1) / q(x)).upper())

        # cells (x, y) with y = None for the tail [x, inf), whose bound is D_inf / x
        heap: list[tuple[float, int, Fraction, Fraction | None, Any]] = []
        count = 0

        def push(x: Fraction, y: Fraction | None) -> None:
            nonlocal count
            count += 1
            b_ = arb((d_inf / q(x)).upper()) if y is None else bound(x, y)
            heapq.heappush(heap, (-float(b_.mid()), count, x, y, b_))  # report (a float only orders the queue)

        push(Fraction(1), Fraction(2))
        push(Fraction(2), None)
        while True:
            _, _, x, y, b_ = heap[0]
            if y is not None and y <= x * _ALPHA_STEP:  # the largest cell is fine: return the certified max
                best = b_
                for h in heap:
                    best = best.max(h[4])
                return arb(best.upper())
            heapq.heappop(heap)
            if y is None:  # open the tail: [x, 2x] and [2x, inf)
                push(x, 2 * x)
                push(2 * x, None)
            else:
                mid = Fraction(x + y, 2)
                push(x, mid)
                push(mid, y)
    finally:
        ctx.prec = old


def _rho_candidates(n: int, lam: int) -> list[tuple[Fraction, Fraction]]:
    """Bernoulli pairs (Pr[1] at c, Pr[1] at c + 1) whose Renyi divergences bound those of every neighbour pair.

    Pairs with both thresholds unclipped (4c >= n, 4c + 4 <= 3n) have ideal points (c/n, (c+1)/n) on one line
    segment, and the implemented points add an offset in [0, 2^-L]^2 (rounding up, :func:`implemented_one`).
    exp((alpha - 1) D_alpha(Ber(x) || Ber(y))) is jointly convex in (x, y) for alpha > 1 (perspective of
    t^alpha), so over the convex hull of those points it is largest at a vertex: an end of the segment plus a
    corner of the offset box. The few partly clipped pairs are taken exactly; fully clipped ones have no loss.
    """
    m = 4 * n
    step = Fraction(0) if m & (m - 1) == 0 else Fraction(1, 1 << (m.bit_length() + lam))
    out = []
    c_lo, c_hi = -(-n // 4), (3 * n - 4) // 4
    if c_lo <= c_hi:
        for c in {c_lo, c_hi}:
            for ex in {Fraction(0), step}:
                for ey in {Fraction(0), step}:
                    out.append((Fraction(c, n) + ex, Fraction(c + 1, n) + ey))
    for c in range(max(0, n // 4 - 2), min(n, n // 4 + 3)):
        if not c_lo <= c <= c_hi:
            out.append((implemented_one(clipped_numerator(c, n), n, lam),
                        implemented_one(clipped_numerator(c + 1, n), n, lam)))
    for c in range(max(0, (3 * n) // 4 - 2), min(n, (3 * n) // 4 + 3)):
        if not c_lo <= c <= c_hi:
            out.append((implemented_one(clipped_numerator(c, n), n, lam),
                        implemented_one(clipped_numerator(c + 1, n), n, lam)))
    return [(x, y) for x, y in out if x != y]


@lru_cache(maxsize=4096)
def column_rho(n: int, lam: int) -> Fraction:
    """A certified upper bound on one column's zCDP rho: max over neighbouring counts (either direction) of
    sup_{alpha > 1} D_alpha / alpha of the implemented Bernoulli laws (exact rationals in, arb balls, rounded up).

    About 2.5x below (ln r + bias)^2 / 2 (BS16 Prop. 1.4 applied to the pure bound): near p = 1/4 the loss
    of a count step is ln(1 + 4/n) for one bit value but only about -4/(3n) for the other.
    """
    if n < 1:
        raise ValueError("the bounded-bias sampler needs n >= 1")
    best = None
    for x, y in _rho_candidates(n, lam):
        for p, q in ((x, y), (y, x)):
            v = _sup_renyi_over_alpha(p, q)
            best = v if best is None else best.max(v)
    if best is None:  # n so small that no count step changes the law
        return Fraction(0)
    man, exp = best.upper().mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def product_rho(n: int, d: int, lam: int) -> Fraction:
    """rho of the d-column product: d * column_rho (zCDP composes additively over independent columns)."""
    return d * column_rho(n, lam)


# ----------------------------------------------------------------------------- the floored count (the mechanism)
def denominator(units: int, n0: int) -> int:
    """D = max(N, n0): the batch's unit count, floored at the public n0."""
    return max(int(units), n0)


def public_bits(n_max: int, lam: int) -> int:
    """L = bitlen(4 max_units) + lam: the public number of random bits of every draw (strict time)."""
    return (4 * n_max).bit_length() + lam


def implemented_one_at(threshold: int, D: int, L: int) -> Fraction:
    """Pr[bit = 1] of :func:`draw_bit_at`: #{X in [0, 2^L) : X 4D < threshold 2^L} / 2^L = ceil(t 2^L / 4D) / 2^L."""
    return Fraction(-((-threshold << L) // (4 * D)), 1 << L)


def draw_bit_at(c: int, D: int, L: int, rng: RandomSource) -> int:
    """Ber(clip(c/D, [1/4, 3/4])) from L public bits: 1 iff X 4D < max(D, min(3D, 4c)) 2^L (exact comparison)."""
    return int(rng.bits(L) * 4 * D < clipped_numerator(c, D) << L)


def floor_sample(counts: Sequence[int], units: int, n0: int, L: int, rng: RandomSource) -> list[int]:
    """One row of d bits from one batch's column counts and unit count (D = max(units, n0))."""
    D = denominator(units, n0)
    for c in counts:
        if not 0 <= c <= D:
            raise ValueError("every column count must lie in [0, D]")
    return [draw_bit_at(int(c), D, L, rng) for c in counts]


def floor_units(exp_eps_lower: Fraction, d: int) -> int:
    """The smallest multiple of 4, n0 >= 4, with (1 + 4/n0)^d <= ``exp_eps_lower`` (a lower bound on e^eps)."""
    if exp_eps_lower <= 1:
        raise ValueError("epsilon must be > 0")
    hi = 4
    while (1 + Fraction(4, hi)) ** d > exp_eps_lower:  # public doubling: ~log2(n0) steps
        hi *= 2
    lo = max(1, hi // 8)  # in units of 4: the answer is 4k with k in (lo, hi / 4]
    k_lo, k_hi = lo, hi // 4
    while k_lo < k_hi:
        mid = (k_lo + k_hi) // 2
        if (1 + Fraction(1, mid)) ** d <= exp_eps_lower:
            k_hi = mid
        else:
            k_lo = mid + 1
    return 4 * k_hi


def _floor_candidates(n0: int, L: int) -> list[tuple[Fraction, Fraction]]:
    """The vertices of H + [0, 2^-L]^2 (module docstring): every (ideal pair vertex) + (box corner)."""
    h, s = Fraction(1, n0), Fraction(1, 1 << L)
    lo, hi = Fraction(1, 4), Fraction(3, 4)
    hexagon = [(lo, lo), (lo, lo + h), (hi - h, hi), (hi, hi), (hi, hi - h), (lo + h, lo)]
    out = {(x + ex, y + ey) for x, y in hexagon for ex in (0, s) for ey in (0, s)}
    return sorted((x, y) for x, y in out if x != y)


@lru_cache(maxsize=256)
def floor_column_rho(n0: int, L: int) -> Fraction:
    """A certified upper bound on one column's zCDP rho under the floored count (module docstring): the max over
    the polytope's vertices of sup_alpha D_alpha / alpha (arb balls, rounded up)."""
    if n0 < 4 or n0 % 4:
        raise ValueError("the floor n0 must be a positive multiple of 4")
    best = None
    for x, y in _floor_candidates(n0, L):
        v = _sup_renyi_over_alpha(x, y)
        best = v if best is None else best.max(v)
    assert best is not None
    man, exp = best.upper().mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def floor_exp_epsilon(n0: int, d: int) -> Fraction:
    """e^eps of the floored product without the rng bias: (1 + 4/n0)^d (n0 a multiple of 4)."""
    return (1 + Fraction(4, n0)) ** d


def floor_units_zcdp(rho_target: Fraction, d: int, L: int) -> int:
    """A multiple of 4, n0, with d floor_column_rho(n0, L) <= ``rho_target``, at or near the smallest.

    rho0(n) is close to A / n^2 for large n (the pair (1/4, 1/4 + 1/n) dominates), so each certified evaluation
    predicts the next n (a few steps); then the floor is raised until it certifies and lowered by 4 while it
    still does (public bounds on every loop). Any n0 that certifies is private; near the smallest only helps
    accuracy.
    """
    if rho_target <= 0:
        raise ValueError("rho must be > 0")

    def g(n: int) -> Fraction:
        return d * floor_column_rho(n, L)

    n = 400
    for _ in range(8):  # the A / n^2 model: a fixed point in a few steps
        nxt = max(4, 4 * _ceil(n * ratio_sqrt_up(g(n) / rho_target) / 4))
        if nxt == n:
            break
        n = nxt
    for _ in range(64):  # raise until it certifies (0.5% a step)
        if g(n) <= rho_target:
            break
        n = 4 * _ceil(n * Fraction(201, 200) / 4)
    else:  # pragma: no cover
        raise ValueError("no floor n0 certifies this rho")
    for _ in range(8):  # and lower while the next one down still certifies
        if n <= 4 or g(n - 4) > rho_target:
            break
        n -= 4
    return n


def ratio_sqrt_up(x: Fraction) -> Fraction:
    """A rational >= sqrt(x) (x >= 0)."""
    from math import isqrt

    scaled = x * (1 << 40)
    s = isqrt(-((-scaled.numerator) // scaled.denominator))
    if s * s * scaled.denominator < scaled.numerator:
        s += 1
    return Fraction(s, 1 << 20)


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)
