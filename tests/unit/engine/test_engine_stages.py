"""Engine stages on Spark: exact clipped fixed-point sums, disjoint batches, multi-pass runs with a cached input."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.engine.spark.backend import SparkBackend
from dpspark.engine.stages import DECIMAL38_MAX, SumsStage
from dpspark.rng import SeededRandom

pytestmark = pytest.mark.spark


def table() -> pa.Table:
    """Values are multiples of 1/8, so round(x * 2^3) is exact; unit 3 sums above the clip range."""
    users = [1, 1, 2, 3, 3, 3, 4, 5]
    x = [0.5, 0.25, -1.0, 4.0, 4.0, 4.0, None, 0.125]
    y = [1, 2, 3, 4, 5, 6, 7, 8]
    return pa.table({"u": pa.array(users, pa.int64()), "x": pa.array(x, pa.float64()), "y": pa.array(y, pa.int64())})


def expected(lo: int, hi: int, scale: int, col: str, rows: pa.Table, bound: int) -> int:
    per_unit: dict[int, int] = {}
    for r in rows.to_pylist():
        v = r[col] or 0
        v = max(-bound, min(bound, int(v * (1 << scale))))
        per_unit[r["u"]] = per_unit.get(r["u"], 0) + v
    return sum(max(lo, min(hi, s)) for s in per_unit.values())


def test_clipped_sums_are_exact(spark, tmp_path: Path) -> None:
    pq.write_table(table(), tmp_path / "t.parquet")
    stage = SumsStage(columns=("x", "y"), lo=(-4, 0), hi=(40, 50), scale_bits=3, unit_column="u", max_units=10)
    ctx = SparkBackend(spark.read.parquet(str(tmp_path / "t.parquet")), SeededRandom(b"s"))
    (out,) = ctx.compute(stage)
    assert out["units"] == 5
    assert out["sum_x"] == expected(-4, 40, 3, "x", table(), 40)  # unit 3: 3 x 32 = 96 clipped to 40
    assert out["sum_y"] == expected(0, 50, 3, "y", table(), 50)
    assert stage.sensitivity() == (40, 50)


def test_capacity_is_checked_before_any_data() -> None:
    with pytest.raises(ValueError, match="decimal"):
        SumsStage(columns=("x",), lo=(0,), hi=(DECIMAL38_MAX // 10,), scale_bits=0, unit_column="u", max_units=11)
    SumsStage(columns=("x",), lo=(0,), hi=(DECIMAL38_MAX // 10,), scale_bits=0, unit_column="u", max_units=10)


def test_batches_are_stable_and_content_free(spark, tmp_path: Path) -> None:
    """Same key: adding a unit moves no other unit, and changing a unit's records keeps its batch."""
    from dpspark.engine.spark.sums import BATCH, with_batches

    base = pa.table({"u": pa.array(range(200), pa.int64()), "x": pa.array([1.0] * 200)})
    more = pa.concat_tables([base, pa.table({"u": pa.array([999], pa.int64()), "x": pa.array([5.0])})])
    changed = pa.table({"u": pa.array(range(200), pa.int64()), "x": pa.array([7.0] * 200)})
    secret = bytes(range(16))
    maps = []
    for t in (base, more, changed):
        df = spark.createDataFrame(t)
        rows = with_batches(df, "u", 8, secret).select("u", BATCH).collect()
        maps.append({r["u"]: r[BATCH] for r in rows})
    assert {u: maps[1][u] for u in maps[0]} == maps[0]
    assert maps[2] == maps[0]
    assert len(set(maps[0].values())) == 8  # 200 units fill all 8 batches (keyed hash spreads them)


def test_multi_pass_reads_once_and_passes_public_output_forward(spark, tmp_path: Path) -> None:
    pq.write_table(table(), tmp_path / "t.parquet")
    ctx = SparkBackend(spark.read.parquet(str(tmp_path / "t.parquet")), SeededRandom(b"mp"), cache_input=True)
    assert ctx.frame.is_cached
    first = ctx.compute(SumsStage(columns=("y",), lo=(0,), hi=(100,), scale_bits=0, unit_column="u", max_units=10,
                               batches=3))
    assert [b["batch"] for b in first] == [0, 1, 2] and sum(b["units"] for b in first) == 5
    # the next pass's clip range is a function of the previous pass's (here: stand-in public) output
    hi = max(1, max(b["sum_y"] for b in first) // 2)
    second = ctx.compute(SumsStage(columns=("y",), lo=(0,), hi=(hi,), scale_bits=0, unit_column="u", max_units=10,
                                batches=3))
    assert ctx.passes_run == 2
    assert [b["units"] for b in second] == [b["units"] for b in first]  # same batch key in every pass
    ctx.close()
    assert not ctx.frame.is_cached


def test_outer_products_are_exact_with_an_exact_norm_test(spark, tmp_path: Path) -> None:
    """sum y y^T over rows with ||y||^2 <= B^2, y = A x: exact integers, boundary rows decided exactly."""
    from fractions import Fraction

    from dpspark.engine.stages import OuterProductStage

    # x in units of 1/4 (scale_bits = 2); the third row sits exactly on the norm boundary, the fourth just outside
    rows = [(1.0, 0.5, 1), (0.25, -0.75, 2), (1.5, 2.0, 3), (1.5, 2.25, 4), (None, 1.0, 5)]
    t = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "u": [r[2] for r in rows]})
    pq.write_table(t, tmp_path / "o.parquet")
    A = ((2, 1), (0, 1))
    bound_sq = (2 * 6 + 8) ** 2 + 8 ** 2  # ||A x||^2 of row 3 in fixed point: x = (6, 8) -> y = (20, 8)
    stage = OuterProductStage(columns=("a", "b"), scale_bits=2, norm_bound_sq=bound_sq, matrix=A)
    ctx = SparkBackend(spark.read.parquet(str(tmp_path / "o.parquet")), SeededRandom(b"op"))
    (out,) = ctx.compute(stage)
    want_rows = []
    for a, b, _ in rows:
        x = [int(Fraction(a or 0) * 4), int(Fraction(b) * 4)]
        y = [sum(r * v for r, v in zip(row, x)) for row in A]
        if y[0] ** 2 + y[1] ** 2 <= bound_sq:
            want_rows.append(y)
    assert out["kept"] == len(want_rows) == 4  # row 3 sits exactly on the bound and passes; row 4 fails
    for i, j in stage.pairs():
        assert out[f"sum_{i}_{j}"] == sum(y[i] * y[j] for y in want_rows)
    with pytest.raises(ValueError, match="unit id column"):
        OuterProductStage(columns=("a",), scale_bits=0, norm_bound_sq=4, batches=2)
