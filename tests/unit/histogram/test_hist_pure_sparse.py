"""PureSparseHistogram (Alg 6.9): the {0..n} mixing law, exact privacy ratio on a tiny instance, modes, errors."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, product

import pytest
from tests.unit.histogram.test_hist_sparse import sparse_law
from tests.support.hist_support import EnumeratingRandom, exact_law

from dpspark.noise import FastSample, GeoSample
from dpspark.mechanisms.histogram import pure_sparse, pure_sparse_histogram, random_histogram
from dpspark.mechanisms.histogram.pure_sparse import mixing_delta, mixing_min_probability_bound
from dpspark.mechanisms.histogram.sparse import sd_bound, s_bits_for
from dpspark.rng import SeededRandom

Law = dict[tuple[tuple[int, ...], tuple[int, ...]], Fraction]


def output_range(size: int, n: int) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every partial vector with at most n nonzero bins and counts in [1, n], canonical order."""
    out = set()
    for k in range(n + 1):
        for bins in combinations(range(size), k):
            for counts in product(range(1, n + 1), repeat=k):
                out.add((bins, counts))
    return out


def full_support_violations(law: Law, size: int, n: int) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Outputs of the range with probability below (3|X|)^-n (including 0)."""
    bound = mixing_min_probability_bound(size, n)
    return {r for r in output_range(size, n) if law.get(r, Fraction(0)) < bound}


def mixing_law(size: int, n: int) -> Law:
    return exact_law(lambda r: tuple(map(tuple, random_histogram(size, n, r))))


@pytest.mark.parametrize(("size", "n"), [(3, 1), (3, 2), (5, 2), (4, 3), (2, 3)])
def test_mixing_distribution_has_full_support_and_min_bound(size: int, n: int) -> None:
    law = mixing_law(size, n)
    assert sum(law.values()) == 1
    assert set(law) <= output_range(size, n)
    assert ((), ()) in law  # the empty histogram, the {1..n} bug's casualty
    assert full_support_violations(law, size, n) == set()
    # every drawn position gets count 0 with probability (n+1)^-n, so the empty histogram has at least that
    assert law[((), ())] >= Fraction(1, (n + 1) ** n)


def test_mutant_with_counts_from_one_to_n_is_caught() -> None:
    def mutant(size: int, n: int, rng: EnumeratingRandom) -> tuple[tuple[int, ...], tuple[int, ...]]:
        positions = [rng.uniform(size) - 1 for _ in range(n)]
        draws = [rng.uniform(n) for _ in range(n)]  # the reference implementation's {1..n}
        chosen: dict[int, int] = {}
        for x, c in zip(positions, draws):
            chosen.setdefault(x, c)
        kept = sorted(chosen.items())
        return tuple(x for x, _ in kept), tuple(c for _, c in kept)

    law = exact_law(lambda r: mutant(5, 2, r))
    assert ((), ()) in full_support_violations(law, 5, 2)


def test_mixing_delta_is_the_lemma_3_2_prime_condition() -> None:
    exp_eps, gamma = Fraction(7, 4), Fraction(1, 80)
    want = Fraction(3, 11) * Fraction(1, 79) / (3 * 1000) ** 4
    assert mixing_delta(exp_eps, gamma, 1000, 4) == want


MECH = GeoSample(n=2, exp_eps=Fraction(2))
GAMMA = Fraction(1, 2)


def pure_law(data: dict[int, int]) -> Law:
    """(1-gamma) SparseHistogram_{delta_s} + gamma P, computed exactly (|X| = 5, n = 2)."""
    sparse = sparse_law(data, mixing_delta(MECH.exp_eps, GAMMA, 5, 2))
    mix = mixing_law(5, 2)
    return {
        r: (1 - GAMMA) * sparse.get(r, Fraction(0)) + GAMMA * mix.get(r, Fraction(0)) for r in set(sparse) | set(mix)
    }


def test_pure_privacy_ratio_on_tiny_instance() -> None:
    """Pure eps~-DP under add/remove: Pr[A(D) = r] <= (p/q) Pr[A(D') = r] for every r, exactly."""
    laws = {str(d): pure_law(d) for d in ({}, {0: 1}, {0: 2}, {0: 1, 1: 1})}
    worst = Fraction(0)
    for a, b in (("{}", "{0: 1}"), ("{0: 1}", "{0: 2}"), ("{0: 1}", "{0: 1, 1: 1}")):
        for x, y in ((a, b), (b, a)):
            assert set(laws[x]) == set(laws[y]) == output_range(5, 2)  # full support on both sides
            for r, px in laws[x].items():
                assert px <= MECH.exp_eps * laws[y][r]
                worst = max(worst, px / laws[y][r])
    assert worst > Fraction(3, 2)  # the bound is nearly attained, so the check has teeth


def test_coin_selects_with_probability_gamma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pure_sparse, "heavy_with_sampled_empty_bins", lambda *a, **k: ([1], [2]))
    monkeypatch.setattr(pure_sparse, "random_histogram", lambda *a, **k: ([3], [1]))
    law = exact_law(lambda r: pure_sparse_histogram({}, 5, 2, MECH, "2/7", r, beta="1/2").indices)
    assert law == {(1,): Fraction(5, 7), (3,): Fraction(2, 7)}


def test_modes_identical_and_statements_exact() -> None:
    mech = FastSample(n=20, exp_eps=Fraction(3, 2), gamma=Fraction(1, 1 << 70))
    data = {1 << 63: 5, 17: 3, 4: 1}
    size = 1 << 64
    for seed in range(3):
        a = pure_sparse_histogram(data, size, 20, mech, "1/60", SeededRandom(seed), mode="adaptive")
        b = pure_sparse_histogram(data, size, 20, mech, "1/60", SeededRandom(seed), mode="exact")
        assert (a.indices, a.counts) == (b.indices, b.counts)
        assert list(a.indices) == sorted(a.indices)
    s_bits = a.parameters["s_bits"]
    delta_s = mixing_delta(Fraction(3, 2), Fraction(1, 60), size, 20)
    assert s_bits == s_bits_for(20, size, delta_s) and sd_bound(20, size, s_bits) <= delta_s
    assert s_bits >= 3 * 344  # large enough for the packed interval path
    assert a.privacy.delta == 0 and a.privacy.exp_eps == Fraction(3, 2)
    assert a.privacy.bias_epsilon > 0  # mechanism draws, distinct draws and the coin use mod-N reduction


def test_progress_is_identical_whatever_the_data_and_the_coin() -> None:
    mech = GeoSample(n=8, exp_eps=Fraction(2))
    seen = []
    for seed, data in ((0, {}), (1, {3: 8}), (2, {1: 1, 2: 1}), (3, {9: 4, 10: 4})):
        msgs: list[str] = []
        pure_sparse_histogram(data, 40, 8, mech, "1/2", SeededRandom(seed), progress=msgs.append, beta="9/10")
        seen.append(msgs)
    assert all(m == seen[0] for m in seen) and 2 <= len(seen[0]) <= 30


def test_pure_sparse_error_paths() -> None:
    rng = SeededRandom(0)
    for bad in ("0", "1", "3/2"):
        with pytest.raises(ValueError):
            pure_sparse_histogram({}, 5, 2, MECH, bad, rng)
    with pytest.raises(TypeError):
        pure_sparse_histogram({}, 5, 2, MECH, 0.5, rng)
    with pytest.raises(ValueError, match="2n\\+1"):
        pure_sparse_histogram({}, 4, 2, MECH, "1/2", rng)
    with pytest.raises(ValueError, match="beta"):
        pure_sparse_histogram({}, 5, 2, MECH, "1/2", rng, beta="1/2")


def test_optional_time_padding() -> None:
    import time

    mech = GeoSample(n=3, exp_eps=Fraction(2))
    start = time.monotonic()
    pure_sparse_histogram({0: 1}, 9, 3, mech, "1/2", SeededRandom(0), beta="9/10", min_seconds=0.3)
    assert time.monotonic() - start >= 0.3
    with pytest.raises(ValueError):
        pure_sparse_histogram({0: 1}, 9, 3, mech, "1/2", SeededRandom(0), beta="9/10", min_seconds=-1)


@pytest.mark.slow
def test_modes_identical_at_bench_scale() -> None:
    """Identical releases at n = 150, |X| = 2^64 (s about 2^10000): the packed interval path at scale."""
    mech = FastSample(n=150, exp_eps=Fraction(21, 8), gamma=Fraction(1, 1 << 72))
    data = {(i * 0x9E3779B97F4A7C15) % (1 << 64): 1 + i % 7 for i in range(35)}
    for seed in range(2):
        a = pure_sparse_histogram(data, 1 << 64, 150, mech, "1/60", SeededRandom(seed), mode="adaptive")
        b = pure_sparse_histogram(data, 1 << 64, 150, mech, "1/60", SeededRandom(seed), mode="exact")
        assert (a.indices, a.counts) == (b.indices, b.counts)


@pytest.mark.parametrize(
    ("n", "size", "geo", "seeds"),
    [(40, 1 << 64, False, (5, 6)), (64, 10**19 + 7, False, (1,)), (50, 1 << 40, True, (2, 3)), (90, 1 << 64, False, (9,))],
)
def test_modes_identical_at_more_sizes_and_seeds(n: int, size: int, geo: bool, seeds: tuple[int, ...]) -> None:
    """Adaptive (CDF bounds on the top bits of U) and exact releases coincide under the seeded stream."""
    mech = GeoSample(n=n, exp_eps=Fraction(2)) if geo else FastSample(n=n, exp_eps=Fraction(21, 8), gamma=Fraction(1, 1 << 72))
    data = {(i * 0x9E3779B97F4A7C15) % size: 1 + i % 5 for i in range(n // 4)}
    for seed in seeds:
        stats: dict[str, int] = {}
        a = pure_sparse_histogram(data, size, n, mech, "1/60", SeededRandom(seed), mode="adaptive", stats=stats)
        b = pure_sparse_histogram(data, size, n, mech, "1/60", SeededRandom(seed), mode="exact")
        assert (a.indices, a.counts) == (b.indices, b.counts)
        assert stats["decided"] >= 1 and "cdf_fallback" not in stats and "exact" not in stats


@pytest.mark.slow
def test_modes_identical_at_bench_limit() -> None:
    """n = 300, the benchmark's --exact-up-to default, |X| = 2^64 (about 50 s: the exact mode is slow)."""
    mech = FastSample(n=300, exp_eps=Fraction(21, 8), gamma=Fraction(1, 1 << 72))
    data = {(i * 0x9E3779B97F4A7C15) % (1 << 64): 1 + i % 9 for i in range(60)}
    for seed in (11,):
        a = pure_sparse_histogram(data, 1 << 64, 300, mech, "1/60", SeededRandom(seed), mode="adaptive")
        b = pure_sparse_histogram(data, 1 << 64, 300, mech, "1/60", SeededRandom(seed), mode="exact")
        assert (a.indices, a.counts) == (b.indices, b.counts)
