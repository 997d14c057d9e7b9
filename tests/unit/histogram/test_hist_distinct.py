"""Appendix A (Alg A.3): exact uniformity over all randomness, fixed search rounds, huge N, errors."""

from __future__ import annotations

import bisect
import random
from fractions import Fraction
from itertools import permutations

import pytest
from tests.support.hist_support import exact_law

from dpspark.mechanisms.histogram import distinct
from dpspark.mechanisms.histogram.distinct import kth_missing, sample_distinct_avoiding, search_rounds
from dpspark.rng import SeededRandom


@pytest.mark.parametrize(
    ("universe", "avoid", "r"),
    [(6, [2, 5], 3), (6, [2, 5], 4), (7, [], 2), (5, [1, 2, 3, 4], 1), (8, [8, 1], 0), (7, [3], 5)],
)
def test_sequence_is_exactly_uniform_over_all_randomness(universe: int, avoid: list[int], r: int) -> None:
    law = exact_law(lambda rng: tuple(sample_distinct_avoiding(universe, avoid, r, rng)))
    free = [y for y in range(1, universe + 1) if y not in avoid]
    expected = list(permutations(free, r))
    assert set(law) == set(expected)
    assert all(p == Fraction(1, len(expected)) for p in law.values())


def test_kth_missing_matches_brute_force() -> None:
    gen = random.Random(7)  # test-input generation only
    for universe in list(range(1, 40)) + [64, 100, 257]:
        taken = sorted(gen.sample(range(1, universe + 1), gen.randrange(0, universe)))
        free = [y for y in range(1, universe + 1) if y not in set(taken)]
        for k, want in enumerate(free, start=1):
            assert kth_missing(taken, universe, k) == want


def test_rank_queries_per_draw_are_fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def counting_bisect(a: list[int], x: int) -> int:
        calls.append(x)
        return bisect.bisect_right(a, x)

    monkeypatch.setattr(distinct, "bisect_right", counting_bisect)
    for universe in (2, 3, 1000, 1 << 20, (1 << 20) + 1):
        for k, taken in ((1, []), (1, [1, 2, 3]), (universe - 3, [universe])):
            if k < 1:
                continue
            calls.clear()
            kth_missing(taken, universe, k)
            assert len(calls) == search_rounds(universe) == (universe - 1).bit_length()


def test_huge_universe_draws_are_distinct_and_avoid_the_set() -> None:
    universe = 1 << 256
    avoid = [1, 2, universe, universe - 5, 1 << 200]
    out = sample_distinct_avoiding(universe, avoid, 300, SeededRandom(3))
    assert len(set(out)) == 300
    assert not set(out) & set(avoid)
    assert all(1 <= y <= universe for y in out)


def test_error_paths() -> None:
    rng = SeededRandom(0)
    with pytest.raises(ValueError):
        sample_distinct_avoiding(5, [1, 2], 4, rng)  # only 3 left
    with pytest.raises(ValueError):
        sample_distinct_avoiding(5, [0], 1, rng)
    with pytest.raises(ValueError):
        sample_distinct_avoiding(5, [6], 1, rng)
    with pytest.raises(ValueError):
        sample_distinct_avoiding(5, [2, 2], 1, rng)
    with pytest.raises(ValueError):
        sample_distinct_avoiding(0, [], 0, rng)
    with pytest.raises(ValueError):
        sample_distinct_avoiding(5, [], -1, rng)
