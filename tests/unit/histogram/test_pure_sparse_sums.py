"""Pure-DP sparse histogram with sums (docs/groups.md §H): the mixing law's min P over (key, count, sum), and the
exact pure-eps ratio of the implemented release law at tiny parameters, each with a mutant."""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from itertools import combinations, product

import pytest
from tests.support.hist_support import EnumeratingRandom, exact_law

from dpspark.mechanisms.histogram import pure_sparse_sums as mod
from dpspark.mechanisms.histogram.ordstat import approx_bin_sample_pmf
from dpspark.mechanisms.histogram.pure_sparse import mixing_min_probability_bound
from dpspark.mechanisms.histogram.pure_sparse_sums import (SumLaw, ideal_exp_eps, plan_sums, pure_sparse_sums,
                                                           random_histogram_with_sums)
from dpspark.noise import GeoSample
from dpspark.rng import SeededRandom

Out = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, ...], ...]]


def output_range(size: int, n: int, values: tuple[int, ...]) -> set[Out]:
    """Every release: at most n keys ascending, counts in [1, n], sum j on [0, V_j - 1] per key."""
    out = set()
    for k in range(n + 1):
        for keys in combinations(range(size), k):
            for counts in product(range(1, n + 1), repeat=k):
                for sums in product(*(product(range(v), repeat=k) for v in values)):
                    out.add((keys, counts, tuple(sums)))
    return out


def mixing_law(size: int, n: int, values: tuple[int, ...]) -> dict[Out, Fraction]:
    def run(r: EnumeratingRandom) -> Out:
        xs, ys, sums = random_histogram_with_sums(size, n, values, r)  # type: ignore[arg-type]
        return tuple(xs), tuple(ys), tuple(tuple(s) for s in sums)

    return exact_law(run)


@pytest.mark.parametrize(("size", "n", "values"), [(3, 1, (3,)), (4, 1, (2,)), (3, 2, (2,)), (5, 2, (3,)),
                                                   (3, 1, (2, 3))])
def test_mixing_min_probability_with_sums_is_at_least_the_bound(size: int, n: int, values: tuple[int, ...]) -> None:
    law = mixing_law(size, n, values)
    assert sum(law.values()) == 1
    rng = output_range(size, n, values)
    assert set(law) == rng  # full support on the (key, count, sum) range
    V = 1
    for v in values:
        V *= v
    bound = mixing_min_probability_bound(size, n, V)
    assert bound == Fraction(1, (3 * size * V) ** n)
    assert min(law.values()) >= bound
    # mutant: the bound without the V^-n factor, (3|X|)^-n, is broken by some released sum
    assert min(law.values()) < mixing_min_probability_bound(size, n)


def test_mutant_mixing_without_the_top_sum_is_caught() -> None:
    def mutant(r: EnumeratingRandom) -> Out:
        xs, ys, _ = random_histogram_with_sums(4, 1, (), r)  # type: ignore[arg-type]
        sums = [r.uniform(2) - 1 for _ in range(1)][: len(xs)]  # V - 1 = 2 of the 3 grid points
        return tuple(xs), tuple(ys), (tuple(sums),)

    law = exact_law(mutant)
    missing = output_range(4, 1, (3,)) - set(law)
    assert missing and all(s == ((2,),) for _, _, s in missing)


COUNT = GeoSample(n=1, exp_eps=Fraction(2))  # e^eps~ = 2 per count step, d = 3
SUM = SumLaw(GeoSample(n=1, exp_eps=Fraction(2)), steps=1, zero=0)  # V = 2, d = 3
GAMMA = Fraction(1, 4)
SIZE, N = 3, 1


@cache
def bin_law(m: int, num: int, den: int, s: int, t: int) -> list[Fraction]:
    return approx_bin_sample_pmf(m, num, den, s, t)


def release_law(data: tuple[tuple[int, int, int], ...], monkeypatch: pytest.MonkeyPatch) -> dict[Out, Fraction]:
    """The exact law of pure_sparse_sums on ``data`` = ((key, count, grid value), ...): the function itself with its
    ApproxBinSample drawn from its exact law (checked against every U in test_hist_ordstat), P replaced by a marker
    during the enumeration and then by its exact law (the branches' draws are independent; the coin selects)."""
    s = 1 << plan_sums(N, SIZE, COUNT, [SUM], GAMMA)[0]
    marker: Out = ((-1,), (), ())

    def run(r: EnumeratingRandom) -> Out:
        def sampler(m: int, num: int, den: int, t: int, u: int) -> int:
            return r.choose(bin_law(m, num, den, s, t))

        monkeypatch.setattr(mod, "random_histogram_with_sums", lambda *a, **k: ([-1], [], []))
        rel = pure_sparse_sums(([d[0] for d in data], [d[1] for d in data]), [[d[2] for d in data]], SIZE, N, COUNT,
                               [SUM], GAMMA, r, bin_sampler=sampler)  # type: ignore[arg-type]
        return rel.indices, rel.counts, rel.sums

    law = exact_law(run, collapse_bits_above=0)
    monkeypatch.undo()
    assert law.pop(marker) == GAMMA  # the coin picks P with probability gamma
    for r, p in mixing_law(SIZE, N, (SUM.values,)).items():
        law[r] = law.get(r, Fraction(0)) + GAMMA * p
    return law


def test_pure_ratio_of_the_release_law_with_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pr[A(D) = r] <= e^eps~ Pr[A(D') = r] exactly for every output and add/remove neighbours (one row, whose value
    moves the key's sum grid by <= 1), e^eps~ = (p/q)_count (p/q)_sum; the count-only claim is exceeded (mutant)."""
    datasets = [(), ((0, 1, 0),), ((2, 1, 1),)]
    laws = {d: release_law(d, monkeypatch) for d in datasets}
    claim = ideal_exp_eps(COUNT, [SUM])
    assert claim == Fraction(4)
    full = output_range(SIZE, N, (SUM.values,))
    worst = Fraction(0)
    for d in datasets[1:]:
        for x, y in (((), d), (d, ())):
            assert set(laws[x]) == set(laws[y]) == full
            for r, px in laws[x].items():
                assert px <= claim * laws[y][r]
                worst = max(worst, px / laws[y][r])
    assert worst > Fraction(5, 2)  # mutant: a statement that forgets the sums' factor is violated


def test_sums_follow_the_key_and_empty_keys_draw_at_zero() -> None:
    """Seeded: observed keys' sums come from their own grid value, sampled empty keys' from ``zero``."""
    count = GeoSample(n=40, exp_eps=Fraction(4))
    law = SumLaw(GeoSample(n=80, exp_eps=Fraction(8)), steps=1, zero=0)
    keys, counts, grid = [5, 70, 900], [20, 1, 15], [80, 40, 3]
    seen = 0
    for seed in range(6):
        rel = pure_sparse_sums((keys, counts), [grid], 1 << 20, 40, count, [law], "1/1024", SeededRandom(seed))
        assert list(rel.indices) == sorted(rel.indices) and rel.privacy.delta == 0
        for x, s in zip(rel.indices, rel.sums[0]):
            if x in keys:
                assert abs(s - grid[keys.index(x)]) <= 3
                seen += 1
            else:
                assert s <= 3
    assert seen >= 6


def test_input_errors() -> None:
    rng = SeededRandom(0)
    with pytest.raises(ValueError, match="ascending"):
        pure_sparse_sums(([2, 1], [1, 1]), [[0, 0]], 5, 2, GeoSample(n=2, exp_eps=Fraction(2)), [SUM], "1/2", rng)
    with pytest.raises(ValueError, match="\\[0, A\\]"):
        pure_sparse_sums(([1], [1]), [[2]], 5, 2, GeoSample(n=2, exp_eps=Fraction(2)), [SUM], "1/2", rng)
    with pytest.raises(ValueError, match="one grid value"):
        pure_sparse_sums(([1], [1]), [[0, 1]], 5, 2, GeoSample(n=2, exp_eps=Fraction(2)), [SUM], "1/2", rng)
    with pytest.raises(TypeError):
        pure_sparse_sums(([1], [1]), [[0]], 5, 2, GeoSample(n=2, exp_eps=Fraction(2)), [SUM], 0.5, rng)
