"""The bounds pre-pass of an ``answers`` release (issue 32 §2): per query, the bit-length cells of the units' totals.

An answers sum or mean clips **each unit's total** of its (filtered) column (:mod:`dpspark.mechanisms.answers.
queries`), so its bounds are chosen from the units' totals: for each auto-bounded query, the pass counts the
units whose total falls in each signed bit-length cell of :mod:`dpspark.bounds.cells`. Every unit has exactly
one total per query (0 when no row passes the filter or every value is NULL under "drop"), so it sits in exactly
one cell: adding or removing one unit moves the histogram by **at most 1** in l1 norm (sensitivity 1, whatever
the unit's rows; no contribution bound is needed), and :class:`dpspark.bounds.BoundsLaw` is built with
Delta = 1.

The totals use the answers' own per-row arithmetic (:func:`~dpspark.mechanisms.answers.spark_kernel.spark_value`
and :func:`~dpspark.mechanisms.answers.arrow_totals.scalar_values`, identical on both engines) at the public
pre-pass scale 2^PRE_SCALE_BITS, each row clipped to +-PRE_BOUND and each unit's exact integer total to
+-PRE_BOUND (so every cell edge is an integer at this scale and every total is exact in int64 and in a double).
The cell of an integer total T is computed exactly from its bit length (:func:`cell_of_total`, the same formula
on Spark with ``bin``), never from a float logarithm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

import numpy as np

from dpspark.bounds.cells import CELLS, E_MIN, EDGES, SUB
from dpspark.engine.stages import FamilyStage
from dpspark.mechanisms.answers.queries import Query, QueryKind, Scalar

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.engine.spark.backend import SparkBackend

#: the pre-pass's fixed-point scale: 2^-12 is the finest cell step (2^E_MIN / SUB), so every edge is an integer
PRE_SCALE_BITS = -E_MIN + 2
#: each row and each unit's total is clipped to +-PRE_BOUND (fixed point): +-2^39 in the column's units
PRE_BOUND = 1 << 51
#: the zero cell [0, 2^E_MIN)
ZERO = EDGES.index(0)
assert (1 << PRE_SCALE_BITS) * EDGES[ZERO + 1] == SUB  # the finest edge is the integer SUB at this scale


def pre_scalar(q: Query) -> Scalar:
    """The pre-pass statistic of an auto-bounded sum or mean: its column, filter and null rule at the pre-pass
    scale, rows clipped to +-PRE_BOUND."""
    if q.kind is QueryKind.COUNT or q.column is None:
        raise ValueError("only a sum or a mean has bounds to choose")
    return Scalar(f"{q.name}#bounds", QueryKind.SUM, q.column, -PRE_BOUND, PRE_BOUND, PRE_SCALE_BITS, q.filter,
                  q.nulls)


def _position(u: int) -> int:
    """For an integer u >= 0 (pre-pass scale): -1 when u < SUB (below the first positive edge), else the m with
    P_m <= u < P_(m+1), P the positive edges 2^e (1 + i/SUB) at this scale (cells.py)."""
    if u < SUB:
        return -1
    bits = u.bit_length()  # u in [2^(bits-1), 2^bits): octave e = bits - 1 - PRE_SCALE_BITS
    i = ((u * SUB) >> (bits - 1)) - SUB  # floor((u / 2^(bits-1) - 1) SUB), in [0, SUB)
    return (bits - 1 - PRE_SCALE_BITS - E_MIN) * SUB + i


def cell_of_total(t: int) -> int:
    """The bit-length cell of the value t / 2^PRE_SCALE_BITS, exactly (equals ``cells.cell_of``; |t| <= 2^51).

    t >= 0: cell ZERO + 1 + position(t). t < 0: v lies in [-P_(m+1), -P_m) iff -t - 1 lies in [P_m, P_(m+1)) (the
    edges are integers), so cell ZERO - 2 - position(-t - 1)."""
    return ZERO + 1 + _position(t) if t >= 0 else ZERO - 2 - _position(-t - 1)


def cells_of_totals(totals: np.ndarray) -> np.ndarray:
    """:func:`cell_of_total` of every int64 total (|t| <= 2^51), vectorised exactly (integer operations only)."""
    t = np.asarray(totals, dtype=np.int64)
    neg = t < 0
    u = np.where(neg, -t - 1, t)
    bits = np.zeros(u.shape, dtype=np.int64)  # bit length by comparisons with powers of two (exact)
    for b in range(1, 53):
        bits += (u >= (np.int64(1) << np.int64(b - 1))).astype(np.int64)
    shift = np.maximum(bits - 1, 0)
    i = ((u * SUB) >> shift) - SUB
    pos = np.where(u < SUB, -1, (bits - 1 - PRE_SCALE_BITS - E_MIN) * SUB + i)
    return np.where(neg, ZERO - 2 - pos, ZERO + 1 + pos)


@dataclass(frozen=True, eq=False)
class UnitCellsStage(FamilyStage):
    """Per scalar, the number of units whose clipped total lies in each of the CELLS bit-length cells."""

    kernels: ClassVar[dict[str, str]] = {
        "spark": "dpspark.mechanisms.answers.bounds_pass:spark_kernel",
        "arrow": "dpspark.mechanisms.answers.bounds_pass:arrow_kernel",
    }

    scalars: tuple[Scalar, ...]
    unit_column: str | None


def _histogram(cells: np.ndarray) -> list[int]:
    return [int(x) for x in np.bincount(cells.astype(np.int64), minlength=CELLS)[:CELLS]]


def arrow_kernel(backend: "ArrowBackend", stage: UnitCellsStage) -> list[list[int]]:
    """The stage on Arrow: one scan per scalar of the units' exact totals, then their cells."""
    backend.progress(f"pass {backend.passes_run + 1}: bounds histograms of {len(stage.scalars)} quantities on Arrow")
    out = unit_cells_arrow(backend.dataset, stage.scalars, stage.unit_column)
    backend.pass_done()
    return out


def unit_cells_arrow(dataset: Any, scalars: Sequence[Scalar], unit_column: str | None) -> list[list[int]]:
    """Per scalar, the CELLS counts of the units' totals (every row a unit without ``unit_column``)."""
    import pyarrow.compute as pc

    from dpspark.mechanisms.answers.arrow_kernel import (_batches, _check_columns, _unit_ids, _unit_index,
                                                         _UnitSums)
    from dpspark.mechanisms.answers.arrow_masks import ArrowRows
    from dpspark.mechanisms.answers.arrow_totals import scalar_values

    names = _check_columns(dataset, scalars, unit_column)
    out = []
    if unit_column is None:
        hist = [np.zeros(CELLS, dtype=np.int64) for _ in scalars]
        for batch in _batches(dataset, names, None):
            view = ArrowRows(batch)
            for j, s in enumerate(scalars):
                hist[j] += np.bincount(cells_of_totals(scalar_values(view, s)), minlength=CELLS)[:CELLS]
        return [[int(x) for x in h] for h in hist]
    units, rows = _unit_index(dataset, unit_column)
    n = 0 if units is None else len(units)
    for s in scalars:  # one scan per scalar: O(units) memory
        if n == 0:
            out.append([0] * CELLS)
            continue
        acc = _UnitSums(n, rows * s.delta >= 1 << 63)
        for batch in _batches(dataset, names, unit_column):
            ucol = _unit_ids(batch.column(batch.schema.get_field_index(unit_column)))
            idx = np.asarray(pc.index_in(ucol, value_set=units).to_numpy(zero_copy_only=False)).astype(np.int64)
            acc.add(idx, scalar_values(ArrowRows(batch), s))
        out.append(_histogram(cells_of_totals(acc.clipped(-PRE_BOUND, PRE_BOUND))))
    return out


def spark_kernel(backend: "SparkBackend", stage: UnitCellsStage) -> list[list[int]]:
    """The stage on Spark: the units' exact totals (decimal sums), clipped, placed in cells by bit length."""
    backend.progress(f"pass {backend.passes_run + 1}: bounds histograms of {len(stage.scalars)} quantities on Spark")
    out = unit_cells_spark(backend.frame, stage.scalars, stage.unit_column)
    backend.pass_done()
    return out


def _spark_cell(t: Any) -> Any:
    """The Spark column of :func:`cell_of_total` for a long column t (|t| <= 2^51): bit length from ``bin``."""
    from pyspark.sql import functions as F

    def position(u: Any) -> Any:
        bits = F.length(F.bin(u))
        i = F.call_function("shiftright", u * F.lit(SUB), (bits - 1).cast("int")) - F.lit(SUB)
        return F.when(u < F.lit(SUB), F.lit(-1)).otherwise((bits - 1 - F.lit(PRE_SCALE_BITS + E_MIN)) * SUB + i)

    return F.when(t >= 0, F.lit(ZERO + 1) + position(t)).otherwise(F.lit(ZERO - 2) - position(-t - F.lit(1)))


def unit_cells_spark(df: Any, scalars: Sequence[Scalar], unit_column: str | None) -> list[list[int]]:
    """Per scalar, the CELLS counts of the units' totals, computed in Spark (at most CELLS rows collected)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType

    from dpspark.engine.spark.counts import check_columns
    from dpspark.mechanisms.answers.spark_kernel import spark_types, spark_value

    check_columns(df, sorted({c for s in scalars for c in s.columns()} | ({unit_column} if unit_column else set())))
    dtypes = spark_types(df)
    out = []
    for s in scalars:
        value = spark_value(s, dtypes).cast(DecimalType(38, 0))  # an integer double |v| <= 2^51: exact
        if unit_column is None:
            totals = df.select(value.alias("t"))
        else:
            totals = (df.where(F.col(unit_column).isNotNull()).select(F.col(unit_column).alias("u"), value.alias("v"))
                      .groupBy("u").agg(F.sum("v").alias("t")))
        clipped = F.least(F.greatest(F.col("t"), F.lit(-PRE_BOUND)), F.lit(PRE_BOUND)).cast("long")
        rows = totals.select(_spark_cell(clipped).alias("cell")).groupBy("cell").count().collect()
        hist = [0] * CELLS
        for r in rows:
            hist[int(r["cell"])] += int(r["count"])
        out.append(hist)
    return out
