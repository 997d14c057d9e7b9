"""Private mean estimation on exact aggregates of the singles: l2 clipping to a ball around a private centre.

One step (:func:`l2_mean_step`, CoinPress's mean step, Biswas-Dong-Kamath-Ullman 2020, in exact integers):
with a public quantised preconditioner M and a public centre c, every single gives y = M x - M c,
ball-clipped to ||y|| <= r (:func:`~dpspark.mechanisms.gaussian_model.source.ball_clip`), and the step
releases sum y plus discrete Gaussian noise of l2 sensitivity r; mu^ = c + M^-1 (noisy sum / noisy count).

* :func:`coarse_mean`: M = A_0 = I / sqrt(kappa) (so M Sigma M^T <= I), c = 0, r = R ||A_0|| + g with
  g^2 the Laurent-Massart tail of chi^2_d at the per-row ROW_BETA_MEAN: only rows more than g from the mean
  (in these coordinates) are clipped.
* :func:`fine_mean`: M = Sigma^^-1/2 (the covariance estimate, eigenvalues floored at 1 as Sigma >= I),
  c = the coarse mean, r = g + (a bound on ||M (mu - c)||): about sqrt(d) instead of KVMean's per-coordinate
  clamp with l2 sensitivity r sqrt(d) - the 4.5-9x smaller sensitivity of issue 23.

Privacy: adding or removing one unit adds or removes at most one single, so the sum moves by one clipped
row, ||y'|| <= isqrt(T_int) <= sqrt(T_int) exactly: l2 sensitivity sqrt(T_int) (add/remove; the count has
sensitivity 1). M, c and r are public or functions of earlier noisy outputs (post-processing), quantised
to integers before the pass; every step's certified rho is recorded and they compose by adding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from math import isqrt

import numpy as np

from dpspark.mechanisms.gaussian_model.budget import CLIP_SHARE
from dpspark.mechanisms.gaussian_model.covariance import (ROW_BETA_MEAN, Run, centre_int, floored_inverse,
                                                          initial_matrix, noise_sd, tail_sq)
from dpspark.mechanisms.gaussian_model.fixed import IntMatrix, as_real, ceil_frac, quantise_matrix
from dpspark.noise.grid import sqrt_upper


@dataclass(frozen=True)
class Centre:
    """A private mean estimate and its public description: the matrix it was estimated in and the
    standard deviation of its noise per coordinate there (real units, divided by the count)."""

    value: np.ndarray
    matrix: IntMatrix
    sd: float


def l2_mean_step(run: Run, matrix: IntMatrix, centre: np.ndarray, radius: Fraction, rho: Fraction, count: int,
                 label: str) -> Centre:
    """One clipped-mean step (module docstring) at budget rho: the estimate of mu in real units."""
    sc = run.scales
    one = float(1 << sc.y_bits)  # report
    t_int = ceil_frac(radius * radius * (1 << (2 * sc.y_bits)))
    c_int = centre_int(matrix, centre, sc)
    sums = run.source.clipped_sums(matrix, c_int, t_int, with_count=True)
    # the rows clipped (sensitivity 1, CLIP_SHARE of the step's rho), drawn before the sums (clipping.py)
    clipped = run.noisy(sums[-1:], 1, rho * CLIP_SHARE, run.bounds.max_units, f"{label}: clipped rows count")[0]
    clip_noise = run.noises[-1]
    noisy = run.noisy(sums[:-1], t_int, rho * (1 - CLIP_SHARE), run.bounds.max_units * (isqrt(t_int) + 1), label)
    run.passes.append({"pass": label, "radius_sq": t_int, "centre": c_int, "rho": str(run.noises[-1].rho),
                       "clipped": clipped, "clipped_sigma": str(clip_noise.grid * clip_noise.sampler.sigma),
                       "clipped_rho": str(clip_noise.rho)})
    mean_y = (np.array(c_int, dtype=np.float64) + np.array(noisy, dtype=np.float64) / float(count)) / one  # report
    est = floored_inverse(matrix, sc.matrix_bits, mean_y)  # report: post-processing (A^-1 mean_y, never singular)
    return Centre(est, matrix, noise_sd(run.noises[-1]) / (float(count) * one))  # report


def coarse_mean(run: Run, rho: Fraction, count: int, matrix: IntMatrix | None = None) -> Centre:
    """The first step: M = A_0 (or a given public M with M Sigma M^T <= I), centre 0, r = R ||M|| + g."""
    b, bits = run.bounds, run.scales.matrix_bits
    m = matrix if matrix is not None else initial_matrix(b, bits)
    norm = min(1.0 + 2.0**-10, float(np.linalg.norm(as_real(m, bits), 2)))  # report: a public radius, capped (max_threshold)
    radius = b.radius * Fraction(math.ceil(norm * (1 << 20)), 1 << 20) + sqrt_upper(tail_sq(b.d, ROW_BETA_MEAN), 32)
    return l2_mean_step(run, m, np.zeros(b.d), radius, rho, count, "coarse mean")


def offset_bound(run: Run, matrix: IntMatrix, centre: Centre, count: int, k: float = 1.0) -> float:
    """A bound (w.h.p., about 1 - 2/1000) on ||M (mu - c)|| for the centre c: its sampling error sqrt(k) g'/sqrt(n)
    plus its noise, isotropic with sd s in its own coordinates C: ||M C^-1|| s g' (g'^2 the chi^2_d tail at 1/1000)."""
    bits = run.scales.matrix_bits
    g = math.sqrt(float(tail_sq(run.bounds.d, Fraction(1, 1000))))  # report
    cross = float(np.linalg.norm(as_real(matrix, bits) @ floored_inverse(centre.matrix, bits), 2))  # report
    return math.sqrt(k) * g / math.sqrt(max(count, 1)) + cross * centre.sd * g  # report


def fine_mean(run: Run, matrix: IntMatrix, centre: Centre, rho: Fraction, count: int, k: float = 1.0) -> np.ndarray:
    """The final step in M's coordinates around the coarse centre: r = sqrt(k) g + :func:`offset_bound`."""
    g = sqrt_upper(tail_sq(run.bounds.d, ROW_BETA_MEAN), 32)
    off = min(offset_bound(run, matrix, centre, count, k), float(g))  # report: capped at g (max_threshold)
    radius = g * min(sqrt_upper(Fraction(k), 32), Fraction(1)) + Fraction(math.ceil(off * (1 << 20)), 1 << 20)
    return l2_mean_step(run, matrix, centre.value, radius, rho, count, "mean").value


def whitening(sigma: np.ndarray, bits: int) -> IntMatrix:
    """Sigma^-1/2 (eigenvalues floored at 1, as I <= Sigma is public), quantised: a mean preconditioner."""
    vals, vecs = np.linalg.eigh((sigma + sigma.T) / 2)  # report: post-processing
    return quantise_matrix((vecs / np.sqrt(np.maximum(vals, 1.0))) @ vecs.T, bits)  # report
