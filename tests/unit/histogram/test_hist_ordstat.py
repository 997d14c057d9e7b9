"""OrdSample, ApproxConvExp, ApproxBinSample, ApproxOrdSample: exact checks at small sizes."""

from __future__ import annotations

import random
from fractions import Fraction
from math import comb

import pytest
from tests.support.hist_support import exact_law, sd

from dpspark.noise import FastSample, GeoSample
from dpspark.mechanisms.histogram import binsample_fast
from dpspark.mechanisms.histogram.binsample_fast import (
    approx_bin_sample_adaptive,
    interval_conv_exp,
    interval_conv_exp_packed,
    precision_bits,
)
from dpspark.mechanisms.histogram.ordstat import (
    approx_bin_sample,
    approx_bin_sample_pmf,
    approx_conv_exp,
    approx_ord_sample,
    bernoulli_vector,
    brute_force_top,
    ord_sample,
    ordsample_pmf,
    truncated_binomial_inverse,
    truncated_binomial_pmf,
)
from dpspark.rng import SeededRandom

MECHS = [
    GeoSample(n=2, exp_eps=Fraction(2)),
    GeoSample(n=3, exp_eps=Fraction(3, 2)),
    FastSample(n=3, exp_eps=Fraction(2), gamma="1/2", t=1),  # forced t: a non-geometric CDF shape
]


def cdf_of(mech):  # type: ignore[no-untyped-def]
    return lambda v: mech.scaled_cdf(0, v)


@pytest.mark.parametrize("mech", MECHS, ids=["geo2", "geo3", "fast3"])
@pytest.mark.parametrize(("m", "t"), [(1, 1), (3, 1), (3, 3), (4, 2), (5, 3)])
def test_ordsample_law_equals_brute_force(mech, m: int, t: int) -> None:  # type: ignore[no-untyped-def]
    assert ordsample_pmf(m, t, cdf_of(mech), mech.n) == brute_force_top(m, t, mech.pmf(0))


def test_ord_sample_runs_the_law_it_claims() -> None:
    mech = GeoSample(n=2, exp_eps=Fraction(2))  # d = 6
    law = exact_law(lambda r: tuple(ord_sample(3, 2, cdf_of(mech), 2, r)))
    assert law == ordsample_pmf(3, 2, cdf_of(mech), 2)


@pytest.mark.parametrize(("m", "num", "den", "t"), [(3, 1, 3, 2), (4, 2, 5, 4), (2, 0, 3, 1), (3, 3, 3, 2), (5, 1, 2, 0)])
def test_truncated_binomial_inverse_over_all_u(m: int, num: int, den: int, t: int) -> None:
    counts = [0] * (t + 1)
    for u in range(1, den**m + 1):
        counts[truncated_binomial_inverse(m, num, den, t, u)] += 1
    assert [Fraction(c, den**m) for c in counts] == truncated_binomial_pmf(m, Fraction(num, den), t)


def _random_cases(count: int, seed: int):  # type: ignore[no-untyped-def]
    gen = random.Random(seed)  # test-input generation only
    for _ in range(count):
        s = gen.choice([16, 64, 1000, 1 << 12, 3**9])
        p1 = gen.randrange(0, s + 1)
        yield (s - p1, p1), gen.randrange(0, 40), s, gen.randrange(1, 9)


def test_approx_conv_exp_properties() -> None:
    """Prop 6.15 (i) nonneg, sum <= s; (ii) prefix consistency; (iii) L1 error <= (i-1) t (scaled by s)."""
    for a, i, s, t in _random_cases(200, 11):
        b = approx_conv_exp(a, i, s, t)
        assert len(b) == t and all(x >= 0 for x in b) and sum(b) <= s
        for t2 in range(1, t):
            assert approx_conv_exp(a, i, s, t2) == b[:t2]
        p = Fraction(a[1], s)
        exact = [s * comb(i, j) * p**j * (1 - p) ** (i - j) if j <= i else Fraction(0) for j in range(t)]
        err = sum((abs(x - y) for x, y in zip(b, exact)), Fraction(0))
        assert err <= max(i - 1, 0) * t


def test_approx_conv_exp_edge_cases_and_errors() -> None:
    assert approx_conv_exp((7, 1), 0, 8, 3) == [8, 0, 0]
    assert approx_conv_exp((7, 1), 1, 8, 3) == [7, 1, 0]
    with pytest.raises(ValueError):
        approx_conv_exp((7, 2), 3, 8, 2)
    with pytest.raises(ValueError):
        approx_conv_exp((7, 1), 3, 8, 0)


@pytest.mark.parametrize(
    ("m", "num", "den", "s", "t"),
    [(3, 1, 3, 64, 2), (5, 2, 7, 256, 3), (10, 1, 10, 1024, 4), (1, 1, 2, 16, 1), (7, 5, 6, 512, 7), (4, 1, 9, 128, 0),
     (20, 1, 40, 4096, 5), (2, 0, 1, 32, 2)],
)
def test_approx_bin_sample_over_all_u(m: int, num: int, den: int, s: int, t: int) -> None:
    """Prop 6.17: SD(ApproxBinSample, min(Bin(m,p), t)) <= m(t+1)/s, enumerating every U in [1, s]."""
    counts: dict[int, int] = {}
    for u in range(1, s + 1):
        out = approx_bin_sample(m, num, den, s, t, u)
        counts[out] = counts.get(out, 0) + 1
    law = {k: Fraction(v, s) for k, v in counts.items()}
    truth = dict(enumerate(truncated_binomial_pmf(m, Fraction(num, den), t)))
    assert sd(law, truth) <= Fraction(m * (t + 1), s)
    assert law == {k: v for k, v in enumerate(approx_bin_sample_pmf(m, num, den, s, t)) if v}


def test_approx_bin_sample_rejects_u_outside_range() -> None:
    with pytest.raises(ValueError):
        approx_bin_sample(3, 1, 2, 16, 2, 0)
    with pytest.raises(ValueError):
        approx_bin_sample(3, 1, 2, 16, 2, 17)


def test_interval_bounds_contain_the_exact_vector() -> None:
    """Both interval evaluators bracket the exact ApproxConvExp entrywise (packed one needs S >= 3P)."""
    gen = random.Random(5)  # test-input generation only
    s_bits = 1200
    s = 1 << s_bits
    for _ in range(40):
        m = gen.randrange(1, 1 << gen.choice([4, 20, 60]))
        den = gen.randrange(2, 1 << 80)
        num = gen.randrange(0, den) >> gen.randrange(0, 80)
        k = gen.choice([2, 3, 4, 8])
        prec = precision_bits(m, k)
        assert prec % 8 == 0 and s_bits >= 3 * prec
        p_lo = (num << prec) // den
        one = 1 << prec
        a_lo, a_hi = (one - min(p_lo + 1, one), p_lo), (one - p_lo, min(p_lo + 1, one))
        exact = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
        for lo, hi in (interval_conv_exp(a_lo, a_hi, m, prec, k), interval_conv_exp_packed(a_lo, a_hi, m, prec, k)):
            for x, lo_j, hi_j in zip(exact, lo, hi):
                assert lo_j << (s_bits - prec) <= x <= hi_j << (s_bits - prec)
            # the bounds are tight: far below one unit of U-resolution 2^(S-P) per 2^150
            assert sum(hi) - sum(lo) < 1 << (prec - 150)


@pytest.mark.parametrize(("s_bits", "cases"), [(600, 25), (1400, 12)], ids=["list-path", "packed-path"])
def test_adaptive_bin_sample_is_identical_including_straddles(
    s_bits: int, cases: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/balcer-vadhan-notes.md §E11: same output as the exact algorithm for every U, including U placed on B_l and B_l + 1."""
    packed_calls = []
    real_packed = binsample_fast.interval_conv_exp_packed

    def spy(*args):  # type: ignore[no-untyped-def]
        packed_calls.append(args[-1])
        return real_packed(*args)

    monkeypatch.setattr(binsample_fast, "interval_conv_exp_packed", spy)
    gen = random.Random(9 + s_bits)  # test-input generation only
    s = 1 << s_bits
    stats: dict[str, int] = {}
    for _ in range(cases):
        m = gen.randrange(1, 1 << gen.choice([3, 12, 40, 60]))
        den = gen.randrange(2, 1 << 70)
        num = gen.randrange(0, den) >> gen.randrange(0, 70)
        t = min(m, gen.randrange(2, 10))
        k = 1
        while k < t:
            k *= 2
        b = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
        us = [gen.randrange(1, s + 1) for _ in range(3)]
        cum = 0
        for x in b[:3]:
            cum += x
            us += [u for u in (cum - 1, cum, cum + 1) if 1 <= u <= s]
        for u in us:
            assert approx_bin_sample_adaptive(m, num, den, s_bits, t, u, stats) == approx_bin_sample(m, num, den, s, t, u)
    assert stats["decided"] > 2 * cases and stats["exact"] > 5  # both paths exercised
    assert bool(packed_calls) == (s_bits >= 1400)


def test_adaptive_falls_back_to_exact_for_small_s() -> None:
    for u in range(1, 65):
        assert approx_bin_sample_adaptive(5, 1, 3, 6, 3, u) == approx_bin_sample(5, 1, 3, 64, 3, u)


@pytest.mark.parametrize(("m", "t"), [(3, 2), (4, 3)])
def test_approx_ord_sample_close_to_ord_sample(m: int, t: int) -> None:
    """Prop 6.19 over all U of every level (s = 2^5): SD <= sum_v m (t+1)/s <= n m (t+1)/s."""
    mech = GeoSample(n=2, exp_eps=Fraction(2))
    s_bits = 5
    law = exact_law(lambda r: tuple(approx_ord_sample(m, t, cdf_of(mech), 2, s_bits, r)))
    truth = ordsample_pmf(m, t, cdf_of(mech), 2)
    assert sd(law, truth) <= Fraction(2 * m * (t + 1), 1 << s_bits)
    assert all(len(k) == t and list(k) == sorted(k, reverse=True) for k in law)


def test_approx_ord_sample_modes_identical_under_seeded_rng() -> None:
    mech = FastSample(n=60, exp_eps=Fraction(3, 2), gamma="1/1000")
    s_bits = 2000
    s = 1 << s_bits

    def exact_sampler(m: int, num: int, den: int, t: int, u: int) -> int:
        return approx_bin_sample(m, num, den, s, t, u)

    def fast_sampler(m: int, num: int, den: int, t: int, u: int) -> int:
        return approx_bin_sample_adaptive(m, num, den, s_bits, t, u)

    for seed in range(3):
        runs = [
            approx_ord_sample((1 << 40) + 7, 61, cdf_of(mech), 60, s_bits, SeededRandom(seed), bin_sampler=f)
            for f in (exact_sampler, fast_sampler)
        ]
        assert runs[0] == runs[1]
        assert len(runs[0]) == 61


def test_approx_ord_sample_progress_is_coarse() -> None:
    mech = GeoSample(n=40, exp_eps=Fraction(2))
    msgs: list[str] = []
    approx_ord_sample(200, 41, cdf_of(mech), 40, 400, SeededRandom(1), progress=msgs.append)
    assert 1 <= len(msgs) <= 10
    assert all(msg.startswith("order statistics:") and "%" in msg for msg in msgs)


def test_ordstat_error_paths() -> None:
    mech = GeoSample(n=2, exp_eps=Fraction(2))
    with pytest.raises(ValueError):
        ordsample_pmf(2, 3, cdf_of(mech), 2)  # t > m
    with pytest.raises(ValueError):
        approx_ord_sample(5, 2, cdf_of(mech), 2, 0, SeededRandom(0))
    with pytest.raises(ValueError):
        bernoulli_vector(3, 2, 16)


def test_approx_ord_sample_lazy_cdf_sampler_identical_under_seeded_rng() -> None:
    """The lazy U (top bits first) with CDF-bound decisions gives the exact path's outputs, level by level."""
    from dpspark.mechanisms.histogram.binsample_cdf import approx_bin_sample_cdf

    mech = FastSample(n=60, exp_eps=Fraction(3, 2), gamma="1/1000")
    s_bits = 2000
    s = 1 << s_bits

    def exact_sampler(m: int, num: int, den: int, t: int, u: int) -> int:
        return approx_bin_sample(m, num, den, s, t, u)

    for seed in range(3):
        for m in ((1 << 40) + 7, 500, 61):
            stats: dict[str, int] = {}
            want = approx_ord_sample(m, 61, cdf_of(mech), 60, s_bits, SeededRandom(seed), bin_sampler=exact_sampler)
            got = approx_ord_sample(
                m, 61, cdf_of(mech), 60, s_bits, SeededRandom(seed),
                lazy_sampler=lambda mm, num, den, t, u: approx_bin_sample_cdf(mm, num, den, s_bits, t, u, stats),
            )
            assert got == want and stats["decided"] >= 1
    with pytest.raises(ValueError):
        approx_ord_sample(5, 2, cdf_of(mech), 60, 300, SeededRandom(0), bin_sampler=exact_sampler, lazy_sampler=lambda *a: 0)
