"""Noise samplers with certified laws: strict-time, exact integer arithmetic, one uniform draw per sample.

The finite-computer counting mechanisms (GeoSample, FastSample) live in
:mod:`dpspark.noise.counting`; this package holds the samplers added for the zCDP and
bounded-noise families (discrete Gaussian, Dagan-Kur bounded noise).
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "DGaussError": "dgauss",
    "DiscreteGaussian": "dgauss",
    "l2_rho": "dgauss",
    "sigma_grid_next": "dgauss",
    "smallest_sigma": "dgauss",
    "vector_rho": "dgauss",
    "Certificate": "dgauss_certify",
    "ShiftBound": "dgauss_certify",
    "certified_table": "dgauss_certify",
    "certify": "dgauss_certify",
    "grid_bound": "dgauss_certify",
    "grid_sensitivity": "grid",
    "sqrt_upper": "grid",
    "to_grid": "grid",
    "to_grid_int64": "grid",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = [
    "Certificate",
    "DGaussError",
    "DiscreteGaussian",
    "ShiftBound",
    "certified_table",
    "certify",
    "grid_bound",
    "grid_sensitivity",
    "l2_rho",
    "sigma_grid_next",
    "smallest_sigma",
    "sqrt_upper",
    "to_grid",
    "to_grid_int64",
    "vector_rho",
]
