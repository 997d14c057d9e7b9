"""The generic sums stage reads NULL and NaN as 0 and clips +-inf to the bound, identically on both engines.

Issue 20 §2: a NaN in a clipped sum counted as 0 on Arrow and as ``hi`` on Spark (Spark orders NaN above
every double, so the overflow guard turned it into +1e37 and the clip into hi).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from dpspark.engine.stages import SumsStage
from dpspark.engine.arrow.sums import arrow_sums

VALUES = [1.5, float("nan"), float("inf"), float("-inf"), None, -2.25, 3.0, float("nan")]
UNITS = [1, 1, 2, 3, 4, 4, 5, 6]


def _stage(unit: str | None) -> SumsStage:
    return SumsStage(columns=("x",), lo=(-8,), hi=(8,), scale_bits=2, unit_column=unit, max_units=100)


def _expected(unit: str | None) -> int:
    """By hand: 2^2 fixed point, NaN/NULL 0, +-inf at +-8 per row, then per-unit clip to [-8, 8]."""
    rows = [6, 0, 8, -8, 0, -9, 12, 0]  # round(x * 4), row-clipped to [-8, 8] (Delta = 8)
    rows = [max(-8, min(8, r)) for r in rows]
    if unit is None:
        return sum(rows)
    per: dict[int, int] = {}
    for u, r in zip(UNITS, rows):
        per[u] = per.get(u, 0) + r
    return sum(max(-8, min(8, v)) for v in per.values())


@pytest.mark.parametrize("unit", [None, "u"])
def test_arrow_sums_nan_inf(unit: str | None) -> None:
    table = pa.table({"x": pa.array(VALUES, pa.float64()), "u": pa.array(UNITS, pa.int64())})
    assert arrow_sums(table, _stage(unit), None)[0]["sum_x"] == _expected(unit)


@pytest.mark.spark
@pytest.mark.parametrize("unit", [None, "u"])
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_spark_sums_agree(spark: Any, unit: str | None, ansi: str) -> None:
    from dpspark.engine.spark.sums import clipped_sums, sum_column

    df = spark.createDataFrame(pa.table({"x": pa.array(VALUES, pa.float64()), "u": pa.array(UNITS, pa.int64())}))
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        row = clipped_sums(df, _stage(unit), None).to_pylist()[0]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)
    assert int(row[sum_column("x")]) == _expected(unit)
