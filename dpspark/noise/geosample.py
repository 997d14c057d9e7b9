"""GeoSample (Balcer-Vadhan Algorithm 4.8, Theorem 4.7, Lemma 4.9).

With e^{eps~} = p/q (p > q >= 1), d = (p+q) * p^(n-1) and the integer scaled CDF

    F(z) = q^(c-z) * p^(n-c+z)               for z < c,
    F(z) = d - q^(z-c+1) * p^(n-1-z+c)       for c <= z < n,
    F(n) = d,

GeoSample(c, U) = min{z : F(z) >= U} is distributed exactly as the two-sided
geometric mechanism at eps~ clamped to [0, n] (Theorem 4.7(i); the paper's
(x, y, 2x+1) is (q, p, p+q), docs/balcer-vadhan-notes.md §G, checked exactly in the tests).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.noise import bigint
from dpspark.errors import ParameterError
from dpspark.noise.counting_base import CountingMechanism, require_n
from dpspark.noise.counting_batch import BatchTables
from dpspark.noise.exp_eps import resolve_exp_eps
from dpspark.exact import RationalLike


class GeoSample(CountingMechanism):
    """GeoSample_{n, eps}: the clamped geometric mechanism on a finite computer.

    Privacy (Theorem 4.7(i)): for counts c, c' with |c - c'| = 1 and every z,
    Pr[M(c,U) = z] <= e^{eps~} Pr[M(c',U) = z] with e^{eps~} = ``exp_eps`` = p/q
    exactly, i.e. eps~-DP for counting queries. With ``epsilon`` given (paper
    convention) eps~ <= epsilon/2; with ``exp_eps`` given, eps~ = ln(exp_eps).
    Randomness: one U uniform on [1, d] (``draw`` adds the rng's multiplicative
    bias bound, see :func:`dpspark.rng.bias_epsilon`).
    Time: exactly ceil(log2(n+1)) scaled-CDF evaluations on O(n log p)-bit ints;
    :meth:`draw_many` gives the same outputs from 63-bit prefixes of each U
    (dpspark.noise.counting_batch; a rare tie redoes one count exactly).
    """

    name = "GeoSample"

    def __init__(
        self,
        *,
        n: int,
        epsilon: RationalLike | None = None,
        exp_eps: Fraction | None = None,
        rule: str = "pq",
    ) -> None:
        self.n = require_n(n)
        self.epsilon, self.exp_eps, self.rule = resolve_exp_eps(epsilon, exp_eps, rule)
        self.p = self.exp_eps.numerator
        self.q = self.exp_eps.denominator
        self._p = bigint.big(self.p)
        self._q = bigint.big(self.q)
        # q is a power of two under both built-in rules: multiply by q^k with a shift.
        self._qshift = self.q.bit_length() - 1 if self.q & (self.q - 1) == 0 else None
        if (self.n - 1) * self.p.bit_length() > bigint.MAX_D_BITS:  # before the power: GMP would abort
            raise ParameterError(
                f"GeoSample's range d = (p + q) p^(n-1) would have about {(self.n - 1) * self.p.bit_length()} bits, "
                f"above the limit of {bigint.MAX_D_BITS} bits (n = {self.n}, e^eps~ = p/q with p of "
                f"{self.p.bit_length()} bits): lower max_units or epsilon")
        self._d = (self._p + self._q) * self._p ** (self.n - 1)
        self.d = int(self._d)

    def _qpow_times(self, k: int, v: Any) -> Any:
        if self._qshift is not None:
            return v << (k * self._qshift)
        return v * self._q**k

    def _cdf(self, c: int, z: int) -> Any:
        if z < c:
            return self._qpow_times(c - z, self._p ** (self.n - c + z))
        return self._d - self._qpow_times(z - c + 1, self._p ** (self.n - 1 - z + c))

    def _batch_tables(self) -> BatchTables | None:
        """Tables of the batched sampler (dpspark.noise.counting_batch): C(z) = F(z)/d depends on j = z - c only.

        C = q^k p / ((p+q) p^k) at j = -k < 0 and 1 - q^(j+1) / ((p+q) p^j) at
        j >= 0: exact floors of C 2^63, tabulated from j = 0 outwards until
        they reach 0 (below) or 2^63 - 1 (above), where they stay (C is
        monotone in j and 0 < C < 1 on [-n, n-1]), or to j = -n or n - 1. A first
        false j beyond the window then gives z <= 0 or z >= n, which the clamp
        decides. Loop bounds: about 63 / log2(p/q) per side, and n. E = 1.
        """
        cached: BatchTables | None = getattr(self, "_batch", None)
        if cached is None:
            p, q, n = self.p, self.q, self.n
            one = 1 << 63
            below: list[int] = []
            num, den = p, (p + q)  # C(-k) = num q^k / (den p^k)
            for k in range(1, n + 1):  # public bound; stops early at 0
                num *= q
                den *= p
                below.append((num << 63) // den)
                if below[-1] == 0:
                    break
            above: list[int] = []
            num, den = q, (p + q)  # 1 - C(j) = num / den = q^(j+1) / ((p+q) p^j)
            for j in range(n):  # public bound; stops early at 2^63 - 1
                if j:
                    num *= q
                    den *= p
                above.append(one - (-((-num << 63) // den)))
                if above[-1] == one - 1:
                    break
            wtab = np.array(below[::-1] + above, dtype=np.int64)
            cached = self._batch = BatchTables(wtab, -len(below), 1, None)
        return cached

    def describe(self) -> dict[str, Any]:
        """Exact parameters for a manifest."""
        return {
            "mechanism": self.name,
            "n": self.n,
            "epsilon": None if self.epsilon is None else str(self.epsilon),
            "rule": self.rule,
            "exp_eps": {"num": self.p, "den": self.q},
            "d_bits": self.d.bit_length(),
        }
