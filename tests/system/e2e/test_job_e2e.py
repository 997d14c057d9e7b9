"""The release job end to end on the shared local Spark: config -> counts -> noise -> release -> lookup."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.api.config import load_config
from dpspark.engine.runner import CuratorError, count_mechanism, run_release
from dpspark.ledger import BudgetExceeded, Ledger
from dpspark.lookup import open_release
from dpspark.release import ReleaseExistsError
from dpspark.rng import SeededRandom
from tests.support.configs import dense_toml

pytestmark = pytest.mark.spark

#: per-key false-alarm rate of the error-bar checks below
TEST_BETA = "1/1000000000"


def dataset(tmp_path: Path) -> dict[str, int]:
    """Units 1..N, each with one query; true counts per query are known exactly."""
    true = {"big": 400, "mid": 120, "café": 60, "tiny": 2}
    users, queries = [], []
    uid = 0
    for q, c in true.items():
        for _ in range(c):
            uid += 1
            users += [uid, uid]  # every unit has the same query twice: it must count once
            queries += [q, q]
    users.append(None)
    queries.append("big")  # NULL unit: dropped
    pq.write_table(pa.table({"user_id": pa.array(users, pa.int64()), "q": pa.array(queries)}), tmp_path / "in.parquet")
    return true


def config(tmp_path: Path, mechanism: str, *, n: int = 1000, extra: str = "", universe: str = 'kind = "string"\nmax_bytes = 6') -> Path:
    delta = 'delta = "1e-6"' if mechanism == "stability" else ""
    text = f"""
[input]
path = "in.parquet"
[keys]
columns = ["q"]
[universe]
{universe}
[privacy]
mechanism = "{mechanism}"
epsilon = "1"
{delta}
max_units = {n}
unit_column = "user_id"
[output]
path = "release"
{extra}
"""
    p = tmp_path / f"{mechanism}.toml"
    p.write_text(text)
    return p


def test_stability_release_round_trip(spark, tmp_path: Path) -> None:
    true = dataset(tmp_path)
    cfg = load_config(config(tmp_path, "stability"))
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"e2e"), progress=lambda m: None)
    rel = open_release(out)
    bar = count_mechanism(cfg).accuracy(TEST_BETA)
    for key in ("big", "mid", "café"):
        assert abs(rel.count(key) - true[key]) <= bar, key  # false alarm <= 1e-9 per key
    assert rel.count("zzz") == 0  # absent key
    assert rel.manifest.rng_test_only  # a SeededRandom release says so
    assert rel.manifest.delta_requested == Fraction(1, 10**6)
    assert rel.manifest.add_remove.delta <= Fraction(1, 10**6)
    table = pq.read_table(out / "bins.parquet")
    idx = table.column("index").to_pylist()
    assert idx == sorted(idx)  # canonical order
    with pytest.raises(ReleaseExistsError):
        run_release(cfg, spark=spark, rng=SeededRandom(b"again"), progress=lambda m: None)
    assert open_release(out).count("big") == rel.count("big")  # the published release is untouched


def test_pure_sparse_release_is_pure(spark, tmp_path: Path) -> None:
    true = dataset(tmp_path)
    cfg = load_config(config(tmp_path, "pure_sparse", n=600))
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"pure"), progress=lambda m: None)
    rel = open_release(out)
    assert rel.manifest.add_remove.delta == 0  # pure DP
    assert rel.manifest.algorithm == "PureSparseHistogram"
    est = rel.estimate("big")
    assert est.holds_above < true["big"]
    bar = count_mechanism(cfg).accuracy(TEST_BETA)
    # with probability >= 1 - gamma the sparse branch ran; then 'big' is released near its count
    assert rel.count("big") == 0 or abs(rel.count("big") - true["big"]) <= bar


def test_dense_release_has_every_bin(spark, tmp_path: Path) -> None:
    pq.write_table(pa.table({"age": pa.array([3, 3, 7, 9], pa.int64())}), tmp_path / "in.parquet")
    p = tmp_path / "dense.toml"
    p.write_text(dense_toml("age"))
    out = run_release(load_config(p), spark=spark, rng=SeededRandom(b"dense"), progress=lambda m: None)
    table = pq.read_table(out / "bins.parquet")
    assert table.num_rows == 10
    assert table.column("age").to_pylist() == list(range(10))


def test_more_units_than_declared_fails_before_noise(spark, tmp_path: Path) -> None:
    dataset(tmp_path)  # 582 units
    ledger = tmp_path / "ledger.sqlite"
    extra = f'[budget]\nledger = "{ledger}"\ndataset = "demo.queries"\ntotal_epsilon = "3"\ntotal_delta = "1/1000"'
    path = config(tmp_path, "stability", n=100, extra=extra)
    path.write_text(path.read_text().replace("unit_column", 'on_excess_units = "refuse"\nunit_column'))
    cfg = load_config(path)
    messages: list[str] = []
    with pytest.raises(CuratorError, match="more units than privacy.max_units = 100") as err:
        run_release(cfg, spark=spark, rng=SeededRandom(b"x"), progress=messages.append)
    assert "582" not in str(err.value) and not any("582" in m for m in messages)
    assert not cfg.output.exists()
    records = Ledger(ledger).releases("demo.queries")
    assert [r.status for r in records] == ["failed"]  # spent before reading, never refunded
    assert Ledger(ledger).spent("demo.queries").epsilon == Fraction(1)


def test_budget_exhaustion_refuses_before_reading(spark, tmp_path: Path) -> None:
    dataset(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    extra = f'[budget]\nledger = "{ledger}"\ndataset = "demo.q"\ntotal_epsilon = "3/2"\ntotal_delta = "1/1000"'
    first = load_config(config(tmp_path, "stability", extra=extra))
    run_release(first, spark=spark, rng=SeededRandom(b"1"), progress=lambda m: None)
    second = load_config(config(tmp_path, "stability", extra=extra), output=str(tmp_path / "release2"))
    (tmp_path / "in.parquet").unlink()  # proves no data is read: the refusal comes first
    with pytest.raises(BudgetExceeded, match="1/2"):
        run_release(second, spark=spark, rng=SeededRandom(b"2"), progress=lambda m: None)
    assert not second.output.exists()


def test_pad_seconds_pads_the_noise_step(spark, tmp_path: Path) -> None:
    """privacy.pad_seconds: the driver's noise step (from "drawing noise" to "writing") lasts at least the pad."""
    import time

    dataset(tmp_path)
    text = config(tmp_path, "stability").read_text().replace("unit_column", 'pad_seconds = "3"\nunit_column')
    (tmp_path / "pad.toml").write_text(text)
    stamps: dict[str, float] = {}

    def progress(message: str) -> None:
        stamps.setdefault(message.split(" ")[0], time.monotonic())

    run_release(load_config(tmp_path / "pad.toml"), spark=spark, rng=SeededRandom(b"pad"), progress=progress)
    assert stamps["writing"] - stamps["drawing"] >= 3.0
