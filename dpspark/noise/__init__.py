"""Noise samplers with certified laws: strict-time, exact integer arithmetic, one uniform draw per sample.

The finite-computer counting mechanisms (GeoSample, FastSample) live in
:mod:`dpspark.counting`; this package holds the samplers added for the zCDP and
bounded-noise families (discrete Gaussian, Dagan-Kur bounded noise).
"""

from dpspark.noise.dgauss import DGaussError, DiscreteGaussian, l2_rho, vector_rho
from dpspark.noise.dgauss_certify import Certificate, ShiftBound, certify, grid_bound

__all__ = [
    "Certificate",
    "DGaussError",
    "DiscreteGaussian",
    "ShiftBound",
    "certify",
    "grid_bound",
    "l2_rho",
    "vector_rho",
]
