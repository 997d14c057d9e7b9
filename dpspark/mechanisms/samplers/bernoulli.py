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
(e^{-x} <= 2^{-1.44 x} since log2 e > 1.44). With N < n units (possible under AddRemove) the estimate is
c/n with E = p N/n: the privacy statement still holds, but the TV claim needs exactly n units.
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
