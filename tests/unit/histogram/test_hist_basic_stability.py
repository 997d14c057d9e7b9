"""BasicHistogram and StabilityHistogram: exact laws, exact privacy under add/remove, thresholds, errors."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from tests.support.hist_support import exact_law

from dpspark.noise import FastSample, GeoSample
from dpspark.mechanisms.histogram import basic_histogram, stability_histogram, stability_mechanism, stability_threshold
from dpspark.rng import SeededRandom

MECH = GeoSample(n=2, exp_eps=Fraction(2))  # d = 6


def basic_law(data: dict[int, int]) -> dict[tuple[tuple[int, ...], tuple[int, ...]], Fraction]:
    return exact_law(lambda r: (lambda rel: (rel.indices, rel.counts))(basic_histogram(data, [2, 0, 1], 4, 2, MECH, r)))


def test_basic_law_is_the_product_of_counting_pmfs() -> None:
    data = {0: 1, 3: 1}  # bin 3 is outside the public set and ignored
    law = basic_law(data)
    pmfs = [MECH.pmf(c) for c in (1, 0, 0)]
    assert len(law) == 27
    for (idx, ys), p in law.items():
        assert idx == (0, 1, 2)
        assert p == pmfs[0][ys[0]] * pmfs[1][ys[1]] * pmfs[2][ys[2]]


def test_basic_is_exactly_eps_tilde_dp_under_add_remove() -> None:
    worst = Fraction(0)
    for a, b in (({}, {0: 1}), ({0: 1}, {0: 2}), ({0: 1}, {0: 1, 1: 1})):
        la, lb = basic_law(a), basic_law(b)
        for x, y in ((la, lb), (lb, la)):
            for r, p in x.items():
                assert p <= MECH.exp_eps * y[r]
                worst = max(worst, p / y[r])
    assert worst == MECH.exp_eps  # tight


def approx_dp_gap(x: dict, y: dict, exp_eps: Fraction) -> Fraction:  # type: ignore[type-arg]
    """The smallest delta with Pr[X in T] <= e^eps Pr[Y in T] + delta for all T."""
    return sum((max(Fraction(0), p - exp_eps * y.get(r, Fraction(0))) for r, p in x.items()), Fraction(0))


def test_stability_is_eps_delta_dp_with_the_exact_tail() -> None:
    mech = GeoSample(n=4, exp_eps=Fraction(2))  # d = 24
    delta = Fraction(1, 10)
    tau = stability_threshold(mech, delta)
    tail = Fraction(mech.d - mech.scaled_cdf(1, tau), mech.d)
    assert tail <= delta < Fraction(mech.d - mech.scaled_cdf(1, tau - 1), mech.d)

    def law(data: dict[int, int]) -> dict:  # type: ignore[type-arg]
        return exact_law(lambda r: (lambda rel: (rel.indices, rel.counts))(stability_histogram(data, 9, 4, mech, delta, r)))

    worst = Fraction(0)
    for a, b in (({}, {0: 1}), ({0: 1}, {0: 2}), ({0: 1, 1: 1}, {0: 1}), ({0: 3}, {0: 4})):
        la, lb = law(a), law(b)
        for x, y in ((la, lb), (lb, la)):
            gap = approx_dp_gap(x, y, mech.exp_eps)
            assert gap <= tail
            worst = max(worst, gap)
    assert worst == tail  # attained on {} vs {0: 1}
    rel = stability_histogram({0: 1}, 9, 4, mech, delta, SeededRandom(0))
    assert rel.privacy.delta == tail * (1 + Fraction(2, 1 << 128))


def test_stability_threshold_brute_force() -> None:
    mech = GeoSample(n=6, exp_eps=Fraction(3, 2))
    for delta in (Fraction(1, 2), Fraction(1, 10), Fraction(1, 100), Fraction(1, 1000)):
        need = [b for b in range(7) if Fraction(mech.d - mech.scaled_cdf(1, b), mech.d) <= delta]
        assert stability_threshold(mech, delta) == need[0]


def test_stability_mechanism_splits_delta() -> None:
    mech = stability_mechanism(1000, "1", "2^-40")
    assert mech.gamma <= Fraction(1, 2 << 40)
    assert mech.exp_eps <= Fraction(2718281828459045235, 10**18)  # e^eps~ <= e^1
    tau = stability_threshold(mech, "2^-40")
    assert 0 < tau < 1000
    rel = stability_histogram({5: 400, 6: 1}, 1 << 64, 1000, mech, "2^-40", SeededRandom(1))
    assert rel.indices == (5,) and abs(rel.counts[0] - 400) <= rel.accuracy.a_simultaneous
    assert rel.privacy.delta <= Fraction(1, 1 << 40) * 2


def test_inputs_accept_arrays_and_release_canonically() -> None:
    mech = GeoSample(n=50, exp_eps=Fraction(2))
    idx = np.array([40, 3, 17], dtype=np.int64)
    cnt = np.array([20, 10, 5], dtype=np.int64)
    a = basic_histogram((idx, cnt), [40, 17, 3, 8], 64, 50, mech, SeededRandom(4))
    b = basic_histogram({40: 20, 3: 10, 17: 5}, [40, 17, 3, 8], 64, 50, mech, SeededRandom(4))
    assert a.indices == b.indices == (3, 8, 17, 40) and a.counts == b.counts
    json.dumps(a.describe())
    assert a.accuracy.a_per_query == mech.accuracy("1/20")
    assert a.accuracy.a_simultaneous == mech.accuracy(Fraction(1, 80))
    assert a.privacy.delta == 0 and a.privacy.exp_eps == Fraction(2)


def test_error_paths_do_not_leak_values() -> None:
    rng = SeededRandom(0)
    secret = 987654
    with pytest.raises(ValueError) as err:
        basic_histogram({secret: 1}, [0], 10, 2, MECH, rng)
    assert str(secret) not in str(err.value)
    with pytest.raises(ValueError) as err:
        basic_histogram({1: 3}, [0], 10, 2, MECH, rng)
    assert "3" not in str(err.value)
    with pytest.raises(ValueError):
        basic_histogram({1: -1}, [0], 10, 2, MECH, rng)
    with pytest.raises(ValueError):
        basic_histogram(([1, 1], [1, 1]), [0], 10, 2, MECH, rng)
    with pytest.raises(ValueError):
        basic_histogram(([1, 2], [1]), [0], 10, 2, MECH, rng)
    with pytest.raises(TypeError):
        basic_histogram({1.0: 1}, [0], 10, 2, MECH, rng)
    with pytest.raises(TypeError):
        basic_histogram({}, [0], 10, 2, MECH, rng, beta=0.05)
    with pytest.raises(ValueError):
        basic_histogram({}, [10], 10, 2, MECH, rng)
    with pytest.raises(TypeError):
        basic_histogram({}, [1.5], 10, 2, MECH, rng)
    with pytest.raises(ValueError):
        basic_histogram({}, [0], 10, 3, MECH, rng)
    with pytest.raises(TypeError):
        basic_histogram({}, [0], 10, 2, object(), rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        stability_histogram({}, 10, 2, FastSample(n=2, exp_eps=Fraction(2), gamma="1/2"), "1/1000", rng)
