"""An Arrow table of input rows as the pieces of a :class:`~dpspark.mechanisms.groups.core.Part`.

The Spark kernel reads each partition with these (in ``mapInArrow``) through the same Arrow code the Arrow
kernel runs on the whole input, so the two engines cannot read a value or a key differently:

* value columns by :func:`dpspark.engine.numeric.arrow_numeric` (NULL, NaN and unparseable text are NULL,
  +-inf stay infinite), as float64 with NaN for NULL;
* key tuples get dense ids (a hash table, not a sort), and each distinct tuple is encoded once by the
  universe's Arrow encoder (:func:`dpspark.engine.arrow.counts.encode_keys`) into a big-endian index word.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def one_chunk(a: "pa.Array | pa.ChunkedArray") -> pa.Array:
    """One contiguous array."""
    if isinstance(a, pa.ChunkedArray):
        return a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a


def numeric_values(table: pa.Table, columns: "tuple[str, ...] | list[str]") -> dict[str, np.ndarray]:
    """float64 per row of each value column, NaN for NULL (NULL, NaN and unparseable text alike)."""
    from dpspark.engine.numeric import arrow_floats

    out = {}
    for c in columns:
        col = one_chunk(table.column(c))
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        out[c] = arrow_floats(col)  # issue 31 §4: one read path whatever the NULLs
    return out


def key_ids(table: pa.Table, cols: list[str]) -> tuple[np.ndarray, pa.Table]:
    """Dense id per row of its (non-NULL) key tuple, and the distinct key tuples (one row per id)."""
    codes, dicts = [], []
    for c in cols:
        col = one_chunk(table.column(c))
        # a dictionary column (Parquet text keys read as such, one dictionary for the table) is its own encoding:
        # no string is hashed per row; a value its rows do not use is a key with no rows, never counted
        enc = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
        codes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        dicts.append(enc.dictionary)
    if len(cols) == 1:
        return codes[0], pa.table({cols[0]: dicts[0]})
    sizes = [len(d) for d in dicts]
    if math.prod(sizes) < 1 << 62:  # exact ints: the combined code fits int64
        combined = np.zeros(len(codes[0]), dtype=np.int64)
        for code, size in zip(codes, sizes):
            combined = combined * size + code
        enc = pc.dictionary_encode(pa.array(combined))
        uniq = enc.dictionary.to_numpy(zero_copy_only=False)
        ids = enc.indices.to_numpy(zero_copy_only=False)
        parts, rest = [], uniq
        for size in reversed(sizes):
            parts.append(rest % size)
            rest = rest // size
        parts.reverse()
    else:  # too many combinations for one int64: distinct rows of the code matrix
        uniq_rows, ids = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        parts = [uniq_rows[:, i] for i in range(len(cols))]
    keys = pa.table({c: d.take(pa.array(p)) for c, d, p in zip(cols, dicts, parts)})
    return ids.astype(np.int64).reshape(-1), keys


def index_words(index: "pa.Array | pa.ChunkedArray", member: np.ndarray) -> np.ndarray:
    """(keys, width) uint8 big-endian index words of fixed-size binary ``index`` (zeros for non-members)."""
    arr = one_chunk(index)
    width = arr.type.byte_width
    buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * width: (arr.offset + len(arr)) * width]
    words = buf.reshape(len(arr), width).copy()
    words[~member] = 0
    return words


def binary_matrix(col: "pa.Array | pa.ChunkedArray", width: int) -> np.ndarray:
    """(n, width) uint8 of a binary column whose values all have ``width`` bytes (index words)."""
    arr = one_chunk(col)
    if pa.types.is_fixed_size_binary(arr.type):
        buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        return buf[arr.offset * width: (arr.offset + len(arr)) * width].reshape(len(arr), width)
    if len(arr) == 0:
        return np.zeros((0, width), dtype=np.uint8)
    large = pa.types.is_large_binary(arr.type)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if large else np.int32)[arr.offset: arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]
    return data.reshape(len(arr), width)


def word_array(words: np.ndarray) -> pa.Array:
    """A binary column of (n, width) uint8 index words."""
    n, width = words.shape
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(np.ascontiguousarray(words).tobytes())])
    return fixed.cast(pa.binary())


def lex_below(keys: list[np.ndarray], bound: list[int], *, or_equal: bool = False) -> np.ndarray:
    """Rows whose tuple of ``keys`` (equal-length arrays, compared as their dtype) is below ``bound``
    lexicographically (``or_equal``: at or below)."""
    n = len(keys[0]) if keys else 0
    out = np.full(n, or_equal, dtype=bool)
    for k, b in zip(reversed(keys), reversed(bound)):
        b_ = np.asarray(b, dtype=k.dtype)
        out = (k < b_) | ((k == b_) & out)
    return out


def word_limbs(words: np.ndarray) -> list[np.ndarray]:
    """Big-endian index words as uint64 limbs, most significant first (their order is the words' order)."""
    limbs = np.ascontiguousarray(words).view(">u8").astype(np.uint64)
    return [limbs[:, j] for j in range(limbs.shape[1])]
