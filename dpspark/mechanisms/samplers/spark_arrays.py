"""Spark side of the array form of the binary input (:mod:`dpspark.mechanisms.samplers.binary_input` has the semantics).

* Product rounds (:func:`packed_array`): the array column goes through ``mapInArrow`` as ONE list column and
  is packed with numpy (``packbits``) into the same int64 words as d named columns (bit j of word j // 64 is
  1 iff element j is non-null and non-zero / true). At d = 1000, 2e5 rows (scripts/bench/product_prep.py)
  the packing took 3.3 s, against 12.3 s for d SQL ``get(array, j)`` expressions, whose generated code
  exceeds the JVM's 64 KB method limit (Spark logs a compile error and falls back to interpreted code);
  docs/samplers.md section 5.
* Bernoulli column sums (:func:`with_elements`): element j becomes a column ``get(array, j)``, NULL when the
  array is NULL or has at most j elements, whatever ``spark.sql.ansi.enabled`` says (``array[j]`` and
  ``element_at`` raise out of range under ANSI, Spark 4's default); the ordinary clipped sums follow.

Positions 0..width-1 are public, so the d bits are a deterministic function of each row alone, exactly like
d named columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.spark.counts import InputError, check_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: the element types the array form takes (the integer and boolean types of the named form's _SQL_BITS)
ELEMENT_TYPES = frozenset({"boolean", "tinyint", "smallint", "int", "bigint"})


def element_type(df: "DataFrame", column: str) -> str:
    """The Spark SQL element type of array column ``column``; an InputError when it is not an array of
    booleans or integers (refused before any pass reads data)."""
    from pyspark.sql.types import ArrayType

    check_columns(df, [column])
    t = df.schema[column].dataType
    if not isinstance(t, ArrayType):
        raise InputError(f"column {column!r} must be an array of booleans or integers for [columns] array; "
                         f"it is {t.simpleString()}")
    e = t.elementType.simpleString()
    if e not in ELEMENT_TYPES:
        raise InputError(f"column {column!r} is an array of {e}; [columns] array takes arrays of booleans or "
                         "integers (tinyint, smallint, int, bigint)")
    return e


def elements(column: str, width: int) -> list[Any]:
    """Column expressions for elements 0..width-1 (NULL out of range, NULL for a NULL array)."""
    from pyspark.sql import functions as F

    return [F.get(F.col(column), j) for j in range(width)]


def spark_bit(column: Any, dtype: Any, nulls: int) -> Any:
    """The 0/1 bit (long) of one binary column on Spark: 1 iff non-zero (+-inf included), ``nulls`` where the
    value is NULL, NaN or unparseable text (:mod:`dpspark.mechanisms.samplers.binary_input`). No cast here can raise on
    data, under ANSI or not: booleans and integers are compared as they are, anything else goes through
    :func:`dpspark.engine.numeric.spark_numeric`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DataType, StringType

    from dpspark.engine.numeric import spark_numeric

    name = dtype.simpleString() if isinstance(dtype, DataType) else str(dtype)  # a type or its SQL name
    if name == "boolean":
        nz = column
    elif name in ELEMENT_TYPES:  # the integer types: compared as they are
        nz = column != F.lit(0)
    else:
        nz = spark_numeric(column, StringType() if name == "string" else dtype) != F.lit(0.0)
    return F.coalesce(nz, F.lit(bool(nulls))).cast("long")


def with_bits(df: "DataFrame", names: Sequence[str], keep: Sequence[str], nulls: int,
              array: str | None = None) -> "DataFrame":
    """``keep`` columns and the d binary columns as 0/1 longs named ``names`` (the bernoulli column sums).

    Named form: ``names`` are the input columns; array form: element j of ``array`` becomes ``names[j]``
    (a missing element is NULL, so it counts as ``nulls``)."""
    from pyspark.sql import functions as F

    if array is not None:
        df = with_elements(df, array, len(names), names, keep)
    else:
        check_columns(df, list(names) + list(keep))
    types = {f.name: f.dataType for f in df.schema.fields}
    return df.select(*[F.col(c) for c in keep], *[spark_bit(F.col(n), types[n], nulls).alias(n) for n in names])


def array_words(values: "pa.Array | pa.ChunkedArray", width: int, nulls: int = 0) -> np.ndarray:
    """Rows x ceil(width/64) int64 words: bit j of word j // 64 is 1 iff element j is non-zero (true);
    NULL elements, NULL arrays and missing elements give ``nulls``; elements at width or beyond are ignored
    (as ``_pack`` on columns)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    rows, nw = len(values), (width + 63) // 64
    lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(values)  # a NULL array emits nothing, so len(flat) == lengths.sum()
    nz = flat if pa.types.is_boolean(flat.type) else pc.not_equal(flat, pa.scalar(0, flat.type))
    one = pc.fill_null(nz, bool(nulls)).to_numpy(zero_copy_only=False)
    parent = np.repeat(np.arange(rows), lengths)
    pos = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # index within its array
    keep = one & (pos < width)
    bits = np.zeros((rows, 64 * nw), dtype=np.uint8)
    if nulls:  # every position < width starts missing (= 1); present elements overwrite it with their bit
        bits[:, :width] = 1
        present = pos < width
        bits[parent[present], pos[present]] = 0
    bits[parent[keep], pos[keep]] = 1
    # little-endian bit and byte order: bit j lands in bit j % 64 of little-endian word j // 64
    return np.packbits(bits, axis=1, bitorder="little").view("<u8").astype(np.uint64).view(np.int64)


def _pack_array(width: int, nulls: int = 0):  # type: ignore[no-untyped-def]
    """mapInArrow: (unit, array) -> (unit, w0, ...), one Arrow batch at a time (rows x 64 nw bytes of scratch)."""
    nw = (width + 63) // 64

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            words = array_words(b.column(1), width, nulls)
            yield pa.RecordBatch.from_arrays([b.column(0)] + [pa.array(words[:, i]) for i in range(nw)],
                                             [b.schema.field(0).name] + [f"w{i}" for i in range(nw)])

    return run


def packed_array(df: "DataFrame", column: str, unit: str, width: int, nulls: int = 0) -> "DataFrame":
    """(unit, w0, ...): each row's elements 0..width-1 of array ``column`` packed into int64 words, the
    words :func:`dpspark.mechanisms.product.spark_rounds._sql_words` makes from d named columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    element_type(df, column)
    rows = df.select(F.col(unit), F.col(column))
    nw = (width + 63) // 64
    schema = StructType([rows.schema.fields[0]] + [StructField(f"w{i}", LongType(), False) for i in range(nw)])
    return rows.mapInArrow(_pack_array(width, nulls), schema)


def with_elements(df: "DataFrame", column: str, width: int, names: Sequence[str], keep: Sequence[str]) -> "DataFrame":
    """``keep`` columns and the array's elements as columns ``names`` (for the bernoulli column sums)."""
    from pyspark.sql import functions as F

    element_type(df, column)
    check_columns(df, list(keep))
    return df.select(*[F.col(c) for c in keep], *[e.alias(n) for e, n in zip(elements(column, width), names)])
