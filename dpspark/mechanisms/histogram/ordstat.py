"""Top order statistics of many iid counts (Balcer-Vadhan section 6, Algs 6.7, 6.16, 6.18, 6.20).

The empty bins of a histogram get iid noisy counts M(0, U). KeepHeavy only needs
the top t = n+1 of those m = |X| - |S| values, which these algorithms sample
level by level (v = n down to 1) as "how many of the remaining variables equal
v", a truncated binomial with p_v = Pr[Z = v | Z <= v] = (F(v) - F(v-1)) / F(v).

* :func:`ord_sample` / :func:`ordsample_pmf`: exact OrdSample (Prop 6.6, Alg 6.7).
  Its probabilities need Theta(m) bits, so it is a test reference only.
* :func:`approx_conv_exp`: ApproxConvExp (Alg 6.16, Prop 6.15), a truncated,
  floored repeated squaring of the Bernoulli pmf vector.
* :func:`approx_bin_sample`: ApproxBinSample (Alg 6.18, Prop 6.17), whose output
  law is within statistical distance m(t+1)/s of min(Bin(m, p), t).
* :func:`approx_ord_sample`: ApproxOrdSample (Alg 6.20, Prop 6.19), within
  statistical distance sum_v m(t_v+1)/s <= n m (t+1)/s of OrdSample.

A scaled CDF is passed as a callable ``cdf(v)`` = F(v) for v in [-1, n], with
F(-1) = 0, F non-decreasing and F(n) = d (the counting mechanism's F_{M,0}).
Every function here is a deterministic function of the uniform value(s) it is
given or draws; no float decides anything.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from itertools import product
from math import comb
from typing import Any

import gmpy2

from dpspark.mechanisms.histogram.lazy_bits import LazyBits, draw_level_uniform
from dpspark.rng import RandomSource

Cdf = Callable[[int], int]
#: bin_sampler(m, num, den, t, u) -> min-truncated binomial draw for p = num/den, u in [1, s]
BinSampler = Callable[[int, int, int, int, int], int]
#: lazy_sampler(m, num, den, t, u_minus_1) -> the same draw, given U - 1 as :class:`LazyBits`
LazyBinSampler = Callable[[int, int, int, int, LazyBits], int]


def _check_cdf_args(m: int, t: int, n: int) -> None:
    for name, value in (("m", m), ("t", t), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0")
    if t > m:
        raise ValueError("t (number of order statistics) must be <= m (number of variables)")


def level_probability(cdf: Cdf, v: int) -> tuple[int, int]:
    """(num, den) with p_v = num/den = Pr[Z = v | Z <= v] = (F(v) - F(v-1)) / F(v); (0, 1) if F(v) = 0."""
    hi = int(cdf(v))
    if hi == 0:
        return 0, 1
    return hi - int(cdf(v - 1)), hi


# --------------------------------------------------------------------------- exact OrdSample


def truncated_binomial_scaled_cdf(m: int, num: int, den: int, j: int) -> int:
    """den^m * Pr[Bin(m, num/den) <= j], an exact integer."""
    rest = den - num
    return sum(comb(m, i) * num**i * rest ** (m - i) for i in range(0, min(j, m) + 1))


def truncated_binomial_inverse(m: int, num: int, den: int, t: int, u: int) -> int:
    """min(Bin(m, num/den), t) by inverse transform from u uniform on [1, den^m] (exact; test reference).

    Exactly ceil(log2(t+1)) CDF evaluations (fixed binary search over [0, t]).
    """
    total = den**m
    if not 1 <= u <= total:
        raise ValueError("u must lie in [1, den^m]")
    pos = -1
    step = 1 << ((t + 1).bit_length() - 1) if t >= 0 else 0
    while step:
        probe = pos + step
        if probe < t and truncated_binomial_scaled_cdf(m, num, den, probe) < u:
            pos = probe
        step >>= 1
    return pos + 1


def ord_sample(m: int, t: int, cdf: Cdf, n: int, rng: RandomSource) -> list[int]:
    """Exact OrdSample (Alg 6.7): the top t of m iid draws with scaled CDF ``cdf``, descending.

    Test reference only: each level draws u uniform on [1, F(v)^m_rem], Theta(m log d) bits.
    """
    _check_cdf_args(m, t, n)
    m_rem, t_rem = m, t
    counts = []
    for v in range(n, 0, -1):
        ell = 0
        if t_rem > 0:
            num, den = level_probability(cdf, v)
            ell = truncated_binomial_inverse(m_rem, num, den, t_rem, rng.uniform(den**m_rem))
        counts.append(ell)
        m_rem -= ell
        t_rem -= ell
    return _expand(counts, t_rem, n)


def _expand(level_counts: list[int], zeros: int, n: int) -> list[int]:
    """Turn per-level counts (for v = n, n-1, ..., 1) plus the zeros into a descending list."""
    out: list[int] = []
    for v, ell in zip(range(n, 0, -1), level_counts):
        out.extend([v] * ell)
    out.extend([0] * zeros)
    return out


def ordsample_pmf(m: int, t: int, cdf: Cdf, n: int) -> dict[tuple[int, ...], Fraction]:
    """Exact output law of OrdSample: {descending tuple of top t values: probability} (small sizes)."""
    _check_cdf_args(m, t, n)
    states: dict[tuple[int, ...], Fraction] = {(): Fraction(1)}
    for v in range(n, 0, -1):
        num, den = level_probability(cdf, v)
        p = Fraction(num, den)
        nxt: dict[tuple[int, ...], Fraction] = {}
        for prefix, prob in states.items():
            m_rem, t_rem = m - len(prefix), t - len(prefix)
            for ell, q in enumerate(truncated_binomial_pmf(m_rem, p, t_rem)):
                key = prefix + (v,) * ell
                nxt[key] = nxt.get(key, Fraction(0)) + prob * q
        states = nxt
    return {prefix + (0,) * (t - len(prefix)): prob for prefix, prob in states.items()}


def truncated_binomial_pmf(m: int, p: Fraction, t: int) -> list[Fraction]:
    """Exact pmf of min(Bin(m, p), t) on [0, t]."""
    out = [comb(m, i) * p**i * (1 - p) ** (m - i) for i in range(min(t, m + 1))]
    out += [Fraction(0)] * (t - len(out))
    out.append(1 - sum(out, Fraction(0)))
    return out


def brute_force_top(m: int, t: int, pmf: list[Fraction]) -> dict[tuple[int, ...], Fraction]:
    """Law of the top t of m iid values with the given pmf on [0, len-1], by enumerating all m-tuples."""
    out: dict[tuple[int, ...], Fraction] = {}
    for values in product(range(len(pmf)), repeat=m):
        prob = Fraction(1)
        for v in values:
            prob *= pmf[v]
        key = tuple(sorted(values, reverse=True)[:t])
        out[key] = out.get(key, Fraction(0)) + prob
    return {k: v for k, v in out.items() if v}


# --------------------------------------------------------------------------- ApproxConvExp


def _self_conv_truncated(vec: list[Any], k: int) -> list[Any]:
    """(vec * vec)[0:k] for non-negative ints, by Kronecker substitution (one big squaring).

    Slots are whole bytes wide and wide enough that no slot carries into the next.
    """
    if k == 1:
        return [vec[0] * vec[0]]
    bits = 2 * max(int(x).bit_length() for x in vec[:k]) + k.bit_length() + 1
    nbytes = (bits + 7) >> 3
    packed = gmpy2.mpz(int.from_bytes(b"".join(int(x).to_bytes(nbytes, "little") for x in vec[:k]), "little"))
    raw = int(packed * packed).to_bytes(2 * k * nbytes, "little")
    return [gmpy2.mpz(int.from_bytes(raw[nbytes * j : nbytes * (j + 1)], "little")) for j in range(k)]


def approx_conv_exp(a: tuple[int, int], i: int, s: int, t: int) -> list[int]:
    """ApproxConvExp(a, i, s, t) (Alg 6.16): approximately s * ((a/s)^{*i})[0:t], exact integers.

    ``a = (s - p', p')``. Iterative form: start from a (i >= 1) and, for each
    lower bit of i, square (truncate to t) and floor-divide by s; when the bit
    is set also convolve with a and floor-divide by s^2 instead.
    Prop 6.15: entries >= 0, sum <= s; prefix-consistent in t;
    L1 distance to s*((a/s)^{*i})[0:t] is <= (i-1) t (i >= 1).
    """
    if t < 1 or s < 1 or i < 0:
        raise ValueError("approx_conv_exp needs t >= 1, s >= 1, i >= 0")
    a0, a1 = gmpy2.mpz(a[0]), gmpy2.mpz(a[1])
    if a0 < 0 or a1 < 0 or a0 + a1 != s:
        raise ValueError("a must be (s - p', p') with 0 <= p' <= s")
    if i == 0:
        return [s] + [0] * (t - 1)
    b: list[Any] = [gmpy2.mpz(a0), gmpy2.mpz(a1)][:t] + [gmpy2.mpz(0)] * max(0, t - 2)
    s_mpz = gmpy2.mpz(s)
    s2 = s_mpz * s_mpz
    shift = s.bit_length() - 1 if s & (s - 1) == 0 else None  # s = 2^S: floor division is a shift
    for bit in bin(i)[3:]:
        sq = _self_conv_truncated(b, t)
        if bit == "1":
            sq = [sq[0] * a0] + [sq[j] * a0 + sq[j - 1] * a1 for j in range(1, t)]
            b = [x >> (2 * shift) for x in sq] if shift is not None else [x // s2 for x in sq]
        else:
            b = [x >> shift for x in sq] if shift is not None else [x // s_mpz for x in sq]
    return [int(x) for x in b]


# --------------------------------------------------------------------------- ApproxBinSample


def bernoulli_vector(num: int, den: int, s: int) -> tuple[int, int]:
    """a = (s - p', p') with p' = floor(s * num / den): the rounded Bernoulli(p) pmf times s."""
    if den < 1 or not 0 <= num <= den:
        raise ValueError("p = num/den must lie in [0, 1]")
    p1 = (s * num) // den
    return s - p1, p1


def approx_bin_sample(m: int, num: int, den: int, s: int, t: int, u: int) -> int:
    """ApproxBinSample(m, p = num/den, s, t, U = u) (Alg 6.18), exact integers, u in [1, s].

    Doubles the truncation length k = 1, 2, 4, ... while k < 2t and returns
    min(l, t) for the first l in [k/2, k) with B_l = sum_{j<=l} b_j >= u
    (b = ApproxConvExp(a, m, s, k)); t if none. Prop 6.17: over U ~ Unif([s])
    the output is within statistical distance m(t+1)/s of min(Bin(m, p), t).
    The early exit is allowed by docs/balcer-vadhan-notes.md §E10 (public bound 2t).
    """
    if not 1 <= u <= s:
        raise ValueError("u must lie in [1, s]")
    if t == 0:
        return 0
    a = bernoulli_vector(num, den, s)
    k = 1
    while k < 2 * t:
        b = approx_conv_exp(a, m, s, k)
        total = sum(b[: k // 2])
        for ell in range(k // 2, k):
            total += b[ell]
            if total >= u:
                return min(ell, t)
        k *= 2
    return t


def approx_bin_sample_pmf(m: int, num: int, den: int, s: int, t: int) -> list[Fraction]:
    """Exact output law of :func:`approx_bin_sample` over u uniform on [1, s], on [0, t].

    Uses prefix consistency: the output is min(first l with B_l >= u, t), where B is
    taken from the longest vector the doubling can reach.
    """
    if t == 0:
        return [Fraction(1)]
    k = 1
    while 2 * k < 2 * t:
        k *= 2
    b = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
    cum = 0
    out = [Fraction(0)] * (t + 1)
    for ell in range(min(k, t)):
        out[ell] = Fraction(min(cum + b[ell], s) - min(cum, s), s)
        cum += b[ell]
    out[t] = 1 - sum(out[:t], Fraction(0))
    return out


# --------------------------------------------------------------------------- ApproxOrdSample


def approx_ord_sample(
    m: int,
    t: int,
    cdf: Cdf,
    n: int,
    s_bits: int,
    rng: RandomSource,
    *,
    bin_sampler: BinSampler | None = None,
    lazy_sampler: LazyBinSampler | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[int]:
    """ApproxOrdSample (Alg 6.20): approximately the top t of m iid values with scaled CDF ``cdf``.

    s = 2^s_bits, so each level's U is ``rng.bits(s_bits) + 1``, exactly uniform on [1, s].
    Prop 6.19: SD(output, OrdSample) <= sum_v m (t_v + 1)/s <= n m (t+1)/s.
    ``bin_sampler(m, num, den, t, u)`` defaults to the exact :func:`approx_bin_sample`;
    :func:`dpspark.mechanisms.histogram.binsample_fast.approx_bin_sample_adaptive` gives identical outputs faster.
    ``lazy_sampler`` (exclusive with ``bin_sampler``) gets U - 1 as :class:`LazyBits` instead,
    drawn by :func:`dpspark.mechanisms.histogram.lazy_bits.draw_level_uniform`: same law and, under the
    seeded generator, the same stream use and value as ``rng.bits(s_bits)``, so
    :func:`dpspark.mechanisms.histogram.binsample_cdf.approx_bin_sample_cdf` gives identical outputs
    while reading about 256 bits of each U instead of s_bits.
    The level loop runs n times (public); ``progress`` gets at most 10 coarse messages
    (fraction of levels done), never a level's result.
    """
    _check_cdf_args(m, t, n)
    if isinstance(s_bits, bool) or not isinstance(s_bits, int) or s_bits < 1:
        raise ValueError("s_bits must be an int >= 1")
    if bin_sampler is not None and lazy_sampler is not None:
        raise ValueError("give bin_sampler or lazy_sampler, not both")
    s = 1 << s_bits
    if bin_sampler is None and lazy_sampler is None:

        def bin_sampler(mm: int, num: int, den: int, tt: int, u: int) -> int:
            return approx_bin_sample(mm, num, den, s, tt, u)

    m_rem, t_rem = m, t
    counts = []
    next_report = 1
    prev = int(cdf(n))
    for v in range(n, 0, -1):
        ell = 0
        if t_rem > 0:
            low = int(cdf(v - 1))
            num, den = (prev - low, prev) if prev else (0, 1)
            if lazy_sampler is not None:
                ell = lazy_sampler(m_rem, num, den, t_rem, draw_level_uniform(rng, s_bits))
            else:
                assert bin_sampler is not None
                ell = bin_sampler(m_rem, num, den, t_rem, rng.bits(s_bits) + 1)
            prev = low
        counts.append(ell)
        m_rem -= ell
        t_rem -= ell
        done = n - v + 1
        if progress is not None and done * 10 >= next_report * n:
            progress(f"order statistics: {10 * next_report}% of {n} levels")
            next_report = done * 10 // n + 1
    return _expand(counts, t_rem, n)
