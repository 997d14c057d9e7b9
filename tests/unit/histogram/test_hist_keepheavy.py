"""KeepHeavy (Alg 6.1) vs its exact simulation (Alg 6.4): identical output laws on |X| = 5, n = 2."""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import pytest
from tests.support.hist_support import EnumeratingRandom, exact_law

from dpspark.noise import GeoSample
from dpspark.mechanisms.histogram import keepheavy_reference, keepheavy_simulation
from dpspark.mechanisms.histogram.inputs import keep_strictly_heavy
from dpspark.mechanisms.histogram.ordstat import ordsample_pmf
from dpspark.rng import SeededRandom

MECH = GeoSample(n=2, exp_eps=Fraction(2))  # d = 6: every draw is enumerable
DATASETS = [{}, {0: 1}, {0: 2}, {1: 1, 3: 1}, {4: 2}]


@cache
def reference_law(key: str) -> dict[tuple[tuple[int, ...], tuple[int, ...]], Fraction]:
    """Exact law of Alg 6.1 on the dataset named by ``key`` (6^5 randomness paths)."""
    data = next(d for d in DATASETS if str(d) == key)
    return exact_law(lambda r: tuple(map(tuple, keepheavy_reference(data, 5, 2, MECH, r))))


def exact_order_statistics_by_weight(m: int, t: int, rng: EnumeratingRandom) -> list[int]:
    """Exact OrdSample drawn through rng.choose from its exact law (checked against brute force elsewhere)."""
    law = _ordsample_law(m, t)
    return list(law[rng.choose([p for _, p in law])][0])


@cache
def _ordsample_law(m: int, t: int) -> list[tuple[tuple[int, ...], Fraction]]:
    return sorted(ordsample_pmf(m, t, lambda v: MECH.scaled_cdf(0, v), MECH.n).items())


@pytest.mark.parametrize("data", DATASETS, ids=[str(d) for d in DATASETS])
def test_simulation_law_equals_keepheavy_law(data: dict[int, int]) -> None:
    reference = reference_law(str(data))
    simulated = exact_law(
        lambda r: (
            lambda rel: (rel.indices, rel.counts)
        )(keepheavy_simulation(data, 5, 2, MECH, r, order_statistics=exact_order_statistics_by_weight))
    )
    assert simulated == reference
    assert sum(reference.values()) == 1
    assert ((), ()) in reference  # ties at the top: the empty histogram has positive probability


def test_keepheavy_is_exactly_eps_tilde_dp_under_add_remove() -> None:
    laws = {str(d): reference_law(str(d)) for d in DATASETS}
    pairs = [("{}", "{0: 1}"), ("{0: 1}", "{0: 2}")]
    worst = Fraction(0)
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            for out in set(laws[x]) | set(laws[y]):
                px, py = laws[x].get(out, Fraction(0)), laws[y].get(out, Fraction(0))
                assert px <= MECH.exp_eps * py
                if py:
                    worst = max(worst, px / py)
    assert worst > 1  # the check is not vacuous


def test_keep_strictly_heavy_drops_ties_and_sorts() -> None:
    pairs = [(9, 3), (2, 5), (7, 3), (1, 0), (5, 5)]
    assert keep_strictly_heavy(pairs, 3) == ([2, 5], [5, 5])
    assert keep_strictly_heavy(pairs, 2) == ([], [])  # (2,5),(5,5) tie with the 2nd largest
    with pytest.raises(ValueError):
        keep_strictly_heavy(pairs, 6)


def test_simulation_output_is_canonically_ordered_and_statement_is_exact() -> None:
    mech = GeoSample(n=6, exp_eps=Fraction(3, 2))
    data = {40: 3, 3: 2, 17: 1}
    for seed in range(5):
        rel = keepheavy_simulation(data, 50, 6, mech, SeededRandom(seed))
        assert list(rel.indices) == sorted(rel.indices) and len(set(rel.indices)) == len(rel.indices)
        assert all(1 <= y <= 6 for y in rel.counts) and len(rel.indices) <= 6
        assert rel.privacy.exp_eps == Fraction(3, 2) and rel.privacy.delta == 0
    beta = Fraction(1, 20)
    half = beta / 2
    assert rel.accuracy.a_per_query == mech.accuracy(half)
    assert rel.accuracy.a_simultaneous == 2 * mech.accuracy(half / 50)
    assert rel.accuracy.per_query_above == rel.accuracy.a_simultaneous
    assert rel.accuracy.beta_per_query == beta and rel.accuracy.beta_simultaneous == half


def test_keepheavy_error_paths() -> None:
    with pytest.raises(ValueError):
        keepheavy_simulation({}, 4, 2, MECH, SeededRandom(0))  # |X| < 2n+1
    with pytest.raises(ValueError):
        keepheavy_reference({}, 2, 2, MECH, SeededRandom(0))  # |X| < n+1
    with pytest.raises(ValueError):
        keepheavy_simulation({0: 3}, 5, 2, MECH, SeededRandom(0))  # more than n units
    with pytest.raises(ValueError):
        keepheavy_simulation({}, 5, 3, MECH, SeededRandom(0))  # mechanism.n != n
