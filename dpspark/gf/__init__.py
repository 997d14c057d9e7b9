"""GF(2^m) arithmetic (m in {64, 128, 192, 256}) and fast polynomial algorithms.

Elements are uint64 arrays of shape (..., m/64), little-endian words (word 0 =
bits 0..63; bit i = coefficient of z^i). Polynomials are (n, m/64) arrays of
coefficients in ascending degree. See :mod:`dpspark.gf.field` for the
representation and conversions, :mod:`dpspark.gf.poly` for polynomial
arithmetic and Horner, and :mod:`dpspark.gf.subproduct` for the subproduct
tree (root products, multipoint evaluation, interpolation).

Everything here is exact integer/bit arithmetic; no floating point is used.
"""

from typing import Any

from dpspark._lazy import lazy_exports

# Names load lazily (``dpspark.gf.moduli`` alone imports neither numpy nor numba; the kernels compile or load
# from numba's cache only when arithmetic is used).
_NAMES = {
    "MODULI": "moduli", "modulus_int": "moduli", "modulus_string": "moduli", "GF2m": "field",
    **{name: "poly" for name in ("horner", "horner_many", "poly_add", "poly_degree", "poly_derivative", "poly_divmod",
                                 "poly_inv_series", "poly_mul", "poly_mul_karatsuba", "poly_mul_low",
                                 "poly_mul_schoolbook", "poly_rem", "poly_scale", "poly_trim")},
    "fft_mul": "additive_fft",
    **{name: "subproduct" for name in ("SubproductTree", "interpolate", "multipoint_eval", "vanishing_poly")},
}
_lazy = lazy_exports(__name__, _NAMES)


def __getattr__(attr: str) -> Any:
    if attr == "CLMUL_HARDWARE":
        from dpspark.gf.clmul import HARDWARE

        return HARDWARE
    return _lazy(attr)


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
