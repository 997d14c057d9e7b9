"""Private covariance estimation on exact aggregates of the singles, centred on a private mean.

The steps (driver side; every aggregate an exact integer from a
:class:`~dpspark.mechanisms.gaussian_model.source.GaussianSource`, every noise addition certified):

* :func:`noisy_count` - the number of singles (units with one row) plus discrete Gaussian noise.
* a private centre mu~ first (:func:`dpspark.mechanisms.gaussian_model.mean.coarse_mean`), then rounds
  r = 1..t+1 of :func:`covariance_pass`: with the public quantised preconditioner A_r, every single gives
  y = A_r (x - mu~), ball-clipped to ||y||^2 <= T_r (:func:`~dpspark.mechanisms.gaussian_model.source.ball_clip`,
  exact integers), and the pass releases the upper triangle of sum y y^T plus noise.
* between rounds (KLSU's recursive preconditioning, with CoinPress's whitening step, Biswas-Dong-Kamath-
  Ullman 2020): A_{r+1} = (Z_r + e_r I)^-1/2 A_r, Z_r the noisy estimate of A_r Sigma A_r^T and e_r an
  allowance for its spectral error (:func:`spectral_allowance`). If ||Z_r - A_r Sigma A_r^T|| <= e_r then
  A_{r+1} Sigma A_{r+1}^T <= I and >= lam / (lam + 2 e_r) I (lam the lower bound before): one round takes
  a condition number c to at most 1 + 2 e_r c. The number of rounds t is public (:func:`round_schedule`:
  from kappa, d, max_units and the budget), so kappa = 1 spends nothing on rounds it does not need.
* Sigma^ = A^-1 Z A^-T from the last pass (post-processing).

Why this uses far more data than pairs: every single enters every pass (about all n units instead of the
0.18 n pairs of keyed buckets of two); centring on the private mean replaces pairing.

Privacy (rho-zCDP under adding or removing one unit; Bun-Steinke): adding or removing a unit adds or
removes at most one single (:mod:`~dpspark.mechanisms.gaussian_model.source`), hence one term y y^T with
||y||^2 <= T_int (the exact clip). The pass releases v = (sum y_i^2 for every i; 2 sum y_i y_j for i < j),
whose change ||v||^2 = sum y_i^4 + 4 sum_{i<j} y_i^2 y_j^2 = 2 ||y||^4 - sum y_i^4 <= (2 - 1/d) ||y||^4
(sum y_i^4 >= ||y||^4 / d) <= (2 - 1/d) T_int^2 =: l2_sq, an exact integer bound (:func:`pass_l2_sq`).
Noising v with equal sigma gives the off-diagonal entries half the noise of the diagonal (the Frobenius
noise of the symmetric matrix is about 1/sqrt 2 of equal noise on the upper triangle). The count has
sensitivity 1. A_r, mu~, T_r and e_r are functions of public inputs and earlier noisy outputs only
(post-processing, quantised to integers BEFORE a pass), so adaptivity costs nothing; the passes compose by
adding their certified rho (Bun-Steinke Lemma 2.3). No privacy claim depends on the data being Gaussian:
the thresholds only trade clipping bias against noise.

Post-processing (floats allowed, ``# report``): scaling the noisy integers to reals, eigendecompositions,
PSD projection, the preconditioner update and inversion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.mechanisms.gaussian_model.fixed import (GaussianSpecError, IntMatrix, Scales, as_real, ceil_frac,
                                                     ln_upper, quantise_matrix)
from dpspark.mechanisms.gaussian_model.model_noise import VectorNoise, plan_noise
from dpspark.mechanisms.gaussian_model.source import GaussianSource, upper_pairs
from dpspark.noise.grid import sqrt_upper
from dpspark.rng import RandomSource

#: per-row tail of the covariance clip: a whitened Gaussian row is clipped w.p. <= this (Laurent-Massart)
ROW_BETA_COVARIANCE = Fraction(1, 20)
#: per-row tail of the mean clip
ROW_BETA_MEAN = Fraction(1, 100)
#: each preconditioning round takes this share of the covariance budget (the final pass the rest)
ROUND_SHARE = Fraction(3, 20)
#: at most this many preconditioning rounds
MAX_ROUNDS = 4
#: the schedule stops once the predicted condition number is at most this
CONDITION_TARGET = 2.0  # report: accuracy-only schedule target


@dataclass(frozen=True)
class PublicBounds:
    """The learner's public inputs: dimension, ||mu|| <= radius, I <= Sigma <= kappa I, failure beta, max units."""

    d: int
    radius: Fraction
    kappa: Fraction
    beta: Fraction
    max_units: int


@dataclass
class Run:
    """One private run: the backend, the public scales, the randomness and every noise addition made."""

    source: GaussianSource
    scales: Scales
    bounds: PublicBounds
    rng: RandomSource
    noises: list[VectorNoise] = field(default_factory=list)
    passes: list[dict[str, Any]] = field(default_factory=list)
    #: every noisy output, in order (already private; kept for post-processing and tests)
    outputs: list[list[int]] = field(default_factory=list)

    @property
    def rho(self) -> Fraction:
        """The composed rho: the exact sum of every noise addition's certified rho."""
        return sum((n.rho for n in self.noises), Fraction(0))

    def noisy(self, values: list[int], l2_sq: int, rho: Fraction, max_abs: int, label: str) -> list[int]:
        """Plan, record and add one noise vector."""
        plan = plan_noise(len(values), l2_sq, rho, max_abs, label)
        self.noises.append(plan)
        out = plan.add(values, self.rng)
        self.outputs.append(out)
        return out


def tail_sq(d: int, beta: Fraction) -> Fraction:
    """An exact upper bound of d + 2 sqrt(d x) + 2x, x = ln(1/beta): Pr[chi^2_d >= it] <= beta (Laurent-Massart)."""
    x = ln_upper(1 / Fraction(beta))
    return d + 2 * sqrt_upper(d * x, 32) + 2 * x


def max_threshold(d: int, radius: Fraction) -> Fraction:
    """The largest clip threshold (real units, squared) any pass may use, data-free: a covariance pass clips
    at most at 4 tau (tau the covariance row tail; the centre's offset is capped at sqrt(tau)), a mean step
    at (R (1 + 2^-10) + g)^2 (a preconditioner of spectral norm <= 1, quantised) or (2 g)^2. The decimal(38,0)
    capacity check (:func:`~dpspark.mechanisms.gaussian_model.fixed.choose_scales`) uses it."""
    g = sqrt_upper(tail_sq(d, ROW_BETA_MEAN), 32)
    return max(4 * tail_sq(d, ROW_BETA_COVARIANCE), (Fraction(radius) * Fraction(1025, 1024) + g) ** 2, 4 * g * g)


def initial_matrix(bounds: PublicBounds, bits: int) -> IntMatrix:
    """A_0 = I / sqrt(kappa), quantised down (so A_0 Sigma A_0 <= I): the public first preconditioner."""
    entry = Fraction(1 << bits) / sqrt_upper(bounds.kappa, 32)
    v = entry.numerator // entry.denominator
    if v < 1 << 8:  # data-free: A_0 must keep 8 bits (else the quantised preconditioner is too coarse or singular)
        raise GaussianSpecError("kappa is too large for the matrix scale: 2^a / sqrt(kappa) < 256")
    return tuple(tuple(v if i == j else 0 for j in range(bounds.d)) for i in range(bounds.d))


def noisy_count(run: Run, rho: Fraction) -> int:
    """The number of singles plus discrete Gaussian noise (sensitivity 1), floored at 1."""
    exact = run.source.single_count()
    return max(1, run.noisy([exact], 1, rho, run.bounds.max_units, "single count")[0])


def pass_l2_sq(d: int, t_int: int) -> int:
    """ceil((2 - 1/d) T^2): the exact bound on ||v - v'||^2 of one clipped term (module docstring)."""
    return -((-(2 * d - 1) * t_int * t_int) // d)


def centre_int(matrix: IntMatrix, centre: np.ndarray, scales: Scales) -> list[int]:
    """rint(M mu~ 2^(a+b)): the public centre in the integer units of y = M x (post-processing)."""
    m = as_real(matrix, scales.matrix_bits)
    c = np.rint(m @ np.asarray(centre, dtype=np.float64) * float(1 << scales.y_bits))  # report
    return [int(v) for v in c]


def covariance_pass(run: Run, matrix: IntMatrix, centre: np.ndarray, threshold: Fraction, rho: Fraction,
                    count: int, label: str) -> tuple[np.ndarray, VectorNoise]:
    """One pass: the noisy, PSD-projected estimate of M Sigma M^T (real units) from the singles centred on
    mu~ and ball-clipped at ||y||^2 <= threshold (real units), and the noise plan used."""
    from dpspark.mechanisms.gaussian_model.budget import CLIP_SHARE

    d, sc = run.bounds.d, run.scales
    t_int = sc.threshold_int(threshold)
    mom = run.source.clipped_moments(matrix, centre_int(matrix, centre, sc), t_int)
    # the rows clipped (sensitivity 1), drawn first so the pass's matrix stays the last noise (clipping.py)
    clipped = run.noisy([mom.clipped], 1, rho * CLIP_SHARE, run.bounds.max_units, f"{label}: clipped rows count")[0]
    clip_noise = run.noises[-1]
    vec = [v if i == j else 2 * v for (i, j), v in zip(upper_pairs(d), mom.upper)]
    noisy = run.noisy(vec, pass_l2_sq(d, t_int), rho * (1 - CLIP_SHARE), 2 * run.bounds.max_units * t_int, label)
    run.passes.append({"pass": label, "norm_bound_sq": t_int, "rho": str(run.noises[-1].rho), "clipped": clipped,
                       "clipped_sigma": str(clip_noise.grid * clip_noise.sampler.sigma),
                       "clipped_rho": str(clip_noise.rho), "clip_radius_sq": str(threshold)})
    s = np.zeros((d, d), dtype=np.float64)  # report
    for (i, j), v in zip(upper_pairs(d), noisy):
        s[i, j] = s[j, i] = float(v) if i == j else float(v) / 2.0  # report
    return psd_project(s / (float(count) * float(1 << (2 * sc.y_bits)))), run.noises[-1]  # report


def psd_project(s: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Clip eigenvalues below ``floor`` (post-processing); the result is exactly symmetric (the reader checks)."""
    vals, vecs = np.linalg.eigh((s + s.T) / 2)  # report
    out = (vecs * np.maximum(vals, floor)) @ vecs.T  # report
    return (out + out.T) / 2  # report


def noise_sd(noise: VectorNoise) -> float:
    """The per-coordinate standard deviation bound of a noise vector, in its integer units (grid included)."""
    return float(noise.grid) * float(noise.sampler.sigma)  # report


def spectral_allowance(d: int, count: int, sd_entry: float, k: float = 1.0) -> float:
    """e: the typical spectral error of one pass's estimate, sampling 2 k sqrt(d/n) (Gaussian Gram) plus the
    noise matrix's sqrt(d) sd_entry (off-diagonal sd = sd_entry / 2: a Wigner-type 2 sqrt(d) (sd_entry / 2))."""
    return 2.0 * k * math.sqrt(d / max(count, 1)) + math.sqrt(d) * sd_entry  # report


def whiten_step(z: np.ndarray, e: float, matrix: IntMatrix, bits: int) -> IntMatrix:
    """A' = (Z + e I)^-1/2 A, quantised BEFORE the next pass (post-processing of private outputs)."""
    vals, vecs = np.linalg.eigh((z + z.T) / 2 + e * np.eye(z.shape[0]))  # report
    step = (vecs / np.sqrt(np.maximum(vals, e))) @ vecs.T  # report
    return quantise_matrix(step @ as_real(matrix, bits), bits)


def floored_inverse(matrix: IntMatrix, bits: int, rhs: np.ndarray | None = None) -> np.ndarray:
    """A^-1 (or A^-1 rhs) for the quantised A, its singular values floored at one grid step 2^-bits.

    Post-processing: A is a function of public inputs and earlier noisy outputs only, so any inverse of it
    leaves the privacy proof untouched. At small n a whitening step of a very noisy estimate can quantise A
    to a singular matrix (np.linalg.inv/solve then raised LinAlgError after the spend); as :func:`whiten_step`
    floors eigenvalues at e, this floors the singular values: a direction A shrinks below one grid step is
    taken as one grid step. A healthy A (every singular value at least 2^-bits, so LAPACK cannot meet a zero
    pivot) gets np.linalg.inv/solve as before, bit for bit.
    """
    a = as_real(matrix, bits)
    floor = 2.0 ** -bits  # report
    u, sv, vt = np.linalg.svd(a)  # report
    if sv.min() >= floor:
        return np.linalg.inv(a) if rhs is None else np.linalg.solve(a, rhs)  # report
    inv = (vt.T / np.maximum(sv, floor)) @ u.T  # report
    return inv if rhs is None else inv @ rhs  # report


def covariance_from(matrix: IntMatrix, estimate: np.ndarray, bits: int) -> np.ndarray:
    """Sigma^ = A^-1 S~ A^-T for the quantised A (post-processing; A^-1 by :func:`floored_inverse`)."""
    inv = floored_inverse(matrix, bits)  # report
    out = inv @ estimate @ inv.T  # report
    return (out + out.T) / 2  # report


def round_rhos(rho: Fraction, rounds: int) -> list[Fraction]:
    """The covariance budget split: ROUND_SHARE per preconditioning round, the rest to the final pass."""
    pre = [rho * ROUND_SHARE] * rounds
    return pre + [rho - sum(pre, Fraction(0))]


def predicted_rounds(d: int, kappa: Fraction, units: int, rho: Fraction, max_rounds: int | None = None) -> int:
    """The public number of preconditioning rounds (data-free): the smallest t whose predicted condition
    number after t rounds, c_{r+1} = 1 + 2 e c_r from c_0 = kappa with e the spectral allowance at n = units
    and the round's budget, is at most CONDITION_TARGET (at most ``max_rounds``, default MAX_ROUNDS; 0 when kappa is small)."""
    c = float(kappa)  # report: accuracy-only schedule
    t = 0
    max_rounds = MAX_ROUNDS if max_rounds is None else max_rounds
    tau = float(tail_sq(d, ROW_BETA_COVARIANCE))  # report
    while c > CONDITION_TARGET and t < max_rounds:  # public loop, at most max_rounds steps
        sd = math.sqrt(float(pass_l2_sq(d, 1))) * tau / math.sqrt(2.0 * float(rho * ROUND_SHARE))  # report
        e = spectral_allowance(d, units, sd / units)  # report
        c = 1.0 + 2.0 * e * c  # report
        t += 1
    return t


def covariance_rounds(run: Run, rhos: list[Fraction], centre: np.ndarray, centre_sd: float,
                      count: int) -> tuple[np.ndarray, IntMatrix]:
    """The preconditioning rounds and the final pass at budgets ``rhos`` (the last one the final pass), all
    centred on mu~: (Sigma^, the quantised A of the final pass)."""
    d, sc, b = run.bounds.d, run.scales, run.bounds
    a_bits = sc.matrix_bits
    matrix = initial_matrix(b, a_bits)
    a0_inv = np.linalg.inv(as_real(matrix, a_bits))  # report
    tau = tail_sq(d, ROW_BETA_COVARIANCE)
    for r, rho in enumerate(rhos):
        final = r == len(rhos) - 1
        # the centre's error in these coordinates (its noise, isotropic in A_0's) widens the clip a little
        off = float(np.linalg.norm(as_real(matrix, a_bits) @ a0_inv, 2)) * centre_sd * math.sqrt(float(tail_sq(d, Fraction(1, 1000))))  # report
        off = min(off, float(sqrt_upper(tau, 32)))  # report: capped (max_threshold)
        threshold = min(4 * tau, Fraction(ceil_frac((sqrt_upper(tau, 32) + Fraction(off)) ** 2 * 1024), 1024))
        label = "covariance final" if final else f"covariance round {r + 1}"
        z, noise = covariance_pass(run, matrix, centre, threshold, rho, count, label)
        if final:
            return covariance_from(matrix, z, a_bits), matrix
        sd = noise_sd(noise) / (float(count) * float(1 << (2 * sc.y_bits)))  # report
        matrix = whiten_step(z, spectral_allowance(d, count, sd), matrix, a_bits)
    raise ValueError("covariance_rounds needs at least one budget")  # pragma: no cover
