"""GF(2^m) field objects with a numpy-native element representation.

Representation (the whole package uses it):

* An element is a row of ``w = m // 64`` uint64 words, **little-endian words**:
  word 0 holds bits 0..63, word 1 bits 64..127, and so on; bit i of the whole
  row is the coefficient of z^i in the polynomial basis.
* Arrays of elements have shape (..., w), dtype uint64.
* ``to_int``/``from_int``: bit i of the Python int is the coefficient of z^i,
  so the int equals galois's integer representation of the same element.
* ``to_bytes``/``from_bytes``: the big-endian encoding of that int, m/8 bytes.

Only the four moduli in ``MODULI`` are supported; they are sparse (z^m + r(z)
with deg r < 64), which the reduction kernel relies on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from dpspark.gf.lazy_kernels import K
# the moduli live in a module of their own (no numpy, no numba), so reading a release's modulus is cheap
from dpspark.gf.moduli import MODULI, modulus_int, modulus_string  # noqa: F401 - re-exported here

_FIELDS: dict[int, "GF2m"] = {}


class GF2m:
    """The field GF(2^m), m in {64, 128, 192, 256}, on (..., w) uint64 arrays.

    Use :func:`GF2m` instances as cheap handles: ``GF2m(128) is GF2m(128)``.
    """

    m: int
    w: int
    taps: np.ndarray
    modulus: int

    def __new__(cls, m: int) -> "GF2m":
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
            raise TypeError("field degree m must be an int")
        m = int(m)
        if m not in MODULI:
            raise ValueError(f"unsupported field degree m={m}; supported: {sorted(MODULI)}")
        if m in _FIELDS:
            return _FIELDS[m]
        self = super().__new__(cls)
        self.m = m
        self.w = m // 64
        self.taps = np.array(MODULI[m], dtype=np.uint64)
        self.modulus = modulus_int(m)
        _FIELDS[m] = self
        return self

    def __repr__(self) -> str:
        return f"GF2m({self.m})"

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (GF2m, (self.m,))

    # ------------------------------------------------------------ validation

    def check(self, a: Any, name: str = "a") -> np.ndarray:
        """Return ``a`` as a C-contiguous uint64 array of shape (..., w), or raise.

        Raises TypeError for a wrong dtype and ValueError for a wrong last axis.
        """
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{name} must be a numpy uint64 array of shape (..., {self.w})")
        if a.dtype != np.uint64:
            raise TypeError(f"{name} must have dtype uint64, got {a.dtype}")
        if a.ndim < 1 or a.shape[-1] != self.w:
            raise ValueError(f"{name} must have shape (..., {self.w}) for GF(2^{self.m}), got {a.shape}")
        return np.ascontiguousarray(a)

    def _flat(self, a: np.ndarray) -> np.ndarray:
        return a.reshape(-1, self.w)

    # ------------------------------------------------------------ constructors

    def zeros(self, shape: int | tuple[int, ...] = ()) -> np.ndarray:
        """Zero elements of the given (batch) shape."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return np.zeros((*shape, self.w), dtype=np.uint64)

    def ones(self, shape: int | tuple[int, ...] = ()) -> np.ndarray:
        """Multiplicative identities of the given (batch) shape."""
        out = self.zeros(shape)
        out[..., 0] = 1
        return out

    def from_int(self, values: int | Iterable[int]) -> np.ndarray:
        """Elements from ints in [0, 2^m): a single int gives shape (w,), a sequence (n, w)."""
        if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
            return self._from_int_list([int(values)])[0]
        return self._from_int_list([int(v) for v in values])

    def _from_int_list(self, vals: Sequence[int]) -> np.ndarray:
        nbytes = self.m // 8
        buf = bytearray(len(vals) * nbytes)
        for i, v in enumerate(vals):
            if v < 0 or v >> self.m:
                raise ValueError(f"field element out of range [0, 2^{self.m})")
            buf[i * nbytes : (i + 1) * nbytes] = v.to_bytes(nbytes, "little")
        return np.frombuffer(bytes(buf), dtype="<u8").astype(np.uint64).reshape(len(vals), self.w)

    def to_int(self, a: np.ndarray) -> int | list[Any]:
        """Inverse of :meth:`from_int`: an int for shape (w,), nested lists otherwise."""
        a = self.check(a)
        raw = a.astype("<u8").tobytes()
        nbytes = self.m // 8
        flat = [int.from_bytes(raw[i : i + nbytes], "little") for i in range(0, len(raw), nbytes)]
        if a.ndim == 1:
            return flat[0]
        return np.array(flat, dtype=object).reshape(a.shape[:-1]).tolist()

    def from_bytes(self, data: bytes | Sequence[bytes]) -> np.ndarray:
        """Elements from big-endian m/8-byte strings: bytes gives (w,), a sequence (n, w)."""
        nbytes = self.m // 8
        single = isinstance(data, (bytes, bytearray, memoryview))
        items = [bytes(data)] if single else [bytes(d) for d in data]
        for d in items:
            if len(d) != nbytes:
                raise ValueError(f"GF(2^{self.m}) elements are {nbytes} bytes")
        raw = b"".join(items)
        be = np.frombuffer(raw, dtype=">u8").reshape(len(items), self.w)
        out = be[:, ::-1].astype(np.uint64)
        return out[0] if single else np.ascontiguousarray(out)

    def to_bytes(self, a: np.ndarray) -> bytes | list[bytes]:
        """Inverse of :meth:`from_bytes`: bytes for shape (w,), a flat list for (n, w)."""
        a = self.check(a)
        rows = self._flat(a)[:, ::-1].astype(">u8")
        nbytes = self.m // 8
        raw = rows.tobytes()
        out = [raw[i : i + nbytes] for i in range(0, len(raw), nbytes)]
        return out[0] if a.ndim == 1 else out

    def from_random_bits(self, rng: Any, count: int) -> np.ndarray:
        """``count`` uniform elements from one ``rng.bits(count*m)`` draw (dpspark.rng source)."""
        if count < 0:
            raise ValueError("count must be >= 0")
        if count == 0:
            return self.zeros(0)
        v = rng.bits(count * self.m)
        raw = v.to_bytes(count * self.m // 8, "little")
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(count, self.w)

    # ------------------------------------------------------------ arithmetic

    def _binary(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        a = self.check(a, "a")
        b = self.check(b, "b")
        shape = np.broadcast_shapes(a.shape, b.shape)
        return self._rows_of(a, shape), self._rows_of(b, shape), shape

    def _rows_of(self, a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """a broadcast to ``shape`` as C-contiguous, writeable (n, w) rows.

        Writeable always: numba compiles a kernel once per argument type and a read-only array is another
        type (np.broadcast_to returns a read-only view even when nothing is broadcast), so one signature per kernel.
        """
        if a.shape != shape:
            a = np.broadcast_to(a, shape)
        a = np.ascontiguousarray(a)
        if not a.flags.writeable:
            a = a.copy()
        return a.reshape(-1, self.w)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a + b (= a - b): word-wise XOR, broadcasting over the batch axes."""
        return np.bitwise_xor(self.check(a, "a"), self.check(b, "b"))

    sub = add

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a * b, broadcasting over the batch axes."""
        a2, b2, shape = self._binary(a, b)
        out = np.empty_like(a2)
        K.mul_arrays(a2, b2, self.taps, out)
        return out.reshape(shape)

    def square(self, a: np.ndarray) -> np.ndarray:
        """a^2."""
        a = self.check(a)
        out = np.empty_like(a)
        K.sqr_arrays(self._flat(a), self.taps, self._flat(out))
        return out

    def pow(self, a: np.ndarray, e: int) -> np.ndarray:
        """a^e for a public integer exponent e >= 0 (0^0 = 1)."""
        a = self.check(a)
        e = int(e)
        if e < 0:
            return self.pow(self.inv(a), -e)
        ebits = np.array([int(c) for c in bin(e)[2:]] if e else [], dtype=np.uint8)
        out = np.empty_like(a)
        K.pow_arrays(self._flat(a), ebits, self.taps, self._flat(out))
        return out

    def inv(self, a: np.ndarray) -> np.ndarray:
        """a^-1 for every element; ZeroDivisionError if any element is zero."""
        a = self.check(a)
        flat = self._flat(a)
        if K.count_zero_rows(flat):
            raise ZeroDivisionError("inverse of the zero element of GF(2^m)")
        from dpspark.gf.inversion import batch_inverse

        return batch_inverse(flat, self.m, self.taps).reshape(a.shape)

    def div(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a / b; ZeroDivisionError if b has a zero element."""
        return self.mul(a, self.inv(b))

    # ------------------------------------------------------------ fixed operand

    def mul_table(self, x: np.ndarray) -> np.ndarray:
        """Byte-window table for multiplying many elements by the fixed element x.

        Shape (m/8, 256, w); 64 KiB at m = 128.
        """
        x = self.check(x, "x")
        if x.shape != (self.w,):
            raise ValueError(f"x must be one element of shape ({self.w},)")
        return K.make_table(x.reshape(1, self.w), self.taps)

    def mul_fixed(self, table: np.ndarray, y: np.ndarray) -> np.ndarray:
        """x * y for the x behind ``table = mul_table(x)``."""
        y = self.check(y, "y")
        out = np.empty_like(y)
        K.table_mul_arrays(table, self._flat(y), self._flat(out))
        return out
