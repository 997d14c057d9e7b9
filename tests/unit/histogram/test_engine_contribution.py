"""Contribution bounds (max_keys_per_unit, max_rows_per_key, on_excess_units): exact privacy and the Spark stage."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.api.config import ConfigError, ReleaseSpec
from dpspark.engine.backend import CuratorError
from dpspark.engine.spark.backend import SparkBackend
from dpspark.engine.stages import CountsStage
from dpspark.rng import SeededRandom
from dpspark.noise.verifier import exact_pmf
from dpspark.mechanisms.registry import construct

CITIES = ["a", "b", "c"]


def spec(tmp_path: Path, **privacy) -> ReleaseSpec:
    raw = {
        "keys": {"columns": ["city"]},
        "universe": {"kind": "categorical", "values": CITIES},
        "privacy": {"mechanism": "dense", "epsilon": "1", "max_units": 2, "unit_column": "user", **privacy},
        "output": {"path": str(tmp_path / "out")},
    }
    return ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)


def worst_shift_ratio(mech, shift: int) -> Fraction:
    """max over counts x, x + shift in [0, N] and outputs z of both ratios pmf_x(z)/pmf_{x+shift}(z), exactly."""
    worst = Fraction(0)
    pmfs = [exact_pmf(mech, x) for x in range(mech.n + 1)]
    for x in range(mech.n + 1 - shift):
        for p, q in zip(pmfs[x], pmfs[x + shift]):
            worst = max(worst, p / q, q / p)
    return worst


@pytest.mark.parametrize("k,c", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_dense_with_contribution_bounds_is_exactly_within_its_statement(tmp_path: Path, k: int, c: int) -> None:
    mech = construct(spec(tmp_path, max_keys_per_unit=k, max_rows_per_key=c, gamma="1/4"))
    counting = mech.counting
    assert counting.n == 2 * k * c  # counts lie in [0, k c n]
    # One unit moves at most k bins by at most c each; bins are independent, so the worst ratio of the
    # release is the product of k worst per-bin ratios at shift c (shifts below c are dominated).
    per_bin = max(worst_shift_ratio(counting, s) for s in range(1, c + 1))
    assert per_bin <= counting.exp_eps ** c
    worst_release = per_bin ** k
    st = mech.release_from_counts([0, 1], [1, 1], SeededRandom(b"k"), lambda m: None).privacy
    assert worst_release <= st.exp_eps  # the stated e^eps covers the exact worst case
    assert st.exp_eps == counting.exp_eps ** (k * c)
    if k * c > 1:  # mutant: the unscaled per-step claim (bounds forgotten) is violated by the exact law
        assert worst_release > counting.exp_eps


def test_bounds_need_a_unit_column_and_unsupported_mechanisms_say_why(tmp_path: Path) -> None:
    raw = {
        "keys": {"columns": ["city"]},
        "universe": {"kind": "categorical", "values": CITIES},
        "privacy": {"mechanism": "dense", "epsilon": "1", "max_units": 2, "max_keys_per_unit": 2},
        "output": {"path": str(tmp_path / "o")},
    }
    with pytest.raises(ConfigError, match="need privacy.unit_column"):
        ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)
    raw["privacy"] = {"mechanism": "kary_sampler", "epsilon": "1", "max_units": 1000,
                      "unit_column": "u", "max_rows_per_key": 2}
    with pytest.raises(ConfigError, match="does not support privacy.max_rows_per_key > 1"):
        ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)
    for mech, extra in (("stability", {"delta": "1e-6"}), ("pure_sparse", {}), ("compact", {}), ("dense", {})):
        raw["universe"] = {"kind": "int_range", "lo": 1, "hi": 10**5}
        raw["privacy"] = {"mechanism": mech, "epsilon": "1", "max_units": 1000, "unit_column": "u",
                          "max_keys_per_unit": 2, "max_rows_per_key": 3, **extra}
        if mech == "dense":
            raw["universe"]["hi"] = 100
        got = ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)  # data-free checks accept it
        assert got.max_rows_per_key == 3
        raw["universe"] = {"kind": "categorical", "values": CITIES}
    raw["privacy"] = {"mechanism": "dense", "epsilon": "1", "max_units": 2, "on_excess_units": "drop"}
    with pytest.raises(ConfigError, match="on_excess_units must be one of"):
        ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)


def test_pure_sparse_universe_bound_includes_k(tmp_path: Path) -> None:
    raw = {
        "keys": {"columns": ["k"]},
        "universe": {"kind": "int_range", "lo": 1, "hi": 40},
        "privacy": {"mechanism": "pure_sparse", "epsilon": "1", "max_units": 10, "unit_column": "u",
                    "max_keys_per_unit": 2},
        "output": {"path": str(tmp_path / "o")},
    }
    with pytest.raises(ConfigError, match="at least 2kn\\+1 = 41"):
        ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)


# ------------------------------------------------------------------ the Spark stage, exact counts


def rows_table() -> pa.Table:
    """Unit u has rows over keys; u0: a x5; u1: a, b, c; u2: b x2, c; u3: c."""
    users = [0] * 5 + [1, 1, 1] + [2, 2, 2] + [3]
    keys = ["a"] * 5 + ["a", "b", "c"] + ["b", "b", "c"] + ["c"]
    return pa.table({"user": pa.array(users, pa.int64()), "city": pa.array(keys)})


def stage(**kw) -> CountsStage:
    from dpspark.universe import universe_from_dict

    base = dict(key_columns=("city",), universe=universe_from_dict({"kind": "categorical", "values": CITIES}),
                unit_column="user", out_of_universe="drop", max_units=100)
    return CountsStage(**{**base, **kw})


@pytest.mark.spark
def test_spark_stage_applies_keys_rows_and_truncation_exactly(spark, tmp_path: Path) -> None:
    pq.write_table(rows_table(), tmp_path / "in.parquet")
    df = spark.read.parquet(str(tmp_path / "in.parquet"))

    def counts(**kw) -> dict[int, int]:
        ctx = SparkBackend(df, SeededRandom(b"bounds"))
        idx, cnt = ctx.compute(stage(**kw))
        assert idx == sorted(idx)
        return dict(zip(idx, cnt))

    one = counts()  # every unit keeps one key, one row
    assert sum(one.values()) == 4
    two = counts(max_keys_per_unit=2)  # u0: a; u1: two of a,b,c; u2: b and c; u3: c
    assert sum(two.values()) == 1 + 2 + 2 + 1
    assert two[2] >= 2  # c: u2 and u3 for sure
    rows = counts(max_keys_per_unit=3, max_rows_per_key=3)  # a: min(5,3) + 1; b: 1 + min(2,3); c: 1 + 1 + 1
    assert rows == {0: 4, 1: 3, 2: 3}
    all_rows = counts(max_keys_per_unit=3, max_rows_per_key=10)
    assert all_rows == {0: 6, 1: 3, 2: 3}  # no bound binds: plain row counts
    truncated = counts(max_units=2, max_keys_per_unit=3, max_rows_per_key=10)
    assert sum(truncated.values()) in {5 + 3, 5 + 1, 3 + 3, 3 + 1}  # two whole units (of 5, 3, 3, 1) kept
    with pytest.raises(CuratorError, match="more units than privacy.max_units = 2") as err:
        counts(max_units=2, on_excess_units="refuse")
    assert "4" not in str(err.value).replace("max_units = 2", "")


@pytest.mark.spark
def test_truncation_is_two_stable_on_neighbours(spark, tmp_path: Path) -> None:
    """Adding one unit changes the truncated counts by at most one unit removed and one added (<= 2 k c in l1)."""
    base = rows_table()
    extra = pa.table({"user": pa.array([9, 9], pa.int64()), "city": pa.array(["a", "b"])})
    pq.write_table(base, tmp_path / "d.parquet")
    pq.write_table(pa.concat_tables([base, extra]), tmp_path / "d2.parquet")
    kw = dict(max_units=2, max_keys_per_unit=2, max_rows_per_key=2)
    out = []
    for name in ("d", "d2"):
        ctx = SparkBackend(spark.read.parquet(str(tmp_path / f"{name}.parquet")), SeededRandom(b"same-key"))
        idx, cnt = ctx.compute(stage(**kw))
        out.append(dict(zip(idx, cnt)))
    l1 = sum(abs(out[0].get(x, 0) - out[1].get(x, 0)) for x in range(3))
    assert l1 <= 2 * 2 * 2


def test_row_level_truncation_keeps_exactly_n_rows() -> None:
    from dpspark.engine.backend import finish_counts

    st = stage(unit_column=None, max_units=7)
    idx, cnt = finish_counts([2, 0, 1], [5, 4, 3], st, SeededRandom(b"rows"))
    assert idx == sorted(idx) and sum(cnt) == 7
    full = {0: 4, 1: 3, 2: 5}
    assert all(c <= full[x] for x, c in zip(idx, cnt))
    with pytest.raises(CuratorError, match="more rows than privacy.max_units = 7"):
        finish_counts([2, 0, 1], [5, 4, 3], stage(unit_column=None, max_units=7, on_excess_units="refuse"),
                      SeededRandom(b"rows"))
    assert finish_counts([1, 0], [2, 3], st, SeededRandom(b"r")) == ([0, 1], [3, 2])  # within n: unchanged


@pytest.mark.spark
@pytest.mark.parametrize("mechanism,extra", [
    ("dense", {"max_keys_per_unit": 2, "max_rows_per_key": 2}),
    ("pure_sparse", {"max_keys_per_unit": 2}),
    ("compact", {"max_keys_per_unit": 2, "m": 64}),
])
def test_bounded_releases_are_written_read_and_accurate(spark, tmp_path: Path, mechanism: str, extra: dict) -> None:
    """k keys (and c rows) per unit, end to end: the release states the per-unit guarantee and reads back."""
    from dpspark.engine.runner import run_release
    from dpspark.lookup import open_release

    users = [u for u in range(60) for _ in range(3)]
    keys = [(u + j) % 5 + 1 for u in range(60) for j in range(3)]  # 3 rows per user over 3 distinct keys
    pq.write_table(pa.table({"user": pa.array(users, pa.int64()), "k": pa.array(keys, pa.int64())}),
                   tmp_path / "in.parquet")
    raw = {
        "input": {"path": str(tmp_path / "in.parquet")},
        "keys": {"columns": ["k"]},
        "universe": {"kind": "int_range", "lo": 1, "hi": 5 if mechanism == "dense" else 10**6},
        "privacy": {"mechanism": mechanism, "epsilon": "1", "max_units": 100, "unit_column": "user",
                    "beta": "1/1000000000", **extra},
        "output": {"path": str(tmp_path / "rel")},
    }
    spec = ReleaseSpec.from_dict(raw, base_dir=tmp_path)
    mech = construct(spec)
    out = run_release(spec, spark=spark, rng=SeededRandom(b"bounded"), progress=lambda m: None)
    rel = open_release(out)
    k, c = extra.get("max_keys_per_unit", 1), extra.get("max_rows_per_key", 1)
    m = rel.manifest
    assert m.max_units == 100 and m.count_range == 100 * k * c
    assert m.add_remove.relation.n == 100
    step = mech.compact_plan.mechanism if mechanism == "compact" else mech.counting
    assert m.add_remove.exp_eps == step.exp_eps ** (k * c)  # the per-unit statement (group privacy)
    assert m.add_remove.epsilon.le(Fraction(1))  # certified: within the requested epsilon
    bar = step.accuracy("1/1000000000")
    # each user keeps 2 of its 3 keys (k = 2): every key's true count lies in [24, 36] rows for dense (c = 2 caps a
    # user's single row per key at 1), and the total is 60 users x 2 keys.
    counts = [rel.count(x) for x in range(1, 6)]
    assert abs(sum(counts) - 60 * 2) <= 5 * bar
