"""Spark SQL's ``xxhash64`` in vectorized numpy (uint64 wrapping arithmetic; no JIT compile).

The Arrow engine must pick exactly the same keys per unit as the Spark engine, and Spark computes the
pick from ``F.xxhash64(unit, index)``: XXH64 with seed 42, chained over the columns (each column's hash
is the next column's seed; a NULL column leaves the hash unchanged). Per Spark type:

* ByteType, ShortType, IntegerType: ``hashInt`` of the sign-extended 32-bit value;
* LongType: ``hashLong`` of the 64-bit value;
* StringType (UTF-8 binary collation) and BinaryType: ``hashUnsafeBytes`` over the bytes.

These are the XXH64 algorithm of Collet's reference (little-endian word loads) on the 4 or 8
little-endian bytes of the value, or on the raw bytes. Other types are refused by the callers.

Variable-length inputs are hashed with one vectorized step per 8-byte word position: rows are ordered by
length so that the rows still active at a step are a prefix, and each step touches only those.
"""

from __future__ import annotations

import numpy as np

SPARK_SEED = 42

_U64 = np.uint64
P1 = _U64(0x9E3779B185EBCA87)
P2 = _U64(0xC2B2AE3D27D4EB4F)
P3 = _U64(0x165667B19E3779F9)
P4 = _U64(0x85EBCA77C2B2AE63)
P5 = _U64(0x27D4EB2F165667C5)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U64(33))
    h = h * P2
    h = h ^ (h >> _U64(29))
    h = h * P3
    return h ^ (h >> _U64(32))


def _seeds(seed: "int | np.ndarray", n: int) -> np.ndarray:
    if isinstance(seed, np.ndarray):
        return seed.astype(np.int64, copy=False).view(np.uint64) if seed.dtype != np.uint64 else seed
    return np.full(n, seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)


def hash_long(values: np.ndarray, seed: "int | np.ndarray" = SPARK_SEED) -> np.ndarray:
    """Spark ``XXH64.hashLong`` of int64 values (uint64 result; view as int64 for Spark's signed long)."""
    v = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        h = _seeds(seed, len(v)) + P5 + _U64(8)
        h = h ^ (_rotl(v * P2, 31) * P1)
        h = _rotl(h, 27) * P1 + P4
        return _fmix(h)


def hash_int(values: np.ndarray, seed: "int | np.ndarray" = SPARK_SEED) -> np.ndarray:
    """Spark ``XXH64.hashInt`` of 32-bit (or narrower, sign-extended) integer values."""
    v = np.asarray(values).astype(np.int32).view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = _seeds(seed, len(v)) + P5 + _U64(4)
        h = h ^ (v * P1)
        h = _rotl(h, 23) * P2 + P3
        return _fmix(h)


def _gather_le(data: np.ndarray, pos: np.ndarray, nbytes: int) -> np.ndarray:
    """Little-endian words of ``nbytes`` bytes starting at each position (``data`` is padded)."""
    w = data[pos].astype(np.uint64)
    for i in range(1, nbytes):
        w |= data[pos + i].astype(np.uint64) << _U64(8 * i)
    return w


def hash_bytes(offsets: np.ndarray, data: np.ndarray, seed: "int | np.ndarray" = SPARK_SEED) -> np.ndarray:
    """Spark ``XXH64.hashUnsafeBytes`` of each value of a variable-length column.

    ``offsets`` has n + 1 entries (Arrow layout: value r is ``data[offsets[r]:offsets[r + 1]]``);
    ``data`` is the uint8 value buffer.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    seeds = _seeds(seed, n).copy()
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    data = np.concatenate([np.asarray(data, dtype=np.uint8), np.zeros(8, dtype=np.uint8)])  # loads never run off
    lengths = offsets[1:] - offsets[:-1]
    order = np.argsort(-lengths, kind="stable")  # longest first: the rows active at any step are a prefix
    pos = offsets[:-1][order].copy()
    length = lengths[order]
    end = pos + length
    seed_o = seeds[order]
    h = np.empty(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        big = int(np.count_nonzero(length >= 32))
        if big:
            s = seed_o[:big]
            v1, v2, v3, v4 = s + P1 + P2, s + P2, s.copy(), s - P1
            stripes = length[:big] // 32
            for j in range(int(stripes[0])):
                m = int(np.count_nonzero(stripes > j))
                p = pos[:m]
                for v, off in ((v1, 0), (v2, 8), (v3, 16), (v4, 24)):
                    v[:m] = _rotl(v[:m] + _gather_le(data, p + off, 8) * P2, 31) * P1
                pos[:m] += 32
            acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for v in (v1, v2, v3, v4):
                acc = (acc ^ (_rotl(v * P2, 31) * P1)) * P1 + P4
            h[:big] = acc
        h[big:] = seed_o[big:] + P5
        h += length.astype(np.uint64)
        # remaining 8-byte words: at most 3 after the stripes, else up to 3 for short values
        for _ in range(4):
            act = np.nonzero(end - pos >= 8)[0]
            if len(act) == 0:
                break
            k1 = _gather_le(data, pos[act], 8)
            x = h[act] ^ (_rotl(k1 * P2, 31) * P1)
            h[act] = _rotl(x, 27) * P1 + P4
            pos[act] += 8
        act = np.nonzero(end - pos >= 4)[0]
        if len(act):
            x = h[act] ^ (_gather_le(data, pos[act], 4) * P1)
            h[act] = _rotl(x, 23) * P2 + P3
            pos[act] += 4
        for _ in range(3):
            act = np.nonzero(end - pos >= 1)[0]
            if len(act) == 0:
                break
            x = h[act] ^ (data[pos[act]].astype(np.uint64) * P5)
            h[act] = _rotl(x, 11) * P1
            pos[act] += 1
        h = _fmix(h)
    out = np.empty(n, dtype=np.uint64)
    out[order] = h
    return out


def hash_fixed(matrix: np.ndarray, seed: "int | np.ndarray" = SPARK_SEED) -> np.ndarray:
    """``hash_bytes`` of equal-length values given as an (n, width) uint8 matrix.

    Widths that are a multiple of 8 (the 16- and 32-byte index words) take a direct path: the words are
    read in place and every row runs the same steps.
    """
    matrix = np.ascontiguousarray(matrix, dtype=np.uint8)
    n, width = matrix.shape
    if width % 8 or width == 0:
        return hash_bytes(np.arange(n + 1, dtype=np.int64) * width, matrix.reshape(-1), seed)
    words = matrix.view("<u8").astype(np.uint64, copy=False)  # little-endian loads, as XXH64 reads them
    seeds = _seeds(seed, n)
    nwords = width // 8
    with np.errstate(over="ignore"):
        j = 0
        if width >= 32:
            v1, v2, v3, v4 = seeds + P1 + P2, seeds + P2, seeds.copy(), seeds - P1
            while j + 4 <= nwords:
                v1 = _rotl(v1 + words[:, j] * P2, 31) * P1
                v2 = _rotl(v2 + words[:, j + 1] * P2, 31) * P1
                v3 = _rotl(v3 + words[:, j + 2] * P2, 31) * P1
                v4 = _rotl(v4 + words[:, j + 3] * P2, 31) * P1
                j += 4
            h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for v in (v1, v2, v3, v4):
                h = (h ^ (_rotl(v * P2, 31) * P1)) * P1 + P4
        else:
            h = seeds + P5
        h = h + _U64(width)
        while j < nwords:
            h = _rotl(h ^ (_rotl(words[:, j] * P2, 31) * P1), 27) * P1 + P4
            j += 1
        return _fmix(h)
