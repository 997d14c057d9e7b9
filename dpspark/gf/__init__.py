"""GF(2^m) arithmetic (m in {64, 128, 192, 256}) and fast polynomial algorithms.

Elements are uint64 arrays of shape (..., m/64), little-endian words (word 0 =
bits 0..63; bit i = coefficient of z^i). Polynomials are (n, m/64) arrays of
coefficients in ascending degree. See :mod:`dpspark.gf.field` for the
representation and conversions, :mod:`dpspark.gf.poly` for polynomial
arithmetic and Horner, and :mod:`dpspark.gf.subproduct` for the subproduct
tree (root products, multipoint evaluation, interpolation).

Everything here is exact integer/bit arithmetic; no floating point is used.
"""

from dpspark.gf.clmul import HARDWARE as CLMUL_HARDWARE
from dpspark.gf.field import MODULI, GF2m, modulus_int, modulus_string
from dpspark.gf.poly import (
    horner,
    horner_many,
    poly_add,
    poly_degree,
    poly_derivative,
    poly_divmod,
    poly_inv_series,
    poly_mul,
    poly_mul_karatsuba,
    poly_mul_low,
    poly_mul_schoolbook,
    poly_rem,
    poly_scale,
    poly_trim,
)
from dpspark.gf.additive_fft import fft_mul
from dpspark.gf.subproduct import SubproductTree, interpolate, multipoint_eval, vanishing_poly

__all__ = [
    "CLMUL_HARDWARE",
    "MODULI",
    "GF2m",
    "SubproductTree",
    "horner",
    "horner_many",
    "fft_mul",
    "interpolate",
    "modulus_int",
    "modulus_string",
    "multipoint_eval",
    "poly_add",
    "poly_degree",
    "poly_derivative",
    "poly_divmod",
    "poly_inv_series",
    "poly_mul",
    "poly_mul_karatsuba",
    "poly_mul_low",
    "poly_mul_schoolbook",
    "poly_rem",
    "poly_scale",
    "poly_trim",
    "vanishing_poly",
]
