"""The one source of randomness in dpspark.

Every random draw that can influence a released value goes through a
:class:`RandomSource`. Production code uses :class:`SystemRandom`, which reads
``os.urandom`` (the kernel CSPRNG). Tests inject :class:`SeededRandom`, a
deterministic SHAKE-256 counter-mode stream; it is never selected by a config
file or an environment variable, only by code that constructs it explicitly.

Strict time
-----------
No method loops on a random outcome. ``uniform(N)`` for N not a power of two
uses the lambda-extra-bits reduction: draw X uniform on [0, 2^L) with
``L = bitlen(N) + lam`` and return the *multiply-shift* reduction
``floor(X * N / 2^L) + 1``. Every value in [1, N] then has probability within a
factor (1 +- 2^-lam) of 1/N (proof in :func:`multiply_shift_preimages`). This
is a *multiplicative* error, so it is accounted in epsilon, never in delta (docs/balcer-vadhan-notes.md §E12): a
mechanism that feeds one such draw to a count costs at most
``ln((1+2^-lam)/(1-2^-lam)) <= 2^(2-lam)`` extra epsilon per draw that differs
in distribution between neighbours. :func:`bias_epsilon` returns that exact
rational bound for k draws. Powers of two are drawn exactly, with no bias.

Why multiply-shift rather than ``X mod N`` (same bound): a *prefix* of X's
bits fixes the top bits of the result, since X in [P 2^(L-k), (P+1) 2^(L-k))
gives X/2^L in [P/2^k, (P+1)/2^k). :meth:`_ByteSource.lazy_uniforms` exposes
that: a batch of draws whose top 63 bits are read at once and whose full
L-bit X is read only on request. Batched samplers
(``CountingMechanism.draw_many``) decide almost every comparison from the
prefix. :func:`uniform_many` draws a batch of ``uniform`` values (fixed or
descending bounds) in one call: the same law, and under :class:`SeededRandom`
the same stream blocks and values, as one call per draw.
"""

from __future__ import annotations

import hashlib
import os

import gmpy2
import numpy as np
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

#: Default number of extra bits for the multiply-shift reduction.
DEFAULT_LAMBDA = 128

#: Bits of X known at once in a :class:`LazyUniforms` batch (fits a non-negative int64).
PREFIX_BITS = 63


def multiply_shift_preimages(n: int, L: int, v: int) -> int:
    """#{X in [0, 2^L) : floor(X n / 2^L) = v}, for v in [0, n): either floor(2^L/n) or ceil(2^L/n).

    Proof of the bias bound. floor(X n / 2^L) = v iff v 2^L <= X n < (v+1) 2^L
    iff ceil(v a) <= X < ceil((v+1) a) with a = 2^L / n, so the count is
    ceil(v a + a) - ceil(v a), which lies in {floor(a), ceil(a)} (for every real
    y, ceil(y + a) - ceil(y) is floor(a) or floor(a) + 1, and it is an integer
    within distance < 1 of a). Hence Pr[v] = count / 2^L satisfies
    |Pr[v] n - 1| = |count - a| n / 2^L < n / 2^L. With L = bitlen(n) + lam and
    n < 2^bitlen(n), n / 2^L < 2^-lam: every value has probability within a
    factor (1 +- 2^-lam) of 1/n, the same bound as X mod n with L bits
    (tests/unit/core/test_rng.py checks it by enumerating every X at small sizes).
    """
    return -((-(v + 1) << L) // n) + ((-v << L) // n)


def bias_epsilon(draws: int, lam: int = DEFAULT_LAMBDA) -> Fraction:
    """Exact upper bound on the extra privacy loss of ``draws`` biased draws.

    Each draw of :meth:`RandomSource.uniform` with N not a power of two gives
    probabilities in [(1-a)/N, (1+a)/N] with a = 2^-lam (multiply-shift
    reduction, see :func:`multiply_shift_preimages`), so a likelihood ratio
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
            raise ValueError(f"lam (extra bits for the multiply-shift reduction) must be an int >= 64, got {lam!r}")
        self.lam = lam
        self._last_n: int | None = None
        self._last_mpz = gmpy2.mpz(1)
        #: number of uniform() draws that used the biased multiply-shift reduction
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
        if n.bit_length() > 512:  # GMP's multiplication is far faster than CPython's on big ints
            return int(self.uniform_mpz(n))
        self.biased_draws += 1
        L = n.bit_length() + self.lam
        return ((self.bits(L) * n) >> L) + 1

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
        L = n.bit_length() + self.lam
        return ((gmpy2.mpz(self.bits(L)) * self._last_mpz) >> L) + 1

    def uniform_bits(self, n: int) -> int:
        """L, the number of random bits X that :meth:`uniform` reads for n (log2 n for a power of two)."""
        return n.bit_length() - 1 if n & (n - 1) == 0 else n.bit_length() + self.lam

    def lazy_uniforms(self, n: int, count: int) -> "LazyUniforms":
        """``count`` draws with the law of :meth:`uniform` (n), of which only the top bits are read now.

        Draw i is u_i = floor(X_i n / 2^L) + 1 with X_i uniform on [0, 2^L),
        L = :meth:`uniform_bits` (n). ``top[i] = floor(X_i 2^63 / 2^L)`` is
        available at once; :meth:`LazyUniforms.exact` returns u_i on request.
        Under :class:`SeededRandom` the draws use the same stream blocks, in
        the same order, as ``count`` calls of :meth:`uniform`, and give the same
        values; other sources only guarantee the same law.
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be an int >= 0, got {count!r}")
        if n & (n - 1):
            self.biased_draws += count
        L = self.uniform_bits(n)
        if L == 0:  # n = 1: uniform() reads no bits at all
            return LazyUniforms(n, 0, np.zeros(count, dtype=np.int64), lambda i: 0)
        return self._lazy(n, L, count)

    def _lazy(self, n: int, L: int, count: int) -> "LazyUniforms":  # pragma: no cover - abstract
        raise NotImplementedError

    def uniform_many(self, n: int, count: int, *, descending: bool = False) -> np.ndarray:
        """``count`` draws u_i - 1 on [0, n_i) as a uint64 array, with n_i = n (or n - i if ``descending``).

        Draw i has the law of :meth:`uniform` (n_i) minus one: the same construction
        (``bits(k) + 1`` for a power of two, else the multiply-shift of ``bits(L)``) on
        the same number of bits, and the same ``biased_draws`` count. Under
        :class:`SeededRandom` draw i reads the stream block the i-th ``uniform`` call
        would read, so the values equal those calls' values minus one; under
        :class:`SystemRandom` the bytes are read in one request (the same law, since
        every byte is fresh and uniform). Needs n <= 2^64 (the values fit uint64); the
        loop runs ``count`` times (public) with no branch on a drawn value.
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > 1 << 64:
            raise ValueError(f"n must be an int in [1, 2^64], got {n!r}")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0 or (descending and count > n):
            raise ValueError(f"count must be an int in [0, {n if descending else 'inf'}], got {count!r}")
        bounds = range(n, n - count, -1) if descending else None
        out = np.empty(count, dtype=np.uint64)
        done = 0
        while done < count:  # runs of one bit length L: at most 65 when descending, else one (public)
            m = bounds[done] if bounds is not None else n
            run = _run_length(m, count - done) if bounds is not None else count
            exact = m & (m - 1) == 0
            if exact:  # only m itself is a power of two in its run
                run = 1 if bounds is not None else run
                out[done : done + run] = self._bits_many(m.bit_length() - 1, run)
            else:
                self.biased_draws += run
                L = m.bit_length() + self.lam
                xs = self._bits_many(L, run)
                if bounds is None:
                    out[done : done + run] = [(x * m) >> L for x in xs]
                else:
                    out[done : done + run] = [(x * (m - i)) >> L for i, x in enumerate(xs)]
            done += run
        return out

    def _bits_many(self, k: int, count: int) -> list[int]:
        """``count`` values of :meth:`bits` (k), in order (subclasses read the stream in bulk)."""
        return [self.bits(k) for _ in range(count)]


class LazyUniforms:
    """A batch of uniform draws on [1, n] whose top bits are known and whose full value is read on request.

    ``top`` (int64 numpy array): floor(X_i 2^63 / 2^L), so X_i / 2^L lies in
    [top_i / 2^63, (top_i + 1) / 2^63). ``exact(i)`` = floor(X_i n / 2^L) + 1.
    """

    def __init__(self, n: int, L: int, top: np.ndarray, full: Any) -> None:
        self.n, self.L, self.top = n, L, top
        self._full = full  # i -> X_i (the whole L-bit integer)
        self._n = gmpy2.mpz(n)

    def __len__(self) -> int:
        return len(self.top)

    def exact(self, i: int) -> "gmpy2.mpz":
        """u_i = floor(X_i n / 2^L) + 1 exactly (reads the rest of X_i's bits the first time)."""
        return ((gmpy2.mpz(self._full(i)) * self._n) >> self.L) + 1


def _run_length(m: int, most: int) -> int:
    """How many of m, m - 1, ... (at most ``most``) share m's bit length and are not a power of two (m is not)."""
    floor = 1 << (m.bit_length() - 1)  # the power of two below: its own (exact) draw starts the next run
    return min(most, m - floor)


def uniform_many(rng: RandomSource, n: int, count: int, *, descending: bool = False) -> np.ndarray:
    """``rng.uniform_many`` when the source has it, else ``count`` calls of ``rng.uniform`` (test sources).

    Either way draw i is ``rng.uniform(n_i) - 1`` in law (n_i = n, or n - i if ``descending``), as uint64.
    """
    batch = getattr(rng, "uniform_many", None)
    if batch is not None:
        return batch(n, count, descending=descending)
    if not isinstance(n, int) or isinstance(n, bool) or n > 1 << 64:
        raise ValueError(f"n must be an int in [1, 2^64], got {n!r}")
    return np.array([rng.uniform(n - i if descending else n) - 1 for i in range(count)], dtype=np.uint64)


def _top_of(x: int, L: int) -> int:
    """floor(x 2^63 / 2^L) for an L-bit x."""
    return x >> (L - PREFIX_BITS) if L >= PREFIX_BITS else x << (PREFIX_BITS - L)


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

    def _bits_many(self, k: int, count: int) -> list[int]:
        # One read for the whole batch: every byte is fresh, so each k-bit value is uniform and independent.
        if k == 0:
            return [0] * count
        nbytes = (k + 7) >> 3
        shift = (nbytes << 3) - k
        data = self._bytes(nbytes * count) if count else b""
        if nbytes == 8:
            return (np.frombuffer(data, dtype=">u8") >> np.uint64(shift)).tolist()
        return [int.from_bytes(data[i : i + nbytes], "big") >> shift for i in range(0, nbytes * count, nbytes)]

    def _lazy(self, n: int, L: int, count: int) -> LazyUniforms:
        # Same law, different byte order than ``uniform``: the 64-bit prefixes of
        # all draws come first, and X_i's remaining L - 64 bits are fresh bytes
        # read only if exact(i) is called (independent of the prefix, so X_i is
        # uniform on [0, 2^L) either way).
        if count == 0:
            return LazyUniforms(n, L, np.zeros(0, dtype=np.int64), lambda i: 0)
        words = np.frombuffer(self._bytes(8 * count), dtype=">u8").astype(np.uint64)
        if L <= 64:
            xs = words >> np.uint64(64 - L)
            top = (xs << np.uint64(PREFIX_BITS - L)) if L <= PREFIX_BITS else (xs >> np.uint64(L - PREFIX_BITS))
            return LazyUniforms(n, L, top.astype(np.int64), lambda i: int(xs[i]))
        rest: dict[int, int] = {}

        def full(i: int) -> int:
            if i not in rest:
                rest[i] = self.bits(L - 64)
            return (int(words[i]) << (L - 64)) | rest[i]

        return LazyUniforms(n, L, (words >> np.uint64(1)).astype(np.int64), full)


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

    def _bits_many(self, k: int, count: int) -> list[int]:
        # Block i of the batch is the block the i-th bits(k) call would read, the same digest length.
        if k == 0:
            return [0] * count
        first = self._counter
        self._counter += count
        nbytes = (k + 7) >> 3
        shift = (nbytes << 3) - k
        seed, shake, from_bytes = self._seed, hashlib.shake_256, int.from_bytes
        return [
            from_bytes(shake(seed + c.to_bytes(16, "big")).digest(nbytes), "big") >> shift
            for c in range(first, first + count)
        ]

    def _lazy(self, n: int, L: int, count: int) -> LazyUniforms:
        # Block i of the batch is the block the i-th uniform(n) call would read;
        # SHAKE's output for 8 bytes is a prefix of its output for more, so the
        # top bits come from an 8-byte digest and X_i from a re-squeeze of the
        # same block when asked for.
        first = self._counter
        self._counter += count
        nbytes = (L + 7) >> 3
        shift = 8 * nbytes - L
        seed = self._seed

        def full(i: int) -> int:
            block = hashlib.shake_256(seed + (first + i).to_bytes(16, "big"))
            return int.from_bytes(block.digest(nbytes), "big") >> shift

        if nbytes <= 8:
            top = [_top_of(full(i), L) for i in range(count)]
        else:
            top = [
                int.from_bytes(hashlib.shake_256(seed + (first + i).to_bytes(16, "big")).digest(8), "big") >> 1
                for i in range(count)
            ]
        return LazyUniforms(n, L, np.array(top, dtype=np.int64), full)


def default_source() -> RandomSource:
    """The production source. There is deliberately no switch to a seeded one."""
    return SystemRandom()
