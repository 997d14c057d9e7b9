"""A uniform k-bit integer whose top bits are read first and the rest only on demand.

ApproxOrdSample (Balcer-Vadhan Alg 6.20) draws one U uniform on [1, s] per level,
with s = 2^S and S about 66 n bits for PureSparseHistogram at |X| = 2^64: n draws
of S bits are Theta(n^2) bits (about 82 GB at n = 10^5). Almost every comparison
"B_l >= U" is decided by the top 256 bits of U, so the low bits are read only when
a comparison is not decided (probability about 2^-200 per level).

The value has exactly the law of ``rng.bits(k)`` and, under
:class:`dpspark.rng.SeededRandom`, it is the *same* value and consumes the same
stream block: block c is SHAKE-256(seed || c), and a SHAKE digest's prefix is the
prefix of any longer digest, so the top bits come from a short digest of block c
and the full value from a long one. Under :class:`dpspark.rng.SystemRandom` the
top and low bits are two independent draws (same law). Any other source is read
eagerly with one ``rng.bits(k)`` call, so enumerating test sources see one draw.

Strict time: the low bits are drawn only on the (negligible-probability)
fallback path of the caller; this is a timing caveat, never an output change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from dpspark.rng import RandomSource, SeededRandom, SystemRandom


class LazyBits:
    """A k-bit uniform value: ``top`` (its top ``top_bits`` bits) now, ``value()`` on demand."""

    __slots__ = ("k", "top_bits", "top", "_rest", "_value")

    def __init__(self, k: int, top_bits: int, top: int, rest: Callable[[], int] | None, value: int | None = None) -> None:
        self.k = k
        self.top_bits = top_bits
        self.top = top
        self._rest = rest
        self._value = value

    @classmethod
    def from_int(cls, value: int, k: int, top_bits: int) -> LazyBits:
        """Wrap a known k-bit value (tests, and sources that cannot be read lazily)."""
        if not 0 <= value < 1 << k or not 0 < top_bits <= k:
            raise ValueError("need 0 <= value < 2^k and 0 < top_bits <= k")
        return cls(k, top_bits, value >> (k - top_bits), None, value)

    @property
    def materialized(self) -> bool:
        """Whether the full value has been read (tests and benchmarks only)."""
        return self._value is not None

    def value(self) -> int:
        """The full k-bit value (reads the low bits on first call)."""
        if self._value is None:
            assert self._rest is not None
            self._value = self._rest()
            self._rest = None
        return self._value


def _seeded_exact(rng: RandomSource) -> bool:
    # Only the unmodified SeededRandom stream layout is reproduced here (tests pin it
    # against rng.bits); anything else is read eagerly.
    return (
        type(rng) is SeededRandom
        and type(rng)._bytes is SeededRandom._bytes
        and isinstance(getattr(rng, "_seed", None), bytes)
        and isinstance(getattr(rng, "_counter", None), int)
    )


def draw_lazy_bits(rng: RandomSource, k: int, top_bits: int) -> LazyBits:
    """Draw a value with the law of ``rng.bits(k)``; its top ``top_bits`` bits (a multiple of 8) are read now."""
    if top_bits % 8 or not 0 < top_bits <= k:
        raise ValueError("top_bits must be a positive multiple of 8 and at most k")
    if _seeded_exact(rng):
        # Same block, same bits as SeededRandom.bits(k): the value is the top k bits of a
        # ceil(k/8)-byte digest, so its top `top_bits` bits are the first top_bits/8 bytes.
        block = hashlib.shake_256(rng._seed + rng._counter.to_bytes(16, "big"))  # type: ignore[attr-defined]
        rng._counter += 1  # type: ignore[attr-defined]
        top = int.from_bytes(block.digest(top_bits // 8), "big")
        nbytes = (k + 7) >> 3

        def rest() -> int:
            return int.from_bytes(block.digest(nbytes), "big") >> ((nbytes << 3) - k)

        return LazyBits(k, top_bits, top, rest)
    if isinstance(rng, SystemRandom):
        top = rng.bits(top_bits)
        low = k - top_bits
        return LazyBits(k, top_bits, top, lambda: (top << low) | rng.bits(low))
    return LazyBits.from_int(rng.bits(k), k, top_bits)


#: Top bits of each ApproxOrdSample level's U read up front (see binsample_cdf).
LEVEL_TOP_BITS = 256


def draw_level_uniform(rng: RandomSource, s_bits: int) -> LazyBits:
    """U - 1 for one ApproxOrdSample level: the law (and seeded stream use) of ``rng.bits(s_bits)``."""
    if s_bits >= LEVEL_TOP_BITS:
        return draw_lazy_bits(rng, s_bits, LEVEL_TOP_BITS)
    return LazyBits.from_int(rng.bits(s_bits), s_bits, s_bits)
