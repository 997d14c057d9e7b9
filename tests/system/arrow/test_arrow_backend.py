"""The Arrow engine computes exactly the Spark engine's count stage: same files, same seed, same (indexes, counts).

Every case runs both backends over the same Parquet (or CSV) file with the same seeded generator and
asserts equal outputs and an equal generator state afterwards (the same draws at the same points).
The cases are chosen so that every bound binds: units hold several keys and several rows per key,
truncation drops units, NULL keys/units and out-of-universe keys are present.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from dpspark.engine.arrow.backend import ArrowBackend
from dpspark.engine.arrow.counts import spark_hash
from dpspark.engine.backend import CuratorError
from dpspark.engine.spark.backend import SparkBackend
from dpspark.engine.stages import CountsStage
from dpspark.rng import SeededRandom
from dpspark.engine.spark.counts import InputError
from dpspark.universe import universe_from_dict

ROWS = 3000
CATS = ["de", "fr", "it", "es", "nl", "pl"]


def make_table(rows: int = ROWS, seed: int = 3) -> pa.Table:
    """Synthetic rows (numpy's seeded generator only builds test inputs): skewed keys, NULLs, outsiders."""
    g = np.random.default_rng(seed)
    user = g.integers(0, rows // 6, rows) * 7919 - 10**6  # ~500 units, several rows each, negative ids too
    key = np.minimum(g.zipf(1.6, rows), 60) - 3  # -2..57: some below lo = 0 (outside the universe)
    null_key = g.random(rows) < 0.03
    null_user = g.random(rows) < 0.03
    words = ["", "a", "é", "日本", "zz", "toolongforthe8bytes", "q\x00"]
    cat = [CATS[i] if i < len(CATS) else "xx" for i in g.integers(0, len(CATS) + 1, rows)]
    text = [words[i] for i in g.integers(0, len(words), rows)]
    return pa.table({
        "user": pa.array(user, pa.int64(), mask=null_user),
        "user_s": pa.array([f"u{u}" if u % 5 else f"ü-{u}-{'x' * (u % 40)}" for u in user], pa.string(), mask=null_user),
        "user_i32": pa.array((user // 7919).astype(np.int32), pa.int32(), mask=null_user),
        "key": pa.array(key, pa.int64(), mask=null_key),
        "cat": pa.array(cat, pa.string()),
        "text": pa.array(text, pa.string(), mask=null_key),
        "blob": pa.array([t.encode() for t in text], pa.binary()),
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("arrow") / "rows.parquet"
    pq.write_table(make_table(), path, row_group_size=700)  # several row groups: several Arrow batches
    return path


UNIVERSES = {
    "int_range": (("key",), {"kind": "int_range", "lo": 0, "hi": 40}),
    "categorical": (("cat",), {"kind": "categorical", "values": CATS}),
    "string": (("text",), {"kind": "string", "max_bytes": 8}),
    "string_wide": (("text",), {"kind": "string", "max_bytes": 20}),  # |X| > 2^128: 32-byte index words
    "bytes": (("blob",), {"kind": "bytes", "max_bytes": 8}),
    "hashed": (("text",), {"kind": "hashed", "bits": 6, "key_type": "string"}),  # collisions: re-aggregated
    "hashed_int": (("key",), {"kind": "hashed", "bits": 5, "key_type": "int"}),
    "tuple": (("cat", "key"), {"kind": "tuple", "components": [{"kind": "categorical", "values": CATS},
                                                                {"kind": "int_range", "lo": 0, "hi": 30}]}),
}


def stage(universe: str = "int_range", **kw) -> CountsStage:
    cols, spec = UNIVERSES[universe]
    base = dict(key_columns=cols, universe=universe_from_dict(spec), unit_column="user", out_of_universe="drop",
                max_units=10**6)
    return CountsStage(**{**base, **kw})


def both(spark, path: Path, st: CountsStage, seed: bytes = b"arrow-vs-spark", fmt: str = "parquet",
         options: dict[str, str] | None = None) -> tuple[list[int], list[int]]:
    """Run the stage on both backends; assert identical outputs and generator states; return the output."""
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "false")
    for k, v in (options or {}).items():
        reader = reader.option(k, v)
    r_spark, r_arrow = SeededRandom(seed), SeededRandom(seed)
    on_spark = SparkBackend(reader.load(str(path)), r_spark).compute(st)
    on_arrow = ArrowBackend(path, r_arrow, format=fmt, options=options).compute(st)
    assert on_arrow == on_spark
    assert r_arrow.bits(64) == r_spark.bits(64)  # the same draws were made
    return on_arrow


def both_raise(spark, path: Path, st: CountsStage, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        SparkBackend(spark.read.parquet(str(path)), SeededRandom(b"e")).compute(st)
    with pytest.raises(error, match=match):
        ArrowBackend(path, SeededRandom(b"e")).compute(st)


# ------------------------------------------------------------------------------------------ xxhash64
@pytest.mark.spark
def test_xxhash64_matches_spark_on_random_values(spark) -> None:
    from pyspark.sql import functions as F

    g = np.random.default_rng(17)
    n = 1000
    longs = g.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    longs[:4] = [0, -1, 2**63 - 1, -2**63]
    ints = g.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    strs = ["".join(chr(c) for c in g.integers(32, 0x3000, g.integers(0, 90))) for _ in range(n)]
    bins = [bytes(g.integers(0, 256, g.integers(0, 110), dtype=np.uint8)) for _ in range(n)]
    words = [bytes(g.integers(0, 256, 16 if i % 2 else 32, dtype=np.uint8)) for i in range(n)]
    t = pa.table({"l": longs, "i": ints, "s": strs, "b": pa.array(bins, pa.binary()), "w": pa.array(words, pa.binary())})
    got = spark.createDataFrame(t.to_pandas()).select(
        F.xxhash64("l"), F.xxhash64("i"), F.xxhash64("s"), F.xxhash64("b"), F.xxhash64("l", "w"), F.xxhash64("s", "b"),
    ).toArrow()
    expect = [
        spark_hash(t["l"]), spark_hash(t["i"]), spark_hash(t["s"]), spark_hash(t["b"]),
        spark_hash(t["w"], seed=spark_hash(t["l"])), spark_hash(t["b"], seed=spark_hash(t["s"])),
    ]
    for j, mine in enumerate(expect):
        assert np.array_equal(mine.view(np.int64), got.column(j).to_numpy()), got.column_names[j]


def test_xxhash64_reference_vectors_and_refusals() -> None:
    from dpspark.engine.xxhash64 import hash_bytes

    # XXH64 reference values (Collet's test vectors): empty input, seeds 0 and 1
    assert int(hash_bytes(np.array([0, 0]), np.zeros(0, np.uint8), 0)[0]) == 0xEF46DB3751D8E999
    assert int(hash_bytes(np.array([0, 0]), np.zeros(0, np.uint8), 1)[0]) == 0xD5AFBA1336A3BE4B
    with pytest.raises(InputError, match="column 'ts' has type timestamp"):
        spark_hash(pa.array([1, 2], pa.timestamp("us")), "ts")


# ------------------------------------------------------------------------------------------ equality
@pytest.mark.spark
def test_core_cases_equal_on_both_engines(spark, data: Path) -> None:
    """The fast subset (the full matrix is marked slow): row level, unit level with k, c and truncation."""
    both(spark, data, stage("tuple", unit_column=None))
    both(spark, data, stage(unit_column="user", max_units=100, max_keys_per_unit=3, max_rows_per_key=2))


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("universe", sorted(UNIVERSES))
def test_row_level_counts_equal_for_every_universe_kind(spark, data: Path, universe: str) -> None:
    idx, cnt = both(spark, data, stage(universe, unit_column=None))
    assert idx and sum(cnt) > 0


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("universe", ["int_range", "tuple", "string_wide", "hashed"])
def test_unit_level_pick_equal_for_universe_kinds(spark, data: Path, universe: str) -> None:
    both(spark, data, stage(universe))


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("unit", ["user", "user_s", "user_i32"])
@pytest.mark.parametrize("k,c", [(1, 1), (3, 1), (1, 4), (3, 2)])
def test_unit_level_bounds_equal_for_int_and_string_units(spark, data: Path, unit: str, k: int, c: int) -> None:
    idx, cnt = both(spark, data, stage(unit_column=unit, max_keys_per_unit=k, max_rows_per_key=c))
    assert sum(cnt) <= 500 * k * c


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("unit", ["user", "user_s"])
def test_unit_truncation_equal(spark, data: Path, unit: str) -> None:
    full = both(spark, data, stage(unit_column=unit, max_keys_per_unit=2, max_rows_per_key=2))
    cut = both(spark, data, stage(unit_column=unit, max_units=100, max_keys_per_unit=2, max_rows_per_key=2))
    assert sum(cut[1]) < sum(full[1])
    both(spark, data, stage(unit_column=unit, max_units=37))


@pytest.mark.slow
@pytest.mark.spark
def test_row_level_truncation_and_refusals_equal(spark, data: Path) -> None:
    idx, cnt = both(spark, data, stage("categorical", unit_column=None, max_units=1000))
    assert sum(cnt) == 1000
    both_raise(spark, data, stage("categorical", unit_column=None, max_units=1000, on_excess_units="refuse"),
               CuratorError, "more rows than privacy.max_units = 1000")
    both_raise(spark, data, stage(max_units=100, on_excess_units="refuse"), CuratorError,
               "more units than privacy.max_units = 100")
    both(spark, data, stage(max_units=10**4, on_excess_units="refuse", max_keys_per_unit=2))


@pytest.mark.slow
@pytest.mark.spark
def test_out_of_universe_drop_and_error_equal(spark, data: Path) -> None:
    for universe in ("int_range", "categorical", "string", "tuple"):
        both_raise(spark, data, stage(universe, out_of_universe="error"), CuratorError, "outside the declared universe")
        both_raise(spark, data, stage(universe, unit_column=None, out_of_universe="error"), CuratorError,
                   "outside the declared universe")
    # after truncation, only the kept units' keys are checked (on both engines)
    ok = stage("hashed", out_of_universe="error", max_units=50)
    both(spark, data, ok)


@pytest.mark.slow
@pytest.mark.spark
def test_csv_strings_and_inferred_ints_equal(spark, tmp_path: Path) -> None:
    t = make_table(1200, seed=9).select(["user", "user_s", "cat"])
    pcsv.write_csv(t, tmp_path / "rows.csv")
    st = CountsStage(key_columns=("cat",), universe=universe_from_dict({"kind": "categorical", "values": CATS}),
                     unit_column="user", out_of_universe="drop", max_units=80, max_keys_per_unit=2)
    both(spark, tmp_path / "rows.csv", st, fmt="csv")  # every column a string on both
    both(spark, tmp_path / "rows.csv", st, fmt="csv", options={"inferSchema": "true"})  # user: IntegerType/int32 hash
    st_key = CountsStage(key_columns=("user",), universe=universe_from_dict({"kind": "int_range", "lo": -10**6, "hi": 0}),
                         unit_column=None, out_of_universe="drop", max_units=10**6)
    both(spark, tmp_path / "rows.csv", st_key, fmt="csv", options={"inferSchema": "true"})


def test_arrow_context_reads_a_table_and_refuses_remote_paths(tmp_path: Path) -> None:
    t = pa.table({"k": pa.array([1, 2, 2, None, 99], pa.int64()), "u": pa.array([1, 2, 3, 4, None], pa.int64())})
    st = CountsStage(key_columns=("k",), universe=universe_from_dict({"kind": "int_range", "lo": 0, "hi": 9}),
                     unit_column=None, out_of_universe="drop", max_units=100)
    assert ArrowBackend(t, SeededRandom(b"t")).compute(st) == ([1, 2], [1, 2])  # 0-based: key 1 -> 1
    with pytest.raises(InputError, match="local files only"):
        ArrowBackend("s3a://bucket/x.parquet", SeededRandom(b"t"))
    with pytest.raises(InputError, match="no column\\(s\\) 'nope'"):
        ArrowBackend(t, SeededRandom(b"t")).compute(CountsStage(
            key_columns=("nope",), universe=st.universe, unit_column=None, out_of_universe="drop", max_units=9))
    pcsv.write_csv(t, tmp_path / "t.csv")
    with pytest.raises(InputError, match="not reproduced by the Arrow engine"):
        ArrowBackend(tmp_path / "t.csv", SeededRandom(b"t"), options={"multiLine": "true"})


# ------------------------------------------------------------------------------------------ the job
def _release_config(tmp_path: Path, data: Path, name: str, mechanism: str) -> Path:
    delta = 'delta = "1e-6"' if mechanism == "stability" else ""
    text = f"""
[input]
path = "{data}"
[keys]
columns = ["key"]
[universe]
kind = "int_range"
lo = 0
hi = 40
[privacy]
mechanism = "{mechanism}"
epsilon = "1"
{delta}
max_units = 300
unit_column = "user"
max_keys_per_unit = 2
[output]
path = "{name}"
"""
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


@pytest.mark.spark
@pytest.mark.parametrize("mechanism", ["stability", "dense"])
def test_release_bins_identical_on_both_engines(spark, data: Path, tmp_path: Path, mechanism: str) -> None:
    from dpspark.api.config import load_config
    from dpspark.engine.runner import run_release

    quiet = lambda m: None  # noqa: E731
    on_arrow = run_release(load_config(_release_config(tmp_path, data, "a", mechanism)), engine="arrow",
                           rng=SeededRandom(b"job"), progress=quiet)
    on_spark = run_release(load_config(_release_config(tmp_path, data, "s", mechanism)), spark=spark,
                           rng=SeededRandom(b"job"), progress=quiet)
    assert pq.read_table(on_arrow / "bins.parquet").equals(pq.read_table(on_spark / "bins.parquet"))


def test_engine_choice(tmp_path: Path, data: Path) -> None:
    from dpspark.api.config import ConfigError, load_config
    from dpspark.engine.runner import choose_engine

    cfg = load_config(_release_config(tmp_path, data, "c", "dense"))
    assert choose_engine(cfg, None, have_spark=False) == "arrow"  # a local file, no session: no JVM
    assert choose_engine(cfg, None, have_spark=True) == "spark"  # a session or DataFrame given: Spark
    assert choose_engine(cfg, "spark", have_spark=False) == "spark"
    with pytest.raises(ConfigError, match="engine 'arrow' reads a local file input only"):
        choose_engine(cfg, "arrow", have_spark=True)
    with pytest.raises(ConfigError, match="engine must be"):
        choose_engine(cfg, "duckdb", have_spark=False)


def test_cli_release_defaults_to_arrow_for_a_local_file(tmp_path: Path, data: Path,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    from dpspark.cli.app import main

    cfg = _release_config(tmp_path, data, "cli", "stability")
    assert main(["release", "--config", str(cfg)]) == 0
    log = capfd.readouterr().err
    assert "counting keys on Arrow" in log and "Spark" not in log
    assert main(["release", "--config", str(cfg), "--output", str(tmp_path / "x"), "--engine", "arrow",
                 "--master", "local[1]"]) == 2
    assert "--engine arrow runs on this machine without Spark" in capfd.readouterr().err


@pytest.mark.slow
@pytest.mark.spark
def test_json_lines_and_orc_equal(spark, tmp_path: Path) -> None:
    import json

    import pyarrow.orc as porc

    t = make_table(1500, seed=13).select(["user", "user_s", "cat", "key"])
    with open(tmp_path / "rows.json", "w", encoding="utf-8") as f:
        for row in t.to_pylist():
            f.write(json.dumps(row) + "\n")
    porc.write_table(t, tmp_path / "rows.orc")
    for fmt in ("json", "orc"):
        path = tmp_path / f"rows.{fmt}"
        both(spark, path, stage("tuple", unit_column="user", max_units=90, max_keys_per_unit=2, max_rows_per_key=2), fmt=fmt)
        both(spark, path, stage("categorical", unit_column="user_s", max_keys_per_unit=2), fmt=fmt)


def test_fixed_width_hash_and_tie_breaks_match_the_general_paths() -> None:
    from dpspark.engine.arrow.counts import _first_k_per_unit
    from dpspark.engine.xxhash64 import hash_bytes, hash_fixed

    g = np.random.default_rng(5)
    for width in (8, 16, 24, 32, 40, 13):
        m = g.integers(0, 256, (300, width), dtype=np.uint8)
        seeds = g.integers(-2**63, 2**63 - 1, 300, dtype=np.int64).view(np.uint64)
        assert np.array_equal(hash_fixed(m, seeds), hash_bytes(np.arange(301) * width, m.reshape(-1), seeds))
    # many 64-bit hash ties inside units: the index word (unsigned bytes) must decide, as Spark's ORDER BY does
    n = 400
    units = g.integers(0, 40, n)
    pick = g.integers(-3, 3, n).astype(np.int64)
    words = g.integers(0, 256, (n, 16), dtype=np.uint8)
    for k in (1, 2, 5):
        got = set(_first_k_per_unit(units, pick, words, k).tolist())
        want = set()
        for u in set(units.tolist()):
            rows = [r for r in range(n) if units[r] == u]
            want |= set(sorted(rows, key=lambda r: (int(pick[r]), words[r].tobytes()))[:k])
        assert got == want
