"""Exact checks of the strict-time discrete Gaussian's implemented law (small sigma, rationals).

The pmf is rebuilt from scaled-CDF differences and compared with the stored
integer weights; every stored Gaussian floor is checked against an independent
arb ball; the binary search is instrumented to make the same number of CDF
evaluations for every u; the vectorised path is checked against ``sample``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspark.noise import DiscreteGaussian, certify
from dpspark.noise import dgauss_weights as dw
from dpspark.noise.dgauss_certify import verify_weights
from dpspark.rng import SeededRandom

SMALL = [
    dict(sigma="1"),
    dict(sigma="3/2"),
    dict(sigma="2", data_radius=5),
    dict(sigma="5", bits=64),
    dict(sigma="7/3", data_radius=2, bits=96),
]


@pytest.fixture(scope="module", params=SMALL, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def mech(request: pytest.FixtureRequest) -> DiscreteGaussian:
    return DiscreteGaussian(**request.param)


def test_pmf_from_cdf_equals_weights(mech: DiscreteGaussian) -> None:
    pmf = mech.pmf()
    assert len(pmf) == mech.m == 2 * mech.R + 1
    assert pmf == [Fraction(mech.weight(y), mech.d) for y in range(-mech.R, mech.R + 1)]
    assert sum(pmf) == 1 and mech.d == 1 << mech.bits  # d a power of two: rng.uniform(d) is exact
    assert pmf == pmf[::-1]  # symmetric, so E[Z] = 0 exactly
    assert min(pmf) > 0  # the uniform floor: equal support for every shift
    assert all(mech.weight(y) == mech.floor for y in range(mech.T + 1, mech.R + 1))


def test_weights_inside_certified_intervals(mech: DiscreteGaussian) -> None:
    assert verify_weights(mech) == []
    with dw.precision(mech.bits + 64):
        for y in range(mech.T + 1):
            g = dw.gauss_arb(mech.W, mech.sigma, y)
            assert g >= mech.gaussian_floor(y) and g < mech.gaussian_floor(y) + 1


def test_sample_is_generalised_inverse_at_every_edge(mech: DiscreteGaussian) -> None:
    us = []
    for y in range(-mech.R, mech.R + 1):
        lo, hi = mech.scaled_cdf(y - 1) + 1, mech.scaled_cdf(y)
        assert lo <= hi
        assert mech.sample(lo) == y and mech.sample(hi) == y and mech.sample((lo + hi) // 2) == y
        us += [lo, hi, (lo + hi) // 2]
    assert list(mech.inverse_many(us)) == [mech.sample(u) for u in us]


def test_equal_step_counts(mech: DiscreteGaussian, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = mech._cdf

    def counting(p: int) -> int:
        calls.append(p)
        return real(p)

    monkeypatch.setattr(mech, "_cdf", counting)
    rng = SeededRandom("steps")
    us = [1, mech.d] + [mech.scaled_cdf(y) + e for y in range(-mech.R, mech.R) for e in (0, 1)]
    us += [rng.uniform(mech.d) for _ in range(200)]
    counts = set()
    for u in us:
        calls.clear()
        mech.sample(u)
        counts.add(len(calls))
    assert counts == {mech.rounds}
    assert mech.rounds == (mech.m - 1).bit_length()


def test_draw_many_is_k_draws() -> None:
    for kw in (dict(sigma="3"), dict(sigma="3", data_radius=40), dict(sigma="1000")):
        mech = DiscreteGaussian(**kw)
        a = mech.draw_many(500, SeededRandom(7))
        rng = SeededRandom(7)
        assert a.dtype == np.int64
        assert list(a) == [mech.draw(rng) for _ in range(500)]
    # floor-region edges through the vectorised path (u near F(-T-1) and F(T))
    mech = DiscreteGaussian(sigma="2", data_radius=1000)
    edges = []
    for y in (-mech.R, -mech.R + 1, -mech.T - 2, -mech.T - 1, -mech.T, mech.T, mech.T + 1, mech.R - 1, mech.R):
        edges += [mech.scaled_cdf(y - 1) + 1, mech.scaled_cdf(y), mech.scaled_cdf(y) + (y < mech.R)]
    assert list(mech.inverse_many(edges)) == [mech.sample(u) for u in edges]


def test_float_weights_mutant_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gaussian floors computed in floating point land outside their certified intervals."""

    def float_table(W: int, sigma: Fraction, T: int, P: int) -> list[int]:
        s = float(sigma)  # the mutant: floats in the weights
        return [int(W * math.exp(-y * y / (2 * s * s))) for y in range(T + 1)]

    monkeypatch.setattr(dw, "gauss_floor_table", float_table)
    mech = DiscreteGaussian(sigma="3")
    bad = verify_weights(mech)
    assert bad, "float weights passed the interval check"
    cert = certify(mech, 2)
    assert not cert.ok and cert.weights_verified is False


def test_exact_parameters() -> None:
    with pytest.raises(TypeError, match="float"):
        DiscreteGaussian(sigma=2.0)  # type: ignore[arg-type]
    for bad in ("0", "1/2", "10001"):
        with pytest.raises(ValueError):
            DiscreteGaussian(sigma=bad)
    assert DiscreteGaussian(sigma="0.5e1").sigma == 5


def test_add_wraps_into_public_window() -> None:
    mech = DiscreteGaussian(sigma="2", data_radius=10)
    rng = SeededRandom(3)
    xs = np.arange(-10, 11, dtype=np.int64)
    out = mech.add_many(xs, rng)
    assert np.all(np.abs(out) <= mech.R)
    assert np.all(np.abs(out - xs) <= mech.T)  # |x - centre| <= data_radius: no wrap in the body
    assert mech.wrap(mech.R + 1) == -mech.R and mech.wrap(-mech.R - 1, centre=0) == mech.R
    assert mech.add(5, SeededRandom(1), centre=100) - 100 in range(-mech.R, mech.R + 1)
