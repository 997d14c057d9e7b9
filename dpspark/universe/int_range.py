"""Integer ranges: the universe [lo, hi] with index v - lo + 1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from dpspark.universe import wide
from dpspark.universe.base import Universe, null_mask
from dpspark.universe.errors import KeyTypeError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1


def is_plain_int(value: Any) -> bool:
    """True for Python ints that are not bools."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class IntRangeUniverse(Universe):
    """All integers lo..hi inclusive; index(v) = v - lo + 1.

    Bounds are arbitrary Python ints (size up to 2^256). Arrow and Spark key
    columns are 64-bit, so values outside the signed (or, for Arrow uint64
    columns, unsigned) 64-bit range simply never occur there.
    """

    lo: int
    hi: int
    column: str | None = None
    kind: ClassVar[str] = "int_range"

    def __post_init__(self) -> None:
        if not (is_plain_int(self.lo) and is_plain_int(self.hi)):
            raise self._config_error("lo and hi must be integers")
        if max(abs(self.lo), abs(self.hi)).bit_length() > 512:
            raise self._config_error("lo and hi must lie within +-2^512")
        if self.lo > self.hi:
            raise self._config_error(f"lo ({self.lo}) > hi ({self.hi})")
        self._check_size()

    @property
    def size(self) -> int:
        """hi - lo + 1."""
        return self.hi - self.lo + 1

    @property
    def key_kind(self) -> str:
        """``"int"``."""
        return "int"

    @property
    def words(self) -> str:
        """``integers lo..hi``."""
        return f"integers {self.lo}..{self.hi}"

    def key_fields(self) -> tuple[tuple[str, str, pa.DataType], ...]:
        """The key as int64 / uint64 when the whole range fits, else as its decimal string."""
        if INT64_MIN <= self.lo and self.hi <= INT64_MAX:
            return (("", "key", pa.int64()),)
        if 0 <= self.lo and self.hi <= UINT64_MAX:
            return (("", "key", pa.uint64()),)
        return (("", "key", pa.string()),)

    def key_arrays(self, indexes: list[int]) -> list[pa.Array]:
        """The keys as integers, or as decimal strings when the range does not fit 64 bits."""
        if self.key_fields()[0][2] == pa.string():
            return [pa.array([str(self.lo + i - 1) for i in indexes], type=pa.string())]
        return super().key_arrays(indexes)

    def _offset(self, value: Any) -> int:
        if value is None:
            raise self._reject("key is null")
        if not is_plain_int(value):
            raise self._reject(f"key is a {type(value).__name__}, not an integer")
        if not self.lo <= value <= self.hi:
            raise self._reject(f"key is outside [lo, hi] = [{self.lo}, {self.hi}]")
        return value - self.lo

    def _value(self, offset: int) -> int:
        return self.lo + offset

    def arrow_type(self) -> pa.DataType:
        """uint64 when lo >= 0 and hi needs it (and fits), else int64.

        For ranges wider than 64 bits, :meth:`decode_arrow` returns int64 when
        every decoded value fits and raises ``ValueError`` otherwise.
        """
        if 0 <= self.lo and INT64_MAX < self.hi <= UINT64_MAX:
            return pa.uint64()
        return pa.int64()

    def _encode_offsets(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not pa.types.is_integer(array.type):
            raise KeyTypeError(f"{self.label}: key column has Arrow type {array.type}, expected an integer type")
        nulls = null_mask(array)
        signed = pa.types.is_signed_integer(array.type)
        if signed:
            v = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
            u = v.view(np.uint64) ^ np.uint64(1 << 63)  # v + 2^63 as an unsigned 64-bit number
            bias, lo_c, hi_c = 1 << 63, max(self.lo, INT64_MIN), min(self.hi, INT64_MAX)
        else:
            v = array.cast(pa.uint64()).fill_null(0).to_numpy(zero_copy_only=False)
            u = v
            bias, lo_c, hi_c = 0, max(self.lo, 0), min(self.hi, UINT64_MAX)
        if lo_c > hi_c:
            member = np.zeros(len(v), dtype=bool)
        else:
            member = (v >= v.dtype.type(lo_c)) & (v <= v.dtype.type(hi_c))
        limbs = wide.zeros(self.index_width // 4, len(v))
        limbs[0] = u & np.uint64(wide.LIMB_MASK)
        limbs[1] = u >> np.uint64(32)
        # offset = v - lo = u - (lo + bias); exact for members, wrapped garbage for others (zeroed).
        offsets = wide.add_const(limbs, -(self.lo + bias))
        offsets[:, ~member | nulls] = 0
        return offsets, member, nulls

    def _decode_offsets(self, offsets: np.ndarray) -> pa.Array:
        out_type = self.arrow_type()
        if out_type == pa.uint64():
            values = wide.add_const(offsets, self.lo)
            return pa.array(values[0] | (values[1] << np.uint64(32)), type=pa.uint64())
        # v + 2^63 must lie in [0, 2^64) for v to fit int64
        biased = wide.add_const(offsets, self.lo + (1 << 63))
        if not wide.less_than_const(biased, 1 << 64).all():
            raise ValueError(f"{self.label}: some values lie beyond 64 bits and have no Arrow type; use decode()")
        low64 = (biased[0] | (biased[1] << np.uint64(32))) ^ np.uint64(1 << 63)
        return pa.array(low64.view(np.int64), type=pa.int64())

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "int_range", ["column": ...,] "lo": ..., "hi": ...}``; bounds beyond int64 as decimal strings."""
        d = self._base_dict()
        d["lo"] = int_to_spec(self.lo)
        d["hi"] = int_to_spec(self.hi)
        return d


def int_to_spec(value: int) -> int | str:
    """An int for TOML/JSON: itself when it fits int64 (TOML's limit), else its decimal string."""
    return value if INT64_MIN <= value <= INT64_MAX else str(value)
