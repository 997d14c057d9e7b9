"""Units on the Arrow engine: each distinct non-NULL unit id once, and its keyed-hash batch as Spark computes it.

A family kernel that groups rows by unit (the product rounds, the Gaussian pairs) reads the unit column with
:func:`encode_units` (a dictionary code per row) and puts unit u in batch H_key(u) mod B with
:func:`unit_batches`: Spark's ``xxhash64`` of the id as Spark types the column
(:func:`~dpspark.engine.arrow.counts.spark_hash`), the keyed splitmix (:mod:`dpspark.engine.keyed`) and a
non-negative remainder - the twin of :func:`dpspark.engine.spark.sums.with_batches`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.arrow.counts import _csv_ints_fit_int32, _one_chunk, spark_hash
from dpspark.engine.keyed import keyed_mix

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend


def valid_units(table: pa.Table, unit: str) -> pa.Table:
    """``table`` without the rows whose unit id is NULL (Spark's ``filter(unit IS NOT NULL)``)."""
    col = table.column(unit)
    return table.filter(pc.is_valid(col)) if col.null_count else table


def encode_units(values: "pa.Array | pa.ChunkedArray") -> tuple[np.ndarray, pa.Array]:
    """(int64 code of each row's unit, the distinct unit ids in code order) of a non-NULL unit column."""
    arr = _one_chunk(values)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    ids = pc.dictionary_encode(arr)
    return ids.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), ids.dictionary


def unit_batches(backend: "ArrowBackend", units: pa.Array, unit: str, batches: int) -> np.ndarray:
    """H_key(u) mod B (int64) of each distinct unit id under the release's batch key, as Spark computes it.

    A CSV input read with ``inferSchema``: Spark types an integral column IntegerType when every value fits
    32 bits, and hashes it as an int (the count stage's rule).
    """
    int32 = bool(backend.csv_infer) and _csv_ints_fit_int32(backend.dataset, unit)
    mixed = keyed_mix(spark_hash(units, unit, int32_units=int32), backend.batch_secret()).view(np.int64)
    return np.mod(mixed, batches)
