"""Spark side of :class:`~dpspark.engine.stages.SumsStage`: clipped fixed-point sums per unit, exact totals, batches.

DataFrame API only. Values become integers (``round(x * 2^b)`` cast to decimal(38,0)), per-unit sums are
clipped with ``least``/``greatest`` on exact decimals, and the totals are decimal(38,0) sums, which are
exact and associative across partitions (float sums are not). Batch membership is H_key(unit) mod B with
the keyed numpy mix of :mod:`dpspark.engine.keyed` applied to Spark's xxhash64 of the unit id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dpspark.engine.stages import SumsStage
from dpspark.engine.spark.counts import HASH, UNIT_HASH, check_columns, keyed_pick_hash

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spark.backend import SparkBackend

BATCH = "__dp_batch"
UNITS = "units"


def sum_column(name: str) -> str:
    """The result column holding the clipped total of input column ``name``."""
    return f"sum_{name}"


def with_batches(df: "DataFrame", unit: str, batches: int, secret: bytes) -> "DataFrame":
    """``df`` with BATCH = H_key(unit) mod B (a stable, content-free assignment; the key is never written)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    hashed = df.withColumn(UNIT_HASH, F.xxhash64(F.col(unit)))
    schema = StructType(list(hashed.schema.fields) + [StructField(HASH, LongType(), False)])
    mixed = hashed.mapInArrow(keyed_pick_hash(secret), schema)
    return mixed.withColumn(BATCH, F.pmod(F.col(HASH), F.lit(batches))).drop(HASH, UNIT_HASH)


def _row_value(column: str, scale_bits: int, bound: int, dtype: Any = None):  # type: ignore[no-untyped-def]
    """One row's value as an exact decimal(38,0) integer in [-bound, bound] (NULL and NaN count as 0).

    ``dtype`` (the column's Spark type) reads it by :func:`dpspark.engine.numeric.spark_numeric`, a cast
    that cannot raise on data (text that is not a number is NULL); None: the column is already a double.

    round(x * 2^b) is computed in double (input preprocessing: a deterministic function of the row) and
    guarded to |.| <= 1e37 only so the cast cannot overflow; the clip to [-bound, bound] that bounds the
    sensitivity is on exact decimals. Per-row clipping keeps every per-unit total far inside decimal(38,0).
    """
    from pyspark.sql import functions as F

    guard = F.lit(1e37)  # report: overflow guard only; the exact clip below decides the value
    from dpspark.engine.numeric import spark_numeric

    x = spark_numeric(F.col(column), dtype) if dtype is not None else F.when(~F.isnan(F.col(column)), F.col(column))
    scaled = F.coalesce(x, F.lit(0.0)) * F.lit(float(1 << scale_bits))  # report
    # guard before rounding: no +-inf reaches round() or the decimal cast (ANSI raises on those)
    as_int = F.round(F.least(F.greatest(scaled, -guard), guard), 0).cast("decimal(38,0)")  # report
    b = F.lit(bound).cast("decimal(38,0)")
    return F.least(F.greatest(as_int, -b), b).alias(column)


def clipped_sums(df: "DataFrame", stage: SumsStage, batch_secret: bytes | None) -> pa.Table:
    """The stage's exact totals on the driver: (batch), units, sum_<col>... as an Arrow table."""
    from pyspark.sql import functions as F

    check_columns(df, stage.input_columns)
    rows = df.select(*stage.input_columns)
    if stage.unit_column is not None:
        rows = rows.filter(F.col(stage.unit_column).isNotNull())
    types = {f.name: f.dataType for f in rows.schema.fields}
    fixed = [_row_value(c, stage.scale_bits, h, types[c]) for c, h in zip(stage.columns, stage.sensitivity())]
    unit = stage.unit_column
    if unit is None:  # every row is a unit
        per_unit = rows.select(F.monotonically_increasing_id().alias("__dp_row"), *fixed)
        unit = "__dp_row"
    else:
        per_unit = rows.select(F.col(unit), *fixed).groupBy(unit).agg(*[F.sum(c).alias(c) for c in stage.columns])
    clipped = per_unit.select(unit, *[
        F.least(F.greatest(F.col(c), F.lit(lo).cast("decimal(38,0)")), F.lit(hi).cast("decimal(38,0)")).alias(c)
        for c, lo, hi in zip(stage.columns, stage.lo, stage.hi)
    ])
    keys: list[str] = []
    if stage.batches is not None:
        if batch_secret is None or stage.unit_column is None:
            raise ValueError("batches need a unit column and the release's batch key")
        clipped = with_batches(clipped, unit, stage.batches, batch_secret)
        keys = [BATCH]
    aggs = [F.count(F.lit(1)).alias(UNITS)] + [F.sum(c).cast("decimal(38,0)").alias(sum_column(c)) for c in stage.columns]
    out = clipped.groupBy(*keys).agg(*aggs) if keys else clipped.agg(*aggs)
    return out.toArrow()


# ---------------------------------------------------------------------------------------------- kernel
def per_batch(rows: list[dict[str, Any]], batches: int | None, names: list[str]) -> list[dict[str, int]]:
    """Collected rows as one dict of exact ints per batch, ascending, empty batches included (zeros)."""
    out: dict[int, dict[str, int]] = {}
    for r in rows:
        b = int(r.pop(BATCH, 0) or 0)
        out[b] = {k: (0 if v is None else int(v)) for k, v in r.items()}
    return [{"batch": b, **out.get(b, dict.fromkeys(names, 0))} for b in range(batches or 1)]


def sums_on(backend: "SparkBackend", frame: "DataFrame", stage: SumsStage) -> list[dict[str, int]]:
    """The sums stage over ``frame`` (the input, or a frame a family kernel derived from it): one pass."""
    backend.progress(f"pass {backend.passes_run + 1}: clipped sums on Spark")
    secret = backend.batch_secret() if stage.batches is not None else None
    table = clipped_sums(frame, stage, secret)
    backend.pass_done()
    return per_batch(table.to_pylist(), stage.batches, [UNITS] + [sum_column(c) for c in stage.columns])


def sums_kernel(backend: "SparkBackend", stage: SumsStage) -> list[dict[str, int]]:
    """Per batch (ascending; one entry without batches): {"batch", "units", "sum_<col>"...} as exact ints."""
    return sums_on(backend, backend.frame, stage)
