"""CompactHistogram construction, lookups, release object and exact statements (m = 64/128)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpspark.mechanisms.compact import (
    compact_histogram,
    compact_mechanism,
    conditioned_polynomial,
    evaluate,
    rebuild_sampler,
)
from dpspark.mechanisms.compact.evaluation import MULTIPOINT_MIN
from dpspark.noise import GeoSample
from dpspark.gf import GF2m, horner, modulus_int
from dpspark.mechanisms.histogram.basic import noisy_counts
from dpspark.rng import SeededRandom, bias_epsilon


def test_conditioned_polynomial_hits_its_points() -> None:
    field = GF2m(64)
    gen = np.random.default_rng(5)
    for k, ell in [(0, 5), (1, 5), (4, 5), (37, 100)]:
        pts = field.from_int(list(range(3, 3 + 7 * k, 7))).reshape(k, 1)
        vals = gen.integers(0, 2**64, (k, 1), dtype=np.uint64)
        p = conditioned_polynomial(field, ell, pts, vals, SeededRandom(k))
        assert p.shape == (ell, 1)
        for i in range(k):
            assert np.array_equal(horner(field, p, pts[i]), vals[i])
    with pytest.raises(ValueError):
        conditioned_polynomial(field, 3, field.from_int([1, 2, 3]), field.from_int([1, 2, 3]), SeededRandom(0))


def test_conditioned_polynomial_r_is_uniform_part() -> None:
    """Same targets, different randomness: different p, same values at S (R is really random)."""
    field = GF2m(128)
    pts = field.from_int([1, 2]).reshape(2, 2)
    vals = field.from_int([5, 6]).reshape(2, 2)
    a = conditioned_polynomial(field, 6, pts, vals, SeededRandom(1))
    b = conditioned_polynomial(field, 6, pts, vals, SeededRandom(2))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("n,universe", [(60, 2**64), (1000, 2**64), (200, 2**100)])
def test_release_round_trip(n: int, universe: int) -> None:
    mech = compact_mechanism(n, universe, "1", "1/20")
    gen = np.random.default_rng(n)
    keys = sorted({int(x) for x in gen.integers(0, 2**62, n // 4)})
    counts = {k: 1 + (i % 3) for i, k in enumerate(keys)}
    while sum(counts.values()) > n:
        counts.popitem()
    release = compact_histogram(counts, universe, n, mech, SeededRandom(7), epsilon2="1/10")
    # the first draws of the construction are the noisy counts, in ascending key order
    expected = noisy_counts(sorted(counts), counts, mech, SeededRandom(7))
    assert release.lookup(sorted(counts)) == expected
    assert release.coefficients.shape == (n + 1, release.m // 64)  # l = n + 1 whatever |S| is
    assert release.ell == n + 1 and release.modulus == modulus_int(release.m)
    assert release.m == (128 if universe <= 2**128 else 192)
    # lookups of other keys lie in [0, n]; single and batched lookups agree (Horner vs multipoint on the
    # same batch: tests/unit/gf/test_gf_subproduct.py::test_compact_lookup_paths_agree)
    others = [int(x) for x in gen.integers(2**62, 2**63, MULTIPOINT_MIN + 10)]
    batch = release.field_values(others)
    singles = [release.field_values([x])[0] for x in others[:5]]
    small = release.field_values(others[:20])
    assert batch[:5] == singles and batch[:20] == small
    assert all(0 <= v <= n for v in release.lookup(others[:50]))
    # a reader rebuilds G from the exact parameters alone
    g2 = rebuild_sampler(release.parameters)
    assert [g2.sample(u) for u in batch[:50]] == release.lookup(others[:50])


def test_empty_dataset_and_filler_free_small_universe() -> None:
    """|X| = 3 < l = 11: no filler points are needed; the empty dataset gives a uniform p."""
    mech = compact_mechanism(10, 3, "1")
    r = compact_histogram({}, 3, 10, mech, SeededRandom(3), epsilon2="1/10")
    assert r.coefficients.shape == (11, r.m // 64)
    r2 = compact_histogram({0: 4, 2: 6}, 3, 10, mech, SeededRandom(4), epsilon2="1/10")
    assert r2.lookup([0, 2]) == noisy_counts([0, 2], {0: 4, 2: 6}, mech, SeededRandom(4))


def test_privacy_statement_exact() -> None:
    mech = compact_mechanism(1000, 2**64, "1")
    r = compact_histogram({1: 1}, 2**64, 1000, mech, SeededRandom(0), epsilon2="1/10")
    det = r.privacy_detail
    eta = Fraction(mech.d, (1 << r.m) * int(mech._dprime))
    assert (det.eps_a, det.eps_b) == (eta / (1 - eta), eta)
    assert det.sampler_epsilon == eta / (1 - eta) <= Fraction(1, 10)
    assert det.rng_draws_per_bin == 2
    assert r.privacy.exp_eps == mech.exp_eps
    assert r.privacy.bias_epsilon == eta / (1 - eta) + bias_epsilon(2, 128)
    assert r.privacy.delta == 0
    assert det.replacement_extra() == eta / (1 - eta) + eta + 2 * bias_epsilon(2, 128)
    assert r.accuracy.a_per_query == mech.accuracy(Fraction(1, 20))
    assert r.accuracy.a_simultaneous == mech.accuracy(Fraction(1, 20) / 2**64)
    assert mech.gamma < Fraction(1, 20) / 2**64


def test_input_errors() -> None:
    mech = compact_mechanism(10, 2**64, "1")
    rng = SeededRandom(0)
    with pytest.raises(ValueError, match="more than the declared bound"):
        compact_histogram({1: 6, 2: 5}, 2**64, 10, mech, rng, epsilon2="1/10")
    with pytest.raises(ValueError, match="outside"):
        compact_histogram({2**64: 1}, 2**64, 10, mech, rng, epsilon2="1/10")
    with pytest.raises(ValueError, match="differs"):
        compact_histogram({1: 1}, 2**64, 11, mech, rng, epsilon2="1/10")
    with pytest.raises(ValueError, match="unsupported"):
        compact_histogram({1: 1}, 2**64, 10, mech, rng, epsilon2="1/10", m=63)
    geo = GeoSample(n=120, exp_eps=Fraction(3, 2))
    with pytest.raises(ValueError, match="no supported field degree"):
        compact_histogram({1: 1}, 2**16, 120, geo, rng, epsilon2="1/10", m=64)
    r = compact_histogram({1: 1}, 2**64, 10, mech, rng, epsilon2="1/10")
    with pytest.raises(ValueError):
        r.lookup([2**64])
    with pytest.raises(ValueError):
        evaluate(GF2m(64), r.coefficients[:, :1] if r.m == 64 else GF2m(64).zeros(3), [2**64])
