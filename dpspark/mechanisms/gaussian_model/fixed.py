"""Public fixed-point scales, exact thresholds and quantised preconditioners for the Gaussian learner.

Scales
------
* Data: a real value v becomes x = rint(v 2^b) (round half to even; NaN and NULL count as 0), clamped to
  [-(2^31 - 1), 2^31 - 1] so that it is stored as int32 (the conversion is a deterministic function of
  one row, the same numpy code on every backend). b is chosen from the public bounds so that a Gaussian
  row with ||mu|| <= R and Sigma <= kappa I is (w.h.p.) never clamped: 2^b (R + 12 sqrt(kappa)) <= 2^31 - 1.
  Rounding moves each coordinate by at most 2^-(b+1), i.e. adds at most d 2^-(2b+2) to the trace of the
  second moment - negligible against Sigma >= I for every b >= 8 (we refuse b < 8).
* Preconditioner: a (post-processed) real matrix A becomes the integer matrix round(A 2^a). It is
  quantised on the driver BEFORE it enters a pass, so y = A_int x is an exact integer in units of
  2^-(a+b), and every norm test ||y||^2 <= T_int is decided on exact integers (never on a float).

Thresholds ([R] constants of KLSU Alg 1, derived here)
-----------------------------------------------------
Laurent-Massart (2000, Lemma 1): for Z ~ chi^2_d and x > 0, Pr[Z >= d + 2 sqrt(d x) + 2x] <= e^-x.
A pair difference X_a - X_b ~ N(0, 2 Sigma), so for y = A (X_a - X_b) with A Sigma A <= k I,
||y||^2 <= 2k chi^2_d. With x = ln(m / beta) and a union bound over the m terms, no term fails the
test ||y||^2 <= 2k (d + 2 sqrt(d x) + 2x) except with probability <= beta. :func:`chi2_threshold`
returns an exact rational upper bound of d + 2 sqrt(d x) + 2x (ln and sqrt rounded up), so the
stated failure probability is certified (the threshold only affects accuracy; privacy uses only the
integer T_int that the norm test and the sensitivity share).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from dpspark.errors import DPSparkError
from dpspark.noise.grid import sqrt_upper

IntMatrix = tuple[tuple[int, ...], ...]

#: ln 2 = 0.693147... < 6932/10^4
LN2_UPPER = Fraction(6932, 10000)
#: the largest magnitude of a fixed-point input coordinate (int32: the prepared rows are stored as int32)
INPUT_BOUND = (1 << 31) - 1
#: exact sums are decimal(38,0)
DECIMAL38_MAX = 10**38 - 1


class GaussianSpecError(DPSparkError, ValueError):
    """Public parameters of the Gaussian learner that cannot be met (message names fields, never data)."""


def ceil_frac(x: Fraction) -> int:
    """The smallest integer >= x."""
    return -((-x.numerator) // x.denominator)


def ln_upper(x: Fraction | int) -> Fraction:
    """A rational upper bound of ln x for x >= 1: x <= 2^bitlen(ceil x), so ln x <= bitlen(ceil x) ln 2."""
    v = Fraction(x)
    if v < 1:
        raise GaussianSpecError("ln_upper needs x >= 1")
    return ceil_frac(v).bit_length() * LN2_UPPER


def chi2_threshold(d: int, terms: int, beta: Fraction) -> Fraction:
    """Exact upper bound of d + 2 sqrt(d x) + 2x with x = ln(terms / beta) (Laurent-Massart, union bound)."""
    if d < 1 or terms < 1 or not 0 < beta < 1:
        raise GaussianSpecError("chi2_threshold needs d >= 1, terms >= 1 and 0 < beta < 1")
    x = ln_upper(Fraction(terms) / beta)
    return d + 2 * sqrt_upper(d * x, 32) + 2 * x


def default_data_bits(radius: Fraction, kappa: Fraction) -> int:
    """The largest b <= 24 with 2^b (R + 12 sqrt(kappa)) <= 2^31 - 1 (see the module docstring)."""
    span = Fraction(radius) + 12 * sqrt_upper(kappa, 32)
    b = 24
    while b > 0 and span * (1 << b) > INPUT_BOUND:  # public loop, at most 24 steps
        b -= 1
    if b < 8:
        raise GaussianSpecError("R + 12 sqrt(kappa) is too large for 8 fractional bits in int32: rescale the columns")
    return b


@dataclass(frozen=True)
class Scales:
    """Public fixed-point scales: data bits b, matrix bits a (y is in units of 2^-(a+b))."""

    data_bits: int
    matrix_bits: int

    @property
    def y_bits(self) -> int:
        """a + b: y = A_int x represents A v 2^(a+b)."""
        return self.data_bits + self.matrix_bits

    def threshold_int(self, threshold: Fraction) -> int:
        """T_int = floor(T 2^(2(a+b))): the exact integer the norm test and the sensitivity share."""
        t = Fraction(threshold) * (1 << (2 * self.y_bits))
        return t.numerator // t.denominator


def choose_scales(data_bits: int, max_threshold: Fraction, max_terms: int, matrix_bits: int | None = None) -> Scales:
    """Scales whose largest possible exact sum, max_terms x T_int, fits decimal(38,0) (checked here, data-free).

    Without ``matrix_bits`` the largest a <= 24 that fits is taken (finer preconditioners).
    """
    if matrix_bits is None:
        matrix_bits = 24
        while matrix_bits > 4 and max_terms * Scales(data_bits, matrix_bits).threshold_int(max_threshold) > DECIMAL38_MAX:
            matrix_bits -= 1  # public loop, at most 20 steps
    scales = Scales(data_bits, matrix_bits)
    if max_terms * scales.threshold_int(max_threshold) > DECIMAL38_MAX:
        raise GaussianSpecError("max_units x the norm bound exceeds decimal(38,0) at these scales: lower scale_bits")
    return scales


def identity(d: int, bits: int) -> IntMatrix:
    """The integer matrix 2^bits I."""
    return tuple(tuple((1 << bits) if i == j else 0 for j in range(d)) for i in range(d))


def quantise_matrix(a: np.ndarray, bits: int) -> IntMatrix:
    """round(A 2^bits) as Python ints: the public, exact matrix a pass applies.

    A is post-processing of earlier private outputs (floats allowed); this rounding happens on the
    driver BEFORE the matrix is broadcast, so the norm test downstream sees only integers.
    """
    scaled = np.rint(np.asarray(a, dtype=np.float64) * float(1 << bits))  # report: post-processing of private output
    if not np.all(np.isfinite(scaled)) or np.abs(scaled).max(initial=0) >= 2.0**62:  # report
        raise GaussianSpecError("the preconditioner is not finite or too large to quantise")
    return tuple(tuple(int(v) for v in row) for row in scaled.astype(np.int64))


def as_real(matrix: IntMatrix, bits: int) -> np.ndarray:
    """The quantised matrix as the float array A_int / 2^bits (post-processing only)."""
    return np.array(matrix, dtype=np.float64) / float(1 << bits)  # report


def matrix_array(matrix: Sequence[Sequence[int]]) -> np.ndarray:
    """The integer matrix as an int64 array (entries below 2^62 by construction)."""
    return np.array(matrix, dtype=np.int64)
