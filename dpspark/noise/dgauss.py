"""A strict-time discrete Gaussian with integer weights and a certificate for the law it samples.

Mechanism
---------
``DiscreteGaussian(sigma=sigma, data_radius=r)`` fixes integer weights w(y) on the
cyclic group Z_m, m = 2R + 1, represented as y in [-R, R], with total
d = 2^bits:

    w(y) = floor(W exp(-y^2 / (2 sigma^2))) + f + e + b(y)    for |y| <= T (the body),
    w(y) = f                                                  for T < |y| <= R,

where W is an integer, T the last y with floor(W e^{-y^2/2sigma^2}) >= 1,
R = T + r, f the uniform floor, e >= 2 (2 or 3) and b(y) in {0, 1} two small
symmetric corrections that make the total exactly 2^bits. Every Gaussian floor
is certified (fixed-point integers with one-sided rounding, arb balls where
those straddle an integer). The noise is Z = sample(U) for ONE uniform U on
[1, d]: the generalised inverse of the integer scaled CDF, found by a binary
search with exactly ``rounds`` = bitlen(m - 1) CDF evaluations for every U.
d is a power of two, so U = rng.bits(bits) + 1 is exactly uniform (no bias term).

The mechanism on an integer statistic x is x -> (x + Z) mod m; ``add`` returns
its representative in the public window [c - R, c + R] around a public centre
c. If |x - c| <= r that representative is exactly x + Z whenever |Z| <= T,
i.e. except with the floor's probability (about f (m - 2T - 1) / d).

Privacy claim (theorem about the implemented law)
-------------------------------------------------
For integer statistics x, x' with |x - x'| = s >= 1 and every alpha > 1,

    D_alpha((x + Z) mod m || (x' + Z) mod m) <= alpha * rho(s),
    rho(s) = max(s^2 / (2 sigma^2), lambda),

so the release is rho(s)-zCDP (Bun-Steinke Def. 1.1) and vectors of
independent coordinates compose by adding rho(s_i). ``zcdp_rho(s)`` returns
rho(s) as an exact Fraction; with the default floor, lambda <= 1/(2 sigma^2)
and rho(s) = s^2/(2 sigma^2) exactly (eta = 0).

Proof (checked by :func:`dpspark.noise.dgauss_certify.certify`): write
w = g_per + h on Z_m with g_per(y) = sum_k W e^{-(y+km)^2/2sigma^2} the periodised
ideal Gaussian. The certified floors give h(y) in (f - 1 - tau, f + e + 1],
tau a certified bound on the periodisation tail, so h > 0. The Renyi sum
x^a y^(1-a) is jointly convex and 1-homogeneous, hence subadditive, so
sum_y w(y)^a w(y-s)^(1-a) <= [sum over Z for the ideal Gaussian] + [same for h].
The first is at most (sum g) e^{a(a-1) s^2/2sigma^2} by Canonne-Kamath-Steinke 2020
(Prop. 5: the shifted theta sum is maximal at shift 0); the second at most
(sum h) e^{(a-1) lambda} with lambda = ln(max h / min h) <= (f+e+1)/(f-1-tau) - 1.
Dividing by d = sum g + sum h gives D_alpha <= max(alpha s^2/2sigma^2, lambda).
The ideal law's theorem is CKS20 Prop. 5 / Thm. 4; this certificate transfers it
to the weights actually stored.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import accumulate
from math import isqrt
from typing import Any, Sequence

import numpy as np

from dpspark.errors import DPSparkError
from dpspark.exact import RationalLike, parse_rational
from dpspark.noise import dgauss_weights as dw
from dpspark.rng import RandomSource

#: sigma range in sampler units (larger scales: round to a grid, see dpspark.noise.grid)
MIN_SIGMA = Fraction(1)
MAX_SIGMA = Fraction(10**4)
#: the automatic floor covers e <= this (e is 2 or 3; the certificate reports eta > 0 otherwise)
_E_MAX = 3


class DGaussError(DPSparkError, ValueError):
    """Invalid discrete-Gaussian parameters (user-facing)."""


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


def _split_words(values: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative ints < 2^128 as (high, low) uint64 arrays."""
    mask = (1 << 64) - 1
    return (
        np.fromiter((v >> 64 for v in values), dtype=np.uint64, count=len(values)),
        np.fromiter((v & mask for v in values), dtype=np.uint64, count=len(values)),
    )


class DiscreteGaussian:
    """Strict-time discrete Gaussian N_Z(0, sigma^2) on Z_m with certified integer weights.

    Privacy: ``(x + Z) mod m`` is ``zcdp_rho(|x - x'|)``-zCDP; with the default
    floor that is exactly s^2/(2 sigma^2) (see the module docstring for the
    theorem and :func:`dpspark.noise.dgauss_certify.certify` for the certificate of
    the implemented law).
    Randomness: one U uniform on [1, d], d = 2^bits: U = rng.bits(bits) + 1 (exact; no rng bias term).
    Time: ``rounds`` = bitlen(m-1) scaled-CDF evaluations per sample, whatever U is.

    Parameters: ``sigma`` exact (str, int or Fraction; a float is a TypeError),
    1 <= sigma <= 10^4; ``data_radius`` r >= 0, a public bound on |x - centre| so
    that ``add`` returns x + Z without wrap-around inside the Gaussian body;
    ``bits`` (64..128), d = 2^bits; ``floor`` forces the uniform floor f (test
    hook: a too-small floor makes the certificate report eta > 0 or infinity).
    """

    name = "DiscreteGaussian"

    def __init__(
        self,
        *,
        sigma: RationalLike,
        data_radius: int = 0,
        bits: int = 128,
        floor: int | None = None,
    ) -> None:
        s = parse_rational(sigma, "sigma")
        if not MIN_SIGMA <= s <= MAX_SIGMA:
            raise DGaussError(
                f"sigma must be in [{MIN_SIGMA}, {MAX_SIGMA}] (sampler units); for larger scales round the "
                f"statistic to a public grid (dpspark.noise.grid), got {s}"
            )
        data_radius = _check_int(data_radius, "data_radius")
        bits = _check_int(bits, "bits")
        if data_radius < 0 or data_radius >= 1 << 48:
            raise DGaussError(f"data_radius must be in [0, 2^48), got {data_radius}")
        if not 64 <= bits <= 128:
            raise DGaussError(f"bits must be in [64, 128], got {bits}")
        if floor is not None and (_check_int(floor, "floor") < 0):
            raise DGaussError(f"floor must be >= 0, got {floor}")
        self.sigma = s
        self.bits = bits
        self.d = d = 1 << bits
        self.data_radius = data_radius
        self.forced_floor = floor is not None

        # Public cap on the body: 2^bits e^{-y^2/2s^2} < 1 once y^2 > 2 s^2 bits (ln 2 < 1).
        bound = 2 * s * s * bits
        ycap = isqrt(-((-bound.numerator) // bound.denominator)) + 2
        self._theta_hi = theta_hi = dw.upper(dw.theta_ball(s, bits + 64))
        W0 = (d / theta_hi).__floor__()
        T = dw.last_positive(W0, s, ycap, bits + 64)
        self._P = P = bits + 2 * T.bit_length() + 40
        self.T = T
        self.R = R = T + data_radius
        self.m = m = 2 * R + 1
        # Periodisation tail tau (valid for every W <= W0, since it is increasing in W).
        self.tau = tau = dw.tail_bound(W0, s, R, P)
        if floor is None:
            # lambda <= (f+e+1)/(f-1-tau) - 1 <= 1/(2 sigma^2)  <=>  f - 1 - tau >= 2 sigma^2 (e + 2 + tau)
            need = 2 * s * s * (_E_MAX + 2 + tau) + 1 + tau
            f0 = need.__ceil__() + 1
        else:
            f0 = floor
        self.floor = f0
        body = 2 * T + 1
        W = ((d - f0 * m - 2 * body) / theta_hi).__floor__()
        if W < 1:
            raise DGaussError(f"bits = {bits} leaves no room for the Gaussian at sigma = {s}, data_radius = {data_radius}")
        self.W = W
        self._gfloor = gf = dw.gauss_floor_table(W, s, T, P)
        s_g = gf[0] + 2 * sum(gf[1:])
        slack = d - s_g - f0 * m  # >= 2 * body because s_g <= W theta <= d - f0 m - 2 body
        if f0 == 0:
            self.extra, self.bump, self.centre_add = 0, 0, slack
        else:
            self.extra, self.bump = divmod(slack, body)
            self.centre_add = 0
        # Body weights: gf + f + e, plus 1 at |y| <= bump//2 (y != 0) and at 0 if bump is odd.
        base, half = f0 + self.extra, self.bump // 2
        right = [gf[y] + base + (y <= half) for y in range(1, T + 1)]
        centre = gf[0] + base + (self.bump & 1) + self.centre_add
        wb = right[::-1]
        wb.append(centre)
        wb += right
        cum = list(accumulate(wb))
        self._left = f0 * (R - T)  # mass of the left floor [-R, -T-1]
        self._body_mass = cum[-1]
        if self._left + cum[-1] + f0 * (R - T) != d:  # pragma: no cover - construction invariant
            raise ArithmeticError("weights do not sum to 2^bits")
        self._n_body = len(wb)
        self._wmin = min(min(wb), f0) if R > T else min(wb)
        # Excess over the floor, cumulative, for the branch-free scaled CDF: xs[k] = sum_{i<k} (wb[i] - f0).
        self._excess = list(accumulate((w - f0 for w in wb), initial=0))
        left_m1 = self._left - 1
        self._fm1_hi, self._fm1_lo = _split_words([left_m1 + c for c in cum])

    # ----- weights and CDF -------------------------------------------------------------

    def weight(self, y: int) -> int:
        """The integer weight w(y) = d * Pr[Z = y] for y in [-R, R]."""
        y = _check_int(y, "y")
        if not -self.R <= y <= self.R:
            raise ValueError(f"y must be in [-R, R] = [-{self.R}, {self.R}]")
        if abs(y) > self.T:
            return self.floor
        j = y + self.T
        return self._excess[j + 1] - self._excess[j] + self.floor

    def weight_min(self) -> int:
        """The smallest weight over Z_m (0 means unequal supports for some shift)."""
        return self._wmin

    def gaussian_floor(self, y: int) -> int:
        """The stored Gaussian part floor(W exp(-y^2/2sigma^2)) of w(y) (0 outside the body)."""
        y = _check_int(y, "y")
        return self._gfloor[abs(y)] if abs(y) <= self.T else 0

    @property
    def rounds(self) -> int:
        """Binary-search rounds per sample: exactly bitlen(m - 1), whatever U is."""
        return (self.m - 1).bit_length()

    def _cdf(self, p: int) -> int:
        """F at position p in [0, m-1] (value y = p - R), branch-free but for two clamps."""
        y = p - self.R
        c = min(max(y, -self.T - 1), self.T)
        return self.floor * (p + 1) + self._excess[c + self.T + 1]

    def scaled_cdf(self, z: int) -> int:
        """F(z) = #{u in [1, d] : sample(u) <= z}, for z in [-R-1, R] (F(-R-1) = 0, F(R) = d)."""
        z = _check_int(z, "z")
        if not -self.R - 1 <= z <= self.R:
            raise ValueError(f"z must be in [-R-1, R] = [{-self.R - 1}, {self.R}]")
        if z == -self.R - 1:
            return 0
        return self._cdf(z + self.R)

    def pmf(self) -> list[Fraction]:
        """Exact pmf over [-R, R] from scaled-CDF differences (small m only)."""
        if self.m > 200_001:
            raise ValueError(f"pmf() enumerates Z_m; m = {self.m} is too large")
        cdf = [self.scaled_cdf(z) for z in range(-self.R - 1, self.R + 1)]
        return [Fraction(cdf[i + 1] - cdf[i], self.d) for i in range(self.m)]

    # ----- sampling --------------------------------------------------------------------

    def sample(self, u: int) -> int:
        """Z = min{y in [-R, R] : F(y) >= u} for u in [1, d], in exactly ``rounds`` CDF evaluations."""
        u = _check_int(u, "u")
        if not 1 <= u <= self.d:
            raise ValueError("u must be in [1, d]")
        return self._search(u)

    def _search(self, u: int) -> int:
        pos = -1  # invariant: F(pos) < u (F(-1) = 0)
        last = self.m - 2  # F(m - 1) = d >= u: never needs evaluating
        step = 1 << (self.rounds - 1)
        cdf = self._cdf
        while step:
            probe = pos + step
            value = cdf(probe if probe <= last else last)  # evaluate a real point anyway: uniform work
            if probe <= last and value < u:
                pos = probe
            step >>= 1
        return pos + 1 - self.R

    def draw(self, rng: RandomSource) -> int:
        """One sample with U = rng.bits(bits) + 1, uniform on [1, d] exactly (d = 2^bits)."""
        return self._search(rng.bits(self.bits) + 1)

    def draw_many(self, k: int, rng: RandomSource) -> np.ndarray:
        """k samples as int64, from the same k calls ``rng.bits(bits)`` that k ``draw`` calls make.

        Vectorised over the batch: a fixed-round search of the body table on
        (high, low) uint64 words, plus the closed-form floor regions for every
        element, selected branch-free.
        """
        k = _check_int(k, "k")
        if k < 0:
            raise ValueError("k must be >= 0")
        bits, nb = rng.bits, self.bits
        return self._inverse_m1([bits(nb) for _ in range(k)])

    def inverse_many(self, us: Sequence[int]) -> np.ndarray:
        """sample(u) for every u of ``us`` (each in [1, d]), vectorised; same values as ``sample``."""
        if len(us) and (min(us) < 1 or max(us) > self.d):
            raise ValueError("every u must be in [1, d]")
        return self._inverse_m1([u - 1 for u in us])

    def _inverse_m1(self, um1: list[int]) -> np.ndarray:
        """sample(v + 1) for every v in ``um1`` (each in [0, d))."""
        k = len(um1)
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        uh, ul = _split_words(um1)
        th, tl = self._fm1_hi, self._fm1_lo
        n = self._n_body
        pos = np.full(k, -1, dtype=np.int64)
        step = 1 << (n.bit_length() - 1)
        while step:
            probe = pos + step
            idx = np.minimum(probe, n - 1)
            vh, vl = th[idx], tl[idx]
            less = (vh < uh) | ((vh == uh) & (vl < ul))  # F(probe) - 1 < u - 1
            pos = np.where((probe < n) & less, probe, pos)
            step >>= 1
        j = pos + 1  # in [0, n]; n means "beyond the body"
        out = j - self.T
        if self.R > self.T and self.floor > 0:  # public condition: floor regions exist
            f0, R, T = self.floor, self.R, self.T
            u_obj = np.array(um1, dtype=object)
            lh, ll = _split_words([self._left])
            left = (uh < lh[0]) | ((uh == lh[0]) & (ul < ll[0]))  # u - 1 < left mass
            y_left = (np.minimum(u_obj, self._left) // f0).astype(np.int64) - R
            over = np.maximum(np.minimum(u_obj - (self._left + self._body_mass), f0 * (R - T)), 0)
            y_right = (over // f0).astype(np.int64) + T + 1
            out = np.where(left, y_left, np.where(j == n, y_right, out))
        return out.astype(np.int64)

    # ----- releases --------------------------------------------------------------------

    def wrap(self, value: Any, centre: int = 0) -> Any:
        """Representative of value mod m in [centre - R, centre + R] (int or int64 array)."""
        return (value - centre + self.R) % self.m + centre - self.R

    def add(self, x: int, rng: RandomSource, centre: int = 0) -> int:
        """Release (x + Z) mod m as its representative around the public ``centre``."""
        return int(self.wrap(_check_int(x, "x") + self.draw(rng), centre))

    def add_many(self, xs: np.ndarray, rng: RandomSource, centre: int = 0) -> np.ndarray:
        """``add`` for every coordinate of an int64 vector (independent noise per coordinate)."""
        xs = np.asarray(xs)
        if xs.dtype.kind not in "iu":
            raise TypeError("xs must be an integer array")
        return self.wrap(xs.astype(np.int64) + self.draw_many(xs.size, rng).reshape(xs.shape), centre)

    # ----- privacy ---------------------------------------------------------------------

    @property
    def h_bounds(self) -> tuple[Fraction, Fraction]:
        """(lower, upper) with lower < h(y) <= upper for the non-Gaussian part h = w - g_per."""
        hi = Fraction(self.floor + self.extra + 1 + self.centre_add)
        return Fraction(self.floor - 1) - self.tau, hi

    @property
    def lam(self) -> Fraction | None:
        """Certified rational bound on ln(max h / min h); None if h may vanish (no certificate)."""
        lo, hi = self.h_bounds
        if lo <= 0:
            return None
        return hi / lo - 1  # ln(1 + x) <= x

    def rho0(self, shift: int) -> Fraction:
        """The ideal discrete Gaussian's rho for this shift: s^2 / (2 sigma^2)."""
        return Fraction(shift * shift) / (2 * self.sigma * self.sigma)

    def zcdp_rho(self, shift: int) -> Fraction:
        """Certified rho(s) = max(s^2/(2 sigma^2), lambda) for an integer shift s (0 -> 0).

        Raises DGaussError when the mixture certificate does not apply (a forced
        floor too small for h > 0).
        """
        s = abs(_check_int(shift, "shift"))
        if s == 0:
            return Fraction(0)
        lam = self.lam
        if lam is None:
            raise DGaussError("no zCDP certificate: the uniform floor is too small (h may vanish)")
        return max(self.rho0(s), lam)

    def statement(self, shifts: "list[int] | int", n: int) -> Any:
        """The certified release statement for a vector of integer shifts (one per noised coordinate).

        rho = sum_i rho(s_i) (independent coordinates compose by adding rho), stated as
        :class:`dpspark.privacy.ZCDP` under add/remove of one unit among at most ``n`` (the shifts are the
        most one unit moves each coordinate).
        """
        from dpspark.privacy import AddRemove, PrivacyStatement, ZCDP

        vector = [shifts] if isinstance(shifts, int) else list(shifts)
        rho = sum((self.zcdp_rho(s) for s in vector), Fraction(0))
        return PrivacyStatement(ZCDP(rho), AddRemove(n), "Canonne-Kamath-Steinke 2020 (ideal law) with the "
                                "mixture certificate of dpspark.noise.dgauss_certify on the implemented law")

    @property
    def eta(self) -> Fraction:
        """Certified eta with rho(s) <= (1 + eta) s^2/(2 sigma^2) for every shift s >= 1."""
        lam = self.lam
        if lam is None:
            raise DGaussError("no zCDP certificate: the uniform floor is too small (h may vanish)")
        return max(Fraction(0), lam / self.rho0(1) - 1)

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready parameters for a manifest."""
        return {
            "mechanism": self.name,
            "sigma": str(self.sigma),
            "bits": self.bits,
            "data_radius": self.data_radius,
            "T": self.T,
            "R": self.R,
            "m": self.m,
            "W_bits": self.W.bit_length(),
            "floor": self.floor,
            "extra": self.extra,
            "eta": str(self.eta) if self.lam is not None else None,
        }


def vector_rho(mech: DiscreteGaussian, shifts: Sequence[int]) -> Fraction:
    """Certified rho of independent coordinates shifted by ``shifts``: sum of zcdp_rho(s_i)."""
    return sum((mech.zcdp_rho(int(s)) for s in shifts), Fraction(0))


def l2_rho(mech: DiscreteGaussian, l2_sensitivity: RationalLike) -> Fraction:
    """Certified rho for any integer shift vector with ||s||_2 <= Delta: (1 + eta) Delta^2 / (2 sigma^2)."""
    delta = parse_rational(l2_sensitivity, "l2_sensitivity")
    if delta < 0:
        raise DGaussError("l2_sensitivity must be >= 0")
    return (1 + mech.eta) * delta * delta / (2 * mech.sigma * mech.sigma)


def sigma_grid_next(lower: Fraction, digits: int = 3) -> Fraction:
    """The smallest sigma >= ``lower`` of the form k 10^e with k a ``digits``-digit integer (sigma >= 1)."""
    lower = max(lower, MIN_SIGMA)
    e = -(digits - 1)
    while Fraction(10) ** (e + digits) <= lower:  # public: about log10(sigma) steps
        e += 1
    scale = Fraction(10) ** e
    x = lower / scale  # in [1, 10^digits)
    k = -((-x.numerator) // x.denominator)  # ceil; sigma = k 10^e >= lower
    return k * scale


def smallest_sigma(
    rho_target: RationalLike,
    sensitivity: RationalLike,
    *,
    digits: int = 3,
    bits: int = 128,
    data_radius: int = 0,
) -> Fraction:
    """Smallest sigma on the grid k 10^e (k with ``digits`` digits) whose certified rho meets the target.

    The certified rho for l2 sensitivity Delta is ``l2_rho`` = (1 + eta) Delta^2 / (2 sigma^2)
    of the sampler actually built at that sigma (eta from its certificate, 0 with
    the default floor). Raises DGaussError if no sigma <= 10^4 qualifies.
    """
    rho = parse_rational(rho_target, "rho_target")
    delta = parse_rational(sensitivity, "sensitivity")
    if rho <= 0 or delta < 0:
        raise DGaussError("rho_target must be > 0 and sensitivity >= 0")
    sigma = sigma_grid_next(Fraction(0), digits)
    need = delta * delta / (2 * rho)  # sigma^2 >= need when eta = 0
    if need > sigma * sigma:
        root = Fraction(isqrt(need.numerator * need.denominator), need.denominator)  # <= sqrt(need)
        sigma = sigma_grid_next(root, digits)
        while sigma * sigma < need:  # root was rounded down: at most a few grid steps
            sigma = sigma_grid_next(sigma + Fraction(1, 10**digits), digits)
    for _ in range(1000):  # public bound; a step is taken only if eta > 0 at this sigma
        if sigma > MAX_SIGMA:
            break
        mech = DiscreteGaussian(sigma=sigma, bits=bits, data_radius=data_radius)
        if l2_rho(mech, delta) <= rho:
            return sigma
        sigma = sigma_grid_next(sigma * (1 + Fraction(1, 10**digits)), digits)
    raise DGaussError(f"no sigma <= {MAX_SIGMA} on the grid meets rho = {rho} at sensitivity {delta}")
