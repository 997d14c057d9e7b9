"""The coefficient file of a compact release: ``coefficients.arrow``, an Arrow IPC file.

Layout (a reader needs nothing else):

* Arrow IPC **file** format (random access, memory-mappable), no compression;
* exactly one column, ``coefficient``, ``fixed_size_binary(m/8)``, no nulls;
* row i holds the coefficient c_i of z^i (ascending degree), l = n + 1 rows;
* each value is the **big-endian** m/8-byte encoding of iota(c_i) - 1, the
  integer whose bit j is the coefficient of z^j in the polynomial basis of
  GF(2^m) = GF(2)[z]/(modulus);
* record batches of ``batch_rows`` rows each (the last one shorter), so the
  file is l * m/8 bytes of values plus small metadata;
* schema metadata ``dpspark.content = compact-coefficients``, ``dpspark.m``,
  ``dpspark.ell`` and ``dpspark.batch_rows`` (decimal strings).

In memory (dpspark.gf) the coefficients are a (l, m/64) uint64 array of
little-endian words (word 0 = bits 0..63). Reading converts with numpy views
and one byteswapping copy per batch; no Python list of coefficients is ever
built.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from dpspark.release.errors import ReleaseFormatError

COEFFICIENTS_FILE = "coefficients.arrow"
COLUMN = "coefficient"
CONTENT = "compact-coefficients"
#: Rows per record batch written by dpspark (16 MiB at m = 128).
DEFAULT_BATCH_ROWS = 1 << 20
#: Largest batch size a reader accepts.
MAX_BATCH_ROWS = 1 << 24
_FIXED_OVERHEAD = 4096
_PER_BATCH_OVERHEAD = 512


def batch_count(ell: int, batch_rows: int) -> int:
    """Number of record batches of a file with ``ell`` rows."""
    return -(-ell // batch_rows)


def max_metadata_bytes(ell: int, batch_rows: int) -> int:
    """Upper bound on the bytes of a well-formed file beyond its ell * m/8 value bytes."""
    return _FIXED_OVERHEAD + _PER_BATCH_OVERHEAD * batch_count(ell, batch_rows)


def coefficient_schema(m: int, ell: int, batch_rows: int) -> pa.Schema:
    """The file's Arrow schema, metadata included."""
    meta = {"dpspark.content": CONTENT, "dpspark.m": str(m), "dpspark.ell": str(ell), "dpspark.batch_rows": str(batch_rows)}
    return pa.schema([pa.field(COLUMN, pa.binary(m // 8), nullable=False)], metadata=meta)


def words_to_be_bytes(coeffs: np.ndarray) -> np.ndarray:
    """(rows, w) little-endian-word uint64 elements -> (rows, w) '>u8' array whose bytes are the big-endian encoding."""
    return np.ascontiguousarray(coeffs[:, ::-1]).astype(">u8")


def write_coefficient_file(path: Path, coeffs: np.ndarray, m: int, batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
    """Write ``coeffs`` ((l, m/64) uint64, ascending degree) as ``path`` in the layout above."""
    if coeffs.dtype != np.uint64 or coeffs.ndim != 2 or coeffs.shape[1] * 64 != m or coeffs.shape[0] < 1:
        raise ValueError(f"coefficients must be a (l, {m // 64}) uint64 array with l >= 1")
    if not 1 <= batch_rows <= MAX_BATCH_ROWS:
        raise ValueError(f"batch_rows must lie in [1, {MAX_BATCH_ROWS}]")
    ell, width = coeffs.shape[0], m // 8
    schema = coefficient_schema(m, ell, batch_rows)
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, schema) as writer:
        for start in range(0, ell, batch_rows):  # public bound: ceil(l / batch_rows) batches
            rows = min(batch_rows, ell - start)
            data = pa.py_buffer(words_to_be_bytes(coeffs[start : start + rows]).tobytes())
            array = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), rows, [None, data])
            writer.write_batch(pa.record_batch([array], schema=schema))


def _check_schema(schema: pa.Schema, path: Path, m: int, ell: int, batch_rows: int) -> None:
    expected = coefficient_schema(m, ell, batch_rows)
    try:
        name = schema[0].name if len(schema) == 1 else None
    except UnicodeDecodeError:  # pyarrow decodes field names as UTF-8 lazily
        raise ReleaseFormatError(f"{path}: the coefficient column's name is not valid UTF-8; the file is damaged") from None
    if name != COLUMN or schema[0].type != pa.binary(m // 8):
        raise ReleaseFormatError(f"{path}: expected one column {COLUMN!r} of fixed_size_binary[{m // 8}] (m = {m})")
    if schema[0].nullable:
        raise ReleaseFormatError(f"{path}: the coefficient column must be declared non-nullable")
    if (schema.metadata or {}) != (expected.metadata or {}):
        raise ReleaseFormatError(f"{path}: the file's metadata (content, m, ell, batch_rows) differs from the manifest")


def read_coefficient_file(path: Path, m: int, ell: int, batch_rows: int) -> np.ndarray:
    """Memory-map ``path`` and return its coefficients as a (l, m/64) uint64 array of little-endian words.

    ``m``, ``ell`` and ``batch_rows`` come from the (already validated)
    manifest; the file must match them exactly. Every failure is a
    :class:`ReleaseFormatError` naming the file.
    """
    width, w = m // 8, m // 64
    nbatches = batch_count(ell, batch_rows)
    try:
        source = pa.memory_map(str(path), "r")
    except OSError as exc:
        raise ReleaseFormatError(f"{path}: cannot open the coefficient file ({exc})") from None
    try:
        try:
            reader = ipc.open_file(source)
            schema = reader.schema
            found = reader.num_record_batches
        except Exception as exc:  # pyarrow raises several types on damaged files
            raise ReleaseFormatError(
                f"{path}: not a readable Arrow IPC file ({type(exc).__name__}); the file is damaged"
            ) from None
        _check_schema(schema, path, m, ell, batch_rows)
        if found != nbatches:
            raise ReleaseFormatError(f"{path}: {found} record batches, expected {nbatches} (l = {ell} rows of {batch_rows})")
        out = np.empty((ell, w), dtype=np.uint64)
        start = 0
        for i in range(nbatches):  # public bound from the manifest
            rows = min(batch_rows, ell - start)
            try:
                batch = reader.get_batch(i)
                batch.validate(full=True)
            except Exception as exc:
                raise ReleaseFormatError(f"{path}: record batch {i} is damaged ({type(exc).__name__})") from None
            column = batch.column(0)
            if batch.num_rows != rows or column.null_count or column.type != pa.binary(width):
                raise ReleaseFormatError(f"{path}: record batch {i} has the wrong row count, type or nulls")
            buffer = column.buffers()[1]
            if buffer is None or buffer.size < (column.offset + rows) * width:
                raise ReleaseFormatError(f"{path}: record batch {i} has a short data buffer")
            be = np.frombuffer(buffer, dtype=">u8", count=rows * w, offset=column.offset * width).reshape(rows, w)
            out[start : start + rows] = be[:, ::-1]  # word order reversed, bytes swapped: one copy
            start += rows
        return out
    finally:
        source.close()
