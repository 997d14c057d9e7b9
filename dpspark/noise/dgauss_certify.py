"""Certificates for the zCDP of the IMPLEMENTED discrete Gaussian (its stored integer weights).

Two independent methods bound D_alpha(P || P shifted by s) for every alpha > 1,
P the pmf w/d on Z_m that ``DiscreteGaussian`` samples:

``mixture`` (default, any sigma): re-derives every stored Gaussian floor with
arb (independently of the construction's fixed-point recurrence) and checks
that the non-Gaussian part h = w - g_per is certified positive, with
lambda >= ln(max h / min h). Then D_alpha <= max(alpha s^2/2sigma^2, lambda)
for all alpha > 1 (theorem in :mod:`dpspark.noise.dgauss`), i.e.
rho(s) = max(s^2/2sigma^2, lambda).

``grid`` (small m; a numerical cross-check that assumes no theorem about
Gaussians): computes, with arb balls and one-sided rounding,
F(alpha) = ln sum_y P(y)^alpha Q(y)^(1-alpha) = (alpha-1) D_alpha on a finite
grid alpha_0 < ... < alpha_n and D_inf = max ln P/Q, and covers all alpha > 1:
  * alpha in (1, alpha_0]: D_alpha <= D_{alpha_0} (monotone in alpha);
  * alpha in [a, b] (consecutive grid points): F is convex, so F lies below
    its chord, and the chord <= rho alpha(alpha-1) is checked exactly
    (a concave quadratic's maximum, in rationals);
  * alpha >= alpha_n: D_alpha <= D_inf <= alpha_n rho.
The smallest rho passing all three (on a rational eta grid) is reported.
Unequal supports give D_inf = infinity, reported as ``rho = None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from flint import arb

from dpspark.noise import dgauss_weights as dw

if TYPE_CHECKING:
    from dpspark.noise.dgauss import DiscreteGaussian

#: default eta resolution of the grid method's search for the smallest certified rho
ETA_STEP = Fraction(1, 10**6)


@dataclass(frozen=True)
class ShiftBound:
    """Certified rho(s) and eta(s) with rho(s) <= (1 + eta) s^2/(2 sigma^2); None means infinite/uncertified."""

    shift: int
    rho: Fraction | None
    eta: Fraction | None


@dataclass(frozen=True)
class Certificate:
    """Outcome of :func:`certify` for one sampler."""

    sigma: Fraction
    method: str
    weights_verified: bool | None  # None: not checked in this call
    bad_weights: tuple[int, ...]  # y values whose stored Gaussian floor is outside its certified interval
    bounds: tuple[ShiftBound, ...]
    notes: str = ""
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True iff every weight verified (when checked) and every shift has a finite certified rho."""
        return self.weights_verified is not False and all(b.rho is not None for b in self.bounds)

    @property
    def eta_max(self) -> Fraction | None:
        """Largest eta over the certified shifts (None if some shift is uncertified)."""
        if any(b.eta is None for b in self.bounds):
            return None
        return max((b.eta for b in self.bounds), default=Fraction(0))  # type: ignore[type-var]

    def within(self, eta: Fraction) -> bool:
        """True iff the certificate holds and every eta(s) <= eta."""
        worst = self.eta_max
        return self.ok and worst is not None and worst <= eta


def verify_weights(mech: "DiscreteGaussian", ys: range | list[int] | None = None, prec: int | None = None) -> list[int]:
    """y values whose stored weight is wrong: a Gaussian floor that is NOT floor(W e^{-y^2/2s^2}), certified.

    Each check is a direct arb evaluation (no recurrence), the stored integer g
    must satisfy g <= W e^{-y^2/2s^2} < g + 1 as a certified ball inclusion.
    Also checks that W e^{-(T+1)^2/2s^2} < 1 (the weights beyond T carry no Gaussian part).
    """
    prec = prec or mech.bits + 64
    bad = []
    # The weights the sampler uses must have the structure the mixture proof assumes:
    # w(y) = stored floor + f + e + (0 or 1) in the body (+ the centre correction), f beyond it.
    base = mech.floor + mech.extra
    for y in range(-mech.T, mech.T + 1):
        rest = mech.weight(y) - mech.gaussian_floor(y) - base - (mech.centre_add if y == 0 else 0)
        if rest not in (0, 1):
            bad.append(y)
    if sum(mech.weight(y) for y in range(-mech.T, mech.T + 1)) + mech.floor * (mech.m - 2 * mech.T - 1) != mech.d:
        bad.append(mech.R + 1)  # the weights must sum to d exactly (beyond T they are f by construction)
    ys = range(mech.T + 1) if ys is None else ys
    with dw.precision(prec):
        for y in ys:
            g = dw.gauss_arb(mech.W, mech.sigma, y)
            stored = mech.gaussian_floor(y)
            if not (g >= stored and g < stored + 1):  # arb comparisons are True only when certain
                if dw.gauss_floor_direct(mech.W, mech.sigma, y, 2 * prec) != stored:
                    bad.append(y)
        if not dw.gauss_arb(mech.W, mech.sigma, mech.T + 1) < 1:
            bad.append(mech.T + 1)
    return bad


#: certify()'s keyword argument ``verify_weights`` shadows the function inside it
_verify_weights = verify_weights


def mixture_bounds(mech: "DiscreteGaussian", max_shift: int) -> tuple[ShiftBound, ...]:
    """rho(s) = max(s^2/2sigma^2, lambda) for s = 1..max_shift, or None if h is not certified positive."""
    lam = mech.lam
    out = []
    for s in range(1, max_shift + 1):
        if lam is None or mech.weight_min() <= 0:
            out.append(ShiftBound(s, None, None))
            continue
        r0 = mech.rho0(s)
        rho = max(r0, lam)
        out.append(ShiftBound(s, rho, rho / r0 - 1))
    return tuple(out)


def cyclic_weights(mech: "DiscreteGaussian") -> list[int]:
    """w(y) for y = -R..R (small m only)."""
    if mech.m > 400_001:
        raise ValueError(f"m = {mech.m} is too large to enumerate")
    return [mech.weight(y) for y in range(-mech.R, mech.R + 1)]


def _round_up(x: Fraction, bits: int = 96) -> Fraction:
    """The smallest multiple of 2^-bits that is >= x (keeps the exact chord checks cheap, one-sided)."""
    return Fraction(-((-x.numerator << bits) // x.denominator), 1 << bits)


def _chord_ok(a: Fraction, b: Fraction, fa: Fraction, fb: Fraction, rho: Fraction) -> bool:
    """max over alpha in [a, b] of chord(alpha) - rho alpha (alpha - 1) <= 0 (exact)."""
    k = (fb - fa) / (b - a)
    # chord - rho(alpha^2 - alpha) is concave; its stationary point is (k/rho + 1)/2
    star = (k / rho + 1) / 2
    star = min(max(star, a), b)
    return fa + k * (star - a) - rho * star * (star - 1) <= 0


def alpha_grid(alpha_top: Fraction, first: Fraction = Fraction(1, 1 << 14), ratio: Fraction = Fraction(103, 100)) -> list[Fraction]:
    """1 + first, then (alpha - 1) times ``ratio`` until alpha >= alpha_top (rationals, public)."""
    out = [1 + first]
    while out[-1] < alpha_top:
        nxt = 1 + (out[-1] - 1) * ratio
        out.append(Fraction(nxt.numerator * 2**20 // nxt.denominator + 1, 2**20))  # keep denominators small
    return out


def grid_bound(
    weights: list[int],
    shift: int,
    sigma: Fraction,
    *,
    prec: int = 256,
    eta_step: Fraction = ETA_STEP,
    ratio: Fraction = Fraction(103, 100),
) -> ShiftBound:
    """Smallest certified rho (on an eta grid of step ``eta_step``) with D_alpha <= alpha rho for all alpha > 1.

    ``weights`` is the pmf times d on Z_m (index y + R); P = w, Q = w shifted by ``shift``.
    """
    m = len(weights)
    d = sum(weights)
    pairs = [(weights[i], weights[(i - shift) % m]) for i in range(m)]
    if any(p > 0 and q == 0 for p, q in pairs):
        return ShiftBound(shift, None, None)  # P not << Q: D_alpha = infinity for every alpha > 1
    same = sum(q for p, q in pairs if p == q)  # terms with ratio 1 contribute exactly Q(y)
    diff = [(p, q) for p, q in pairs if p != q and p > 0]
    rho0 = Fraction(shift * shift) / (2 * sigma * sigma)
    with dw.precision(prec):
        logs = [(arb(q), (arb(p) / arb(q)).log()) for p, q in diff]
        dinf = max((dw.upper(lr) for _, lr in logs), default=Fraction(0))
        dinf = _round_up(max(dinf, Fraction(0)))

        def f_upper(alpha: Fraction) -> Fraction:
            al = arb(dw.q(alpha))
            total = arb(same)
            for qa, lr in logs:
                total += qa * (al * lr).exp()
            return _round_up(dw.upper((total / d).log()))

        # grid up to where D_inf <= alpha rho0 (then even eta = 0 covers the top)
        top = max(dinf / rho0, Fraction(2))
        grid = alpha_grid(top + 1, ratio=ratio)
        fs = [f_upper(a) for a in grid]

    def passes(rho: Fraction) -> bool:
        if fs[0] > rho * (grid[0] - 1):  # D_{alpha0} <= rho covers (1, alpha0]
            return False
        if dinf > grid[-1] * rho:
            return False
        return all(_chord_ok(grid[i], grid[i + 1], fs[i], fs[i + 1], rho) for i in range(len(grid) - 1))

    # Candidate: the max over intervals of chord(alpha)/(alpha(alpha-1)), estimated with arb
    # (endpoints and the stationary point); the exact checks in passes() then certify it.
    est = max(fs[0] / (grid[0] - 1), dinf / grid[-1])
    with dw.precision(128):
        for i in range(len(grid) - 1):
            a, b, fa, fb = grid[i], grid[i + 1], fs[i], fs[i + 1]
            k = (fb - fa) / (b - a)
            c = fa - k * a  # chord = c + k alpha; d/dalpha [chord/(alpha^2-alpha)] = 0 <=> k a^2 + 2 c a - c = 0
            cands = [a, b]
            if k != 0 and c * c + k * c >= 0:
                root = (-arb(dw.q(c)) + arb(dw.q(c * c + k * c)).sqrt()) / arb(dw.q(k))
                mid = dw.exact_fraction(root.mid()) if root.is_finite() else a
                if a < mid < b:
                    cands.append(mid)
            est = max(est, max((c + k * x) / (x * (x - 1)) for x in cands))
    hi = max(0, ((est / rho0 - 1) / eta_step).__ceil__())
    tries = 0
    while not passes(rho0 * (1 + hi * eta_step)):  # at most a few bumps: est is within rounding of the max
        hi = hi + 1 + hi // 16
        tries += 1
        if tries > 64:
            return ShiftBound(shift, None, None)
    eta = hi * eta_step
    return ShiftBound(shift, rho0 * (1 + eta), eta)


def certify(mech: "DiscreteGaussian", max_shift: int = 4, *, verify_weights: bool = True, method: str = "mixture") -> Certificate:
    """Certified rho(s), eta(s) for s = 1..max_shift of the implemented law of ``mech``.

    ``verify_weights`` re-derives every stored Gaussian floor with arb (O(T) ball
    evaluations); a stored weight outside its certified interval voids the
    certificate (``ok`` is False). ``method`` is "mixture" or "grid" (small m).
    """
    if isinstance(max_shift, bool) or not isinstance(max_shift, int) or max_shift < 1:
        raise ValueError("max_shift must be an int >= 1")
    bad: list[int] = _verify_weights(mech) if verify_weights else []
    if method == "mixture":
        bounds = mixture_bounds(mech, max_shift)
        lo, hi = mech.h_bounds
        details = {"h_lower": lo, "h_upper": hi, "tau": mech.tau, "lambda": mech.lam, "floor": mech.floor}
        notes = "D_alpha <= max(alpha s^2/2sigma^2, lambda) for all alpha > 1 (mixture with the periodised ideal Gaussian)"
    elif method == "grid":
        w = cyclic_weights(mech)
        bounds = tuple(grid_bound(w, s, mech.sigma) for s in range(1, max_shift + 1))
        details = {"m": mech.m}
        notes = "finite alpha grid, convex chords, D_inf; arb with one-sided rounding"
    else:
        raise ValueError("method must be 'mixture' or 'grid'")
    return Certificate(
        sigma=mech.sigma,
        method=method,
        weights_verified=(not bad) if verify_weights else None,
        bad_weights=tuple(bad),
        bounds=bounds,
        notes=notes,
        details=details,
    )



def certified_table(sigmas: list, max_shift: int = 4, *, verify_weights: bool = True, bits: int = 128) -> list[dict]:
    """Certificate rows (sigma, eta_max, rho(1..max_shift), ok) for a list of sigmas (exact values)."""
    from dpspark.noise.dgauss import DiscreteGaussian

    rows = []
    for s in sigmas:
        mech = DiscreteGaussian(sigma=s, bits=bits)
        cert = certify(mech, max_shift, verify_weights=verify_weights)
        rows.append({
            "sigma": str(mech.sigma),
            "ok": cert.ok,
            "eta_max": None if cert.eta_max is None else str(cert.eta_max),
            "rho": [None if b.rho is None else str(b.rho) for b in cert.bounds],
            "floor": mech.floor,
            "T": mech.T,
        })
    return rows
