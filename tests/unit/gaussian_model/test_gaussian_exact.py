"""Exact checks of the Gaussian learner: sensitivities at the norm-test boundary, kernels, noise plans, rho.

Everything here is exact integer arithmetic on the driver backend (no Spark, no statistics).
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import isqrt

import numpy as np
import pytest

from dpspark.engine.xxhash64 import hash_long
from dpspark.mechanisms.gaussian_model.covariance import PublicBounds, Run, kappa_schedule, pce
from dpspark.mechanisms.gaussian_model.exactops import exact_gram, exact_sq_norms, limb_bits
from dpspark.mechanisms.gaussian_model.fixed import Scales, chi2_threshold, identity, quantise_matrix
from dpspark.mechanisms.gaussian_model.mean import pme
from dpspark.mechanisms.gaussian_model.model_noise import plan_noise
from dpspark.mechanisms.gaussian_model.source import ArraySource, Moments, _apply, keyed_buckets, upper_pairs
from dpspark.noise.dgauss import l2_rho
from dpspark.noise.grid import grid_sensitivity
from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

KEY = bytes(range(16))


def _sq(v: list[int]) -> int:
    return sum(int(x) * int(x) for x in v)


def _diff(a: Moments, b: Moments) -> list[int]:
    return [x - y for x, y in zip(a.upper, b.upper)]


def _neighbours(rows: np.ndarray, extra: np.ndarray, buckets: int, bits: int = 0, source=ArraySource):  # type: ignore[no-untyped-def]
    """Sources over rows (ids 0..n-1) and rows + one unit (id n): add/remove neighbours."""
    n = rows.shape[0]
    a = source(rows, bits, KEY, buckets, np.arange(n))
    b = source(np.vstack([rows, extra[None, :]]), bits, KEY, buckets, np.arange(n + 1))
    return a, b


def _partner(rows: np.ndarray, buckets: int) -> int | None:
    """The unit sharing new unit n's bucket when that bucket holds exactly one unit."""
    n = rows.shape[0]
    bk = keyed_buckets(np.arange(n + 1), KEY, buckets)
    same = np.flatnonzero(bk[:n] == bk[n])
    return int(same[0]) if len(same) == 1 else None


def test_one_unit_moves_one_term_by_at_most_T_at_the_boundary() -> None:
    g = np.random.default_rng(1)
    d, buckets = 3, 40
    rows = g.integers(-50, 50, size=(40, d)).astype(np.float64)
    partner = _partner(rows, buckets)
    assert partner is not None  # this seed puts the new unit next to exactly one unit
    v = np.array([3, 4, 12])  # ||v||^2 = 169: the pair term sits exactly on the boundary
    extra = rows[partner] + v
    a, b = _neighbours(rows, extra, buckets)
    m = identity(d, 0)
    for t in (169, 168):  # kept exactly at T = ||y||^2, dropped one below
        delta = _diff(b.second_moments(m, t), a.second_moments(m, t))
        if t == 169:
            assert _sq(delta) == sum((v[i] * v[j]) ** 2 for i, j in upper_pairs(d))  # the whole term
            assert _sq(delta) <= t * t
        else:
            assert all(x == 0 for x in delta)
    assert abs(b.pair_count() - a.pair_count()) == 1


@pytest.mark.parametrize("seed", range(8))
def test_random_neighbours_every_aggregate_within_its_sensitivity(seed: int) -> None:
    g = np.random.default_rng(seed)
    d, n, buckets = 4, 60, 50
    rows = g.normal(0, 30, size=(n, d))
    extra = g.normal(0, 30, size=d)
    a, b = _neighbours(rows, extra, buckets, bits=3)
    mat = tuple(tuple(int(x) for x in row) for row in g.integers(-5, 6, size=(d, d)))
    ys = [_sq(list(np.array(mat) @ r)) for r in a._pairs] + [_sq(list(np.array(mat) @ r)) for r in b._pairs]
    # thresholds at the boundary of every norm test: each pair term's own ||y||^2, and one below
    for t in sorted(set(ys))[:: max(1, len(ys) // 6)] + [max(ys), max(ys) - 1]:
        delta = _diff(b.second_moments(mat, t), a.second_moments(mat, t))
        assert _sq(delta) <= t * t  # Frobenius norm of the upper triangle of one term <= ||y||^2 <= T
    assert abs(b.pair_count() - a.pair_count()) <= 1
    assert abs(b.single_count() - a.single_count()) <= 1
    hb = b.bin_counts(mat, [-4000] * d, 100, 81) - a.bin_counts(mat, [-4000] * d, 100, 81)
    assert int((hb.astype(object) ** 2).sum()) <= d
    r = 300
    sb = b.centred_sums(mat, [7] * d, r)
    sa = a.centred_sums(mat, [7] * d, r)
    assert _sq([x - y for x, y in zip(sb, sa)]) <= d * r * r


def _unpaired_variant(rows: np.ndarray, ids: np.ndarray, buckets: int) -> list[tuple]:
    """MUTANT: "singles whose bucket is not a pair" (one row, bucket size != 2) instead of "alone in the bucket"."""
    bk = keyed_buckets(ids, KEY, buckets)
    per_bucket = np.bincount(bk, minlength=buckets)
    uniq, inv, per_id = np.unique(ids, return_inverse=True, return_counts=True)
    keep = (per_id[inv] == 1) & (per_bucket[bk] != 2)
    return sorted(map(tuple, rows[keep].astype(np.int64)))


def test_unpaired_singles_move_by_one_unit_and_share_no_unit_with_a_pair() -> None:
    """Every add/remove neighbour (units with one or two rows) changes the unpaired singles by <= 1 row;
    they hold no unit of any pair. The variant "singles outside pair buckets" changes by 3 (caught)."""
    from collections import Counter

    g = np.random.default_rng(11)
    d, n, buckets = 2, 30, 24
    ids = np.r_[np.arange(n), [3, 7]].astype(np.int64)  # units 3 and 7 have two rows
    rows = (np.arange(len(ids) * d).reshape(-1, d) + 1000).astype(np.float64)  # distinct rows: a multiset diff
    base = ArraySource(rows, 0, KEY, buckets, ids)
    base.unpaired_singles()
    bk = keyed_buckets(ids, KEY, buckets)
    sizes = np.bincount(bk, minlength=buckets)
    alone_ids = {int(u) for u, b in zip(ids, bk) if sizes[b] == 1}
    paired_ids = {int(u) for u, b in zip(ids, bk) if sizes[b] == 2}
    assert alone_ids and paired_ids and not alone_ids & paired_ids
    assert base.single_count() == len(alone_ids)

    def diff(a: list[tuple], b: list[tuple]) -> int:
        ca, cb = Counter(a), Counter(b)
        return sum(((ca - cb) + (cb - ca)).values())

    worst = worst_variant = 0
    neighbours = [(np.vstack([rows, [[-1.0 - u, -2.0]] * r]), np.r_[ids, [n + u] * r]) for u in range(40) for r in (1, 2)]
    neighbours += [(rows[ids != u], ids[ids != u]) for u in range(n)]
    for nrows, nids in neighbours:
        other = ArraySource(nrows, 0, KEY, buckets, nids)
        other.unpaired_singles()
        worst = max(worst, diff(sorted(map(tuple, base._singles)), sorted(map(tuple, other._singles))))
        worst_variant = max(worst_variant, diff(_unpaired_variant(rows, ids, buckets), _unpaired_variant(nrows, nids, buckets)))
    assert worst == 1  # some neighbour moves exactly one unpaired single, none moves more
    assert worst_variant >= 3  # the mutant's sensitivity is 3: a unit joining a pair frees both its rows


def test_alone_count_lower_bound_holds_on_the_keyed_hash() -> None:
    """The McDiarmid lower bound (p = 1e-7) is below the realised unpaired count, for B = n and n < B."""
    from dpspark.mechanisms.gaussian_model.sample_size import alone_count_lower

    for n, b in ((50_000, 50_000), (50_000, 200_000)):
        src = ArraySource(np.zeros((n, 1)), 12, KEY, buckets=b)
        src.unpaired_singles()
        expected = n * (1 - 1 / b) ** (n - 1)  # report
        assert alone_count_lower(n, b, 1e-7) <= src.single_count() <= expected + 6 * math.sqrt(n)  # report


class FloatMembershipMutant(ArraySource):
    """MUTANT: a float preconditioner decides membership; the quantised one is applied afterwards."""

    float_matrix: np.ndarray
    bits: int

    def second_moments(self, matrix, norm_bound_sq):  # type: ignore[no-untyped-def]
        real = self._pairs.astype(np.float64) @ self.float_matrix.T  # report: the mutant's float test
        t_real = norm_bound_sq / float(1 << (2 * self.bits))  # report
        keep = (real * real).sum(axis=1) <= t_real  # report
        y = _apply(matrix, self._pairs)[keep]
        gram = exact_gram(y) if len(y) else [[0] * len(matrix) for _ in matrix]
        return Moments(int(keep.sum()), tuple(gram[i][j] for i, j in upper_pairs(len(matrix))))


def _max_excess(source_cls, float_matrix: np.ndarray, bits: int) -> int:  # type: ignore[no-untyped-def]
    """Largest ||Delta||^2 - T^2 over neighbours at T = floor(70 4^bits) (> 0: the sensitivity claim fails)."""
    rows = np.array([[0.0], [10.0], [25.0], [-3.0]])
    worst = -1
    for extra in (np.array([10.0]), np.array([-10.0]), np.array([0.0]), np.array([13.0])):
        buckets = 2
        a, b = _neighbours(rows, extra, buckets, source=source_cls)
        for s in (a, b):
            s.float_matrix, s.bits = float_matrix, bits
        t = 70 * (1 << (2 * bits))
        mat = quantise_matrix(float_matrix, bits)
        delta = _diff(b.second_moments(mat, t), a.second_moments(mat, t))
        worst = max(worst, _sq(delta) - t * t)
    return worst


def test_quantising_after_the_norm_test_is_flagged() -> None:
    a_float = np.array([[0.8]])  # quantised at 1 bit: round(1.6) / 2 = 1.0 > 0.8
    assert _max_excess(ArraySource, a_float, 1) <= 0  # the implementation: exact integer test
    assert _max_excess(FloatMembershipMutant, a_float, 1) > 0  # the mutant breaks the stated sensitivity


def test_exact_kernels_at_their_edges() -> None:
    g = np.random.default_rng(3)
    y = g.integers(-(2**62), 2**62, size=(200, 7))
    y[0] = 2**62 - 1
    y[1] = -(2**62)
    assert exact_sq_norms(y) == [sum(int(v) ** 2 for v in r) for r in y]
    rows = 1 << 13
    s = limb_bits(rows)
    assert rows * (1 << (2 * s)) < 1 << 53 <= rows * (1 << (2 * (s + 1)))  # the largest exact limb
    z = np.full((rows, 3), (1 << 40) - 1, dtype=np.int64)  # every partial sum at the limb bound
    z[:, 1] = -(1 << 40)
    gram = exact_gram(z)
    assert gram[0][0] == rows * ((1 << 40) - 1) ** 2 and gram[0][1] == -rows * ((1 << 40) - 1) * (1 << 40)
    small = g.integers(-(2**45), 2**45, size=(500, 4))
    ref = [[sum(int(a) * int(b) for a, b in zip(small[:, i], small[:, j])) for j in range(4)] for i in range(4)]
    assert exact_gram(small) == ref


def test_noise_plans_certify_rho_with_the_grid_term() -> None:
    small = plan_noise(10, 4, Fraction(1, 2), 1000)
    assert small.grid == 1 and small.rho == l2_rho(small.sampler, 2) <= Fraction(1, 2)
    t = 10**30
    big = plan_noise(15, t * t, Fraction(1, 10), 10**6 * t, "matrix")
    assert big.grid > 1
    assert big.sensitivity_grid == grid_sensitivity(big.grid, 15, l2_squared=t * t)
    assert big.rho == l2_rho(big.sampler, big.sensitivity_grid) <= Fraction(1, 10)
    # the grid adds at most 1 per coordinate: sqrt(D) on top of Delta / G (not a full shift per coordinate)
    assert big.sensitivity_grid < Fraction(t, big.grid) + 4


def test_composed_rho_is_the_sum_of_every_noise_addition() -> None:
    g = np.random.default_rng(5)
    d = 3
    x = g.multivariate_normal([3, 0, -2], np.diag([1.0, 30.0, 400.0]), size=3000)
    bounds = PublicBounds(d, Fraction(10), Fraction(400), Fraction(1, 100), 3000)
    scales = Scales(12, 12)
    run = Run(ArraySource(x, 12, KEY), scales, bounds, SeededRandom(2))
    pce(run, Fraction(1))
    assert len(run.noises) == 1 + len(kappa_schedule(bounds.kappa)) + 1
    assert run.rho == sum(n.rho for n in run.noises) <= 1
    pme(run, identity(d, 12), Fraction(400), Fraction(1, 2))
    assert run.rho == sum(n.rho for n in run.noises) <= Fraction(3, 2)
    # every covariance pass's stated sensitivity is its exact integer norm bound
    for p, noise in zip(run.passes, run.noises[1:]):
        if "norm_bound_sq" in p:
            assert noise.l2_sq == p["norm_bound_sq"] ** 2


def test_chi2_threshold_is_an_upper_bound() -> None:
    import math

    for d, m, beta in ((5, 1000, Fraction(1, 100)), (100, 10**7, Fraction(1, 10**6))):
        x = math.log(m / float(beta))  # report: comparison only
        assert float(chi2_threshold(d, m, beta)) >= d + 2 * math.sqrt(d * x) + 2 * x  # report
    assert isqrt(4) == 2


def test_largest_possible_sum_fits_decimal38_at_the_configured_scale() -> None:
    from dpspark.mechanisms.gaussian_model.fixed import DECIMAL38_MAX, GaussianSpecError, choose_scales, default_data_bits
    from dpspark.mechanisms.gaussian_model.spark_pairs import check_pass_capacity

    # the example configs' scale (d = 5, R = 20, kappa = 100, max_units = 200000) and the benchmark target
    for d, radius, kappa, units in ((5, 20, 100, 200_000), (100, 20, 1000, 10**7)):
        b = default_data_bits(Fraction(radius), Fraction(kappa))
        top = 2 * Fraction(kappa) * chi2_threshold(d, units, Fraction(1, 100))
        scales = choose_scales(b, top, units)
        t_int = scales.threshold_int(top)
        assert units * t_int <= DECIMAL38_MAX  # every |sum y_i y_j| <= units T_int
        check_pass_capacity(units, t_int)
        # one more matrix bit would not fit: the scale is the largest that does (or the cap of 24)
        if scales.matrix_bits < 24:
            assert units * Scales(b, scales.matrix_bits + 1).threshold_int(top) > DECIMAL38_MAX
    with pytest.raises(ValueError, match="decimal"):
        check_pass_capacity(10**20, 10**19)
    with pytest.raises(GaussianSpecError, match="decimal"):
        choose_scales(20, Fraction(10**6), 10**12, matrix_bits=24)


def test_config_refusals_before_any_data(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dpspark.api.config import ConfigError, ReleaseSpec

    base = {"input": {"path": str(tmp_path), "format": "parquet"},
            "gaussian": {"columns": ["a", "b"], "radius": "10", "kappa": "100"},
            "privacy": {"mechanism": "gaussian_learner", "epsilon": "1", "delta": "1/1000000000", "max_units": 1000,
                        "unit_column": "uid"},
            "output": {"path": str(tmp_path / "o")}}
    spec = ReleaseSpec.from_dict(base)
    plan = construct(spec).plan()
    assert plan["passes"] == 1 + len(kappa_schedule(Fraction(100))) + 1 + 3  # count, PPC, final, mean x 3
    bad = [({"privacy": {k: v for k, v in base["privacy"].items() if k != "unit_column"}}, "unit_column"),
           ({"gaussian": {**base["gaussian"], "kappa": 0.5}}, "float"),
           ({"gaussian": {**base["gaussian"], "scale_bits": 4}}, "scale_bits"),
           ({"gaussian": {**base["gaussian"], "extra": 1}}, "unknown keys"),
           ({"privacy": {**base["privacy"], "rho": "1"}}, "above privacy.epsilon")]
    for change, match in bad:
        with pytest.raises((ConfigError, TypeError, ValueError), match=match):
            s = ReleaseSpec.from_dict({**base, **change})
            construct(s)


def test_limb_apply_and_vectorised_norm_test_at_their_edges() -> None:
    from dpspark.mechanisms.gaussian_model.exactops import apply_bits, exact_apply, exact_norm_le

    for d in (1, 5, 100, 127, 128):
        b = apply_bits(d)
        assert d * (1 << b) < 1 << 53 <= d * (1 << (b + 1))  # the largest exact limb budget
    g = np.random.default_rng(11)
    d = 100
    # products at the limb bound: every entry of x and M at its top magnitude, both signs
    for top_x, top_m in ((1 << 33, 1 << 22), ((1 << 33) - 1, (1 << 26) - 1), (1 << 20, 1 << 40)):
        x = g.choice([-top_x, top_x, top_x - 1, -(top_x - 1)], size=(300, d)).astype(np.int64)
        m = g.choice([-top_m, top_m, 0, 1], size=(d, d)).astype(np.int64)
        ref = x.astype(object) @ m.T.astype(object)
        y = exact_apply(x, m)
        if max(sum(abs(int(v)) for v in row) for row in m) * top_x < 1 << 61:
            assert y is not None
        if y is not None:
            assert (y.astype(object) == ref).all()
    huge = np.full((2, d), 1 << 40, dtype=np.int64)
    assert exact_apply(huge, np.full((d, d), 1 << 30, dtype=np.int64)) is None  # would overflow int64: refused
    # the norm test: rows at T - 1, T, T + 1 and at the int64 extremes
    y = g.integers(-(2**62), 2**62, size=(50, 7))
    y[0] = 2**63 - 1
    y[1] = -(2**63)
    norms = [sum(int(v) ** 2 for v in r) for r in y]
    for t in (norms[0] - 1, norms[0], norms[0] + 1, norms[5], 0, -1, 1 << 200):
        assert list(exact_norm_le(y, t)) == [n <= t for n in norms]
    z = g.integers(-(2**40), 2**40, size=(1000, d))
    nz = [sum(int(v) ** 2 for v in r) for r in z]
    t = sorted(nz)[500]
    assert list(exact_norm_le(z, t)) == [n <= t for n in nz]


def test_blob_preparation_matches_the_driver_across_batch_edges() -> None:
    """encoder + pair_maker (the Spark preparation's two Arrow steps, fed unsorted batches of any size)
    give exactly the driver's pairs (up to sign) and singles; int32 and int64 blobs decode losslessly."""
    import pyarrow as pa

    from dpspark.mechanisms.gaussian_model.spark_pairs_prep import BLOB, BUCKET, UNIT, blob_array, blob_rows, encoder, pair_maker

    g = np.random.default_rng(5)
    n, d, b = 600, 3, 450
    ids = np.r_[np.arange(n - 40), np.arange(20), np.arange(20)].astype(np.int64)  # 20 units with three rows
    values = g.normal(size=(n, d)) * 50  # report: test data
    values[3, 1] = np.nan
    key = bytes(range(16))
    ref = ArraySource(values, 4, key, b, ids)
    raw = hash_long(ids).astype(np.int64)
    perm = g.permutation(n)
    cols = [raw[perm], ids[perm]] + [values[perm, j] for j in range(d)]
    for sizes in ([n], [1] * 10 + [2] * 20 + [n - 50], list(g.integers(1, 9, size=200))):
        edges = np.cumsum([0] + sizes)
        edges = np.r_[edges[edges < n], n]
        batches = [pa.RecordBatch.from_arrays([pa.array(c[a:e]) for c in cols], names=[f"c{i}" for i in range(d + 2)])
                   for a, e in zip(edges[:-1], edges[1:])]
        encoded = list(encoder(d, 4, key, b)(iter(batches)))
        assert all(e.schema.names == [BUCKET, UNIT, BLOB] for e in encoded)
        out = pa.Table.from_batches(list(pair_maker(d)(iter(encoded))))
        kind = out.column(0).to_numpy()
        rows = blob_rows(out.column(1), d)
        canon = lambda a: sorted(tuple(r) if tuple(r) > tuple(-r) else tuple(-r) for r in a)  # noqa: E731  sign-free
        assert canon(rows[kind == 0]) == canon(ref._pairs)
        assert sorted(map(tuple, rows[kind >= 1])) == sorted(map(tuple, ref._singles))
        assert sorted(map(tuple, rows[kind == 2])) == sorted(map(tuple, ref._alone)) and len(ref._alone) > 0
    edge = np.array([[2**31 - 1, -(2**31 - 1), 0], [-5, 7, 1]], dtype=np.int32)
    assert np.array_equal(blob_rows(blob_array(edge), 3), edge)
    wide = np.array([[2**32 - 2, -(2**32 - 2), 3]], dtype=np.int64)
    assert np.array_equal(blob_rows(blob_array(wide), 3), wide)
    mixed = pa.concat_arrays([blob_array(edge), blob_array(wide)])  # the SQL kernels' decoder sees both kinds
    assert np.array_equal(blob_rows(mixed, 3), np.vstack([edge, wide]))
    with pytest.raises(ValueError, match="wrong width"):
        blob_rows(blob_array(edge[:, :2]), 3)


def test_int64_bins_and_clamped_sums_equal_python_ints_at_the_edges() -> None:
    from dpspark.mechanisms.gaussian_model.source import bins_of, centred_of

    g = np.random.default_rng(8)
    x = g.integers(-(2**31), 2**31, size=(4000, 3))
    x[0] = 2**31
    x[1] = -(2**31)
    m = ((1 << 29) + 7, -(1 << 29), 3), (1, 1 << 20, -(1 << 28)), (0, 0, 1 << 29)  # |y| up to ~2^61
    y = x.astype(object) @ np.array(m, dtype=object).T
    for c, r in (([0, 0, 0], 1 << 70), ([5, -(1 << 40), 1 << 59], 1 << 58), ([1, 2, 3], 12345)):
        ref = [int(np.clip(y[:, j] - c[j], -r, r).sum()) for j in range(3)]
        assert centred_of(m, x, c, r) == ref
    lo, width, bins = [-(1 << 60), -5, 0], (1 << 55) + 3, 70
    ref_bins = np.array([np.bincount(np.clip((y[:, j] - lo[j]) // width, 0, bins - 1).astype(np.int64), minlength=bins)
                         for j in range(3)])
    assert np.array_equal(bins_of(m, x, lo, width, bins), ref_bins)
