"""Noise samplers with certified laws: strict-time, exact integer arithmetic, one uniform draw per sample.

The finite-computer counting mechanisms (GeoSample, FastSample) live in
:mod:`dpspark.counting`; this package holds the samplers added for the zCDP and
bounded-noise families (discrete Gaussian, Dagan-Kur bounded noise).
"""

from dpspark.noise.dgauss import DGaussError, DiscreteGaussian, l2_rho, sigma_grid_next, smallest_sigma, vector_rho
from dpspark.noise.dgauss_certify import Certificate, ShiftBound, certified_table, certify, grid_bound
from dpspark.noise.grid import grid_sensitivity, sqrt_upper, to_grid, to_grid_int64

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
