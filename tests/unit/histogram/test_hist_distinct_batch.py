"""Offline Alg A.3 (distinct_batch): the reference's outputs for the same draws, extremes, the dispatch, mutants."""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest

from dpspark.mechanisms.histogram import distinct_batch
from dpspark.mechanisms.histogram.distinct import sample_distinct_avoiding
from dpspark.mechanisms.histogram.distinct_batch import free_ranks, sample_distinct_avoiding_batched
from dpspark.mechanisms.histogram.distinct_fast import BATCH_MIN, sample_distinct_avoiding_chunked
from dpspark.rng import SeededRandom
from tests.support.mutants import mutated
from tests.unit.histogram.test_hist_distinct_fast import Scripted


def brute_free_ranks(u: list[int]) -> list[int]:
    """The definition: x_i is the u_i-th element (0-based) of the naturals not yet output."""
    out: list[int] = []
    for v in u:
        x = v
        while sum(1 for y in out if y <= x) + v != x or x in out:  # test reference only: tiny inputs
            x = v + sum(1 for y in out if y <= x)
        out.append(x)
    return out


def _instances(gen: random.Random, trials: int, most: int):  # type: ignore[no-untyped-def]
    for trial in range(trials):
        universe = gen.choice([1, 5, 17, 64, 1000, 1 << 20, (1 << 64) - 3, 1 << 64])
        avoid = sorted({gen.randrange(1, universe + 1) for _ in range(gen.randrange(0, min(universe, 60)))})
        yield trial, universe, avoid, gen.randrange(0, min(universe - len(avoid), most) + 1)


def test_free_ranks_is_the_definition() -> None:
    gen = random.Random(5)  # test-input generation only
    for r in list(range(0, 40)) + [64, 65, 130, 200]:
        space = gen.choice([r + 1, 2 * r + 3, 1000])
        u = [gen.randrange(0, space - i) for i in range(r)]
        assert free_ranks(np.array(u, dtype=np.uint64)).tolist() == brute_free_ranks(u)


def test_identical_to_reference_on_random_instances() -> None:
    gen = random.Random(1)  # test-input generation only
    for trial, universe, avoid, r in _instances(gen, 300, 400):
        want = sample_distinct_avoiding(universe, avoid, r, SeededRandom(trial))
        assert sample_distinct_avoiding_batched(universe, avoid, r, SeededRandom(trial)) == want


def test_chunked_dispatches_large_r_with_the_same_outputs() -> None:
    """From BATCH_MIN draws the chunked sampler returns the offline outputs: still the reference's."""
    avoid = [3, 9, 1 << 40, (1 << 64) - 1]
    for universe, r in (((1 << 64) - 3, BATCH_MIN), (1 << 64, BATCH_MIN + 77), (BATCH_MIN + 50, BATCH_MIN + 40)):
        want = sample_distinct_avoiding(universe, [a for a in avoid if a <= universe], r, SeededRandom(r))
        got = sample_distinct_avoiding_chunked(universe, [a for a in avoid if a <= universe], r, SeededRandom(r))
        assert got == want and len(set(got)) == r


@pytest.mark.parametrize("avoid", [[], [1], [1 << 64], [1, 2, 3, (1 << 64) - 1, 1 << 64]])
def test_extreme_ranks_at_the_top_of_a_2_to_64_universe(avoid: list[int]) -> None:
    want = sample_distinct_avoiding(1 << 64, avoid, 150, Scripted())  # type: ignore[arg-type]
    assert sample_distinct_avoiding_batched(1 << 64, avoid, 150, Scripted()) == want  # type: ignore[arg-type]


def _mutant(function: str, old: str, new: str):  # type: ignore[no-untyped-def]
    """distinct_batch with one source line of ``function`` changed (a plausible bug)."""
    return mutated(distinct_batch, function, old, new)


@pytest.mark.parametrize(
    ("function", "old", "new"),
    [
        ("_merge_pair", 'side="right"', 'side="left"'),  # a tie L_k - k = v not counted
        ("_merge_level", "np.concatenate([below, right]", "np.concatenate([below + U64(1), right]"),  # L_k - k < v
        ("_merge_level", "left - np.arange(s, dtype=U64)", "left"),  # free counts without the taken ones
        ("sample_distinct_avoiding_batched", 'side="right"', 'side="left"'),  # an avoided neighbour missed
        ("free_ranks", "_merge_pair(parts[i], parts[i + 1])", "_merge_pair(parts[i + 1], parts[i])"),  # order swapped
        ("_merge_pair", "values[at], index[at] = rv + shift.astype(U64), ri", "values[at], index[at] = rv, ri"),
    ],
)
def test_mutants_are_caught(function: str, old: str, new: str) -> None:
    namespace = _mutant(function, old, new)
    if function != "sample_distinct_avoiding_batched":  # rebind the callers to the mutant helper
        for name in ("free_ranks", "sample_distinct_avoiding_batched"):
            if name != function:
                exec(compile(inspect.getsource(getattr(distinct_batch, name)), "<caller>", "exec"), namespace)
    mutant = namespace["sample_distinct_avoiding_batched"]
    gen = random.Random(3)  # test-input generation only
    differ = 0
    for trial, universe, avoid, r in _instances(gen, 60, 300):
        want = sample_distinct_avoiding(universe, avoid, r, SeededRandom(trial))
        try:
            differ += mutant(universe, avoid, r, SeededRandom(trial)) != want
        except (OverflowError, IndexError, ValueError):  # a crash is a caught mutant too
            differ += 1
    assert differ > 0


def test_progress_is_the_chunked_samplers() -> None:
    """The same public lines as the chunked sampler gives below BATCH_MIN, and the same stream in tenths."""
    msgs: list[str] = []
    r = BATCH_MIN + 3
    got = sample_distinct_avoiding_chunked(1 << 64, [7, 9], r, SeededRandom(0), progress=msgs.append)
    assert msgs == [f"empty bins: {10 * q}% of {r} draws" for q in range(1, 10)]
    assert got == sample_distinct_avoiding(1 << 64, [7, 9], r, SeededRandom(0))
