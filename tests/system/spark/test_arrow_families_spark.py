"""The product rounds and the Gaussian pairs give the same exact results on Arrow and on Spark (same seed).

Stage level: the same Parquet file, the same seeded generator, both backends; every round's sums (product) and
every aggregate of the Gaussian source (counts, second moments, bins, clamped sums, before and after
``unpaired_singles``) and the pass counters agree. The inputs make every rule bind: several rows per unit (the
per-unit OR; buckets holding a unit's two rows), NULL unit ids, NULL / NaN / text values under each null rule,
string, int32 and int64 unit ids, more than 64 columns (two words), the array form.
Release level: seeded product and Gaussian releases on both engines have identical fingerprints.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.engine.arrow.backend import ArrowBackend
from dpspark.engine.numeric import NullRule
from dpspark.engine.spark.backend import SparkBackend
from dpspark.mechanisms.gaussian_model.stage import GaussianPairsStage
from dpspark.mechanisms.product.rounds import RoundQuery
from dpspark.mechanisms.product.stage import ProductRoundsStage
from dpspark.rng import SeededRandom
from tests.support.golden import fingerprint

pytestmark = pytest.mark.spark


def _units(g: np.random.Generator, rows: int, kind: str) -> pa.Array:
    ids = g.integers(0, rows // 2, rows)  # about two rows per unit
    null = g.random(rows) < 0.02
    if kind == "string":
        return pa.array([None if n else f"u{i}é" for i, n in zip(ids, null)], pa.string())
    typ = pa.int32() if kind == "int32" else pa.int64()
    return pa.array([None if n else int(i) * 7919 - 10**5 for i, n in zip(ids, null)], typ)


def product_table(rows: int, d: int, kind: str, seed: int = 7) -> pa.Table:
    """d binary columns of mixed types (bool, int, float with NaN/inf, text) and NULLs; one array column."""
    g = np.random.default_rng(seed)  # test input only
    cols: dict[str, pa.Array] = {"uid": _units(g, rows, kind)}
    bits = g.random((rows, d)) < np.linspace(0.02, 0.9, d)
    miss = g.random((rows, d)) < 0.03
    for j in range(d):
        col = [None if m else bool(b) for b, m in zip(bits[:, j], miss[:, j])]
        if j % 4 == 0:
            cols[f"x{j}"] = pa.array(col, pa.bool_())
        elif j % 4 == 1:
            cols[f"x{j}"] = pa.array([None if v is None else int(v) * (j - 3) for v in col], pa.int64())
        elif j % 4 == 2:
            cols[f"x{j}"] = pa.array([float("nan") if v is None else (float("inf") if v and j % 3 else float(v) / 2)
                                      for v in col], pa.float64())
        else:
            cols[f"x{j}"] = pa.array([None if v is None else int(v) for v in col], pa.int32())
    arr = [None if m else [int(b) for b in row[: 1 + (i % d)]] for i, (row, m) in enumerate(zip(bits, miss[:, 0]))]
    cols["arr"] = pa.array(arr, pa.list_(pa.int8()))
    return pa.table(cols)


def _queries(d: int, batches: int, g: np.random.Generator) -> list[RoundQuery]:
    out = []
    lo = 0
    for i in range(6):
        hi = batches if i == 5 else min(batches, lo + int(g.integers(1, batches // 3)))
        if lo >= hi:
            break
        size = int(g.integers(1, d + 1))
        active = tuple(sorted(g.choice(d, size, replace=False).tolist()))
        flip = tuple(bool(v) for v in g.random(size) < 0.3)
        out.append(RoundQuery(i, f"round {i}", active, flip, int(g.integers(0, size + 1)), lo, hi, batches))
        lo = hi
    return out


def _both(spark, path: Path, stage, seed: bytes):  # type: ignore[no-untyped-def]
    arrow = ArrowBackend(str(path), SeededRandom(seed))
    sb = SparkBackend(spark.read.parquet(str(path)), SeededRandom(seed))
    return arrow, sb, arrow.compute(stage), sb.compute(stage)


@pytest.mark.parametrize("kind,d,array,nulls", [("int64", 70, False, 0), ("string", 9, False, 1),
                                                ("int32", 12, True, 0), ("int64", 5, True, 1)])
def test_product_rounds_identical(spark, tmp_path: Path, kind: str, d: int, array: bool, nulls: int) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(product_table(900, d, kind), path)
    names = tuple(f"arr[{j}]" for j in range(d)) if array else tuple(f"x{j}" for j in range(d))
    stage = ProductRoundsStage(names, "uid", 32, "arr" if array else None, nulls)
    arrow, sb, a, s = _both(spark, path, stage, b"rounds" + kind.encode())
    try:
        for q in _queries(d, 32, np.random.default_rng(d)):
            assert a(q) == s(q), q
        assert arrow.passes_run == sb.passes_run > 0
    finally:
        a.close(), s.close()


def gauss_table(rows: int, kind: str, seed: int = 11) -> pa.Table:
    g = np.random.default_rng(seed)  # test input only
    a = g.normal(0, 3, rows)
    b = a / 2 + g.normal(0, 1, rows)
    a_list: list[float | None] = a.tolist()
    for i in g.choice(rows, 12, replace=False):
        a_list[int(i)] = None
    a_list[1], a_list[2] = float("nan"), float("inf")
    text = [f"{v:.4f}" for v in b]
    text[5], text[6] = "n/a", "1e400"
    return pa.table({"uid": _units(g, rows, kind), "a": pa.array(a_list, pa.float64()),
                     "b": pa.array(b), "t": pa.array(text, pa.string())})


@pytest.mark.parametrize("kind,nulls,cols", [("int64", NullRule(None), ("a", "b")),
                                             ("string", NullRule(Fraction(1, 2)), ("a", "b", "t")),
                                             ("int32", NullRule(Fraction(0)), ("t", "a"))])
def test_gaussian_pairs_identical(spark, tmp_path: Path, kind: str, nulls: NullRule, cols: tuple[str, ...]) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(gauss_table(1200, kind), path)
    stage = GaussianPairsStage(cols, "uid", 10, 300, 1200, nulls)
    arrow, sb, a, s = _both(spark, path, stage, b"pairs" + kind.encode())
    d = len(cols)
    eye = [[int(i == j) for j in range(d)] for i in range(d)]
    skew = [[3 * (i == j) - (i != j) for j in range(d)] for i in range(d)]
    try:
        assert a.pair_count() == s.pair_count() > 0
        for m, t in ((eye, 10**7), (skew, 10**8), (eye, 10**16)):
            assert a.second_moments(m, t) == s.second_moments(m, t)
        for _ in range(2):
            assert a.single_count() == s.single_count() > 0
            assert np.array_equal(a.bin_counts(skew, [-4000] * d, 700, 16), s.bin_counts(skew, [-4000] * d, 700, 16))
            assert a.centred_sums(eye, [100] * d, 3000) == s.centred_sums(eye, [100] * d, 3000)
            a.unpaired_singles(), s.unpaired_singles()
        assert a.passes == s.passes and arrow.passes_run == sb.passes_run
    finally:
        a.close(), s.close()


# --- whole releases: the same seeded release on both engines --------------------------------------------
def _release(tmp: Path, table: pa.Table, config: dict, engine: str, spark, seed: bytes) -> dict:  # type: ignore[no-untyped-def]
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.runner import run_release

    tmp.mkdir(parents=True)
    pq.write_table(table, tmp / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **copy.deepcopy(config), "output": {"path": "release"}}
    spec = ReleaseSpec.from_dict(raw, base_dir=tmp)
    kw = {"spark": spark} if engine == "spark" else {}
    return fingerprint(run_release(spec, rng=SeededRandom(seed), progress=lambda _m: None, engine=engine, **kw))


PRIV = {"epsilon": "4", "delta": "1/1000000000", "unit_column": "uid"}


@pytest.mark.parametrize("mech,table,config", [
    ("product_learner", lambda: product_table(1500, 8, "string"),
     {"columns": {"names": [f"x{j}" for j in range(8)], "nulls": 1},
      "privacy": {"mechanism": "product_learner", "max_units": 120000, "alpha": "1", "beta": "1/10", **PRIV}}),
    ("product_sampler", lambda: product_table(1500, 6, "int64"),
     {"columns": {"array": "arr", "width": 6},
      "privacy": {"mechanism": "product_sampler", "max_units": 60000, "alpha": "1", **PRIV}}),
    ("gaussian_learner", lambda: gauss_table(1500, "string"),
     {"gaussian": {"columns": ["a", "b"], "radius": "10", "kappa": "20"},
      "privacy": {"mechanism": "gaussian_learner", "max_units": 1500, **PRIV}}),
])
def test_release_identical_on_both_engines(spark, tmp_path: Path, mech: str, table, config: dict) -> None:  # type: ignore[no-untyped-def]
    t = table()
    got = {e: _release(tmp_path / e, t, config, e, spark, b"cross:" + mech.encode()) for e in ("arrow", "spark")}
    assert got["arrow"] == got["spark"]
