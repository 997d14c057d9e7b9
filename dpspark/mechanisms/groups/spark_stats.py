"""Spark side of a ``groups`` release: the :class:`~dpspark.mechanisms.groups.stage.GroupsStage` in one pass.

DataFrame API only. Value columns are read by :func:`dpspark.engine.numeric.spark_numeric` (the Arrow
kernel's map, value for value); rows with a NULL key or unit are dropped; units are truncated by the
CountsStage rule (:func:`dpspark.engine.spark.counts._bound_units`); keys are encoded once per distinct key
(:func:`dpspark.engine.spark.encode.with_universe_index`) and joined back. Then the input is repartitioned
by unit and each partition runs the shared numpy core (:mod:`dpspark.mechanisms.groups.core`) in
``mapInArrow``: a unit's rows are all in one partition, so its k groups and c rows are chosen as on Arrow.
Each partition emits rows (index, stat, shift, value) with |value| < 2^40, summed per (index, stat, shift)
in one ``groupBy`` of four columns whatever the number of aggregates (no wide codegen), and folded into
exact Python ints on the driver. The batch secret lives only in the closures shipped to the workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from dpspark.engine.errors import CuratorError, InputError
from dpspark.mechanisms.groups import core

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.groups.algorithm import GroupStats
    from dpspark.mechanisms.groups.stage import GroupsStage

INDEX, MEMBER, UNIT_HASH, HASH = "__dp_index", "__dp_in_universe", "__dp_unit_hash", "__dp_row_hash"
STAT, SHIFT, VALUE = "__dp_stat", "__dp_shift", "__dp_value"


def groups_kernel(backend: "SparkBackend", stage: "GroupsStage") -> "list[GroupStats]":
    """Exact statistics per group of ``stage`` on Spark: one pass over the backend's input."""
    backend.progress(f"pass {backend.passes_run + 1}: {len(stage.aggregates)} grouped aggregates on Spark")
    out = groups_spark(backend.frame, stage, backend.batch_secret())
    backend.pass_done()
    backend.progress("group statistics collected on the driver")
    return out


def value_name(i: int) -> str:
    """The derived double column of value column i."""
    return f"__dp_x{i}"


def _bits_name(i: int) -> str:
    return f"__dp_b{i}"


def _matrix(col: "pa.Array | pa.ChunkedArray") -> np.ndarray:
    """(n, width) uint8 of a binary column whose values all have one width (the index words)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        return buf[arr.offset * width: (arr.offset + len(arr)) * width].reshape(len(arr), width)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if pa.types.is_large_binary(arr.type) else np.int32)
    offsets = offsets[arr.offset: arr.offset + len(arr) + 1]
    if len(arr) == 0:
        return np.zeros((0, 16), dtype=np.uint8)
    width = int(offsets[1] - offsets[0])
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]
    return data.reshape(len(arr), width)


def _part(table: pa.Table, stage: "GroupsStage") -> core.Part:
    """The core's rows from one partition's Arrow table (INDEX, value doubles, optionally unit and UNIT_HASH)."""
    words = _matrix(table.column(INDEX))
    gwords, gid = np.unique(words, axis=0, return_inverse=True)
    x = {c: np.asarray(table.column(value_name(i)).to_numpy(zero_copy_only=False), dtype=np.float64)
         for i, c in enumerate(stage.value_columns)}
    part = core.Part(gid=gid.astype(np.int64).reshape(-1), words=np.ascontiguousarray(gwords), x=x)
    if stage.unit_column is not None:
        import pyarrow.compute as pc

        ucol = table.column(stage.unit_column).combine_chunks()
        enc = pc.dictionary_encode(ucol)
        uid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        uh = table.column(UNIT_HASH).to_numpy().astype(np.int64).view(np.uint64)
        unit_hash = np.empty(len(enc.dictionary), dtype=np.uint64)
        unit_hash[uid] = uh
        part.uid, part.unit_hash = uid, unit_hash
    return part


def partition_stats(stage: "GroupsStage", secret: bytes) -> Any:
    """The mapInArrow function: one partition's rows (whole units) -> summable (index, stat, shift, value) rows."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(list(batches))
        if table.num_rows == 0:
            return
        part = _part(table, stage)
        keep, units = core.bound(part, stage, secret)
        g, stat, shift, value = core.emit(core.statistics(part, keep, units, stage))
        words = part.words[g]
        index = pa.FixedSizeBinaryArray.from_buffers(pa.binary(words.shape[1]), len(g),
                                                     [None, pa.py_buffer(words.tobytes())]).cast(pa.binary())
        yield pa.RecordBatch.from_arrays([index, pa.array(stat, pa.int32()), pa.array(shift, pa.int32()),
                                          pa.array(value, pa.int64())], names=[INDEX, STAT, SHIFT, VALUE])

    return run


def row_hashes(stage: "GroupsStage", secret: bytes) -> Any:
    """The mapInArrow function adding each row's keyed row hash and value bits (the row-level n rule)."""
    key = core.row_key(secret)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            words = _matrix(batch.column(INDEX))
            bits = [core.value_bits(np.asarray(batch.column(value_name(i)).to_numpy(zero_copy_only=False),
                                               dtype=np.float64)) for i in range(len(stage.value_columns))]
            h = core.row_hash(core.SPARK_SEED, np.ascontiguousarray(words), bits, key)
            arrays = [pa.array(h, pa.int64())] + [pa.array(b, pa.int64()) for b in bits]
            names = [HASH] + [_bits_name(i) for i in range(len(bits))]
            for a, n in zip(arrays, names):
                batch = batch.append_column(n, a)
            yield batch

    return run


def _read(df: "DataFrame", stage: "GroupsStage") -> "DataFrame":
    """(keys, unit, value doubles) of the rows with non-NULL keys and unit; a bad column fails here (no job)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, NullType, NumericType, StringType

    from dpspark.engine.numeric import spark_numeric
    from dpspark.engine.predicate import spark_ref
    from dpspark.engine.spark.counts import check_columns

    check_columns(df, stage.columns)
    dtypes = {f.name: f.dataType for f in df.schema.fields}
    values = []
    for i, c in enumerate(stage.value_columns):
        if not isinstance(dtypes[c], (NumericType, StringType, BooleanType, NullType)):
            raise InputError(f"column {c!r} has Spark type {dtypes[c].simpleString()}, not a number")
        values.append(spark_numeric(spark_ref(c), dtypes[c]).alias(value_name(i)))
    unit = stage.unit_column
    ids = list(stage.key_columns) + ([unit] if unit else [])
    rows = df.select(*[spark_ref(c).alias(c) for c in ids], *values)
    not_null = F.lit(True)
    for c in ids:
        not_null = not_null & F.col(c).isNotNull()
    return rows.filter(not_null)


def groups_spark(df: "DataFrame", stage: "GroupsStage", secret: bytes) -> "list[GroupStats]":
    """The stage over ``df`` with the release's batch ``secret``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from dpspark.engine.spark.counts import _bound_units
    from dpspark.engine.spark.encode import with_universe_index
    from dpspark.engine.stages import CountsStage

    cols, unit = list(stage.key_columns), stage.unit_column
    rows = _read(df, stage)
    if unit is not None:  # the CountsStage "truncate" rule, from the same secret
        counts_stage = CountsStage(key_columns=tuple(cols), universe=stage.universe, unit_column=unit,
                                   out_of_universe="drop", max_units=stage.max_units)
        rows = _bound_units(rows, unit, counts_stage, secret)
    encoded = with_universe_index(rows.select(*cols).distinct(), stage.universe, cols, index_col=INDEX,
                                  in_universe_col=MEMBER)
    if stage.out_of_universe == "error" and encoded.filter(F.col(MEMBER) == F.lit(False)).limit(1).count():
        from dpspark.mechanisms.groups.arrow_stats import OUT_OF_UNIVERSE

        raise CuratorError(OUT_OF_UNIVERSE)
    index_of = encoded.filter(F.col(MEMBER)).select(*cols, INDEX)
    vals = [value_name(i) for i in range(len(stage.value_columns))]
    rows = rows.join(index_of, on=cols, how="inner").select(*([unit] if unit else []), INDEX, *vals)
    if unit is None:
        if rows.count() > stage.max_units:  # every row a unit: the n rows first in keyed row-hash order
            schema = StructType(list(rows.schema.fields) + [StructField(HASH, LongType(), False)]
                                + [StructField(_bits_name(i), LongType(), False) for i in range(len(vals))])
            hashed = rows.mapInArrow(row_hashes(stage, secret), schema)
            order = [F.col(HASH), F.col(INDEX)] + [F.col(_bits_name(i)) for i in range(len(vals))]
            rows = hashed.orderBy(*order).limit(stage.max_units).select(INDEX, *vals)
    else:
        rows = rows.withColumn(UNIT_HASH, F.xxhash64(F.col(unit))).repartition(F.col(unit))
    out_schema = StructType([StructField(INDEX, BinaryType(), False), StructField(STAT, IntegerType(), False),
                             StructField(SHIFT, IntegerType(), False), StructField(VALUE, LongType(), False)])
    partials = rows.mapInArrow(partition_stats(stage, secret), out_schema)
    summed = partials.groupBy(INDEX, STAT, SHIFT).agg(F.sum(VALUE).alias(VALUE))
    table = summed.toArrow()
    keys = [int.from_bytes(w, "big") - 1 for w in table.column(INDEX).to_pylist()]
    return core.decode(keys, table.column(STAT).to_pylist(), table.column(SHIFT).to_pylist(),
                       table.column(VALUE).to_pylist(), stage)
