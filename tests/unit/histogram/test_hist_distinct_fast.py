"""Chunked Alg A.3: the same outputs as the reference for the same draws, splits, extremes, progress."""

from __future__ import annotations

import random

import pytest

from dpspark.mechanisms.histogram.distinct import sample_distinct_avoiding
from dpspark.mechanisms.histogram.distinct_fast import sample_distinct_avoiding_chunked
from dpspark.rng import SeededRandom


def test_identical_to_reference_on_random_instances() -> None:
    gen = random.Random(1)  # test-input generation only
    for trial in range(250):
        universe = gen.choice([1, 5, 17, 64, 1000, 1 << 20, (1 << 64) - 3, 1 << 64])
        size = gen.randrange(0, min(universe, 60))
        avoid = list({gen.randrange(1, universe + 1) for _ in range(size)})
        r = gen.randrange(0, min(universe - len(avoid), 80) + 1)
        chunk = gen.choice([1, 2, 3, 8, 512])
        want = sample_distinct_avoiding(universe, avoid, r, SeededRandom(trial))
        assert sample_distinct_avoiding_chunked(universe, avoid, r, SeededRandom(trial), chunk=chunk) == want


class Scripted:
    """uniform(N) returns N, 1, N, 1, ...: the extreme ranks (u = 2^64 included)."""

    name, lam = "scripted", 128

    def __init__(self) -> None:
        self.i = 0

    def uniform(self, n: int) -> int:
        self.i += 1
        return n if self.i % 2 else 1

    def bits(self, k: int) -> int:
        raise AssertionError("not used")


@pytest.mark.parametrize("avoid", [[], [1], [1 << 64], [1, 2, 3, (1 << 64) - 1, 1 << 64]])
def test_extreme_ranks_at_the_top_of_a_2_to_64_universe(avoid: list[int]) -> None:
    want = sample_distinct_avoiding(1 << 64, avoid, 40, Scripted())  # type: ignore[arg-type]
    for chunk in (1, 2, 512):
        assert sample_distinct_avoiding_chunked(1 << 64, avoid, 40, Scripted(), chunk=chunk) == want  # type: ignore[arg-type]


def _mutant(old: str, new: str):  # type: ignore[no-untyped-def]
    """The chunked sampler with one source line changed (a plausible bug)."""
    from dpspark.mechanisms.histogram import distinct_fast
    from tests.support.mutants import mutated

    return mutated(distinct_fast, "sample_distinct_avoiding_chunked", old, new)["sample_distinct_avoiding_chunked"]


@pytest.mark.parametrize(
    ("old", "new"),
    [("start + 1 + u, rounds", "start + u, rounds"), ("keys[c + 1 :] -= one", "pass"), ("side=\"left\"", "side=\"right\"")],
)
def test_mutants_are_caught(old: str, new: str) -> None:
    """The identity check has teeth: each one-line bug changes some output."""
    mutant = _mutant(old, new)
    gen = random.Random(3)  # test-input generation only
    differ = 0
    for trial in range(60):
        universe = gen.choice([64, 1000, 1 << 64])
        avoid = list({gen.randrange(1, universe + 1) for _ in range(gen.randrange(1, 30))})
        want = sample_distinct_avoiding(universe, avoid, 40, SeededRandom(trial))
        try:
            differ += mutant(universe, avoid, 40, SeededRandom(trial), chunk=2) != want
        except (OverflowError, IndexError, ValueError):  # a crash is a caught mutant too
            differ += 1
    assert differ > 0


def test_large_universe_and_errors_use_the_reference() -> None:
    big = 1 << 70
    want = sample_distinct_avoiding(big, [3, big], 30, SeededRandom(2))
    assert sample_distinct_avoiding_chunked(big, [3, big], 30, SeededRandom(2)) == want
    with pytest.raises(ValueError):
        sample_distinct_avoiding_chunked(5, [1, 2], 4, SeededRandom(0))
    with pytest.raises(ValueError):
        sample_distinct_avoiding_chunked(5, [2, 2], 1, SeededRandom(0))
    with pytest.raises(ValueError):
        sample_distinct_avoiding_chunked(5, [6], 1, SeededRandom(0))


def test_progress_names_only_public_fractions() -> None:
    msgs: list[str] = []
    sample_distinct_avoiding_chunked(1 << 64, [7, 9], 200, SeededRandom(0), progress=msgs.append)
    assert msgs == [f"empty bins: {10 * q}% of 200 draws" for q in range(1, 10)]


@pytest.mark.parametrize("avoid", [[], [1], [9, 10, 11], list(range(2, 300, 3))])
def test_every_draw_runs_the_same_fixed_rounds(avoid: list[int]) -> None:
    """Strict time: one searchsorted and exactly search_rounds(B) in-chunk rounds per draw, whatever u and T."""
    from dpspark.audit.timing import count_line_hits
    from dpspark.mechanisms.histogram.distinct_fast import _count_below, search_rounds

    for chunk in (2, 512):
        with count_line_hits([(_count_below, "mid = (lo + hi) >> 1")]) as hits:
            sample_distinct_avoiding_chunked(1000, avoid, 50, SeededRandom(len(avoid)), chunk=chunk)
        assert hits["_count_below"] == 50 * search_rounds(chunk)
