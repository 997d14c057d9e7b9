"""Discrete bounded noise of Dagan-Kur (DK, COLT 2022), exact and strict-time.

The noise takes integer values j with |j| < M and pmf proportional to
exp(-f(j/M)) with f = f_p(x) = (1 - x^2)^(-p), p in {1, 2} (family "p1", "p2";
"p2" is the DK reference code's default). It is the grid version of DK's
density e^{-f(x)} on (-1, 1) scaled by R = M (DK Section 2, Corollary 2.3), so
**every released answer is within M - 1 of its true value with probability 1**.

The implemented law (docs/bounded-noise.md, "The implemented pmf")
------------------------------------------------------------------
With c_a = exp(1 - f(a/M)) (so c_0 = 1), C = c_0 + 2 sum_{a=1}^{M-1} c_a and
S(a) = (c_0 + 2 sum_{i=1}^{a} c_i) / C, the table holds the integers

    V(a) = floor(2^b S(a))   for 0 <= a < M - 1,   V(M - 1) = 2^b,

each certified with python-flint arb balls (a ball that straddles an integer is
recomputed at a higher precision; no float is involved). A uniform integer u in
[1, d], d = 2^(b+1), gives v = (u - 1) >> 1 and a sign bit (u - 1) & 1; |j| is
the least a with V(a) > v. Hence, exactly,

    Pr[j = 0] = V(0) / 2^b,    Pr[j = +a] = Pr[j = -a] = (V(a) - V(a-1)) / 2^(b+1),

a symmetric pmf whose weights w_a = Pr[j = +-a] * d satisfy |w_a - kappa c_a| < 2
with kappa = d / C. The privacy certificate (dpspark.noise.bounded_calibrate) is
computed either on these exact integers or from that inequality.

Sampling is an inverse CDF over one uniform integer with exactly
``rounds = bit_length(M)`` table look-ups whatever u is (no rejection loop), and
d is a power of two, so ``rng.uniform(d)`` is exact (no lambda-bit bias).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterator

from dpspark.errors import DPSparkError
from dpspark.rng import RandomSource

#: f_p exponents of the supported families.
FAMILIES = {"p1": 1, "p2": 2}
#: Largest M for which a sampling table is built (2^24 entries of the half table).
MAX_TABLE_M = 1 << 24


class BoundedNoiseError(DPSparkError, ValueError):
    """Bad bounded-noise parameters, or a table that fails its certified check."""


def family_power(family: str) -> int:
    """The exponent p of f_p for a family name ("p1" or "p2")."""
    try:
        return FAMILIES[family]
    except KeyError:
        raise BoundedNoiseError(f"family must be one of {sorted(FAMILIES)}, got {family!r}") from None


def f_rational(p: int, a: int, M: int) -> Fraction:
    """f_p(a/M) = (M^2 / (M^2 - a^2))^p exactly, for |a| < M."""
    m2 = M * M
    return Fraction(m2, m2 - a * a) ** p


def default_bits(M: int) -> int:
    """A default CDF resolution b for a table built without a calibration (2^-128 relative slack)."""
    return 2 * M.bit_length() + 160


def _certified_table(M: int, p: int, b: int, prec: int) -> list[int] | None:
    """V(0..M-1) with certified floors, or None if some ball straddles an integer at this precision."""
    from flint import arb, ctx, fmpq

    old = ctx.prec
    ctx.prec = prec
    try:
        m2 = M * M
        one = arb(1)
        c = [one]
        for a in range(1, M):
            c.append((one - arb(fmpq(m2, m2 - a * a)) ** p).exp())
        # Tail sums from the top keep full relative accuracy where S(a) is close to 1.
        tail = [arb(0)] * M  # tail[a] = sum_{i > a} c_i
        acc = arb(0)
        for a in range(M - 1, 0, -1):
            tail[a] = acc
            acc += c[a]
        tail[0] = acc
        total = one + 2 * acc
        scale = arb(2) ** b / total
        out: list[int] = []
        head = arb(0)  # sum_{i=1}^{a} c_i
        half = arb(2) ** (b - 1)
        for a in range(M - 1):
            if a:
                head += c[a]
            x = (one + 2 * head) * scale
            if x.upper() <= half:
                v = x.floor().unique_fmpz()
            else:  # floor(2^b - y) = 2^b - ceil(y), y = 2^b * 2 * tail / C
                y = 2 * tail[a] * scale
                cy = -((-y).floor())
                v = cy.unique_fmpz()
                if v is not None:
                    v = (1 << b) - int(v)
            if v is None:
                return None
            out.append(int(v))
        out.append(1 << b)
        return out
    finally:
        ctx.prec = old


def build_table(M: int, family: str, bits: int) -> list[int]:
    """The certified integer table V(0..M-1) of the module docstring."""
    p = family_power(family)
    prec = bits + 3 * M.bit_length() + 64
    for _ in range(4):  # a straddling ball is a measure-zero event; retry with more bits
        table = _certified_table(M, p, bits, prec)
        if table is not None:
            return table
        prec += 128
    raise BoundedNoiseError("could not certify the table's floors (an exact integer boundary?)")


class BoundedNoise:
    """Discrete DK bounded noise: |j| < M with probability 1, pmf ~ exp(-f_p(j/M)).

    Privacy: this class is only the noise. The (epsilon, delta) claim for k
    adaptive Delta-sensitive queries is made by
    :func:`dpspark.noise.bounded_calibrate.calibrate`, which certifies DK
    Lemma 10.1/10.2 (Chernoff method) or a PLD bound on *this* implemented pmf
    (docs/bounded-noise.md). Sampling: :meth:`sample` maps u in [1, d] to the
    noise with exactly :attr:`rounds` table look-ups.
    """

    def __init__(self, M: int, family: str = "p2", bits: int | None = None, *, _table: list[int] | None = None):
        if isinstance(M, bool) or not isinstance(M, int) or M < 2:
            raise BoundedNoiseError(f"M must be an int >= 2, got {M!r}")
        if M > MAX_TABLE_M:
            raise BoundedNoiseError(
                f"M = {M} exceeds the table limit 2^24; use a coarser public grid (see calibrate(...).grid)"
            )
        self.M = M
        self.family = family
        self.p = family_power(family)
        self.bits = default_bits(M) if bits is None else int(bits)
        if self.bits < 8:
            raise BoundedNoiseError(f"bits must be >= 8, got {bits}")
        self.d = 1 << (self.bits + 1)
        table = build_table(M, family, self.bits) if _table is None else list(_table)
        if len(table) != M or table[-1] != 1 << self.bits or any(x < 0 for x in table):
            raise BoundedNoiseError("malformed table")
        if any(table[i] > table[i + 1] for i in range(M - 1)):
            raise BoundedNoiseError("table is not non-decreasing")
        self._width = (self.bits + 8) // 8
        self._buf = b"".join(v.to_bytes(self._width, "big") for v in table)

    @classmethod
    def from_table(cls, M: int, family: str, bits: int, table: list[int]) -> "BoundedNoise":
        """Wrap an externally given table (tests and audits; :meth:`verify_table` checks it)."""
        return cls(M, family, bits, _table=table)

    # -- table ------------------------------------------------------------------
    def V(self, a: int) -> int:
        """Table entry V(a) = #{v in [0, 2^b) : |j| <= a}, for 0 <= a < M."""
        w = self._width
        return int.from_bytes(self._buf[a * w : (a + 1) * w], "big")

    def table(self) -> list[int]:
        """All of V(0..M-1)."""
        return [self.V(a) for a in range(self.M)]

    def verify_table(self) -> None:
        """Recompute every entry's certified value and raise if a stored entry differs.

        This is the check that catches a table computed in floating point.
        """
        ref = build_table(self.M, self.family, self.bits)
        for a, (got, want) in enumerate(zip(self.table(), ref)):
            if got != want:
                raise BoundedNoiseError(f"table entry {a} is outside its certified interval")

    def verify_weights(self) -> None:
        """Check every stored weight against its certified interval and raise if one is outside.

        w_a must lie within 2 of kappa c_a = d exp(1 - f(a/M)) / C (an arb ball); this is
        the one property of the table that the large-M certificate uses
        (docs/bounded-noise.md, section 1). A table built in floating point fails it.
        """
        from flint import arb, ctx, fmpq

        old = ctx.prec
        ctx.prec = self.bits + 3 * self.M.bit_length() + 64
        try:
            m2, one = self.M * self.M, arb(1)
            c = [one] + [(one - arb(fmpq(m2, m2 - a * a)) ** self.p).exp() for a in range(1, self.M)]
            total = c[0]
            for x in c[1:]:
                total += 2 * x
            kappa = arb(self.d) / total
            for a, w in enumerate(self.half_weights()):
                if not (kappa * c[a] - w).abs_upper() < 2:
                    raise BoundedNoiseError(f"weight {a} is outside its certified interval")
        finally:
            ctx.prec = old

    def half_weights(self) -> list[int]:
        """w_a = d * Pr[j = +a] for a >= 1, and w_0 = d * Pr[j = 0]; exact ints."""
        t = self.table()
        return [2 * t[0]] + [t[a] - t[a - 1] for a in range(1, self.M)]

    def pmf(self) -> dict[int, Fraction]:
        """Exact pmf over -(M-1)..M-1 (small M only)."""
        if self.M > 1 << 16:
            raise BoundedNoiseError("pmf() enumerates the support; M is too large")
        w = self.half_weights()
        out = {0: Fraction(w[0], self.d)}
        for a in range(1, self.M):
            out[a] = out[-a] = Fraction(w[a], self.d)
        return dict(sorted(out.items()))

    def scaled_cdf(self, z: int) -> int:
        """#{u in [1, d] : sample(u) <= z}, for integer z (0 below -M+1, d from M-1 on)."""
        if z < -self.M + 1:
            return 0
        if z >= self.M - 1:
            return self.d
        half = 1 << self.bits
        if z < 0:
            return half - self.V(-z - 1)
        return half + self.V(z)

    # -- sampling ---------------------------------------------------------------
    @property
    def rounds(self) -> int:
        """Table look-ups per sample: bit_length(M), whatever u is."""
        return self.M.bit_length()

    def sample(self, u: int) -> int:
        """The noise for u in [1, d]: an inverse CDF with exactly :attr:`rounds` look-ups."""
        if isinstance(u, bool) or not isinstance(u, int) or not 1 <= u <= self.d:
            raise BoundedNoiseError("u must be an int in [1, d]")
        v = (u - 1) >> 1
        negative = (u - 1) & 1
        last = self.M - 1
        pos = -1  # invariant: V(pos) <= v, with V(-1) = 0
        step = 1 << (self.rounds - 1)
        buf, w = self._buf, self._width
        while step:
            probe = pos + step
            i = probe if probe <= last else last  # beyond the table V = 2^b > v; look up anyway
            value = int.from_bytes(buf[i * w : (i + 1) * w], "big")
            if probe <= last and value <= v:
                pos = probe
            step >>= 1
        a = pos + 1
        return -a if negative else a

    def draw(self, rng: RandomSource) -> int:
        """One noise value from ``rng`` (d is a power of two: the draw is exactly uniform)."""
        return self.sample(rng.uniform(self.d))

    def draw_many(self, k: int, rng: RandomSource) -> list[int]:
        """k i.i.d. noise values (k is public)."""
        return [self.sample(rng.uniform(self.d)) for _ in range(k)]

    def iter_support(self) -> Iterator[int]:
        """Every value the noise can take (those with positive weight)."""
        w = self.half_weights()
        for a in range(self.M - 1, 0, -1):
            if w[a]:
                yield -a
        if w[0]:
            yield 0
        for a in range(1, self.M):
            if w[a]:
                yield a

    def describe(self) -> dict[str, object]:
        """Exact, JSON-ready parameters for a manifest."""
        return {"mechanism": "bounded_noise", "family": self.family, "M": self.M, "bits": self.bits,
                "d_bits": self.bits + 1, "error_bound": self.M - 1}
