"""Data-free sample sizes for PCE and PME: the n at which the stated error bound is <= alpha w.p. >= 1 - beta.

The bound is the one ``tests/unit/gaussian_model/test_gaussian_accuracy.py`` checks on realised runs, with every realised
quantity replaced by a public worst case. Floats are used throughout (accuracy analysis, ``# report``);
the noise plans are the mechanism's own exact :func:`~dpspark.mechanisms.gaussian_model.model_noise.plan_noise` objects.

Model: n units, each one row x ~ N(mu, Sigma), I <= Sigma <= kappa I, ||mu|| <= R; the keyed bucket hash
is modelled as a random function of the unit id (a PRF under a fresh key). Derivation, event by event
(each event fails with probability <= p, except the norm event whose probability is computed):

1. Pair count (McDiarmid). m = #buckets holding exactly two of the n units, B buckets. Moving one unit
   changes m by at most 2 (its old and its new bucket), so Pr[m <= E m - t] <= exp(-t^2 / (2 n)) and
   m >= m_lo = E m - sqrt(2 n ln(1/p)) with E m = n (n - 1) / (2 B) (1 - 1/B)^(n - 2). For B = n this is
   (n - 1)/2 (1 - 1/n)^(n-2) ~ n / (2e); for n < B (a fixed ``max_units``) E m ~ n^2 / (2B), increasing in n.
2. Noise (every noise vector of the run, CKS20 Cor. 9 plus the sampler's floor): the implemented discrete
   Gaussian has Pr[|Z| >= t] <= 2 exp(-t^2 / 2 sigma^2) + (f + e + 1) m / 2^bits, so with D coordinates
   every |Z_i| <= t = sigma sqrt(2 ln(2 D / (p - D floor))) except w.p. <= p (union bound).
3. Norm event (deterministic regularity of the sample, as in KLSU): every whitened pair z_i =
   Sigma^-1/2 D_i / sqrt 2 has ||z_i||^2 <= tau. Then ||A D_i||^2 <= 2 k tau for every preconditioner with
   A Sigma A^T <= k I, however A was chosen, and ||D_i|| <= sqrt(2 kappa tau) =: u. tau is the smallest
   over the passes of (sqrt(T_real) - sqrt(k) e)^2 / (2k) (T_real the pass's exact integer threshold,
   e = sqrt(d) 2^-b the fixed-point rounding of a pair), so no pair term is ever removed; its failure
   probability max_pairs exp(-x), x = ((sqrt(2 tau - d) - sqrt(d)) / 2)^2 (Laurent-Massart; at most
   max_pairs terms), is computed, plus 2 d max_units exp(-s^2/2), s = (2^(31-b) - R)/sqrt(kappa), for an
   input coordinate leaving int32 (the fixed-point clamp; s >= 12 at the default scale). Both use
   max_units, not n, so every event's share of beta is the same for all n <= max_units.
4. Gram (Vershynin 2012 Cor. 5.35): G = (1/m) sum z_i z_i^T has ||G - I|| <= 2 delta + delta^2,
   delta = (sqrt d + sqrt(2 ln(2/p))) / sqrt(m_lo); rounding adds r = (2 u e + e^2) / 2 (whitened,
   Sigma >= I). g := 2 delta + delta^2 + r (operator), Frobenius sqrt(d)(2 delta + delta^2) + r.

PPC (KLSU Alg 2-3, the variant of :mod:`dpspark.mechanisms.gaussian_model.covariance`): with lam I <= M = A Sigma A^T <= k I
and S~ = M + E (noisy, PSD-projected; ||E|| <= e_r), the round's error is
e_r <= k g + sqrt(2D) t G / (2 c_lo 4^(a+b)) + k (1 + g) t_c / (m_lo - t_c) (Gram, noise, noisy count
c >= c_lo = m_lo - t_c). The step P = V diag(min(1, sqrt(theta k / l_i))) V^T gives P M P <= (theta k + e_r) I;
quantising P A to 2^-a moves sqrt of every Rayleigh quotient by <= q = sqrt(kappa) d 2^-(a+1), so the upper
bound gamma k holds iff (sqrt(theta k + e_r) + q)^2 <= gamma k (else the bound is +inf at this n). Lower
bound (the case split of KLSU Lemma 3.10, made explicit): write a unit v = a + b over the eigenvectors
of S~ with l_i <= theta k (a) and > theta k (b), s = ||b||^2. Then v^T P M P v >= lam ((1 - s) + c s),
c = theta k / (k + e_r), and also >= theta k s + max(0, lam - e_r)(1 - s) - e_r; the new lam is the
min over s of the larger of the two (linear in s), then (sqrt(lam) - q)^2 after quantisation.

PCE final pass (Sigma^ = A^-1 S~ A^-T, W = Sigma^-1/2 A^-1, ||W||^2 <= 1/lam): the noisy matrix is
(m/c) S_emp + N (N the noise over 2c); PSD projection is non-expansive towards the PSD matrix (m/c) S_emp,
and W S_emp W^T is the whitened Gram, so ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F <=
sqrt(d)(2 delta + delta^2) + r + sqrt(2D) t G / (2 c_lo 4^(a+b) lam) + sqrt(d) (1 + g) t_c / (m_lo - t_c).
(The same split gives the PPC round's operator bound above: ||N||_F + |m/c - 1| ||S_emp||.)

PME (KLSU Alg 5-6, :mod:`dpspark.mechanisms.gaussian_model.mean`), n singles, preconditioner M with
lam I <= M Sigma M^T <= kup I (known covariance: lam, kup = (1 -+ q)^2), KVMean run at k:
* histogram: the bin holding E y_j has mass >= Phi(w/s) - 1/2 (s = sqrt(kup), width w), all bins farther
  than 1.5 w hold <= 2 (1 - Phi(1.5 w / s)) together; Hoeffding (d coordinates, 2 sides) plus the
  histogram noise t_h G: the argmax bin centre lies within 2w of E y_j once the gap exceeds
  2 sqrt(n ln(1/p') / 2) + 2 t_h G;
* no clamp: |y_j - E y_j| <= r - 2w for all d n values except w.p. 2 d max_units exp(-(r - 2w)^2 / (2 kup))
  (computed; plus the int32 input clamp of item 3);
* error: ||Sigma^-1/2 (mu^ - mu)|| <= L + sqrt(d) 2^-(b+1) + lam^-1/2 [sqrt(d) t_s G / (2^(a+b) (n - t_c))
  + t_c / (n - t_c) (sqrt(d) 2w + sqrt(kup) L)], L = sqrt((d + 2 sqrt(d x) + 2 x) / n), x = ln(1/p)
  (Laurent-Massart on n ||Sigma^-1/2 (xbar - mu)||^2 ~ chi^2_d).

Adaptivity: items 3 and 4 are conditions on the sample alone, so the PPC and PCE bounds hold for every
preconditioner however it was chosen from earlier noisy outputs - in particular for the final pass
reusing PPC's pairs (no fresh half is needed for the covariance bound).

Search: doubling n = 4, 8, ... (at most 39 steps) to the first n whose bound is <= alpha, then a public
bisection (at most 64 steps, 0.1 % resolution, rounded up); the returned N's bound is <= alpha. For a
fixed max_units and buckets B >= n, every term is monotone in n on [N, max_units] (the failure shares use
max_units; m_lo grows with n for n <= B since E m ~ n^2 / 2B there), so "once n >= N" holds
(tests/unit/gaussian_model/test_gaussian_accuracy.py checks it on a grid). With an estimated preconditioner (PPC, or PCE's Sigma^) M
depends on the pairs, so the mean then reads only the unpaired singles (rows alone in their bucket; no
pair holds their units), independent of M under i.i.d. rows - KLSU's fresh half. Their number is at least
n (1 - 1/B)^(n-1) - sqrt(2 n ln(4/beta')) w.p. >= 1 - beta'/4 (McDiarmid, one unit moves it by <= 2;
:func:`alone_count_lower`), and PME's bound above is taken at that count with the other 3/4 of beta'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable
from statistics import NormalDist

from dpspark.mechanisms.gaussian_model.covariance import GAMMA, THETA, CovarianceSplit, final_kappa, kappa_schedule
from dpspark.mechanisms.gaussian_model.fixed import (GaussianSpecError, Scales, ceil_frac, chi2_threshold, choose_scales,
                                    default_data_bits, ln_upper)
from dpspark.mechanisms.gaussian_model.model_noise import VectorNoise, plan_noise
from dpspark.noise.grid import sqrt_upper

INF = math.inf  # report
#: public bisection range (units)
MAX_N = 1 << 40
#: PME count share (as :func:`dpspark.mechanisms.gaussian_model.mean.pme`)
MEAN_COUNT_SHARE = Fraction(1, 50)


@dataclass(frozen=True)
class Preconditioner:
    """A bound on the preconditioned covariance, lam I <= M Sigma M^T <= kup I, and the public k KVMean uses."""

    lam: float
    kup: float
    k: Fraction
    #: rows of M: ||M||_F <= this (bins of KVMean's histogram)
    frobenius: float


def tested_beta(beta: Fraction, events: int = 1) -> Fraction:
    """The norm-test / clamp beta for a target beta: beta / (4 events), exact.

    One event covers every norm test of a covariance run (the regularity event of the module docstring,
    item 3), one the mean's clamp; each then fails w.p. about <= beta / 4, leaving >= beta / 2 for the rest.
    """
    return Fraction(beta) / (4 * max(1, events))


def pair_count_lower(n: int, buckets: int, p: float) -> float:
    """m_lo: #buckets with exactly two of n units in B buckets is >= this w.p. >= 1 - p (McDiarmid, docstring 1)."""
    if n < 2:
        return 0.0  # report
    mean = n * (n - 1) / (2.0 * buckets) * math.exp((n - 2) * math.log1p(-1.0 / buckets)) if buckets > 1 else 0.0  # report
    return mean - math.sqrt(2.0 * n * math.log(1.0 / p))  # report


def alone_count_lower(n: int, buckets: int, p: float) -> float:
    """#units alone in their bucket (n units, B buckets) is >= this w.p. >= 1 - p: E = n (1 - 1/B)^(n-1), and
    moving one unit's bucket changes the count by <= 2 (McDiarmid: deviation sqrt(2 n ln(1/p)))."""
    if n < 1:
        return 0.0  # report
    mean = n * math.exp((n - 1) * math.log1p(-1.0 / buckets)) if buckets > 1 else 0.0  # report
    return mean - math.sqrt(2.0 * n * math.log(1.0 / p))  # report


def _unpaired_mean_bound(d: int, n: int, buckets: int, rho: Fraction, radius: Fraction, pre: "Preconditioner",
                         scales: Scales, max_units: int, bounds_beta: Fraction, beta: float, kappa: Fraction) -> float:
    """PME's bound when it reads only the unpaired singles (an estimated preconditioner): a quarter of beta
    for their count's lower bound, the rest for :func:`mean_error_bound` at that count."""
    singles = math.floor(alone_count_lower(n, buckets, beta / 4))  # report
    if singles < 2:
        return INF  # report
    return mean_error_bound(d, singles, rho, radius, pre, scales, max_units, bounds_beta, 3 * beta / 4, kappa)  # report


def noise_tail(noise: VectorNoise, p: float) -> float:
    """t (integer units, grid included) with every |Z_i| <= t w.p. >= 1 - p (docstring 2); inf if the floor eats p."""
    s = noise.sampler
    floor = noise.dims * (s.floor + s.extra + 1) * s.m / 2.0**s.bits  # report
    if floor >= p / 2:
        return INF  # report
    return noise.grid * float(s.sigma) * math.sqrt(2.0 * math.log(2.0 * noise.dims / (p - floor)))  # report


def input_clamp_fail(d: int, units: int, kappa: Fraction, radius: Fraction, scales: Scales) -> float:
    """Pr[some coordinate of some row leaves the int32 range 2^(31-b)]: 2 d units exp(-s^2/2),
    s = (2^(31-b) - R) / sqrt(kappa) (Gaussian tail, union bound; s >= 12 at the default scale)."""
    s = (2.0 ** (31 - scales.data_bits) - float(radius)) / math.sqrt(float(kappa))  # report
    return 1.0 if s <= 0 else min(1.0, 2.0 * d * units * math.exp(-s * s / 2))  # report


def _chi2_fail(tau: float, d: int) -> float:
    """Pr[chi^2_d > tau] <= exp(-x) with d + 2 sqrt(d x) + 2x = tau (Laurent-Massart), 1 if tau <= d."""
    if tau <= d:  # report
        return 1.0  # report
    x = ((math.sqrt(2.0 * tau - d) - math.sqrt(d)) / 2.0) ** 2  # report
    return math.exp(-x)  # report


def mechanism_scales(d: int, radius: Fraction, kappa: Fraction, max_units: int, bounds_beta: Fraction,
                     scale_bits: int | None = None) -> Scales:
    """The scales the registered mechanisms choose for these public inputs (:mod:`dpspark.mechanisms.gaussian_model.mechanism`)."""
    b = scale_bits or default_data_bits(radius, kappa)
    return choose_scales(b, 2 * kappa * chi2_threshold(d, max_units, bounds_beta), max_units)


@lru_cache(maxsize=4096)
def _pass_noise(d: int, k: Fraction, rho: Fraction, max_pairs: int, beta: Fraction, scales: Scales) -> tuple[VectorNoise, int]:
    t_int = scales.threshold_int(2 * k * chi2_threshold(d, max_pairs, beta))
    return plan_noise(d * (d + 1) // 2, t_int * t_int, rho, max_pairs * t_int), t_int


@lru_cache(maxsize=4096)
def _count_noise(rho: Fraction, max_abs: int) -> VectorNoise:
    return plan_noise(1, 1, rho, max_abs)


@dataclass(frozen=True)
class CovariancePlan:
    """The public inputs of one PCE (or PPC) run, as the mechanism sets them."""

    d: int
    rho: Fraction
    kappa: Fraction
    bounds_beta: Fraction
    scales: Scales
    max_units: int
    buckets: int
    split: CovarianceSplit = CovarianceSplit()
    radius: Fraction = Fraction(0)


def _events(plan: CovariancePlan, n: int, beta: float, extra_events: int) -> tuple[float, float] | None:
    """(p per event, norm-event failure) with the norm event's exact share; None when it eats beta."""
    d, sc = plan.d, plan.scales
    max_pairs = max(1, plan.max_units // 2)
    e = math.sqrt(d) * 2.0 ** -sc.data_bits  # report
    taus = []  # report
    for k in kappa_schedule(plan.kappa) + [final_kappa(plan.kappa)]:
        t_int = sc.threshold_int(2 * k * chi2_threshold(d, max_pairs, plan.bounds_beta))
        t_real = t_int / 4.0**sc.y_bits  # report
        taus.append(max(0.0, math.sqrt(t_real) - math.sqrt(float(k)) * e) ** 2 / (2.0 * float(k)))  # report
    # at most max_pairs terms whatever n is: the share is the same for every n <= max_units (monotone N)
    fail = min(1.0, max_pairs * _chi2_fail(min(taus), d) + input_clamp_fail(d, plan.max_units, plan.kappa, plan.radius, sc))  # report
    if fail >= beta / 2:  # report
        return None
    return (beta - fail) / extra_events, min(taus)  # report


def ppc_guarantee(plan: CovariancePlan, n: int, p: float, tau: float, ppc_rho: Fraction,
                  count_rho: Fraction) -> tuple[float, float, float, float, float, float]:
    """(lam, k', g, c_lo, m_lo, t_c) after PPC's schedule at n units (module docstring); lam = 0 when it fails."""
    d, sc = plan.d, plan.scales
    max_pairs = max(1, plan.max_units // 2)
    m_lo = pair_count_lower(n, plan.buckets, p)  # report
    t_c = noise_tail(_count_noise(count_rho, max_pairs), p)  # report
    if m_lo - t_c <= 1:  # report
        return 0.0, float(plan.kappa), INF, 0.0, m_lo, t_c  # report
    c_lo = m_lo - t_c  # report
    e = math.sqrt(d) * 2.0 ** -sc.data_bits  # report
    u = math.sqrt(2.0 * float(plan.kappa) * tau)  # report
    delta = (math.sqrt(d) + math.sqrt(2.0 * math.log(2.0 / p))) / math.sqrt(m_lo)  # report
    g = 2 * delta + delta * delta + (2 * u * e + e * e) / 2  # report
    one = 4.0**sc.y_bits  # report
    q = math.sqrt(float(plan.kappa)) * d * 2.0 ** -(sc.matrix_bits + 1)  # report
    big_d = d * (d + 1) // 2
    sched = kappa_schedule(plan.kappa)
    lam = 1.0  # report
    theta, gamma = float(THETA), float(GAMMA)  # report
    for k in sched:
        noise, _ = _pass_noise(d, k, ppc_rho / len(sched), max_pairs, plan.bounds_beta, sc)
        t = noise_tail(noise, p)  # report
        kf = float(k)  # report
        err = kf * g + math.sqrt(2 * big_d) * t / (2 * c_lo * one) + kf * (1 + g) * t_c / c_lo  # report
        if (math.sqrt(theta * kf + err) + q) ** 2 > gamma * kf:  # report
            return 0.0, float(final_kappa(plan.kappa)), g, c_lo, m_lo, t_c  # report
        c = min(1.0, theta * kf / (kf + err))  # report
        b1 = lambda s: lam * ((1 - s) + c * s)  # noqa: E731  # report
        b2 = lambda s: theta * kf * s + max(0.0, lam - err) * (1 - s) - err  # noqa: E731  # report
        if b2(0.0) >= b1(0.0):  # report
            new = b2(0.0)  # report
        elif b2(1.0) <= b1(1.0):  # report
            new = b1(1.0)  # report
        else:  # the two lines cross at s*
            s0 = (b1(0.0) - b2(0.0)) / ((b2(1.0) - b2(0.0)) - (b1(1.0) - b1(0.0)))  # report
            new = b1(s0)  # report
        lam = max(0.0, math.sqrt(max(0.0, new)) - q) ** 2  # report
    return lam, float(final_kappa(plan.kappa)), g, c_lo, m_lo, t_c  # report


def covariance_error_bound(plan: CovariancePlan, n: int, beta: float) -> float:
    """The Frobenius bound on ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F that holds w.p. >= 1 - beta at n units (inf if none)."""
    rounds = len(kappa_schedule(plan.kappa))
    events = _events(plan, n, beta, rounds + 4)  # count, pairs, Gram, rounds, final
    if events is None:
        return INF  # report
    p, tau = events  # report
    count_rho, ppc_rho, final_rho = plan.split.parts(plan.rho, rounds)
    lam, kf, g, c_lo, m_lo, t_c = ppc_guarantee(plan, n, p, tau, ppc_rho, count_rho)  # report
    if lam <= 0 or not math.isfinite(g):  # report
        return INF  # report
    d, sc = plan.d, plan.scales
    max_pairs = max(1, plan.max_units // 2)
    noise, _ = _pass_noise(d, final_kappa(plan.kappa), final_rho, max_pairs, plan.bounds_beta, sc)
    t = noise_tail(noise, p)  # report
    delta = (math.sqrt(d) + math.sqrt(2.0 * math.log(2.0 / p))) / math.sqrt(m_lo)  # report
    r = g - 2 * delta - delta * delta  # report: the rounding part of g
    big_d = d * (d + 1) // 2
    priv = math.sqrt(2 * big_d) * t / (2 * c_lo * 4.0**sc.y_bits) / lam + math.sqrt(d) * (1 + g) * t_c / c_lo  # report
    return math.sqrt(d) * (2 * delta + delta * delta) + r + priv  # report


def _bisect(bound, alpha: float, cap: int) -> int | None:  # type: ignore[no-untyped-def]
    """The smallest n (to 0.1 %) in [2, cap] with bound(n) <= alpha: doubling, then bisection (public loops).

    None when no power of two up to ``cap`` (nor ``cap``) meets alpha.
    """
    lo, hi = 2, None
    for j in range(2, 41):  # public: at most 39 doublings
        cand = min(1 << j, cap)
        if bound(cand) <= alpha:  # report
            hi = cand
            break
        lo = cand
        if cand == cap:
            break
    if hi is None:
        return None
    for _ in range(64):  # public bound: hi - lo halves every step
        if hi - lo <= max(1, hi // 1000):  # 0.1 % resolution: round up
            break
        mid = (lo + hi) // 2
        if bound(mid) <= alpha:  # report
            hi = mid
        else:
            lo = mid
    return hi


def covariance_sample_size(d: int, alpha: Fraction, beta: Fraction, rho: Fraction, kappa: Fraction, *,
                           radius: Fraction = Fraction(0), max_units: int | None = None, buckets: int | None = None,
                           bounds_beta: Fraction | None = None, scale_bits: int | None = None,
                           matrix_bits: int | None = None, split: CovarianceSplit = CovarianceSplit()) -> int | None:
    """N such that PCE at rho has ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F <= alpha w.p. >= 1 - beta (docstring).

    ``max_units``/``buckets`` fixed: N <= max_units or None. ``max_units`` None: the self-consistent
    configuration max_units = buckets = n (what a release with max_units = N does). ``bounds_beta``: the
    norm-test beta (default :func:`tested_beta`); scales as the mechanism chooses them unless given.
    """
    bb = bounds_beta if bounds_beta is not None else tested_beta(beta, 1)

    def plan_at(n: int) -> CovariancePlan:
        mu = max_units or n
        sc = mechanism_scales(d, radius, kappa, mu, bb, scale_bits)
        if matrix_bits is not None:
            sc = Scales(sc.data_bits, matrix_bits)
        return CovariancePlan(d, Fraction(rho), Fraction(kappa), bb, sc, mu, buckets or mu, split, Fraction(radius))

    def bound(n: int) -> float:
        try:
            return covariance_error_bound(plan_at(n), n, float(beta))  # report
        except GaussianSpecError:
            return INF  # report

    return _bisect(bound, float(alpha), max_units or MAX_N)  # report


# ------------------------------------------------------------------------------------------------
# mean
# ------------------------------------------------------------------------------------------------


def known_preconditioner(d: int, kappa: Fraction, matrix_bits: int) -> Preconditioner:
    """M = Sigma^-1/2 quantised to 2^-a: (1 - q)^2 I <= M Sigma M^T <= (1 + q)^2 I, q = sqrt(kappa) d 2^-(a+1); k = 1."""
    q = math.sqrt(float(kappa)) * d * 2.0 ** -(matrix_bits + 1)  # report
    return Preconditioner((1 - q) ** 2, (1 + q) ** 2, Fraction(1), math.sqrt(d) + d * 2.0 ** -(matrix_bits + 1))  # report


def mean_error_bound(d: int, n: int, rho: Fraction, radius: Fraction, pre: Preconditioner, scales: Scales,
                     max_units: int, bounds_beta: Fraction, beta: float, kappa: Fraction,
                     count_share: Fraction = MEAN_COUNT_SHARE) -> float:
    """The bound on ||Sigma^-1/2 (mu^ - mu)||_2 w.p. >= 1 - beta for PME at n singles (module docstring); inf if none."""
    yb = scales.y_bits
    one = float(1 << yb)  # report
    count = _count_noise(rho * count_share, max_units)
    rest = rho * (1 - count_share)
    # the histogram and the clamp radius exactly as kv_mean builds them (data-free)
    root_k = sqrt_upper(pre.k, 32)
    width = max(1, ceil_frac(root_k * (1 << yb)))
    fro = Fraction(math.ceil(pre.frobenius * (1 << 20)), 1 << 20)  # report: upper bound of ||M||_F (bins only)
    reach = radius * fro + root_k
    lo = -ceil_frac(reach * (1 << yb))
    bins = ceil_frac(Fraction(-2 * lo, width)) + 1
    hist = _count_noise_vec(d * bins, d, rest / 2, max_units)
    x_clamp = ln_upper(Fraction(2 * d * max_units) / bounds_beta)
    radius_int = ceil_frac((sqrt_upper(2 * x_clamp, 32) + 2) * root_k * (1 << yb))
    sums = _count_noise_vec(d, d * radius_int * radius_int, rest / 2, max_units * radius_int)
    s = math.sqrt(pre.kup)  # report
    gap_room = (radius_int - 2 * width) / one  # report
    if gap_room <= 0:
        return INF  # report
    clamp_fail = min(1.0, 2.0 * d * max_units * math.exp(-gap_room**2 / (2 * pre.kup))  # report
                     + input_clamp_fail(d, max_units, kappa, radius, scales))  # report: max_units >= n (monotone N)
    if clamp_fail >= beta / 2:  # report
        return INF  # report
    p = (beta - clamp_fail) / (2 * d + 4)  # report: 2d Hoeffding, count, histogram, sums, Laurent-Massart
    w = width / one  # report
    near = NormalDist().cdf(w / s) - 0.5  # report
    far = 2 * (1 - NormalDist().cdf(1.5 * w / s))  # report
    t_c, t_h, t_s = noise_tail(count, p), noise_tail(hist, p), noise_tail(sums, p)  # report
    if (near - far) * n <= 2 * math.sqrt(n * math.log(1 / p) / 2) + 2 * t_h or n - t_c <= 1:  # report
        return INF  # report
    x = math.log(1 / p)  # report
    lm = math.sqrt((d + 2 * math.sqrt(d * x) + 2 * x) / n)  # report
    ratio = t_c / (n - t_c)  # report
    priv = (math.sqrt(d) * t_s / (one * (n - t_c)) + ratio * (math.sqrt(d) * 2 * w + s * lm)) / math.sqrt(pre.lam)  # report
    return lm + math.sqrt(d) * 2.0 ** -(scales.data_bits + 1) + priv  # report


@lru_cache(maxsize=4096)
def _count_noise_vec(dims: int, l2_sq: int, rho: Fraction, max_abs: int) -> VectorNoise:
    return plan_noise(dims, l2_sq, rho, max_abs)


def mean_sample_size(d: int, alpha: Fraction, beta: Fraction, rho: Fraction, kappa: Fraction, radius: Fraction, *,
                     max_units: int | None = None, bounds_beta: Fraction | None = None, scale_bits: int | None = None,
                     matrix_bits: int | None = None) -> int | None:
    """N such that PME with a KNOWN covariance at rho has ||Sigma^-1/2 (mu^ - mu)|| <= alpha w.p. >= 1 - beta.

    As :func:`covariance_sample_size`: ``max_units`` None means max_units = n; bounds_beta defaults to
    :func:`tested_beta` (one clamp pass).
    """
    bb = bounds_beta if bounds_beta is not None else tested_beta(beta, 1)

    def bound(n: int) -> float:
        mu = max_units or n
        try:
            sc = mechanism_scales(d, radius, kappa, mu, bb, scale_bits)
            if matrix_bits is not None:
                sc = Scales(sc.data_bits, matrix_bits)
            pre = known_preconditioner(d, kappa, sc.matrix_bits)
            return mean_error_bound(d, n, Fraction(rho), Fraction(radius), pre, sc, mu, bb, float(beta), Fraction(kappa))  # report
        except GaussianSpecError:
            return INF  # report

    return _bisect(bound, float(alpha), max_units or MAX_N)  # report


# ------------------------------------------------------------------------------------------------
# the registered releases
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Release:
    """One registered release's error bound at n units (beta as a float) and its tested events."""

    bound: Callable[..., float]
    events: int


def _covariance_release(plan: CovariancePlan, n: int, b: float) -> float:
    """PCE at rho (Frobenius bound)."""
    return covariance_error_bound(plan, n, b)  # report


def _mean_known_release(plan: CovariancePlan, n: int, b: float) -> float:
    """PME at rho with M = Sigma^-1/2 (Mahalanobis bound), reading every single."""
    pre = known_preconditioner(plan.d, plan.kappa, plan.scales.matrix_bits)
    return mean_error_bound(plan.d, n, plan.rho, plan.radius, pre, plan.scales, plan.max_units, plan.bounds_beta, b,  # report
                            plan.kappa)


def _quantisation(plan: CovariancePlan) -> float:
    return math.sqrt(float(plan.kappa)) * plan.d * 2.0 ** -(plan.scales.matrix_bits + 1)  # report: quantisation of M


def _mean_estimated_release(plan: CovariancePlan, n: int, b: float) -> float:
    """PPC at rho/2 (1/50 of it the count), PME at rho/2 with its preconditioner (k = k'), unpaired singles."""
    half = plan.rho / 2
    rounds = len(kappa_schedule(plan.kappa))
    events = _events(plan, n, b / 2, rounds + 3)
    if events is None:
        return INF  # report
    lam, kf, _, _, _, _ = ppc_guarantee(plan, n, events[0], events[1], half - half / 50, half / 50)  # report
    if lam <= 0:  # report
        return INF  # report
    pre = Preconditioner(lam, kf, final_kappa(plan.kappa),
                         math.sqrt(plan.d) * (1 + (rounds + 1) * plan.d * 2.0 ** -plan.scales.matrix_bits))  # report
    return _unpaired_mean_bound(plan.d, n, plan.buckets, plan.rho - half, plan.radius, pre, plan.scales,  # report
                                plan.max_units, plan.bounds_beta, b / 2, plan.kappa)


def _learner_release(plan: CovariancePlan, n: int, b: float) -> float:
    """PCE at 3/4 rho (beta/2), then PME at rho/4 with M = Sigma^^-1/2 on the unpaired singles: eigenvalues
    of M Sigma M^T lie in [1/(1 + 2 a_c), 1/(1 - a_c)] when PCE's error is a_c (the 2 because whitening()
    floors Sigma^'s eigenvalues at 1; needs a_c <= 1/2 so k = 4 holds); the larger of the two bounds."""
    cov_rho = plan.rho * Fraction(3, 4)
    cplan = CovariancePlan(plan.d, cov_rho, plan.kappa, plan.bounds_beta, plan.scales, plan.max_units, plan.buckets,
                           radius=plan.radius)
    a_c = covariance_error_bound(cplan, n, b / 2)  # report
    if a_c > 0.5:
        return INF  # report
    q = _quantisation(plan)  # report
    lo, hi = 1 / (1 + 2 * a_c), 1 / (1 - a_c)  # report
    pre = Preconditioner(max(0.0, math.sqrt(lo) - q) ** 2, (math.sqrt(hi) + q) ** 2, Fraction(4),  # report
                         math.sqrt(plan.d) + plan.d * 2.0 ** -(plan.scales.matrix_bits + 1))  # report
    if pre.kup > 4:
        return INF  # report
    return max(a_c, _unpaired_mean_bound(plan.d, n, plan.buckets, plan.rho - cov_rho, plan.radius, pre, plan.scales,  # report
                                         plan.max_units, plan.bounds_beta, b / 2, plan.kappa))


#: the registered releases :func:`release_error_bound` knows, by mechanism name (gaussian_mean_known is
#: gaussian_mean with a public covariance)
RELEASES: dict[str, _Release] = {
    "gaussian_covariance": _Release(_covariance_release, 1),
    "gaussian_mean": _Release(_mean_estimated_release, 2),
    "gaussian_mean_known": _Release(_mean_known_release, 1),
    "gaussian_learner": _Release(_learner_release, 2),
}
KINDS = tuple(RELEASES)


def _release(kind: str) -> _Release:
    try:
        return RELEASES[kind]
    except KeyError:
        raise GaussianSpecError(f"unknown release kind {kind!r} (known: {KINDS})") from None


def release_events(kind: str) -> int:
    """The number of tested events (norm / clamp) of a release kind, for :func:`tested_beta`."""
    return _release(kind).events


def release_error_bound(kind: str, n: int, d: int, beta: Fraction, rho: Fraction, kappa: Fraction, radius: Fraction,
                        scales: Scales, max_units: int, buckets: int, bounds_beta: Fraction) -> float:
    """The largest error bound of a registered release at n units, w.p. >= 1 - beta (inf if none); one
    function per release in :data:`RELEASES`."""
    plan = CovariancePlan(d, rho, kappa, bounds_beta, scales, max_units, buckets, radius=radius)
    return _release(kind).bound(plan, n, float(beta))  # report


def release_sample_size(kind: str, d: int, alpha: Fraction, beta: Fraction, rho: Fraction, kappa: Fraction,
                        radius: Fraction, *, max_units: int | None = None, buckets: int | None = None,
                        scale_bits: int | None = None, bounds_beta: Fraction | None = None) -> int | None:
    """N for a registered release (:func:`release_error_bound`): fixed ``max_units``/``buckets`` (None: = n)."""
    bb = bounds_beta if bounds_beta is not None else tested_beta(beta, release_events(kind))

    def bound(n: int) -> float:
        mu = max_units or n
        try:
            sc = mechanism_scales(d, radius, kappa, mu, bb, scale_bits)
            return release_error_bound(kind, n, d, beta, Fraction(rho), Fraction(kappa), Fraction(radius), sc, mu,  # report
                                       buckets or mu, bb)
        except GaussianSpecError:
            return INF  # report

    return _bisect(bound, float(alpha), max_units or MAX_N)  # report
