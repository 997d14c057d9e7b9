"""Vectorized fixed-width unsigned integers and the binary index word format.

Index words
-----------
A universe index i in [1, |X|] travels through Arrow and Spark as a
**big-endian FixedSizeBinary(W)**, W = 16 when |X| <= 2^128 and W = 32 when
|X| <= 2^256 (docs/balcer-vadhan-notes.md §E9: Spark decimals cannot hold 2^128). The word holds
``i mod 2^(8W)``. The only index that wraps is i = 2^(8W), possible only when
|X| = 2^(8W) exactly (for example a 128-bit hashed universe), and it is stored
as the all-zero word; index 0 never occurs otherwise. Use
:func:`index_to_bytes` / :func:`index_from_bytes` rather than raw
``int.from_bytes`` so that this one case is handled. Note that
``(int.from_bytes(word, 'big') - 1) mod 2^(8W)`` is always the 0-based offset
i - 1, which is what a GF(2^m) embedding (docs/balcer-vadhan-notes.md §C1, phi = iota^-1)
needs.

Vectorized arithmetic
---------------------
Numbers are numpy ``uint64`` arrays of shape (limbs, rows) holding 32-bit limbs,
least significant limb first (limb-major, so each limb is a contiguous row vector). Every loop below runs over limbs (at most 8 for
256-bit words), never over rows, so the row dimension is handled by numpy.
All arithmetic is modulo 2^(32*limbs).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

LIMB_BITS = 32
LIMB_MASK = (1 << LIMB_BITS) - 1
#: Largest universe size dpspark accepts for a scalar universe.
MAX_UNIVERSE_SIZE = 1 << 256
#: Largest tuple universe (issue 34 §5: three 31-byte string columns need 744 bits): 128-byte index words
MAX_TUPLE_SIZE = 1 << 1024
#: the index word widths: 16 and 32 bytes, and multiples of 16 up to 128 for wide tuple universes
WIDTHS = tuple(range(16, 129, 16))


def index_width(size: int) -> int:
    """Bytes per index word for a universe of ``size`` elements: 16 up to 2^128, 32 up to 2^256, then the least
    multiple of 16 bytes that holds it (tuple universes up to 2^1024 only; every mechanism but groups refuses
    words wider than its ``max_index_width``)."""
    if size < 1 or size > MAX_TUPLE_SIZE:
        raise ValueError(f"universe size must be in [1, 2^1024], got a {size.bit_length()}-bit number")
    if size <= 1 << 128:
        return 16
    return 16 * -(-(size - 1).bit_length() // 128) if size > 1 << 256 else 32


def index_to_bytes(index: int, width: int) -> bytes:
    """The big-endian word for a 1-based ``index`` (``2^(8*width)`` becomes all zeros)."""
    if width not in WIDTHS:
        raise ValueError(f"index width must be a multiple of 16 bytes up to 128, got {width}")
    if not 1 <= index <= 1 << (8 * width):
        raise ValueError(f"index out of range for a {width}-byte index word")
    return (index & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def index_from_bytes(word: bytes) -> int:
    """The 1-based index stored in a big-endian word (all zeros means ``2^(8*len(word))``)."""
    if len(word) not in WIDTHS:
        raise ValueError(f"index words are a multiple of 16 bytes up to 128, got {len(word)}")
    value = int.from_bytes(word, "big")
    return value if value else 1 << (8 * len(word))


def index_words(indexes: list[int], width: int) -> pa.FixedSizeBinaryArray:
    """Big-endian index words of 1-based ``indexes`` (vectorized when they all fit in 63 bits)."""
    if indexes and max(indexes) < 1 << 63 and min(indexes) >= 1:
        matrix = np.zeros((len(indexes), width), dtype=np.uint8)
        matrix[:, width - 8 :] = np.asarray(indexes, dtype=np.int64).astype(">u8").view(np.uint8).reshape(-1, 8)
        data = matrix.tobytes()
    else:  # per-row Python for wider indexes (2^(8W) wraps to zeros, see index_to_bytes)
        data = b"".join(index_to_bytes(i, width) for i in indexes)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(indexes), [None, pa.py_buffer(data)])


def int_to_limbs(value: int, nlimbs: int) -> np.ndarray:
    """Limbs (least significant first) of ``value mod 2^(32*nlimbs)``, shape (nlimbs, 1)."""
    value &= (1 << (LIMB_BITS * nlimbs)) - 1
    return np.array([[(value >> (LIMB_BITS * k)) & LIMB_MASK] for k in range(nlimbs)], dtype=np.uint64)


def zeros(nlimbs: int, rows: int) -> np.ndarray:
    """A zero limb array of shape (nlimbs, rows)."""
    return np.zeros((nlimbs, rows), dtype=np.uint64)


def limbs_to_ints(limbs: np.ndarray) -> list[int]:
    """Python ints of each row of a normalized limb array (per-row Python: for small outputs)."""
    data = to_be_bytes(limbs)
    width = data.shape[1]
    raw = data.tobytes()
    return [int.from_bytes(raw[r * width : (r + 1) * width], "big") for r in range(data.shape[0])]


def normalize(acc: np.ndarray) -> np.ndarray:
    """Propagate carries in place so every limb is < 2^32; the top carry is dropped (mod).

    Each accumulator limb must be below 2^64 - 2^32 so the carry add cannot wrap.
    """
    shift, mask = np.uint64(LIMB_BITS), np.uint64(LIMB_MASK)
    for k in range(acc.shape[0]):
        if k + 1 < acc.shape[0]:
            acc[k + 1] += acc[k] >> shift
        acc[k] &= mask
    return acc


def resize(limbs: np.ndarray, nlimbs: int) -> np.ndarray:
    """Zero-extend or truncate (mod 2^(32*nlimbs)) to ``nlimbs`` limbs."""
    have, rows = limbs.shape
    if have >= nlimbs:
        return limbs[:nlimbs].copy()
    out = zeros(nlimbs, rows)
    out[:have] = limbs
    return out


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a + b) mod 2^(32*limbs) for two normalized arrays of equal shape."""
    return normalize(a + b)


def add_const(a: np.ndarray, c: int) -> np.ndarray:
    """(a + c) mod 2^(32*limbs); ``c`` may be negative (two's complement wrap)."""
    return normalize(a + int_to_limbs(c, a.shape[0]))


def negate(a: np.ndarray) -> np.ndarray:
    """(-a) mod 2^(32*limbs)."""
    return add_const(np.uint64(LIMB_MASK) - a, 1)


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a - b) mod 2^(32*limbs)."""
    return add(a, negate(b))


def mul_const(a: np.ndarray, c: int, nlimbs: int) -> np.ndarray:
    """(a * c) mod 2^(32*nlimbs) for a normalized ``a`` and a constant ``c >= 0``."""
    have, rows = a.shape
    acc = zeros(nlimbs + 1, rows)
    shift, mask = np.uint64(LIMB_BITS), np.uint64(LIMB_MASK)
    c_limbs = int_to_limbs(c, nlimbs)[:, 0]
    for t in range(nlimbs):
        ct = c_limbs[t]
        if ct == 0:
            continue
        for s in range(min(have, nlimbs - t)):
            prod = a[s] * ct  # < 2^64: both factors < 2^32
            acc[s + t] += prod & mask
            acc[s + t + 1] += prod >> shift
            # At most 2*8*8 terms of < 2^32 land in a limb: far below 2^64.
    return normalize(acc)[:nlimbs].copy()


def less_than_const(a: np.ndarray, c: int) -> np.ndarray:
    """Boolean mask a < c for a normalized ``a``; ``c`` at or above 2^(32*limbs) gives all True."""
    nlimbs, rows = a.shape
    if c >= 1 << (LIMB_BITS * nlimbs):
        return np.ones(rows, dtype=bool)
    if c <= 0:
        return np.zeros(rows, dtype=bool)
    c_limbs = int_to_limbs(c, nlimbs)[:, 0]
    result = np.zeros(rows, dtype=bool)
    decided = np.zeros(rows, dtype=bool)
    for k in range(nlimbs - 1, -1, -1):
        lt = a[k] < c_limbs[k]
        gt = a[k] > c_limbs[k]
        result |= ~decided & lt
        decided |= lt | gt
    return result


def from_be_bytes(data: np.ndarray) -> np.ndarray:
    """Limbs (nlimbs, rows) of big-endian byte rows (uint8 array of shape (rows, 4*nlimbs))."""
    rows, width = data.shape
    if width % 4:
        raise ValueError("byte rows must be a multiple of 4 bytes")
    words = np.ascontiguousarray(data).view(">u4").reshape(rows, width // 4)
    return np.ascontiguousarray(words.T[::-1], dtype=np.uint64)


def to_be_bytes(limbs: np.ndarray) -> np.ndarray:
    """Big-endian byte rows (uint8, shape (rows, 4*nlimbs)) of normalized limbs."""
    nlimbs, rows = limbs.shape
    words = np.ascontiguousarray(limbs[::-1].T, dtype=">u4")
    return words.view(np.uint8).reshape(rows, 4 * nlimbs)


def offsets_to_index_array(offsets: np.ndarray, keep: np.ndarray, width: int) -> pa.FixedSizeBinaryArray:
    """Index words (offset + 1, wrapped) as FixedSizeBinary(width); rows with ``keep`` False are null."""
    nlimbs = width // 4
    words = add_const(resize(offsets, nlimbs), 1)
    words[:, ~keep] = 0
    data = to_be_bytes(words)
    rows = data.shape[0]
    validity = pa.array(keep, type=pa.bool_()).buffers()[1] if not keep.all() else None
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), rows, [validity, pa.py_buffer(data)], null_count=int(rows - keep.sum())
    )


def index_array_to_offsets(indexes: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """0-based offsets (index - 1, mod 2^(8W)) of an index-word array, and its null mask."""
    if isinstance(indexes, pa.ChunkedArray):
        indexes = indexes.combine_chunks()
    if not pa.types.is_fixed_size_binary(indexes.type) or indexes.type.byte_width not in WIDTHS:
        raise TypeError(f"index arrays must be fixed_size_binary[16 j] (j = 1..8), got {indexes.type}")
    width = indexes.type.byte_width
    rows = len(indexes)
    buf = indexes.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8, count=(indexes.offset + rows) * width)
    data = raw[indexes.offset * width :].reshape(rows, width)
    # no nulls (every written release): no is_null(), whose pyarrow.compute import is 0.2 s of a lookup's start
    nulls = (np.zeros(rows, dtype=bool) if indexes.null_count == 0
             else indexes.is_null().to_numpy(zero_copy_only=False))
    return add_const(from_be_bytes(data), -1), nulls
