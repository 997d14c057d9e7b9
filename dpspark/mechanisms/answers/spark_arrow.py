"""The Spark pass of an ``answers`` batch as Arrow batches: no generated column per scalar, so no codegen cliff.

Spark reads each column the scalars need once: :func:`dpspark.engine.numeric.spark_numeric` for a numeric
reading (a value column, a number test, IS NULL on a number), the column as stored for string and boolean
tests. ``mapInArrow`` then runs the Arrow kernel's own arithmetic and filters
(:mod:`dpspark.mechanisms.answers.arrow_totals`, :mod:`dpspark.mechanisms.answers.arrow_masks`) on each
partition, in chunks of :data:`CHUNK_ROWS` rows, and Spark adds the partial results exactly:

* every row a unit: each partition yields one exact total per scalar (decimal(38,0)) and, for histogram
  groups (:mod:`dpspark.mechanisms.answers.plan`), its (value, count) pairs; ``groupBy(g, v)`` sums them;
* a ``unit_column``: rows are hash-partitioned by unit and sorted within partitions, so a partition reads
  each unit's rows consecutively (:class:`~dpspark.mechanisms.answers.arrow_totals.UnitStream`: per unit,
  then per scalar) and yields one clipped total per scalar; ``groupBy(g)`` sums them.

The generated code is the same for 1 or 10^4 scalars (a few columns in, four out), so its size never
passes the JVM's 64 KB method limit, and memory is O(chunk + scalars) per task and O(scalars + histogram
bins) on the driver. The values are those of the column-per-scalar plan
(:func:`dpspark.mechanisms.answers.spark_kernel.column_totals`), which the tests check on hostile inputs:
the numeric reading is Spark's own cast, and the rest is the arithmetic both plans define.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from dpspark.mechanisms.answers.arrow_masks import Rows
from dpspark.mechanisms.answers.queries import Scalar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

#: rows per chunk the partition function evaluates at once (Spark hands over 10^4-row batches)
CHUNK_ROWS = 1 << 16
UNIT = "__dp_u"
ROW_SCHEMA = "g int, v long, c long, s decimal(38,0)"
UNIT_SCHEMA = "g int, s decimal(38,0)"


class SparkRows(Rows):
    """One chunk of a partition: the numeric readings Spark computed and the raw columns, by input column."""

    def __init__(self, batch: "pa.RecordBatch", kinds: dict[str, str], fields: dict[tuple[str, str], str]) -> None:
        super().__init__(batch.num_rows, kinds)
        self.batch = batch
        self.fields = fields

    def _numeric(self, column: str) -> np.ndarray:
        x = self.batch.column(self.fields[("n", column)]).to_numpy(zero_copy_only=False)
        return np.asarray(x, dtype=np.float64)  # NULL (Spark's reading of NULL, NaN, bad text) -> NaN

    def _raw(self, column: str) -> "pa.Array":
        return self.batch.column(self.fields[("r", column)])


def needs(scalars: Sequence[Scalar], kinds: dict[str, str]) -> list[tuple[str, str]]:
    """The (use, column) pairs the scalars read: "n" a numeric reading, "r" the raw column (data-free)."""
    from fractions import Fraction

    from dpspark.engine.predicate import IsNull, _leaves, _values

    out: dict[tuple[str, str], None] = {}
    for s in scalars:
        for c in (s.column, s.present):
            if c is not None:
                out[("n", c)] = None
        for leaf in (_leaves(s.filter.tree) if s.filter is not None else ()):
            kind = kinds[leaf.column]
            if kind == "null":
                continue
            if isinstance(leaf, IsNull):
                out[("n" if kind == "number" else "r", leaf.column)] = None
            else:
                out[("n" if isinstance(_values(leaf)[0], Fraction) else "r", leaf.column)] = None
    return list(out)


def input_frame(df: "DataFrame", scalars: Sequence[Scalar], dtypes: dict[str, Any], kinds: dict[str, str],
                first: Sequence[Any] = ()) -> tuple["DataFrame", dict[tuple[str, str], str]]:
    """``df`` reduced to ``first`` and the readings the scalars need, and the field name of each (analysis only)."""
    from pyspark.sql import functions as F

    from dpspark.engine.numeric import spark_numeric
    from dpspark.engine.predicate import spark_ref

    fields: dict[tuple[str, str], str] = {}
    cols = []
    for i, (use, c) in enumerate(needs(scalars, kinds)):
        name = f"__dp_{use}{i}"
        fields[(use, c)] = name
        cols.append((spark_numeric(spark_ref(c), dtypes[c]) if use == "n" else spark_ref(c)).alias(name))
    if not cols and not first:  # counts without filters: a column so that the batches carry their row counts
        cols = [F.lit(0).alias("__dp_z")]
    return df.select(*first, *cols), fields


def _chunks(batches: Iterator["pa.RecordBatch"], rows: int) -> Iterator["pa.RecordBatch"]:
    """The batches regrouped into chunks of at least ``rows`` rows (the last may be smaller), in order. An empty
    batch is held like any other (no branch on a batch's rows: rule 4)."""
    import pyarrow as pa

    buf: list[pa.RecordBatch] = []
    held = 0
    for b in batches:
        buf.append(b)
        held += b.num_rows
        if held >= rows:
            yield pa.concat_batches(buf)  # one batch (a copy, whatever the batches held)
            buf, held = [], 0
    if buf:
        yield pa.concat_batches(buf)


def row_partials(scalars: Sequence[Scalar], kinds: dict[str, str], fields: dict[tuple[str, str], str],
                 chunk_rows: int) -> Any:
    """The mapInArrow function of a row-level batch: one partition's totals and histograms."""

    def run(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        from dpspark.mechanisms.answers.arrow_totals import RowTotals

        acc = RowTotals(scalars)
        for chunk in _chunks(batches, chunk_rows):
            acc.add(SparkRows(chunk, kinds, fields))
        g, v, c, s = [], [], [], []
        for i, (vals, counts) in enumerate(acc.hists):
            g += [i] * len(vals)
            v += vals.tolist()
            c += counts.tolist()
            s += [0] * len(vals)
        grouped = {j for grp in acc.groups for j in grp.members}
        for j, t in enumerate(acc.totals):
            if j not in grouped:
                g.append(len(acc.groups) + j)
                v.append(0)
                c.append(0)
                s.append(t)
        yield pa.RecordBatch.from_arrays(
            [pa.array(g, pa.int32()), pa.array(v, pa.int64()), pa.array(c, pa.int64()), pa.array(s, pa.decimal128(38, 0))],
            names=["g", "v", "c", "s"])

    return run


def unit_partials(scalars: Sequence[Scalar], kinds: dict[str, str], fields: dict[tuple[str, str], str],
                  chunk_rows: int) -> Any:
    """The mapInArrow function of a batch with units: one partition's per-unit clipped totals per scalar."""

    def run(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        from dpspark.mechanisms.answers.arrow_totals import UnitStream

        acc = UnitStream(scalars)
        for chunk in _chunks(batches, chunk_rows):
            acc.add(SparkRows(chunk, kinds, fields), chunk.column(UNIT))
        totals = acc.result()
        yield pa.RecordBatch.from_arrays(
            [pa.array(range(len(totals)), pa.int32()), pa.array(totals, pa.decimal128(38, 0))], names=["g", "s"])

    return run


def unit_key(df: "DataFrame", unit: str) -> Any:
    """The unit column as Spark groups it: floats with -0.0 as 0.0 and one NaN (Spark's grouping
    normalisation), so equal units hash to one partition and sort next to each other."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    from dpspark.engine.predicate import spark_ref

    col = spark_ref(unit)
    if isinstance(df.schema[unit].dataType, (FloatType, DoubleType)):
        x = col.cast("double")
        return F.when(F.isnan(x), F.lit(float("nan"))).otherwise(x + F.lit(0.0))  # -0.0 + 0.0 = 0.0
    return col


def arrow_totals(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None, dtypes: dict[str, Any],
                 kinds: dict[str, str], chunk_rows: int | None = None) -> list[int]:
    """The exact statistic of every scalar (each |delta| < 2^52), in one Spark job of Arrow partitions.

    ``chunk_rows`` (default :data:`CHUNK_ROWS`) is fixed here, on the driver, and shipped to the tasks.
    """
    from pyspark.sql import functions as F

    from dpspark.engine.predicate import spark_ref
    from dpspark.mechanisms.answers.arrow_totals import RowTotals

    if not scalars:
        return []
    chunk = CHUNK_ROWS if chunk_rows is None else chunk_rows
    if unit_column is None:
        frame, fields = input_frame(df, scalars, dtypes, kinds)
        parts = frame.mapInArrow(row_partials(scalars, kinds, fields, chunk), ROW_SCHEMA)
        agg = parts.groupBy("g", "v").agg(F.sum("c").alias("c"), F.sum("s").cast("decimal(38,0)").alias("s"))
        acc = RowTotals(scalars)  # the driver's merge: the partitions' histograms and totals, added
        hists: list[tuple[list[int], list[int]]] = [([], []) for _ in acc.groups]
        for r in agg.toArrow().to_pylist():
            g = int(r["g"])
            if g < len(acc.groups):
                hists[g][0].append(int(r["v"]))
                hists[g][1].append(int(r["c"]))
            else:
                acc.totals[g - len(acc.groups)] = int(r["s"] or 0)
        acc.hists = [(np.array(v, dtype=np.int64), np.array(c, dtype=np.int64)) for v, c in hists]
        return acc.result()
    rows = df.filter(spark_ref(unit_column).isNotNull())
    frame, fields = input_frame(rows, scalars, dtypes, kinds, [unit_key(df, unit_column).alias(UNIT)])
    ordered = frame.repartition(UNIT).sortWithinPartitions(UNIT)
    parts = ordered.mapInArrow(unit_partials(scalars, kinds, fields, chunk), UNIT_SCHEMA)
    agg = parts.groupBy("g").agg(F.sum("s").cast("decimal(38,0)").alias("s"))
    out = [0] * len(scalars)
    for r in agg.toArrow().to_pylist():
        out[int(r["g"])] = int(r["s"] or 0)
    return out
