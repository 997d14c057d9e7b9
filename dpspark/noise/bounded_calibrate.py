"""Certified calibration of the discrete Dagan-Kur bounded noise (:mod:`dpspark.noise.bounded`).

Privacy claim
-------------
:func:`calibrate` returns the smallest M it can certify such that adding i.i.d.
noise from ``BoundedNoise(M, family, bits)`` to k adaptively chosen
Delta-sensitive integer queries is (epsilon, delta)-DP (replace-one or add/remove
neighbours alike: only the query sensitivity enters). The certificate is on the
*implemented* integer pmf, never on DK's continuous density:

* DK Lemma 10.1 (the identity delta(eps) = E[(1 - e^{eps - L})_+]) with the
  truncation of DK Section 10: on the event that every |noise| <= J the privacy
  loss is S = sum_i l_{s_i}(j_i) 1{|j_i| <= J}; off it (probability <= k tau) we
  pay 1.
* The Chernoff/MGF step of DK Eq. (21), with the pointwise bound
  (1 - e^{eps - x})_+ <= e^{theta (x - eps)} theta^theta / (1 + theta)^(1 + theta),
  so delta <= k tau + m(theta)^k e^{-theta eps} theta^theta / (1+theta)^(1+theta).
* Adaptivity (DK Lemma 6.10 / Lemma 10.2): m(theta) bounds the conditional MGF
  for *every* shift s in {-Delta..Delta}, so the product bound is a
  supermartingale bound. We certify every shift 1..Delta separately (shift 0
  gives m = 1, and -s mirrors s because the pmf is symmetric) instead of relying
  on DK Lemma 10.3, which would need the rounded weights to be log-concave.
* Support: the certificate refuses unless J + Delta <= M - 1 and every weight
  with |j| <= J + Delta is positive (DK's reference code instead reports
  "private" when the shift exceeds (1 - L)/2; see :func:`reference_rule_accepts`).

Every number in the certificate is an arb ball or an exact rational; the float
search only proposes (M, J, theta). Derivations: docs/bounded-noise.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable

from dpspark.exact import RationalLike, parse_rational
from dpspark.noise.bounded import MAX_TABLE_M, BoundedNoise, BoundedNoiseError, family_power
from dpspark.noise.bounded_pld import PLD_MAX_M, PLDRefused, pld_delta

#: Below this M the certificate enumerates the exact integer weights of the table.
EXACT_M = 2048
#: Working precision (bits) of the arb computations.
PREC = 320
#: Taylor order of the block sums (even) and the per-block spread alpha = width * f'.
TAYLOR_R = 24
ALPHA = 2.0
#: Largest sensitivity certified shift by shift; larger ones use a public grid.
MAX_SHIFTS = 16
#: The default ("chernoff") calibration also runs the PLD certificate when M and the PLD's size are at most these.
REFINE_MAX_M = 1 << 14
REFINE_MAX_POINTS = 1 << 12
#: Fraction of delta given to the truncation tail k*tau (DK Section 10 uses 1/100).
TAIL_FRACTIONS = (Fraction(1, 10), Fraction(1, 100), Fraction(1, 1000))


class CalibrationRefused(BoundedNoiseError):
    """The certifier cannot certify the requested parameters (support not covered, M out of range...)."""


# ----------------------------------------------------------------------------- shared formulas
def _diffs(p: int, x: Any, h: Any) -> tuple[Any, Any, Any, Any]:
    """(a, d+, d-, d2) with a = 1 - x^2, d+- = f(x +- h) - f(x), d2 = f(x+h) + f(x-h) - 2 f(x).

    Written without cancellation (docs/bounded-noise.md, "Differences"), so it is
    accurate for h as small as 1e-12 in floats and tight in interval arithmetic.
    """
    a = 1 - x * x
    e = h * h
    g = 2 * x * h
    bp = a - g - e
    bm = a + g - e
    if p == 1:
        dp = (g + e) / (a * bp)
        dm = (e - g) / (a * bm)
        d2 = 2 * e * (1 + 3 * x * x - e) / (a * bp * bm)
    else:
        A = a - e
        a2 = a * a
        dp = (g + e) * (a + bp) / (a2 * bp * bp)
        dm = (e - g) * (a + bm) / (a2 * bm * bm)
        d2 = 2 * e * (A * A * (2 * a - e) + 4 * x * x * (a2 + 2 * A * A) - 16 * x * x * x * x * e) / (a2 * bp * bp * bm * bm)
    return a, dp, dm, d2


# ----------------------------------------------------------------------------- float search (proposals only)
def _np():
    import numpy as np

    return np


class _FloatModel:
    """Float estimates of the certificate, used only to propose (M, J, theta)."""

    def __init__(self, p: int, k: int, eps: float, shifts: int) -> None:
        self.p, self.k, self.eps, self.shifts = p, k, eps, shifts  # report
        np = _np()  # report
        # Z = int_{-1}^{1} e^{-f}: Simpson on a fine grid (report-grade accuracy is enough here)
        t = np.linspace(0.0, 1.0, 200001)[:-1]  # report
        xs = np.sin(t * np.pi / 2)  # report
        w = np.cos(t * np.pi / 2) * np.pi / 2  # report
        self.Z = 2 * float(np.sum(np.exp(-(1 - xs * xs) ** (-p)) * w) * (t[1] - t[0]))  # report

    def f(self, x: float) -> float:
        return (1 - x * x) ** (-self.p)  # report

    def fprime(self, x: float) -> float:
        return 2 * self.p * x * (1 - x * x) ** (-self.p - 1)  # report

    def log_tail(self, L: float) -> float:
        """ln of the two-sided tail bound 2 e^{-f(L)} / (f'(L) Z) (convexity of f)."""
        return math.log(2) - self.f(L) - math.log(self.fprime(L)) - math.log(self.Z)  # report

    def L_for(self, log_tau: float) -> float:
        lo, hi = 1e-9, 1 - 1e-15  # report
        for _ in range(200):
            mid = (lo + hi) / 2  # report
            if self.log_tail(mid) > log_tau:
                lo = mid  # report
            else:
                hi = mid  # report
        return hi  # report

    def prep(self, M: int, J: int, s: int) -> tuple[Any, ...]:
        """Arrays for :meth:`m1` at (M, J, s) that do not depend on theta."""
        np = _np()  # report
        p, h = self.p, s / M  # report
        if J <= 20000:
            x = np.arange(1, J + 1) / M  # report
            wts = np.ones_like(x)  # report
            C = None  # report
        else:
            L = J / M  # report
            t = np.linspace(0.0, 1.0, 2001)  # report
            x = L * np.sin(t * np.pi / 2)  # report
            wts = M * L * np.cos(t * np.pi / 2) * np.pi / 2 * (t[1] - t[0])  # report
            wts[0] *= 0.5  # report
            wts[-1] *= 0.5  # report
            C = M * math.e * self.Z  # report
        a, dp, dm, d2 = _diffs(p, x, h)  # report
        c = np.exp(1 - a ** (-p)) * wts  # report
        if C is None:
            C = 1 + 2 * float(np.sum(c))  # report
        _, dp0, _, _ = _diffs(p, 0.0, h)  # report
        return c, dp, dm, d2, C, dp0  # report

    def m1(self, prep: tuple[Any, ...], theta: float) -> float:
        """Estimate of m_s(theta) - 1 (bulk part) from :meth:`prep` arrays."""
        np = _np()  # report
        c, dp, dm, d2, C, dp0 = prep  # report
        with np.errstate(over="ignore", invalid="ignore"):
            H = c * (np.expm1(theta * d2) - np.expm1(theta * dp) * np.expm1(theta * dm))  # report
            bulk = float(np.sum(H))  # report
        zero = math.expm1(min(theta * dp0, 700))  # report
        return (zero + bulk) / C  # report

    def log_delta(self, M: int, frac: float, theta: float | None = None) -> tuple[float, float, int]:
        """(ln delta estimate, theta, J) at M with the tail budget frac * delta."""
        k, eps = self.k, self.eps  # report
        L = self.L_for(math.log(frac) + self._log_delta_target - math.log(k))  # report
        J = min(M - 1 - self.shifts, math.ceil(L * M))  # report
        if J < 0:
            return math.inf, 1.0, 0  # report
        log_ktau = math.log(k) + self.log_tail(J / M) if J > 0 else 0.0  # report

        preps = [self.prep(M, J, s) for s in range(1, self.shifts + 1)]  # report

        def phi(th: float) -> float:
            try:
                m1 = max(self.m1(pr, th) for pr in preps)  # report
            except (OverflowError, FloatingPointError):
                return math.inf  # report
            if not math.isfinite(m1) or m1 <= -1:
                return math.inf  # report
            return k * math.log1p(max(m1, 0.0)) - th * eps + th * math.log(th) - (1 + th) * math.log1p(th)  # report

        if theta is None:
            lo, hi = math.log(1e-2), math.log(1e3 * (1 - self._log_delta_target) / eps + 1e3)  # report
            g = (math.sqrt(5) - 1) / 2  # report
            c, d = hi - g * (hi - lo), lo + g * (hi - lo)  # report
            fc, fd = phi(math.exp(c)), phi(math.exp(d))  # report
            for _ in range(48):
                if fc < fd:
                    hi, d, fd = d, c, fc  # report
                    c = hi - g * (hi - lo)  # report
                    fc = phi(math.exp(c))  # report
                else:
                    lo, c, fc = c, d, fd  # report
                    d = lo + g * (hi - lo)  # report
                    fd = phi(math.exp(d))  # report
            theta = math.exp((lo + hi) / 2)  # report
        val = phi(theta)  # report
        big = max(log_ktau, val)  # report
        return big + math.log(math.exp(log_ktau - big) + math.exp(val - big)), theta, J  # report

    _log_delta_target = 0.0  # report


# ----------------------------------------------------------------------------- certified pieces
def _arb():
    from flint import arb, arb_series, ctx, fmpq

    return arb, arb_series, ctx, fmpq


def _to_fraction_upper(x: Any) -> Fraction:
    """An exact rational >= every point of the arb ball x."""
    if not x.is_finite():
        raise CalibrationRefused("a certified quantity is not finite (increase M or precision)")
    up = x.upper()
    man, exp = up.mid().man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man) * (Fraction(2) ** exp)


@lru_cache(maxsize=1)
def _faulhaber(R: int) -> tuple[tuple[tuple[int, ...], int], ...]:
    """For r = 0..R: integer coefficients c_i and denominator d with sum_{t=1}^{N} t^r = sum_i c_i N^i / d."""
    # Bernoulli numbers B_0..B_R (B_1 = +1/2 convention for sums up to N), exact
    B = []
    for m in range(R + 1):
        A = [Fraction(1, j + 1) for j in range(m + 1)]
        for j in range(m, 0, -1):
            for jj in range(1, j + 1):
                A[jj - 1] = jj * (A[jj - 1] - A[jj])
        B.append(A[0])
    out = []
    for r in range(R + 1):
        coef = [Fraction(0)] * (r + 2)
        for m in range(r + 1):
            coef[r + 1 - m] += Fraction(math.comb(r + 1, m)) * B[m] / (r + 1)
        den = math.lcm(*[c.denominator for c in coef])
        out.append((tuple(int(c * den) for c in coef), den))
    return tuple(out)


def _power_sum(N: int, r: int, R: int) -> int:
    """sum_{t=1}^{N} t^r, exactly (Faulhaber)."""
    coef, den = _faulhaber(R)[r]
    acc = 0
    for c in reversed(coef):
        acc = acc * N + c
    q, rem = divmod(acc, den)
    assert rem == 0
    return q


@lru_cache(maxsize=8192)
def _centered_power_sums(n: int, R: int) -> tuple[int, ...]:
    """Q_r = sum_{i=0}^{n-1} (2i - (n-1))^r for r = 0..R (zero for odd r), exact integers."""
    out = []
    for r in range(R + 1):
        if r % 2:
            out.append(0)
        elif r == 0:
            out.append(n)
        elif n % 2:  # values 0, +-2, ..., +-(n-1)
            out.append(2 * (1 << r) * _power_sum((n - 1) // 2, r, R))
        else:  # values +-1, +-3, ..., +-(n-1)
            out.append(2 * (_power_sum(n, r, R) - (1 << r) * _power_sum(n // 2, r, R)))
    return tuple(out)


def _blocks(p: int, M: int, J: int) -> list[tuple[int, int]]:
    """A partition of 1..J into index blocks with width * f'(right end) <= ALPHA (layout only)."""
    out = []
    hi = J
    while hi >= 1:
        x = hi / M  # report (layout only; correctness never depends on it)
        fp = 2 * p * x * (1 - x * x) ** (-p - 1)  # report
        w = min(0.02, ALPHA / max(fp, 1e-300))  # report
        n = max(1, int(w * M))
        lo = max(1, hi - n + 1)
        out.append((lo, hi))
        hi = lo - 1
    return out


def _block_sum(G: Callable[[Any], Any], lo: int, hi: int, M: int) -> Any:
    """Certified enclosure of sum_{j=lo}^{hi} G(j/M) by a Taylor model of order TAYLOR_R on the block."""
    arb, arb_series, _, fmpq = _arb()
    R = TAYLOR_R
    n = hi - lo + 1
    x0 = arb(fmpq(lo + hi, 2 * M))
    if n == 1:
        return G(arb_series([x0, 1], prec=1)).coeffs()[0]
    coeffs = G(arb_series([x0, 1], prec=R + 1)).coeffs()
    coeffs = coeffs + [arb(0)] * (R + 1 - len(coeffs))
    ball = arb(fmpq(lo, M)).union(arb(fmpq(hi, M)))
    top = G(arb_series([ball, 1], prec=R + 1)).coeffs()
    if len(top) != R + 1:
        raise CalibrationRefused("Taylor model lost its remainder term (series cap)")
    cR = top[R]
    Q = _centered_power_sums(n, R)
    scale = arb(fmpq(1, 2 * M))
    total = arb(0)
    for r in range(0, R, 2):
        total += coeffs[r] * Q[r] * scale**r
    total += arb(0, cR.abs_upper()) * Q[R] * scale**R
    return total


@dataclass
class _Pieces:
    """Certified ingredients of the Chernoff bound at one (M, J, theta, bits)."""

    m1: Any  # upper bound ball for max_s m_s(theta) - 1
    tau: Any  # upper bound ball for Pr[|j| > J]
    C: Any = None


def _taylor_pieces(p: int, M: int, J: int, theta: Fraction, shifts: int, bits: int) -> _Pieces:
    """Certified m(theta) - 1 and tau for BoundedNoise(M, family, bits) from |w - kappa c| < 2."""
    arb, arb_series, ctx, fmpq = _arb()
    th = arb(fmpq(theta.numerator, theta.denominator))
    blocks = _blocks(p, M, J)

    def c_series(x: Any) -> Any:
        a = 1 - x * x
        return (1 - (1 / a) ** p).exp()

    CJ = arb(1)
    for lo, hi in blocks:
        CJ += 2 * _block_sum(c_series, lo, hi, M)
    L = arb(fmpq(J, M))
    aL = 1 - L * L
    cL = (1 - (1 / aL) ** p).exp()
    fpL = 2 * p * L * (1 / aL) ** (p + 1)
    T = 2 * M * cL / fpL  # >= 2 sum_{j > J} c_j (c decreasing, f convex)
    C = CJ.union(CJ + T)
    W = arb(2) ** (bits + 1)
    tau = T / C + arb(4 * (M - 1 - J)) / W
    m1_max = arb(0)
    for s in range(1, shifts + 1):
        h = arb(fmpq(s, M))

        def H_series(x: Any, h: Any = h) -> Any:
            a, dp, dm, d2 = _diffs(p, x, h)
            c = (1 - (1 / a) ** p).exp()
            return c * (((th * d2).exp() - 1) - ((th * dp).exp() - 1) * ((th * dm).exp() - 1))

        _, dp0, _, _ = _diffs(p, arb(0), h)
        D = (th * dp0).exp() - 1
        for lo, hi in blocks:
            D += _block_sum(H_series, lo, hi, M)
        Ls = arb(fmpq(J + s, M))
        aLs = 1 - Ls * Ls
        c_edge = (1 - (1 / aLs) ** p).exp()
        eta = 2 * arb(2 * M - 1) / (W * c_edge)  # >= 2 / min_{|j| <= J+s} kappa c_j
        if not eta.upper() < arb("0.5"):
            raise CalibrationRefused("table resolution too coarse at the truncation edge (increase bits)")
        rho = ((1 + th) * eta.log1p() - th * (-eta).log1p()).exp()
        m1 = (rho - 1) + rho * D / C + arb(4 * J + 2) / W
        m1_max = m1.upper() if s == 1 else m1_max.max(m1.upper())  # max over shifts of upper bounds
    return _Pieces(m1=m1_max, tau=tau, C=C)


def _exact_pieces(noise: BoundedNoise, J: int, theta: Fraction, shifts: int) -> _Pieces:
    """Certified m(theta) - 1 and tau by enumerating the exact integer weights of the table."""
    arb, _, _, fmpq = _arb()
    w = noise.half_weights()
    M, W = noise.M, noise.d
    th = arb(fmpq(theta.numerator, theta.denominator))
    tail = sum(2 * w[a] for a in range(J + 1, M))
    tau = arb(fmpq(tail, W))
    logs = {}

    def lw(j: int) -> Any:
        a = abs(j)
        if a not in logs:
            logs[a] = arb(w[a]).log()
        return logs[a]

    m1_max = None
    for s in range(1, shifts + 1):
        acc = arb(0)
        for j in range(-J, J + 1):
            a, b = abs(j), abs(j + s)
            if b > M - 1 or w[b] == 0:
                raise CalibrationRefused(
                    f"the shifted support is not covered: weight at {j + s} is 0 while |j| = {a} <= J"
                )
            if w[a] == 0:
                continue
            acc += w[a] * (th * (lw(j) - lw(j + s))).expm1()
        m1 = acc / W
        m1_max = m1.upper() if m1_max is None else m1_max.max(m1.upper())  # max over shifts of upper bounds
    return _Pieces(m1=m1_max, tau=tau)


def certify_chernoff(
    M: int,
    family: str,
    k: int,
    epsilon: RationalLike,
    sensitivity: int,
    J: int,
    theta: RationalLike,
    bits: int,
    noise: BoundedNoise | None = None,
) -> Fraction:
    """A certified upper bound on delta(epsilon) for k adaptive queries (module docstring).

    With ``noise`` (a built table) the exact weights are enumerated; otherwise the
    bound holds for ``BoundedNoise(M, family, bits)`` via |w - kappa c| < 2.
    Raises :class:`CalibrationRefused` when the shifted support is not covered.
    """
    arb, _, ctx, fmpq = _arb()
    p = family_power(family)
    eps = parse_rational(epsilon, "epsilon")
    th = parse_rational(theta, "theta")
    if th <= 0:
        raise CalibrationRefused("theta must be > 0")
    if not 1 <= sensitivity <= MAX_SHIFTS:
        raise CalibrationRefused(f"sensitivity must be in 1..{MAX_SHIFTS} (larger: use a public grid)")
    if J < 0 or J + sensitivity > M - 1:
        raise CalibrationRefused(
            f"J + sensitivity = {J + sensitivity} > M - 1 = {M - 1}: the shifted support is not covered"
        )
    old, old_cap = ctx.prec, ctx.cap
    ctx.prec, ctx.cap = PREC, TAYLOR_R + 1
    try:
        if noise is not None:
            if noise.M != M or noise.family != family or noise.bits != bits:
                raise CalibrationRefused("noise table does not match (M, family, bits)")
            pc = _exact_pieces(noise, J, th, sensitivity)
        else:
            pc = _taylor_pieces(p, M, J, th, sensitivity, bits)
        t = arb(fmpq(th.numerator, th.denominator))
        e = arb(fmpq(eps.numerator, eps.denominator))
        m1 = pc.m1
        m1 = m1.max(arb(0))  # an upper bound; shift 0 has m = 1
        log_core = k * m1.log1p() - t * e + t * t.log() - (1 + t) * t.log1p()
        bound = k * pc.tau + log_core.exp()
        return _to_fraction_upper(bound)
    finally:
        ctx.prec, ctx.cap = old, old_cap


def reference_rule_accepts(M: int, J: int, sensitivity: int) -> bool:
    """DK reference code's acceptance shortcut, on the grid: shift s = Delta/M > (1 - L)/2 counts as "private".

    Kept only as a mutant for tests: it accepts parameters whose shifted support
    is not covered. Never used by :func:`calibrate`.
    """
    return Fraction(sensitivity, M) > (1 - Fraction(J, M)) / 2


# ----------------------------------------------------------------------------- bits, tails, 95% bound
def required_bits(M: int, k: int, p: int, J: int, sensitivity: int, theta: float) -> int:
    """Table resolution b so that the rounding terms are < 2^-40 of the budget (docs/bounded-noise.md)."""
    x = min((J + sensitivity) / M, 1 - 1e-12)  # report (layout of a public parameter)
    log2_c = (1 - (1 - x * x) ** (-p)) / math.log(2)  # report
    need = 48 + math.log2(k) + math.log2(2 * theta + 3) + math.log2(2 * M) - log2_c  # report
    return max(64, int(math.ceil(need)) + 8)


def tail_count_bound(M: int, family: str, bits: int, a: int) -> Fraction:
    """A certified upper bound on Pr[|noise| > a] for BoundedNoise(M, family, bits)."""
    arb, _, ctx, fmpq = _arb()
    p = family_power(family)
    if a >= M - 1:
        return Fraction(0)
    if a <= 0:
        return Fraction(1)
    old = ctx.prec
    ctx.prec = PREC
    try:
        L = arb(fmpq(a, M))
        aL = 1 - L * L
        cL = (1 - (1 / aL) ** p).exp()
        T = 2 * M * cL / (2 * p * L * (1 / aL) ** (p + 1))
        # C >= 1 + 2 sum_{j=1}^{M-1} c_j >= M * int_{-1}^{1} c - 1 >= M * e * Z - 1 with Z > 0.34 for p=2, 0.44 p=1
        Zlo = arb("0.34") if p == 2 else arb("0.44")
        C = M * arb(1).exp() * Zlo - 1
        b = T / C + arb(4 * (M - 1 - a)) / arb(2) ** (bits + 1)
        return min(Fraction(1), _to_fraction_upper(b))
    finally:
        ctx.prec = old


def bound_with_probability(M: int, family: str, bits: int, k: int, beta: RationalLike) -> int:
    """Least a with Pr[all k noises within +-a] >= 1 - beta, certified (union bound k tau(a) <= beta)."""
    b = parse_rational(beta, "beta")
    lo, hi = 0, M - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if k * tail_count_bound(M, family, bits, mid) <= b:
            hi = mid
        else:
            lo = mid + 1
    return lo


# ----------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class Calibration:
    """A certified calibration: noise ``BoundedNoise(M, family, bits)`` on a public grid of step ``grid``.

    ``epsilon``/``certified_delta`` hold for k adaptive queries of sensitivity
    ``sensitivity`` (query units). Every answer is within ``R`` of its true value
    with probability 1: R = grid * (M - 1) + grid // 2 (the rounding to the grid).
    All k answers are within ``bound95`` with probability >= 0.95.
    """

    M: int
    family: str
    k: int
    epsilon: Fraction
    delta: Fraction
    certified_delta: Fraction
    sensitivity: int
    grid: int
    grid_sensitivity: int
    bits: int
    J: int
    theta: Fraction
    method: str
    path: str
    R: int
    bound95: int
    tabulable: bool
    notes: list[str] = field(default_factory=list)

    def noise(self) -> BoundedNoise:
        """Build the certified noise table (M <= 2^24)."""
        return BoundedNoise(self.M, self.family, self.bits)

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready fields for a manifest."""
        return {
            "mechanism": "bounded_noise", "family": self.family, "M": self.M, "bits": self.bits,
            "k": self.k, "epsilon": str(self.epsilon), "delta": str(self.delta),
            "certified_delta": str(self.certified_delta), "sensitivity": self.sensitivity,
            "grid": self.grid, "R": self.R, "bound95": self.bound95, "method": self.method,
            "truncation_J": self.J, "theta": str(self.theta),
        }


def _theta_fraction(theta: float) -> Fraction:
    return Fraction(theta).limit_denominator(1 << 20) or Fraction(1, 1 << 20)  # report (a public choice)


def _search_float(model: _FloatModel, delta: Fraction, hint: int | None = None) -> tuple[int, float, int, float]:
    """Smallest M whose float estimate meets delta; returns (M, theta, J, frac)."""
    log_d = math.log(delta.numerator) - math.log(delta.denominator)  # report
    model._log_delta_target = log_d

    def ok(M: int) -> tuple[bool, float, int, float]:
        best = (math.inf, 1.0, 0, 0.01)
        for frac in TAIL_FRACTIONS:
            ld, th, J = model.log_delta(M, float(frac))  # report: a float proposal; the arb certificate decides
            if ld < best[0]:
                best = (ld, th, J, float(frac))  # report: proposal only
        return best[0] <= log_d + math.log(0.98), best[1], best[2], best[3]  # report: proposal only

    lo = max(model.shifts + 2, 2)
    if ok(lo)[0]:
        hi = lo
    else:
        hi = hint or max(lo + 1, 4 * model.shifts)
        while not ok(hi)[0]:
            lo, hi = hi, hi * 2
            if hi > 1 << 80:
                raise CalibrationRefused("no M up to 2^80 meets the target")
        while hi - lo > max(1, hi >> 12):
            mid = (lo + hi) // 2
            if ok(mid)[0]:
                hi = mid
            else:
                lo = mid
    good, th, J, frac = ok(hi)
    return hi, th, J, frac


#: the modules whose source decides a calibration (the on-disk memo's key includes their digest)
CERTIFIER_MODULES = ("dpspark.noise.bounded_calibrate", "dpspark.noise.bounded_pld", "dpspark.noise.bounded",
                     "dpspark.exact")
_FRACTION_FIELDS = ("epsilon", "delta", "certified_delta", "theta")
_INT_FIELDS = ("M", "k", "sensitivity", "grid", "grid_sensitivity", "bits", "J", "R", "bound95")


def _encode(cal: Calibration) -> dict[str, Any]:
    """A Calibration as exact JSON (ints, rational strings) for the on-disk memo."""
    out: dict[str, Any] = {f: getattr(cal, f) for f in _INT_FIELDS}
    out.update({f: str(getattr(cal, f)) for f in _FRACTION_FIELDS})
    out.update(family=cal.family, method=cal.method, path=cal.path, tabulable=cal.tabulable, notes=list(cal.notes))
    return out


def _decoder(k: int, eps: Fraction, dlt: Fraction, sensitivity: int, family: str, method: str,
             grid: int | None) -> Callable[[Any], Calibration]:
    """Rebuild a stored Calibration, refusing (ValueError) one that does not answer these exact parameters."""

    def decode(raw: Any) -> Calibration:
        ints = {f: raw[f] for f in _INT_FIELDS}
        if any(isinstance(v, bool) or not isinstance(v, int) for v in ints.values()):
            raise ValueError("a count is not an integer")
        fracs = {f: Fraction(raw[f]) for f in _FRACTION_FIELDS}
        strs = {f: raw[f] for f in ("family", "method", "path")}
        notes = raw["notes"]
        if (not all(isinstance(v, str) for v in strs.values()) or not isinstance(raw["tabulable"], bool)
                or not isinstance(notes, list) or not all(isinstance(n, str) for n in notes)):
            raise ValueError("a field has the wrong type")
        if ((ints["k"], fracs["epsilon"], fracs["delta"], ints["sensitivity"], strs["family"], strs["method"])
                != (k, eps, dlt, sensitivity, family, method) or (grid is not None and ints["grid"] != grid)):
            raise ValueError("it answers other parameters")
        M, g = ints["M"], ints["grid"]
        if (not 0 < fracs["certified_delta"] <= dlt or M < 2 or g < 1
                or ints["grid_sensitivity"] != -(-sensitivity // g) or ints["R"] != g * (M - 1) + g // 2
                or raw["tabulable"] != (M <= MAX_TABLE_M)):
            raise ValueError("its numbers are inconsistent")
        return Calibration(**ints, **fracs, **strs, tabulable=raw["tabulable"], notes=list(notes))

    return decode


def _flint_release() -> str:
    """The installed python-flint's dist-info name, without importing flint (:func:`certified.flint_release`)."""
    from dpspark.privacy.certified import flint_release

    return flint_release()


def calibrate(
    k: int,
    epsilon: RationalLike,
    delta: RationalLike,
    sensitivity: int = 1,
    family: str = "p2",
    method: str = "chernoff",
    grid: int | None = None,
) -> Calibration:
    """:func:`calibrate_now`, memoised on disk by its exact public parameters (:mod:`dpspark.disk_memo`).

    Invalid parameters are refused here as by :func:`calibrate_now`; only a certified result is stored.
    """
    plain = all(type(x) is int and x >= 1 for x in (k, sensitivity, 1 if grid is None else grid))
    if not plain or type(family) is not str or type(method) is not str:
        return calibrate_now(k, epsilon, delta, sensitivity, family, method, grid)  # refused there (or unusual)
    eps = parse_rational(epsilon, "epsilon")
    dlt = parse_rational(delta, "delta")
    from dpspark.disk_memo import memoised

    return memoised(
        "bounded_calibration", (k, eps, dlt, sensitivity, family, method, "auto" if grid is None else grid,
                                _flint_release()), CERTIFIER_MODULES,
        lambda: calibrate_now(k, eps, dlt, sensitivity, family, method, grid), _encode,
        _decoder(k, eps, dlt, sensitivity, family, method, grid))


def calibrate_now(
    k: int,
    epsilon: RationalLike,
    delta: RationalLike,
    sensitivity: int = 1,
    family: str = "p2",
    method: str = "chernoff",
    grid: int | None = None,
) -> Calibration:
    """Smallest certified M for k adaptive ``sensitivity``-sensitive integer queries at (epsilon, delta).

    Privacy: DK Lemmas 10.1-10.2 with a Chernoff bound, certified on the
    implemented pmf (module docstring; docs/bounded-noise.md), then tightened by the PLD certificate of the
    same law where that is cheap (:func:`pld_is_cheap`; ``path == "pld"``). ``method="pld"``
    uses a certified privacy-loss-distribution composition instead
    (:mod:`dpspark.noise.bounded_pld`; small M only). A sensitivity above
    MAX_SHIFTS, or an M above the 2^24 table limit, rounds answers to a public
    grid (``grid``, chosen here unless given: the finest grid whose M fits a
    table), whose rounding floor(grid/2) is included in R. With sensitivity 1
    (in grid units) no grid shrinks M; above 2^24 the result is then certified
    but ``tabulable`` is False (no sampling table).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise CalibrationRefused(f"k must be an int >= 1, got {k!r}")
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise CalibrationRefused(f"sensitivity must be an int >= 1, got {sensitivity!r}")
    eps = parse_rational(epsilon, "epsilon")
    dlt = parse_rational(delta, "delta")
    if eps <= 0:
        raise CalibrationRefused("epsilon must be > 0")
    if not 0 < dlt < 1:
        raise CalibrationRefused("delta must be in (0, 1)")
    p = family_power(family)
    if method not in ("chernoff", "pld"):
        raise CalibrationRefused(f"method must be 'chernoff' or 'pld', got {method!r}")
    notes: list[str] = []
    auto_grid = grid is None
    if grid is None:
        grid = 1 if sensitivity <= MAX_SHIFTS else -(-sensitivity // MAX_SHIFTS)
    if grid < 1:
        raise CalibrationRefused("grid must be >= 1")
    dG = -(-sensitivity // grid)
    if dG > MAX_SHIFTS:
        raise CalibrationRefused(f"ceil(sensitivity/grid) = {dG} > {MAX_SHIFTS}; use a coarser grid")

    def run(dG: int) -> tuple[int, Fraction, int, int, Fraction, str]:
        if method == "pld":
            return calibrate_pld(k, eps, dlt, dG, family)
        return _calibrate_chernoff(k, eps, dlt, dG, family, p)

    if auto_grid and dG > 1:  # a float proposal picks the grid first, so large M is certified once
        model = _FloatModel(p, k, float(eps), dG)  # report (proposal only)
        M0 = _search_float(model, dlt)[0]
        if M0 > MAX_TABLE_M:
            want = max(1, min(dG - 1, (dG * MAX_TABLE_M) // (M0 + (M0 >> 6))))
            grid = -(-sensitivity // want)
            dG = -(-sensitivity // grid)
    M, cert, bits, J, theta, path = run(dG)
    # Tables stop at 2^24 entries. M grows linearly with the shift in grid units, so a coarser public grid
    # (fewer grid units per sensitivity) shrinks M; the rounding to the grid is added to R below.
    while auto_grid and M > MAX_TABLE_M and dG > 1:
        want = max(1, min(dG - 1, (dG * MAX_TABLE_M) // M))
        grid = -(-sensitivity // want)
        dG = -(-sensitivity // grid)
        M, cert, bits, J, theta, path = run(dG)
    if M > MAX_TABLE_M:
        notes.append(
            "M exceeds the 2^24 table limit and the sensitivity is 1 grid unit, so no public grid can shrink it "
            "(rounding keeps a shift of 1 unit): the calibration is certified, but no sampling table is built"
            if dG == 1 else "M exceeds the 2^24 table limit: pass a coarser grid to calibrate()")
    cert = readable_upper(cert, dlt)
    R = grid * (M - 1) + grid // 2
    b95 = bound_with_probability(M, family, bits, k, Fraction(1, 20))
    bound95 = grid * b95 + grid // 2
    return Calibration(
        M=M, family=family, k=k, epsilon=eps, delta=dlt, certified_delta=cert, sensitivity=sensitivity,
        grid=grid, grid_sensitivity=dG, bits=bits, J=J, theta=theta, method=method, path=path, R=R,
        bound95=bound95, tabulable=M <= MAX_TABLE_M, notes=notes,
    )


#: a certified delta whose numerator or denominator has more bits is stated rounded up (a reader re-derives
#: statements from parts of at most 1024 bits; delta = 1e-300 gives certificates beyond that)
STATED_BITS = 1000


def readable_upper(cert: Fraction, target: Fraction) -> Fraction:
    """``cert`` itself when short, else a short upper bound of it: the smaller of the target (which the
    certificate is below) and ``cert`` rounded up to a multiple of 2^-b, b = 64 bits past its leading bit
    (at most :data:`STATED_BITS`). Both are upper bounds on the implemented law's delta."""
    if max(cert.numerator.bit_length(), cert.denominator.bit_length()) <= STATED_BITS or cert <= 0:
        return cert
    b = min(STATED_BITS, 64 + max(0, cert.denominator.bit_length() - cert.numerator.bit_length()))
    up = Fraction(-((-cert.numerator << b) // cert.denominator), 1 << b)
    return min(target, up)


def _certify_at(M: int, k: int, eps: Fraction, dlt: Fraction, shifts: int, family: str, p: int,
                model: _FloatModel, frac: float) -> tuple[Fraction, int, int, Fraction, str] | None:
    """Certify M with the float-proposed (J, theta); None if the certified delta misses."""
    ld, th, J = model.log_delta(M, frac)
    if not math.isfinite(ld) or J < 1:
        return None
    theta = _theta_fraction(th)
    bits = required_bits(M, k, p, J, shifts, th)
    try:
        if M <= EXACT_M:
            noise = BoundedNoise(M, family, bits)
            cert = certify_chernoff(M, family, k, eps, shifts, J, theta, bits, noise=noise)
            path = "exact"
        else:
            cert = certify_chernoff(M, family, k, eps, shifts, J, theta, bits)
            path = "taylor"
    except CalibrationRefused:
        return None
    if cert > dlt:
        return None
    return cert, bits, J, theta, path


def _calibrate_mgf(k: int, eps: Fraction, dlt: Fraction, shifts: int, family: str, p: int):
    """The Chernoff (MGF) calibration alone: smallest M whose Chernoff certificate meets delta."""
    model = _FloatModel(p, k, float(eps), shifts)  # report (proposals only)
    M0, th, J, frac = _search_float(model, dlt)
    M = M0
    res = None
    for _ in range(60):
        res = _certify_at(M, k, eps, dlt, shifts, family, p, model, frac)
        if res is not None:
            break
        M = M + max(1, M >> 9)
    if res is None:
        raise CalibrationRefused("could not certify near the float optimum")
    # walk down while the certificate still holds (a few steps; each is a full certificate)
    step = max(1, M >> 10)
    for _ in range(3):
        if M - step < shifts + 2:
            break
        down = _certify_at(M - step, k, eps, dlt, shifts, family, p, model, frac)
        if down is None:
            break
        M, res = M - step, down
    cert, bits, J, theta, path = res
    return M, cert, bits, J, theta, path


def pld_is_cheap(k: int, eps: Fraction, M: int) -> bool:
    """Whether the PLD refinement of the default calibration is cheap (about a second): the enumerated PLD has
    about 20 k (eps + 1) / eps grid points and M is small. Public parameters only."""
    return M <= REFINE_MAX_M and 20 * k * (eps + 1) <= REFINE_MAX_POINTS * eps


def _pld_search(k: int, eps: Fraction, dlt: Fraction, shifts: int, family: str, M_hi: int, bits: int,
                rel: int) -> tuple[int, Fraction] | None:
    """Smallest M <= M_hi (to a relative 2^-rel) whose PLD certificate meets delta, or None if none below M_hi.

    The search brackets downward by halving from M_hi (the certified minimum is far below the Chernoff M at
    small k: no fixed floor), then bisects; M_hi itself need not pass. Every returned value is certified.
    """
    memo: dict[int, Fraction | None] = {}

    def cert(M: int) -> Fraction | None:
        if M not in memo:
            try:
                memo[M] = pld_delta(BoundedNoise(M, family, bits), k, eps, shifts)
            except (PLDRefused, BoundedNoiseError):
                memo[M] = None
        c = memo[M]
        return c if c is not None and c <= dlt else None

    floor_M = shifts + 2
    hi = M_hi if cert(M_hi) is not None else None
    lo = M_hi
    while True:  # bracket: lo fails (or is the floor), hi passes
        nxt = max(floor_M, lo // 2)
        if nxt == lo:
            break
        if cert(nxt) is None:
            lo = nxt
            break
        hi, lo = nxt, nxt
    if hi is None:
        # M_hi fails: look between lo and M_hi only if some M in it passes (bisection needs a passing end)
        return None
    if lo == hi:
        return hi, memo[hi]  # type: ignore[return-value]
    while hi - lo > max(1, hi >> rel):
        mid = (lo + hi) // 2
        if cert(mid) is not None:
            hi = mid
        else:
            lo = mid
    return hi, memo[hi]  # type: ignore[return-value]


def _calibrate_chernoff(k: int, eps: Fraction, dlt: Fraction, shifts: int, family: str, p: int):
    """The default calibration: the Chernoff certificate, tightened where enumerating the PLD is cheap.

    At small k the single-theta Chernoff step loses a factor of about e in delta (1.7-2.4x in M); the PLD
    certificate of the same implemented law is within a few % of its exact delta, so where it is cheap
    (:func:`pld_is_cheap`) the smallest M it certifies below the Chernoff M is returned, with path "pld".
    """
    M, cert, bits, J, theta, path = _calibrate_mgf(k, eps, dlt, shifts, family, p)
    if pld_is_cheap(k, eps, M):
        found = _pld_search(k, eps, dlt, shifts, family, M, bits, rel=30)
        if found is not None and found[0] < M:
            return found[0], found[1], bits, found[0] - 1, Fraction(0), "pld"
    return M, cert, bits, J, theta, path


def calibrate_pld(k: int, eps: Fraction, dlt: Fraction, shifts: int, family: str):
    """Smallest M (searched below the Chernoff M) whose PLD certificate
    (:func:`dpspark.noise.bounded_pld.pld_delta`) meets delta: ``calibrate(method="pld")``.

    Returns (M, certified_delta, bits, J, theta, path) in the shape of the Chernoff calibration
    (J and theta are not used by this method and are returned as M - 1 and 0).
    """
    M_hi, cert_hi, bits, _, _, _ = _calibrate_mgf(k, eps, dlt, shifts, family, family_power(family))
    if M_hi > PLD_MAX_M:
        raise PLDRefused(f"PLD enumerates the pmf; the Chernoff M = {M_hi} > {PLD_MAX_M}")
    found = _pld_search(k, eps, dlt, shifts, family, M_hi, bits, rel=10)
    if found is None:  # the PLD bound is looser here: keep the Chernoff answer certified by PLD at a larger M
        raise PLDRefused("the PLD certificate is looser than Chernoff at the Chernoff M")
    return found[0], found[1], bits, found[0] - 1, Fraction(0), "pld"
