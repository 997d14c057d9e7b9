"""Compact releases end to end on the shared local Spark: config -> counts -> polynomial -> release -> lookups."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli_main
from dpspark.api.config import load_config
from dpspark.engine.runner import count_mechanism, run_release
from dpspark.lookup import KeyNotInUniverseError, open_release
from dpspark.mechanisms.compact.reader import CompactReleaseLookup
from dpspark.release import ReleaseExistsError
from dpspark.rng import SeededRandom

pytestmark = pytest.mark.spark

#: per-key false-alarm rate of the error-bar checks below
TEST_BETA = "1/1000000000"


def write_units(path: Path, true: dict, key_type: pa.DataType) -> None:
    """One row per (unit, key) with each unit's key repeated (it must count once); a NULL-unit row."""
    users, keys = [], []
    uid = 0
    for k, c in true.items():
        for _ in range(c):
            uid += 1
            users += [uid, uid]
            keys += [k, k]
    users.append(None)
    keys.append(next(iter(true)))
    pq.write_table(pa.table({"user_id": pa.array(users, pa.int64()), "k": pa.array(keys, key_type)}), path)


def write_config(tmp_path: Path, universe: str, *, n: int, name: str = "c", extra: str = "", data: str = "in.parquet") -> Path:
    p = tmp_path / f"{name}.toml"
    p.write_text(f"""
[input]
path = "{data}"
[keys]
columns = ["k"]
[universe]
{universe}
[privacy]
mechanism = "compact"
epsilon = "1"
max_units = {n}
unit_column = "user_id"
{extra}
[output]
path = "{name}-release"
""")
    return p


def quiet(_msg: str) -> None:
    pass


def test_tiny_universe_every_key_and_the_file_format(spark, tmp_path: Path) -> None:
    true = {3: 40, 7: 25, 9: 1}
    write_units(tmp_path / "in.parquet", true, pa.int64())
    cfg = load_config(write_config(tmp_path, 'kind = "int_range"\nlo = 0\nhi = 9', n=80))
    shown: list[str] = []
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"compact-tiny"), progress=shown.append)
    assert sorted(p.name for p in out.iterdir()) == ["coefficients.arrow", "manifest.json"]
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # atomic: no temporary directory left
    assert any("building the polynomial" in s for s in shown)
    assert not any(str(len(true)) in s.split("(")[0] for s in shown if "compact" in s)  # no |S| in stage names
    rel = open_release(out)
    assert isinstance(rel, CompactReleaseLookup)
    assert rel.ell == 81 and rel.manifest.kind == "compact"
    bar = count_mechanism(cfg).accuracy(TEST_BETA)
    every = rel.counts(list(range(10))).tolist()
    assert every == [rel.count(k) for k in range(10)]  # batched path = scalar path
    for k in range(10):
        assert abs(every[k] - true.get(k, 0)) <= bar, k  # false alarm <= 1e-9 per key, empty or not
    est = rel.estimate(5)
    assert est.holds_above == -1 and "every key" in est.condition and "every bin of the universe" in est.condition
    # the coefficient file: one fixed_size_binary(m/8) column, exactly l rows, l*m/8 value bytes
    with pa.memory_map(str(out / "coefficients.arrow")) as src:
        table = ipc.open_file(src).read_all()
    assert table.num_rows == rel.ell and table.schema[0].type == pa.binary(rel.m // 8)
    assert (out / "coefficients.arrow").stat().st_size >= rel.ell * rel.m // 8
    with pytest.raises(KeyNotInUniverseError) as err:
        rel.count(10)
    assert "10" not in str(err.value).split(":")[0]
    with pytest.raises(ReleaseExistsError):  # a published release is never overwritten
        run_release(cfg, spark=spark, rng=SeededRandom(b"again"), progress=quiet)
    assert open_release(out).counts(list(range(10))).tolist() == every


def test_nothing_in_the_release_depends_on_the_number_of_distinct_keys(spark, tmp_path: Path) -> None:
    universe = 'kind = "int_range"\nlo = 0\nhi = 999'
    outs = []
    for name, true in (("few", {1: 3}), ("many", {k: 1 for k in range(0, 600, 7)})):
        write_units(tmp_path / f"{name}.parquet", true, pa.int64())
        cfg = load_config(write_config(tmp_path, universe, n=200, name=name, data=f"{name}.parquet"))
        outs.append(run_release(cfg, spark=spark, rng=SeededRandom(name.encode()), progress=quiet))
    a, b = (json.loads((o / "manifest.json").read_text()) for o in outs)
    assert a["compact"] == b["compact"] and a["privacy"] == b["privacy"] and a["accuracy"] == b["accuracy"]
    assert a["files"]["coefficients.arrow"]["bytes"] == b["files"]["coefficients.arrow"]["bytes"]
    for m in (a, b):
        for section in ("input", "config", "mechanism"):
            m.pop(section)
        m.pop("created_utc"), m.pop("manifest_sha256"), m["files"]["coefficients.arrow"].pop("sha256")
    assert a == b


def test_huge_universe_of_strings(spark, tmp_path: Path) -> None:
    true = {"café": 30, "tea": 12, "": 5}
    write_units(tmp_path / "in.parquet", true, pa.string())
    cfg = load_config(write_config(tmp_path, 'kind = "string"\nmax_bytes = 8', n=100))
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"compact-strings"), progress=quiet)
    rel = open_release(out)
    assert rel.m == 128  # |X| = (256^9 - 1)/255 > 2^64
    bar = count_mechanism(cfg).accuracy(TEST_BETA)
    keys = ["café", "tea", "", "absent", "zzzzzzzz"]
    got = rel.counts(keys).tolist()
    for k, v in zip(keys, got):
        assert abs(v - true.get(k, 0)) <= bar, k
    with pytest.raises(KeyNotInUniverseError):
        rel.counts(["way too long a key"])


def test_64_bit_ints_through_the_cli_and_spark_submit_entry(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    true = {-(2**63): 9, 2**63 - 1: 14, 0: 3}
    write_units(tmp_path / "in.parquet", true, pa.int64())
    cfg_path = write_config(tmp_path, f'kind = "int_range"\nlo = {-(2**63)}\nhi = {2**63 - 1}', n=60)
    # the spark-submit entry point runs this same command with the active session
    assert cli_main(["release", "--use-active-spark", "--config", str(cfg_path)]) == 0
    out = Path(capsys.readouterr().out.strip().splitlines()[-1])
    rel = open_release(out)
    assert rel.m == 128 and rel.manifest.rng_test_only is False  # m = 64 cannot fit |X| = 2^64 and the sampler bound
    assert cli_main(["lookup", str(out), str(-(2**63)), "12345"]) == 0
    text = capsys.readouterr().out
    assert "every key" in text and "noisy count" in text
    assert cli_main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert "GF(2^128)" in text and "l = 61 coefficients" in text and "all files match" in text
    assert cli_main(["plot", str(out), "-o", str(tmp_path / "p.png")]) == 2
    assert "sparse release" in capsys.readouterr().err
    assert cli_main(["release", "--use-active-spark", "--config", str(cfg_path)]) == 2  # rerun refused
    assert "already exists" in capsys.readouterr().err


def test_spark_helper_agrees_with_the_library(spark, tmp_path: Path) -> None:
    from dpspark.mechanisms.compact.spark_lookup import lookup_dataframe

    true = {"a": 7, "bb": 3}
    write_units(tmp_path / "in.parquet", true, pa.string())
    cfg = load_config(write_config(tmp_path, 'kind = "string"\nmax_bytes = 3', n=40))
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"compact-helper"), progress=quiet)
    rel = open_release(out)
    keys = ["a", "bb", "", "xyz", "zz", "a", None, "toolong"]
    df = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "row int, word string")
    got = {r["row"]: r["noisy_count"] for r in lookup_dataframe(df, rel, ["word"]).collect()}
    expected = rel.counts(keys[:6]).tolist()
    assert [got[i] for i in range(6)] == expected
    assert got[6] is None and got[7] is None  # null key, key outside the universe
