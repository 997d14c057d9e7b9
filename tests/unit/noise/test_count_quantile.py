"""Exact checks of :mod:`dpspark.noise.count_quantile`: the whole mechanism's output law on neighbouring inputs.

Small parameters (cap 3, three buckets): every noisy histogram is enumerated, every probability is a Fraction,
and the privacy ratio of the chosen limit is compared exactly against p/q (the bias of the one changed draw
is paid on top, in ``epsilon()``; the pmf here is the ideal uniform's).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from dpspark.errors import ParameterError
from dpspark.noise.count_quantile import CountQuantile, NoisyCount, bucket_of, power_histogram
from dpspark.rng import SeededRandom, bias_epsilon

B, CAP = 3, 3


def _datasets() -> list[tuple[int, ...]]:
    """Every multiset of at most 3 per-unit counts in 1..5 (5 lands in the top bucket with 3 and 4)."""
    out = []
    for size in range(4):
        out += list(itertools.combinations_with_replacement(range(1, 6), size))
    return out


def _worst_ratio(q: CountQuantile, histogram) -> Fraction:
    """max over neighbours (one unit removed) and limits of Pr[limit | D] / Pr[limit | D'], both directions."""
    worst = Fraction(0)
    for data in _datasets():
        for i in range(len(data)):
            other = data[:i] + data[i + 1:]
            a, b = q.law(histogram(np.array(data, dtype=np.int64), B)), q.law(histogram(np.array(other, dtype=np.int64), B))
            for limit in set(a) | set(b):
                pa, pb = a.get(limit, Fraction(0)), b.get(limit, Fraction(0))
                assert pa and pb, "a limit possible on one side only"
                worst = max(worst, pa / pb, pb / pa)
    return worst


@pytest.mark.parametrize("epsilon", ["1/2", "1"])
def test_chosen_limit_law_is_private_on_every_neighbour(epsilon: str) -> None:
    q = CountQuantile(epsilon, buckets=B, fraction="9/10", cap=CAP)
    worst = _worst_ratio(q, power_histogram)
    assert worst <= q.count.exp_eps  # the claim: ratio <= p/q per unit
    assert q.epsilon().extra == bias_epsilon(1)
    assert q.epsilon() <= Fraction(epsilon) and q.epsilon() > Fraction(epsilon) * Fraction(99, 100)  # certified, tight


def test_a_cumulative_histogram_is_caught() -> None:
    """Mutant: a unit counted in every bucket at or above its own moves up to B coordinates: the ratio exceeds p/q."""
    q = CountQuantile("1", buckets=B, fraction="9/10", cap=CAP)

    def cumulative(values, buckets):
        own = power_histogram(values, buckets)
        return [sum(own[: j + 1]) for j in range(buckets)]

    assert _worst_ratio(q, cumulative) > q.count.exp_eps


def test_buckets_are_powers_of_two() -> None:
    v = np.array([1, 2, 3, 4, 5, 8, 9, 1 << 30], dtype=np.int64)
    assert bucket_of(v, 5).tolist() == [0, 1, 2, 2, 3, 3, 4, 4]
    assert power_histogram(v, 5) == [1, 1, 2, 2, 2]


def test_choice_is_the_least_edge_reaching_the_fraction() -> None:
    q = CountQuantile("1", buckets=4, fraction="9/10")
    assert q.choose([0, 0, 0, 0]) == 1
    assert q.choose([90, 5, 5, 0]) == 1
    assert q.choose([89, 5, 6, 0]) == 2
    assert q.choose([0, 0, 0, 7]) == 8
    assert CountQuantile("1", buckets=4, fraction="1").choose([50, 0, 1, 0]) == 4


def test_release_applies_the_choice_to_its_own_draws() -> None:
    q = CountQuantile("1", buckets=4, fraction="9/10")
    hist = [1000, 40, 30, 5]
    limit, noisy = q.release(hist, SeededRandom(7))
    assert noisy == q.count.release_many(hist, SeededRandom(7))
    assert limit == q.choose(noisy)
    with pytest.raises(ParameterError):
        q.release([1, 2], SeededRandom(7))


def test_noisy_count_error_bar_is_the_exact_tail() -> None:
    c = NoisyCount("1", cap=CAP)
    beta = Fraction(1, 4)
    a = c.error(beta)
    worst = max(sum(p for z, p in enumerate(c.mech.pmf(x)) if abs(z - x) > a) for x in range(CAP + 1))
    worst_below = max(sum(p for z, p in enumerate(c.mech.pmf(x)) if abs(z - x) > a - 1) for x in range(CAP + 1))
    assert worst <= beta < worst_below


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(TypeError):
        NoisyCount(0.5)
    with pytest.raises(ParameterError):
        NoisyCount("0")
    with pytest.raises(ParameterError):
        CountQuantile("1", buckets=0, fraction="1/2")
    with pytest.raises(ParameterError):
        CountQuantile("1", buckets=3, fraction="3/2")
