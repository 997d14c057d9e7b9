"""The one source of randomness in dpspark.

Every random draw that can influence a released value goes through a
:class:`RandomSource`. Production code uses :class:`SystemRandom`, which reads
``os.urandom`` (the kernel CSPRNG). Tests inject :class:`SeededRandom`, a
deterministic SHAKE-256 counter-mode stream; it is never selected by a config
file or an environment variable, only by code that constructs it explicitly.

Strict time
-----------
No method loops on a random outcome. ``uniform(N)`` for N not a power of two
uses the lambda-extra-bits reduction (docs/balcer-vadhan-notes.md §E12): draw
``bitlen(N) + lam`` bits and reduce mod N. Every value in [1, N] then has
probability within a factor (1 +- 2^-lam) of 1/N. This is a *multiplicative*
error, so it is accounted in epsilon, never in delta (same section): a
mechanism that feeds one such draw to a count costs at most
``ln((1+2^-lam)/(1-2^-lam)) <= 2^(2-lam)`` extra epsilon per draw that differs
in distribution between neighbours. :func:`bias_epsilon` returns that exact
rational bound for k draws. Powers of two are drawn exactly, with no bias.
"""

from __future__ import annotations

import hashlib
import os

import gmpy2
from fractions import Fraction
from typing import Protocol, runtime_checkable

#: Default number of extra bits for the mod-N reduction.
DEFAULT_LAMBDA = 128


def bias_epsilon(draws: int, lam: int = DEFAULT_LAMBDA) -> Fraction:
    """Exact upper bound on the extra privacy loss of ``draws`` biased draws.

    Each draw of :meth:`RandomSource.uniform` with N not a power of two gives
    probabilities in [(1-a)/N, (1+a)/N] with a = 2^-lam, so a likelihood ratio
    between two output distributions moves by at most (1+a)/(1-a), and
    ln((1+a)/(1-a)) <= 2a/(1-a) <= 4a = 2^(2-lam) for lam >= 1.
    """
    if draws < 0:
        raise ValueError(f"draws must be >= 0, got {draws}")
    if lam < 1:
        raise ValueError(f"lam must be >= 1, got {lam}")
    return Fraction(draws * 4, 1 << lam)


@runtime_checkable
class RandomSource(Protocol):
    """Interface of every randomness source: uniform bits and uniform integers."""

    name: str
    lam: int

    def bits(self, k: int) -> int:
        """Return a uniform integer in [0, 2^k)."""
        ...

    def uniform(self, n: int) -> int:
        """Return an (almost) uniform integer in [1, n]; exact if n is a power of two."""
        ...


class _ByteSource:
    """Shared logic: turn a byte stream into bits and bounded integers."""

    name = "abstract"

    def __init__(self, lam: int = DEFAULT_LAMBDA) -> None:
        if not isinstance(lam, int) or lam < 64:
            raise ValueError(f"lam (extra bits for mod-N reduction) must be an int >= 64, got {lam!r}")
        self.lam = lam
        self._last_n: int | None = None
        self._last_mpz = gmpy2.mpz(1)
        #: number of uniform() draws that used the biased mod-N reduction
        self.biased_draws = 0

    def _bytes(self, k: int) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def bits(self, k: int) -> int:
        """Return a uniform integer in [0, 2^k)."""
        if not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be a non-negative int, got {k!r}")
        if k == 0:
            return 0
        nbytes = (k + 7) >> 3
        v = int.from_bytes(self._bytes(nbytes), "big")
        return v >> ((nbytes << 3) - k)

    def uniform(self, n: int) -> int:
        """Return a uniform integer in [1, n] (multiplicative error <= 2^-lam if n is not a power of two)."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        if n & (n - 1) == 0:
            return self.bits(n.bit_length() - 1) + 1
        if n.bit_length() > 512:  # GMP's division is far faster than CPython's on big ints
            return int(self.uniform_mpz(n))
        self.biased_draws += 1
        return self.bits(n.bit_length() + self.lam) % n + 1

    def uniform_mpz(self, n: int) -> "gmpy2.mpz":
        """Same distribution (and bias accounting) as :meth:`uniform`, returned as a gmpy2 mpz.

        Hot paths on multi-kilobit n use this to avoid converting back and forth.
        """
        if n is not self._last_n:
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"n must be an int >= 1, got {n!r}")
            self._last_n, self._last_mpz = n, gmpy2.mpz(n)
        if n & (n - 1) == 0:
            return gmpy2.mpz(self.bits(n.bit_length() - 1)) + 1
        self.biased_draws += 1
        return gmpy2.f_mod(gmpy2.mpz(self.bits(n.bit_length() + self.lam)), self._last_mpz) + 1


class SystemRandom(_ByteSource):
    """Production randomness: the operating system's CSPRNG (``os.urandom``).

    Bytes are read from ``os.urandom`` in blocks of ``buffer_bytes`` and served
    in order, each byte at most once (a getrandom call per small draw costs
    more than the draw). The buffer is dropped if the process forks, so a
    parent and a child never share random bytes.
    """

    name = "os.urandom"

    def __init__(self, lam: int = DEFAULT_LAMBDA, buffer_bytes: int = 1 << 16) -> None:
        super().__init__(lam)
        self._block = buffer_bytes
        self._buf = b""
        self._pos = 0
        self._pid = os.getpid()

    def _bytes(self, k: int) -> bytes:
        if self._pid != os.getpid():  # forked: never reuse the parent's bytes
            self._buf, self._pos, self._pid = b"", 0, os.getpid()
        if k > self._block:
            return os.urandom(k)
        if self._pos + k > len(self._buf):
            self._buf, self._pos = os.urandom(self._block), 0
        out = self._buf[self._pos : self._pos + k]
        self._pos += k
        return out


class SeededRandom(_ByteSource):
    """Deterministic SHAKE-256 counter-mode stream, for tests only.

    Block i of the stream is SHAKE-256(seed || i) truncated to the request.
    Never use it for a real release: anyone who knows the seed knows the noise.
    """

    name = "seeded-shake256 (TEST ONLY)"

    def __init__(self, seed: bytes | str | int, lam: int = DEFAULT_LAMBDA) -> None:
        super().__init__(lam)
        if isinstance(seed, int):
            seed = seed.to_bytes((seed.bit_length() + 8) // 8, "big", signed=True)
        elif isinstance(seed, str):
            seed = seed.encode()
        if not isinstance(seed, bytes):
            raise TypeError(f"seed must be bytes, str or int, got {type(seed).__name__}")
        self._seed = hashlib.sha256(b"dpspark-seeded-rng\x00" + seed).digest()
        self._counter = 0

    def _bytes(self, k: int) -> bytes:
        h = hashlib.shake_256(self._seed + self._counter.to_bytes(16, "big"))
        self._counter += 1
        return h.digest(k)


def default_source() -> RandomSource:
    """The production source. There is deliberately no switch to a seeded one."""
    return SystemRandom()
