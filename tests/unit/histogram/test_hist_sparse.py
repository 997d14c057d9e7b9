"""SparseHistogram (Alg 6.21): closeness to KeepHeavy, identical modes, exact statements, errors."""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import pytest
from tests.support.hist_support import EnumeratingRandom, exact_law, sd

from dpspark.noise import FastSample, GeoSample
from dpspark.mechanisms.histogram import keepheavy_reference, sparse_histogram
from dpspark.mechanisms.histogram.ordstat import approx_bin_sample_pmf
from dpspark.mechanisms.histogram.result import biased_draw_factor
from dpspark.mechanisms.histogram.sparse import sd_bound, s_bits_for, sparse_bias_draws
from dpspark.rng import SeededRandom

MECH = GeoSample(n=2, exp_eps=Fraction(2))


@cache
def bin_law(m: int, num: int, den: int, s: int, t: int) -> list[Fraction]:
    return approx_bin_sample_pmf(m, num, den, s, t)


def sparse_law(data: dict[int, int], delta: Fraction) -> dict[tuple[tuple[int, ...], tuple[int, ...]], Fraction]:
    """Exact law of sparse_histogram at |X| = 5, n = 2; each ApproxBinSample drawn from its exact law over U.

    (approx_bin_sample_pmf equals the law over every U: test_hist_ordstat checks that exhaustively.)
    """
    s = 1 << s_bits_for(2, 5, delta)

    def run(r: EnumeratingRandom) -> tuple[tuple[int, ...], tuple[int, ...]]:
        def sampler(m: int, num: int, den: int, t: int, u: int) -> int:
            return r.choose(bin_law(m, num, den, s, t))

        rel = sparse_histogram(data, 5, 2, MECH, delta, r, bin_sampler=sampler, beta="99/100")  # type: ignore[arg-type]
        return rel.indices, rel.counts

    return exact_law(run, collapse_bits_above=0)


@pytest.mark.parametrize("data", [{}, {0: 1}, {1: 1, 3: 1}], ids=str)
@pytest.mark.parametrize("delta", [Fraction(1, 4), Fraction(1, 16), Fraction(1, 64)], ids=str)
def test_sd_to_keepheavy_within_bound(data: dict[int, int], delta: Fraction) -> None:
    """Thm 6.8(i): SD(SparseHistogram(D), KeepHeavy(D)) <= n|X|(n+2)/s, exactly."""
    reference = exact_law(lambda r: tuple(map(tuple, keepheavy_reference(data, 5, 2, MECH, r))))
    law = sparse_law(data, delta)
    bound = sd_bound(2, 5, s_bits_for(2, 5, delta))
    assert bound <= delta
    assert sd(law, reference) <= bound
    assert sum(law.values()) == 1


def test_s_bits_is_the_smallest_sufficient() -> None:
    for n, size, delta in [(2, 5, Fraction(1, 3)), (10, 1 << 64, Fraction(1, 1 << 128)), (7, 99, Fraction(2, 7))]:
        s_bits = s_bits_for(n, size, delta)
        assert sd_bound(n, size, s_bits) <= delta < sd_bound(n, size, s_bits - 1)


def test_modes_give_identical_releases() -> None:
    mech = FastSample(n=25, exp_eps=Fraction(3, 2), gamma=Fraction(1, 1 << 70))
    data = {5: 10, 1 << 40: 7, 99: 1, 12345: 4}
    for seed in range(3):
        a = sparse_histogram(data, 1 << 64, 25, mech, "2^-300", SeededRandom(seed), mode="adaptive")
        b = sparse_histogram(data, 1 << 64, 25, mech, "2^-300", SeededRandom(seed), mode="exact")
        assert (a.indices, a.counts) == (b.indices, b.counts)
        assert list(a.indices) == sorted(a.indices)
        assert a.parameters["s_bits"] >= 300


def test_privacy_statement_is_exact() -> None:
    mech = FastSample(n=25, exp_eps=Fraction(3, 2), gamma=Fraction(1, 1 << 70))
    rng = SeededRandom(1)
    rel = sparse_histogram({3: 2}, 1 << 64, 25, mech, "2^-300", rng)
    s_bits = s_bits_for(25, 1 << 64, Fraction(1, 1 << 300))
    extra, grow = biased_draw_factor(sparse_bias_draws(25, mech), rng.lam)
    assert rel.privacy.delta == (1 + Fraction(3, 2)) * sd_bound(25, 1 << 64, s_bits) * grow
    assert rel.privacy.bias_epsilon == extra > 0
    assert rel.privacy.exp_eps == Fraction(3, 2)
    assert rel.privacy.pure is False and rel.describe()["privacy"]["measure"]["measure"] == "approx"


def test_sparse_error_paths() -> None:
    rng = SeededRandom(0)
    with pytest.raises(ValueError, match="2n\\+1"):
        sparse_histogram({}, 4, 2, MECH, "1/10", rng)
    with pytest.raises(ValueError):
        sparse_histogram({}, 5, 2, MECH, "0", rng)
    with pytest.raises(TypeError):
        sparse_histogram({}, 5, 2, MECH, 0.1, rng)
    with pytest.raises(ValueError):
        sparse_histogram({}, 5, 2, MECH, "1/10", rng, mode="fast")
    with pytest.raises(ValueError):
        sparse_histogram({7: 1}, 5, 2, MECH, "1/10", rng)
