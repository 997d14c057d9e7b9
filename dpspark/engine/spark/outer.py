"""Spark side of :class:`~dpspark.engine.stages.OuterProductStage`: exact norm tests and sums of y y^T.

DataFrame API only, every quantity an exact decimal(38,0): the fixed-point vector, the preconditioned
y = A x, the squared norm that decides membership, and the sums of products. Float appears only in the
input conversion round(v * 2^b) (a deterministic function of one row, guarded against overflow; NULL, NaN
and unparseable text count as 0 here).
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

import pyarrow as pa

from dpspark.engine.stages import OuterProductStage
from dpspark.engine.spark.counts import check_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spark.backend import SparkBackend

KEPT = "kept"


def pair_column(i: int, j: int) -> str:
    """The result column holding sum_rows y_i y_j."""
    return f"sum_{i}_{j}"


def outer_product_sums(df: "DataFrame", stage: OuterProductStage, batch_secret: bytes | None) -> pa.Table:
    """The stage's exact totals on the driver: (batch), kept, sum_i_j for i <= j, as an Arrow table."""
    from pyspark.sql import functions as F

    from dpspark.engine.numeric import spark_numeric

    check_columns(df, list(stage.columns) + ([stage.unit_column] if stage.unit_column else []))
    dec = "decimal(38,0)"
    types = {f.name: f.dataType for f in df.schema.fields}
    guard = F.lit(float(1 << 31))  # report: overflow guard of the conversion; exact integers from here on
    # spark_numeric cannot raise on data (text -> NULL when unparseable, NaN -> NULL); +-inf meet the guard
    # before the decimal cast, so no ANSI overflow either
    xs = [
        F.least(F.greatest(F.round(F.coalesce(spark_numeric(F.col(c), types[c]), F.lit(0.0)) * F.lit(float(1 << stage.scale_bits)), 0),  # report
                           -guard), guard).cast(dec)
        for c in stage.columns
    ]
    if stage.matrix is None:
        ys = xs
    else:
        ys = [reduce(lambda a, b: a + b, [x * F.lit(a).cast(dec) for x, a in zip(xs, row) if a != 0], F.lit(0).cast(dec))
              for row in stage.matrix]
    names = [f"__dp_y{i}" for i in range(len(ys))]
    carry = [F.col(stage.unit_column)] if stage.batches is not None else []
    rows = df.select(*carry, *[y.cast(dec).alias(n) for y, n in zip(ys, names)])
    norm_sq = reduce(lambda a, b: a + b, [F.col(n) * F.col(n) for n in names])
    kept = rows.filter(norm_sq.cast(dec) <= F.lit(stage.norm_bound_sq).cast(dec))  # the exact norm test
    keys: list[str] = []
    if stage.batches is not None:
        from dpspark.engine.spark.sums import BATCH, with_batches

        if batch_secret is None:
            raise ValueError("batches need the release's batch key")
        kept = with_batches(kept, stage.unit_column, stage.batches, batch_secret)
        keys = [BATCH]
    aggs = [F.count(F.lit(1)).alias(KEPT)] + [
        F.sum(F.col(names[i]) * F.col(names[j])).cast(dec).alias(pair_column(i, j)) for i, j in stage.pairs()
    ]
    out = kept.groupBy(*keys).agg(*aggs) if keys else kept.agg(*aggs)
    return out.toArrow()


def outer_kernel(backend: "SparkBackend", stage: OuterProductStage) -> list[dict[str, int]]:
    """Per batch (ascending; one entry without batches): {"batch", "kept", "sum_i_j"...} as exact ints."""
    from dpspark.engine.spark.sums import per_batch

    backend.progress(f"pass {backend.passes_run + 1}: outer products on Spark")
    secret = backend.batch_secret() if stage.batches is not None else None
    table = outer_product_sums(backend.frame, stage, secret)
    backend.pass_done()
    return per_batch(table.to_pylist(), stage.batches, [KEPT] + [pair_column(i, j) for i, j in stage.pairs()])
