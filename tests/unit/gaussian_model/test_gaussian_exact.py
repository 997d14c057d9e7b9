"""Exact checks of the Gaussian learner: the ball clip, sensitivities at the clip boundary (with a mutant for
each clipping rule), kernels, noise plans, composed rho, the public round schedule.

Everything here is exact integer arithmetic on the driver backend (no Spark, no statistics).
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import isqrt

import numpy as np
import pytest

from dpspark.engine.xxhash64 import hash_long
from dpspark.mechanisms.gaussian_model.covariance import (ROW_BETA_COVARIANCE, max_threshold, pass_l2_sq,
                                                          predicted_rounds, tail_sq)
from dpspark.mechanisms.gaussian_model.exactops import exact_gram, exact_sq_norms, limb_bits
from dpspark.mechanisms.gaussian_model.fixed import identity
from dpspark.mechanisms.gaussian_model.model_noise import plan_noise
from dpspark.mechanisms.gaussian_model.source import (ArraySource, ball_clip, clipped_moments_of, clipped_sums_of,
                                                      upper_pairs)
from dpspark.mechanisms.registry import construct
from dpspark.noise.dgauss import l2_rho
from dpspark.noise.grid import grid_sensitivity

KEY = bytes(range(16))


def _sq(v) -> int:  # type: ignore[no-untyped-def]
    return sum(int(x) * int(x) for x in v)


def _vector(upper: tuple[int, ...], d: int) -> list[int]:
    """The released vector of a covariance pass: diagonal sums, doubled off-diagonal sums."""
    return [v if i == j else 2 * v for (i, j), v in zip(upper_pairs(d), upper)]


def _neighbours(rows: np.ndarray, extra: np.ndarray, bits: int = 0):  # type: ignore[no-untyped-def]
    """Sources over rows (units 0..n-1, one row each) and rows + one unit (id n): add/remove neighbours."""
    n = rows.shape[0]
    return (ArraySource(rows, bits, KEY, None, np.arange(n)),
            ArraySource(np.vstack([rows, extra[None, :]]), bits, KEY, None, np.arange(n + 1)))


def _ref_clip(row: list[int], bound_sq: int) -> list[int]:
    """Plain-Python ball clip: inside kept; outside sign(y) floor(|y| isqrt(T) / ceil(sqrt(||y||^2)))."""
    n2 = _sq(row)
    if n2 <= bound_sq:
        return list(row)
    s, q = isqrt(bound_sq), isqrt(n2 - 1) + 1
    return [(1 if v >= 0 else -1) * (abs(v) * s // q) for v in row]


def test_ball_clip_is_exact_at_the_boundary_and_at_the_int64_edges() -> None:
    """Rows at ||y||^2 = T, T + 1 and far out, int64 extremes and the Python-int path: every clipped row lies
    in the ball exactly and equals the plain-Python reference; rows inside are untouched."""
    g = np.random.default_rng(4)
    y = np.array([[3, 4, 12], [3, 4, 13], [-3, -4, -12], [0, 0, 0], [1 << 40, -(1 << 40), 5]], dtype=np.int64)
    for t in (169, 168, 170, 0, 1, 1 << 81):
        got, clipped = ball_clip(y, t)
        assert got.tolist() == [_ref_clip([int(v) for v in r], t) for r in y]
        assert all(_sq(r) <= t for r in got)
        assert clipped == sum(_sq(r) > t for r in y)
    big = g.integers(-(2**62), 2**62, size=(300, 7))
    big[0] = 2**63 - 1
    big[1] = -(2**63)
    for t in (1 << 120, (1 << 124) + 12345, 10**6):
        got, _ = ball_clip(big, t)
        assert got.dtype == np.int64 and got.tolist() == [_ref_clip([int(v) for v in r], t) for r in big]
    obj = np.array([[1 << 70, -(1 << 69), 3]], dtype=object)
    got, _ = ball_clip(obj, 1 << 100)
    assert _sq(got[0]) <= 1 << 100 and got[0].tolist() == _ref_clip([1 << 70, -(1 << 69), 3], 1 << 100)


class FloatClipMutant:
    """MUTANT of the clipping rule: y * sqrt(T) / ||y|| rounded to the NEAREST integer (float scaling)."""

    @staticmethod
    def clip(y: np.ndarray, bound_sq: int) -> np.ndarray:
        norms = np.sqrt((y.astype(np.float64) ** 2).sum(axis=1))  # report: the mutant's float scaling
        scale = np.minimum(1.0, math.sqrt(bound_sq) / np.maximum(norms, 1e-300))  # report
        return np.rint(y * scale[:, None]).astype(np.int64)  # report


def test_clip_rule_keeps_every_row_in_the_ball_and_the_float_mutant_does_not() -> None:
    """Rows whose float-scaled, nearest-rounded projection leaves the ball: the exact rule never does."""
    g = np.random.default_rng(9)
    y = g.integers(-1000, 1000, size=(5000, 3))
    t = 2500
    exact, _ = ball_clip(y, t)
    assert max(_sq(r) for r in exact) <= t
    assert max(_sq(r) for r in FloatClipMutant.clip(y, t)) > t  # the mutant's sensitivity claim would fail


@pytest.mark.parametrize("seed", range(6))
def test_one_unit_moves_every_clipped_aggregate_within_its_sensitivity(seed: int) -> None:
    """Add/remove neighbours (one unit, one row): the covariance pass's vector moves by <= pass_l2_sq(d, T),
    the clipped sums by <= T (squared l2), the single count by <= 1 - at thresholds on both sides of the
    new row's own norm, with a public preconditioner and centre."""
    g = np.random.default_rng(seed)
    d, n = 4, 50
    rows = g.normal(0, 30, size=(n, d))
    extra = g.normal(0, 300, size=d)
    a, b = _neighbours(rows, extra, bits=3)
    mat = tuple(tuple(int(x) for x in row) for row in g.integers(-5, 6, size=(d, d)))
    centre = [int(v) for v in g.integers(-100, 100, size=d)]
    y_new = _sq(np.array(mat, dtype=object) @ np.array([int(v) for v in b._singles[-1]], dtype=object) - np.array(centre, dtype=object))
    for t in (y_new, y_new - 1, y_new + 1, max(1, y_new // 7), 10**12):
        va = _vector(clipped_moments_of(mat, a._singles, centre, t).upper, d)
        vb = _vector(clipped_moments_of(mat, b._singles, centre, t).upper, d)
        assert _sq([x - y for x, y in zip(va, vb)]) <= pass_l2_sq(d, t)
        sa, sb = clipped_sums_of(mat, a._singles, centre, t), clipped_sums_of(mat, b._singles, centre, t)
        assert _sq([x - y for x, y in zip(sa, sb)]) <= t
    assert abs(b.single_count() - a.single_count()) == 1


def test_covariance_sensitivity_is_attained_and_the_upper_triangle_bound_is_a_mutant() -> None:
    """A row with equal coordinates at ||y||^2 = T moves the vector by exactly (2 - 1/d) T^2 = pass_l2_sq:
    the bound is tight, and the old claim T^2 (the upper triangle without doubling) would be exceeded."""
    d, s = 4, 50
    t = d * s * s
    rows = np.zeros((0, d))
    a, b = _neighbours(rows, np.full(d, float(s)))
    va = _vector(clipped_moments_of(identity(d, 0), a._singles, [0] * d, t).upper, d)
    vb = _vector(clipped_moments_of(identity(d, 0), b._singles, [0] * d, t).upper, d)
    moved = _sq([x - y for x, y in zip(va, vb)])
    assert moved == pass_l2_sq(d, t) == (2 * d - 1) * t * t // d
    assert moved > t * t  # MUTANT claim "Frobenius of the upper triangle <= T" does not cover the doubled vector


def test_mean_clip_is_a_ball_and_the_per_coordinate_clamp_is_a_mutant() -> None:
    """The clipped sum moves by <= sqrt(T) in l2; a per-coordinate clamp at sqrt(T) (KVMean's rule) with the
    same claimed sensitivity moves by sqrt(d T) on a diagonal row (caught)."""
    d, r = 9, 30
    t = r * r
    a, b = _neighbours(np.zeros((3, d)), np.full(d, 1000.0))
    sa = clipped_sums_of(identity(d, 0), a._singles, [0] * d, t)
    sb = clipped_sums_of(identity(d, 0), b._singles, [0] * d, t)
    assert _sq([x - y for x, y in zip(sa, sb)]) <= t
    clamp = [int(v) for v in np.clip(b._singles[-1], -r, r)]  # the mutant's new term
    assert _sq(clamp) == d * t > t


def test_composed_rho_is_the_sum_of_every_noise_addition_and_each_sensitivity_is_the_clip() -> None:
    """A learner run in memory: rho = the exact sum of the certified rho of every noise addition, within the
    budget; the count's sensitivity is 1, every covariance pass's is pass_l2_sq(d, T_int), every mean step's T_int."""
    from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory

    g = np.random.default_rng(5)
    x = g.multivariate_normal([3, 0, -2], np.diag([1.0, 30.0, 400.0]), size=3000)
    est, run = learn_in_memory("gaussian_learner", x, Fraction(10), Fraction(400), Fraction(1, 2))
    assert run.rho == sum((n.rho for n in run.noises), Fraction(0)) <= Fraction(1, 2)
    assert run.noises[0].l2_sq == 1 and run.noises[0].label == "single count"
    by_label = {n.label: n for n in run.noises}
    assert len(by_label) == len(run.noises)
    for p in run.passes:
        noise = by_label[p["pass"]]
        if "norm_bound_sq" in p:
            assert noise.l2_sq == pass_l2_sq(3, p["norm_bound_sq"]) and noise.dims == 6
        else:
            assert noise.l2_sq == p["radius_sq"] and noise.dims == 3
        clip = by_label[f"{p['pass']}: clipped rows count"]  # issue 36: every pass's clipped rows
        assert clip.l2_sq == 1 and clip.dims == 1 and Fraction(p["clipped_rho"]) == clip.rho
    assert len(run.noises) == 1 + 2 * len(run.passes)
    names = [p["pass"] for p in run.passes]
    rounds = predicted_rounds(3, Fraction(400), 3000, Fraction(1, 4))
    assert names == ["coarse mean"] + [f"covariance round {r + 1}" for r in range(rounds)] + ["covariance final", "mean"]
    assert set(est) == {"mean", "covariance"}
    assert np.array_equal(est["covariance"], est["covariance"].T)  # exactly symmetric: the reader refuses otherwise


def test_round_schedule_is_public_and_spends_nothing_at_small_kappa() -> None:
    """No preconditioning round at kappa = 1; more rounds as kappa grows (same d, n, rho); fewer with more data."""
    by_kappa = [predicted_rounds(50, Fraction(k), 10**5, Fraction(1, 4)) for k in (1, 2, 100, 10**4)]
    assert by_kappa[0] == by_kappa[1] == 0 and by_kappa == sorted(by_kappa) and by_kappa[-1] >= 2
    assert predicted_rounds(50, Fraction(10**4), 10**7, Fraction(1, 4)) <= by_kappa[-1]


def test_largest_possible_sum_fits_decimal38_at_the_configured_scale() -> None:
    from dpspark.mechanisms.gaussian_model.fixed import DECIMAL38_MAX, GaussianSpecError, choose_scales, default_data_bits
    from dpspark.mechanisms.gaussian_model.spark_pairs import check_pass_capacity

    for d, radius, kappa, units in ((5, 20, 100, 200_000), (100, 100, 10**4, 10**7)):
        b = default_data_bits(Fraction(radius), Fraction(kappa))
        top = max_threshold(d, Fraction(radius))
        assert top >= 4 * tail_sq(d, ROW_BETA_COVARIANCE)
        scales = choose_scales(b, top, 2 * units)
        t_int = scales.threshold_int(top)
        assert 2 * units * t_int <= DECIMAL38_MAX  # every |2 sum y_i y_j| <= 2 units T_int
        check_pass_capacity(2 * units, t_int)
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
    mech = construct(ReleaseSpec.from_dict(base))
    plan = mech.plan()
    assert plan["pass_names"][:2] == ["single count", "coarse mean"] and plan["pass_names"][-2:] == ["covariance final", "mean"]
    assert plan["passes"] == 4 + mech.rounds()
    bad = [({"privacy": {k: v for k, v in base["privacy"].items() if k != "unit_column"}}, "unit_column"),
           ({"gaussian": {**base["gaussian"], "kappa": 0.5}}, "float"),
           ({"gaussian": {**base["gaussian"], "scale_bits": 4}}, "scale_bits"),
           ({"gaussian": {**base["gaussian"], "extra": 1}}, "unknown keys"),
           ({"privacy": {**base["privacy"], "rho": "1"}}, "above privacy.epsilon")]
    for change, match in bad:
        with pytest.raises((ConfigError, TypeError, ValueError), match=match):
            s = ReleaseSpec.from_dict({**base, **change})
            construct(s)


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
