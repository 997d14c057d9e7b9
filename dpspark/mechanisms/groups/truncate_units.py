"""Keep at most L rows of each unit of a table, chosen by the rows' own values: the same rows on both engines.

A unit's kept rows depend on that unit's rows alone (a row's rank is its place, within its unit, in the order
of a hash of the row's read values, ties by those values), so truncating is a per-unit transformation:
adding or removing a unit adds or removes only that unit's kept rows. Two rows of a unit with equal read
values are interchangeable, so which of them is kept changes nothing downstream. The hash is keyed with a
public constant: the choice needs no secret for privacy (it is a function of the unit's own rows), and the
constant keeps the Arrow and the Spark paths identical without a shared secret.

Rows are hashed over the named columns but the unit, in sorted-name order, each read as a 64-bit word: integers as int64,
floats as their float64 bits (-0.0 as 0.0, every NaN one pattern), booleans as 0/1, strings by Spark's
xxhash64 of their bytes, NULL as one fixed word (with the validity in the order too). Other types are refused
from the schema (:func:`type_problem`). Spark runs the same function per partition after a shuffle by unit
(every row of a unit in one partition), so both engines keep the same rows.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the public key of the truncation order (see the module docstring: no secret is needed)
ORDER_KEY = np.uint64(0x6A09E667F3BCC908)
NULL_WORD = np.uint64(0x9E3779B97F4A7C15)


def type_problem(schema: pa.Schema, columns: Sequence[str], where: str) -> str | None:
    """Why a column cannot be ordered by :func:`truncate` (its type), or None (metadata only)."""
    for c in columns:
        t = schema.field(c).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
                or pa.types.is_large_string(t) or pa.types.is_null(t)):
            return (f"{where}: column {c!r} has type {t}; a private join reads integer, float, boolean or string "
                    "columns (cast it in the table)")
    return None


def _words(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit word, validity 0/1) of each value of one column (see the module docstring)."""
    from dpspark.engine.arrow.counts import spark_hash

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    valid = np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)
    t = arr.type
    if pa.types.is_null(t):
        words = np.zeros(len(arr), np.uint64)
    elif pa.types.is_integer(t):
        words = pc.fill_null(arr.cast(pa.int64(), safe=False), 0).to_numpy(zero_copy_only=False).view(np.uint64)
    elif pa.types.is_floating(t):
        x = pc.fill_null(arr.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False).astype(np.float64) + 0.0
        x[np.isnan(x)] = np.nan  # one NaN pattern
        words = x.view(np.uint64)
    elif pa.types.is_boolean(t):
        words = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint64)
    else:
        words = spark_hash(pc.fill_null(arr.cast(pa.string()), ""), "join")
    words = np.where(valid, words, NULL_WORD).astype(np.uint64)
    return words, valid.astype(np.uint64)


def rank_in_unit(table: pa.Table, unit: str, columns: Sequence[str]) -> np.ndarray:
    """Each row's 0-based rank within its unit (NULL units: one group of their own; drop them first)."""
    from dpspark.engine.keyed import mix64

    n = table.num_rows
    if n == 0:
        return np.zeros(0, np.int64)
    codes = np.asarray(pc.dictionary_encode(table.column(unit).combine_chunks()).indices.to_numpy(
        zero_copy_only=False), dtype=np.int64)
    keys: dict[str, np.ndarray] = {}
    h = np.full(n, ORDER_KEY, np.uint64)
    for i, c in enumerate(sorted(set(columns) - {unit})):  # the unit is one value within a unit: not hashed
        w, v = _words(table.column(c))
        h = mix64(h ^ w, ORDER_KEY)
        h = mix64(h ^ v, ORDER_KEY)
        keys[f"w{i}"], keys[f"v{i}"] = w, v
    # unit, then hash, then the values themselves (Arrow's sort reads a later key only on ties: fast)
    sort = pa.table({"unit": codes, "hash": h, **keys})
    order = np.asarray(pc.sort_indices(sort, sort_keys=[(k, "ascending") for k in sort.column_names]).to_numpy(
        zero_copy_only=False), dtype=np.int64)
    sc = codes[order]
    start = np.r_[True, sc[1:] != sc[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - first
    return rank


def truncate(table: pa.Table, unit: str, limit: int, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of ``table`` with a non-NULL unit, at most ``limit`` per unit (ordered over ``columns``,
    default all), in their input order."""
    table = table.filter(pc.is_valid(table.column(unit)))
    rank = rank_in_unit(table, unit, table.column_names if columns is None else columns)
    return table.filter(pa.array(rank < limit))


def spark_truncate(df: Any, unit: str, limit: int) -> Any:
    """:func:`truncate` on Spark: a shuffle by unit (a unit's rows in one partition), then the same function."""
    from dpspark.engine.predicate import spark_ref

    columns = list(df.columns)
    rows = df.filter(spark_ref(unit).isNotNull()).repartition(spark_ref(unit))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = list(batches)
        if not got:
            return
        yield from truncate(pa.Table.from_batches(got), unit, limit, columns).to_batches()

    return rows.mapInArrow(run, rows.schema)
