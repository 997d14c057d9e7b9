"""Byte strings (and UTF-8 strings) of bounded length, numbered in shortlex order.

Every byte string of length <= max_bytes, shorter first, equal lengths in
lexicographic (big-endian) order; the empty string has index 1. The index of
s with length L is

    index(s) = 1 + (256^L - 1)/255 + int.from_bytes(s, "big"),

and (256^L - 1)/255 is the integer whose L big-endian bytes are all 0x01,
which is how both the numpy and the Spark encoders compute it.
|X| = (256^(max_bytes+1) - 1)/255, so max_bytes <= 15 gives 16-byte index
words and max_bytes <= 31 gives 32-byte words; 32 or more is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from dpspark.universe import wide
from dpspark.universe.base import Universe, null_mask
from dpspark.universe.errors import KeyTypeError
from dpspark.universe.int_range import is_plain_int

#: Largest max_bytes whose universe fits in 2^256 indexes.
MAX_BYTES_LIMIT = 31


def length_offset(length: int) -> int:
    """(256^length - 1)/255: how many byte strings are shorter than ``length`` (bytes 0x01 repeated)."""
    return ((1 << (8 * length)) - 1) // 255


def _ones_matrix(lengths: np.ndarray, width: int) -> np.ndarray:
    """Rows of ``width`` big-endian bytes whose last ``lengths[r]`` bytes are 0x01."""
    cols = np.arange(width)
    return (cols[None, :] >= (width - lengths)[:, None]).astype(np.uint8)


def utf8_or_null(binary: pa.Array) -> pa.Array:
    """Binary values as strings; a value that is not valid UTF-8 becomes null."""
    try:
        return binary.cast(pa.string())
    except pa.ArrowInvalid:
        out = []
        for b in binary.to_pylist():  # per-row only when some key is not UTF-8
            try:
                out.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(None)
        return pa.array(out, type=pa.string())


@dataclass(frozen=True)
class _ShortlexUniverse(Universe):
    max_bytes: int
    column: str | None = None

    def __post_init__(self) -> None:
        if not is_plain_int(self.max_bytes) or self.max_bytes < 0:
            raise self._config_error("max_bytes must be a non-negative integer")
        if self.max_bytes > MAX_BYTES_LIMIT:
            raise self._config_error(
                f"size is a {8 * self.max_bytes + 1}-bit number, above the maximum of 2^256 elements "
                f"(max_bytes must be <= {MAX_BYTES_LIMIT})"
            )
        self._check_size()

    @property
    def size(self) -> int:
        """(256^(max_bytes+1) - 1)/255."""
        return length_offset(self.max_bytes + 1)

    def _bytes_of(self, value: Any) -> bytes:
        raise NotImplementedError

    def _from_bytes(self, data: bytes) -> Any:
        raise NotImplementedError

    def _offset(self, value: Any) -> int:
        data = self._bytes_of(value)
        if len(data) > self.max_bytes:
            raise self._reject(f"key is longer than max_bytes = {self.max_bytes} bytes")
        return length_offset(len(data)) + int.from_bytes(data, "big")

    def _value(self, offset: int) -> Any:
        length = 0
        while length < self.max_bytes and length_offset(length + 1) <= offset:
            length += 1
        return self._from_bytes((offset - length_offset(length)).to_bytes(length, "big"))

    def _binary_view(self, array: pa.Array) -> pa.Array:
        raise NotImplementedError

    def _encode_offsets(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nulls = null_mask(array)
        binary = self._binary_view(array)
        rows = len(binary)
        offset_type = np.int64 if pa.types.is_large_binary(binary.type) else np.int32
        value_offsets = np.frombuffer(binary.buffers()[1], dtype=offset_type)[binary.offset : binary.offset + rows + 1]
        data_buf = binary.buffers()[2]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        lengths = (value_offsets[1:] - value_offsets[:-1]).astype(np.int64)
        member = (lengths <= self.max_bytes) & ~nulls
        take = np.where(member, lengths, 0)
        width = self.index_width
        # Scatter each member's bytes right-aligned into a (rows, width) big-endian matrix.
        total = int(take.sum())
        row = np.repeat(np.arange(rows), take)
        within = np.arange(total) - np.repeat(np.cumsum(take) - take, take)
        src = np.repeat(value_offsets[:-1].astype(np.int64), take) + within
        matrix = np.zeros((rows, width), dtype=np.uint8)
        matrix[row, width - np.repeat(take, take) + within] = data[src]
        offsets = wide.add(wide.from_be_bytes(matrix), wide.from_be_bytes(_ones_matrix(take, width)))
        return offsets, member, nulls

    def _decode_binary(self, offsets: np.ndarray) -> pa.Array:
        nlimbs, rows = offsets.shape
        width = 4 * nlimbs
        lengths = np.zeros(rows, dtype=np.int64)
        for length in range(1, self.max_bytes + 1):
            lengths += ~wide.less_than_const(offsets, length_offset(length))
        ones = _ones_matrix(lengths, width)
        matrix = wide.to_be_bytes(wide.sub(offsets, wide.from_be_bytes(ones)))
        data = matrix[ones.astype(bool)]  # row-major: each row's last L bytes, in order
        value_offsets = np.concatenate([[0], np.cumsum(lengths)])
        large = value_offsets[-1] > np.iinfo(np.int32).max
        out_type = pa.large_binary() if large else pa.binary()
        value_offsets = value_offsets.astype(np.int64 if large else np.int32)
        return pa.Array.from_buffers(
            out_type, rows, [None, pa.py_buffer(value_offsets.tobytes()), pa.py_buffer(data.tobytes())]
        )


@dataclass(frozen=True)
class BytesUniverse(_ShortlexUniverse):
    """All byte strings of length <= max_bytes in shortlex order (empty string = index 1)."""

    kind: ClassVar[str] = "bytes"

    @property
    def key_kind(self) -> str:
        """``"bytes"``."""
        return "bytes"

    @property
    def words(self) -> str:
        """``byte strings of at most M bytes``."""
        return f"byte strings of at most {self.max_bytes} bytes"

    def key_fields(self) -> tuple[tuple[str, str, pa.DataType], ...]:
        """The key as binary."""
        return (("", "key", self.arrow_type()),)

    def _bytes_of(self, value: Any) -> bytes:
        if value is None:
            raise self._reject("key is null")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise self._reject(f"key is a {type(value).__name__}, expected bytes")
        return bytes(value)

    def _from_bytes(self, data: bytes) -> bytes:
        return data

    def arrow_type(self) -> pa.DataType:
        """binary."""
        return pa.binary()

    def _binary_view(self, array: pa.Array) -> pa.Array:
        if not (pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)):
            raise KeyTypeError(f"{self.label}: key column has Arrow type {array.type}, expected binary")
        return array

    def _decode_offsets(self, offsets: np.ndarray) -> pa.Array:
        return self._decode_binary(offsets)

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "bytes", ["column": ...,] "max_bytes": M}``."""
        return {**self._base_dict(), "max_bytes": self.max_bytes}


@dataclass(frozen=True)
class StringUniverse(_ShortlexUniverse):
    """Strings whose UTF-8 encoding has <= max_bytes bytes, numbered as those bytes in shortlex order.

    Indexes of byte strings that are not valid UTF-8 belong to the universe's
    range but to no str: decoding them raises ``ValueError``.
    """

    kind: ClassVar[str] = "string"

    @property
    def key_kind(self) -> str:
        """``"string"``."""
        return "string"

    @property
    def words(self) -> str:
        """``UTF-8 strings of at most M bytes``."""
        return f"UTF-8 strings of at most {self.max_bytes} bytes"

    def key_fields(self) -> tuple[tuple[str, str, pa.DataType], ...]:
        """The key as a string (null where its bytes are not UTF-8) and its bytes, as ``<column>__bytes``."""
        return (("", "key", pa.string()), ("__bytes", "key_bytes", pa.binary()))

    def key_arrays(self, indexes: list[int]) -> list[pa.Array]:
        """The keys as strings (null where not UTF-8) and as their bytes."""
        raw = BytesUniverse(self.max_bytes).decode_arrow(wide.index_words(indexes, self.index_width))
        raw = raw.cast(pa.binary()) if raw.type != pa.binary() else raw
        return [utf8_or_null(raw), raw]

    def _bytes_of(self, value: Any) -> bytes:
        if value is None:
            raise self._reject("key is null")
        if not isinstance(value, str):
            raise self._reject(f"key is a {type(value).__name__}, expected str")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise self._reject("key is not encodable as UTF-8 (lone surrogate)") from None

    def _from_bytes(self, data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{self.label}: index is a byte string that is not valid UTF-8") from None

    def arrow_type(self) -> pa.DataType:
        """string."""
        return pa.string()

    def _binary_view(self, array: pa.Array) -> pa.Array:
        if pa.types.is_string(array.type):
            return array.cast(pa.binary())
        if pa.types.is_large_string(array.type):
            return array.cast(pa.large_binary())
        raise KeyTypeError(f"{self.label}: key column has Arrow type {array.type}, expected string")

    def _decode_offsets(self, offsets: np.ndarray) -> pa.Array:
        binary = self._decode_binary(offsets)
        target = pa.large_string() if pa.types.is_large_binary(binary.type) else pa.string()
        try:
            return binary.cast(target)
        except pa.ArrowInvalid:
            raise ValueError(f"{self.label}: some indexes are byte strings that are not valid UTF-8") from None

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "string", ["column": ...,] "max_bytes": M}``."""
        return {**self._base_dict(), "max_bytes": self.max_bytes}
