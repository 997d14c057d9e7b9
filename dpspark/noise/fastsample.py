"""FastSample (Balcer-Vadhan Algorithm 4.11, Theorem 4.10, Lemma 4.12), tight t* rule.

FastSample mixes a *truncated* geometric with the uniform distribution on
[0, n]: with probability 1 - gamma it releases clamp_[0,n](c + Z_t), where Z_t is
Geo(eps~) with all mass beyond +-t moved to 0, and with probability gamma = 1/g a
uniform count. With e^{eps~} = p/q, d' = (p+q) p^t and d = (n+1) g d':

    F'(z) = 0                                       z < c - t
    F'(z) = q^(c-z) p^(t+1-c+z) - q^(t+1)           c - t <= z < c
    F'(z) = d' - q^(z-c+1) p^(t-z+c) + q^(t+1)      c <= z < min(c + t, n)
    F'(z) = d'                                      otherwise
    F(z)  = (z+1) d' + (g-1)(n+1) F'(z)  (z < n),   F(n) = d.

Tight truncation (docs/balcer-vadhan-notes.md §T and §E2):
t* = min{t >= 0 : 2 q^(t+1) (g-1)(n+1) <= (p-q) p^t}. This is exactly the
condition of Lemma 3.2' with eps = eps' = eps~, P = Unif([0,n]) and
SD = tau(t) = Pr[|Geo(eps~)| > t], because tanh(eps~/2) = (p-q)/(p+q).
t is never capped at n (the reference implementation's bug: capped t is not
DP, loss 1.22 at n=5, eps=1/2, gamma=1/5); when t* >= n GeoSample is used
instead, which is exact, cheaper and more accurate.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpspark.noise import bigint
from dpspark.noise.counting_base import CountingMechanism, require_n
from dpspark.noise.counting_batch import BatchTables
from dpspark.noise.exp_eps import resolve_exp_eps
from dpspark.noise.geosample import GeoSample
from dpspark.errors import ParameterError
from dpspark.exact import RationalLike, parse_rational

#: Above this many bytes the CDF table is not precomputed (entries are computed on demand).
TABLE_LIMIT_BYTES = 256 << 20


def parse_gamma(gamma: object) -> int:
    """Return g for gamma = 1/g; g must be an integer >= 2 (docs/balcer-vadhan-notes.md §E1)."""
    value = parse_rational(gamma, "gamma")
    if value.numerator != 1 or value.denominator < 2:
        raise ParameterError(f"gamma must be 1/g with g an integer >= 2 (e.g. \"1/1000\" or \"2^-70\"), got {value}")
    return value.denominator


def truncation_condition(t: int, p: int, q: int, g: int, n: int) -> bool:
    """True iff 2 q^(t+1) (g-1)(n+1) <= (p-q) p^t, FastSample's exact privacy condition at t."""
    P, Q = bigint.big(p), bigint.big(q)  # GMP: t* for a small epsilon needs powers of millions of bits
    return bool(2 * Q ** (t + 1) * (g - 1) * (n + 1) <= (P - Q) * P**t)


def tight_t(p: int, q: int, g: int, n: int) -> int:
    """t* = min{t >= 0 : truncation_condition(t)}, by doubling then bisection (public-bounded loops).

    The powers are built incrementally (squarings while doubling, one product per bisection step), so t*
    costs about 2 log2(t*) big products instead of as many full powers. ParameterError when p^t* would
    have more than ``bigint.MAX_D_BITS`` bits (epsilon too small for this n and gamma): the range d of
    FastSample (or of its GeoSample fallback) would be too large to draw from.
    """
    big = bigint.big
    P, Q, C = big(p), big(q), 2 * (g - 1) * (n + 1)

    def holds(p_t: Any, q_t1: Any) -> bool:  # truncation_condition at t, given p^t and q^(t+1)
        return bool(C * q_t1 <= (P - Q) * p_t)

    if holds(big(1), Q):
        return 0
    hi, p_hi, q_hi = 1, P, Q
    powers = [(P, Q)]  # (p^(2^j), q^(2^j)) for j = 0 .. log2(hi)
    while not holds(p_hi, q_hi * Q):  # at most log2(t*)+1 rounds, public inputs only
        if 2 * hi * p.bit_length() > 2 * bigint.MAX_D_BITS:
            raise ParameterError(
                f"epsilon is too small for this n: FastSample's truncation t* exceeds {hi} and p^t* would have "
                f"more than {2 * bigint.MAX_D_BITS} bits (e^eps~ = p/q with p of {p.bit_length()} bits, n = {n}); "
                "raise epsilon (per step: epsilon / (max_keys_per_unit x max_rows_per_key)) or lower max_units")
        p_hi, q_hi, hi = p_hi * p_hi, q_hi * q_hi, 2 * hi
        powers.append((p_hi, q_hi))
    if hi == 1:
        return 1
    lo = hi // 2  # condition false at lo, true at hi; hi - lo = lo is a power of two
    p_lo, q_lo = powers[-2]
    for p_step, q_step in reversed(powers[:-2]):  # steps lo/2, lo/4, ..., 1
        p_mid, q_mid = p_lo * p_step, q_lo * q_step
        if not holds(p_mid, q_mid * Q):
            lo, p_lo, q_lo = lo + (hi - lo) // 2, p_mid, q_mid
        else:
            hi = lo + (hi - lo) // 2
    return hi


def cdf_offsets(p: int, q: int, t: int, mult: Any) -> list[Any]:
    """[M F'(c + j) for j in -t .. t-1], exactly (M = ``mult``), in O(t) small steps.

    With T_a = q^a p^(t+1-a): F'(c + j) = T_(-j) - q^(t+1) for j < 0 and d' - T_(j+1) + q^(t+1) for j >= 0,
    and T_(a+1) = (T_a / p) q exactly; the direct formula raised p and q to powers for every entry.
    """
    if t == 0:
        return []
    P, Q = bigint.big(p), bigint.big(q)
    dprime = (P + Q) * P**t
    qt1 = Q ** (t + 1)
    low: list[Any] = [None] * t  # j = -t .. -1 at index j + t
    high: list[Any] = [None] * t  # j = 0 .. t-1 at index j
    term = Q * P**t  # T_1
    for a in range(1, t + 1):  # public bound t
        low[t - a] = mult * (term - qt1)
        high[a - 1] = mult * (dprime - term + qt1)
        if a < t:
            term = (term // P) * Q  # exact: p divides T_a for a <= t
    return low + high


class FastSample(CountingMechanism):
    """FastSample_{n, eps, gamma} with the tight truncation t*.

    Privacy (Theorem 4.10(i), sharpened by Lemma 3.2' as in docs/balcer-vadhan-notes.md §T):
    for |c - c'| = 1 and every z, Pr[M(c,U)=z] <= e^{eps~} Pr[M(c',U)=z] with
    e^{eps~} = ``exp_eps`` = p/q exactly, whenever ``truncation_condition(t)``
    holds, which the default t = t* guarantees. (The test hook ``t=`` can force
    a t that violates it; ``t_is_private`` then reports False.)
    Accuracy: see :meth:`accuracy` (exact, includes the gamma uniform mixture).
    Time: exactly ceil(log2(n+1)) CDF evaluations, each O(1) big-int operations
    on O(t log p + log(n g))-bit ints thanks to a precomputed table.
    Batches: :meth:`draw_many` gives the same outputs from 63-bit prefixes of
    each U (dpspark.noise.counting_batch; a rare tie redoes one count exactly).
    """

    name = "FastSample"

    def __init__(
        self,
        *,
        n: int,
        gamma: RationalLike,
        epsilon: RationalLike | None = None,
        exp_eps: Fraction | None = None,
        rule: str = "pq",
        t: int | None = None,
    ) -> None:
        self.n = require_n(n)
        self.g = parse_gamma(gamma)
        self.gamma = Fraction(1, self.g)
        self.epsilon, self.exp_eps, self.rule = resolve_exp_eps(epsilon, exp_eps, rule)
        p, q = self.p, self.q = self.exp_eps.numerator, self.exp_eps.denominator
        self.t_star = tight_t(p, q, self.g, self.n)
        self.forced_t = t is not None
        if t is not None:
            if isinstance(t, bool) or not isinstance(t, int) or t < 0:
                raise ValueError(f"t (test hook) must be an int >= 0, got {t!r}")
            self.t = t
        else:
            self.t = self.t_star
        self.t_is_private = truncation_condition(self.t, p, q, self.g, self.n)
        self.fallback: GeoSample | None = None
        self._table_fits = False
        self._table_cache: list[Any] | None = None
        self._offset_memo: dict[int, Any] | None = None
        if not self.forced_t and self.t >= self.n:
            self.fallback = GeoSample(n=self.n, exp_eps=self.exp_eps)
            self.d = self.fallback.d
            return
        t = self.t
        P, Q = bigint.big(p), bigint.big(q)
        self._dprime = (P + Q) * P**t
        self._mult = bigint.big((self.g - 1) * (self.n + 1))
        self._qt1 = Q ** (t + 1)
        self.d = int((self.n + 1) * self.g * self._dprime)
        self._P, self._Q = P, Q
        self._full = self._mult * self._dprime
        est_bytes = 2 * t * (self.d.bit_length() // 8 + 32)
        self._table_fits = est_bytes <= TABLE_LIMIT_BYTES

    @property
    def _table(self) -> list[Any] | None:
        """M F'(c + j) for j in [-t, t), built on first use when it fits in TABLE_LIMIT_BYTES (else None).

        Built lazily: the batched path (:meth:`_batch_tables`) never needs it, and at large t it is hundreds
        of megabytes. :func:`cdf_offsets` gives the same values as
        ``[M * self._fprime_offset(j) ...]`` in O(t) small steps.
        """
        if self._table_cache is None and self._table_fits and self._offset_memo is None:
            self._table_cache = cdf_offsets(self.p, self.q, self.t, self._mult)
        return self._table_cache

    @_table.setter
    def _table(self, value: list[Any] | None) -> None:
        """Test hook: ``None`` routes every CDF evaluation through the direct formula."""
        self._table_cache, self._table_fits = value, value is not None

    def _fprime_offset(self, j: int) -> Any:
        """F'(c + j) for -t <= j < t (unclamped; callers handle z >= n)."""
        memo = self._offset_memo
        if memo is not None and j in memo:
            return memo[j]
        t, P, Q = self.t, self._P, self._Q
        if j < 0:
            value = Q ** (-j) * P ** (t + 1 + j) - self._qt1
        else:
            value = self._dprime - Q ** (j + 1) * P ** (t - j) + self._qt1
        if memo is not None:
            memo[j] = value
        return value

    def accuracy(self, beta: RationalLike) -> int:
        """As the base class; unless the table is built, F'(c + j) is memoised by j for this call only.

        The worst-case tail scan evaluates F at z = c - a - 1 and c + a for a dozen c per a, i.e. the same two
        offsets j = -a-1 and a: about a hundred distinct offsets in all, far fewer than the table's 2t
        entries (which this call therefore does not build) or the scan's thousand evaluations. The memo lives
        only during this call, so no data-dependent draw ever sees it (its timing stays history-free).
        """
        if self.fallback is not None or self._table_cache is not None:
            return super().accuracy(beta)
        self._offset_memo = {}
        try:
            return super().accuracy(beta)
        finally:
            self._offset_memo = None

    def _cdf(self, c: int, z: int) -> Any:
        if self.fallback is not None:
            return self.fallback._cdf(c, z)
        j = z - c
        t = self.t
        if j < -t:
            scaled = 0
        elif j >= t:
            scaled = self._full
        elif self._table is not None:
            scaled = self._table[j + t]
        else:
            scaled = self._mult * self._fprime_offset(j)
        return (z + 1) * self._dprime + scaled

    def _search(self, c: int, u: Any) -> int:
        """Same fixed-round descent as the base class, inlined over the table (hot path)."""
        if self.fallback is not None:
            return self.fallback._search(c, u)
        if self._table is None:
            return super()._search(c, u)
        u = bigint.big(u)
        table, dprime, full, t, last = self._table, self._dprime, self._full, self.t, self.n - 1
        pos = -1
        step = 1 << (self.rounds - 1)
        while step:
            probe = pos + step
            z = probe if probe <= last else last
            j = z - c
            if j < -t:
                value = (z + 1) * dprime
            elif j >= t:
                value = (z + 1) * dprime + full
            else:
                value = (z + 1) * dprime + table[j + t]
            if probe <= last and value < u:
                pos = probe
            step >>= 1
        return pos + 1

    def _batch_tables(self) -> BatchTables | None:
        """Tables of the batched sampler (dpspark.noise.counting_batch), computed once from public values.

        With D = (n+1) g and d = D d', C(c+j) 2^63 = A_c + W(j) where
        A_c = (c+1) 2^63 / D and W(j) = 2^63 (j d' + T(j)) / d, T(j) = M F'(j)
        (0 for j < -t, M d' for j >= t): strictly increasing in j. ``wtab`` holds
        the exact floors of W on j in [-t-1, t] (:func:`dpspark.noise.fastsample_tables.batch_weights`);
        beyond it C is linear in z (the uniform tails). A_c is computed as
        (c+1) floor(2^63/D) + mulhi(c+1, floor(frac(2^63/D) 2^64)), less than
        1 + (c+1)/2^64 < 2 below the truth; with the floor of W, E = 3.
        """
        if self.fallback is not None:
            return self.fallback._batch_tables()
        if self.t >= self.n:  # forced t (test hook) only: W(t) would reach 2^63
            return None
        cached: BatchTables | None = getattr(self, "_batch", None)
        if cached is None:
            from dpspark.noise.fastsample_tables import batch_weights  # lazily: lookups never need it

            t = self.t
            wtab = batch_weights(self.p, self.q, t, self.g, self.n)  # exact floors, O(t) small steps
            big_d = (self.n + 1) * self.g
            rint, rem = divmod(1 << 63, big_d)
            uniform = (rint, (rem << 64) // big_d, big_d, (self.g - 1) * (self.n + 1))
            cached = self._batch = BatchTables(wtab, -t - 1, 3, uniform)
        return cached

    def describe(self) -> dict[str, Any]:
        """Exact parameters for a manifest."""
        out: dict[str, Any] = {
            "mechanism": self.name,
            "n": self.n,
            "epsilon": None if self.epsilon is None else str(self.epsilon),
            "rule": self.rule,
            "exp_eps": {"num": self.p, "den": self.q},
            "gamma": str(self.gamma),
            "t_star": self.t_star,
            "t": self.t,
            "fallback": None if self.fallback is None else "GeoSample",
            "d_bits": self.d.bit_length(),
        }
        return out
