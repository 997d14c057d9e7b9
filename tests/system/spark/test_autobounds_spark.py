"""Bounds chosen privately on Spark: the pre-pass and the release equal the Arrow engine's under one seed.

One small table with units (several rows per unit and group, so the c-row choice matters), NULL and infinite
values, read as a Spark DataFrame; the stated bounds and every release file but the manifest match.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

AGGS = [{"name": "n", "kind": "count"}, {"name": "s", "kind": "sum", "column": "x"},
        {"name": "m", "kind": "mean", "column": "x"}, {"name": "v", "kind": "variance", "column": "y"},
        {"name": "q", "kind": "quantile", "column": "y", "q": "1/2"}]


def _table(n: int = 4000) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(8)
    x = rng.exponential(300, n).round(2).astype(object)
    x[rng.random(n) < 0.03] = None
    y = rng.normal(-20, 15, n)
    y[rng.random(n) < 0.01] = float("inf")
    return pa.table({"k": pa.array(rng.choice(["a", "b", "c"], n).tolist()), "u": pa.array(rng.integers(0, 600, n)),
                     "x": pa.array(x.tolist(), pa.float64()), "y": pa.array(y, pa.float64())})


def _release(data: Any, out: Path, spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(data, max_units=5000, unit_column="u", spark=spark, rng=SeededRandom(4)) as s:
        return s.groups(by="k", keys=["a", "b", "c"], aggregates=AGGS, epsilon="2", max_groups_per_unit=2,
                        max_rows_per_group=3, output=out)


def _files(rel: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


def _bounds(rel: Path) -> Any:
    return json.loads((rel / "manifest.json").read_text())["mechanism"]["parameters"]["bounds"]


def test_auto_bounds_identical_on_arrow_and_spark(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(_table(), path)
    on_arrow = _release(path, tmp_path / "arrow")
    on_spark = _release(spark.read.parquet(str(path)), tmp_path / "spark", spark=spark)
    assert on_spark.to_arrow().equals(on_arrow.to_arrow())
    assert _bounds(tmp_path / "spark") == _bounds(tmp_path / "arrow")
    assert _files(tmp_path / "spark") == _files(tmp_path / "arrow")
    assert set(_bounds(tmp_path / "arrow")["columns"]) == {"x", "y"}
