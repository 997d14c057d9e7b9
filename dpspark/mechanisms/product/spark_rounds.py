"""Spark side of the product rounds (:mod:`dpspark.mechanisms.product.rounds`): one record per unit, hash batches, exact sums.

* A unit's record is the OR over its rows of each binary column (a value counts as 1 iff it is non-zero /
  true, +-inf included; NULL, NaN and unparseable text count as the public ``[columns] nulls`` value, 0 by
  default - :mod:`dpspark.mechanisms.samplers.binary_input`): a deterministic function of that unit's rows only. No
  cast can raise on data (ANSI on or off): strings and other non-integer types are read by
  :func:`dpspark.engine.numeric.spark_numeric`.
* Unit u sits in batch H_key(u) mod B (:func:`dpspark.engine.spark.sums.with_batches`: the release's secret key,
  a keyed hash of the unit id alone, so changing or adding a unit moves no other unit).
* The record is packed into ceil(d/64) int64 words before the per-unit OR (Spark's ``bit_or``), so the
  shuffle and the cache hold d/8 bytes per unit. Boolean and integer columns are packed by SQL expressions in
  the JVM (shipping d narrow columns through Arrow to Python cost more than the rest of the release at
  d = 1000); other types go through ``_bits`` in ``mapInArrow``. Both give the same words. The array form
  (``[columns] array``) packs its elements into the same words (:mod:`dpspark.mechanisms.samplers.spark_arrays`).
* A round filters its batch slice, applies the public truncation (x[S] xor flip, each group zeroed when its
  popcount exceeds the group's C), counts the units read and sums - in numpy int64 inside ``mapInArrow``
  (exact integers; one partial sum per Arrow batch), added up on the driver as Python ints. Nothing but
  these sums leaves Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

from dpspark.mechanisms.product.rounds import RoundQuery
from dpspark.engine.spark.counts import check_columns
from dpspark.engine.spark.sums import BATCH, with_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.product.stage import ProductRoundsStage

_PART = "__dp_part"
_UNITS = "__dp_units"


def _words(d: int) -> int:
    return (d + 63) // 64


def _bits(col: pa.Array, nulls: int = 0) -> np.ndarray:
    """A column as 0/1 uint64: 1 iff the value is non-zero (true), ``nulls`` when it is missing."""
    from dpspark.mechanisms.samplers.binary_input import binary_bits

    return binary_bits(col, nulls).astype(np.uint64)


def _pack(d: int, nulls: int = 0):  # type: ignore[no-untyped-def]
    """mapInArrow: the unit id and its d bits packed into ceil(d/64) int64 words (bit j of word j // 64)."""
    nw = _words(d)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            rows = b.num_rows
            words = [np.zeros(rows, dtype=np.uint64) for _ in range(nw)]
            for j in range(d):
                words[j // 64] |= _bits(b.column(j + 1), nulls) << np.uint64(j % 64)
            yield pa.RecordBatch.from_arrays([b.column(0)] + [pa.array(w.view(np.int64)) for w in words],
                                             [b.schema.field(0).name] + [f"w{i}" for i in range(nw)])

    return run


# Spark types whose 0/1 value _sql_words computes in SQL exactly as _bits does in Arrow
_SQL_BITS = frozenset({"boolean", "tinyint", "smallint", "int", "bigint"})


def _sql_words(columns: Sequence[str], types: dict[str, Any], nulls: int = 0) -> list[Any]:
    """Column expressions w0.. equal to what :func:`_pack` computes: bit j of word j // 64 is 1 iff column j
    is non-zero (true), ``nulls`` when missing (:func:`dpspark.mechanisms.samplers.spark_arrays.spark_bit`, Spark types in
    ``types``). Bit 63 lands in the sign bit, as in _pack's uint64 -> int64 view."""
    from functools import reduce

    from pyspark.sql import functions as F

    from dpspark.mechanisms.samplers.spark_arrays import spark_bit

    def bit(c: str) -> Any:
        return spark_bit(F.col(c), types[c], nulls)

    d = len(columns)
    return [reduce(lambda a, b: a.bitwiseOR(b),
                   [F.shiftleft(bit(columns[j]), j % 64) for j in range(64 * i, min(d, 64 * i + 64))]).alias(f"w{i}")
            for i in range(_words(d))]


def prepare(df: "DataFrame", columns: Sequence[str], unit: str, batches: int, secret: bytes,
            array: str | None = None, nulls: int = 0) -> "DataFrame":
    """One row per unit: its 0/1 record packed into int64 words ``w0``... (OR over its rows) and its BATCH.

    Packing first makes the per-unit shuffle carry d/8 bytes a row instead of d columns (cached).
    ``array``: the bits are elements 0..d-1 of this array column (d = len(columns), the output names).
    ``nulls``: the public bit of a missing value (0 or 1).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    check_columns(df, (list(columns) if array is None else [array]) + [unit])
    rows = df.filter(F.col(unit).isNotNull())
    nw = _words(len(columns))
    types = {f.name: f.dataType for f in rows.schema.fields}
    if array is not None:
        from dpspark.mechanisms.samplers.spark_arrays import packed_array

        # the array form: the same words (every round downstream is unchanged), packed in mapInArrow
        packed = packed_array(rows, array, unit, len(columns), nulls)
    else:
        # pack in the JVM (every type: infallible SQL casts): sending d narrow columns to Python through
        # Arrow dominated pass 1 at d = 1000
        packed = rows.select(F.col(unit), *_sql_words(columns, types, nulls))
    # bit_or is partially aggregated per partition before the shuffle (Spark's partial HashAggregate)
    per_unit = packed.groupBy(unit).agg(*[F.bit_or(f"w{i}").alias(f"w{i}") for i in range(nw)])
    out = with_batches(per_unit, unit, batches, secret).drop(unit)
    return out.persist()


def _round_sums(query: RoundQuery):  # type: ignore[no-untyped-def]
    """The mapInArrow function of one round: per Arrow batch, the exact truncated sums of the slice (each group
    zeroed when its popcount exceeds its ceiling), then the number of units read."""
    active = list(query.active)
    flip = np.asarray(query.flip, dtype=np.int64)
    lo, hi, parts = query.batch_lo, query.batch_hi, query.parts
    words = sorted({j // 64 for j in active})

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        total = np.zeros(len(active) + 1, dtype=np.int64)
        for b in batches:
            bt = b.column(b.schema.get_field_index(BATCH)).to_numpy(zero_copy_only=False)
            sel = (bt >= lo) & (bt < hi)
            if not sel.any():
                continue
            w = {i: b.column(b.schema.get_field_index(f"w{i}")).to_numpy(zero_copy_only=False)[sel].view(np.uint64)
                 for i in words}
            x = np.column_stack([(w[j // 64] >> np.uint64(j % 64)) & np.uint64(1) for j in active]).astype(np.int64)
            y = x ^ flip
            start = 0
            for size, cap in parts:
                part = y[:, start:start + size]
                part *= (part.sum(axis=1) <= cap)[:, None]
                start += size
            total[:-1] += y.sum(axis=0)
            total[-1] += int(sel.sum())
        yield pa.RecordBatch.from_arrays([pa.array([total.tolist()], pa.list_(pa.int64()))], [_PART])

    return run


def round_sums(prepared: "DataFrame", query: RoundQuery) -> list[int]:
    """The exact truncated sums of ``query`` over the prepared units (Python ints, summed on the driver), and
    the number of units read when the query asks for the count."""
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    cols = [BATCH] + [f"w{i}" for i in sorted({j // 64 for j in query.active})]
    schema = StructType([StructField(_PART, ArrayType(LongType()), False)])
    parts = prepared.select(*cols).mapInArrow(_round_sums(query), schema).toArrow()
    out = [0] * (len(query.active) + 1)
    for row in parts.column(_PART).to_pylist():
        for i, v in enumerate(row):
            out[i] += int(v)
    return out if query.count else out[:-1]


class SparkRounds:
    """The aggregate oracle of a release on Spark: prepares the units once, then one pass per round."""

    def __init__(self, backend: "SparkBackend", stage: "ProductRoundsStage") -> None:
        self.backend = backend
        self.prepared = prepare(backend.frame, stage.columns, stage.unit_column, stage.batches,
                                backend.batch_secret(), stage.array, stage.nulls)
        self.batches = stage.batches
        self.timings: list[float] = []

    def __call__(self, query: RoundQuery) -> list[int]:
        import time

        if query.batches != self.batches:
            raise ValueError("the query and the prepared units disagree on B")
        self.backend.progress(f"pass {self.backend.passes_run + 1}: {query.name} ({len(query.active)} columns) on Spark")
        start = time.perf_counter()  # report: timing for the progress line only
        out = round_sums(self.prepared, query)
        self.timings.append(time.perf_counter() - start)  # report
        self.backend.pass_done()
        return out

    def close(self) -> None:
        """Release the cached units."""
        self.prepared.unpersist()


def open_rounds(backend: "SparkBackend", stage: "ProductRoundsStage") -> SparkRounds:
    """The Spark kernel of :class:`~dpspark.mechanisms.product.stage.ProductRoundsStage`: the prepared oracle."""
    return SparkRounds(backend, stage)
