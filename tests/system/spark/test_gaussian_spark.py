"""Gaussian learners on Spark: the exact aggregates equal the driver's, and each mechanism runs end to end."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.mechanisms.gaussian_model.fixed import identity, quantise_matrix
from dpspark.mechanisms.gaussian_model.source import ArraySource
from dpspark.rng import SeededRandom

pytestmark = pytest.mark.spark
DELTA = "1/1000000000"
KEY = bytes(range(32, 48))


def _frame(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    g = np.random.default_rng(seed)  # report: test data
    x = g.multivariate_normal([4.0, -2.0], [[9.0, 3.0], [3.0, 4.0]], size=n)  # report
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "uid": np.arange(n, dtype=np.int64)})
    return df, x


@pytest.mark.parametrize("built", ["sql", "arrow"])  # int64 columns in the cache, or the int32/int64 blobs
def test_spark_aggregates_equal_the_driver_backend(spark, built: str) -> None:  # type: ignore[no-untyped-def]
    from dpspark.mechanisms.gaussian_model.spark_pairs import SparkGaussianSource

    df, x = _frame(3000, 1)
    df = pd.concat([df, df.iloc[:5]], ignore_index=True)  # five units with two rows: not singles
    sdf = spark.createDataFrame(df)
    src = SparkGaussianSource(sdf, ["a", "b"], "uid", 10, 2500, KEY, kernel=built)
    ref = ArraySource(df[["a", "b"]].to_numpy(), 10, KEY, 2500, df["uid"].to_numpy())
    try:
        assert src.pair_count() == ref.pair_count() > 0
        assert src.single_count() == ref.single_count() == 2995
        m = quantise_matrix(np.array([[0.5, 0.25], [-0.125, 1.0]]), 8)
        for kernel in (("sql", "arrow") if built == "sql" else ("arrow",)):  # SQL expressions, numpy partials
            src.kernel = kernel
            for mat, t in ((identity(2, 8), 200 * 4**18), (m, 30 * 4**18), (m, 0)):
                assert src.second_moments(mat, t) == ref.second_moments(mat, t)
            assert np.array_equal(src.bin_counts(m, [-3000, -4000], 700, 13), ref.bin_counts(m, [-3000, -4000], 700, 13))
            assert src.centred_sums(m, [100, -50], 900) == ref.centred_sums(m, [100, -50], 900)
        for c, t in (([0, 0], 30 * 4**18), ([700, -300], 1 << 30), ([1, 2], 1 << 22)):  # the learners' clipped aggregates (every single)
            assert src.clipped_moments(m, c, t) == ref.clipped_moments(m, c, t)
            assert src.clipped_sums(m, c, t) == ref.clipped_sums(m, c, t)
        src.unpaired_singles()  # the mean of an estimated preconditioner reads the rows alone in a bucket
        ref.unpaired_singles()
        assert 0 < src.single_count() == ref.single_count() < 2995
        for kernel in (("sql", "arrow") if built == "sql" else ("arrow",)):
            src.kernel = kernel
            assert np.array_equal(src.bin_counts(m, [-3000, -4000], 700, 13), ref.bin_counts(m, [-3000, -4000], 700, 13))
            assert src.centred_sums(m, [100, -50], 900) == ref.centred_sums(m, [100, -50], 900)
    finally:
        src.close()


def _check_release(rel, mechanism: str) -> None:  # type: ignore[no-untyped-def]
    s = rel.section
    rho = Fraction(s["rho"])
    assert rho == sum(Fraction(r) for r in s["rho_by_noise"])  # composed rho = the stated sum
    assert rel.statements["add_remove"].rho == rho
    assert rel.statements["add_remove_approx_dp"].epsilon.le(4)  # never more than the ledger spends
    assert rho <= Fraction(rel.parameters["rho"])
    assert s["passes"] == rel.parameters["passes"]


def test_gaussian_covariance_via_config_and_inspect(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from dpspark.cli.app import main as cli
    from dpspark.api.config import load_config
    from dpspark.engine.runner import run_release
    from dpspark.lookup import open_release

    df, x = _frame(20000, 2)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text("""
[input]
path = "in.parquet"
[gaussian]
columns = ["a", "b"]
radius = "10"
kappa = "20"
[privacy]
mechanism = "gaussian_covariance"
epsilon = "4"
delta = "1/1000000000"
max_units = 20000
unit_column = "uid"
[output]
path = "release"
""")
    out = run_release(load_config(tmp_path / "c.toml"), spark=spark, rng=SeededRandom(5), progress=lambda _m: None)
    rel = open_release(out)
    _check_release(rel, "gaussian_covariance")
    cov = rel.covariance()
    assert rel.mean() is None and cov.shape == (2, 2) and np.allclose(cov, cov.T)
    assert np.linalg.norm(cov - np.cov(x.T)) < 3.0  # report: sanity (noise at d = 2, n = 4000 is about 0.5)
    assert rel.sample(7, SeededRandom(1)).shape == (7, 2)
    assert (rel.sample(5, SeededRandom(2)) == rel.sample(5, SeededRandom(2))).all()
    assert cli(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rho (composed)" in text and "passes" in text


@pytest.mark.parametrize("mechanism, extra", [
    ("gaussian_mean", {"covariance": [["9", "3"], ["3", "4"]]}),
    ("gaussian_learner", {}),
])
def test_mean_and_learner_via_session(spark, tmp_path: Path, mechanism: str, extra: dict) -> None:  # type: ignore[no-untyped-def]
    from dpspark.api.session import Session

    df, x = _frame(20000, 3)
    with Session(df, max_units=20000, unit_column="uid", spark=spark, rng=SeededRandom(7)) as s:
        rel = s.release(mechanism=mechanism, epsilon="4", delta=DELTA, output=tmp_path / "r",
                        sections={"gaussian": {"columns": ["a", "b"], "radius": "10", "kappa": "20", **extra}})
    _check_release(rel, mechanism)
    assert np.linalg.norm(rel.mean() - x.mean(axis=0)) < 0.5  # report: sanity
    assert (rel.covariance() is None) == (mechanism == "gaussian_mean")


def test_input_conversion_is_the_drivers_and_fits_int32(spark) -> None:  # type: ignore[no-untyped-def]
    """The prepared singles are fixed_point's integers (the driver's conversion) for halves, infinities,
    NaN, NULL and values beyond the int32 clamp; a unit id that is NULL drops its row."""
    from dpspark.mechanisms.gaussian_model.fixed import INPUT_BOUND
    from dpspark.mechanisms.gaussian_model.source import fixed_point
    from dpspark.mechanisms.gaussian_model.spark_pairs import SparkGaussianSource
    from dpspark.mechanisms.gaussian_model.spark_pairs_prep import blob_rows

    vals = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, 0.5000000000000001, 1e300, -1e300,
            float("inf"), float("-inf"), float("nan"), None, 2.0**30 - 0.25, -(2.0**30) + 0.25, 2.0**30 + 0.5,
            123456.5, -123456.5, 1.25, -3.75]  # report: test inputs
    rows = [(i, v, -v if v is not None else None) for i, v in enumerate(vals)] + [(None, 1.0, 1.0)]
    df = spark.createDataFrame(rows, "uid long, a double, b double")
    for bits in (0, 1, 2):
        src = SparkGaussianSource(df, ["a", "b"], "uid", bits, 10**6, KEY, kernel="arrow")
        try:
            got = blob_rows(src.singles.toArrow().column(0), 2)
            want = fixed_point(np.array([[np.nan if v is None else v, np.nan if v is None else -v] for v in vals]), bits)
            assert sorted(map(tuple, got)) == sorted(map(tuple, want))  # report: test inputs above
            assert int(np.abs(got).max()) == INPUT_BOUND == 2**31 - 1  # the clamp keeps int32
        finally:
            src.close()
