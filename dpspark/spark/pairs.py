"""Spark side of the Gaussian learner's aggregates (:mod:`dpspark.gaussian.source`): pairs, singles, passes.

Preparation (one shuffle, then cached): every row's fixed-point vector x = round(v 2^b) clamped to
[-2^31, 2^31] (as in :mod:`dpspark.spark.outer`; the only float is this per-row input conversion), unit
bucket H_key(u) mod B (the keyed hash of :func:`dpspark.spark.sums.with_batches`, of the unit id alone, as a
scalar Arrow UDF so only the unit's hash column goes to Python). A
unit's rows all share its bucket, so after ONE repartition by bucket and a sort by (bucket, unit) inside
each partition, a streaming numpy pass (:func:`_prepare_rows`) emits both, as int64 columns of one
cached frame:

* pairs: buckets holding exactly two rows, D = x_a - x_b (which row comes first only picks the sign of
  D, which neither D D^T nor ||M D|| sees);
* singles: units with exactly one row.

Every pass is DataFrame API on exact decimal(38,0): y = M D, a guard |y_i| <= isqrt(T) (rows failing it
fail the norm test anyway; it keeps y_i^2 inside decimal(38,0)), the norm test ||y||^2 <= T, and the
sums of y_i y_j; histogram bins and clamped sums likewise. :func:`check_pass_capacity` is the data-free
bound that the largest possible sum fits decimal(38,0).

For large d the SQL expressions (d^2 products, d(d+1)/2 sums) become too big for Spark's code
generation; ``kernel="arrow"`` (the default from d >= :data:`ARROW_FROM_D`) computes each partition's
exact partial sums (second moments, bin counts, clamped sums) with numpy instead (:func:`dpspark.gaussian.source.moments_of`: int64 with proven
bounds, exact limb kernels) in ``mapInArrow``, emits them as decimal(38,0) (index, value) rows, and
Spark adds the partials exactly (decimal sums are associative). Each partition emits its partials once
(exact Python-int sums over its Arrow batches), so the final aggregation reads a few rows per partition.
"""

from __future__ import annotations

from functools import reduce
from math import isqrt
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd  # module level: the scalar Arrow UDF's type hints are resolved in this namespace

from dpspark.gaussian.fixed import DECIMAL38_MAX, INPUT_BOUND, IntMatrix
from dpspark.gaussian.source import Moments, upper_pairs
from dpspark.spark.counts import check_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

DEC = "decimal(38,0)"
#: from this dimension on, second moments run in mapInArrow with exact numpy kernels
ARROW_FROM_D = 12


def _bin_rows(args: tuple):  # type: ignore[no-untyped-def]
    """Per-coordinate bin counts of a batch as (idx, value) rows (nonzero bins only)."""

    def rows(x: np.ndarray) -> tuple[list[int], list[int]]:
        from dpspark.gaussian.source import bins_of

        flat = bins_of(args[0], x, args[1], args[2], args[3]).reshape(-1)
        idx = np.flatnonzero(flat)
        return [int(i) for i in idx], [int(flat[i]) for i in idx]

    return rows


def _centred_rows(args: tuple):  # type: ignore[no-untyped-def]
    """Clamped centred sums of a batch as (idx, value) rows, one per coordinate."""

    def rows(x: np.ndarray) -> tuple[list[int], list[int]]:
        from dpspark.gaussian.source import centred_of

        values = centred_of(args[0], x, args[1], args[2])
        return list(range(len(values))), values

    return rows


def _partials(rows_of, d_in: int):  # type: ignore[no-untyped-def]
    """mapInArrow function: per batch, the rows (idx, value) of exact partials that ``rows_of`` computes."""
    import decimal

    import pyarrow as pa

    def run(batches):  # type: ignore[no-untyped-def]
        totals: dict[int, int] = {}  # exact Python-int partials of the whole partition: one emission
        for batch in batches:
            if batch.num_rows == 0:
                continue
            x = np.column_stack([batch.column(j).to_numpy(zero_copy_only=False).astype(np.int64) for j in range(d_in)])
            idx_list, values = rows_of(x)
            for i, v in zip(idx_list, values):
                totals[i] = totals.get(i, 0) + int(v)
        if totals:
            keys = sorted(totals)
            yield pa.RecordBatch.from_arrays([pa.array(keys, pa.int32()),
                                              pa.array([decimal.Decimal(totals[k]) for k in keys], pa.decimal128(38, 0))],
                                             names=["idx", "value"])

    return run


def _keyed_hash_udf(secret: bytes):  # type: ignore[no-untyped-def]
    """Scalar Arrow UDF: the keyed mix of :func:`dpspark.spark.counts.keyed_pick_hash` (the same H_key as
    :func:`dpspark.spark.sums.with_batches` and the driver's ``keyed_buckets``) applied to the SQL xxhash64
    of the unit. Only that one long column travels to Python, not the d value columns of the row."""
    from pyspark.sql.functions import pandas_udf

    from dpspark.spark.counts import _mix64

    if len(secret) != 16:
        raise ValueError("the contribution-bounding key must be 16 bytes")
    k1 = np.uint64(int.from_bytes(secret[:8], "big"))
    k2 = np.uint64(int.from_bytes(secret[8:], "big"))

    @pandas_udf("long")  # type: ignore[misc]
    def keyed(raw: pd.Series) -> pd.Series:
        mixed = _mix64(_mix64(raw.to_numpy().astype(np.int64).view(np.uint64), k1), k2).view(np.int64)
        return pd.Series(mixed)

    return keyed


def _prepare_rows(d: int):  # type: ignore[no-untyped-def]
    """mapInArrow function over (bucket, unit, x_0..x_{d-1}) sorted by (bucket, unit) within the partition.

    Emits kind 0 rows D = x_a - x_b for every bucket holding exactly two rows and kind 1 rows x for every
    unit holding exactly one row. A bucket may straddle Arrow batches: the last (possibly incomplete)
    bucket of each batch is carried into the next one and settled at the end of the partition. Vectorised
    numpy on int64 (|x| <= 2^31, so |D| <= 2^32); no loop per row.
    """
    import pyarrow as pa

    def emit(bucket: np.ndarray, unit: np.ndarray, x: np.ndarray):  # type: ignore[no-untyped-def]
        n = bucket.shape[0]
        new_bucket = np.r_[True, bucket[1:] != bucket[:-1]]
        starts = np.flatnonzero(new_bucket)
        sizes = np.diff(np.r_[starts, n])
        first = starts[sizes == 2]
        diffs = x[first] - x[first + 1]
        new_unit = new_bucket | np.r_[True, unit[1:] != unit[:-1]]
        ustarts = np.flatnonzero(new_unit)
        usizes = np.diff(np.r_[ustarts, n])
        singles = x[ustarts[usizes == 1]]
        kind = np.r_[np.zeros(len(diffs), dtype=np.int8), np.ones(len(singles), dtype=np.int8)]
        cols = np.vstack([diffs, singles]) if len(kind) else np.zeros((0, d), dtype=np.int64)
        return pa.RecordBatch.from_arrays([pa.array(kind, pa.int8())] + [pa.array(cols[:, j], pa.int64()) for j in range(d)],
                                          names=["__dp_kind"] + [f"__dp_c{j}" for j in range(d)])

    def run(batches):  # type: ignore[no-untyped-def]
        carry = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            bucket = batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
            unit = batch.column(1).to_numpy(zero_copy_only=False)
            x = np.column_stack([batch.column(2 + j).to_numpy(zero_copy_only=False).astype(np.int64) for j in range(d)])
            if carry is not None:
                bucket = np.r_[carry[0], bucket]
                unit = np.concatenate([carry[1], unit])
                x = np.vstack([carry[2], x])
            last = int(np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])[-1])  # start of the last bucket
            carry = (bucket[last:], unit[last:], x[last:])
            if last:
                yield emit(bucket[:last], unit[:last], x[:last])
        if carry is not None:
            yield emit(*carry)

    return run


def _moments_partials(matrix: IntMatrix, norm_bound_sq: int, d_in: int):  # type: ignore[no-untyped-def]
    """mapInArrow function: per batch, rows (idx, value): idx -1 = kept count, k = k-th upper entry."""
    import decimal

    import pyarrow as pa

    from dpspark.gaussian.source import moments_of

    schema_type = pa.decimal128(38, 0)

    def run(batches):  # type: ignore[no-untyped-def]
        values: list[int] | None = None  # exact Python-int partials of the whole partition: one emission
        for batch in batches:
            if batch.num_rows == 0:
                continue
            x = np.column_stack([batch.column(j).to_numpy(zero_copy_only=False).astype(np.int64) for j in range(d_in)])
            mom = moments_of(matrix, x, norm_bound_sq)
            part = [mom.kept, *mom.upper]
            values = part if values is None else [a + b for a, b in zip(values, part)]
        if values is not None:
            yield pa.RecordBatch.from_arrays(
                [pa.array(list(range(-1, len(values) - 1)), pa.int32()),
                 pa.array([decimal.Decimal(v) for v in values], schema_type)], names=["idx", "value"])

    return run


def check_pass_capacity(max_terms: int, norm_bound_sq: int) -> None:
    """Refuse (data-free) a pass whose largest possible exact sum could leave decimal(38,0).

    Every kept term has |y_i y_j| <= ||y||^2 <= T (at most max_terms of them), and after the guard
    |y_i| <= isqrt(T) the tested norm is at most d T.
    """
    if max_terms * norm_bound_sq > DECIMAL38_MAX:
        raise ValueError("max_units x the norm bound exceeds decimal(38,0): lower the scale")


def _dec(value: int) -> "Column":
    """An exact decimal(38,0) literal (a Python int of any size below 10^38; via its decimal string)."""
    from pyspark.sql import functions as F

    return F.lit(str(int(value))).cast(DEC)


def _fixed(col: str, data_bits: int) -> "Column":
    """clamp(round_half_up(v 2^b), -2^31, 2^31) as long (NULL counts as 0): the per-row input conversion.

    Clamping first and rounding after gives the same integer (rounding is monotone and the bounds are
    integers; NaN, the largest double in Spark's order, still lands on +2^31). After the clamp
    |w| <= 2^31, so HALF_UP is computed without Spark's BigDecimal round (the preparation's former hot
    spot) as sign(w) (floor|w| + [|w| - floor|w| >= 1/2]); |w| - floor|w| is exact in double, so this is
    the same integer as round(w, 0) (HALF_UP on the double's exact value).
    """
    from pyspark.sql import functions as F

    guard = F.lit(float(INPUT_BOUND))  # report: clamp of the input conversion; exact integers from here on
    w = F.least(F.greatest(F.coalesce(F.col(col).cast("double"), F.lit(0.0)) * F.lit(float(1 << data_bits)), -guard), guard)  # report
    a = F.abs(w)
    whole = F.floor(a)  # long, |.| <= 2^31
    r = whole + F.when(a - whole >= F.lit(0.5), F.lit(1)).otherwise(F.lit(0)).cast("long")  # report: exact halves
    return F.when(w < 0, -r).otherwise(r).cast("long")


class SparkGaussianSource:
    """The :class:`~dpspark.gaussian.source.GaussianSource` of a Spark DataFrame (module docstring)."""

    def __init__(self, df: "DataFrame", columns: Sequence[str], unit_column: str, data_bits: int,
                 buckets: int, secret: bytes, progress=None, max_terms: int = 1 << 40,  # type: ignore[no-untyped-def]
                 kernel: str | None = None) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.types import ByteType, LongType, StructField, StructType

        from dpspark.spark.sums import BATCH

        check_columns(df, list(columns) + [unit_column])
        self.dimension = d = len(columns)
        self.max_terms = max(max_terms, d)
        self.kernel = kernel or ("arrow" if d >= ARROW_FROM_D else "sql")
        if self.kernel not in ("sql", "arrow"):
            raise ValueError("kernel must be 'sql' or 'arrow'")
        self.passes = 0
        self.progress = progress or (lambda _m: None)
        names = [f"__dp_x{j}" for j in range(d)]
        base = df.select(F.col(unit_column).alias("__dp_unit"), *[_fixed(c, data_bits).alias(n) for c, n in zip(columns, names)])
        bucketed = base.withColumn(BATCH, F.pmod(_keyed_hash_udf(secret)(F.xxhash64(F.col("__dp_unit"))), F.lit(buckets)))
        # ONE shuffle: a unit's rows share its bucket, so buckets (pairs) and units (singles) are both
        # contiguous after sorting each bucket partition by (bucket, unit); a streaming numpy pass emits them
        out_schema = StructType([StructField("__dp_kind", ByteType(), False)] +
                                [StructField(f"__dp_c{j}", LongType(), False) for j in range(d)])
        parts = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions", "8"))
        prepared = (bucketed.repartition(parts, BATCH).sortWithinPartitions(BATCH, "__dp_unit")
                    .select(BATCH, "__dp_unit", *names).mapInArrow(_prepare_rows(d), out_schema))
        self.prepared = prepared.cache()
        self.pairs = self.prepared.filter(F.col("__dp_kind") == 0).select(
            *[F.col(f"__dp_c{j}").alias(f"__dp_d{j}") for j in range(d)])  # |D| <= 2^32: long
        self.singles = self.prepared.filter(F.col("__dp_kind") == 1).select(
            *[F.col(f"__dp_c{j}").alias(f"__dp_s{j}") for j in range(d)])  # |x| <= 2^31: long

    def close(self) -> None:
        """Release the cached frames."""
        self.prepared.unpersist()

    def _apply(self, frame: "DataFrame", prefix: str, matrix: IntMatrix) -> list["Column"]:
        from pyspark.sql import functions as F

        cols = [F.col(f"{prefix}{j}").cast(DEC) for j in range(self.dimension)]
        return [reduce(lambda a, b: a + b, [c * _dec(a) for c, a in zip(cols, row) if a != 0],
                       _dec(0)).cast(DEC) for row in matrix]

    def pair_count(self) -> int:
        self.passes += 1
        return int(self.pairs.count())

    def single_count(self) -> int:
        self.passes += 1
        return int(self.singles.count())

    def second_moments(self, matrix: IntMatrix, norm_bound_sq: int) -> Moments:
        from pyspark.sql import functions as F

        self.progress(f"pass {self.passes + 1}: filtered second moments on Spark")
        d = len(matrix)
        check_pass_capacity(max(self.max_terms, d), norm_bound_sq)
        if self.kernel == "arrow":
            return self._second_moments_arrow(matrix, norm_bound_sq)
        ys = self._apply(self.pairs, "__dp_d", matrix)
        names = [f"__dp_y{i}" for i in range(d)]
        rows = self.pairs.select(*[y.alias(n) for y, n in zip(ys, names)])
        root = _dec(isqrt(norm_bound_sq))
        guard = reduce(lambda a, b: a & b, [F.abs(F.col(n)) <= root for n in names])
        rows = rows.filter(guard)  # y_i^2 <= T now fits decimal(38,0); the exact norm test follows
        norm = reduce(lambda a, b: a + b, [F.col(n) * F.col(n) for n in names]).cast(DEC)
        kept = rows.filter(norm <= _dec(norm_bound_sq))
        aggs = [F.count(F.lit(1)).alias("kept")] + [
            F.sum((F.col(names[i]) * F.col(names[j])).cast(DEC)).cast(DEC).alias(f"s_{i}_{j}") for i, j in upper_pairs(d)]
        out = kept.agg(*aggs).collect()[0]
        self.passes += 1
        return Moments(int(out["kept"]), tuple(int(out[f"s_{i}_{j}"] or 0) for i, j in upper_pairs(d)))

    def _second_moments_arrow(self, matrix: IntMatrix, norm_bound_sq: int) -> Moments:
        from pyspark.sql import functions as F
        from pyspark.sql.types import DecimalType, IntegerType, StructField, StructType

        d = len(matrix)
        longs = self.pairs.select(*[F.col(f"__dp_d{j}").cast("long") for j in range(self.dimension)])  # |D| <= 2^32
        schema = StructType([StructField("idx", IntegerType(), False), StructField("value", DecimalType(38, 0), False)])
        parts = longs.mapInArrow(_moments_partials(matrix, norm_bound_sq, self.dimension), schema)
        totals = {int(r["idx"]): int(r["total"]) for r in
                  parts.groupBy("idx").agg(F.sum("value").cast(DEC).alias("total")).collect()}
        self.passes += 1
        count = len(upper_pairs(d))
        return Moments(totals.get(-1, 0), tuple(totals.get(k, 0) for k in range(count)))

    def _arrow_totals(self, rows_of: Any) -> dict[int, int]:
        """Exact totals per index of the singles' numpy partials (mapInArrow, decimal sums)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import DecimalType, IntegerType, StructField, StructType

        longs = self.singles.select(*[F.col(f"__dp_s{j}").cast("long") for j in range(self.dimension)])
        schema = StructType([StructField("idx", IntegerType(), False), StructField("value", DecimalType(38, 0), False)])
        parts = longs.mapInArrow(_partials(rows_of, self.dimension), schema)
        return {int(r["idx"]): int(r["total"]) for r in
                parts.groupBy("idx").agg(F.sum("value").cast(DEC).alias("total")).collect()}

    def bin_counts(self, matrix: IntMatrix, lo: Sequence[int], width: int, bins: int) -> np.ndarray:
        from pyspark.sql import functions as F

        self.progress(f"pass {self.passes + 1}: per-coordinate histograms on Spark")
        d = len(matrix)
        if self.kernel == "arrow":
            totals = self._arrow_totals(_bin_rows((matrix, list(lo), width, bins)))
            self.passes += 1
            flat = np.zeros(d * bins, dtype=np.int64)
            for k, v in totals.items():
                flat[k] = v
            return flat.reshape(d, bins)
        ys = self._apply(self.singles, "__dp_s", matrix)
        top = [int(lo[j]) + bins * width - 1 for j in range(d)]
        idx = [F.expr(f"div(cast(least(greatest(y{j} - ({int(lo[j])}), 0), {top[j] - int(lo[j])}) as decimal(38,0)), {width})")
               for j in range(d)]
        frame = self.singles.select(*[y.alias(f"y{j}") for j, y in enumerate(ys)])
        exploded = frame.select(F.posexplode(F.array(*[c.cast("long") for c in idx])).alias("coord", "bin"))
        counts = exploded.groupBy("coord", "bin").count().collect()
        self.passes += 1
        out = np.zeros((d, bins), dtype=np.int64)
        for r in counts:
            out[int(r["coord"]), int(r["bin"])] = int(r["count"])
        return out

    def centred_sums(self, matrix: IntMatrix, centres: Sequence[int], radius: int) -> list[int]:
        from pyspark.sql import functions as F

        self.progress(f"pass {self.passes + 1}: clamped sums on Spark")
        if self.kernel == "arrow":
            totals = self._arrow_totals(_centred_rows((matrix, list(centres), radius)))
            self.passes += 1
            return [totals.get(j, 0) for j in range(len(matrix))]
        ys = self._apply(self.singles, "__dp_s", matrix)
        r = _dec(radius)
        clamped = [F.least(F.greatest(y - _dec(c), -r), r).cast(DEC) for y, c in zip(ys, centres)]
        out = self.singles.agg(*[F.sum(c).cast(DEC).alias(f"c{j}") for j, c in enumerate(clamped)]).collect()[0]
        self.passes += 1
        return [int(out[f"c{j}"] or 0) for j in range(len(matrix))]
