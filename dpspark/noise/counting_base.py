"""The counting-mechanism interface of Balcer-Vadhan Definition 4.1.

A counting mechanism is a *deterministic* function M : [0, n] x [1, d] -> [0, n]
fed its randomness explicitly, U ~ Unif([1, d]). Everything about its output
distribution is encoded in the integer scaled CDF

    F_{M,c}(z) = |{u in [1, d] : M(c, u) <= z}|,

and M(c, u) = min{z : F_{M,c}(z) >= u} because M is non-decreasing in u.
Probabilities are exact Fractions F/d; no float decides an output.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.noise import bigint
from dpspark.noise.counting_batch import BatchTables, batch_sample
from dpspark.errors import ParameterError, ParameterTypeError
from dpspark.exact import RationalLike, parse_rational
from dpspark.rng import RandomSource


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterTypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


#: Above this n the batched path is not used (its int64 arithmetic needs n + 1 < 2^62).
BATCH_MAX_N = (1 << 62) - 2


class CountingMechanism(ABC):
    """A non-decreasing deterministic M(c, u) with an exact integer scaled CDF."""

    n: int
    d: int
    exp_eps: Fraction
    #: Test hook: E of the batched sampler is max(own error bound, this); raise it to force ties.
    tie_margin: int = 0
    #: Number of batched draws redone exactly after a tie (in memory only: benchmarks read it;
    #: never logged or written to a release).
    batch_ties: int = 0

    @abstractmethod
    def _cdf(self, c: int, z: int) -> Any:
        """F_{M,c}(z) for z in [0, n-1] (unchecked; may return a gmpy2 mpz)."""

    @property
    def rounds(self) -> int:
        """Number of binary-search rounds: exactly ceil(log2(n+1)), whatever c and u are."""
        return self.n.bit_length()  # ceil(log2(n+1)) == bit_length(n) for n >= 1

    def scaled_cdf(self, c: int, z: int) -> int:
        """Return F_{M,c}(z) = #{u in [1,d] : M(c,u) <= z}, for z in [-1, n] (F(-1)=0, F(n)=d)."""
        self._check_c(c)
        _check_int(z, "z")
        if z < -1 or z > self.n:
            raise ValueError(f"z must be in [-1, n] = [-1, {self.n}], got {z}")
        if z == -1:
            return 0
        if z == self.n:
            return self.d
        return int(self._cdf(c, z))

    def sample(self, c: int, u: int) -> int:
        """Return M(c, u) = min{z in [0,n] : F_{M,c}(z) >= u}, for u in [1, d].

        Strict time: always exactly ``self.rounds`` CDF evaluations (a fixed
        power-of-two descent over [0, 2^rounds - 1]; positions past n-1 count as
        F = d without shortening the loop).
        """
        self._check_c(c)
        _check_int(u, "u")
        if not 1 <= u <= self.d:
            raise ValueError(f"u must be in [1, d] (d has {self.d.bit_length()} bits), got a value outside")
        return self._search(c, u)

    def _search(self, c: int, u: Any) -> int:
        pos = -1  # invariant: F(pos) < u, with F(-1) = 0
        last = self.n - 1
        step = 1 << (self.rounds - 1) if self.rounds else 0
        cdf = self._cdf
        while step:
            probe = pos + step
            # Beyond n-1 the CDF is d >= u; evaluate a real point anyway to keep the work uniform.
            value = cdf(c, probe if probe <= last else last)
            if probe <= last and value < u:
                pos = probe
            step >>= 1
        return pos + 1

    def draw(self, c: int, rng: RandomSource) -> int:
        """Sample M(c, U) with U drawn from ``rng`` (uniform on [1, d])."""
        self._check_c(c)
        fast = getattr(rng, "uniform_mpz", None) if bigint.active() == "gmpy2" else None
        return self._search(c, fast(self.d) if fast is not None else rng.uniform(self.d))

    def draw_many(self, counts: Sequence[int] | np.ndarray, rng: RandomSource) -> np.ndarray:
        """M(c_i, U_i) for every count, independent U_i; int64 numpy array in the order given.

        Same law as ``[draw(c, rng) for c in counts]``; under
        :class:`dpspark.rng.SeededRandom` the same stream blocks and the same
        outputs. Sources with ``lazy_uniforms`` get the batched sampler of
        :mod:`dpspark.noise.counting_batch` (top 63 bits of each U decide almost
        every draw; see its timing caveat); others get the scalar loop. Needs n < 2^62.
        """
        cs = self._check_counts(counts)
        lazy_uniforms = getattr(rng, "lazy_uniforms", None)
        tables = self._batch_tables() if lazy_uniforms is not None and self.n <= BATCH_MAX_N else None
        if tables is None:
            return np.array([self.draw(int(c), rng) for c in cs], dtype=np.int64)
        lazy = lazy_uniforms(self.d, len(cs))
        out, tie = batch_sample(cs, lazy.top, self.n, tables, max(tables.error, self.tie_margin))
        for i in np.flatnonzero(tie):  # rare (see dpspark.noise.counting_batch) unless tie_margin forces it
            self.batch_ties += 1
            out[i] = self._search(int(cs[i]), lazy.exact(int(i)))
        return out

    def _batch_tables(self) -> BatchTables | None:
        """Tables of :func:`dpspark.noise.counting_batch.batch_sample`, or None for the scalar loop."""
        return None

    def _check_counts(self, counts: Sequence[int] | np.ndarray) -> np.ndarray:
        arr = np.asarray(counts)
        if arr.ndim != 1:
            raise ValueError(f"counts must be a 1-D array or list, got shape {arr.shape}")
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"counts must be integers, got dtype {arr.dtype}")
        if int(arr.min()) < 0 or int(arr.max()) > self.n:
            raise ValueError(f"every count must lie in [0, n] = [0, {self.n}]")
        return arr.astype(np.int64)

    def pmf(self, c: int) -> list[Fraction]:
        """Exact pmf of M(c, U) over [0, n], from scaled-CDF differences (small n only)."""
        self._check_c(c)
        if self.n > 100_000:
            raise ValueError(f"pmf() enumerates [0, n]; n = {self.n} is too large (limit 100000)")
        cdf = [self.scaled_cdf(c, z) for z in range(-1, self.n + 1)]
        return [Fraction(cdf[i + 1] - cdf[i], self.d) for i in range(self.n + 1)]

    def tail_count(self, c: int, a: int) -> int:
        """d * Pr[|M(c,U) - c| > a], an exact integer."""
        lo = c - a - 1
        hi = c + a
        below = self.scaled_cdf(c, lo) if lo >= 0 else 0
        above = self.d - self.scaled_cdf(c, hi) if hi < self.n else 0
        return below + above

    def _worst_tail_count(self, a: int) -> int:
        n = self.n
        if n <= 64:
            cs: range | list[int] = range(n + 1)
        else:
            # For clamped symmetric noise mixed with Unif([0,n]),
            #   Pr[|M(c,U)-c| > a] = gamma/(n+1) * (max(0, c-a) + max(0, n-c-a))
            #                      + (1-gamma) * (Pr[Z < -a] [c > a] + Pr[Z > a] [c < n-a]),
            # a convex piecewise-linear part plus a step function with steps at
            # a, a+1, n-a-1, n-a; so the max over c is at 0, n or a step edge.
            # A neighbourhood of each breakpoint is included for good measure.
            cs = sorted(
                c for c in {0, 1, 2, a - 1, a, a + 1, a + 2, n - a - 2, n - a - 1, n - a, n - a + 1, n - 2, n - 1, n}
                if 0 <= c <= n
            )
        return max(self.tail_count(c, a) for c in cs)

    def accuracy(self, beta: RationalLike) -> int:
        """Exact smallest a in [0, n] with max_c Pr[|M(c,U) - c| > a] <= beta.

        Computed from the scaled CDF with integers only. For large n the max over
        c uses the mechanisms' structure (see ``_worst_tail_count``): the worst c
        lies in {0, a, a+1, n-a-1, n-a, n}; tests compare against a scan of every c.
        """
        b = parse_rational(beta, "beta")
        if not 0 < b < 1:
            raise ParameterError(f"beta must be in (0, 1), got {b}")
        lo, hi = 0, self.n  # a = n always works: the tail is then empty
        while lo < hi:
            mid = (lo + hi) // 2
            if self._worst_tail_count(mid) * b.denominator <= b.numerator * self.d:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _check_c(self, c: int) -> None:
        _check_int(c, "c")
        if not 0 <= c <= self.n:
            raise ParameterError(f"c must be a count in [0, n] = [0, {self.n}]")

    @property
    def epsilon_tilde(self) -> float:
        """ln(exp_eps) as a float, for reports only."""
        import math

        return math.log(self.exp_eps.numerator) - math.log(self.exp_eps.denominator)  # report

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready parameters for a release manifest."""


def require_n(n: object) -> int:
    """Validate the public count bound n >= 1."""
    _check_int(n, "n")
    assert isinstance(n, int)
    if n < 1:
        raise ParameterError(f"n (the public bound on counts) must be an integer >= 1, got {n}")
    return n
