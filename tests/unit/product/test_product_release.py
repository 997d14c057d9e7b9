"""product_sampler and product_learner end to end: config -> Spark release -> reader -> sample / q / inspect."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.api.config import ConfigError, ReleaseSpec, load_config
from dpspark.engine.runner import run_release
from dpspark.lookup import open_release
from dpspark.mechanisms.product.reader import DistributionLookup, bernoulli_matrix, check_distribution_section
from dpspark.lookup.statement_base import StatementLookup
from dpspark.mechanisms.zcdp_budget import converted_epsilon
from dpspark.release.errors import ReleaseFormatError
from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

P = [0.5, 0.9, 0.2, 0.05, 0.01, 0.0]

TOML = """
[input]
path = "in.parquet"
[columns]
names = [{names}]
[privacy]
mechanism = "{mech}"
epsilon = "4"
delta = "1/1000000000"
max_units = {n}
unit_column = "id"
alpha = "{alpha}"
beta = "1/10"
[output]
path = "release"
"""


def _data(tmp_path: Path, n: int) -> list[str]:
    gen = np.random.default_rng(1)
    x = gen.random((n, len(P))) < np.array(P)
    cols = {f"x{j}": pa.array(x[:, j].astype(np.int64) if j % 2 else x[:, j]) for j in range(len(P))}  # ints and bools
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()), **cols}), tmp_path / "in.parquet")
    return list(cols)


def _config(tmp_path: Path, mech: str, n: int, alpha: str) -> Path:
    names = ", ".join(f'"x{j}"' for j in range(len(P)))
    path = tmp_path / f"{mech}.toml"
    path.write_text(TOML.format(names=names, mech=mech, n=n, alpha=alpha))
    return path


def test_plans_refuse_before_any_data(tmp_path: Path) -> None:
    _data(tmp_path, 10)
    _config(tmp_path, "product_learner", 1000, "1/10")
    with pytest.raises(ConfigError, match="units"):
        load_config(tmp_path / "product_learner.toml")
    base = {"input": {"path": str(tmp_path), "format": "parquet"}, "columns": {"names": ["a", "b"]},
            "privacy": {"mechanism": "product_sampler", "epsilon": "4", "delta": "1/1000000000",
                        "max_units": 10**7, "unit_column": "id"},
            "output": {"path": str(tmp_path / "o")}}
    spec = ReleaseSpec.from_dict(base)
    mech = construct(spec)
    assert converted_epsilon(mech.rho, spec.delta) <= 4
    with pytest.raises(ConfigError, match="unit_column"):
        ReleaseSpec.from_dict({**base, "privacy": {k: v for k, v in base["privacy"].items() if k != "unit_column"}})
    with pytest.raises(ConfigError, match="float"):
        ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "alpha": 0.1}})


def test_distribution_section_check_and_exact_sampling() -> None:
    good = {"q": ["1/3", "0", "1"], "columns": ["a", "b", "c"], "flipped": [False, False, True]}
    check_distribution_section(good, None, "m")
    for bad in ({**good, "q": ["1/3", "0"]}, {**good, "q": ["3/2", "0", "1"]}, {**good, "flipped": [1, 0, 0]}):
        with pytest.raises(ReleaseFormatError):
            check_distribution_section(bad, None, "m")
    rows = bernoulli_matrix([Fraction(1, 3), Fraction(0), Fraction(1)], 30000, SeededRandom(1))
    assert rows[:, 1].sum() == 0 and rows[:, 2].sum() == 30000
    # Hoeffding at false alarm 1e-6: |mean - 1/3| <= sqrt(ln(2e6) / (2 * 30000)) = 0.0155
    assert abs(rows[:, 0].mean() - 1 / 3) <= 0.0155  # report


@pytest.mark.spark
def test_product_releases_end_to_end(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = 120000
    _data(tmp_path, n)
    # the learner at a loose alpha (n_needed must fit in max_units)
    cfg = load_config(_config(tmp_path, "product_learner", n, "1"))
    out = run_release(cfg, spark=spark, rng=SeededRandom(3), progress=lambda _m: None)
    rel = open_release(out)
    assert isinstance(rel, DistributionLookup)
    q = rel.q
    assert all(isinstance(x, Fraction) and 0 <= x <= 1 for x in q)
    assert np.abs(rel.probabilities() - np.array(P)).max() < 0.1  # report: alpha = 1 at n = 120000
    rows = rel.sample(2000, SeededRandom(4))
    assert rows.shape == (2000, len(P)) and set(np.unique(rows)) <= {0, 1}
    st = rel.statements
    assert st["replacement"].rho == st["add_remove"].rho == construct(cfg).rho
    assert st["replacement_approx_dp"].epsilon.le(4)
    assert all(Fraction(r["rho_substitute"]) <= st["replacement"].rho for r in rel.parameters["rounds_run"])
    assert cli(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert "synthetic rows" in text and "replacement_approx_dp" in text

    # the sampler, two samples (disjoint halves of the batches), loose alpha
    path = _config(tmp_path, "product_sampler", n, "1")
    path.write_text(path.read_text().replace('alpha = "1"', 'alpha = "1"\nsamples = 2').replace(
        'path = "release"', 'path = "release_s"'))
    cfg = load_config(path)
    out = run_release(cfg, spark=spark, rng=SeededRandom(5), progress=lambda _m: None)
    rel = StatementLookup(out)  # the "sample" kind's reader (SampleLookup) comes with the samplers branch
    sec = rel.section
    assert sec["batches"] == 2 and len(sec["samples"]) == 2
    assert all(len(s) == len(P) and set(s) <= {0, 1} for s in sec["samples"])
    assert sec["independence"] == "independent only across batches"
    assert rel.statements["replacement"].rho == construct(cfg).rho
    parts = [sorted({tuple(r["batches"]) for r in run}) for run in rel.parameters["rounds_run"]]
    spans = sorted(s for part in parts for s in part)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # the samples' parts: disjoint batches
    assert all(len(part) <= 2 for part in parts)  # per sample: one ladder part, one sampling part


@pytest.mark.spark
def test_product_learner_through_session(spark, tmp_path: Path) -> None:
    import pandas as pd

    from dpspark.api.session import Session

    n = 120000
    gen = np.random.default_rng(9)
    x = gen.random((n, len(P))) < np.array(P)
    frame = pd.DataFrame({"id": np.arange(n), **{f"x{j}": x[:, j] for j in range(len(P))}})
    with Session(frame, max_units=n, unit_column="id", budget={"epsilon": "8", "delta": "1/1000000"},
                 rng=SeededRandom(7)) as s:
        rel = s.release(mechanism="product_learner", epsilon="4", delta="1/1000000000",
                        alpha="1", beta="1/10", sections={"columns": {"names": [f"x{j}" for j in range(len(P))]}},
                        output=tmp_path / "q")
        assert isinstance(rel, DistributionLookup)
        assert np.abs(rel.probabilities() - np.array(P)).max() < 0.1  # report
        assert rel.sample(5, SeededRandom(1)).shape == (5, len(P))


@pytest.mark.spark
def test_spark_rounds_match_the_reference_truncation(spark) -> None:
    """Packed words across a 64-bit boundary, units with several rows (OR), flips and a ceiling: exact sums."""
    from dpspark.mechanisms.product.rounds import RoundQuery, truncate
    from dpspark.mechanisms.product.spark_rounds import SparkRounds

    d, units = 70, 300
    gen = np.random.default_rng(5)
    x = gen.random((2 * units, d)) < 0.1  # report: simulated data
    ids = np.repeat(np.arange(units), 2)
    df = spark.createDataFrame(pd_frame(ids, x))

    per_unit = np.zeros((units, d), dtype=np.int64)
    for u in range(units):
        per_unit[u] = x[2 * u] | x[2 * u + 1]
    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.product.stage import ProductRoundsStage

    backend = SparkBackend(df, SeededRandom(b"rounds"))
    oracle = SparkRounds(backend, ProductRoundsStage(tuple(f"x{j}" for j in range(d)), "id", 8))
    try:
        active = tuple(range(0, d, 3)) + (63, 64, 69)
        flip = tuple(j % 5 == 0 for j in active)
        for c in (2, 5, len(active)):
            q = RoundQuery(0, "t", active, flip, c, 0, 8, 8)
            assert oracle(q) == [int(v) for v in truncate(per_unit, q).sum(axis=0)]
        grouped = RoundQuery(0, "t", active, flip, 0, 0, 8, 8, groups=((10, 1), (len(active) - 10, 3)), count=True)
        assert oracle(grouped) == [int(v) for v in truncate(per_unit, grouped).sum(axis=0)] + [units]
        halves = [oracle(RoundQuery(0, "t", active, flip, 5, lo, hi, 8)) for lo, hi in ((0, 3), (3, 8))]
        assert [a + b for a, b in zip(*halves)] == oracle(RoundQuery(0, "t", active, flip, 5, 0, 8, 8))
    finally:
        oracle.close()


def pd_frame(ids: np.ndarray, x: np.ndarray):  # type: ignore[no-untyped-def]
    import pandas as pd

    return pd.DataFrame({"id": ids, **{f"x{j}": x[:, j] for j in range(x.shape[1])}})


@pytest.mark.spark
def test_sql_packing_equals_arrow_packing(spark) -> None:
    """The JVM packing (_sql_words) and the Arrow packing (_pack) give the same words, bit 63 included, for
    booleans and integers with nulls, negatives and values other than 1 (1 iff non-null and non-zero)."""
    import pandas as pd
    from pyspark.sql.types import LongType, StructField, StructType

    from dpspark.mechanisms.product.spark_rounds import _pack, _sql_words

    d, n = 130, 200
    gen = np.random.default_rng(7)
    raw = gen.integers(-2, 3, size=(n, d))  # report: simulated data
    nulls = gen.random((n, d)) < 0.2  # report: simulated data
    cols = {"id": np.arange(n)}
    for j in range(d):
        kind = ("boolean", "Int8", "Int16", "Int32", "Int64")[j % 5]
        v = raw[:, j] != 0 if kind == "boolean" else raw[:, j]
        cols[f"x{j}"] = pd.array([None if m else (bool(a) if kind == "boolean" else int(a))
                                  for a, m in zip(v, nulls[:, j])], dtype=kind)
    df = spark.createDataFrame(pd.DataFrame(cols))
    names = [f"x{j}" for j in range(d)]
    assert {t for c, t in df.dtypes if c != "id"} == {"boolean", "tinyint", "smallint", "int", "bigint"}
    sql = sorted(tuple(r) for r in df.select("id", *_sql_words(names, dict(df.dtypes))).collect())
    schema = StructType([df.schema["id"]] + [StructField(f"w{i}", LongType(), False) for i in range(3)])
    arrow = sorted(tuple(r) for r in df.select("id", *names).mapInArrow(_pack(d), schema).collect())
    assert sql == arrow
    bits = (raw != 0) & ~nulls
    want = [sum(int(bits[u, j]) << (j % 64) for j in range(64 * i, min(d, 64 * i + 64))) for u in range(n)
            for i in range(3)]
    got = [w % (1 << 64) for r in sql for w in r[1:]]
    assert got == want and any(w < 0 for r in sql for w in r[1:])


# --- issue 25 end to end on Arrow: fewer units than max_units, no bias ----------------------------------
P25 = [0.5, 0.3, 0.1, 0.02, 0.7]


def test_learner_release_is_unbiased_below_max_units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 units under max_units = 24,000 (the data hold 5/6 of the bound), on the Arrow engine: every q_j is
    within (sigma_j sqrt(2 L6) + p^_j t0) / (N - t0) of the data's own frequency p^_j, t0 = sigma_0 sqrt(2 L6)
    (the final round's and the count's noise; no record is truncated at d = 5; every clamp interval a
    coordinate can land in holds its p^_j), L6 putting the union of the d + 1 draws' failures (subgaussian,
    + floor mass) <= 1e-6. MUTANT: divide by max_units (the estimator issue 25 found) - caught: q = (5/6) p^."""
    from dpspark.mechanisms.product import rounds as rd

    N, n = 20000, 24000
    gen = np.random.default_rng(25)
    x = gen.random((N, len(P25))) < np.array(P25)
    pq.write_table(pa.table({"id": pa.array(range(N), pa.int64()),
                             **{f"x{j}": pa.array(x[:, j]) for j in range(len(P25))}}), tmp_path / "in.parquet")
    p_hat = [Fraction(int(x[:, j].sum()), N) for j in range(len(P25))]
    path = tmp_path / "learner.toml"
    path.write_text(TOML.format(names=", ".join(f'"x{j}"' for j in range(len(P25))), mech="product_learner", n=n,
                                alpha="1"))
    L6 = rd.ln_upper(4 * (len(P25) + 1) * 10**6)

    def release(tag: str) -> tuple[list[Fraction], list[Fraction]]:
        text = path.read_text().replace('path = "release"', f'path = "release_{tag}"')
        (tmp_path / f"{tag}.toml").write_text(text)
        rel = open_release(run_release(load_config(tmp_path / f"{tag}.toml"), rng=SeededRandom(8),
                                       progress=lambda _m: None))
        rounds = rel.parameters["rounds_run"]
        buckets = rel.parameters["locked_in_round"]
        final = rounds[-1]
        sigma = {j: Fraction(g["sigma"]) for g, bs in zip(final["groups"], final["buckets"])
                 for j in range(len(P25)) if buckets[j] in bs}
        t0 = Fraction(rounds[-1]["count_sigma"]) * rd.sqrt_up(2 * L6)  # the final round's own count
        tol = [(sigma[j] * rd.sqrt_up(2 * L6) + max(p_hat[j], 1 - p_hat[j]) * t0) / (N - t0) for j in range(len(P25))]
        return list(rel.q), tol

    q, tol = release("good")
    assert all(abs(q[j] - p_hat[j]) <= tol[j] for j in range(len(P25))), (q, p_hat, tol)
    monkeypatch.setattr(rd, "positive", lambda count: n)
    bad, _ = release("mutant")
    assert any(abs(bad[j] - p_hat[j]) > tol[j] for j in range(len(P25)))
    assert abs(bad[1] / p_hat[1] - Fraction(N, n)) < Fraction(1, 50)
