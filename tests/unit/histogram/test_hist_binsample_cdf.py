"""ApproxBinSample from certified binomial-CDF bounds: the lemma, the bounds, identical outputs, mutants."""

from __future__ import annotations

import random
from fractions import Fraction
from math import comb

import pytest

from dpspark.mechanisms.histogram import binsample_cdf
from dpspark.mechanisms.histogram.binsample_cdf import (
    TOP_BITS,
    approx_bin_sample_cdf,
    binomial_cdf_bounds,
    cdf_path_applies,
    cdf_sums,
    pi_bracket,
    precisions,
    tail_bound,
)
from dpspark.mechanisms.histogram.lazy_bits import LazyBits, draw_level_uniform
from dpspark.mechanisms.histogram.ordstat import approx_bin_sample, approx_conv_exp, bernoulli_vector
from dpspark.rng import SeededRandom


def binom_cdf(m: int, p: Fraction, ell: int) -> Fraction:
    """Exact Pr[Bin(m, p) <= ell]."""
    return sum((comb(m, j) * p**j * (1 - p) ** (m - j) for j in range(min(ell, m) + 1)), Fraction(0))


def _cases(count: int, seed: int, m_bits: tuple[int, ...]):  # type: ignore[no-untyped-def]
    gen = random.Random(seed)  # test-input generation only
    for _ in range(count):
        m = gen.randrange(1, 1 << gen.choice(m_bits))
        den = gen.randrange(2, 1 << 40)
        num = gen.randrange(0, den + 1) >> gen.randrange(0, 40)
        yield gen, m, num, den


def test_lemma_brackets_every_prefix_sum() -> None:
    """s F(l) - (m-1)(l+1) <= B_l <= s F(l), F the Bin(m, p'/s) CDF, exactly (small s, all l < k)."""
    slack_used = Fraction(0)
    for gen, m, num, den in _cases(60, 1, (2, 4, 6)):
        s_bits = gen.choice([6, 10, 16])
        s = 1 << s_bits
        k = gen.choice([1, 2, 4, 8])
        b = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
        p = Fraction(bernoulli_vector(num, den, s)[1], s)
        cum = 0
        for ell in range(k):
            cum += b[ell]
            exact = s * binom_cdf(m, p, ell)
            assert exact - (m - 1) * (ell + 1) <= cum <= exact
            if m > 1:
                slack_used = max(slack_used, (exact - cum) / ((m - 1) * (ell + 1)))
    assert slack_used > Fraction(1, 4)  # the floors do lose mass: the lower slack is needed


def test_mutant_without_the_slack_is_caught() -> None:
    """Claiming B_l >= s F(l) - (l+1) (no factor m-1) fails on the same cases: the lemma test has teeth."""
    violations = 0
    for gen, m, num, den in _cases(60, 1, (2, 4, 6)):
        s = 1 << gen.choice([6, 10, 16])
        k = gen.choice([1, 2, 4, 8])
        b = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
        p = Fraction(bernoulli_vector(num, den, s)[1], s)
        cum = 0
        for ell in range(k):
            cum += b[ell]
            violations += cum < s * binom_cdf(m, p, ell) - (ell + 1)
    assert violations > 0


def test_pi_bracket_contains_the_rounded_probability() -> None:
    for gen, _, num, den in _cases(200, 2, (3,)):
        w = gen.choice([8, 40, 300])
        for s_bits in (w - 3, w, w + 5, w + 200):
            if s_bits < 1:
                continue
            lo, hi = pi_bracket(num, den, s_bits, w)
            pi = Fraction((num << s_bits) // den, 1 << s_bits)
            assert Fraction(lo, 1 << w) <= pi <= Fraction(hi, 1 << w) and hi - lo <= 1


def test_cdf_bounds_are_certified_and_tight() -> None:
    """L_l <= 2^V F(l) <= H_l exactly, and H - L is far below one unit of the 256-bit comparison."""
    for gen, m, num, den in _cases(30, 3, (3, 5, 7)):
        s_bits = gen.choice([300, 520])
        count = min(m, gen.randrange(1, 12))
        v, lows, highs = binomial_cdf_bounds(m, num, den, s_bits, count)
        pi = Fraction((num << s_bits) // den, 1 << s_bits)
        for ell in range(count):
            exact = binom_cdf(m, pi, ell) * (1 << v)
            assert lows[ell] <= exact <= highs[ell]
            assert highs[ell] - lows[ell] < 1 << (v - TOP_BITS - 20)


def test_cdf_bounds_at_huge_m_are_ordered_and_tight() -> None:
    """m = 2^64 - 5 (no exact reference): bounds ordered, monotone in l, and tight."""
    m = (1 << 64) - 5
    for num, den in ((1, 1 << 70), (3, 10**22), (7, 10**20), (0, 5), (5, 5)):
        v, lows, highs = binomial_cdf_bounds(m, num, den, 20000, 40)
        assert all(lo <= hi for lo, hi in zip(lows, highs))
        assert lows == sorted(lows) and highs == sorted(highs) and highs[-1] <= (1 << v) + 40
        assert all(hi - lo < 1 << (v - TOP_BITS - 20) for lo, hi in zip(lows, highs))


def test_mutant_rounding_the_upper_chain_down_is_caught() -> None:
    """The containment check has teeth: rounding the upper chain down falls below the exact CDF."""
    below = 0
    for gen, m, num, den in _cases(20, 3, (3, 5, 7)):
        s_bits = gen.choice([300, 520])
        count = min(m, gen.randrange(1, 12))
        v, w = precisions(m, count)
        p_lo, _ = pi_bracket(num, den, s_bits, w)
        pi = Fraction((num << s_bits) // den, 1 << s_bits)
        gen_down = cdf_sums(m, p_lo, w, v, False)
        for ell in range(count):
            below += next(gen_down) < binom_cdf(m, pi, ell) * (1 << v)
    assert below > 5


def test_tail_bound_is_an_upper_bound() -> None:
    for gen, m, num, den in _cases(150, 4, (3, 6, 8)):
        w = 64
        pn = (num << w) // den
        ell = gen.randrange(0, m + 1)
        bound = tail_bound(m, pn, ell, w, 80)
        p = Fraction(pn, 1 << w)
        if ell < 1 or ell >= m or ell > (m + 1) * p:
            assert bound is None
        else:
            assert bound is not None and bound >= binom_cdf(m, p, ell) * (1 << 80)


def _u_values(gen: random.Random, m: int, num: int, den: int, s_bits: int, t: int) -> list[int]:
    """Random U plus U on and around every B_l (the straddling cases) and around s F(l)."""
    s = 1 << s_bits
    k = 1
    while k < t:
        k *= 2
    b = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
    us = [gen.randrange(1, s + 1) for _ in range(3)]
    cum = 0
    for x in b[:5]:
        cum += x
        us += [u for u in (cum - 1, cum, cum + 1, cum + 2, cum + (1 << (s_bits - TOP_BITS))) if 1 <= u <= s]
    return us


@pytest.mark.parametrize("s_bits", [420, 700, 1500])
def test_identical_to_exact_including_straddles(s_bits: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same output as approx_bin_sample for every U tried; the decided, fallback and tail paths all run."""
    tails: list[bool] = []
    real_tail = binsample_cdf.tail_bound

    def spy(*args):  # type: ignore[no-untyped-def]
        out = real_tail(*args)
        tails.append(out is not None)
        return out

    monkeypatch.setattr(binsample_cdf, "tail_bound", spy)
    stats: dict[str, int] = {}
    for gen, m, num, den in _cases(25 if s_bits < 1000 else 12, s_bits, (3, 12, 40, 64)):
        t = min(m, gen.randrange(1, 10))
        if not cdf_path_applies(m, t, s_bits):
            continue
        for u in _u_values(gen, m, num, den, s_bits, t):
            lazy = LazyBits.from_int(u - 1, s_bits, TOP_BITS)
            assert approx_bin_sample_cdf(m, num, den, s_bits, t, lazy, stats) == approx_bin_sample(
                m, num, den, 1 << s_bits, t, u
            )
    assert stats["decided"] > 50 and stats["cdf_fallback"] > 5
    assert any(tails)


def test_large_t_and_heavy_level_identical() -> None:
    """Outputs deep into the vector (l up to 40) and the exhausting level (every B_l < U)."""
    s_bits = 1200
    m = (1 << 62) + 12345
    gen = random.Random(8)  # test-input generation only
    stats: dict[str, int] = {}
    for lam_bits in (0, 3, 5, 7):  # mean m p of about 2^lam_bits
        den = m >> lam_bits
        for _ in range(4):
            t = gen.randrange(20, 48)
            u = gen.randrange(1, (1 << s_bits) + 1)
            lazy = LazyBits.from_int(u - 1, s_bits, TOP_BITS)
            assert approx_bin_sample_cdf(m, 1, den, s_bits, t, lazy, stats) == approx_bin_sample(
                m, 1, den, 1 << s_bits, t, u
            )
    assert "cdf_fallback" not in stats


def test_mutant_without_the_applicability_guard_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """With S - P too small for the (m-1)(l+1) slack, the decision rules give wrong outputs: the guard matters."""
    monkeypatch.setattr(binsample_cdf, "cdf_path_applies", lambda m, t, s: True)
    s_bits, m, t = TOP_BITS + 2, (1 << 40) + 3, 3
    wrong = 0
    gen = random.Random(12)  # test-input generation only
    for _ in range(30):
        den = gen.randrange(1 << 41, 1 << 44)
        b = approx_conv_exp(bernoulli_vector(1, den, 1 << s_bits), m, 1 << s_bits, 4)
        for u in (b[0] + 1, b[0] + 2, b[0] + b[1] + 1):
            if u <= 1 << s_bits:
                lazy = LazyBits.from_int(u - 1, s_bits, TOP_BITS)
                wrong += approx_bin_sample_cdf(m, 1, den, s_bits, t, lazy) != approx_bin_sample(m, 1, den, 1 << s_bits, t, u)
    assert wrong > 0


def test_decided_calls_never_read_the_low_bits() -> None:
    """Under the seeded stream the low bits of U stay unread unless a call falls back."""
    rng = SeededRandom(4)
    stats: dict[str, int] = {}
    s_bits = 50_000
    for num, den in ((1, 1 << 80), (1, 1 << 60), (1, 3 << 62), (1, 1 << 64)):
        u = draw_level_uniform(rng, s_bits)
        approx_bin_sample_cdf((1 << 64) - 9, num, den, s_bits, 30, u, stats)
        assert not u.materialized
    assert stats == {"decided": 4}


def test_edge_cases_and_errors() -> None:
    s_bits = 600
    for u in (1, 2, 1 << 599, (1 << 600) - 1, 1 << 600):
        lazy = LazyBits.from_int(u - 1, s_bits, TOP_BITS)
        for num, den, t in ((0, 5, 3), (5, 5, 3), (1, 2, 0)):
            assert approx_bin_sample_cdf(100, num, den, s_bits, t, lazy) == approx_bin_sample(100, num, den, 1 << s_bits, t, u)
    with pytest.raises(ValueError):
        approx_bin_sample_cdf(5, 3, 2, s_bits, 2, LazyBits.from_int(0, s_bits, TOP_BITS))
    with pytest.raises(ValueError):
        approx_bin_sample_cdf(5, 1, 2, s_bits + 1, 2, LazyBits.from_int(0, s_bits, TOP_BITS))
