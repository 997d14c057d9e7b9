"""Hashed universes: index = 1 + the first ``bits`` bits of SHA-256 of the key's canonical bytes.

NOT a bijection. Distinct keys whose hashes agree on the first ``bits`` bits
share a bin, and their counts are added together; a lookup of either key
returns that shared bin (lookups hash the key exactly the same way). With s
distinct keys the chance of any collision is about s^2 / 2^(bits+1).

Canonical bytes (``key_type``):
* ``string``: the UTF-8 encoding of the str (Spark: ``sha2(col, 256)`` on a string column);
* ``bytes``: the bytes themselves;
* ``int``: 8-byte big-endian two's complement; ints outside the signed 64-bit
  range are outside the universe.
The key type is part of the spec, so the string "1" and the int 1 never meet
in one universe.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from dpspark.universe import wide
from dpspark.universe.base import Universe, null_mask
from dpspark.universe.errors import KeyTypeError
from dpspark.universe.int_range import INT64_MAX, INT64_MIN, is_plain_int

KEY_TYPES = ("string", "bytes", "int")


def shift_right(limbs: np.ndarray, shift: int) -> np.ndarray:
    """Logical right shift of normalized limbs by a constant number of bits."""
    nlimbs, rows = limbs.shape
    q, b = divmod(shift, wide.LIMB_BITS)
    out = np.zeros_like(limbs)
    for k in range(nlimbs - q):
        part = limbs[k + q] >> np.uint64(b)
        if b and k + q + 1 < nlimbs:
            part |= (limbs[k + q + 1] << np.uint64(wide.LIMB_BITS - b)) & np.uint64(wide.LIMB_MASK)
        out[k] = part
    return out


@dataclass(frozen=True)
class HashedUniverse(Universe):
    """Keys of one ``key_type`` hashed to 2^bits bins (1 <= bits <= 256)."""

    bits: int
    key_type: str
    column: str | None = None
    kind: ClassVar[str] = "hashed"

    def __post_init__(self) -> None:
        if self.key_type not in KEY_TYPES:
            raise self._config_error(f"key_type must be one of {', '.join(KEY_TYPES)}")
        if not is_plain_int(self.bits) or self.bits < 1:
            raise self._config_error("bits must be a positive integer")
        if self.bits > 256:
            raise self._config_error(
                f"size is a {self.bits + 1}-bit number, above the maximum of 2^256 elements (bits must be <= 256)"
            )
        self._check_size()

    @property
    def size(self) -> int:
        """2^bits."""
        return 1 << self.bits

    @property
    def is_bijection(self) -> bool:
        """Always False: colliding keys share a bin."""
        return False

    @property
    def key_kind(self) -> str:
        """The ``key_type``: ``"string"``, ``"bytes"`` or ``"int"``."""
        return self.key_type

    @property
    def words(self) -> str:
        """The key type and the number of bits, with a word on collisions."""
        return f"{self.key_type} keys hashed to {self.bits} bits (SHA-256; colliding keys share a bin)"

    def key_fields(self) -> tuple[tuple[str, str, pa.DataType], ...]:
        """Keys cannot be decoded: the bin's index word instead, as ``<column>__hash_bin``."""
        return (("__hash_bin", "key_hash_bin", pa.binary(self.index_width)),)

    def key_arrays(self, indexes: list[int]) -> list[pa.Array]:
        """The index words themselves."""
        return [wide.index_words(indexes, self.index_width)]

    def canonical_bytes(self, value: Any) -> bytes:
        """The bytes that are hashed (see the module docstring); raises OutOfUniverseError."""
        if value is None:
            raise self._reject("key is null")
        if self.key_type == "string":
            if not isinstance(value, str):
                raise self._reject(f"key is a {type(value).__name__}, expected str")
            try:
                return value.encode("utf-8")
            except UnicodeEncodeError:
                raise self._reject("key is not encodable as UTF-8 (lone surrogate)") from None
        if self.key_type == "bytes":
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise self._reject(f"key is a {type(value).__name__}, expected bytes")
            return bytes(value)
        if not is_plain_int(value):
            raise self._reject(f"key is a {type(value).__name__}, expected int")
        if not INT64_MIN <= value <= INT64_MAX:
            raise self._reject("key is outside the signed 64-bit range")
        return value.to_bytes(8, "big", signed=True)

    def _offset(self, value: Any) -> int:
        digest = hashlib.sha256(self.canonical_bytes(value)).digest()
        return int.from_bytes(digest, "big") >> (256 - self.bits)

    def _value(self, offset: int) -> Any:
        raise ValueError(f"{self.label}: hashed universes cannot be decoded; look keys up by encoding them")

    def decode_arrow(self, indexes: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Always raises: hashing is not invertible."""
        raise ValueError(f"{self.label}: hashed universes cannot be decoded; look keys up by encoding them")

    def arrow_type(self) -> pa.DataType:
        """Arrow type of the keys (string, binary or int64)."""
        return {"string": pa.string(), "bytes": pa.binary(), "int": pa.int64()}[self.key_type]

    def _encode_offsets(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # Per-row Python remains here: one hashlib.sha256 call per row (about 1 us);
        # Spark jobs use the native sha2() path in dpspark.engine.spark.encode instead.
        nulls = null_mask(array)
        rows = len(array)
        member = ~nulls
        t = array.type
        if self.key_type == "int":
            if not pa.types.is_integer(t):
                raise KeyTypeError(f"{self.label}: key column has Arrow type {t}, expected an integer type")
            if pa.types.is_uint64(t):
                big = array.fill_null(0).to_numpy(zero_copy_only=False) > np.uint64(INT64_MAX)
                member &= ~big
                v = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)  # wraps only non-members
            else:
                v = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
            raw = v.astype(">i8").tobytes()
            digests = b"".join(hashlib.sha256(raw[8 * r : 8 * r + 8]).digest() for r in range(rows))
        else:
            if self.key_type == "string":
                if pa.types.is_string(t):
                    binary = array.cast(pa.binary())
                elif pa.types.is_large_string(t):
                    binary = array.cast(pa.large_binary())
                else:
                    raise KeyTypeError(f"{self.label}: key column has Arrow type {t}, expected string")
            else:
                if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
                    raise KeyTypeError(f"{self.label}: key column has Arrow type {t}, expected binary")
                binary = array
            offset_type = np.int64 if pa.types.is_large_binary(binary.type) else np.int32
            offs = np.frombuffer(binary.buffers()[1], dtype=offset_type)[binary.offset : binary.offset + rows + 1]
            data_buf = binary.buffers()[2]
            data = memoryview(data_buf) if data_buf is not None else memoryview(b"")
            starts, ends = offs[:-1].tolist(), offs[1:].tolist()
            digests = b"".join(hashlib.sha256(data[s:e]).digest() for s, e in zip(starts, ends))
        matrix = np.frombuffer(digests, dtype=np.uint8).reshape(rows, 32)
        offsets = wide.resize(shift_right(wide.from_be_bytes(matrix), 256 - self.bits), self.index_width // 4)
        offsets[:, ~member | nulls] = 0
        return offsets, member, nulls

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "hashed", ["column": ...,] "bits": k, "key_type": ...}``."""
        return {**self._base_dict(), "bits": self.bits, "key_type": self.key_type}
