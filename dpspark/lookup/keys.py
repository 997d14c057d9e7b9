"""Key encoding shared by the sparse and compact lookups: keys -> universe index words, never echoing a key.

Keys outside the universe raise :class:`KeyNotInUniverseError`. Its message
gives the key's position and the universe's reason but never the key: lookup
services log errors, and a key can be as sensitive as the data it indexes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dpspark.errors import DPSparkError
from dpspark.universe import OutOfUniverseError, Universe, index_to_bytes

#: what ``counts(keys, invalid=...)`` does with a key outside the universe
INVALID_POLICIES = ("raise", "mask")


class KeyNotInUniverseError(DPSparkError, ValueError):
    """A looked-up key is null, mistyped or not in the release's universe (the key is not echoed)."""


def encode_key(universe: Universe, key: Any) -> int:
    """The 1-based universe index of one key (lists are taken as tuple keys)."""
    try:
        return universe.encode(tuple(key) if isinstance(key, list) else key)
    except OutOfUniverseError as exc:
        raise KeyNotInUniverseError(f"key is not in the release's universe: {exc}") from None


def keys_to_arrow(universe: Universe, keys: Any) -> Any:
    """``keys`` as what ``universe.encode_arrow`` takes, or None when they do not fit Arrow (scalar path)."""
    if isinstance(keys, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return keys
    if universe.is_tuple:
        rows = list(keys)
        k = len(universe.parts)
        if any(not isinstance(r, (tuple, list)) or len(r) != k for r in rows):
            raise KeyNotInUniverseError(f"keys of a {universe.label} must be tuples of {k} values")
        columns = list(zip(*rows)) if rows else [[] for _ in range(k)]
        try:
            return [
                pa.array(list(col), type=None if rows else c.arrow_type())
                for col, c in zip(columns, universe.parts)
            ]
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            return None
    try:
        if isinstance(keys, np.ndarray):
            return pa.array(keys)
        values = list(keys)
        return pa.array(values, type=None if values else universe.arrow_type())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return None


def encode_keys(universe: Universe, arrow_keys: Any) -> pa.Array:
    """Index words (FixedSizeBinary(W), no nulls) of Arrow keys; raises if any key is null or outside."""
    try:
        encoded = universe.encode_arrow(arrow_keys)
    except TypeError as exc:
        raise KeyNotInUniverseError(f"keys have the wrong type for the release's universe: {exc}") from None
    member = encoded.in_universe.fill_null(False).to_numpy(zero_copy_only=False)
    if not member.all():
        bad = np.flatnonzero(~member)
        nulls = int(encoded.in_universe.null_count)
        raise KeyNotInUniverseError(
            f"{len(bad)} of {len(member)} keys are not in the release's {universe.label} "
            f"({nulls} null); first at position {int(bad[0])}"
        )
    index = encoded.index
    return index.combine_chunks() if isinstance(index, pa.ChunkedArray) else index


def check_invalid_policy(invalid: str) -> str:
    """``invalid`` must be "raise" (a bad key raises) or "mask" (a masked array marks bad keys by position)."""
    if invalid not in INVALID_POLICIES:
        raise ValueError(f"invalid must be one of {INVALID_POLICIES}, got {invalid!r}")
    return invalid


def _scalar_words(universe: Universe, keys: list[Any]) -> tuple[pa.Array, np.ndarray]:
    width = universe.index_width
    valid = np.zeros(len(keys), dtype=bool)
    words = []
    for i, key in enumerate(keys):
        try:
            index = encode_key(universe, key)
        except (KeyNotInUniverseError, TypeError, ValueError):
            continue
        valid[i] = True
        words.append(index_to_bytes(index, width))
    return pa.array(words, type=pa.binary(width)), valid


def valid_index_words(universe: Universe, keys: Any) -> tuple[pa.Array, np.ndarray]:
    """(index words of the valid keys in order, boolean validity per key); a bad key never raises here."""
    if not isinstance(keys, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch, np.ndarray)):
        keys = list(keys)  # iterated twice at most (Arrow path, then the scalar fallback)
    try:
        arrow_keys = keys_to_arrow(universe, keys)
    except KeyNotInUniverseError:  # some tuple key has the wrong shape
        arrow_keys = None
    if arrow_keys is not None:
        try:
            encoded = universe.encode_arrow(arrow_keys)
        except TypeError:
            encoded = None
        if encoded is not None:
            valid = encoded.keep_mask()
            index = encoded.index.filter(pa.array(valid))
            index = index.combine_chunks() if isinstance(index, pa.ChunkedArray) else index
            return index, valid
        if isinstance(keys, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
            return pa.array([], type=pa.binary(universe.index_width)), np.zeros(len(keys), dtype=bool)
    return _scalar_words(universe, list(keys))
