"""Exact properties of the empty-bin samplers G, the field-size rule, and the broken-sampler fixtures."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpspark.mechanisms.compact import (
    BlockSampler,
    RoundedCdfSampler,
    choose_field_degree,
    compact_mechanism,
    make_sampler,
    min_scaled_pmf_at_zero,
)
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.noise import FastSample, GeoSample
from dpspark.noise.exp_eps import denominator_for, exp_eps_at_most


# ---------------------------------------------------------------- broken fixtures (kept on purpose)


class ShortZeroPreimage(RoundedCdfSampler):
    """The issue's mutant 4: G is unchanged but the preimage interval of v = 0 is one element short.

    Its top element u0 = F_G(0) still maps to 0 under G but is never drawn as a
    target, so a polynomial with that value at a data point has probability 0
    under D and > 0 under a neighbour without that point: unbounded privacy loss.
    """

    kind = "mutant-short-zero"

    def preimage(self, v: int) -> tuple[int, int]:
        lo, hi = super().preimage(v)
        return (lo, hi - 1) if v == 0 else (lo, hi)


class ShiftedUp(RoundedCdfSampler):
    """Empty bins read one count too high: G'(u0) = min(G(u0) + 1, n)."""

    kind = "mutant-shifted"

    def sample(self, u0: int) -> int:
        return min(super().sample(u0) + 1, self.n)


# ---------------------------------------------------------------- exact checkers


def tiling_violations(s: EmptyBinSampler) -> list[str]:
    """Where the preimages fail to tile [1, d0] in order of v, or disagree with G at their edges."""
    bad = []
    expect_lo = 1
    for v in range(s.n + 1):
        lo, hi = s.preimage(v)
        if lo != expect_lo:
            bad.append(f"v={v}: lo={lo} expected {expect_lo}")
        if hi < lo:
            bad.append(f"v={v}: empty")
            expect_lo = hi + 1
            continue
        for u in {lo, hi, (lo + hi) // 2}:
            if s.sample(u) != v:
                bad.append(f"v={v}: G({u}) != v")
        expect_lo = hi + 1
    if expect_lo != s.d0 + 1:
        bad.append(f"last hi = {expect_lo - 1} != d0")
    return bad


def scaled_pmf_m0(mech) -> list[int]:
    cdf = [mech.scaled_cdf(0, z) for z in range(-1, mech.n + 1)]
    return [cdf[i + 1] - cdf[i] for i in range(mech.n + 1)]


def exact_ratio_extremes(s: EmptyBinSampler) -> tuple[Fraction, Fraction]:
    """(min_v, max_v) of g(v)/m_0(v), exactly."""
    m0 = scaled_pmf_m0(s.mechanism)
    ratios = [Fraction(s.scaled_pmf(v) * s.d, m0[v] * s.d0) for v in range(s.n + 1)]
    return min(ratios), max(ratios)


TOY_MECHS = [
    GeoSample(n=1, exp_eps=Fraction(2)),
    GeoSample(n=2, exp_eps=Fraction(3, 2)),
    GeoSample(n=5, exp_eps=Fraction(3, 2)),
    FastSample(n=2, gamma="1/2", exp_eps=Fraction(4)),
    FastSample(n=12, gamma="1/4", exp_eps=Fraction(5, 2)),
]


def test_toy_fastsample_cases_are_not_fallbacks() -> None:
    assert TOY_MECHS[3].fallback is None and TOY_MECHS[3].t == 1
    assert TOY_MECHS[4].fallback is None and TOY_MECHS[4].t < 12


@pytest.mark.parametrize("mech", TOY_MECHS + [compact_mechanism(40, 2**64, "1/2")], ids=lambda m: f"{type(m).__name__}-n{m.n}-{m.exp_eps}")
def test_min_scaled_pmf_closed_form_matches_scan(mech) -> None:
    assert min_scaled_pmf_at_zero(mech) == min(scaled_pmf_m0(mech))


def test_geosample_fallback_has_no_gamma_floor() -> None:
    """docs/balcer-vadhan-notes.md §E8: for the GeoSample fallback, min m_0 is below gamma/(n+1) (2^-32.1 vs 2^-27.7 here)."""
    exp_eps = exp_eps_at_most(Fraction(1, 10), denominator_for(Fraction(1, 10)))
    mech = FastSample(n=200, gamma=Fraction(1, 2**20), exp_eps=exp_eps)
    assert mech.fallback is not None
    assert Fraction(min_scaled_pmf_at_zero(mech), mech.d) < mech.gamma / (mech.n + 1)


def _applicable(kind: str, mi: int, m: int) -> bool:
    """Alg 8.5 ("block") needs 2^m >= d; the rounded-CDF rule needs eta < 1 at this m."""
    mech = TOY_MECHS[mi]
    if kind == "block":
        return (1 << m) >= mech.d
    return make_sampler(mech, m, kind).valid()


TOY_CASES = [
    (kind, mi, m)
    for kind in ("rounded-cdf", "block")
    for mi in range(len(TOY_MECHS))
    for m in (6, 9, 14)
    if _applicable(kind, mi, m)
]


def test_toy_cases_cover_both_samplers_and_every_mechanism() -> None:
    assert {k for k, _, _ in TOY_CASES} == {"rounded-cdf", "block"}
    assert {mi for _, mi, _ in TOY_CASES} == set(range(len(TOY_MECHS)))


@pytest.mark.parametrize("kind, mi, m", TOY_CASES)
def test_toy_samplers_exact(kind: str, mi: int, m: int) -> None:
    mech = TOY_MECHS[mi]
    s = make_sampler(mech, m, kind)
    assert tiling_violations(s) == []
    # G by binary search over F_G equals the direct definition at every u0
    cdf = [s.cdf(v) for v in range(s.n + 1)]
    for u0 in range(1, s.d0 + 1):
        direct = min(v for v in range(s.n + 1) if cdf[v] >= u0)
        assert s.sample(u0) == direct
    # stochastically below M(0, U): F_G(v)/d0 >= F_M(0, v)/d for every v
    for v in range(s.n + 1):
        assert s.cdf(v) * s.d >= mech.scaled_cdf(0, v) * s.d0
    # certified ratio bounds hold: e^-eps_a <= g/m0 <= e^eps_b, checked via 1 - eps_a <= ... (ln x <= x - 1)
    lo, hi = exact_ratio_extremes(s)
    eps_a, eps_b = s.ratio_bounds()
    assert hi <= 1 + eps_b
    assert 1 / lo <= 1 + eps_a


@pytest.mark.parametrize("mi", range(len(TOY_MECHS) - 1))  # the last has d ~ 2^20: too many u0 to scan
def test_block_sampler_is_algorithm_8_5(mi: int) -> None:
    mech = TOY_MECHS[mi]
    m = max(6, mech.d.bit_length() + 1)
    s = BlockSampler(mech, m)
    assert s.block == s.d0 // mech.d and s.rem == s.d0 % mech.d
    sizes = [0] * (mech.d + 1)
    for u0 in range(1, s.d0 + 1):
        sizes[s.f(u0)] += 1
        # G(u0) = M(0, f(u0)) equals the CDF search through f+
        assert s.sample(u0) == EmptyBinSampler.sample(s, u0)
    # values 1..rem get block+1 preimages (the LOW end), the rest block
    assert sizes[1:] == [s.block + 1] * s.rem + [s.block] * (mech.d - s.rem)
    for u in range(mech.d + 1):
        assert s.f_plus(u) == sum(sizes[1 : u + 1])
    # Lemma 8.4(ii): block*d/d0 <= g/m0 <= (block+1)*d/d0
    lo, hi = exact_ratio_extremes(s)
    assert Fraction(s.block * mech.d, s.d0) <= lo and hi <= Fraction((s.block + 1) * mech.d, s.d0)


@pytest.mark.parametrize("m", [64, 128])
def test_realistic_rounded_sampler_exact(m: int) -> None:
    """n = 1000, |X| = 2^64: tiling, dominance and the ratio bound at every v, exactly."""
    mech = compact_mechanism(1000, 2**64, "1")
    assert mech.fallback is None
    s = RoundedCdfSampler(mech, m)
    if not s.valid():
        assert m == 64  # gamma = 2^-66 and n + 1 > 2 make eta > 1 at m = 64
        return
    assert tiling_violations(s) == []
    for v in range(s.n + 1):
        assert s.cdf(v) * s.d >= mech.scaled_cdf(0, v) * s.d0
    lo, hi = exact_ratio_extremes(s)
    eps_a, eps_b = s.ratio_bounds()
    assert hi <= 1 + eps_b and 1 / lo <= 1 + eps_a
    assert s.sampler_epsilon() < Fraction(1, 2**40)


def test_mutant_short_zero_breaks_tiling() -> None:
    for mech, m in [(TOY_MECHS[1], 6), (compact_mechanism(1000, 2**64, "1"), 128)]:
        assert tiling_violations(ShortZeroPreimage(mech, m)) != []


def test_mutant_shifted_breaks_tiling() -> None:
    assert tiling_violations(ShiftedUp(TOY_MECHS[2], 9)) != []


# ---------------------------------------------------------------- field degree


def test_field_degree_smallest_supported() -> None:
    mech = compact_mechanism(1000, 2**64, "1")
    assert choose_field_degree(2**64, mech, "1/10") == 128
    assert choose_field_degree(2**64 + 1, mech, "1/10") == 128
    assert choose_field_degree(2**128 + 1, compact_mechanism(1000, 2**128 + 1, "1"), "1/10") == 192
    small = compact_mechanism(1000, 2**20, "1")
    m = choose_field_degree(2**20, small, "1/10")
    assert m in (64, 128)
    s = RoundedCdfSampler(small, m)
    assert s.sampler_epsilon() <= Fraction(1, 10)
    if m == 128:
        s64 = RoundedCdfSampler(small, 64)
        assert not s64.valid() or s64.sampler_epsilon() > Fraction(1, 10)


def test_field_degree_uses_exact_min_for_geosample() -> None:
    """docs/balcer-vadhan-notes.md §E8: GeoSample's min m_0 (2^-71.9 here) rules out m = 64 although |X| = 2^16 fits."""
    mech = GeoSample(n=120, exp_eps=Fraction(3, 2))
    e2 = Fraction(1, 10)
    s64 = RoundedCdfSampler(mech, 64)
    assert not s64.valid()
    m = choose_field_degree(2**16, mech, e2)
    assert m == 128 and RoundedCdfSampler(mech, m).sampler_epsilon() <= e2


def test_field_degree_never_63_and_errors() -> None:
    mech = compact_mechanism(10, 2**8, "1")
    with pytest.raises(ValueError, match="unsupported"):
        choose_field_degree(2**8, mech, "1/10", candidates=(63,))
    with pytest.raises(ValueError, match="no supported field degree"):
        choose_field_degree(2**300, mech, "1/10")
    with pytest.raises(ValueError):
        choose_field_degree(2**8, mech, "0")
    huge = GeoSample(n=500, exp_eps=Fraction(3, 2))  # min m_0 ~ 2^-294: even m = 256 is too small
    with pytest.raises(ValueError, match="no supported field degree"):
        choose_field_degree(2**8, huge, "1/10")
