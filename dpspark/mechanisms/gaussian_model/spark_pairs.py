"""Spark side of the Gaussian learner's aggregates (:mod:`dpspark.mechanisms.gaussian_model.source`): pairs, singles, passes.

Preparation (:mod:`dpspark.mechanisms.gaussian_model.spark_pairs_prep`, one shuffle, then cached): each row's fixed-point vector
(int32) and keyed bucket H_key(u) mod B, shuffled by bucket as one binary value per row; per partition the
pairs (buckets holding exactly two rows, D = x_a - x_b) and the singles (units with exactly one row). The
numpy kernels read those blobs; for the SQL kernels they are decoded once into int64 columns before the
cache.

Every pass is DataFrame API on exact decimal(38,0): y = M D, a guard |y_i| <= isqrt(T) (rows failing it
fail the norm test anyway; it keeps y_i^2 inside decimal(38,0)), the norm test ||y||^2 <= T, and the
sums of y_i y_j; histogram bins and clamped sums likewise. :func:`check_pass_capacity` is the data-free
bound that the largest possible sum fits decimal(38,0).

For large d the SQL expressions (d^2 products, d(d+1)/2 sums) become too big for Spark's code
generation; ``kernel="arrow"`` (the default from d >= :data:`ARROW_FROM_D`) computes each partition's
exact partial sums (second moments, bin counts, clamped sums) with numpy instead (:func:`dpspark.mechanisms.gaussian_model.source.moments_of`: int64 with proven
bounds, exact limb kernels) in ``mapInArrow``, emits them as decimal(38,0) (index, value) rows, and
Spark adds the partials exactly (decimal sums are associative). Each partition emits its partials once
(exact Python-int sums over its Arrow batches), so the final aggregation reads a few rows per partition.
"""

from __future__ import annotations

from functools import reduce
from math import isqrt
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from dpspark.mechanisms.gaussian_model.fixed import DECIMAL38_MAX, IntMatrix
from dpspark.mechanisms.gaussian_model.source import Moments, upper_pairs
from dpspark.engine.spark.counts import check_columns
from dpspark.mechanisms.gaussian_model.spark_pairs_prep import ALONE, BLOB, KIND, PAIR, SINGLE, batch_rows, blob_rows, partitions_for, prepare

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.gaussian_model.stage import GaussianPairsStage

DEC = "decimal(38,0)"
#: from this dimension on, second moments run in mapInArrow with exact numpy kernels
ARROW_FROM_D = 12


def _bin_rows(args: tuple):  # type: ignore[no-untyped-def]
    """Per-coordinate bin counts of a batch as (idx, value) rows (nonzero bins only)."""

    def rows(x: np.ndarray) -> tuple[list[int], list[int]]:
        from dpspark.mechanisms.gaussian_model.source import bins_of

        flat = bins_of(args[0], x, args[1], args[2], args[3]).reshape(-1)
        idx = np.flatnonzero(flat)
        return [int(i) for i in idx], [int(flat[i]) for i in idx]

    return rows


def _centred_rows(args: tuple):  # type: ignore[no-untyped-def]
    """Clamped centred sums of a batch as (idx, value) rows, one per coordinate."""

    def rows(x: np.ndarray) -> tuple[list[int], list[int]]:
        from dpspark.mechanisms.gaussian_model.source import centred_of

        values = centred_of(args[0], x, args[1], args[2])
        return list(range(len(values))), values

    return rows


def _clipped_moment_rows(args: tuple):  # type: ignore[no-untyped-def]
    """The ball-clipped second moments of a batch as (idx, value) rows: idx -2 the clipped count, -1 the unclipped."""

    def rows(x: np.ndarray) -> tuple[list[int], list[int]]:
        from dpspark.mechanisms.gaussian_model.source import clipped_moments_of

        mom = clipped_moments_of(args[0], x, args[1], args[2])
        return list(range(-2, len(mom.upper))), [mom.clipped, mom.kept, *mom.upper]

    return rows


def _clipped_sum_rows(args: tuple):  # type: ignore[no-untyped-def]
    """The ball-clipped sums of a batch as (idx, value) rows, one per coordinate."""

    def rows(x: np.ndarray) -> tuple[list[int], list[int]]:
        from dpspark.mechanisms.gaussian_model.source import clipped_sums_of

        values = clipped_sums_of(args[0], x, args[1], args[2], with_count=True)
        return list(range(len(values) - 1)) + [-1], values  # idx -1: the rows clipped

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
            idx_list, values = rows_of(batch_rows(batch, d_in))
            for i, v in zip(idx_list, values):
                totals[i] = totals.get(i, 0) + int(v)
        if totals:
            keys = sorted(totals)
            yield pa.RecordBatch.from_arrays([pa.array(keys, pa.int32()),
                                              pa.array([decimal.Decimal(totals[k]) for k in keys], pa.decimal128(38, 0))],
                                             names=["idx", "value"])

    return run


def _moments_partials(matrix: IntMatrix, norm_bound_sq: int, d_in: int):  # type: ignore[no-untyped-def]
    """mapInArrow function: per batch, rows (idx, value): idx -1 = kept count, k = k-th upper entry."""
    import decimal

    import pyarrow as pa

    from dpspark.mechanisms.gaussian_model.source import moments_of

    schema_type = pa.decimal128(38, 0)

    def run(batches):  # type: ignore[no-untyped-def]
        values: list[int] | None = None  # exact Python-int partials of the whole partition: one emission
        for batch in batches:
            if batch.num_rows == 0:
                continue
            mom = moments_of(matrix, batch_rows(batch, d_in), norm_bound_sq)
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


def _decoder(d: int):  # type: ignore[no-untyped-def]
    """mapInArrow: (kind, blob) -> (kind, c_0..c_{d-1}) int64 columns, for the SQL kernels."""
    import pyarrow as pa

    def run(batches):  # type: ignore[no-untyped-def]
        for b in batches:
            x = blob_rows(b.column(1), d)
            yield pa.RecordBatch.from_arrays([b.column(0)] + [pa.array(x[:, j]) for j in range(d)],
                                             names=[KIND] + [f"__dp_c{j}" for j in range(d)])

    return run


class SparkGaussianSource:
    """The :class:`~dpspark.mechanisms.gaussian_model.source.GaussianSource` of a Spark DataFrame (module docstring)."""

    def __init__(self, df: "DataFrame", columns: Sequence[str], unit_column: str, data_bits: int,
                 buckets: int, secret: bytes, progress=None, max_terms: int | None = None,  # type: ignore[no-untyped-def]
                 kernel: str | None = None, nulls: Any = None, on_pass: Any = None) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.types import ByteType, LongType, StructField, StructType

        check_columns(df, list(columns) + [unit_column])
        self.dimension = d = len(columns)
        self.max_terms = max(max_terms or 1 << 40, d)  # unknown: only the capacity check's worst case
        self.kernel = kernel or ("arrow" if d >= ARROW_FROM_D else "sql")
        if self.kernel not in ("sql", "arrow"):
            raise ValueError("kernel must be 'sql' or 'arrow'")
        self.passes = 0
        self.progress = progress or (lambda _m: None)
        self.on_pass = on_pass or (lambda: None)  # the backend's pass counter and clock
        parts = partitions_for(max_terms or 0, d, int(df.sparkSession.conf.get("spark.sql.shuffle.partitions", "8")))
        blobs = prepare(df, list(columns), unit_column, data_bits, buckets, secret, parts, nulls)
        if self.kernel == "arrow":  # the numpy kernels read the blobs directly
            self.prepared = blobs.cache()
            self.pairs = self.prepared.filter(F.col(KIND) == PAIR).select(BLOB)
            self.all_singles = self.prepared.filter(F.col(KIND).isin(SINGLE, ALONE)).select(BLOB)
            self.alone = self.prepared.filter(F.col(KIND) == ALONE).select(BLOB)
            self.singles = self.all_singles
            return
        # SQL kernels (small d) need one column per coordinate: decode once, before the cache
        schema = StructType([StructField(KIND, ByteType(), False)] +
                            [StructField(f"__dp_c{j}", LongType(), False) for j in range(d)])
        self.prepared = blobs.mapInArrow(_decoder(d), schema).cache()
        self.pairs = self.prepared.filter(F.col(KIND) == PAIR).select(
            *[F.col(f"__dp_c{j}").alias(f"__dp_d{j}") for j in range(d)])  # |D| <= 2^32 - 2: long
        self.all_singles = self.prepared.filter(F.col(KIND).isin(SINGLE, ALONE)).select(
            *[F.col(f"__dp_c{j}").alias(f"__dp_s{j}") for j in range(d)])  # |x| <= 2^31 - 1: long
        self.alone = self.prepared.filter(F.col(KIND) == ALONE).select(
            *[F.col(f"__dp_c{j}").alias(f"__dp_s{j}") for j in range(d)])
        self.singles = self.all_singles

    def _pass(self) -> None:
        self.passes += 1
        self.on_pass()

    def unpaired_singles(self) -> None:
        """From now on the mean's aggregates read only the singles alone in their bucket (module docstring
        of :mod:`dpspark.mechanisms.gaussian_model.source`)."""
        self.singles = self.alone

    def close(self) -> None:
        """Release the cached frames."""
        self.prepared.unpersist()

    def _apply(self, frame: "DataFrame", prefix: str, matrix: IntMatrix) -> list["Column"]:
        from pyspark.sql import functions as F

        cols = [F.col(f"{prefix}{j}").cast(DEC) for j in range(self.dimension)]
        return [reduce(lambda a, b: a + b, [c * _dec(a) for c, a in zip(cols, row) if a != 0],
                       _dec(0)).cast(DEC) for row in matrix]

    def pair_count(self) -> int:
        self._pass()
        return int(self.pairs.count())

    def single_count(self) -> int:
        self._pass()
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
        self._pass()
        return Moments(int(out["kept"]), tuple(int(out[f"s_{i}_{j}"] or 0) for i, j in upper_pairs(d)))

    def _second_moments_arrow(self, matrix: IntMatrix, norm_bound_sq: int) -> Moments:
        from pyspark.sql import functions as F
        from pyspark.sql.types import DecimalType, IntegerType, StructField, StructType

        d = len(matrix)
        schema = StructType([StructField("idx", IntegerType(), False), StructField("value", DecimalType(38, 0), False)])
        parts = self.pairs.mapInArrow(_moments_partials(matrix, norm_bound_sq, self.dimension), schema)
        totals = {int(r["idx"]): int(r["total"]) for r in
                  parts.groupBy("idx").agg(F.sum("value").cast(DEC).alias("total")).collect()}
        self._pass()
        count = len(upper_pairs(d))
        return Moments(totals.get(-1, 0), tuple(totals.get(k, 0) for k in range(count)))

    def _arrow_totals(self, rows_of: Any) -> dict[int, int]:
        """Exact totals per index of the singles' numpy partials (mapInArrow, decimal sums)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import DecimalType, IntegerType, StructField, StructType

        schema = StructType([StructField("idx", IntegerType(), False), StructField("value", DecimalType(38, 0), False)])
        parts = self.singles.mapInArrow(_partials(rows_of, self.dimension), schema)
        return {int(r["idx"]): int(r["total"]) for r in
                parts.groupBy("idx").agg(F.sum("value").cast(DEC).alias("total")).collect()}

    def bin_counts(self, matrix: IntMatrix, lo: Sequence[int], width: int, bins: int) -> np.ndarray:
        from pyspark.sql import functions as F

        self.progress(f"pass {self.passes + 1}: per-coordinate histograms on Spark")
        d = len(matrix)
        if self.kernel == "arrow":
            totals = self._arrow_totals(_bin_rows((matrix, list(lo), width, bins)))
            self._pass()
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
        self._pass()
        out = np.zeros((d, bins), dtype=np.int64)
        for r in counts:
            out[int(r["coord"]), int(r["bin"])] = int(r["count"])
        return out

    def clipped_moments(self, matrix: IntMatrix, centre: Sequence[int], bound_sq: int) -> Moments:
        """Exact ball-clipped second moments of the singles (numpy kernels in mapInArrow, exact decimal sums)."""
        self.progress(f"pass {self.passes + 1}: clipped second moments on Spark")
        d = len(matrix)
        check_pass_capacity(2 * max(self.max_terms, d), bound_sq)
        totals = self._arrow_totals(_clipped_moment_rows((matrix, [int(c) for c in centre], int(bound_sq))))
        self._pass()
        return Moments(totals.get(-1, 0), tuple(totals.get(k, 0) for k in range(len(upper_pairs(d)))), totals.get(-2, 0))

    def clipped_sums(self, matrix: IntMatrix, centre: Sequence[int], bound_sq: int,
                     with_count: bool = False) -> list[int]:
        """Exact ball-clipped sums of the singles (numpy kernels in mapInArrow, exact decimal sums); with
        ``with_count``, followed by the number of rows clipped."""
        self.progress(f"pass {self.passes + 1}: clipped sums on Spark")
        totals = self._arrow_totals(_clipped_sum_rows((matrix, [int(c) for c in centre], int(bound_sq))))
        self._pass()
        return [totals.get(j, 0) for j in range(len(matrix))] + ([totals.get(-1, 0)] if with_count else [])

    def centred_sums(self, matrix: IntMatrix, centres: Sequence[int], radius: int) -> list[int]:
        from pyspark.sql import functions as F

        self.progress(f"pass {self.passes + 1}: clamped sums on Spark")
        if self.kernel == "arrow":
            totals = self._arrow_totals(_centred_rows((matrix, list(centres), radius)))
            self._pass()
            return [totals.get(j, 0) for j in range(len(matrix))]
        ys = self._apply(self.singles, "__dp_s", matrix)
        r = _dec(radius)
        clamped = [F.least(F.greatest(y - _dec(c), -r), r).cast(DEC) for y, c in zip(ys, centres)]
        out = self.singles.agg(*[F.sum(c).cast(DEC).alias(f"c{j}") for j, c in enumerate(clamped)]).collect()[0]
        self._pass()
        return [int(out[f"c{j}"] or 0) for j in range(len(matrix))]


def open_pairs(backend: "SparkBackend", stage: "GaussianPairsStage") -> SparkGaussianSource:
    """The Spark kernel of :class:`~dpspark.mechanisms.gaussian_model.stage.GaussianPairsStage`: the prepared source."""
    return SparkGaussianSource(backend.frame, stage.columns, stage.unit_column, stage.data_bits, stage.buckets,
                               backend.batch_secret(), backend.progress, max_terms=stage.max_terms,
                               nulls=stage.nulls, on_pass=backend.pass_done)
