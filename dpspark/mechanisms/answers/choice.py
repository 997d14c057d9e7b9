"""Which ``answers`` mechanism to pick: bounded noise's probability-1 bound next to the Gaussian's 95% bound.

Accuracy analysis only: nothing here draws noise or states privacy. Both answers mechanisms answer k
scalars of unit grid sensitivity (:mod:`dpspark.mechanisms.answers.mechanism`), so their error bars in
grid units compare directly:

* ``gaussian``: the exact simultaneous 95% bound t95 of the discrete Gaussian the ``gaussian`` mechanism
  would build at (k, epsilon, delta, max_units) - the same calibration, the same exact union bound;
* ``bounded_noise``: the probability-1 bound R = M - 1. The certified M comes from
  :func:`dpspark.noise.bounded_calibrate.calibrate` (seconds to a minute); where many k are compared
  (the crossing search, a dry run of the ``gaussian`` mechanism) the float model of the Chernoff
  certificate proposes M instead. That proposal is within about 1% of the certified Chernoff M from
  k of a few hundred on, and above the PLD-refined M at small k, so the crossing it gives is, if
  anything, late. Such lines are report-grade (``# report``).

At small k bounded noise is the noisier choice (its bound holds with probability 1, the Gaussian's
with 95%); the two bounds cross at a k that depends on (epsilon, delta) only weakly: k ~ 10^3 at
epsilon = 1, delta = 1e-6. From there on bounded noise wins on both counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpspark.exact import RationalLike, parse_rational

#: the answers' simultaneous failure probability of the "95%" bound
BETA95 = Fraction(1, 20)
#: the crossing search stops at this k (bounded noise needs M <= 2^24; beyond, the Gaussian is the choice)
K_MAX = 10**9


def gaussian_t95(dg: Any, k: int) -> int:
    """Least t <= T with k Pr[|Z| > t] <= 1/20 on the exact law of ``dg`` (union bound), or -1 if none."""
    lo, hi = 0, dg.T

    def tail(t: int) -> Fraction:
        inside = dg.scaled_cdf(t) - dg.scaled_cdf(-t - 1)
        return Fraction(dg.d - inside, dg.d)

    if k * tail(hi) > BETA95:
        return -1
    while lo < hi:  # bitlen(T) steps: a public bound
        mid = (lo + hi) // 2
        if k * tail(mid) <= BETA95:
            hi = mid
        else:
            lo = mid + 1
    return lo


def gaussian_bound(k: int, epsilon: RationalLike, delta: RationalLike, max_units: int) -> tuple[Fraction, int] | None:
    """(sigma, t95) of the ``gaussian`` answers mechanism at these parameters; None if it cannot calibrate."""
    from dpspark.mechanisms.answers.laws import gaussian_noise, largest_rho
    from dpspark.noise.dgauss import DGaussError

    eps, dlt = parse_rational(epsilon, "epsilon"), parse_rational(delta, "delta")
    try:
        dg = gaussian_noise(largest_rho(eps, dlt) / k, max_units)
    except DGaussError:
        return None
    t95 = gaussian_t95(dg, k)
    return (dg.sigma, t95) if t95 >= 0 else None


def bounded_proposal(k: int, epsilon: RationalLike, delta: RationalLike, family: str = "p2") -> int:
    """The float model's M for k 1-sensitive queries (a proposal of the Chernoff certificate, not certified)."""
    from dpspark.noise.bounded import family_power
    from dpspark.noise.bounded_calibrate import _FloatModel, _search_float

    eps, dlt = parse_rational(epsilon, "epsilon"), parse_rational(delta, "delta")
    model = _FloatModel(family_power(family), k, float(eps), 1)  # report: a proposal (accuracy analysis)
    return _search_float(model, dlt)[0]


@dataclass(frozen=True)
class Comparison:
    """The two mechanisms' error bars at one k, in grid units (multiply by a scalar's Delta_j)."""

    k: int
    #: bounded noise: every answer within R with probability 1 (None: no table-sized M)
    bounded_R: int | None
    #: True: R is from a certified calibration; False: the float model's proposal
    bounded_certified: bool
    #: the discrete Gaussian's simultaneous 95% bound (None: it cannot calibrate)
    gaussian_t95: int | None
    gaussian_sigma: Fraction | None

    @property
    def pick(self) -> str:
        """The mechanism with the smaller bar (bounded noise on a tie: its bound also holds always)."""
        if self.bounded_R is None:
            return "gaussian"
        if self.gaussian_t95 is None or self.bounded_R <= self.gaussian_t95:
            return "bounded_noise"
        return "gaussian"

    def words(self) -> str:
        """One line for a dry run or the calibrate command."""
        b = "none" if self.bounded_R is None else (
            f"{self.bounded_R}" + ("" if self.bounded_certified else " (estimate)"))
        g = "none" if self.gaussian_t95 is None else f"{self.gaussian_t95}"
        return (f"k = {self.k}: bounded_noise within +-{b} always; gaussian within +-{g} with probability 0.95 "
                f"(grid units); smaller: {self.pick}")

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"k": self.k, "bounded_noise_R": self.bounded_R, "bounded_noise_R_certified": self.bounded_certified,
                "gaussian_bound95": self.gaussian_t95,
                "gaussian_sigma": None if self.gaussian_sigma is None else str(self.gaussian_sigma),
                "smaller": self.pick}


def compare(k: int, epsilon: RationalLike, delta: RationalLike, *, max_units: int = 10**6, family: str = "p2",
            bounded_M: int | None = None) -> Comparison:
    """Both error bars at k. ``bounded_M``: a certified M already at hand (else the float model proposes one)."""
    from dpspark.noise.bounded import MAX_TABLE_M

    M = bounded_M if bounded_M is not None else bounded_proposal(k, epsilon, delta, family)
    g = gaussian_bound(k, epsilon, delta, max_units)
    return Comparison(k=k, bounded_R=M - 1 if M <= MAX_TABLE_M else None, bounded_certified=bounded_M is not None,
                      gaussian_t95=None if g is None else g[1], gaussian_sigma=None if g is None else g[0])


def crossing_k(epsilon: RationalLike, delta: RationalLike, *, max_units: int = 10**6, family: str = "p2",
               k_max: int = K_MAX) -> int | None:
    """The least k (to two significant digits) from which bounded noise's R is at most the Gaussian's t95.

    A search over k with a public number of steps: the decades 10^0 .. k_max, then a bisection on
    the mantissa to two significant digits. Report-grade (the bounded side is the float model's proposal).
    None if bounded noise is not ahead even at ``k_max``.
    """
    def ahead(k: int) -> bool:
        return compare(k, epsilon, delta, max_units=max_units, family=family).pick == "bounded_noise"

    if ahead(1):
        return 1
    lo, hi = 1, 10
    while not ahead(hi):  # at most log10(k_max) steps
        if hi >= k_max:
            return None
        lo, hi = hi, hi * 10
    step = max(1, lo // 10)  # two significant digits
    while hi - lo > step:  # about log2(90) steps
        mid = (lo + hi) // 2 // step * step
        if mid <= lo:
            break
        if ahead(mid):
            hi = mid
        else:
            lo = mid
    return hi
