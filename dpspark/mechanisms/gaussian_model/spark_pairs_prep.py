"""Preparation of the Gaussian learner's rows on Spark: fixed point, keyed buckets, pairs and singles.

One row of d reals travels through Spark as ONE binary value (d little-endian int32), not as d columns:

1. :func:`encoder` (``mapInArrow`` over the unit, its SQL xxhash64 and the d raw columns): the fixed-point
   vector x = clamp(rint(v 2^b), +-(2^31 - 1)) of :func:`dpspark.mechanisms.gaussian_model.source.fixed_point` (the same
   numpy function the driver backend uses, so both backends hold the same integers), and the bucket
   H_key(u) mod B (:func:`dpspark.mechanisms.gaussian_model.source.keyed_buckets`' keyed mix). A function of one row.
2. ONE shuffle by bucket. A unit's rows all share its bucket, so each bucket and each unit lie wholly in
   one partition. Spark moves three fields per row (bucket, unit, blob) instead of d + 2.
3. :func:`pair_maker` (``mapInArrow`` per partition): sorts the partition by (bucket, unit) in Arrow and
   emits PAIR rows D = x_a - x_b (int64 blobs; |D| <= 2^32 - 2) for every bucket holding exactly two
   rows and rows x (int32 blobs) for every unit holding exactly one row: ALONE when its bucket holds no
   other row (the singles that share no unit with a pair), SINGLE otherwise. Which row of a pair comes
   first only picks the sign of D, which neither D D^T nor ||M D|| sees.

Why: at d = 100 and 10^7 rows, d + 2 columns made every step per value (SQL rounding without whole-stage
code generation past 100 fields, the shuffle, Spark's sort, rows to Arrow and back, the cache); the
blob makes all but the first conversion per row. A partition is sorted in memory, so the number of
partitions comes from the public ``max_units`` (:func:`partitions_for`), never from the data.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from dpspark.mechanisms.gaussian_model.source import fixed_point

KIND = "__dp_kind"
BLOB = "__dp_blob"
BUCKET = "__dp_bucket"
UNIT = "__dp_unit"
UNIT_HASH = "__dp_uhash"
#: row kinds: a pair difference; a single (unit with one row) sharing its bucket; a single alone in its bucket
PAIR, SINGLE, ALONE = 0, 1, 2
#: rows per emitted Arrow batch at most (fewer for very wide rows: the int32 binary offsets stay below 2^31)
EMIT_ROWS = 65536
#: bytes of blobs a partition aims at (it is sorted in one Python worker's memory)
PARTITION_BYTES = 1 << 27


def partitions_for(max_units: int, d: int, minimum: int) -> int:
    """Shuffle partitions for at most ``max_units`` rows of d int32 (public inputs only), at most 4096."""
    need = -(-max(max_units, 1) * 4 * d // PARTITION_BYTES)
    return int(min(4096, max(minimum, need)))


def blob_array(x: np.ndarray) -> pa.Array:
    """Rows of an (n, d) int32 / int64 array as one Arrow binary value each (little-endian, C order)."""
    x = np.ascontiguousarray(x.astype(x.dtype.newbyteorder("<"), copy=False))
    n = x.shape[0]
    width = x.shape[1] * x.dtype.itemsize if x.ndim == 2 else 0
    if n * width >= 1 << 31:  # Arrow binary offsets are int32; callers emit smaller batches
        raise ValueError("a blob batch must stay below 2 GiB")
    offsets = (np.arange(n + 1, dtype=np.int64) * width).astype(np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(x.tobytes())])


def blob_rows(arr: pa.Array | pa.ChunkedArray, d: int) -> np.ndarray:
    """The int64 (n, d) rows of a binary column written by :func:`blob_array` (int32 or int64 blobs, mixed
    widths allowed: a batch of the SQL kernels' decoder holds pairs and singles)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return np.zeros((0, d), dtype=np.int64)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=n + 1 + arr.offset)[arr.offset:].astype(np.int64)
    widths = np.diff(offsets)
    raw = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    if not np.isin(widths, (4 * d, 8 * d)).all():
        raise ValueError("a prepared Gaussian row has the wrong width (damaged cache)")
    out = np.empty((n, d), dtype=np.int64)
    for width, dtype in ((4 * d, np.dtype("<i4")), (8 * d, np.dtype("<i8"))):
        rows = np.flatnonzero(widths == width)
        if len(rows) == n and width:  # one width, contiguous: a view
            out[:] = raw[offsets[0]:offsets[-1]].view(dtype).reshape(n, d)
        elif len(rows):
            picked = raw[offsets[rows][:, None] + np.arange(width)]
            out[rows] = picked.reshape(-1).view(dtype).reshape(len(rows), d)
    return out


def batch_rows(batch: pa.RecordBatch, d: int) -> np.ndarray:
    """The int64 (n, d) rows of a batch holding either one blob column or d integer columns."""
    if batch.num_columns == 1 and pa.types.is_binary(batch.column(0).type):
        return blob_rows(batch.column(0), d)
    return np.column_stack([batch.column(j).to_numpy(zero_copy_only=False).astype(np.int64) for j in range(d)])


def encoder(d: int, data_bits: int, secret: bytes, buckets: int):  # type: ignore[no-untyped-def]
    """mapInArrow over (unit hash, unit, v_0..v_{d-1}) -> (bucket, unit, blob of x as int32)."""
    from dpspark.engine.keyed import keyed_mix

    if len(secret) != 16:
        raise ValueError("the contribution-bounding key must be 16 bytes")

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            raw = b.column(0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
            bucket = np.mod(keyed_mix(raw, secret).view(np.int64), buckets)
            if d:
                v = np.column_stack([b.column(2 + j).to_numpy(zero_copy_only=False) for j in range(d)])
            else:
                v = np.zeros((b.num_rows, 0))
            x = fixed_point(v, data_bits).astype(np.int32)  # |x| <= 2^31 - 1
            yield pa.RecordBatch.from_arrays([pa.array(bucket, pa.int64()), b.column(1), blob_array(x)],
                                             names=[BUCKET, UNIT, BLOB])

    return run


def _emit(kind: int, rows: np.ndarray) -> Iterator[pa.RecordBatch]:
    step = max(1, min(EMIT_ROWS, (1 << 30) // max(1, rows.shape[1] * rows.dtype.itemsize)))  # < 1 GiB a batch
    for a in range(0, rows.shape[0], step):
        part = rows[a:a + step]
        yield pa.RecordBatch.from_arrays([pa.array(np.full(part.shape[0], kind, dtype=np.int8)), blob_array(part)],
                                         names=[KIND, BLOB])


def pair_maker(d: int):  # type: ignore[no-untyped-def]
    """mapInArrow over one bucket partition of (bucket, unit, blob): its PAIR, SINGLE and ALONE rows."""
    import pyarrow.compute as pc

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        table = pa.Table.from_batches(got)
        order = pc.sort_indices(table, sort_keys=[(BUCKET, "ascending"), (UNIT, "ascending")])
        table = table.take(order)
        bucket = table.column(BUCKET).to_numpy()
        unit = table.column(UNIT).combine_chunks()
        x = blob_rows(table.column(BLOB), d)
        n = table.num_rows
        new_bucket = np.r_[True, bucket[1:] != bucket[:-1]]
        starts = np.flatnonzero(new_bucket)
        sizes = np.diff(np.r_[starts, n])
        first = starts[sizes == 2]
        yield from _emit(PAIR, x[first] - x[first + 1])  # |D| <= 2^32 - 2: int64
        same_unit = pc.fill_null(pc.equal(unit[1:], unit[:-1]), False).to_numpy(zero_copy_only=False)
        new_unit = new_bucket | np.r_[True, ~same_unit]
        ustarts = np.flatnonzero(new_unit)
        usizes = np.diff(np.r_[ustarts, n])
        single = ustarts[usizes == 1]
        alone = np.isin(single, starts[sizes == 1])  # the bucket holds this row only
        yield from _emit(SINGLE, x[single[~alone]].astype(np.int32))
        yield from _emit(ALONE, x[single[alone]].astype(np.int32))

    return run


def prepare(df: Any, columns: list[str], unit_column: str, data_bits: int, buckets: int, secret: bytes,
            partitions: int, nulls: Any = None) -> Any:
    """The uncached frame (kind byte, blob binary) of pairs and singles (module docstring). Null units drop.

    Values are read by :func:`dpspark.engine.numeric.spark_numeric` (no cast can raise on data, ANSI on or
    off); a missing value (NULL, NaN, unparseable text) follows ``nulls`` (a
    :class:`~dpspark.engine.numeric.NullRule`; the mechanisms always pass their declared rule, None here
    means the value 0): the row is removed before it is bucketed, or the public value replaces it. +-inf
    stay infinite and are clipped by :func:`fixed_point`.
    """
    from functools import reduce

    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, ByteType, LongType, StructField, StructType

    from dpspark.engine.numeric import NullRule, spark_numeric

    rule = nulls if nulls is not None else NullRule(Fraction(0))
    d = len(columns)
    types = {f.name: f.dataType for f in df.schema.fields}
    values = [spark_numeric(F.col(c), types[c]) for c in columns]
    rows = df.filter(F.col(unit_column).isNotNull())
    if rule.drop and values:  # a per-row filter: the row is absent from every pass, as if never written
        rows = rows.filter(reduce(lambda a, b: a & b, [v.isNotNull() for v in values]))
    else:
        fill = F.lit(float(rule.value or 0))  # report: the public imputed value enters the input conversion as data do
        values = [F.coalesce(v, fill) for v in values]
    rows = rows.select(
        F.xxhash64(F.col(unit_column)).alias(UNIT_HASH), F.col(unit_column).alias(UNIT),
        *[v.alias(f"__dp_v{j}") for j, v in enumerate(values)])
    unit_field = rows.schema.fields[1]
    encoded_schema = StructType([StructField(BUCKET, LongType(), False), StructField(UNIT, unit_field.dataType, True),
                                 StructField(BLOB, BinaryType(), False)])
    encoded = rows.mapInArrow(encoder(d, data_bits, secret, buckets), encoded_schema)
    out_schema = StructType([StructField(KIND, ByteType(), False), StructField(BLOB, BinaryType(), False)])
    return encoded.repartition(partitions, BUCKET).mapInArrow(pair_maker(d), out_schema)
