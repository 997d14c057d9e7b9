"""The stated sample size of the Gaussian releases: the smallest n at which the stated error bound reaches alpha.

Derived for every release kind. ``gaussian_mean`` with a KNOWN covariance (kind ``gaussian_mean_known``) below;
``gaussian_covariance``, ``gaussian_mean`` with an estimated covariance and ``gaussian_learner`` in
:mod:`~dpspark.mechanisms.gaussian_model.sample_size_estimated`. Their whitening rounds use the TYPICAL spectral
error of a pass as their allowance (:func:`~dpspark.mechanisms.gaussian_model.covariance.spectral_allowance`), not a
w.h.p. bound; the derivation never assumes that allowance holds (route (b) of issue 23 §1): it carries a public
interval for the spectrum of A Sigma A^T through the rounds that holds for any preconditioner the rounds can
produce, and bounds the final pass's error given it. The tails are in :mod:`~dpspark.mechanisms.gaussian_model.tails`.
Privacy never depends on these modules: every sensitivity is the exact clip of its pass.

Model: n singles x_i ~ N(mu, Sigma) i.i.d., I <= Sigma <= kappa I, ||mu|| <= R; z_i = Sigma^-1/2 (x_i - mu).
The known-covariance release (:mod:`~dpspark.mechanisms.gaussian_model.mean`) uses M = Sigma^-1/2 quantised to
2^-a. Entrywise rounding gives ||M - Sigma^-1/2|| <= d 2^-(a+1), so the singular values of M Sigma^1/2 lie
in [1 - q, 1 + q] with q = sqrt(kappa) d 2^-(a+1). Write A = 1 + q. The events below each fail with
probability <= p:

1. count: |n~ - n| <= t_c, so n~ >= n_lo = n - t_c.
2. and 3. the coarse and the final sums' noise: ||N|| <= sqrt(d) t. Here t is the per-coordinate tail of the
   implemented discrete Gaussian, Pr[|Z| >= t] <= 2 exp(-t^2 / 2 sigma^2) plus the floor mass (CKS20 Cor. 9),
   with a union bound over d.
4. ||zbar|| <= sqrt(LM(d, p) / n), where LM(d, p) = d + 2 sqrt(d x) + 2x and x = ln(1/p) (Laurent-Massart).
5. and 6. clipping.
   - A row leaves a ball of radius r around a centre at distance delta from M mu only if A ||z_i|| + delta > r.
     It then moves by at most (A ||z_i|| + delta - r)_+.
   - The mean move B = (1/n) sum_i (A ||z_i|| - s)_+, with s = r - delta, is at most
     [n exp(theta (A sqrt d - s) + theta^2 A^2 / 2) + ln(1/p)] / (theta n) for any theta > 0. This is
     Chernoff's bound: ||z|| is 1-Lipschitz, so E exp(lam ||z||) <= exp(lam sqrt d + lam^2 / 2), and
     1 + u <= e^u. :func:`clip_move_bound` minimises it over a public grid of theta.
The input clamp (a coordinate leaving int32) adds its own probability, as in :func:`input_clamp_fail`. The
other events share the rest of beta equally.

Error of each step (centre c, radius r, the clipped sum S', its noise N, count n~):
  M mu^ - M xbar = N / n~ + S' (1/n~ - 1/n) - (S - S') / n,
where ||S' / n|| <= r and ||S - S'|| / n <= B. The coarse step has centre 0 and
r_0 = R ||M|| + g, with g^2 = LM(d, ROW_BETA_MEAN). Its distance from M mu is
  delta_0 <= A ||zbar|| + sqrt(d) t_0 / n_lo + r_0 t_c / n_lo + B_0,
plus the rounding of the centre, sqrt(d) 2^-(a+b). The final step's radius r(n~) is the algorithm's own:
g + min(offset_bound, g), decreasing in n~. The bound takes r(n + t_c) for the clip and r(n_lo) for the noise.
  ||Sigma^-1/2 (mu^ - mu)|| <= ||zbar|| + [sqrt(d) t_1 / n_lo + r t_c / n_lo + B_1] / (1 - q) + sqrt(d) 2^-(b+1).
Search: doubling then public bisection (:func:`_bisect`), as before.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import isqrt

from dpspark.mechanisms.gaussian_model.budget import CLIP_SHARE, SPLITS
from dpspark.mechanisms.gaussian_model.covariance import ROW_BETA_MEAN, max_threshold, tail_sq
from dpspark.mechanisms.gaussian_model.fixed import GaussianSpecError, Scales, ceil_frac, choose_scales, default_data_bits
from dpspark.mechanisms.gaussian_model.model_noise import VectorNoise, plan_noise
from dpspark.mechanisms.gaussian_model.sample_size_estimated import estimated_bounds
from dpspark.mechanisms.gaussian_model.tails import clip_move_bound
from dpspark.noise.grid import sqrt_upper

INF = math.inf  # report
#: public bisection range (units)
MAX_N = 1 << 40
#: the release kinds (gaussian_mean_known is gaussian_mean with a public covariance)
KINDS = ("gaussian_covariance", "gaussian_mean", "gaussian_mean_known", "gaussian_learner")
#: the kinds with a derived sample size (every kind: the estimated ones in :mod:`.sample_size_estimated`)
DERIVED = KINDS
#: what the plan and the release say in place of N for a kind without a derivation (none today)
NOT_DERIVED = "no tail-bound sample size is derived for this release kind"


def tested_beta(beta: Fraction, events: int = 1) -> Fraction:
    """beta / (4 events), exact: the failure share the plan reports for its tail events."""
    return Fraction(beta) / (4 * max(1, events))


def release_events(kind: str) -> int:
    """The number of tail events a release kind reports (one per clipped estimate: covariance, mean)."""
    if kind not in KINDS:
        raise GaussianSpecError(f"unknown release kind {kind!r} (known: {KINDS})")
    return 2 if kind in ("gaussian_mean", "gaussian_learner") else 1


def noise_tail(noise: VectorNoise, p: float) -> float:
    """t (integer units, grid included) with every |Z_i| <= t w.p. >= 1 - p; inf if the floor eats p."""
    s = noise.sampler
    floor = noise.dims * (s.floor + s.extra + 1) * s.m / 2.0**s.bits  # report
    if floor >= p / 2:
        return INF  # report
    return noise.grid * float(s.sigma) * math.sqrt(2.0 * math.log(2.0 * noise.dims / (p - floor)))  # report


def input_clamp_fail(d: int, units: int, kappa: Fraction, radius: Fraction, scales: Scales) -> float:
    """Pr[some coordinate of some row leaves the int32 range 2^(31-b)]: 2 d units exp(-s^2/2),
    s = (2^(31-b) - R) / sqrt(kappa) (Gaussian tail, union bound)."""
    s = (2.0 ** (31 - scales.data_bits) - float(radius)) / math.sqrt(float(kappa))  # report
    return 1.0 if s <= 0 else min(1.0, 2.0 * d * units * math.exp(-s * s / 2))  # report


def lm(d: int, p: float) -> float:
    """d + 2 sqrt(d x) + 2 x, x = ln(1/p): Pr[chi^2_d >= it] <= p (Laurent-Massart)."""
    x = math.log(1.0 / p)  # report
    return d + 2.0 * math.sqrt(d * x) + 2.0 * x  # report


def mean_known_bound(d: int, n: int, rho: Fraction, radius: Fraction, kappa: Fraction, scales: Scales, max_units: int,
                     beta: float) -> float:
    """The bound on ||Sigma^-1/2 (mu^ - mu)|| w.p. >= 1 - beta of the known-covariance mean at n singles; inf if none."""
    count_rho, coarse_rho, _, mean_rho = SPLITS["gaussian_mean_known"].parts(Fraction(rho))
    fail = input_clamp_fail(d, max_units, kappa, radius, scales)  # report
    if fail >= beta / 2:
        return INF  # report
    p = (beta - fail) / 6.0  # report
    yb = scales.y_bits
    one = float(1 << yb)  # report
    q = math.sqrt(float(kappa)) * d * 2.0 ** -(scales.matrix_bits + 1)  # report
    if q >= 0.5:
        return INF  # report
    amp = 1.0 + q  # report
    t_c = noise_tail(plan_noise(1, 1, count_rho, max_units), p)  # report
    n_lo = n - t_c  # report
    if n_lo <= 1:
        return INF  # report
    g = sqrt_upper(tail_sq(d, ROW_BETA_MEAN), 32)
    norm_m = min(1.0 + 2.0**-10, 1.0 + q)  # report: ||M|| <= 1 + q (Sigma >= I), capped as the algorithm caps it
    r0 = Fraction(radius) * Fraction(math.ceil(norm_m * (1 << 20)), 1 << 20) + g
    t0_int = ceil_frac(r0 * r0 * (1 << (2 * yb)))
    coarse = plan_noise(d, t0_int, coarse_rho * (1 - CLIP_SHARE), max_units * (isqrt(t0_int) + 1))
    t0 = noise_tail(coarse, p)  # report
    zbar = math.sqrt(lm(d, p) / n)  # report
    b0 = clip_move_bound(d, n, amp, float(g), p)  # report
    rounding = math.sqrt(d) * 2.0 ** -yb  # report
    delta0 = amp * zbar + math.sqrt(d) * t0 / (n_lo * one) + float(r0) * t_c / n_lo + b0 + rounding  # report
    # the final radius as the algorithm computes it from n~ (mean.offset_bound with k = 1, cross = ||M M^-1|| = 1)
    gp = math.sqrt(float(tail_sq(d, Fraction(1, 1000))))  # report
    sd0 = float(coarse.grid) * float(coarse.sampler.sigma) / one  # report: per coordinate, times 1/n~

    def r_of(count: float) -> float:
        off = min(gp / math.sqrt(count) + sd0 / count * gp, float(g))  # report
        return float(g) + math.ceil(off * (1 << 20)) / float(1 << 20)  # report

    r_clip, r_noise = r_of(n + t_c), r_of(n_lo)  # report
    t1_int = ceil_frac(Fraction(r_noise) ** 2 * (1 << (2 * yb)))
    fine = plan_noise(d, t1_int, mean_rho * (1 - CLIP_SHARE), max_units * (isqrt(t1_int) + 1))
    t1 = noise_tail(fine, p)  # report
    b1 = clip_move_bound(d, n, amp, r_clip - delta0, p)  # report
    priv = (math.sqrt(d) * t1 / (n_lo * one) + r_noise * t_c / n_lo + b1) / (1.0 - q)  # report
    return zbar + priv + math.sqrt(d) * 2.0 ** -(scales.data_bits + 1)  # report


def _bisect(bound, alpha: float, cap: int) -> int | None:  # type: ignore[no-untyped-def]
    """The smallest n (to 0.1 %) in [2, cap] with bound(n) <= alpha: doubling, then bisection (public loops)."""
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
        if hi - lo <= max(1, hi // 1000):
            break
        mid = (lo + hi) // 2
        if bound(mid) <= alpha:  # report
            hi = mid
        else:
            lo = mid
    return hi


def mechanism_scales(d: int, radius: Fraction, kappa: Fraction, max_units: int, scale_bits: int | None = None) -> Scales:
    """The scales the registered mechanisms choose for these public inputs."""
    return choose_scales(scale_bits or default_data_bits(radius, kappa), max_threshold(d, radius), 2 * max_units)


def release_error_bound(kind: str, n: int, d: int, beta: Fraction, rho: Fraction, kappa: Fraction, radius: Fraction,
                        scales: Scales, max_units: int) -> float:
    """The error bound of a release kind at n units, w.p. >= 1 - beta (inf when not derived or not reached)."""
    release_events(kind)
    if kind != "gaussian_mean_known":
        fail = input_clamp_fail(d, max_units, kappa, radius, scales)  # report
        cov, mean = estimated_bounds(kind, d, n, Fraction(rho), Fraction(radius), Fraction(kappa), scales, max_units,
                                     float(beta), fail)  # report
        return {"gaussian_covariance": cov, "gaussian_mean": mean}.get(kind, max(cov, mean))  # report
    return mean_known_bound(d, n, Fraction(rho), Fraction(radius), Fraction(kappa), scales, max_units, float(beta))  # report


def release_sample_size(kind: str, d: int, alpha: Fraction, beta: Fraction, rho: Fraction, kappa: Fraction,
                        radius: Fraction, *, max_units: int | None = None, buckets: int | None = None,
                        scale_bits: int | None = None, bounds_beta: Fraction | None = None) -> int | None:
    """N for a release kind (None when not derived, or not reached at ``max_units``); ``max_units`` None
    means the configuration max_units = n. ``buckets`` and ``bounds_beta`` do not enter the current bound."""
    release_events(kind)
    if kind not in DERIVED:
        return None

    def bound(n: int) -> float:
        mu = max_units or n
        try:
            sc = mechanism_scales(d, Fraction(radius), Fraction(kappa), mu, scale_bits)
            return release_error_bound(kind, n, d, Fraction(beta), Fraction(rho), Fraction(kappa), Fraction(radius), sc, mu)  # report
        except GaussianSpecError:
            return INF  # report

    return _bisect(bound, float(alpha), max_units or MAX_N)  # report
