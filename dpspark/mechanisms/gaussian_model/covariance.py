"""Private covariance estimation (KLSU Algs 1-4: NaivePCE, WeakPPC, PPC, PCE) on exact aggregates.

Every pass asks a :class:`~dpspark.mechanisms.gaussian_model.source.GaussianSource` for the filtered second moment of
y = M D over pair differences D (M a public integer matrix; D ~ N(0, 2 Sigma)), then adds certified
discrete Gaussian noise to the d(d+1)/2 upper-triangle integers (:mod:`dpspark.mechanisms.gaussian_model.model_noise`).

Privacy (rho-zCDP, Bun-Steinke; under adding or removing one unit): one unit changes at most one pair
term y y^T with ||y||^2 <= T_int (the exact norm test), whose upper triangle has Frobenius norm
sqrt(sum_{i<=j} y_i^2 y_j^2) <= ||y||^2 <= T_int; the noisy pair count has sensitivity 1. Each pass
states its certified rho and the passes compose by adding rho (Bun-Steinke Lemma 2.3); the preconditioner
of a later pass is a function of earlier noisy outputs only (post-processing, then quantised to
integers BEFORE the pass), so adaptivity costs nothing extra.

Post-processing (floats allowed, marked ``# report``): scaling the noisy integers to reals, the
eigendecomposition, the PSD projection, the preconditioner update and inversion. They act on already
private outputs only.

Constants ([R], derived; see :mod:`dpspark.mechanisms.gaussian_model.fixed` for the threshold):
* NaivePCE threshold on pair differences: T = 2 k (d + 2 sqrt(d x) + 2x), x = ln(m / beta), m the public
  bound on the number of terms (max_units / 2): no Gaussian term is removed except w.p. <= beta
  (Laurent-Massart plus a union bound).
* WeakPPC (KLSU Alg 2, "partially project out the eigenvectors with large eigenvalues"): with the noisy
  estimate S~ = V diag(l) V^T of A Sigma A (spectral error e), shrink every direction with l_i > theta k
  by s_i = sqrt(theta k / l_i): A' = V diag(min(1, s_i)) V^T. Then A' S~ A' <= theta k I and
  ||A' E A'|| <= e, so A' A Sigma A A' <= (theta + e/k) k I. With theta = 1/4 and e <= k/12 the new bound
  is gamma k, gamma = 1/3 (:data:`GAMMA`); a shrunk direction keeps eigenvalue >= theta k (1 - e/l_i)
  >= k/6 >= 1 while k >= 6, so the lower bound I <= A Sigma A degrades by at most a constant.
  The error e <= k/12 holds w.h.p. once the noise's spectral norm (about 2 sqrt(d) sigma_entry, with
  sigma_entry = T / (n sqrt(2 rho_r))) is below k/24: n >~ 48 sqrt(d) (d + 2 sqrt(d x) + 2x) / sqrt(2 rho_r),
  i.e. n = O~(d^{3/2} / sqrt(rho)) per round as in KLSU Thm 3.8.
* PPC runs the public schedule k_1 = kappa, k_{r+1} = k_r / 3 until k_r <= :data:`KAPPA_TARGET` = 8,
  i.e. ceil(log_3(kappa / 8)) rounds, each over the same pairs with an equal share of the PPC budget.
* PCE (Alg 4): A = PPC(...), then NaivePCE on A D with k' = the schedule's last bound, Sigma^ = A^-1 S~ A^-1.
  Deviation from KLSU: the same pairs are reused for the final pass instead of a fresh half (privacy is
  by composition either way; the accuracy proof's independence is what the fresh half buys).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.mechanisms.gaussian_model.fixed import IntMatrix, Scales, as_real, chi2_threshold, identity, quantise_matrix
from dpspark.mechanisms.gaussian_model.model_noise import VectorNoise, plan_noise
from dpspark.mechanisms.gaussian_model.source import GaussianSource, upper_pairs
from dpspark.rng import RandomSource

#: WeakPPC shrink target theta and the per-round contraction gamma of the public kappa schedule
THETA = Fraction(1, 4)
GAMMA = Fraction(1, 3)
#: PPC stops once the public bound is at most this
KAPPA_TARGET = Fraction(8)


@dataclass(frozen=True)
class PublicBounds:
    """The learner's public inputs: dimension, ||mu|| <= radius, I <= Sigma <= kappa I, failure beta, max units."""

    d: int
    radius: Fraction
    kappa: Fraction
    beta: Fraction
    max_units: int

    @property
    def max_pairs(self) -> int:
        """A public bound on the number of pair terms (each pair uses two units)."""
        return max(1, self.max_units // 2)


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


def kappa_schedule(kappa: Fraction) -> list[Fraction]:
    """The public PPC bounds k_1 = kappa, k_{r+1} = gamma k_r, one per round, while k_r > KAPPA_TARGET."""
    out: list[Fraction] = []
    k = Fraction(kappa)
    while k > KAPPA_TARGET:  # public: ceil(log_3(kappa / 8)) steps
        out.append(k)
        k = k * GAMMA
    return out


def final_kappa(kappa: Fraction) -> Fraction:
    """The bound on A Sigma A after PPC's schedule (kappa itself when no round runs)."""
    sched = kappa_schedule(kappa)
    return sched[-1] * GAMMA if sched else Fraction(kappa)


def noisy_pair_count(run: Run, rho: Fraction) -> int:
    """The number of pair terms plus discrete Gaussian noise (sensitivity 1), floored at 1."""
    exact = run.source.pair_count()
    return max(1, run.noisy([exact], 1, rho, run.bounds.max_pairs, "pair count")[0])


def symmetric_from_upper(upper: list[int], d: int) -> np.ndarray:
    """The symmetric float matrix from upper-triangle integers (post-processing)."""
    out = np.zeros((d, d), dtype=np.float64)  # report
    for (i, j), v in zip(upper_pairs(d), upper):
        out[i, j] = out[j, i] = float(v)  # report
    return out


def psd_project(s: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Clip eigenvalues below ``floor`` (KLSU Alg 1 step 5; post-processing)."""
    vals, vecs = np.linalg.eigh((s + s.T) / 2)  # report
    return (vecs * np.maximum(vals, floor)) @ vecs.T  # report


def naive_pce(run: Run, matrix: IntMatrix, kappa: Fraction, rho: Fraction, pairs: int, label: str) -> np.ndarray:
    """KLSU Alg 1 on y = M D: an estimate of M Sigma M^T (real units, PSD) from one pass at budget rho.

    The integer norm bound T_int = floor(2 kappa chi2_threshold 2^(2(a+b))) decides membership exactly and
    sets the Frobenius sensitivity of the upper triangle, T_int.
    """
    d, b = run.bounds.d, run.bounds
    threshold = 2 * kappa * chi2_threshold(d, b.max_pairs, b.beta)
    t_int = run.scales.threshold_int(threshold)
    moments = run.source.second_moments(matrix, t_int)
    noisy = run.noisy(list(moments.upper), t_int * t_int, rho, b.max_pairs * t_int, label)
    run.passes.append({"pass": label, "kappa": str(kappa), "norm_bound_sq": t_int, "rho": str(run.noises[-1].rho)})
    scale = float(1 << (2 * run.scales.y_bits)) * 2.0 * float(pairs)  # report: D ~ N(0, 2 Sigma): halve here
    return psd_project(symmetric_from_upper(noisy, d) / scale)  # report


def weak_ppc(run: Run, matrix: IntMatrix, kappa: Fraction, rho: Fraction, pairs: int, label: str) -> IntMatrix:
    """KLSU Alg 2 (variant in the module docstring): the next quantised preconditioner A' A."""
    est = naive_pce(run, matrix, kappa, rho, pairs, label)
    vals, vecs = np.linalg.eigh(est)  # report: post-processing
    target = float(THETA * kappa)  # report
    shrink = np.minimum(1.0, np.sqrt(target / np.maximum(vals, 1e-300)))  # report
    step = (vecs * shrink) @ vecs.T  # report
    a_bits = run.scales.matrix_bits
    return quantise_matrix(step @ as_real(matrix, a_bits), a_bits)  # quantised BEFORE the next pass


def ppc(run: Run, rho: Fraction, pairs: int) -> tuple[IntMatrix, Fraction]:
    """KLSU Alg 3: the quantised preconditioner after the public schedule, and its final bound k'."""
    matrix = identity(run.bounds.d, run.scales.matrix_bits)
    sched = kappa_schedule(run.bounds.kappa)
    for r, k in enumerate(sched):
        matrix = weak_ppc(run, matrix, k, rho / len(sched), pairs, f"PPC round {r + 1}")
    return matrix, final_kappa(run.bounds.kappa)


def covariance_from(matrix: IntMatrix, estimate: np.ndarray, bits: int) -> np.ndarray:
    """Sigma^ = A^-1 S~ A^-T for the quantised A (post-processing)."""
    inv = np.linalg.inv(as_real(matrix, bits))  # report
    out = inv @ estimate @ inv.T  # report
    return (out + out.T) / 2  # report


@dataclass(frozen=True)
class CovarianceSplit:
    """The budget split of PCE (fractions of its rho): count, PPC (all rounds), final NaivePCE."""

    count: Fraction = Fraction(1, 50)
    ppc: Fraction = Fraction(49, 100)

    def parts(self, rho: Fraction, rounds: int) -> tuple[Fraction, Fraction, Fraction]:
        """(count, PPC total, final) rho; PPC's share goes to the final pass when no round runs."""
        count = rho * self.count
        ppc = rho * self.ppc if rounds else Fraction(0)
        return count, ppc, rho - count - ppc


def naive_pce_release(run: Run, rho: Fraction, split: CovarianceSplit = CovarianceSplit()) -> np.ndarray:
    """NaivePCE alone (no preconditioning) at total budget rho: count, then one pass at kappa."""
    count_rho = rho * split.count
    pairs = noisy_pair_count(run, count_rho)
    a = run.scales.matrix_bits
    est = naive_pce(run, identity(run.bounds.d, a), run.bounds.kappa, rho - count_rho, pairs, "NaivePCE")
    return covariance_from(identity(run.bounds.d, a), est, a)


def pce(run: Run, rho: Fraction, split: CovarianceSplit = CovarianceSplit()) -> tuple[np.ndarray, IntMatrix]:
    """KLSU Alg 4 at total budget rho: (Sigma^, the quantised preconditioner used)."""
    rounds = len(kappa_schedule(run.bounds.kappa))
    count_rho, ppc_rho, final_rho = split.parts(rho, rounds)
    pairs = noisy_pair_count(run, count_rho)
    matrix, kappa_final = ppc(run, ppc_rho, pairs) if rounds else (identity(run.bounds.d, run.scales.matrix_bits), run.bounds.kappa)
    est = naive_pce(run, matrix, kappa_final, final_rho, pairs, "PCE final")
    return covariance_from(matrix, est, run.scales.matrix_bits), matrix
