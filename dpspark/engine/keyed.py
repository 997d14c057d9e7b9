"""Pure-Python pieces both backends share: the keyed 64-bit mix and whether keys keep distinct indexes.

The Spark stage applies :func:`keyed_mix` in ``mapInArrow`` to Spark's ``xxhash64``; the Arrow engine applies
it to the same hash computed by :mod:`dpspark.engine.xxhash64`. Nothing here imports pyspark or pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dpspark.universe import Universe


def mix64(x: np.ndarray, k: np.uint64) -> np.ndarray:
    """splitmix64-style keyed finaliser on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x ^ k
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def key_words(secret: bytes) -> tuple[np.uint64, np.uint64]:
    """The two 64-bit words of a 16-byte contribution-bounding key."""
    if len(secret) != 16:
        raise ValueError("the contribution-bounding key must be 16 bytes")
    return np.uint64(int.from_bytes(secret[:8], "big")), np.uint64(int.from_bytes(secret[8:], "big"))


def keyed_mix(raw: np.ndarray, secret: bytes) -> np.ndarray:
    """The keyed splitmix of a uint64 hash under ``secret`` (two rounds, one per key word), as uint64."""
    k1, k2 = key_words(secret)
    return mix64(mix64(raw.astype(np.uint64, copy=False), k1), k2)


#: scalar universe kinds whose Spark encoding is injective on what ``groupBy`` tells apart
_GROUP_INJECTIVE_KINDS = frozenset({"int_range", "bytes", "categorical"})


def distinct_keys_keep_indexes(universe: "Universe", text_ints: bool = False) -> bool:
    """True if the encoder maps distinct group keys to distinct indexes (so no re-aggregation by index).

    int_range (integral cast to long), bytes and categorical lookups are injective
    on what ``groupBy`` tells apart; tuples of those too. Not hashed (collisions)
    and, to stay on the safe side, not string: ``encode(s, 'UTF-8')`` replaces
    malformed byte sequences, so two distinct invalid strings could share an index.
    ``text_ints``: an integer key is read from a string column ("5" and "05" are one index): not injective.
    """
    if text_ints:
        return False
    return all(c.kind in _GROUP_INJECTIVE_KINDS for c in universe.parts)
