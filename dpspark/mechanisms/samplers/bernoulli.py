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
from typing import Sequence

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
