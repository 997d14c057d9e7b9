"""Batched sums on a CSV read with inferSchema: Spark types an integral unit column IntegerType when every
value fits 32 bits and hashes it as an int; the Arrow engine reads int64 and must hash it the same way
(issue 24 §2: ``batch_of`` lacked the count stage's int32 rule), so both engines put each unit in the same
batch and return identical per-batch totals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dpspark.engine.stages import SumsStage
from dpspark.rng import SeededRandom

pytestmark = pytest.mark.spark


def _csv(path: Path, big: bool) -> None:
    rows = ["u,x"]
    for i in range(400):
        u = "" if i % 37 == 3 else str((i * 7919) % 150 - 40 + (3_000_000_000 if big and i == 5 else 0))
        rows.append(f"{u},{(i % 13) / 4 - 1}")
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("big", [False, True])
def test_csv_inferred_int_units_batch_alike(spark, tmp_path: Path, big: bool) -> None:
    from pyspark.sql.types import IntegerType, LongType

    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.engine.spark.backend import SparkBackend

    path = tmp_path / "in.csv"
    _csv(path, big)
    stage = SumsStage(columns=("x",), lo=(-6,), hi=(6,), scale_bits=2, unit_column="u", max_units=1000, batches=5)
    df = spark.read.option("header", "true").option("inferSchema", "true").csv(str(path))
    assert df.schema["u"].dataType == (LongType() if big else IntegerType())  # the rule, as Spark applies it
    on_spark = SparkBackend(df, SeededRandom(11)).compute(stage)
    arrow = ArrowBackend(str(path), SeededRandom(11), options={"inferSchema": "true"})
    assert arrow.dataset.schema.field("u").type == pa.int64()
    assert arrow.compute(stage) == on_spark
    assert len({r["units"] for r in on_spark}) > 1  # units spread over the batches


def test_int32_rule_moves_units() -> None:
    """Teeth: hashed as int64 instead of int32, the same ids land in other batches."""
    from dpspark.engine.arrow.sums import batch_of

    ids = pa.array(np.arange(-40, 110), pa.int64())
    key = bytes(range(16))
    as_int = batch_of(ids, key, 5, "u", int32_units=True)
    as_long = batch_of(ids, key, 5, "u")
    assert (as_int != as_long).mean() > 0.5
