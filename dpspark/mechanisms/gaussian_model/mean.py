"""Private mean estimation (KLSU: KVMean, NaivePME Alg 5, PME Alg 6) on exact aggregates of singles.

KVMean (the zCDP Karwa-Vadhan estimator), run on all d coordinates of y = M x at once (NaivePME):
1. Histogram pass: per coordinate, bins of width w = sqrt(k) (k a public bound on the variance of each
   y_j) over [-R' - w, R' + w] (R' >= ||M|| R bounds every |E y_j|), ends clamped. One single moves one
   count per coordinate: l2 sensitivity sqrt(d). The argmax bin's centre is the coarse centre c_j.
2. Sum pass: sum over singles of clamp(y_j - c_j, -r, r) with r = sqrt(k) (sqrt(2 x) + 2),
   x = ln(2 d m / beta): when the argmax bin lies within 1.5 w of E y_j (w.h.p. at the n of KLSU
   Thm 4.1), a value is clamped only if it is sqrt(2 x) standard deviations from its mean, which
   happens for no coordinate of any single except w.p. <= beta (Gaussian tail, union bound over d m).
   l2 sensitivity r sqrt(d).
3. mu_y = c + noisy sum / noisy count; mu^ = M^-1 mu_y (post-processing).
NaivePME (Alg 5) splits rho over the d coordinates; composing the d coordinates' Gaussian noise as one
vector of l2 sensitivity sqrt(d) (resp. r sqrt(d)) costs exactly the same sum of rho. PME (Alg 6) takes M
from PPC (or M = Sigma^-1/2 for a known covariance, or Sigma^^-1/2 from PCE: post-processing).

Privacy: add/remove one unit changes at most one single; every pass's certified rho is recorded in the
run and they compose by adding. M, c and r are public or functions of earlier noisy outputs, quantised to
integers before a pass.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpspark.mechanisms.gaussian_model.covariance import Run
from dpspark.mechanisms.gaussian_model.fixed import IntMatrix, as_real, ceil_frac, ln_upper, quantise_matrix
from dpspark.noise.grid import sqrt_upper


def noisy_single_count(run: Run, rho: Fraction) -> int:
    """The number of singles plus discrete Gaussian noise (sensitivity 1), floored at 1."""
    exact = run.source.single_count()
    return max(1, run.noisy([exact], 1, rho, run.bounds.max_units, "single count")[0])


def spectral_upper(matrix: IntMatrix, bits: int) -> Fraction:
    """A public upper bound of ||M||_2: the Frobenius norm, rounded up exactly."""
    sq = sum(int(v) * int(v) for row in matrix for v in row)
    return sqrt_upper(Fraction(sq, 1 << (2 * bits)), 32)


def kv_mean(run: Run, matrix: IntMatrix, kappa: Fraction, rho: Fraction, count: int, label: str = "KVMean") -> np.ndarray:
    """NaivePME on y = M x (module docstring): the estimate of M mu in real units, at total budget rho."""
    d, yb = run.bounds.d, run.scales.y_bits
    one = 1 << yb
    root_k = sqrt_upper(kappa, 32)
    width = max(1, ceil_frac(root_k * one))
    reach = run.bounds.radius * spectral_upper(matrix, run.scales.matrix_bits) + root_k
    lo = -ceil_frac(reach * one)
    bins = ceil_frac(Fraction(-2 * lo, width)) + 1
    hist = run.source.bin_counts(matrix, [lo] * d, width, bins)
    noisy = run.noisy([int(v) for v in hist.reshape(-1)], d, rho / 2, run.bounds.max_units, f"{label} histogram")
    run.passes.append({"pass": f"{label} histogram", "bins": bins, "width": width, "rho": str(run.noises[-1].rho)})
    best = np.argmax(np.array(noisy, dtype=object).reshape(d, bins).astype(np.int64), axis=1)
    centres = [lo + int(k) * width + width // 2 for k in best]
    x = ln_upper(Fraction(2 * d * run.bounds.max_units) / run.bounds.beta)
    radius = ceil_frac((sqrt_upper(2 * x, 32) + 2) * root_k * one)
    sums = run.source.centred_sums(matrix, centres, radius)
    noisy_sums = run.noisy(sums, d * radius * radius, rho / 2, run.bounds.max_units * radius, f"{label} sums")
    run.passes.append({"pass": f"{label} sums", "radius": radius, "centres": centres, "rho": str(run.noises[-1].rho)})
    mean_y = (np.array(centres, dtype=np.float64) + np.array(noisy_sums, dtype=np.float64) / float(count)) / float(one)  # report
    return mean_y


def pme(run: Run, matrix: IntMatrix, kappa: Fraction, rho: Fraction, count_share: Fraction = Fraction(1, 50)) -> np.ndarray:
    """KLSU Alg 6 given the preconditioner M (from PPC, PCE or a known covariance): mu^ = M^-1 KVMean(M x)."""
    count = noisy_single_count(run, rho * count_share)
    mean_y = kv_mean(run, matrix, kappa, rho * (1 - count_share), count)
    return np.linalg.solve(as_real(matrix, run.scales.matrix_bits), mean_y)  # report: post-processing


def whitening(sigma: np.ndarray, bits: int) -> IntMatrix:
    """Sigma^-1/2 (eigenvalues floored at 1, as I <= Sigma is public), quantised: a mean preconditioner."""
    vals, vecs = np.linalg.eigh((sigma + sigma.T) / 2)  # report: post-processing
    return quantise_matrix((vecs / np.sqrt(np.maximum(vals, 1.0))) @ vecs.T, bits)  # report
