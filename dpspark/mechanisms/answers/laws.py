"""The answers' noise laws, calibrated once per (k, budget) and cached: the bounded-noise M, the Gaussian's sigma.

Shared by the mechanisms (:mod:`dpspark.mechanisms.answers.mechanism`) and the comparison of the two
(:mod:`dpspark.mechanisms.answers.choice`); data-free.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=32)
def largest_rho(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest rho on the 2^-30 grid whose certified CKS conversion is <= (epsilon, delta) (cached)."""
    from dpspark.mechanisms.zcdp_budget import rho_within

    return rho_within(epsilon, delta)


@lru_cache(maxsize=32)
def bounded_calibration(k: int, epsilon: Fraction, delta: Fraction, family: str, method: str) -> Any:
    """calibrate(k, epsilon, delta, sensitivity=1, family, method), cached: a spec is checked several times."""
    from dpspark.noise.bounded_calibrate import calibrate

    return calibrate(k, epsilon, delta, sensitivity=1, family=family, method=method)


@lru_cache(maxsize=32)
def gaussian_noise(rho_each: Fraction, radius: int) -> Any:
    """The smallest-grid-sigma DiscreteGaussian with zcdp_rho(1) <= rho_each (cached)."""
    from dpspark.noise.dgauss import DiscreteGaussian, smallest_sigma

    return DiscreteGaussian(sigma=smallest_sigma(rho_each, 1, data_radius=radius), data_radius=radius)
